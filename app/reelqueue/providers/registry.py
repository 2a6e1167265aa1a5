"""Which provider kinds exist, how each is built, and what each accepts.

A :class:`ProviderRegistry` is an immutable set of :class:`ProviderInfo`, given to whoever
needs it (the engine, the intake's catalog, the front ends). Nothing registers itself at
import time and nothing changes a registry at run time: :meth:`ProviderRegistry.with_base_url`
and :meth:`ProviderRegistry.with_provider` return a new one (the built-in mock's address is
one engine's override, a test's fake provider is that test's own registry). The built-in
providers are listed in :mod:`reelqueue.providers.builtin`; plug-ins come from installed
distributions (:mod:`reelqueue.providers.plugins`).

This module, :mod:`~reelqueue.providers.base` and :mod:`~reelqueue.providers.http` are
the contract a provider plug-in is written against (:data:`CONTRACT_VERSION`): none of them
names a type of the HTTP library.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, replace
from types import MappingProxyType
from typing import Any
from urllib.parse import urlsplit

from reelqueue.domain.errors import InputError, ReelQueueError
from reelqueue.providers.base import (
    ParamProblem,
    ParamSpec,
    Provider,
    ProviderConfig,
)
from reelqueue.providers.http import HttpSession

CONTRACT_VERSION = 1
"""The version of the provider contract (this module, ``base`` and ``http``). A plug-in's
:class:`ProviderInfo` says which version it was written for; one of another version is not
loaded (its reason is shown). Raised when a change would break a written plug-in."""

ProviderFactory = Callable[[HttpSession, ProviderConfig], Provider]
"""``(session, config) -> adapter``: builds the adapter of one account. ``session`` is
ReelQueue's own HTTP session over the account's connection pool."""
ParamRules = Callable[[Mapping[str, Any]], list[ParamProblem]]
"""``params -> problems``: a provider's rules for a row beyond its :class:`ParamSpec`
(e.g. Veo's 1080p needs 8 s); empty when the row is fine."""


def no_rules(params: Mapping[str, Any]) -> list[ParamProblem]:
    """The rules of a provider whose :class:`ParamSpec` says everything."""
    return []


@dataclass(frozen=True)
class ProviderInfo:
    """Attributes:
    kind: the provider kind used in sheets and on the command line.
    title: a human name.
    factory: builds an adapter for one account.
    params: what the provider accepts.
    default_base_url: the API's base URL when the account gives none.
    requires_key: False only for the mock provider.
    rules: the row rules its ``params`` cannot say (checked at import and before a create).
    contract: the :data:`CONTRACT_VERSION` it was written for.

    How a lost create is found again is the built adapter's to say
    (:func:`~reelqueue.providers.base.lost_create_search`): it may depend on the account's
    address and settings, so nobody keeps a second table of it (issue 32).
    """

    kind: str
    title: str
    factory: ProviderFactory
    params: ParamSpec
    default_base_url: str | None
    requires_key: bool = True
    rules: ParamRules = no_rules
    contract: int = CONTRACT_VERSION


class AdapterNotBuilt(ReelQueueError):
    """The provider's code failed to build the account's adapter.
    The account is not used until the provider (or its plug-in) is fixed."""


def build_provider(info: ProviderInfo, session: HttpSession, *, account: str,
                   base_url: str | None, api_key: str | None,
                   settings: Mapping[str, Any]) -> Provider:
    """The adapter of one account: its own address (else the provider's default, checked)
    and settings. The engine builds every adapter it renders with here, and the retry plan
    builds the same one (with a session that sends nothing) to ask how a lost create is
    found. Raises ReelQueueError (or ValueError for an address that cannot be parsed): a
    factory that fails otherwise (a plug-in's bug) is :class:`AdapterNotBuilt`, never an
    exception the engine's loop does not expect."""
    url = base_url or info.default_base_url
    if url:
        url = check_base_url(url)
    config = ProviderConfig(account=account, base_url=url, api_key=api_key,
                            settings=settings)
    try:
        return info.factory(session, config)
    except (ReelQueueError, ValueError):
        raise
    except Exception as exc:
        raise AdapterNotBuilt(f"The {info.title} adapter could not be built for account "
                              f"{account!r}: {type(exc).__name__}.") from exc


class ProviderRegistry:
    """An immutable set of providers, by kind.

    Attributes:
        infos: kind -> its :class:`ProviderInfo` (read-only).
    """

    __slots__ = ("infos",)

    def __init__(self, infos: Iterable[ProviderInfo]) -> None:
        by_kind: dict[str, ProviderInfo] = {}
        for info in infos:
            if info.kind in by_kind:
                raise ValueError(f"provider kind {info.kind!r} given twice")
            by_kind[info.kind] = info
        self.infos: Mapping[str, ProviderInfo] = MappingProxyType(by_kind)

    def get(self, kind: str) -> ProviderInfo:
        """The provider of this kind; InputError naming the known ones otherwise."""
        try:
            return self.infos[kind]
        except KeyError:
            known = ", ".join(sorted(self.infos))
            raise InputError(f"Unknown provider {kind!r}. Known providers: {known}.") from None

    def kinds(self) -> list[str]:
        return sorted(self.infos)

    def default_model(self, kind: str, settings: Mapping[str, Any]) -> str | None:
        """The model a job naming none renders with on an account of ``kind`` with these
        ``settings``: the account's own ``model`` setting, else the provider's first
        model; None when neither is known. The claim counts such a job against this
        model's limits, and the cost reconciliation lines it up under it."""
        own = settings.get("model")
        if isinstance(own, str) and own:
            return own
        info = self.infos.get(kind)
        if info is None:
            return None
        return info.params.models[0] if info.params.models else None

    def __iter__(self) -> Iterator[ProviderInfo]:
        return iter(self.infos.values())

    def __contains__(self, kind: object) -> bool:
        return kind in self.infos

    def with_provider(self, info: ProviderInfo) -> ProviderRegistry:
        """A new registry with ``info`` added (or replacing the provider of its kind)."""
        return ProviderRegistry([*(i for i in self if i.kind != info.kind), info])

    def with_base_url(self, kind: str, url: str) -> ProviderRegistry:
        """A new registry whose ``kind`` provider defaults to ``url`` (e.g. the built-in
        mock's address for one engine)."""
        return self.with_provider(replace(self.get(kind), default_base_url=url))

    def __repr__(self) -> str:
        return f"ProviderRegistry({', '.join(self.kinds())})"


def is_loopback_url(url: str) -> bool:
    try:
        host = urlsplit(url).hostname or ""
    except ValueError:  # an address that cannot be read is nobody's loopback
        return False
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def check_base_url(url: str) -> str:
    """Refuse a base URL that is not https, unless it points at loopback (mock, fakes).

    An address that cannot be read at all (``urlsplit`` raises ValueError, e.g. on a
    netloc holding U+FF20 FULLWIDTH COMMERCIAL AT, whose NFKC form is "@") is refused
    the same way, as an InputError: such a value may come from the team database
    (DESIGN.md invariant 15) and must never take a machine down."""
    try:
        parts = urlsplit(url)
    except ValueError:
        raise InputError(
            f"Refusing base URL {url!r}: the address cannot be read (it holds characters "
            "no host name may hold). Give the API's address as https://host/path.") from None
    if parts.scheme == "https" and parts.hostname:
        return url.rstrip("/")
    if parts.scheme == "http" and is_loopback_url(url):
        return url.rstrip("/")
    raise InputError(
        f"Refusing base URL {url!r}: provider URLs must use https "
        "(plain http is allowed only for 127.0.0.1 / localhost)."
    )
