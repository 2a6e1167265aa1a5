"""The client's failed-authentication throttle comes before its token is checked: a
throttled client is answered 429 (with Retry-After) without its token being looked at, a
right token included, and a client past its free failures waits its turn before the check,
so a right guess is answered no sooner than a wrong one."""

from __future__ import annotations

import asyncio
import sqlite3
import time
from pathlib import Path
from typing import Any, cast

from aiohttp import web
from aiohttp.test_utils import TestClient, TestServer

from reelqueue.api.auth import FREE_FAILURES, FailureThrottle, middleware
from reelqueue.api.problems import problem_errors
from reelqueue.application.tokens import ClientTokens, TokenInfo
from reelqueue.store.sqlite import SqliteStore
from reelqueue.store.tokens import TokenStore

GOOD = "rq_0123456789abcdef_right"


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


class CountingTokens:
    """A token table that counts how often a token is checked. Attributes: checked."""

    def __init__(self) -> None:
        self.checked: list[tuple[float, str]] = []

    async def verify(self, token: str) -> TokenInfo | None:
        self.checked.append((time.monotonic(), token))
        return TokenInfo("client", "admin", 0.0) if token == GOOD else None


async def _client(tokens: CountingTokens, throttle: FailureThrottle) -> TestClient[Any, Any]:
    async def jobs(request: web.Request) -> web.Response:
        return web.json_response({"jobs": []})
    app = web.Application(middlewares=[middleware(cast(ClientTokens, tokens), throttle)])
    app.router.add_get("/v1/jobs", jobs)
    client: TestClient[Any, Any] = TestClient(TestServer(app, host="127.0.0.1"))
    await client.start_server()
    return client


def _bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


async def test_a_throttled_client_is_refused_without_its_token_being_checked() -> None:
    clock = Clock()  # frozen: the turns reserved below stay in the future
    throttle = FailureThrottle(clock=clock)
    waits = [throttle.failed("127.0.0.1") for _ in range(FREE_FAILURES + 3)]
    assert waits[-1] == 1.75  # the next turn would be 3.75 s away: past MAX_WAIT_SECONDS
    tokens = CountingTokens()
    client = await _client(tokens, throttle)
    try:
        for token in (GOOD, "rq_0123456789abcdef_wrong"):
            answer = await client.get("/v1/jobs", headers=_bearer(token))
            assert answer.status == 429, await answer.text()
            assert answer.headers["Retry-After"].isdigit()
            assert answer.headers["Content-Type"].startswith("application/problem+json")
        # The right token was refused like a wrong one, and neither was checked.
        assert tokens.checked == []
    finally:
        await client.close()


async def test_a_client_past_its_free_failures_waits_its_turn_before_the_check() -> None:
    throttle = FailureThrottle()
    for _ in range(FREE_FAILURES):
        assert throttle.failed("127.0.0.1") == 0.0
    tokens = CountingTokens()
    client = await _client(tokens, throttle)
    try:
        started = time.monotonic()
        answer = await client.get("/v1/jobs", headers=_bearer(GOOD))
        assert answer.status == 200
        # Checked only after its turn (0.25 s), not at once with the answer held back.
        [(checked_at, _)] = tokens.checked
        assert checked_at - started >= 0.24
        # A right token in its turn is not a failure: the next turn is again the first.
        assert throttle.before_check("127.0.0.1") is not None
        assert throttle.waiting == 0
    finally:
        await client.close()


async def test_a_client_within_its_free_failures_is_checked_at_once() -> None:
    tokens = CountingTokens()
    client = await _client(tokens, FailureThrottle())
    try:
        answers = await asyncio.gather(*(client.get("/v1/jobs", headers=_bearer(GOOD))
                                         for _ in range(3)))
        assert [a.status for a in answers] == [200, 200, 200]
        assert len(tokens.checked) == 3
    finally:
        await client.close()


async def test_a_token_row_with_an_unknown_scope_grants_nothing(tmp_path: Path) -> None:
    """The team database is untrusted: a token row whose scope this server does not know
    (written past the CHECK constraint) is answered 403 with a problem document, never a
    500, and reaches no route."""
    journal = tmp_path / "journal.sqlite3"
    SqliteStore.open(journal, now=0.0).close()
    table = TokenStore(journal)
    token = table.add("odd", "admin", 0.0)
    raw = sqlite3.connect(journal)
    try:
        raw.execute("PRAGMA ignore_check_constraints = ON")
        raw.execute("UPDATE api_tokens SET scope = 'superuser' WHERE name = 'odd'")
        raw.commit()
    finally:
        raw.close()
    tokens = ClientTokens(table)
    reached: list[str] = []

    async def jobs(request: web.Request) -> web.Response:
        reached.append(request.path)
        return web.json_response({"jobs": []})
    app = web.Application(middlewares=[problem_errors,
                                       middleware(tokens, FailureThrottle())])
    app.router.add_get("/v1/jobs", jobs)
    client: TestClient[Any, Any] = TestClient(TestServer(app, host="127.0.0.1"))
    await client.start_server()
    try:
        answer = await client.get("/v1/jobs", headers=_bearer(token))
        assert answer.status == 403, await answer.text()
        assert answer.headers["Content-Type"].startswith("application/problem+json")
        detail = (await answer.json())["detail"]
        assert "superuser" in detail and "revoke" in detail
        assert reached == []
    finally:
        await client.close()
        tokens.close()
