"""The provider conformance suite: one set of checks every adapter runs (test_suite.py),
each adapter bringing its fake and a table of its facts (one module per provider)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import httpx2
from provider_fakes import SENTINEL_KEY

from reelqueue.providers.base import ProviderConfig, RenderRequest


def requester(prompt: str, **defaults: Any) -> Callable[..., RenderRequest]:
    """A provider's ``request(prompt, token=..., **params)``: row-1's render request."""
    def request(prompt: str = prompt, *, token: str = "tok-1", **params: Any) -> RenderRequest:
        return RenderRequest(job_key="row-1", client_token=token, prompt=prompt,
                             params={**defaults, **params})
    return request


def maker(create: Callable[..., Any], account: str, base_url: str | None = None,
          key: str = SENTINEL_KEY, **settings: Any) -> Callable[..., Any]:
    """A provider's ``make(client, base_url, key=..., **settings)``: the adapter on a client."""
    def make(client: httpx2.AsyncClient, base_url: str | None = base_url, key: str = key,
             **more: Any) -> Any:
        return create(client, ProviderConfig(account, base_url, key, {**settings, **more}))
    return make
