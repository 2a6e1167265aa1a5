"""Fixtures shared by the provider adapter tests: an httpx client around a fake router."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable

import httpx2
import pytest
from provider_fakes import Router


@pytest.fixture
async def client_for() -> AsyncIterator[Callable[[Router], httpx2.AsyncClient]]:
    """Build ``httpx2.AsyncClient(transport=MockTransport(router))``; closed after the test."""
    clients: list[httpx2.AsyncClient] = []

    def build(router: Router) -> httpx2.AsyncClient:
        client = httpx2.AsyncClient(transport=httpx2.MockTransport(router))
        clients.append(client)
        return client

    yield build
    for client in clients:
        await client.aclose()
