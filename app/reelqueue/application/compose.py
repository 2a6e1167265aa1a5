"""The composition root: the one place that builds the journal (store), the provider
registry and the engine. The session (:mod:`.session`), the team worker (:mod:`.team`) and
the self-test (:mod:`.selftest`) get theirs here; no front end builds one.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

from reelqueue.application.team_seam import journal_mode
from reelqueue.domain.clock import Clock
from reelqueue.engine.account_keys import AccountKeys
from reelqueue.engine.config import EngineConfig
from reelqueue.engine.engine import Engine
from reelqueue.engine.events import EventBus
from reelqueue.providers.builtin import builtin_registry
from reelqueue.providers.plugins import (
    PluginEntry,
    PluginReport,
    installed_entries,
    load_installed,
)
from reelqueue.providers.registry import ProviderRegistry
from reelqueue.store.base import Store

if TYPE_CHECKING:
    from reelqueue.application.context import AppContext

__all__ = ["NO_PLUGINS_ENV", "build_engine", "disable_plugins", "journal_mode",
           "open_journal_store",
           "plugin_report", "plugins_enabled", "provider_registry", "use_plugin_entries"]

NO_PLUGINS_ENV = "REELQUEUE_NO_PLUGINS"
"""Set (to anything but "" or "0"): start without provider plug-ins, as ``--no-plugins``
does; the window started from the command line inherits it."""

PluginSource = Callable[[], Iterable[PluginEntry]]


class _Plugins:
    """The process's providers: loaded once, on first use (importing a plug-in runs its
    code, so it happens only when a registry is asked for)."""

    source: PluginSource = installed_entries
    loaded: tuple[ProviderRegistry, PluginReport] | None = None


def plugins_enabled() -> bool:
    return os.environ.get(NO_PLUGINS_ENV, "").strip() in ("", "0")


def disable_plugins() -> None:
    """Start without plug-ins (``--no-plugins``): for this process and the ones it starts."""
    os.environ[NO_PLUGINS_ENV] = "1"
    _Plugins.loaded = None


def use_plugin_entries(source: PluginSource | None) -> None:
    """Where plug-ins are looked for (None: the installed distributions); the next
    registry asked for loads them again. Tests give fake entry points here."""
    _Plugins.source = source or installed_entries
    _Plugins.loaded = None


def _providers() -> tuple[ProviderRegistry, PluginReport]:
    if _Plugins.loaded is None:
        if plugins_enabled():
            _Plugins.loaded = load_installed(builtin_registry(), _Plugins.source)
        else:
            _Plugins.loaded = (builtin_registry(), PluginReport(disabled=True))
    return _Plugins.loaded


def provider_registry() -> ProviderRegistry:
    """The provider kinds offered and rendered with: the built-in ones and the plug-ins
    that load (none with ``--no-plugins``)."""
    return _providers()[0]


def plugin_report() -> PluginReport:
    """Which plug-ins are in use and which were skipped, and why."""
    return _providers()[1]


def open_journal_store(ctx: AppContext) -> Store:
    """Open ``ctx``'s journal itself (the team database with ``ctx.store_url``, else the
    local SQLite file), no lock taken; the caller closes it. Blocking: call on a worker
    thread from a loop."""
    if ctx.store_url is not None:
        from reelqueue.application.team_store import keyring_lookup, open_team_store

        return open_team_store(ctx.store_url, now=ctx.clock.now(),
                               key_lookup=keyring_lookup())
    from reelqueue.store.sqlite import SqliteStore

    return SqliteStore.open(ctx.journal_path, now=ctx.clock.now())


def build_engine(store: Store, *, config: EngineConfig | None = None,
                 clock: Clock | None = None, keys: AccountKeys | None = None,
                 bus: EventBus | None = None, providers: ProviderRegistry | None = None,
                 instance_id: str | None = None,
                 lost_render_accounts: Iterable[str] = ()) -> Engine:
    """An engine on ``store`` (not started), rendering with ``providers`` (default:
    :func:`provider_registry`)."""
    return Engine(store, config=config, clock=clock, keys=keys, bus=bus,
                  providers=providers or provider_registry(), instance_id=instance_id,
                  lost_render_accounts=lost_render_accounts)
