"""Checking an account's key: the provider's cheapest read-only call."""

from __future__ import annotations

import httpx2

from reelqueue.application.compose import provider_registry
from reelqueue.providers.base import ProviderConfig
from reelqueue.providers.registry import ProviderRegistry, check_base_url

__all__ = ["check_key"]


async def check_key(account: str, provider_kind: str, base_url: str | None,
                    key: str | None, settings: dict[str, object],
                    providers: ProviderRegistry | None = None) -> None:
    """Raise the provider's error when ``key`` does not work for ``provider_kind``."""
    info = (providers or provider_registry()).get(provider_kind)
    async with httpx2.AsyncClient(timeout=30.0, follow_redirects=True) as client:
        url = base_url or info.default_base_url
        provider = info.factory(client, ProviderConfig(
            account=account, base_url=check_base_url(url) if url else None,
            api_key=key, settings=settings))
        await provider.check_key()
