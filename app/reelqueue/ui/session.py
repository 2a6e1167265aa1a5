"""The window's engine session: open, run the user's commands, close in order. No Qt here.

Everything slow runs off the event loop: the journal on the engine's journal thread
(``engine.store.call``), the keyring, sheet reading, the built-in mock server and file
checks on worker threads (``asyncio.to_thread``). The session owns every task it starts
(:meth:`EngineSession.spawn`), so closing can cancel them before the HTTP client and the
journal go away.

Shutdown order (PRODUCT.md, qasync): stop handing out work -> cancel our tasks -> stop the
engine (pump, workers, heartbeat, HTTP client) -> close the journal and release the
data-folder lock -> stop the built-in mock -> write the clean-exit marker.
"""

from __future__ import annotations

import asyncio
import logging
import sys
from collections.abc import Callable, Coroutine, Iterable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from reelqueue.application.builtin_mock import BuiltinMock, builtin_mock_accounts
from reelqueue.application.context import AppContext
from reelqueue.domain.clock import Clock
from reelqueue.domain.errors import InputError, KnownError
from reelqueue.domain.models import AccountSpec, RecoveryReport
from reelqueue.engine import queries
from reelqueue.engine.engine import Engine
from reelqueue.engine.events import EventBus, JobEvent
from reelqueue.engine.retry_plan import RetryPlan
from reelqueue.intake import ImportOptions, ImportPlan, ImportResult, plan_import
from reelqueue.intake.catalog import RegistryCatalog
from reelqueue.intake.estimate import estimate_cost
from reelqueue.providers.builtin import builtin_registry
from reelqueue.providers.registry import ProviderRegistry, check_base_url
from reelqueue.store.base import Store
from reelqueue.ui.settings import SessionMarker, Settings, read_marker, write_marker

log = logging.getLogger(__name__)

ErrorSink = Callable[[BaseException], None]


class KeyCache:
    """API keys read from the OS keyring on a worker thread, looked up without blocking.

    The engine asks for a key on the event loop; a keyring call may be a D-Bus round trip
    or an unlock prompt, so keys are read ahead (at start, and when an account is added).
    """

    def __init__(self, keystore: Any | None = None) -> None:
        self._keystore = keystore
        self._keys: dict[str, str] = {}

    @property
    def keystore(self) -> Any:
        if self._keystore is None:
            from reelqueue.credentials.keystore import KeyStore

            self._keystore = KeyStore()
        return self._keystore

    def lookup(self, ref: str) -> str | None:
        return self._keys.get(ref)

    def load(self, refs: Iterable[str]) -> list[str]:
        """Read keys (blocking: call on a worker thread); return the problems met."""
        problems: list[str] = []
        for ref in refs:
            try:
                key = self.keystore.get_key(ref)
            except KnownError as exc:
                problems.append(str(exc))
                continue
            if key:
                self._keys[ref] = key
        return problems

    def store(self, ref: str, key: str) -> None:
        """Blocking: call on a worker thread."""
        self.keystore.check_available()
        self.keystore.set_key(ref, key)
        self._keys[ref] = key.strip()


@dataclass(frozen=True)
class OpenReport:
    """How the session started.

    Attributes:
        unclean: the last run did not end cleanly (crash, kill, power cut).
        kept_renders: renders the user kept running at the last clean close.
        paused: the queue started paused (the user's choice, or after a crash).
        recovery: what start-up recovery did.
        keyring_problems: why some keys could not be read.
    """

    unclean: bool
    kept_renders: int
    paused: bool
    recovery: RecoveryReport
    keyring_problems: list[str] = field(default_factory=list)


PICKED_UP = "picked_up"
NEVER_ARRIVED = "never_arrived"
RENDER_AGAIN = "render_again"
FAILED = "failed"
CANCELLED = "cancelled"
# The words a resumed attempt says before the provider answered (engine/render.py).
NOT_YET_ANSWERED = frozenset({"reattached", "submitted"})


class RecoveryFollowUp:
    """What became of the renders recovery handed back (reattached, or submissions to
    reconcile), per job, from the first answer of the provider: the window words its
    recovery banner from this, after it happened, never ahead (issue 13).

    Attributes:
        jobs: the job ids followed. outcomes: job id -> PICKED_UP (the provider answered
            the poll: the render goes on), NEVER_ARRIVED (the submission never reached the
            provider: sent now, nothing charged), RENDER_AGAIN (the provider no longer has
            the render: it is created again), FAILED or CANCELLED.
        on_builtin: job id -> True when its account is on the built-in mock (which stops
            with ReelQueue, so its renders never survive).
    """

    def __init__(self, report: RecoveryReport, builtin_accounts: Iterable[str] = ()) -> None:
        self.report = report
        self.jobs = frozenset(report.reattached) | frozenset(report.reconcile)
        self.builtin_accounts = frozenset(builtin_accounts)
        self.outcomes: dict[int, str] = {}
        self.on_builtin: dict[int, bool] = {}

    @property
    def settled(self) -> bool:
        return len(self.outcomes) == len(self.jobs)

    def observe(self, event: JobEvent) -> bool:
        """Take one job event; True when it settled a followed job's outcome."""
        job = event.job_id
        if job not in self.jobs or job in self.outcomes:
            return False
        state = event.state
        answered = event.sub_status not in NOT_YET_ANSWERED or event.progress is not None
        if state in ("DOWNLOADING", "COMPLETED") or (state == "RENDERING" and answered):
            outcome = PICKED_UP
        elif state in ("QUEUED", "RETRY_WAIT"):
            outcome = (NEVER_ARRIVED if "never reached the provider"
                       in (event.error_message or "") else RENDER_AGAIN)
        elif state in ("FAILED", "PARKED"):
            outcome = FAILED
        elif state == "CANCELLED":
            outcome = CANCELLED
        else:
            return False
        self.outcomes[job] = outcome
        self.on_builtin[job] = event.account in self.builtin_accounts
        return True

    def count(self, outcome: str, builtin: bool | None = None) -> int:
        return sum(1 for job, o in self.outcomes.items()
                   if o == outcome and (builtin is None or self.on_builtin[job] == builtin))

    def text(self) -> str:
        """What happened so far, in the user's words (counts via ui/format)."""
        from reelqueue.ui import format as fmt

        if not self.jobs:
            return ""
        parts: list[str] = []
        picked = self.count(PICKED_UP)
        if picked:
            parts.append(f"{fmt.count(picked, 'render')} picked up again")
        gone_builtin = self.count(RENDER_AGAIN, builtin=True)
        gone_real = self.count(RENDER_AGAIN, builtin=False)
        if gone_real:
            parts.append(f"{fmt.number(gone_real)} could not be found at the provider and "
                         "will be rendered again")
        if gone_builtin:
            parts.append(f"{fmt.count(gone_builtin, 'render')} ran on the built-in mock, "
                         "which stops with ReelQueue: those renders are gone and will be "
                         "rendered again (the mock charges nothing)")
        never = self.count(NEVER_ARRIVED)
        if never:
            parts.append(f"{fmt.count(never, 'submission')} never reached the provider and "
                         f"{fmt.plural(never, 'is', 'are')} sent now (nothing was charged)")
        failed = self.count(FAILED)
        if failed:
            parts.append(f"{fmt.number(failed)} failed (see the job details)")
        cancelled = self.count(CANCELLED)
        if cancelled:
            parts.append(f"{fmt.number(cancelled)} cancelled")
        waiting = len(self.jobs) - len(self.outcomes)
        if waiting:
            parts.append(f"{fmt.count(waiting, 'render')} still being checked with the "
                         "provider…")
        return ", ".join(parts) + ("" if waiting else ".")

    def facts(self) -> str:
        """The rest of the recovery report (already done when it is read)."""
        rest = replace(self.report, reattached=[], reconcile=[])
        return rest.summary().removeprefix("Recovery: ") if rest.touched else ""


@dataclass(frozen=True)
class AccountDraft:
    """What the connect-account dialog collected. ``key`` is never logged or shown."""

    name: str
    provider: str
    capacity: int
    key: str | None = field(default=None, repr=False)
    base_url: str | None = None


class EngineSession:
    """Attributes:
    ctx: the folders and the clock.
    settings: the settings in force.
    bus: the engine's event bus (the bridge subscribes to it before the engine starts).
    engine: the engine, once :meth:`open` ran.
    keys: keys read ahead from the OS keyring.
    mock: the built-in mock provider.
    providers: the provider kinds offered and rendered with (default: the built-in ones).
    on_error: where failures of spawned tasks go (default: ``sys.excepthook``).
    """

    def __init__(self, ctx: AppContext, settings: Settings, *, keys: KeyCache | None = None,
                 mock: BuiltinMock | None = None, clock: Clock | None = None,
                 providers: ProviderRegistry | None = None) -> None:
        self.ctx = ctx
        self.providers = providers or builtin_registry()
        self.settings = settings
        self.bus = EventBus()
        self.keys = keys or KeyCache()
        self.mock = mock or BuiltinMock()
        self.clock = clock or ctx.clock
        self.engine: Engine | None = None
        self.on_error: ErrorSink = lambda exc: sys.excepthook(type(exc), exc, exc.__traceback__)
        self._store: Store | None = None
        self._lock: Any | None = None
        self._tasks: set[asyncio.Task[Any]] = set()
        self.closed = False

    # -- tasks ---------------------------------------------------------------------------
    def spawn(self, coro: Coroutine[Any, Any, Any], name: str = "ui-command") -> asyncio.Task[Any]:
        """Run ``coro`` as a task the session owns; its failure goes to :attr:`on_error`."""
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

    @property
    def running_engine(self) -> Engine:
        if self.engine is None:
            raise RuntimeError("the session is not open")
        return self.engine

    # -- open ----------------------------------------------------------------------------
    def _open_store(self) -> Store:
        from reelqueue.store.lockfile import DataDirLock, make_private_dir
        from reelqueue.store.sqlite import SqliteStore

        make_private_dir(self.ctx.data_dir)
        lock = DataDirLock(self.ctx.data_dir)
        lock.acquire()
        try:
            store = SqliteStore.open(self.ctx.journal_path, now=self.clock.now())
        except BaseException:
            lock.release()
            raise
        self._lock = lock
        return store

    async def open(self, *, start: bool) -> OpenReport:
        """Open the journal, read keys, recover, then start the pump (maybe paused)."""
        store = await asyncio.to_thread(self._open_store)
        self._store = store
        marker = await asyncio.to_thread(read_marker, self.ctx.data_dir)
        engine = Engine(store, config=self.settings.engine_config(), clock=self.clock,
                        key_lookup=self.keys.lookup, bus=self.bus,
                        providers=self.mock.providers(self.providers))
        self.engine = engine
        in_flight = await queries.in_flight_count(engine.store)
        summaries = await queries.accounts(engine.store)
        if builtin_mock_accounts(s.account for s in summaries):
            await self._ensure_mock()
        refs = [s.account.key_ref for s in summaries if s.account.key_ref]
        problems = await asyncio.to_thread(self.keys.load, refs) if refs else []
        kept = marker.kept_renders if not marker.running else 0
        unclean = marker.running or (in_flight > 0 and kept == 0)
        paused = not start or (unclean and self.settings.start_paused_after_crash)
        await asyncio.to_thread(write_marker, self.ctx.data_dir, SessionMarker(running=True))
        report = await engine.start(paused=paused)
        return OpenReport(unclean=unclean and report.touched > 0, kept_renders=kept,
                          paused=paused, recovery=report, keyring_problems=problems)

    async def _ensure_mock(self) -> str:
        """Start the built-in mock; the engine renders with its address from then on."""
        url = await asyncio.to_thread(self.mock.ensure)
        if self.engine is not None:
            self.engine.use_providers(self.mock.providers(self.providers))
        return url

    def builtin_mock_accounts(self, accounts: Iterable[Any]) -> list[str]:
        """Names of the accounts served by the built-in mock (it stops with ReelQueue:
        none of their renders survive a close or a crash)."""
        return builtin_mock_accounts(accounts)

    # -- close ---------------------------------------------------------------------------
    async def close(self, *, keep_renders: bool = True) -> int:
        """Shut down in order; return how many renders were kept for next time."""
        if self.closed:
            return 0
        self.closed = True
        engine = self.engine
        kept = 0
        if engine is not None:
            engine.stop_claiming()
            live = await self._live_job_ids()
            if live and not keep_renders:
                await engine.cancel(live)
            kept = len(live) if keep_renders else 0
        current = asyncio.current_task()
        tasks = [t for t in self._tasks if t is not current]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        if engine is not None:
            await engine.stop()
            await asyncio.to_thread(self._close_store, engine)
        await asyncio.to_thread(self.mock.stop)
        if self._store is not None or engine is not None:
            await asyncio.to_thread(write_marker, self.ctx.data_dir,
                                    SessionMarker(running=False, kept_renders=kept))
        return kept

    async def _live_job_ids(self) -> list[int]:
        from reelqueue.domain.states import IN_FLIGHT

        engine = self.running_engine
        jobs = await engine.store.list_jobs(None, list(IN_FLIGHT))
        return [job.id for job in jobs]

    def _close_store(self, engine: Engine) -> None:
        engine.close_store()
        if self._store is not None:
            self._store.close()
            self._store = None
        if self._lock is not None:
            self._lock.release()
            self._lock = None

    # -- the queue -----------------------------------------------------------------------
    def start_queue(self) -> None:
        self.running_engine.resume()

    def pause_queue(self) -> None:
        self.running_engine.pause()

    async def cancel(self, job_ids: list[int]) -> list[int]:
        return await self.running_engine.cancel(job_ids)

    async def retry(self, job_ids: list[int], new_seed: int | None = None) -> list[int]:
        return await self.running_engine.retry(job_ids, new_seed=new_seed)

    async def retry_plan(self, job_ids: list[int], new_seed: int | None = None) -> RetryPlan:
        return await self.running_engine.retry_plan(job_ids, new_seed=new_seed)

    async def set_capacity(self, account: str, capacity: int) -> None:
        await self.running_engine.set_capacity(account, capacity)

    async def set_enabled(self, account: str, enabled: bool) -> None:
        await self.running_engine.set_enabled(account, enabled)

    async def mark_ready(self, account: str) -> None:
        await self.running_engine.mark_account_ready(account)

    # -- import and export ---------------------------------------------------------------
    def import_options(self, **overrides: Any) -> ImportOptions:
        root = Path(self.settings.output_dir) if self.settings.output_dir else self.ctx.videos_dir
        values: dict[str, Any] = {"output_root": root,
                                  "filename_template": self.settings.filename_template,
                                  "max_attempts": self.settings.max_attempts}
        values.update(overrides)
        return ImportOptions(**values)

    async def plan_import(self, path: Path, options: ImportOptions) -> ImportPlan:
        """Read and validate the sheet on a worker thread, then ask the journal which of
        its jobs it already has (on the journal thread)."""
        plan = await asyncio.to_thread(plan_import, path, options,
                                       catalog=RegistryCatalog(self.providers),
                                       now=self.clock.now())
        engine = self.running_engine
        keys = [job.job_key for job in plan.jobs]
        present = await engine.store.existing_job_keys(keys)
        if not present:
            return plan
        new_jobs = [job for job in plan.jobs if job.job_key not in present]
        return replace(plan, already_present=len(present), present_keys=frozenset(present),
                       estimate=estimate_cost(new_jobs, RegistryCatalog(self.providers).params))

    async def apply_import(self, plan: ImportPlan, first_rows: int | None = None, *,
                           max_spend: float | None = None) -> ImportResult:
        """Write the plan (or only its first ``first_rows`` jobs: a test run), with the
        batch's spend cap when one is given."""
        if plan.refused:
            raise InputError("The sheet has row errors and nothing valid to import.")
        if first_rows is not None:
            plan = replace(plan, jobs=plan.jobs[:max(0, first_rows)])
        from reelqueue.engine.import_commands import import_plan

        return await import_plan(self.running_engine, plan, max_spend=max_spend)

    async def export(self, batch_id: int, path: Path, fmt: str) -> int:
        from reelqueue.intake import export_results

        engine = self.running_engine
        return await engine.store.call(export_results, engine.store.sync, batch_id, path, fmt)

    # -- accounts ------------------------------------------------------------------------
    async def test_key(self, draft: AccountDraft) -> None:
        """Ask the provider whether the key works (its cheapest read-only call)."""
        from reelqueue.application.keys import check_key

        base_url = draft.base_url
        if draft.provider == "mock" and not base_url:
            base_url = await self._ensure_mock()
        await check_key(draft.name, draft.provider, base_url, draft.key, {},
                        providers=self.providers)

    async def add_account(self, draft: AccountDraft, *, check: bool = True) -> None:
        """Test the key, put it in the OS keyring, then add the account to the journal."""
        from reelqueue.credentials.keystore import key_ref_for

        name = draft.name.strip()
        if not name:
            raise InputError("Give the account a name.")
        if draft.capacity < 1:
            raise InputError("The limit must be at least 1.")
        info = self.providers.get(draft.provider)
        base_url = check_base_url(draft.base_url) if draft.base_url else None
        if info.default_base_url is None and base_url is None and draft.provider != "mock":
            raise InputError(f"{info.title} needs the API's base URL.")
        if info.requires_key and not (draft.key or "").strip():
            raise InputError(f"{info.title} needs an API key.")
        engine = self.running_engine
        if await engine.store.get_account(name) is not None:
            raise InputError(f"An account named {name!r} already exists.")
        draft = replace(draft, name=name, base_url=base_url)
        if check:
            await self.test_key(draft)
        elif draft.provider == "mock" and not base_url:
            await self._ensure_mock()
        key_ref = None
        if draft.key and draft.key.strip():
            key_ref = key_ref_for(name)
            await asyncio.to_thread(self.keys.store, key_ref, draft.key)
        from reelqueue.engine.account_commands import add_account

        await add_account(engine, AccountSpec(
            name, draft.provider, draft.capacity, base_url, key_ref))
