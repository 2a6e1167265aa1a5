"""The provider catalogue as the front ends show it (titles, parameters and key rules for
the dialogs and ``accounts add``): the registry the composition root builds
(:func:`~reelqueue.application.compose.provider_registry`, built-ins and plug-ins) and its
types, the plug-ins' report, and the check of an API address.
"""

from __future__ import annotations

from reelqueue.application.compose import plugin_report, provider_registry
from reelqueue.providers.builtin import BUILTIN_PROVIDERS
from reelqueue.providers.plugins import PluginReport
from reelqueue.providers.registry import ProviderInfo, ProviderRegistry, check_base_url

__all__ = ["PluginReport", "ProviderInfo", "ProviderRegistry", "builtin_kinds",
           "builtin_registry", "check_base_url", "plugin_report", "provider_registry"]


def builtin_kinds() -> list[str]:
    """The built-in provider kinds, known without loading a plug-in (for help texts read
    before ``--no-plugins`` is)."""
    return sorted(info.kind for info in BUILTIN_PROVIDERS)

builtin_registry = provider_registry
"""The provider kinds offered (the name the dialogs know it by; plug-ins included)."""
