"""fal.ai: finding a create whose answer was lost in fal's request history.

The fake is built from fal's Platform API reference "List requests by endpoint"
(tests/fixtures/fal/SOURCE.md, key PL): ``GET api.fal.ai/v1/models/requests/by-endpoint``
with ``endpoint_id`` (comma-separated), ``start`` (ISO 8601), ``limit`` (default 50, max
100), ``cursor`` (base64 of the page number), ``expand=payloads``; pages of ``{items,
next_cursor, has_more}`` sorted by end time, newest first. A request is listed only once it
has finished (after a random render time, on a clock the test moves), with ``json_input``
only when payload storage is on.
"""

from __future__ import annotations

import base64
import json
import random
from datetime import UTC, datetime
from typing import Any

import httpx2
from provider_fakes import SENTINEL_KEY, Router, fixture, json_response, read_timeout

from conformance import maker, requester
from conformance.facts import SearchFacts
from reelqueue.domain.errors import ErrorClass, ErrorLabel
from reelqueue.providers.adapters import fal

QUEUE = "queue.fal.run"
PLATFORM = "api.fal.ai"
SUBMIT = rf"{QUEUE}/fal-ai/veo3\.1(/fast)?(/image-to-video)?"
LIST = rf"{PLATFORM}/v1/models/requests/by-endpoint"
T0 = 1_793_000_000.0  # the fake's clock at the start of every test
MAX_RENDER = 600.0  # the fake's longest render (queue + run) before a request is listed
PNG = b"\x89PNG\r\n\x1a\n" + bytes(range(200))

def iso(seconds: float) -> str:
    return datetime.fromtimestamp(seconds, tz=UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_iso(text: str) -> float:
    return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


class FalHistory:
    """fal's queue (creates) and its request history, on a clock the test moves."""

    def __init__(self, seed: int = 7) -> None:
        self.router = Router()
        self.now = T0
        self.rng = random.Random(seed)
        self.requests: list[dict[str, Any]] = []
        self.router.add("POST", SUBMIT, self._submit)
        self.router.add("GET", LIST, self._list)

    def add(self, endpoint: str, json_input: dict[str, Any] | None, sent: float,
            ended: float | None, status_code: int = 200) -> str:
        """A request of the account (ours or another client's); ``json_input`` None: sent
        with payload storage off."""
        request_id = str(self.rng.getrandbits(128))
        self.requests.append({"request_id": request_id, "endpoint_id": endpoint,
                              "sent": sent, "ended": ended, "status_code": status_code,
                              "json_input": json_input})
        return request_id

    def _submit(self, request: httpx2.Request, match: Any) -> httpx2.Response:
        endpoint = request.url.path.strip("/")
        # The render finishes (and is listed) after a random queue + render time.
        request_id = self.add(endpoint, json.loads(request.content), self.now,
                              self.now + self.rng.uniform(20.0, MAX_RENDER))
        app = "/".join(endpoint.split("/")[:2])
        answer = fixture("fal", "submit")
        answer.update(request_id=request_id,
                      status_url=f"https://{QUEUE}/{app}/requests/{request_id}/status",
                      response_url=f"https://{QUEUE}/{app}/requests/{request_id}",
                      cancel_url=f"https://{QUEUE}/{app}/requests/{request_id}/cancel")
        return json_response(200, answer)

    def _list(self, request: httpx2.Request, match: Any) -> httpx2.Response:
        if request.headers.get("authorization") != f"Key {SENTINEL_KEY}":
            return json_response(401, fixture("fal", "error_401"))
        query = request.url.params
        endpoints = set(query["endpoint_id"].split(","))
        start = parse_iso(query["start"]) if "start" in query else self.now - 86400
        limit = int(query.get("limit", "50"))
        assert 1 <= limit <= 100
        page = int(base64.b64decode(query["cursor"]).decode()) if "cursor" in query else 1
        finished = [r for r in self.requests
                    if r["endpoint_id"] in endpoints and r["ended"] is not None
                    and start <= r["ended"] <= self.now]
        finished.sort(key=lambda r: r["ended"], reverse=True)
        chunk = finished[(page - 1) * limit:page * limit]
        has_more = page * limit < len(finished)
        payloads = "payloads" in query.get("expand", "")
        return json_response(200, {
            "items": [self._item(r, payloads) for r in chunk],
            "next_cursor": base64.b64encode(str(page + 1).encode()).decode()
            if has_more else None,
            "has_more": has_more,
        })

    @staticmethod
    def _item(record: dict[str, Any], payloads: bool) -> dict[str, Any]:
        item: dict[str, Any] = {
            "request_id": record["request_id"], "endpoint_id": record["endpoint_id"],
            "started_at": iso(record["sent"] + 1), "sent_at": iso(record["sent"]),
            "ended_at": iso(record["ended"]), "status_code": record["status_code"],
            "duration": record["ended"] - record["sent"],
        }
        if payloads and record["json_input"] is not None:
            item["json_input"] = record["json_input"]
            item["json_output"] = {"video": {"url": "https://v3.fal.media/files/x/out.mp4"}}
        return item

    def list_calls(self) -> list[httpx2.URL]:
        return [c.url for c in self.router.calls if c.url.host == PLATFORM]


make = maker(fal.create, "fal-1")
request = requester("A glass city at dawn")


PARAMS = {"model": "fal-ai/veo3.1/fast", "duration": 6, "aspect_ratio": "9:16", "seed": 11}


def _history(count: int) -> FalHistory:
    history = FalHistory()
    for n in range(count):
        history.add("fal-ai/veo3.1", {"prompt": f"p{n}"}, T0 - 5000 + n, T0 - 4000 + n)
    return history


SEARCH = SearchFacts(
    label="fal", provider="fal", listing=_history, make=lambda client, fake: make(client),
    route=LIST, window=(T0 - 9000, T0), page=100, budget=fal.SEARCH_PAGES,
    hosts=(QUEUE, PLATFORM), authorization=f"Key {SENTINEL_KEY}",
    first_errors=(
        (401, "error_401", ErrorClass.ACCOUNT, ErrorLabel.KEY_REJECTED),
        (429, "error_429", ErrorClass.ACCOUNT, ErrorLabel.RATE_LIMITED),
        (403, "error_403_locked_balance", ErrorClass.ACCOUNT, ErrorLabel.OUT_OF_CREDITS),
        (500, "error_500", ErrorClass.RETRYABLE, ErrorLabel.PROVIDER_ERROR)),
    failures=(lambda: json_response(500, fixture("fal", "error_500")),
              lambda: json_response(429, fixture("fal", "error_429")),
              lambda: read_timeout),
    unreadable=(b"<html>maintenance</html>", b'{"requests": []}',
                b'{"items": {}, "has_more": false}', b'{"items": [], "has_more": "no"}',
                b'{"items": [], "has_more": true, "next_cursor": null}',
                b'{"items": ["x"], "has_more": false, "next_cursor": null}',
                b'{"items": [{"endpoint_id": "fal-ai/veo3.1"}], "has_more": false}',
                b'{"items": [{"request_id": "r1"}], "has_more": false}',
                b'{"items": null}'),
    off=(make, LIST), off_statuses=(404,), settle=900.0, keeps_hours=30 * 24)
