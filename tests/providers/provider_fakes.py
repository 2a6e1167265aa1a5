"""Building blocks for the fake providers: a routing MockTransport handler, fixtures, bytes.

Each test module builds its provider's fake from these: routes answer from the recorded
JSON under ``tests/fixtures/<provider>/``, ``Router.script`` queues one-off answers (errors,
timeouts) ahead of the normal route, and ``Router.calls`` counts what the adapter sent, so a
test can assert "exactly one create".
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx2
from tests.every_key import EveryAccountKey

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"

SENTINEL_KEY = "sk-SENTINEL-7f3a9c-do-not-leak"

# A tiny but real-looking MP4 head (ftyp box) padded to a few KB.
VIDEO_BYTES = (b"\x00\x00\x00\x20ftypisom\x00\x00\x02\x00isomiso2avc1mp41"
               + bytes(range(256)) * 16)

HTML_PAGE = b"<!DOCTYPE html><html><body><h1>Access denied</h1></body></html>" + b" " * 64

Handler = Callable[[httpx2.Request, "re.Match[str]"], httpx2.Response]


def fixture(provider: str, name: str) -> Any:
    """A recorded JSON answer; a fresh copy each time, so tests may edit it."""
    with (FIXTURES / provider / f"{name}.json").open(encoding="utf-8") as handle:
        return copy.deepcopy(json.load(handle))


def json_response(status: int, body: Any, headers: dict[str, str] | None = None) -> httpx2.Response:
    return httpx2.Response(status, json=body, headers=headers)


def video_response(content: bytes = VIDEO_BYTES, content_type: str = "video/mp4",
                   headers: dict[str, str] | None = None) -> httpx2.Response:
    merged = {"Content-Type": content_type}
    merged.update(headers or {})
    return httpx2.Response(200, content=content, headers=merged)


def echo_error(status: int, request: httpx2.Request, extra: dict[str, Any] | None = None,
               headers: dict[str, str] | None = None) -> httpx2.Response:
    """An error answer that echoes the request headers and body, as some gateways do."""
    body: dict[str, Any] = {
        "error": {"message": "Request rejected; your request was: "
                  + json.dumps(dict(request.headers)) + " " + request.content.decode(
                      "utf-8", "replace")},
        "echo": dict(request.headers),
    }
    body.update(extra or {})
    return httpx2.Response(status, json=body, headers=headers)


@dataclass
class Call:
    method: str
    url: httpx2.URL
    headers: httpx2.Headers
    body: bytes


@dataclass
class Router:
    """A plain routing function for ``httpx2.MockTransport`` with a request log."""

    routes: list[tuple[str, re.Pattern[str], Handler]] = field(default_factory=list)
    scripted: list[tuple[str, re.Pattern[str], Any]] = field(default_factory=list)
    calls: list[Call] = field(default_factory=list)

    def add(self, method: str, pattern: str, handler: Handler) -> None:
        self.routes.append((method, re.compile(pattern), handler))

    def script(self, method: str, pattern: str, answer: Any) -> None:
        """Answer the next matching request with ``answer`` (a Response, an exception, or a
        callable taking the request), before the normal route."""
        self.scripted.append((method, re.compile(pattern), answer))

    def count(self, method: str, pattern: str) -> int:
        regex = re.compile(pattern)
        return sum(1 for c in self.calls
                   if c.method == method and regex.fullmatch(_target(c.url)))

    def __call__(self, request: httpx2.Request) -> httpx2.Response:
        target = _target(request.url)
        self.calls.append(Call(request.method, request.url, request.headers,
                               request.read()))
        for index, (method, regex, answer) in enumerate(self.scripted):
            if method == request.method and regex.fullmatch(target):
                del self.scripted[index]
                if isinstance(answer, BaseException):
                    raise answer
                if callable(answer):
                    result: httpx2.Response = answer(request)
                    return result
                assert isinstance(answer, httpx2.Response)
                return answer
        for method, regex, handler in self.routes:
            match = regex.fullmatch(target)
            if method == request.method and match:
                return handler(request, match)
        return json_response(404, {"error": f"no fake route for {request.method} {target}"})


ClientFor = Callable[[Router], httpx2.AsyncClient]


class WalkingFake:
    """A provider fake whose render walks ``states`` (fixture names), one poll at a time.

    A provider's fake sets ``create_route`` (counted by :meth:`creates`) and adds its
    routes to ``router``; :meth:`step` moves the render on and names its state;
    :meth:`video` serves the file, answering ``expired()`` once after
    ``expire_next_download`` is set.
    """

    create_route = ""

    def __init__(self, states: list[str] | None, walk: list[str]) -> None:
        self.router = Router()
        self.states = states or walk
        self.position = -1
        self.expire_next_download = False

    def creates(self) -> int:
        return self.router.count("POST", self.create_route)

    def step(self) -> str:
        self.position = min(self.position + 1, len(self.states) - 1)
        return self.states[self.position]

    def video(self, expired: Callable[[], httpx2.Response] = lambda: httpx2.Response(404)
              ) -> Handler:
        def serve(request: httpx2.Request, match: Any) -> httpx2.Response:
            if self.expire_next_download:
                self.expire_next_download = False
                return expired()
            return video_response()
        return serve


def _target(url: httpx2.URL) -> str:
    """host + path, the string routes match against."""
    return f"{url.host}{url.path}"


def read_timeout(request: httpx2.Request) -> httpx2.Response:
    raise httpx2.ReadTimeout("timed out waiting for the answer", request=request)


def all_texts(exc: BaseException) -> str:
    """Every text an exception chain shows: str, repr, args, causes and contexts."""
    parts: list[str] = []
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        parts += [str(current), repr(current), repr(current.args)]
        current = current.__cause__ or current.__context__
    return "\n".join(parts)


# -- one row through the real engine (MemoryStore), for the adapters' engine tests ----------

async def run_one_row(
    tmp_path: Path, router: Router, kind: str, *, prompt: str, account: str,
    params: dict[str, Any] | None = None, **options: Any,
) -> tuple[Any, Any]:
    """One row of ``kind`` (see :func:`run_rows`); returns the job and the store."""
    jobs, store = await run_rows(tmp_path, router, kind, [(prompt, params or {})],
                                 account=account, **options)
    return jobs[0], store


async def run_rows(
    tmp_path: Path, router: Router, kind: str, rows: list[tuple[str, dict[str, Any]]], *,
    account: str, base_url: str | None = None, settings: dict[str, Any] | None = None,
    key: str = SENTINEL_KEY, config: Any = None, providers: Any = None, capacity: int = 1,
) -> tuple[list[Any], Any]:
    """Rows of ``kind`` ((prompt, params) each, job keys k0, k1...) on one account whose
    API is ``router``, run by the real engine until nothing more can happen; returns the
    jobs in row order and the store (to read the ledger).

    The engine is imported here, not at the top: the fakes are also used without it."""
    import asyncio
    import random

    from reelqueue.domain.backoff import BackoffPolicy
    from reelqueue.domain.models import AccountSpec, BatchSpec, JobSpec
    from reelqueue.engine.config import EngineConfig
    from reelqueue.engine.engine import Engine
    from reelqueue.store.memory import MemoryStore

    # The fakes answer at once and list a render as soon as it exists: a lost create is
    # looked for right away (the real create window and settle times are minutes).
    config = config or EngineConfig(
        retry_backoff=BackoffPolicy(0.001, 0.01), poll_backoff=BackoffPolicy(0.001, 0.01),
        poll_min_seconds=0.0005, heartbeat_seconds=0.05, rate_limit_default_seconds=0.05,
        http_timeout_seconds=0.02, reconcile_settle_seconds=0.0)
    store = MemoryStore()
    batch = store.create_batch(BatchSpec("b", "s.csv", str(tmp_path / "out")), 0)
    # Priced as an import stamps it (a few cents): where the fake publishes a balance, a
    # job without a price would wait (issue 32 item 4, "price unknown: set it").
    store.add_jobs(batch.id, [JobSpec(f"k{i}", prompt, kind, str(tmp_path / "out" / f"{i}.mp4"),
                                      params=params, row_number=i + 2,
                                      metadata={"price": 0.05})
                              for i, (prompt, params) in enumerate(rows)], 0)
    store.add_account(AccountSpec(account, kind, capacity, base_url, "ref", settings or {}), 0)
    client = httpx2.AsyncClient(transport=httpx2.MockTransport(router))
    engine = Engine(store, config=config, keys=EveryAccountKey(key), http_client=client,
                    rng=random.Random(1), providers=providers)
    try:
        await engine.start()
        await asyncio.wait_for(engine.run_until_drained(), 20)
    finally:
        await engine.stop()
        engine.close_store()
        await client.aclose()
    return sorted(store.list_jobs(), key=lambda j: j.id), store
