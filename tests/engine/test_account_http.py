"""Each account has its own HTTP client, its pool sized to the account (issue 33, item 2):
one account's polls and downloads never wait for a connection behind another account's,
and no pool is walked for a thousand queued requests (encode/httpcore#1035)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx2
import pytest

from reelqueue.domain.models import AccountSpec
from reelqueue.domain.states import JobState
from reelqueue.engine.engine import account_pool_size
from reelqueue.providers.base import ParamSpec, ProviderConfig
from reelqueue.providers.builtin import builtin_registry
from reelqueue.providers.http import HttpSession
from reelqueue.providers.httpx_session import httpx_client_of
from reelqueue.providers.registry import ProviderInfo
from reelqueue.store.memory import MemoryStore
from tests.engine.fakes import FakeProvider
from tests.engine.test_engine import add_batch, drain

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
