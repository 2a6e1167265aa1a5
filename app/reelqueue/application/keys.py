"""Checking an account's key: the provider's cheapest read-only call, and the account view
read from that call's own answer where the adapter can (issue 32 item 2: "at connect")."""

from __future__ import annotations

import time

import httpx2

from reelqueue.application.compose import provider_registry
from reelqueue.domain.account_view import AccountView
from reelqueue.engine.account_views import read_view
from reelqueue.providers.base import account_view_of
from reelqueue.providers.httpx_session import session_of
from reelqueue.providers.registry import ProviderRegistry, build_provider

__all__ = ["check_key"]


async def check_key(account: str, provider_kind: str, base_url: str | None,
                    key: str | None, settings: dict[str, object],
                    providers: ProviderRegistry | None = None, *,
                    read_by: str = "key check") -> AccountView | None:
    """Raise the provider's error when ``key`` does not work for ``provider_kind``; else
    the account's view when the adapter offers one (Runway and Luma read it from the key
    check's own answer; a view that cannot be read is one with no figure and why), None
    when it offers none."""
    info = (providers or provider_registry()).get(provider_kind)
    async with httpx2.AsyncClient(timeout=30.0, follow_redirects=True) as client:
        provider = build_provider(info, session_of(client), account=account,
                                  base_url=base_url, api_key=key, settings=settings)
        await provider.check_key()
        viewer = account_view_of(provider)
        if viewer is None:
            return None
        view, _ = await read_view(account, viewer, time.time(), read_by)
        return view
