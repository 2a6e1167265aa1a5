"""Each account has its own HTTP client, its pool sized to the account (issue 33, item 2):
one account's polls and downloads never wait for a connection behind another account's,
and no pool is walked for a thousand queued requests (encode/httpcore#1035)."""

from __future__ import annotations

import asyncio
import random
from pathlib import Path
from typing import Any

import httpx2
import pytest

from reelqueue.domain.models import AccountSpec
from reelqueue.domain.states import JobState
from reelqueue.engine.engine import Engine, account_pool_size
from reelqueue.providers.base import ParamSpec, ProviderConfig
from reelqueue.providers.builtin import builtin_registry
from reelqueue.providers.http import HttpSession
from reelqueue.providers.httpx_session import httpx_client_of
from reelqueue.providers.registry import ProviderInfo
from reelqueue.store.memory import MemoryStore
from tests.engine.fakes import FakeProvider
from tests.engine.test_engine import FAST, add_batch, drain

pytestmark = pytest.mark.unit


def _max_connections(client: httpx2.AsyncClient) -> int:
    pool = client._transport._pool  # type: ignore[attr-defined]
    return int(pool._max_connections)


async def test_each_account_gets_its_own_client_sized_to_its_capacity(tmp_path: Path) -> None:
    given: dict[str, httpx2.AsyncClient] = {}
    provider = FakeProvider()

    def factory(session: HttpSession, config: ProviderConfig) -> Any:
        given.setdefault(config.account, httpx_client_of(session))
        return provider

    providers = builtin_registry().with_provider(ProviderInfo(
        "fake", "Fake", factory, ParamSpec(), None, requires_key=False))
    store = MemoryStore()
    add_batch(store, tmp_path, [f"p{i}" for i in range(12)])
    store.add_account(AccountSpec("small", "fake", 2), 0)
    store.add_account(AccountSpec("large", "fake", 9), 0)
    await drain(store, providers=providers)  # no client given: the engine makes its own
    assert {j.state for j in store.list_jobs()} == {JobState.COMPLETED}
    assert set(given) == {"small", "large"}
    assert given["small"] is not given["large"]
    assert _max_connections(given["small"]) == account_pool_size(2) == 6
    assert _max_connections(given["large"]) == account_pool_size(9) == 13
    assert given["small"].is_closed and given["large"].is_closed, "closed at stop"


async def test_a_client_given_by_the_caller_serves_every_account(tmp_path: Path) -> None:
    given: list[httpx2.AsyncClient] = []
    provider = FakeProvider()

    def factory(session: HttpSession, config: ProviderConfig) -> Any:
        given.append(httpx_client_of(session))
        return provider

    providers = builtin_registry().with_provider(ProviderInfo(
        "fake", "Fake", factory, ParamSpec(), None, requires_key=False))
    store = MemoryStore()
    add_batch(store, tmp_path, ["a", "b"])
    store.add_account(AccountSpec("one", "fake", 1), 0)
    store.add_account(AccountSpec("two", "fake", 1), 0)
    async with httpx2.AsyncClient(transport=httpx2.MockTransport(
            lambda r: httpx2.Response(500))) as mine:
        await drain(store, providers=providers, http_client=mine)
        assert given and all(client is mine for client in given)
        assert not mine.is_closed, "the caller's client is the caller's to close"


async def test_one_accounts_stuck_requests_never_hold_up_anothers() -> None:
    """Account B's provider answers nothing (every connection of its pool waits, and more
    requests queue behind them, in B's own pool); account A's polls are answered meanwhile.
    On one shared client A's request would wait for a connection behind B's."""
    arrived = {"a": 0, "b": 0}
    release = asyncio.Event()
    b_waiting = asyncio.Event()
    size_b = account_pool_size(2)

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                path = head.split(b" ", 2)[1].decode()
                account = path.strip("/")[:1]
                arrived[account] += 1
                if account == "b":
                    if arrived["b"] >= size_b:
                        b_waiting.set()
                    await release.wait()
                writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()

    server = await asyncio.start_server(serve, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    store = MemoryStore()
    store.add_account(AccountSpec("a", "fake", 2), 0)
    store.add_account(AccountSpec("b", "fake", 2), 0)
    engine = Engine(store, config=FAST, rng=random.Random(1))
    accounts = {a.name: a for a in store.list_accounts()}
    client_a, client_b = (engine._http_for(accounts[n]) for n in ("a", "b"))
    stuck = [asyncio.create_task(client_b.get(f"http://127.0.0.1:{port}/b{i}"))
             for i in range(size_b + 5)]
    try:
        await asyncio.wait_for(b_waiting.wait(), 30)  # B's pool is full, all waiting
        for i in range(10):  # A's polls, one after another, each answered
            answer = await asyncio.wait_for(
                client_a.get(f"http://127.0.0.1:{port}/a{i}"), 30)
            assert answer.status_code == 200
        assert arrived == {"a": 10, "b": size_b}, (
            "B's extra requests wait in B's own pool, not on the wire")
        assert not any(task.done() for task in stuck)
        release.set()
        answers = await asyncio.wait_for(asyncio.gather(*stuck), 30)
        assert [a.status_code for a in answers] == [200] * (size_b + 5)
    finally:
        release.set()
        for task in stuck:
            task.cancel()
        await asyncio.gather(*stuck, return_exceptions=True)
        await client_a.aclose()
        await client_b.aclose()
        server.close()
        await server.wait_closed()
        engine.close_store()
