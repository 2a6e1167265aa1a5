"""The mock's list of renders (reconcile: search), built from the mock's API
(app/reelqueue/providers/mock.py: ``GET /v1/renders?created_after=SINCE&before=CURSOR``,
newest first, ``{data, has_more, next_cursor}``), and its search conformance facts."""

from __future__ import annotations

import json

import httpx2
from provider_fakes import SENTINEL_KEY, Router, json_response, read_timeout

from conformance.facts import SearchFacts
from reelqueue.domain.errors import ErrorClass, ErrorLabel
from reelqueue.providers import mock
from reelqueue.providers.base import ProviderConfig
from reelqueue.providers.mock import MockProvider

BASE = "http://127.0.0.1:9"
LIST = r"127\.0\.0\.1/v1/renders"
T0 = 1_900_000_000.0


class FakeList:
    """The mock's list: creates recorded with the time they were sent, listed newest first
    once ``delay`` has passed on ``now``, ``page`` records a page, the cursor by id.
    ``honour_since=False`` ignores ``created_after`` (paging must stop by itself)."""

    def __init__(self, page: int = 3, delay: float = 0.0, honour_since: bool = True,
                 now: float = T0 + 1000) -> None:
        self.now = now
        self.page, self.delay, self.honour_since = page, delay, honour_since
        self.renders: list[dict[str, object]] = []
        self.router = Router()
        self.router.add("POST", LIST, self.create)
        self.router.add("GET", LIST, self.list)

    def add(self, prompt: object, params: object, at: float, **extra: object) -> str:
        render_id = f"mr_{len(self.renders) + 1}"
        self.renders.append({"id": render_id, "created_at": at, "status": "succeeded",
                             "prompt": prompt, "params": params, **extra})
        return render_id

    def create(self, req: httpx2.Request, match: object) -> httpx2.Response:
        body = json.loads(req.content)
        return json_response(201, {"id": self.add(body["prompt"], body["params"], self.now),
                                   "status": "queued"})

    def list(self, req: httpx2.Request, match: object) -> httpx2.Response:
        query = req.url.params
        shown = [r for r in self.renders if float(r["created_at"]) + self.delay  # type: ignore[arg-type]
                 <= self.now]
        if self.honour_since and "created_after" in query:
            shown = [r for r in shown
                     if float(r["created_at"]) >= float(query["created_after"])]  # type: ignore[arg-type]
        shown.sort(key=lambda r: float(r["created_at"]), reverse=True)  # type: ignore[arg-type]
        if "before" in query:
            ids = [r["id"] for r in shown]
            shown = shown[ids.index(query["before"]) + 1:]
        page, more = shown[:self.page], len(shown) > self.page
        return json_response(200, {"data": page, "has_more": more,
                                   "next_cursor": page[-1]["id"] if more else None})


def searching(client: httpx2.AsyncClient) -> MockProvider:
    return MockProvider(client, ProviderConfig("acct", BASE, SENTINEL_KEY,
                                               settings={"reconcile": "search"}))


def _listing(count: int) -> FakeList:
    fake = FakeList(page=3)
    for i in range(count):
        fake.add(f"shot {i}", {"duration": 4}, T0 + i / 1000)
    return fake


def _refused(code: str) -> dict[str, object]:
    return {"error": {"code": code, "message": f"no: Bearer {SENTINEL_KEY}"}}


SEARCH = SearchFacts(
    label="mock", provider="mock", listing=_listing,
    make=lambda client, fake: searching(client), route=LIST, window=(T0 - 10, T0 + 10),
    page=3, budget=mock.SEARCH_PAGE_BUDGET, hosts=("127.0.0.1",),
    first_errors=((401, _refused("invalid_api_key"), ErrorClass.ACCOUNT,
                   ErrorLabel.KEY_REJECTED),
                  (429, _refused("rate_limited"), ErrorClass.ACCOUNT, ErrorLabel.RATE_LIMITED),
                  (500, _refused("boom"), ErrorClass.RETRYABLE, ErrorLabel.PROVIDER_ERROR)),
    failures=(lambda: json_response(500, {"error": {"code": "boom", "message": "down"}}),
              lambda: json_response(429, {"error": {"code": "rate_limited",
                                                    "message": "slow"}}),
              lambda: read_timeout),
    unreadable=(b"<html>gateway</html>", b'{"data": "none"}', b'{"data": []}',
                b'{"data": [], "has_more": true}',
                b'{"data": [{"prompt": "p"}], "has_more": false}',
                b'{"data": ["mr_1"], "has_more": false}', b'[{"id": "mr_1"}]',
                json.dumps({"data": [{"id": 7, "key": SENTINEL_KEY}],
                            "has_more": False}).encode(),
                json.dumps({"data": [], "has_more": "no", "echo": SENTINEL_KEY}).encode()),
    off=(searching, LIST), off_midway=True, settle=mock.DEFAULT_SETTLE_SECONDS)
