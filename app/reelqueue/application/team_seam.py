"""Team mode behind one seam (issue 36 item 3): what differs between a machine alone on
its journal (:class:`SoloMode`, the local SQLite file) and a machine of a team
(:class:`TeamMode`, the team's PostgreSQL database), said once, in two classes.

:func:`reelqueue.application.compose.journal_mode` chooses one for a context, once; a
:class:`~reelqueue.application.session.Session` keeps it as ``session.mode``. Nothing
above the store reads the team flag (``ctx.store_url``) or asks the store what it is
(``hasattr`` / ``isinstance``): it asks the mode (tests/test_team_seam.py keeps it so).

What varies:
    shared: other machines render from this journal (their keys, their accounts, their
        videos folders; the doctor judges live claims by leases and heartbeats).
    engine_config: a team's engine takes over expired leases only (``shared_store``).
    connection_warnings / encrypted / where: what is said about the journal's connection.
    database_identity: the namespace of this machine's key bindings (application.trust).
    machines / join / leave: the instances registry, and the team database's wake-ups
        (a listener from join to leave: a change any machine or process commits wakes
        this machine's engine at once, store/postgres_notify.py).
    open_reader / token_table: the journal's reads and the API's tokens, where they live.

The clock needs no choice here: the store reads the server's time in its statements
(DESIGN.md invariant 14); the engine measures its offset for any store.
"""

from __future__ import annotations

import asyncio
import logging
import os
import socket
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Protocol, cast

from reelqueue import __version__
from reelqueue.engine.config import EngineConfig

if TYPE_CHECKING:
    from pathlib import Path

    from reelqueue.application.context import AppContext
    from reelqueue.application.feed import FeedReader
    from reelqueue.application.session import Session
    from reelqueue.application.tokens import TokenTable
    from reelqueue.engine.engine import Engine
    from reelqueue.store.base import Store
    from reelqueue.store.postgres import Instance, PostgresStore
    from reelqueue.store.postgres_notify import WakeListener

__all__ = ["RUNNING", "SILENT", "STOPPED", "WAKE_FALLBACK_SECONDS", "JournalMode", "SoloMode",
           "TeamMachine", "TeamMode", "journal_mode", "start_listener", "team_config",
           "team_machines"]

log = logging.getLogger(__name__)

WAKE_FALLBACK_SECONDS = 5.0
"""How often a machine whose wake-up connection is down wakes its pump instead."""


def team_config(config: EngineConfig) -> EngineConfig:
    """``config`` for a shared store: take over expired leases only, and send a create
    only while the claim's lease outlasts it (the engine fits the provider timeouts into
    the lease: ``EngineConfig.fitted_to_lease``)."""
    return replace(config, shared_store=True)


# -- what the window shows of the team (issue 15) ---------------------------------------
RUNNING = "running"
SILENT = "silent"  # no heartbeat for longer than a lease: its renders are taken over
STOPPED = "stopped"


@dataclass(frozen=True)
class TeamMachine:
    """One ReelQueue sharing the team database, as the window lists it.

    Attributes:
        host, pid, version, started_at, heartbeat_at: from the instances registry.
        live_renders: the in-flight jobs its last heartbeat renewed (0 once stopped).
        state: RUNNING, SILENT (no heartbeat for longer than a lease: any other instance
            takes its renders over) or STOPPED (said goodbye).
        silent_for: seconds since its last heartbeat, on the server's clock, at the read.
        this_machine: the instance is this window's own engine.
        clock_offset: its clock minus the server's, as it last measured (None: unknown).
        lease_seconds: the lease its claims get: silence longer than it means gone.
        providers: the provider kinds it can build (built-ins and loaded plug-ins), as it
            said at hello; None: unknown (an older version, or a row out of bounds).
    """

    id: str
    host: str
    pid: int
    version: str
    started_at: float
    heartbeat_at: float
    live_renders: int
    state: str
    silent_for: float
    this_machine: bool = False
    clock_offset: float | None = None
    lease_seconds: float | None = None
    providers: tuple[str, ...] | None = None


def team_machines(instances: list[Instance], *, lease_seconds: float,
                  own_id: str | None = None) -> list[TeamMachine]:
    """The registry's rows in the window's terms; running machines first, then the
    silent ones, then those that stopped (each group oldest first). Silence is measured
    on the server's clock (``Instance.silent_for``) against the instance's own lease
    (``lease_seconds`` for an instance of a version that did not say it)."""
    order = {RUNNING: 0, SILENT: 1, STOPPED: 2}
    out = []
    for inst in instances:
        silent_for = inst.silent_for
        if inst.stopped_at is not None:
            state = STOPPED
        elif silent_for > (inst.lease_seconds or lease_seconds):
            state = SILENT
        else:
            state = RUNNING
        out.append(TeamMachine(
            id=inst.id, host=inst.host, pid=inst.pid, version=inst.version,
            started_at=inst.started_at, heartbeat_at=inst.heartbeat_at,
            live_renders=0 if state == STOPPED else inst.live_renders, state=state,
            silent_for=silent_for, this_machine=inst.id == own_id,
            clock_offset=inst.clock_offset,
            lease_seconds=inst.lease_seconds or lease_seconds,
            providers=inst.providers))
    return sorted(out, key=lambda m: (order[m.state], m.started_at, m.id))


class JournalMode(Protocol):
    """What differs between a machine alone and a machine of a team (module docstring)."""

    @property
    def shared(self) -> bool:
        """Other machines render from this journal."""
        ...

    def engine_config(self, config: EngineConfig) -> EngineConfig: ...

    def connection_warnings(self, store: Store | None = None) -> list[str]: ...

    def encrypted(self, store: Store) -> bool | None:
        """Whether the connection to the journal is encrypted (None: not a connection)."""
        ...

    def where(self, store: Store) -> str:
        """The journal, in the user's words."""
        ...

    def database_identity(self, store: Store) -> str | None: ...

    async def machines(self, session: Session) -> list[TeamMachine]: ...

    async def join(self, session: Session) -> None: ...

    async def leave(self, session: Session) -> None: ...

    def open_reader(self, ctx: AppContext) -> FeedReader: ...

    def token_table(self, ctx: AppContext) -> Path | TokenTable: ...


class SoloMode:
    """One machine on its local journal: nobody else renders, no registry, no server."""

    shared = False

    def engine_config(self, config: EngineConfig) -> EngineConfig:
        return config

    def connection_warnings(self, store: Store | None = None) -> list[str]:
        return []

    def encrypted(self, store: Store) -> bool | None:
        return None

    def where(self, store: Store) -> str:
        return "the local journal"

    def database_identity(self, store: Store) -> str | None:
        return None  # keys keep their ``account:NAME`` entries

    async def machines(self, session: Session) -> list[TeamMachine]:
        return []

    async def join(self, session: Session) -> None:
        return None

    async def leave(self, session: Session) -> None:
        return None

    def open_reader(self, ctx: AppContext) -> FeedReader:
        from reelqueue.store.journal_reader import JournalReader

        return JournalReader(ctx.journal_path)

    def token_table(self, ctx: AppContext) -> Path | TokenTable:
        return ctx.journal_path


class TeamMode:
    """A machine of a team on the PostgreSQL database at ``url`` (the store compose opens
    for it is a :class:`~reelqueue.store.postgres.PostgresStore`).

    Attributes:
        url: the team database's address (no password).
    """

    shared = True

    def __init__(self, url: str) -> None:
        self.url = url
        self._listener: WakeListener | None = None

    @staticmethod
    def team_store(store: Store) -> PostgresStore:
        """The journal compose opened for this mode (open_journal_store): the team
        database's store, as it is; no question is asked of it."""
        return cast("PostgresStore", store)

    def engine_config(self, config: EngineConfig) -> EngineConfig:
        return team_config(config)

    def connection_warnings(self, store: Store | None = None) -> list[str]:
        from reelqueue.application.team_store import connection_warnings

        return connection_warnings(self.url,
                                   self.team_store(store) if store is not None else None)

    def encrypted(self, store: Store) -> bool | None:
        return self.team_store(store).encrypted

    def where(self, store: Store) -> str:
        return str(self.team_store(store).where)

    def database_identity(self, store: Store) -> str | None:
        from reelqueue.application.trust import team_identity

        return team_identity(self.team_store(store).database_id)

    async def machines(self, session: Session) -> list[TeamMachine]:
        store = self.team_store(session.journal.sync)
        rows = await session.journal.call(store.list_instances)
        engine = session.live_engine
        lease = (engine.config.lease_seconds if engine is not None
                 else EngineConfig().lease_seconds)
        return team_machines(rows, lease_seconds=lease,
                             own_id=engine.instance_id if engine is not None else None)

    async def join(self, session: Session) -> None:
        engine = session.live_engine
        if engine is None:
            return
        store = self.team_store(session.journal.sync)
        await session.journal.call(store.register_instance, engine.instance_id,
                                   host=socket.gethostname(), pid=os.getpid(),
                                   version=__version__, clock_offset=engine.clock_offset,
                                   lease_seconds=engine.config.lease_seconds,
                                   providers=engine.providers.kinds())
        if self._listener is None:
            self._listener = await session.journal.call(
                start_listener, store, engine, asyncio.get_running_loop(),
                WAKE_FALLBACK_SECONDS)

    async def leave(self, session: Session) -> None:
        listener, self._listener = self._listener, None
        if listener is not None:
            await asyncio.to_thread(listener.stop)
        engine = session.live_engine
        if engine is None:
            return
        store = self.team_store(session.journal.sync)
        await session.journal.call(store.stop_instance, engine.instance_id)

    def open_reader(self, ctx: AppContext) -> FeedReader:
        from reelqueue.application.team_store import team_dsn
        from reelqueue.store.pg_reader import PgJournalReader

        return PgJournalReader(team_dsn(self.url))

    def token_table(self, ctx: AppContext) -> Path | TokenTable:
        from reelqueue.application.team_store import team_dsn
        from reelqueue.store.pg_tokens import PgTokenStore

        return PgTokenStore(team_dsn(self.url))


def journal_mode(ctx: AppContext) -> JournalMode:
    """Alone or a machine of a team: chosen here, once, from the context's team database
    address (``compose.journal_mode`` is this); everything above the store asks the
    mode."""
    if ctx.store_url is not None:
        return TeamMode(ctx.store_url)
    return SoloMode()


def start_listener(store: PostgresStore, engine: Engine, loop: asyncio.AbstractEventLoop,
                   fallback_seconds: float) -> WakeListener:
    """Listen to the team database's wake-ups for ``engine`` (a thread; on the journal
    thread, as it reads the store): every notification wakes its pump on ``loop``."""
    from reelqueue.store.postgres_notify import (
        WakeListener,
        listen_conninfo,
        missing_wake_triggers,
    )

    # The triggers come with the schema (sql_pg, version 3); a missing one means wake-ups
    # of that kind reach this instance only through the timers.
    if missing := missing_wake_triggers(store):
        log.warning("the team database %s lacks the wake-up triggers %s: such changes "
                    "reach this instance by the pump's own timer only", store.where,
                    ", ".join(missing))
    dsn, schema = listen_conninfo(store)

    def wake() -> None:  # called on the listener's thread
        loop.call_soon_threadsafe(engine.wake)

    return WakeListener(dsn, schema, wake, fallback_seconds=fallback_seconds).start()
