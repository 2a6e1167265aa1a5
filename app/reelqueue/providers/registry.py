"""Which provider kinds exist, how each is built, and what each accepts.

Adapters register themselves here (one line each) so the engine, the intake and the CLI
find them by kind without importing every module by hand.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Callable
from dataclasses import dataclass
from urllib.parse import urlsplit

import httpx

from reelqueue.domain.errors import InputError
from reelqueue.providers.base import ParamSpec, Provider, ProviderConfig

ProviderFactory = Callable[[httpx.AsyncClient, ProviderConfig], Provider]


@dataclass(frozen=True)
class ProviderInfo:
    """Attributes:
    kind: the provider kind used in sheets and on the command line.
    title: a human name.
    factory: builds an adapter for one account.
    params: what the provider accepts.
    default_base_url: the API's base URL when the account gives none.
    requires_key: False only for the mock provider.
    """

    kind: str
    title: str
    factory: ProviderFactory
    params: ParamSpec
    default_base_url: str | None
    requires_key: bool = True


_REGISTRY: dict[str, ProviderInfo] = {}
_builtin_loaded = False


def register(info: ProviderInfo) -> None:
    _REGISTRY[info.kind] = info


def _load_builtin() -> None:
    # Imported for their register() side effect; kept in one place.
    global _builtin_loaded
    if _builtin_loaded:
        return
    _builtin_loaded = True
    import reelqueue.providers.mock

    try:
        import reelqueue.providers.adapters  # noqa: F401
    except ModuleNotFoundError as exc:  # pragma: no cover - adapters land separately
        if exc.name != "reelqueue.providers.adapters":
            raise


def get(kind: str) -> ProviderInfo:
    _load_builtin()
    try:
        return _REGISTRY[kind]
    except KeyError:
        known = ", ".join(sorted(_REGISTRY))
        raise InputError(f"Unknown provider {kind!r}. Known providers: {known}.") from None


def kinds() -> list[str]:
    _load_builtin()
    return sorted(_REGISTRY)


def is_loopback_url(url: str) -> bool:
    host = urlsplit(url).hostname or ""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def check_base_url(url: str) -> str:
    """Refuse a base URL that is not https, unless it points at loopback (mock, fakes)."""
    parts = urlsplit(url)
    if parts.scheme == "https" and parts.hostname:
        return url.rstrip("/")
    if parts.scheme == "http" and is_loopback_url(url):
        return url.rstrip("/")
    raise InputError(
        f"Refusing base URL {url!r}: provider URLs must use https "
        "(plain http is allowed only for 127.0.0.1 / localhost)."
    )
