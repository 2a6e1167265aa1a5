"""The providers ReelQueue ships with, listed by hand (no module registers itself).

:func:`builtin_registry` is the registry the front ends pass to the engine and the intake
unless they are given another one (tests build their own).
"""

from __future__ import annotations

import functools

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
from reelqueue.providers.registry import ProviderInfo, ProviderRegistry

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

# How each one finds a lost create is its adapter's to say, for the account it is built for
# (providers.base.lost_create_search; issue 32): no table of it is kept here.
BUILTIN_PROVIDERS: tuple[ProviderInfo, ...] = _LISTED


@functools.cache
def builtin_registry() -> ProviderRegistry:
    """The built-in providers (one immutable registry per process)."""
    return ProviderRegistry(BUILTIN_PROVIDERS)
