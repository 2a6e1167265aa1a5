"""Fixtures for the mock provider tests: a fast in-process server, a client, an adapter."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

import httpx2
import pytest
from mockprovider_helpers import FAST, make_provider

from reelqueue.mockprovider import MockProviderServer
from reelqueue.providers.mock import MockProvider


@pytest.fixture
def mp_server() -> Iterator[MockProviderServer]:
    with MockProviderServer(FAST) as server:
        yield server


@pytest.fixture
async def mp_client() -> AsyncIterator[httpx2.AsyncClient]:
    async with httpx2.AsyncClient(timeout=httpx2.Timeout(3.0)) as client:
        yield client


@pytest.fixture
def mp_provider(mp_client: httpx2.AsyncClient, mp_server: MockProviderServer) -> MockProvider:
    return make_provider(mp_client, mp_server.url)
