"""How an account's lost creates are found, asked of the account's own adapter (issue 32).

Whether a create whose answer was lost can be looked for, and whether "not found" proves it
never arrived, depends on the account as well as the provider: fal's request history lives
on fal's own host, so an account with its own base URL (a gateway) cannot be searched; a
gateway that answers its list with 404 cannot either. So the retry plan and ``resolve``
build the account's adapter from its current settings with the engine's own
:func:`~reelqueue.providers.registry.build_provider`, and ask it
(:func:`~reelqueue.providers.base.lost_create_search`). The adapter is built on a client
that sends nothing and with a placeholder key: building one reads no key and makes no
request.
"""

from __future__ import annotations

import functools
import logging

import httpx2

from reelqueue.domain.errors import ReelQueueError
from reelqueue.domain.models import Account
from reelqueue.providers.base import LostCreateSearch, Provider, lost_create_search
from reelqueue.providers.httpx_session import session_of
from reelqueue.providers.registry import ProviderRegistry, build_provider

log = logging.getLogger(__name__)

_PLANNING_KEY = "reelqueue-planning-only"
"""Stands in for the account's key: the adapter is only asked what it can do, and its
client sends nothing."""

_PLANNING_ADDRESS = "http://127.0.0.1:9"
"""For a provider whose address comes from the engine that starts it (the built-in mock):
a plan made without an engine builds it here, as its way of finding lost creates depends
on its settings only. Nothing is ever sent to it."""


class _SendsNothing(httpx2.AsyncBaseTransport):
    """A transport that refuses every request: an adapter built to be asked, not used."""

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        raise httpx2.ConnectError("ReelQueue's plan sends no request", request=request)


@functools.cache
def _planning_client() -> httpx2.AsyncClient:
    return httpx2.AsyncClient(transport=_SendsNothing())


def account_lost_create_search(account: Account | None,
                               providers: ProviderRegistry) -> LostCreateSearch:
    """How a create whose answer was lost on ``account`` is found: asked of the adapter the
    engine would build for it now. NONE (nothing can be promised) when the account is gone,
    its provider unknown, or its address unusable."""
    adapter = planning_adapter(account, providers)
    return LostCreateSearch.NONE if adapter is None else lost_create_search(adapter)


def planning_adapter(account: Account | None, providers: ProviderRegistry) -> Provider | None:
    """The adapter the engine would build for ``account`` now, on a client that sends
    nothing and with a placeholder key, to be asked what it can do (how it finds lost
    creates, whether it publishes an account view); None when the account is gone, its
    provider unknown, or its address unusable."""
    if account is None or account.provider not in providers:
        return None
    info = providers.get(account.provider)
    base_url = account.base_url
    if not base_url and not info.default_base_url and not info.requires_key:
        base_url = _PLANNING_ADDRESS
    try:
        return build_provider(info, session_of(_planning_client()), account=account.name,
                              base_url=base_url, api_key=_PLANNING_KEY,
                              settings=account.settings)
    except (ReelQueueError, ValueError) as exc:
        log.info("account %s: its adapter cannot be built (%s); it is asked nothing",
                 account.name, exc)
        return None
