"""The provider catalogue as the front ends show it (titles, parameters and key rules for
the dialogs and ``accounts add``): the registry the composition root builds
(:func:`~reelqueue.application.compose.provider_registry`) and its types, and the check
of an API address.
"""

from __future__ import annotations

from reelqueue.application.compose import provider_registry
from reelqueue.providers.registry import ProviderInfo, ProviderRegistry, check_base_url

__all__ = ["ProviderInfo", "ProviderRegistry", "builtin_registry", "check_base_url",
           "provider_registry"]

builtin_registry = provider_registry
"""The built-in provider kinds (the name the dialogs know it by)."""
