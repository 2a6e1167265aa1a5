"""Issue 19 for Luma Dream Machine (legacy): a create whose answer was lost is found again
in ``GET /generations``.

The fake follows lumaai-python 1.18.1 (``resources/generations/generations.py`` ``list``:
``limit`` / ``offset``; ``types/generation_list_response.py``: ``generations``, ``count``,
``has_more``, ``limit``, ``offset``; ``types/generation.py``: each Generation echoes its
whole create ``request`` and its ``created_at``) and the OpenAPI file's default page size
(100). The list's order is not documented, so the fake can list newest first, oldest
first or shuffled; a generation is listed only after a random delay (never longer than the
adapter's ``settle_seconds``), and other clients on the same key create generations with
the same prompt at other times. Time is the fake's clock: nothing sleeps.
"""

from __future__ import annotations

import json
import random
from datetime import UTC, datetime
from typing import Any

import httpx2
from provider_fakes import Router, fixture, json_response

from conformance import maker, requester
from conformance.facts import SearchFacts
from reelqueue.domain.errors import ErrorClass, ErrorLabel
from reelqueue.providers.adapters import luma_legacy
from reelqueue.providers.base import RemoteRecord

API = "api.lumalabs.ai"
CREATE = rf"{API}/dream-machine/v1/generations/video"
LIST = rf"{API}/dream-machine/v1/generations"
T0 = datetime(2026, 10, 2, 10, 0, tzinfo=UTC).timestamp()

def iso(seconds: float) -> str:
    return datetime.fromtimestamp(seconds, UTC).isoformat().replace("+00:00", "Z")


class FakeGenerations:
    """api.lumalabs.ai's create and list, on a clock the test moves."""

    def __init__(self, *, order: str = "newest", max_delay: float = 90.0,
                 seed: int = 7) -> None:
        self.router = Router()
        self.rng = random.Random(seed)
        self.now = T0
        self.order = order
        self.max_delay = max_delay
        # (generation, the moment the list starts showing it)
        self.generations: list[tuple[dict[str, Any], float]] = []
        self.router.add("POST", CREATE, self._create)
        self.router.add("GET", LIST, self._list)

    def add(self, at: float, request: dict[str, Any], *, state: str = "completed",
            visible_at: float | None = None, **extra: Any) -> dict[str, Any]:
        """A generation created at ``at`` (by us or another client on the same key)."""
        generation_id = f"{self.rng.getrandbits(128):032x}"
        generation = {"id": generation_id, "generation_type": "video", "state": state,
                      "failure_reason": None, "created_at": iso(at), "assets": None,
                      "model": request.get("model"), "request": request, **extra}
        self.generations.append((generation, at if visible_at is None else visible_at))
        return generation

    def other(self, at: float, prompt: str = "A koi pond", **params: Any) -> dict[str, Any]:
        return self.add(at, {"generation_type": "video", "prompt": prompt,
                             "model": "ray-2", **params})

    def _create(self, request: httpx2.Request, match: Any) -> httpx2.Response:
        body = json.loads(request.content)
        generation = self.add(self.now, {"generation_type": "video", **body}, state="queued",
                              visible_at=self.now + self.rng.uniform(1.0, self.max_delay))
        return json_response(201, generation)

    def listing(self) -> list[dict[str, Any]]:
        shown = [(g, at) for g, at in self.generations if at <= self.now]
        shown.sort(key=lambda pair: pair[0]["created_at"], reverse=self.order == "newest")
        if self.order == "shuffled":
            random.Random(3).shuffle(shown)
        return [g for g, _ in shown]

    def _list(self, request: httpx2.Request, match: Any) -> httpx2.Response:
        limit = int(request.url.params.get("limit", 100))
        offset = int(request.url.params.get("offset", 0))
        everything = self.listing()
        page = everything[offset:offset + limit]
        return json_response(200, {"generations": page, "count": len(page),
                                   "has_more": offset + limit < len(everything),
                                   "limit": limit, "offset": offset})

    def list_calls(self) -> list[tuple[str | None, str | None]]:
        return [(c.url.params.get("limit"), c.url.params.get("offset"))
                for c in self.router.calls if c.method == "GET"]


make = maker(luma_legacy.create, "dm")
request = requester("A koi pond")


def ids(records: tuple[RemoteRecord, ...]) -> set[str]:
    return {record.provider_job_id for record in records}


ROW = {"model": "ray-2", "duration": 9, "aspect_ratio": "21:9", "resolution": "1080p",
       "image": "https://img.example.test/k.jpg"}


def _generations(count: int) -> FakeGenerations:
    fake = FakeGenerations()
    for second in range(count):
        fake.other(T0 - second, prompt=f"p{second}")
    return fake


SEARCH = SearchFacts(
    label="luma-legacy", provider="luma_legacy", listing=_generations,
    make=lambda client, fake: make(client), route=LIST, window=(T0 - 3600, T0 + 60),
    page=luma_legacy.LIST_PAGE_SIZE, budget=luma_legacy.LIST_PAGE_BUDGET, hosts=(API,),
    first_errors=((401, "error_401", ErrorClass.ACCOUNT, ErrorLabel.KEY_REJECTED),
                  (429, "error_429", ErrorClass.ACCOUNT, ErrorLabel.RATE_LIMITED),
                  (500, "error_500", ErrorClass.RETRYABLE, ErrorLabel.PROVIDER_ERROR)),
    failures=(lambda: json_response(500, fixture("luma_legacy", "error_500")),
              lambda: json_response(429, fixture("luma_legacy", "error_429"),
                                    {"Retry-After": "3"}),
              lambda: httpx2.ReadTimeout("timed out")),
    unreadable=(b"<html>ok</html>", b"[]", b"", b'{"generations": [',
                b'{"data": []}', b'{"generations": {}}', b'{"generations": null}',
                b'{"generations": [1]}', b'{"generations": [{"state": "completed"}]}',
                b'{"generations": [{"id": ""}]}', b'{"generations": [], "has_more": "no"}',
                b'{"generations": [], "offset": 300}'),
    off=(lambda client: make(client, base_url="https://gw.example.test/v1"),
         r"gw\.example\.test/v1/generations"),
    off_label=None,  # the 404 itself, as classified; search is off all the same
    settle=luma_legacy.SETTLE_SECONDS)
