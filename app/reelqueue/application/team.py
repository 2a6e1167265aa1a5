"""The team queue (issue 15): opening the shared PostgreSQL journal and running a worker.

- :func:`open_team_store` opens ``--store postgresql://…`` (or ``REELQUEUE_STORE``). The
  database password never travels in the address: it comes from the OS keyring (saved with
  ``reelqueue store-password URL``, under :func:`database_key_ref`) or from libpq's own
  pgpass file (``~/.pgpass`` or ``PGPASSFILE``). Every other part of the address
  (``sslmode=verify-full``, ``sslrootcert=…``, ``connect_timeout``…) goes to libpq as it is.
- :func:`run_worker` runs the engine headless on a shared store until told to stop: it
  says hello in the instances registry, renders for the accounts whose key this machine
  holds (the others are "key not on this machine" and never claimed), takes over expired
  leases of dead instances on its heartbeat, and on stop leaves its renders in flight for
  whoever picks them up (an orderly stop, as ``run`` does on Ctrl+C), then says goodbye.
"""

from __future__ import annotations

import asyncio
import logging
import os
import socket
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from reelqueue import __version__
from reelqueue.application.builtin_mock import BuiltinMock, builtin_mock_accounts
from reelqueue.application.compose import build_engine, provider_registry
from reelqueue.application.team_seam import (
    RUNNING,
    SILENT,
    STOPPED,
    TeamMachine,
    start_listener,
    team_config,
    team_machines,
)
from reelqueue.application.team_store import (
    TEAM_SCHEMES,
    KeyLookup,
    check_team_url,
    connection_string,
    connection_warnings,
    database_key_ref,
    is_team_url,
    keyring_lookup,
    open_team_store,
    tls_defaults,
)
from reelqueue.application.trust import (
    ADDRESS_UNREADABLE,
    DirectKeys,
    TrustedKeys,
    account_trust,
    team_identity,
)
from reelqueue.domain.clock import Clock, SkewedClock
from reelqueue.domain.errors import InputError
from reelqueue.domain.models import Account
from reelqueue.engine.account_keys import CONFIRM, AccountKeys
from reelqueue.engine.clock_offset import OFFSET_WARN_SECONDS
from reelqueue.engine.config import EngineConfig
from reelqueue.engine.engine import Engine
from reelqueue.engine.events import Event
from reelqueue.providers.registry import ProviderRegistry

if TYPE_CHECKING:
    from reelqueue.application.session import Session
    from reelqueue.store.postgres import PostgresStore
    from reelqueue.store.postgres_notify import WakeListener

log = logging.getLogger(__name__)

STORE_ENV = "REELQUEUE_STORE"
TEST_CLOCK_SKEW_ENV = "REELQUEUE_TEST_CLOCK_SKEW"
"""Tests only: seconds a worker's clock is set wrong by (tests/team/test_team_clock.py)."""
class KeyStoreLike(Protocol):
    def set_key(self, ref: str, key: str) -> None: ...


def save_database_password(url: str, password: str, keystore: KeyStoreLike | None = None
                           ) -> str:
    """Keep the team database's password in this machine's OS keyring (under
    :func:`database_key_ref`; never in the address, the journal or a log), as
    ``reelqueue store-password URL`` does; returns the database's password-free name.
    Blocking (a keyring call): run it on a worker thread from a loop."""
    check_team_url(url)
    if not password:
        raise InputError("The password is empty; nothing was saved.")
    if keystore is None:
        from reelqueue.credentials.keystore import KeyStore

        keystore = KeyStore()
    keystore.set_key(database_key_ref(url), password)
    return database_key_ref(url).removeprefix("database:")


@dataclass(frozen=True)
class AccountAvailability:
    """Whether this machine can render for one account of the team."""

    name: str
    provider: str
    usable: bool
    reason: str = ""
    confirm: bool = False  # the row changed: waits for ``accounts confirm`` here


def key_availability(accounts: list[Account], keys: TrustedKeys,
                     providers: ProviderRegistry | None = None) -> list[AccountAvailability]:
    """Which accounts this machine renders for: those whose key its keyring holds, bound
    to the kind and host the row names (or whose provider needs none and names no key).
    The others say why: "key not on this machine", or that the row changed and waits for
    ``accounts confirm`` (application.trust)."""
    registry = providers or provider_registry()
    out = []
    for account in accounts:
        try:
            info = registry.get(account.provider)
        except Exception:  # an unknown provider: not a key question
            out.append(AccountAvailability(account.name, account.provider, False,
                                           "provider not known to this version"))
            continue
        if not (info.requires_key or account.key_ref):
            out.append(AccountAvailability(account.name, account.provider, True))
            continue
        answer = keys.key_for(account, info.default_base_url)
        if answer.problem == CONFIRM:
            out.append(AccountAvailability(account.name, account.provider, False,
                                           answer.detail, confirm=True))
        elif answer.problem is not None:
            out.append(AccountAvailability(account.name, account.provider, False,
                                           "key not on this machine"))
        else:
            out.append(AccountAvailability(account.name, account.provider, True))
    return out


def worker_keys(store: PostgresStore, keystore: object | None = None) -> TrustedKeys:
    """A headless worker's keys: this machine's keyring, read directly (a blocking read
    kept a few seconds), named after the team database's identity."""
    if keystore is None:
        from reelqueue.credentials.keystore import KeyStore

        keystore = KeyStore()
    return TrustedKeys(DirectKeys(keystore), team_identity(store.database_id))


def clock_for_tests() -> Clock | None:
    """For tests only: a worker whose clock is set wrong by ``REELQUEUE_TEST_CLOCK_SKEW``
    seconds, as a machine without NTP would be (None: the system clock, always in use)."""
    skew = os.environ.get(TEST_CLOCK_SKEW_ENV)
    if not skew:
        return None
    try:
        return SkewedClock(float(skew))
    except ValueError:
        raise InputError(f"{TEST_CLOCK_SKEW_ENV}={skew!r} is not a number of seconds."
                         ) from None


def clock_lines(engine: Engine, where: str) -> list[str]:
    """What a worker says of its clock at start: its offset to the team database's, and
    a warning past ``OFFSET_WARN_SECONDS`` (empty before it was measured)."""
    reading = engine.clock_watch.reading
    if reading is None:
        return []
    lines = [f"Clock: {reading.sentence(where)}."]
    if abs(reading.offset) > OFFSET_WARN_SECONDS:
        lines.append(f"warning: that is more than {OFFSET_WARN_SECONDS:.0f} s. Leases and "
                     "retry times follow the database's clock, so the team stays correct, "
                     "but the times this machine shows are off by as much: set its clock "
                     "right (turn on NTP, e.g. 'timedatectl set-ntp true').")
    return lines


async def run_worker(store: PostgresStore, config: EngineConfig, *, keys: AccountKeys,
                     stop: asyncio.Event, on_event: Callable[[Event], None] | None = None,
                     on_started: Callable[[Engine], None] | None = None,
                     instance_id: str | None = None,
                     wake_fallback_seconds: float | None = 5.0,
                     clock: Clock | None = None) -> Engine:
    """Run an engine on the team store until ``stop`` is set; returns the stopped engine.

    Wake-ups across machines: the team database notifies every instance of new work
    (``store/postgres_notify.py``); ``wake_fallback_seconds`` is the timer used while that
    connection is down (None: no listener, the pump's own timers only). ``clock``: this
    machine's clock (tests give a skewed one: ``clock_for_tests``).

    The engine's start-up recovery takes over only expired leases (``shared_store``);
    renders in flight at the stop stay claimed by this instance until their lease runs
    out, then any instance reattaches them by provider job id.
    """
    # A mock account without an address of its own renders on this process's built-in
    # mock, as in ``run`` and the window (the worker used to say "renders here" of it and
    # then refuse every claim: "the mock provider has no address"). Its renders end with
    # the process; whoever takes them over renders them again, without an attempt spent.
    accounts = await asyncio.to_thread(store.list_accounts)
    mock = BuiltinMock()
    providers = None
    if builtin_mock_accounts(accounts):
        await asyncio.to_thread(mock.ensure)
        providers = mock.providers()
    try:
        return await _run_engine(store, config, keys=keys, stop=stop, on_event=on_event,
                                 on_started=on_started, instance_id=instance_id,
                                 wake_fallback_seconds=wake_fallback_seconds, clock=clock,
                                 providers=providers,
                                 lost=builtin_mock_accounts(accounts))
    finally:
        await asyncio.to_thread(mock.stop)


async def _run_engine(store: PostgresStore, config: EngineConfig, *, keys: AccountKeys,
                      stop: asyncio.Event, on_event: Callable[[Event], None] | None,
                      on_started: Callable[[Engine], None] | None, instance_id: str | None,
                      wake_fallback_seconds: float | None, clock: Clock | None,
                      providers: ProviderRegistry | None, lost: list[str]) -> Engine:
    engine = build_engine(store, config=team_config(config), keys=keys,
                          instance_id=instance_id, clock=clock, providers=providers,
                          lost_render_accounts=lost)
    if on_event is not None:
        engine.bus.subscribe(on_event)
    # Its clock against the server's first: the registry says it from the hello on.
    offset = await engine.measure_clock()
    await engine.store.call(store.register_instance, engine.instance_id,
                            host=socket.gethostname(), pid=os.getpid(),
                            version=__version__, clock_offset=offset,
                            lease_seconds=engine.config.lease_seconds,
                            providers=engine.providers.kinds())
    listener: WakeListener | None = None
    try:
        await engine.start()
        if wake_fallback_seconds is not None:
            listener = await engine.store.call(start_listener, store, engine,
                                               asyncio.get_running_loop(),
                                               wake_fallback_seconds)
        if on_started is not None:
            on_started(engine)
        await stop.wait()
    finally:
        if listener is not None:
            await asyncio.to_thread(listener.stop)
        await engine.stop()
        try:
            await engine.store.call(store.stop_instance, engine.instance_id)
        finally:
            engine.close_store()
    return engine


def is_team_session(session: Session) -> bool:
    """The session's journal is the team database (its mode says: team_seam.py)."""
    return session.mode.shared


async def machines(session: Session) -> list[TeamMachine]:
    """The instances sharing the team database (empty on a local journal); read on the
    journal's thread."""
    return await session.mode.machines(session)


async def instances(session: Session, *, local_running: bool = False
                    ) -> list[TeamMachine]:
    """``reelqueue instances``: the machines sharing the journal (issue 21). On the team
    database, the instances registry, silence judged on the server's clock against each
    instance's lease (a SIGKILLed worker reads SILENT, "gone", once its heartbeat is older
    than its lease). On the local journal, this one machine: RUNNING while a ReelQueue
    holds its data folder (``local_running``), its live renders counted in the journal."""
    if is_team_session(session):
        return await machines(session)
    counts = await session.journal.counts()
    live = sum(counts.live_by_account.values())
    return [TeamMachine(
        id="local", host=socket.gethostname(), pid=0, version=__version__,
        started_at=0.0, heartbeat_at=0.0, live_renders=live if local_running else 0,
        state=RUNNING if local_running else STOPPED, silent_for=0.0, this_machine=True,
        clock_offset=0.0, providers=tuple(session.providers.kinds()))]


def providers_words(machine: TeamMachine) -> str:
    """Which providers one machine can render with, in the user's words."""
    if machine.providers is None:
        return "providers unknown"
    if not machine.providers:
        return "no providers"
    return "providers " + ", ".join(machine.providers)


def unserved_lines(waiting: dict[str, int], machines: list[TeamMachine], *,
                   team_store: bool) -> list[str]:
    """Why jobs wait that no machine can render: one line per provider whose waiting jobs
    (``waiting``: provider -> jobs queued or in retry wait with no create sent) no machine
    that could claim them has. On the team database those are the running machines; a
    machine whose providers are unknown may have it, and the line says so rather than
    guess. On the local journal, this machine."""
    candidates = [m for m in machines if m.state == RUNNING or not team_store]
    if team_store and not candidates:
        return []  # "0 running" says it already
    lines = []
    for provider, n in sorted(waiting.items()):
        if n <= 0 or any(m.providers is not None and provider in m.providers
                         for m in candidates):
            continue
        jobs = f"{n} job{'s' if n != 1 else ''} wait{'s' if n == 1 else ''}"
        unknown = [m.host for m in candidates if m.providers is None]
        if not team_store:
            lines.append(f"{jobs} for provider {provider}, which this machine does not "
                         "have (its plug-in is not installed, or failed to load: see "
                         "'reelqueue status').")
        elif unknown:
            lines.append(f"{jobs} for provider {provider}: no running machine says it has "
                         f"it ({', '.join(sorted(set(unknown)))}: providers unknown).")
        else:
            lines.append(f"{jobs} for provider {provider}, which no running machine has: "
                         "install it on one, or start ReelQueue where it is.")
    return lines


async def unserved(session: Session, machines: list[TeamMachine]) -> list[str]:
    """:func:`unserved_lines` for the session's journal, from its waiting jobs."""
    store = session.journal.sync
    waiting: dict[str, int] = {}
    for t in await session.journal.call(store.to_go):
        waiting[t.provider] = waiting.get(t.provider, 0) + t.priced + t.unpriced
    return unserved_lines(waiting, machines, team_store=is_team_session(session))


async def join(session: Session) -> None:
    """Say hello in the instances registry for the session's engine (a team store only)."""
    await session.mode.join(session)


async def leave(session: Session) -> None:
    """Say goodbye in the instances registry (before the session stops its engine)."""
    await session.mode.leave(session)


def keys_not_here(session: Session, accounts: list[Account]) -> set[str]:
    """Names of the accounts this machine never renders for on a team store: their key
    is not in this machine's keyring (read ahead at start; never blocks)."""
    if not is_team_session(session):
        return set()
    return {a.name for a in key_availability(accounts, session.trusted_keys,
                                             session.providers)
            if not a.usable and a.reason == "key not on this machine"}


def keys_to_confirm(session: Session, accounts: list[Account]) -> dict[str, str]:
    """The accounts whose row changed (provider or address: on a team database, or by a
    hand edit of a local journal) since this machine bound its key: name -> what changed
    ("its key was kept for openai-compat at gw.a.com; the journal now names … at gw.b.com").
    Their key is sent nowhere until ``accounts confirm`` (application.trust); the window
    says so before anything is claimed, not only once the engine asks for the key. Reads
    only what the key cache already holds (never blocks)."""

    def official(kind: str) -> str | None:
        return session.providers.get(kind).default_base_url

    return {t.name: (f"its key was kept for {t.bound_to}; the journal now names {t.row_says}"
                     if t.bound_to and not t.words.startswith(ADDRESS_UNREADABLE) else t.words)
            for t in account_trust(session.trusted_keys, accounts, official)
            if t.problem == CONFIRM}


__all__ = [
    "RUNNING",
    "SILENT",
    "STOPPED",
    "STORE_ENV",
    "TEAM_SCHEMES",
    "TEST_CLOCK_SKEW_ENV",
    "AccountAvailability",
    "KeyLookup",
    "TeamMachine",
    "check_team_url",
    "clock_for_tests",
    "clock_lines",
    "connection_string",
    "connection_warnings",
    "database_key_ref",
    "instances",
    "is_team_session",
    "is_team_url",
    "join",
    "key_availability",
    "keyring_lookup",
    "keys_not_here",
    "keys_to_confirm",
    "leave",
    "machines",
    "open_team_store",
    "providers_words",
    "run_worker",
    "save_database_password",
    "team_config",
    "team_machines",
    "tls_defaults",
    "unserved",
    "unserved_lines",
    "worker_keys",
]
