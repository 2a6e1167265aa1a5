"""Fixtures shared by the provider adapter tests: an httpx client around a fake router."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable

import httpx
import pytest
from provider_fakes import Router


@pytest.fixture
async def client_for() -> AsyncIterator[Callable[[Router], httpx.AsyncClient]]:
    """Build ``httpx.AsyncClient(transport=MockTransport(router))``; closed after the test."""
    clients: list[httpx.AsyncClient] = []

    def build(router: Router) -> httpx.AsyncClient:
        client = httpx.AsyncClient(transport=httpx.MockTransport(router))
        clients.append(client)
        return client

    yield build
    for client in clients:
        await client.aclose()
