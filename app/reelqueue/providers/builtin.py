"""The providers ReelQueue ships with, listed by hand (no module registers itself).

:func:`builtin_registry` is the registry the front ends pass to the engine and the intake
unless they are given another one (tests build their own).
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from reelqueue.providers import mock
from reelqueue.providers.adapters import (
    fal,
    kling,
    luma,
    luma_legacy,
    minimax,
    openai_compat,
    replicate,
    runway,
    veo,
)
from reelqueue.providers.base import ReconcileMethod
from reelqueue.providers.registry import ProviderInfo, ProviderRegistry


def _mock_reconcile(settings: Mapping[str, Any]) -> ReconcileMethod:
    """The built-in mock: the account setting ``reconcile`` (key, search or none), or the
    older ``lookup`` switch (default on: by client token)."""
    chosen = settings.get("reconcile")
    if chosen in ("key", "search", "none"):
        return ReconcileMethod(chosen)
    return ReconcileMethod.KEY if settings.get("lookup", True) else ReconcileMethod.NONE


def _always(method: ReconcileMethod) -> Any:
    return lambda settings: method


# How each provider's lost creates are found again (docs/providers.md, per provider; the
# adapters' own attributes say the same for a built adapter, which may turn a search off
# when a gateway has no list).
_RECONCILE = {
    mock.KIND: _mock_reconcile,
    kling.KIND: _always(ReconcileMethod.KEY),
    openai_compat.KIND: _always(ReconcileMethod.SEARCH),
    replicate.KIND: _always(ReconcileMethod.SEARCH),
    luma_legacy.KIND: _always(ReconcileMethod.SEARCH),
    # fal's request history lists finished requests only: it can find a render, never
    # prove one absent (docs/reconciliation/fal.md).
    fal.KIND: _always(ReconcileMethod.SEARCH),
}

_LISTED: tuple[ProviderInfo, ...] = (
    mock.INFO,
    runway.INFO,
    veo.INFO,
    luma.INFO,
    luma_legacy.INFO,
    fal.INFO,
    replicate.INFO,
    minimax.INFO,
    kling.INFO,
    openai_compat.INFO,
)

BUILTIN_PROVIDERS: tuple[ProviderInfo, ...] = tuple(
    replace(info, reconcile=_RECONCILE[info.kind]) if info.kind in _RECONCILE else info
    for info in _LISTED)


@functools.cache
def builtin_registry() -> ProviderRegistry:
    """The built-in providers (one immutable registry per process)."""
    return ProviderRegistry(BUILTIN_PROVIDERS)
