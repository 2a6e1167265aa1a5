"""Replicate reconciliation (issue 19): the account's predictions searched by their echo.

The fake account is built from the documented list (replicate-python-beta
``resources/predictions.py`` ``list`` and ``pagination.py``; tests/fixtures/replicate/SOURCE.md
"Reconciliation"): ``GET /v1/predictions`` answers ``{next, previous, results}``, 100
predictions a page, newest first, ``next`` a full cursor URL keeping the filters;
``created_after`` is "at or after", ``created_before`` is "before". Each prediction echoes
``model`` and its ``input`` as sent; an API prediction's input is removed an hour after
it was created (``input: {}``, ``data_removed: true``). A prediction created through the
API shows in the list only after a random delay (at most the adapter's settle time); other
clients of the same key create predictions, some with the same prompt, at other times.
Time is the fake's own clock (``now``): nothing sleeps.
"""

from __future__ import annotations

import base64
import json
import random
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any
from urllib.parse import parse_qs, urlencode

import httpx2
from provider_fakes import SENTINEL_KEY, Router, fixture, json_response, read_timeout

from conformance import maker, requester
from conformance.facts import SearchFacts
from reelqueue.domain.errors import ErrorClass, ErrorLabel
from reelqueue.providers.adapters import replicate
from reelqueue.providers.base import RemoteRecord

API = "api.replicate.com"
LIST = rf"{API}/v1/predictions"
CREATE = rf"{API}/v1/models/(?P<model>[\w.-]+/[\w.-]+)/predictions"
T0 = datetime(2026, 10, 2, 12, 0, tzinfo=UTC).timestamp()
IMAGE_URL = "https://img.example.test/a.png"
PNG_DATA_URI = "data:image/png;base64," + base64.b64encode(b"\x89PNG\r\n\x1a\n").decode()

def iso(seconds: float) -> str:
    return datetime.fromtimestamp(seconds, UTC).isoformat(timespec="microseconds") \
        .replace("+00:00", "Z")


def parse_iso(text: str) -> float:
    return datetime.fromisoformat(text).timestamp()


@dataclass
class Stored:
    id: str
    model: str
    input: dict[str, Any]
    created_at: float
    visible_at: float
    source: str = "api"


class FakeAccount:
    """One Replicate account: creates, and the list of its predictions, on a fake clock."""

    def __init__(self, *, seed: int = 7, settle: float = replicate.SETTLE_SECONDS,
                 honour_filters: bool = True) -> None:
        self.router = Router()
        self.now = T0
        self.rng = random.Random(seed)
        self.settle = settle
        self.honour_filters = honour_filters
        self.predictions: list[Stored] = []
        self.next_host = API  # where the ``next`` links point
        self.fail_list_call: dict[int, Any] = {}  # list call number (1-based) -> answer
        self.list_calls = 0
        self.router.add("POST", CREATE, self._create)
        self.router.add("GET", LIST, self._list)

    # -- what the account holds -----------------------------------------------------------

    def add(self, prompt: str, created_at: float, *, model: str = "google/veo-3.1",
            source: str = "api", **fields: Any) -> Stored:
        """A prediction made by another client of the key (already listed)."""
        stored = Stored(self._new_id(), model, {"prompt": prompt, **fields}, created_at,
                        created_at, source)
        self.predictions.append(stored)
        return stored

    def _new_id(self) -> str:
        return "".join(self.rng.choice("abcdefghijklmnopqrstuvwxyz0123456789")
                       for _ in range(26))

    def _create(self, request: httpx2.Request, match: Any) -> httpx2.Response:
        body = json.loads(request.content)
        delay = self.rng.uniform(1.0, self.settle)  # never listed at once
        stored = Stored(self._new_id(), match.group("model"), body["input"], self.now,
                        self.now + delay)
        self.predictions.append(stored)
        return json_response(201, self._shape(stored))

    # -- the documented answers -----------------------------------------------------------

    def _shape(self, stored: Stored) -> dict[str, Any]:
        removed = stored.source == "api" and self.now - stored.created_at > 3600
        return {
            "id": stored.id, "model": stored.model, "version": "hidden",
            "input": {} if removed else dict(stored.input), "logs": "", "output": None,
            "data_removed": removed, "error": None, "status": "starting",
            "source": stored.source, "created_at": iso(stored.created_at),
            "started_at": None, "completed_at": None, "metrics": {},
            "urls": {"get": f"https://{API}/v1/predictions/{stored.id}",
                     "cancel": f"https://{API}/v1/predictions/{stored.id}/cancel",
                     "web": f"https://replicate.com/p/{stored.id}"},
        }

    def _list(self, request: httpx2.Request, match: Any) -> httpx2.Response:
        self.list_calls += 1
        scripted = self.fail_list_call.get(self.list_calls)
        if scripted is not None:
            return scripted(request) if callable(scripted) else scripted
        query = parse_qs(request.url.query.decode())
        listed = [p for p in self.predictions if p.visible_at <= self.now]
        if self.honour_filters:
            if "created_after" in query:
                after = parse_iso(query["created_after"][0])
                listed = [p for p in listed if p.created_at >= after]
            if "created_before" in query:
                before = parse_iso(query["created_before"][0])
                listed = [p for p in listed if p.created_at < before]
        listed.sort(key=lambda p: p.created_at, reverse=True)  # most recent first
        offset = int(base64.b64decode(query["cursor"][0])) if "cursor" in query else 0
        page = listed[offset:offset + replicate.LIST_PAGE_SIZE]
        following = offset + replicate.LIST_PAGE_SIZE
        filters = {k: v[0] for k, v in query.items() if k != "cursor"}

        def link(position: int) -> str:
            cursor = base64.b64encode(str(position).encode()).decode()
            return f"https://{self.next_host}/v1/predictions?" + urlencode(
                {**filters, "cursor": cursor})

        return json_response(200, {
            "next": link(following) if following < len(listed) else None,
            "previous": link(max(0, offset - replicate.LIST_PAGE_SIZE)) if offset else None,
            "results": [self._shape(p) for p in page],
        })


make = maker(replicate.create, "rep")
request = requester("A lantern festival")


def by_id(records: tuple[RemoteRecord, ...]) -> dict[str, RemoteRecord]:
    return {record.provider_job_id: record for record in records}


FULL = {"model": "google/veo-3.1", "duration": 8.0, "seed": 3, "aspect_ratio": "16:9",
        "resolution": "1080p", "negative_prompt": "blur", "image": IMAGE_URL}


def _account(count: int) -> FakeAccount:
    fake = FakeAccount()
    for index in range(count):
        fake.add(f"prompt {index}", T0 - 3000 + index * 0.1)
    return fake


SEARCH = SearchFacts(
    label="replicate", provider="replicate", listing=_account,
    make=lambda client, fake: make(client), route=LIST, window=(T0 - 3000, T0),
    page=replicate.LIST_PAGE_SIZE, budget=replicate.SEARCH_PAGE_BUDGET, hosts=(API,),
    first_errors=((401, "error_401", ErrorClass.ACCOUNT, ErrorLabel.KEY_REJECTED),
                  (429, "error_429", ErrorClass.ACCOUNT, ErrorLabel.RATE_LIMITED),
                  (500, "error_500", ErrorClass.RETRYABLE, ErrorLabel.PROVIDER_ERROR)),
    failures=(lambda: json_response(500, fixture("replicate", "error_500")),
              lambda: json_response(429, fixture("replicate", "error_429")),
              lambda: json_response(404, fixture("replicate", "error_404")),
              lambda: read_timeout),
    unreadable=(b"<html>ok</html>", b'{"results": [{"id": "ufaw', b"[]", b'{"next": null}',
                b'{"results": "none", "next": null}', b'{"results": [], "next": 2}',
                b'{"results": [], "next": ""}',
                b'{"results": [{"status": "starting"}], "next": null}',
                b'{"results": [{"id": ""}], "next": null}',
                b'{"results": ["ufawqhfynnddngldkgtslldrkq"], "next": null}',
                b'{"data": [], "has_more": false}',
                b'{"detail": "token ' + SENTINEL_KEY.encode() + b'"}'),
    off=(lambda client: make(client, "https://gateway.example.test/v1"),
         r"gateway\.example\.test/v1/predictions"), settle=120.0, keeps_hours=1.0)
