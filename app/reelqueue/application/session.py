"""The session that owns the journal and, while it runs, an engine: what every front end
opens first, then passes to the commands (:mod:`~reelqueue.application.accounts`,
:mod:`~reelqueue.application.imports`, :mod:`~reelqueue.application.jobs`,
:mod:`~reelqueue.application.views`).

Two ways to open one:

- :meth:`Session.open_journal` — the journal only (one command of the command line:
  ``accounts add``, ``cancel`` …); writes go to the journal, nothing is rendered.
- :meth:`Session.start` — the journal, then an engine: keys read ahead, the built-in mock
  started when an account needs it, start-up recovery, the pump (the window, ``run``).

Everything slow runs off the event loop: the journal on its own thread (the engine's
:class:`~reelqueue.engine.async_store.AsyncStore`), the keyring, the lock file and the
built-in mock server on worker threads. Every command is one way: a journal write (on
:attr:`Session.journal`, the engine's own while one runs), then one
:meth:`Session.changed` naming what it changed; no front end wakes the engine by hand.

Shutdown order (:meth:`Session.stop`): stop handing out work -> cancel the session's tasks
-> stop the engine (pump, workers, heartbeat, HTTP client) -> close the journal and release
the data-folder lock -> stop the built-in mock.
"""

from __future__ import annotations

import asyncio
import logging
import sys
import threading
import time
from collections.abc import Callable, Coroutine, Iterable
from dataclasses import replace
from typing import Any

from reelqueue.application.builtin_mock import BuiltinMock, builtin_mock_accounts
from reelqueue.application.compose import build_engine, journal_mode, provider_registry
from reelqueue.application.context import AppContext
from reelqueue.application.trust import TrustedKeys
from reelqueue.domain.clock import Clock
from reelqueue.domain.errors import KnownError
from reelqueue.domain.models import RecoveryReport
from reelqueue.domain.states import IN_FLIGHT
from reelqueue.engine.async_store import AsyncStore
from reelqueue.engine.config import EngineConfig
from reelqueue.engine.engine import DrainResult, Engine
from reelqueue.engine.events import EventBus
from reelqueue.providers.registry import ProviderRegistry
from reelqueue.store.base import Store

log = logging.getLogger(__name__)

__all__ = ["DrainResult", "Engine", "ErrorSink", "KeyCache", "Session", "SessionClosed"]

ErrorSink = Callable[[BaseException], None]


class SessionClosed(RuntimeError):
    """The session is not open (a command came before open or after close)."""


class KeyCache:
    """API keys read from the OS keyring on a worker thread, looked up without blocking.

    The engine asks for a key on the event loop (at every account change); a keyring call
    may be a D-Bus round trip or an unlock prompt, so keys are read ahead (at start, and
    when an account is added). A key asked for that was never read ahead (an account
    another process added) is read on a worker thread; :attr:`on_loaded` (the session sets
    it to wake the engine) is called on the loop when it arrives. Off an event loop (a
    command checking keys before its engine starts) a lookup reads the keyring directly.

    Attributes:
        on_loaded: called (on the loop) after a key was read in the background.
    """

    def __init__(self, keystore: Any | None = None) -> None:
        self._keystore = keystore
        self._keys: dict[str, str] = {}
        self._asked: set[str] = set()
        self._read_at: dict[str, float] = {}  # monotonic time of each entry's last read
        self._lock = threading.Lock()
        self._loading: set[asyncio.Task[None]] = set()
        self.on_loaded: Callable[[], None] = lambda: None

    @property
    def keystore(self) -> Any:
        if self._keystore is None:
            from reelqueue.credentials.keystore import KeyStore

            self._keystore = KeyStore()
        return self._keystore

    def lookup(self, ref: str) -> str | None:
        """The key of ``ref`` if it was read; never blocks (see the class docstring)."""
        with self._lock:
            key = self._keys.get(ref)
            ask = key is None and ref not in self._asked
            self._asked.add(ref)
        if ask:
            self._load_in_background(ref)
            return self.lookup_cached(ref)
        return key

    def _load_in_background(self, ref: str) -> None:
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # not on an event loop: nothing to hold up, read it now
            for problem in self.load([ref]):
                log.warning("keyring: %s", problem)
            return

        async def load() -> None:
            problems = await asyncio.to_thread(self.load, [ref])
            for problem in problems:
                log.warning("keyring: %s", problem)
            # Also when nothing was found: an answer that waited for this read (a key's
            # binding, application.trust) can be given now.
            self.on_loaded()

        task = loop.create_task(load(), name=f"key-{ref}")
        self._loading.add(task)
        task.add_done_callback(self._loading.discard)

    def lookup_cached(self, ref: str) -> str | None:
        with self._lock:
            return self._keys.get(ref)

    # -- application.trust.KeyReader: keys and their bindings (issue 21) ----------------
    def peek(self, ref: str) -> str | None:
        """What is known of the entry (asks for it in the background if never asked)."""
        return self.lookup(ref)

    def ready(self, ref: str) -> bool:
        """The entry was read (or its reading failed) at least once."""
        with self._lock:
            return ref in self._read_at

    def keep(self, ref: str, value: str) -> None:
        """Remember ``value`` now and write it to the OS keyring (in the background on a
        loop; at once off a loop)."""
        with self._lock:
            self._keys[ref] = value
            self._asked.add(ref)
            self._read_at[ref] = time.monotonic()

        def write() -> None:
            try:
                self.keystore.set_key(ref, value)
            except KnownError as exc:
                log.warning("keyring: %s", exc)

        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            write()
            return
        task = loop.create_task(asyncio.to_thread(write), name="keyring-write")
        self._loading.add(task)
        task.add_done_callback(self._loading.discard)

    def recheck(self, ref: str) -> None:
        """Read the entry again in the background if its last read is older than
        ``trust.RECHECK_SECONDS`` (a confirm made by another process of this machine)."""
        from reelqueue.application.trust import RECHECK_SECONDS

        with self._lock:
            read_at = self._read_at.get(ref)
        if read_at is None or time.monotonic() - read_at < RECHECK_SECONDS:
            return
        with self._lock:
            self._read_at[ref] = time.monotonic()  # one re-read at a time
        self._load_in_background(ref)

    def load(self, refs: Iterable[str]) -> list[str]:
        """Read keys (blocking: call on a worker thread); return the problems met."""
        problems: list[str] = []
        for ref in refs:
            with self._lock:
                self._asked.add(ref)
            try:
                key = self.keystore.get_key(ref)
            except KnownError as exc:
                problems.append(str(exc))
                with self._lock:
                    self._read_at[ref] = time.monotonic()
                continue
            with self._lock:
                self._read_at[ref] = time.monotonic()
                if key:
                    self._keys[ref] = key
                else:
                    self._keys.pop(ref, None)
        return problems

    def read(self, ref: str) -> str | None:
        """Read one key now, raising the keyring's error (blocking: worker thread)."""
        key = self.keystore.get_key(ref)
        with self._lock:
            self._asked.add(ref)
            self._read_at[ref] = time.monotonic()
            if key:
                self._keys[ref] = key
        return key or None

    def store(self, ref: str, key: str) -> None:
        """Put ``key`` in the OS keyring and the cache (blocking: call on a worker thread)."""
        self.keystore.check_available()
        self.keystore.set_key(ref, key)
        with self._lock:
            self._keys[ref] = key.strip()
            self._asked.add(ref)
            self._read_at[ref] = time.monotonic()

    def forget(self, ref: str) -> None:
        """Delete the key from the OS keyring and the cache (blocking: worker thread)."""
        self.keystore.delete_key(ref)
        with self._lock:
            self._keys.pop(ref, None)
            self._read_at[ref] = time.monotonic()


class Session:
    """The journal and, once started, the engine every command of a front end runs on.

    Attributes:
        ctx: the folders and the clock.
        clock: the injected clock (``ctx.clock`` unless given).
        bus: the engine's event bus (subscribe before :meth:`start` to see recovery).
        keys: keys read ahead from the OS keyring.
        mock: the built-in mock provider.
        providers: the provider kinds offered and rendered with (default: the built-in
            ones; the engine gets them with the built-in mock's address while it runs).
        mode: alone or a machine of a team (application/team_seam.py), chosen once.
        engine: the engine, between :meth:`start` and :meth:`stop`; None otherwise.
        on_error: where failures of spawned tasks go (default: ``sys.excepthook``).
        closed: :meth:`stop` ran.
    """

    def __init__(self, ctx: AppContext, *, keys: KeyCache | None = None,
                 mock: BuiltinMock | None = None, clock: Clock | None = None,
                 providers: ProviderRegistry | None = None) -> None:
        self.ctx = ctx
        self.mode = journal_mode(ctx)
        self.providers = providers or provider_registry()
        self.clock = clock or ctx.clock
        self.bus = EventBus()
        self.keys = keys or KeyCache()
        self.mock = mock or BuiltinMock()
        self.engine: Engine | None = None
        self.on_error: ErrorSink = lambda exc: sys.excepthook(type(exc), exc, exc.__traceback__)
        self.closed = False
        self._store: Store | None = None
        self._journal: AsyncStore | None = None
        self._lock: Any | None = None
        self._tasks: set[asyncio.Task[Any]] = set()
        self._owns_store = True
        self._trusted: TrustedKeys | None = None
        self._engine_stopped = False
        self.keyring_problems: list[str] = []
        """Why some keys could not be read at :meth:`start`."""

    # -- the journal ---------------------------------------------------------------------
    @property
    def journal(self) -> AsyncStore:
        """The journal, called on its own thread (the engine's while one runs)."""
        if self.engine is not None:
            return self.engine.store
        if self._journal is None:
            raise SessionClosed("the session is not open")
        return self._journal

    @property
    def is_open(self) -> bool:
        return self._store is not None and not self.closed

    def _open_store(self, lock: bool) -> Store:
        from reelqueue.store.lockfile import DataDirLock, make_private_dir

        make_private_dir(self.ctx.data_dir)
        held = DataDirLock(self.ctx.data_dir) if lock else None
        if held is not None:
            held.acquire()
        try:
            store = self.ctx.open_journal_store()
        except BaseException:
            if held is not None:
                held.release()
            raise
        self._lock = held
        return store

    async def open_journal(self, *, lock: bool = True) -> None:
        """Open the journal (holding the data-folder lock unless ``lock`` is False).

        Raises DataDirLocked when another ReelQueue holds the folder, JournalCorrupt when
        the file is not a journal."""
        if self._store is not None:
            return
        self._store = await asyncio.to_thread(self._open_store, lock)
        self._journal = AsyncStore(self._store)

    def adopt_store(self, store: Store) -> None:
        """Use a journal the caller opened (and closes; a test's memory store)."""
        self._store = store
        self._journal = AsyncStore(store)
        self._owns_store = False

    @property
    def trusted_keys(self) -> TrustedKeys:
        """The accounts' keys behind this machine's bindings (application.trust), named
        after the open journal's identity (the team database's, or the local one's)."""
        if self._store is None:
            raise SessionClosed("the session is not open")
        database_id = self.mode.database_identity(self._store)
        if self._trusted is None or self._trusted.database_id != database_id:
            self._trusted = TrustedKeys(self.keys, database_id)
        return self._trusted

    # -- the engine ----------------------------------------------------------------------
    async def start(self, config: EngineConfig | None = None, *,
                    paused: bool = False) -> RecoveryReport:
        """Open the journal if it is not, read the keys ahead, start the built-in mock if
        an account needs it, recover, then start the pump (``paused``: hand out nothing
        until :meth:`resume`)."""
        await self.open_journal()
        assert self._store is not None and self._journal is not None
        journal = self._journal
        accounts = await journal.list_accounts()
        if builtin_mock_accounts(accounts):
            await self.ensure_mock()
        trusted = self.trusted_keys
        refs = trusted.refs_to_read(a for a in accounts if a.key_ref)
        self.keyring_problems = await asyncio.to_thread(self.keys.load, refs) if refs else []
        # One thread per journal: the engine brings its own, ours goes.
        await asyncio.to_thread(journal.shutdown)
        self._journal = None
        config = config or EngineConfig()
        if config.videos_dir is None:  # this machine's folder: every path resolves in it
            config = replace(config, videos_dir=self.ctx.videos_dir.expanduser().absolute())
        engine = build_engine(self._store, config=config, clock=self.clock,
                              keys=trusted, bus=self.bus,
                              providers=self.mock.providers(self.providers),
                              lost_render_accounts=builtin_mock_accounts(accounts))
        self.engine = engine
        self.keys.on_loaded = engine.wake
        return await engine.start(paused=paused)

    async def ensure_mock(self) -> str:
        """Start the built-in mock if it is not running; return its address. A running
        engine renders with it from then on (its registry gets the mock's URL)."""
        url = await asyncio.to_thread(self.mock.ensure)
        if (engine := self.live_engine) is not None:
            engine.use_providers(self.mock.providers(self.providers))
        return url

    @property
    def running_engine(self) -> Engine:
        if self.engine is None or self.closed:
            raise SessionClosed("the session has no running engine")
        return self.engine

    @property
    def live_engine(self) -> Engine | None:
        """The engine while it runs, None on a journal opened alone or after a stop."""
        if self.engine is None or self.closed or self._engine_stopped:
            return None
        return self.engine

    async def changed(self, *, jobs: Iterable[int] = (), accounts: Iterable[str] = ()) -> None:
        """The one wake: every command writes the journal, then calls this once. A running
        engine looks at the ``jobs`` and ``accounts`` named (a cancelled job's render
        stops, their events are published) and looks for work now
        (:meth:`Engine.changed`). Nothing to do without an engine."""
        if (engine := self.live_engine) is not None:
            await engine.changed(jobs=jobs, accounts=accounts)

    def pause(self) -> None:
        """Hand out no new work (renders in flight go on)."""
        self.running_engine.pause()

    def resume(self) -> None:
        self.running_engine.resume()

    @property
    def paused(self) -> bool:
        return self.engine is not None and self.engine.paused

    # -- tasks ---------------------------------------------------------------------------
    def spawn(self, coro: Coroutine[Any, Any, Any], name: str = "command") -> asyncio.Task[Any]:
        """Run ``coro`` as a task the session owns (cancelled by :meth:`stop`); its failure
        goes to :attr:`on_error`."""
        task = asyncio.get_event_loop().create_task(coro, name=name)
        self._tasks.add(task)
        task.add_done_callback(self._task_done)
        return task

    def _task_done(self, task: asyncio.Task[Any]) -> None:
        self._tasks.discard(task)
        if task.cancelled():
            return
        exc = task.exception()
        if exc is not None:
            self.on_error(exc)

    # -- stop ----------------------------------------------------------------------------
    async def live_job_ids(self) -> list[int]:
        """The jobs in flight (claimed, submitting, rendering, downloading)."""
        journal = self.journal
        jobs = await journal.list_jobs(None, list(IN_FLIGHT))
        return [job.id for job in jobs]

    async def stop_engine(self) -> None:
        """Stop the engine (its renders stay in flight, reattached next time) and keep the
        journal open for a last look (``run``'s summary); :meth:`stop` does the rest."""
        engine = self.engine
        if engine is None or self._engine_stopped:
            return
        self._engine_stopped = True
        engine.stop_claiming()
        await engine.stop()

    async def stop(self, *, keep_renders: bool = True) -> int:
        """Shut down in order; return how many renders were left in flight for next time
        (``keep_renders=False`` cancels them first). Idempotent."""
        if self.closed:
            return 0
        self.closed = True
        engine = self.engine
        kept = 0
        if engine is not None and not self._engine_stopped:
            engine.stop_claiming()
            live = await self.live_job_ids()
            if live and not keep_renders:
                done = await engine.store.cancel_jobs(live, self.clock.now())
                await engine.changed(jobs=done)
            kept = len(live) if keep_renders else 0
        current = asyncio.current_task()
        tasks = [t for t in self._tasks if t is not current]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        await self.stop_engine()
        await asyncio.to_thread(self._close_store)
        await asyncio.to_thread(self.mock.stop)
        return kept

    def _close_store(self) -> None:
        if self.engine is not None:
            self.engine.close_store()
        if self._journal is not None:
            self._journal.shutdown()
            self._journal = None
        if self._store is not None:
            if self._owns_store:
                self._store.close()
            self._store = None
        if self._lock is not None:
            self._lock.release()
            self._lock = None
