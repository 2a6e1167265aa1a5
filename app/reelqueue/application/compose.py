"""The composition root: the one place that builds the journal (store), the provider
registry and the engine. The session (:mod:`.session`), the team worker (:mod:`.team`) and
the self-test (:mod:`.selftest`) get theirs here; no front end builds one.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from reelqueue.domain.clock import Clock
from reelqueue.engine.account_keys import AccountKeys
from reelqueue.engine.config import EngineConfig
from reelqueue.engine.engine import Engine
from reelqueue.engine.events import EventBus
from reelqueue.providers.builtin import builtin_registry
from reelqueue.providers.registry import ProviderRegistry
from reelqueue.store.base import Store

if TYPE_CHECKING:
    from reelqueue.application.context import AppContext

__all__ = ["build_engine", "open_journal_store", "provider_registry"]


def provider_registry() -> ProviderRegistry:
    """The provider kinds offered and rendered with: the built-in ones."""
    return builtin_registry()


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
