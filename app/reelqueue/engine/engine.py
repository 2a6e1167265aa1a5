"""The engine: start-up recovery, the pump, the heartbeat; told of the user's changes by
:meth:`Engine.changed` (the commands themselves are journal writes, in application/).

One :class:`Engine` per process. ``start()`` runs recovery (before anything is claimed),
resumes reattached renders first, then starts the pump. The pump is one task, woken by
events (import, job finished, account changed) or by a timer set to the next due time
(retry wait, account cool-down); it never busy-polls.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import random
import time
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass

import httpx2

from reelqueue.domain.account_view import AccountView, Charging
from reelqueue.domain.clock import Clock, SystemClock
from reelqueue.domain.errors import ErrorClass, KnownError, ReelQueueError
from reelqueue.domain.models import Account, Claim, ClaimToken, Job, RecoveryReport
from reelqueue.domain.render_times import render_kind
from reelqueue.domain.states import IN_FLIGHT, SETTLED, WAITING, AccountStatus, JobState
from reelqueue.engine.account_keys import CONFIRM, NO_KEY, NO_KEYS, AccountKeys, KeyAnswer
from reelqueue.engine.account_views import ViewReader
from reelqueue.engine.async_store import AsyncStore
from reelqueue.engine.clock_offset import ClockWatch, measure_offset
from reelqueue.engine.config import EngineConfig
from reelqueue.engine.events import (
    EngineErrorEvent,
    EngineState,
    EngineStateEvent,
    EventBus,
    JobEvent,
    RecoveryEvent,
    StallReason,
    account_event,
    not_configured_reasons,
    spend_cap_reasons,
    stall_reasons,
)
from reelqueue.engine.figures import AccountFigures
from reelqueue.engine.load import LoopGauge
from reelqueue.engine.manifest import ManifestWriter, batch_folder
from reelqueue.engine.outputs import (
    OutputWriter,
    limits_from_config,
    missing_outputs,
    recorded_output,
    remove_partials,
)
from reelqueue.engine.polling import PollPlanner, poll_budget
from reelqueue.engine.reconcile import Reconciler
from reelqueue.engine.render import STOPPED_IN_FLIGHT, RenderAttempt, RenderContext
from reelqueue.engine.waits import wait_event
from reelqueue.intake.apply import remove_stale_manifest_temps
from reelqueue.providers.base import (
    Provider,
    ReconcileMethod,
    account_view_of,
    reconcile_method,
    sends_client_token,
)
from reelqueue.providers.builtin import builtin_registry
from reelqueue.providers.httpx_session import session_of
from reelqueue.providers.registry import ProviderRegistry, build_provider
from reelqueue.store.balance import UNIT_SLACK, in_units
from reelqueue.store.base import ClaimParams, JobError, RecoverParams, Store, this_host
from reelqueue.store.spend import local_day_start, price_of

log = logging.getLogger(__name__)

KeyLookup = Callable[[str], str | None]
CONFIRM_LOOK_SECONDS = 5.0
"""How often the pump looks again while an account waits for ``accounts confirm``."""


def _account_key(account: Account) -> tuple[object, ...]:
    """What an AccountEvent (events.account_event) says about an account, to publish it
    only when it changes."""
    return (account.status, account.enabled, account.capacity, account.cooldown_until,
            account.status_detail, account.settings.get("daily_cap"))


def _fitted(config: EngineConfig) -> EngineConfig:
    """On a shared store a create must be answered within the claim's lease (the intent
    checks it: ``EngineConfig.create_min_lease_seconds``): the provider timeouts are
    shortened to fit when the lease is short (``EngineConfig.fitted_to_lease``)."""
    if not config.shared_store:
        return config
    fitted = config.fitted_to_lease()
    if fitted.http_timeout_seconds < config.http_timeout_seconds:
        log.info("shared store: provider calls time out after %.1f s (not %.1f s) so that "
                 "a create is answered within the %.1f s lease", fitted.http_timeout_seconds,
                 config.http_timeout_seconds, config.lease_seconds)
    return fitted


def new_instance_id() -> str:
    """Boot-unique owner id (never a hostname: two boots of one machine differ)."""
    return uuid.uuid4().hex


@dataclass(frozen=True)
class DrainResult:
    """How a drain ended: ``drained`` (every job final), ``stalled`` (jobs wait but no
    account can take them), ``budget`` (stopped claiming on time) or ``stopped``."""

    outcome: str
    detail: str = ""


class Engine:
    """Attributes:
    store: the journal, called from one thread.
    bus: where events go.
    providers: the provider kinds this engine renders with (default: the built-in ones).
    instance_id: this process's owner id for claims and leases.
    recovery: the report of start-up recovery, once ``start()`` ran.
    clock_watch: this machine's clock against the store's (a shared store: the server's
        decides every compared time), measured at start and at every heartbeat.
    """

    def __init__(
        self,
        store: Store,
        *,
        config: EngineConfig | None = None,
        clock: Clock | None = None,
        keys: AccountKeys | None = None,
        http_client: httpx2.AsyncClient | None = None,
        instance_id: str | None = None,
        rng: random.Random | None = None,
        bus: EventBus | None = None,
        providers: ProviderRegistry | None = None,
        lost_render_accounts: Iterable[str] = (),
        gauge: LoopGauge | None = None,
    ) -> None:
        self.config = _fitted(config or EngineConfig())
        # Accounts whose renders end with the process (the built-in mock runs inside it):
        # after a crash their renders are gone, rendered again without spending an attempt.
        self.lost_render_accounts = frozenset(lost_render_accounts)
        self.providers = providers or builtin_registry()
        self.clock = clock or SystemClock()
        self.store = AsyncStore(store)
        self.bus = bus or EventBus()
        self.instance_id = instance_id or new_instance_id()
        # Keys come only through the trust boundary (application.trust), never by a
        # row's key_ref: a key goes only where this machine bound it (issue 21).
        self._keys = keys or NO_KEYS
        # One HTTP client per account, its pool sized to the account (issue 33): a shared
        # pool made every account's polls and downloads queue behind every other's, and
        # httpcore walks every connection for every queued request (encode/httpcore#1035).
        # A client given by the caller (tests' MockTransport) serves every account.
        self._given_http = http_client
        self._account_http: dict[tuple[str, int], httpx2.AsyncClient] = {}
        self.writer = OutputWriter(limits_from_config(self.config))
        # This machine's record of each batch it works on (engine/manifest.py).
        self.manifests = ManifestWriter(self.store, store.host or this_host(),
                                        self.config.videos_dir,
                                        interval=self.config.manifest_seconds)
        # When polls go out (issue 33 item 3): typical times, each account's budget.
        self.polling = PollPlanner()
        self._ctx = RenderContext(self.store, self.bus, self.clock, self.config, self.writer,
                                  rng or random.Random(), self.providers,
                                  Reconciler(self.store, self.clock, self.config),
                                  job_changed=self.manifests.job_changed,
                                  polling=self.polling)
        self._providers: dict[str, tuple[Account, Provider]] = {}
        self._workers: dict[int, asyncio.Task[None]] = {}
        # The claim token each worker runs under: the heartbeat renews only these leases.
        self._tokens: dict[int, str] = {}
        self._own_live: dict[str, int] = {}  # this engine's renders per account
        # What the cards show, read from the journal every few seconds, never per event.
        self.figures = AccountFigures(self.store, self.clock.now, self.config.figures_seconds)
        self._wake = asyncio.Event()
        self._pump_task: asyncio.Task[None] | None = None
        self._heartbeat_task: asyncio.Task[None] | None = None
        self._watch_task: asyncio.Task[None] | None = None
        self._paused = False
        self._claiming = True
        self._idle = asyncio.Event()
        self._pass_done = asyncio.Event()
        self._passes = 0
        self._passes_started = 0
        self._last_pass_claims = 0
        self._last_pass_started = 0.0
        # Overload slows starting, never finishing (invariant 16): the loop's own lag.
        self.gauge = gauge or LoopGauge()
        self._braked = False  # the last pass held claims back (loop lag, download backlog)
        self._brake_since: float | None = None  # since when it holds back (monotonic)
        self._state_key: tuple[object, ...] | None = None  # the last state the pump said
        self._published: dict[str, tuple[object, ...]] = {}
        self._published_rows: dict[str, tuple[object, ...]] = {}  # _account_key published
        self._waiting_confirm: set[str] = set()  # accounts whose address waits (issue 21)
        self._newest_batch: int | None = None  # the newest batch the pump has seen
        self._batches_seen = False
        self.recovery: RecoveryReport | None = None
        self.clock_watch = ClockWatch()
        # Each account's view (issue 32 item 2), read beside the pump where its key is.
        self.views = ViewReader(self._keep_view, self.clock.now,
                                self.instance_id, stored=self.store.account_views)

    async def _keep_view(self, view: AccountView) -> bool:
        """Keep a view just read, then look for work: the claim gates on the kept view
        (store/provider_limits.py), so a limit raised resumes the account at once."""
        kept = await self.store.put_account_view(view)
        self.wake()
        return kept

    def use_providers(self, providers: ProviderRegistry) -> None:
        """Render with ``providers`` from now on (the window starts the built-in mock after
        its engine: the mock's address comes in as a new registry). Adapters already built
        are rebuilt at their next claim; renders under way keep theirs."""
        if providers is not self.providers:
            self.providers = providers
            self._providers.clear()
            self.wake()

    # -- start and stop ----------------------------------------------------------------
    async def start(self, *, paused: bool = False) -> RecoveryReport:
        """Recover, resume reattached renders, then start the pump (unless paused)."""
        if self.config.shared_store and self.clock_watch.reading is None:
            await self.measure_clock()
        await self._read_render_times()
        report = await self._recover()
        self.recovery = report
        self.bus.publish(RecoveryEvent(report, self.clock.now()))
        self._paused = paused
        # The watch takes its bearings before the first pass, which reads everything
        # committed so far: a commit of another process after it is then always seen.
        await self.store.changed_elsewhere()
        self._heartbeat_task = asyncio.create_task(self._heartbeat(), name="heartbeat")
        self._watch_task = asyncio.create_task(self._watch_journal(), name="journal-watch")
        self.manifests.start()
        self.gauge.start()
        self._pump_task = asyncio.create_task(self._pump(), name="pump")
        self.bus.publish(EngineStateEvent("paused" if paused else "running", self.clock.now()))
        return report

    async def _read_render_times(self) -> None:
        """The typical render times, read once (bounded) before any render resumes; from
        here on the engine's own completions keep them (engine/polling.py). A journal that
        cannot be read leaves them empty: first polls are then at once, as before."""
        try:
            times = await self.store.recent_render_times(max(0, self.config.render_times_read))
        except ReelQueueError as exc:
            log.warning("typical render times not read (first polls at once): %s", exc)
            return
        self.polling.load(times)

    async def stop(self, *, orderly: bool = True) -> None:
        """Stop in order: the pump, the workers (their jobs stay in flight and are
        reattached next time), the heartbeat, then the HTTP client and threads.

        Each job left in flight gets a ``stopped_in_flight`` ledger entry: an orderly stop
        (Ctrl+C, SIGTERM, the window closed keeping renders) is no crash, so its resume is
        not counted against ``max_resumes``. ``orderly=False`` leaves the journal as a
        killed process would (for tests of crash recovery)."""
        self._claiming = False
        loops = [t for t in (self._pump_task, self._heartbeat_task, self._watch_task) if t]
        for task in loops:
            task.cancel()
        workers = list(self._workers.values())
        for task in workers:
            task.cancel()
        await asyncio.gather(*loops, *workers, return_exceptions=True)
        await self.polling.stop()  # the accounts' list reads (engine/polling.py)
        await self.views.stop()
        await self.gauge.stop()
        if orderly:
            await self._record_stopped_in_flight()
        await self.manifests.stop()  # the last word of this run on each batch it touched
        clients, self._account_http = list(self._account_http.values()), {}
        await asyncio.gather(*(client.aclose() for client in clients),
                             return_exceptions=True)
        self.writer.shutdown()
        self.bus.publish(EngineStateEvent("stopped", self.clock.now()))

    def close_store(self) -> None:
        self.store.shutdown()

    async def _record_stopped_in_flight(self) -> None:
        try:
            owned = await self.store.list_jobs(None, list(IN_FLIGHT))
            for job in owned:
                if job.lease_owner == self.instance_id:
                    await self.store.note(
                        STOPPED_IN_FLIGHT, self.clock.now(),
                        job_id=job.id, account=job.account, claim_token=job.claim_token,
                        detail={"state": str(job.state),
                                "provider_job_id": job.provider_job_id})
        except ReelQueueError as exc:  # the stop goes on; the resume may count as a crash
            log.warning("could not record the orderly stop: %s", exc)

    async def _recover_params(self, *, only_expired: bool,
                              prune: bool) -> RecoverParams:
        """Recovery's parameters, the same at start-up and on a takeover by the heartbeat
        (issue 19: a takeover reconciles exactly like start-up)."""
        accounts = await self.store.list_accounts()
        adapters = {a.name: self._providers[a.name][1] for a in accounts
                    if self._provider_for(a) is not None}
        now = self.clock.now()
        return RecoverParams(
            instance_id=self.instance_id, now=now, lease_seconds=self.config.lease_seconds,
            only_expired=only_expired,
            check_output=functools.partial(recorded_output, videos_dir=self.config.videos_dir),
            lookup_accounts=frozenset(name for name, adapter in adapters.items()
                                      if reconcile_method(adapter) != ReconcileMethod.NONE),
            token_accounts=frozenset(name for name, adapter in adapters.items()
                                     if sends_client_token(adapter)),
            lost_render_accounts=self.lost_render_accounts,
            max_crashes=self.config.max_resumes,
            prune_before=(now - self.config.ledger_retention_days * 86400) if prune
            else None,
        )

    async def _recover(self) -> RecoveryReport:
        params = await self._recover_params(only_expired=self.config.shared_store,
                                            prune=True)
        report = await self.store.recover(params)
        # Verify finished work is still on disk (cheap: size only) and report what is not.
        # Only (id, path, size) rows, and the stat calls off the loop: a journal keeps every
        # completed job (40k of them took 2 s as Job objects; benchmarks/bench_recovery.py).
        outputs = await self.store.completed_outputs()
        missing = await asyncio.to_thread(missing_outputs, outputs, self.config.videos_dir)
        if missing and self.config.shared_store:
            # Each machine writes under its own videos folder (issue 23): a file another
            # machine wrote is not missing here. Read only when something is not here.
            here = self.manifests.host
            elsewhere = {j.id for j in await self.store.list_jobs(None, [JobState.COMPLETED])
                         if j.output_host not in (None, here)}
            missing = [job_id for job_id in missing if job_id not in elsewhere]
        report.missing_outputs.extend(missing)
        batches = await self.store.list_batches()
        if not self.config.shared_store:
            # Behind the data-folder lock no other writer is alive: every .part is dead.
            # On a shared store another instance may be downloading into these folders.
            folders = {folder for b in batches
                       if (folder := batch_folder(b, self.config.videos_dir)) is not None}
            await asyncio.to_thread(remove_partials, folders)
            await asyncio.to_thread(remove_stale_manifest_temps, folders)
        # Reattached and reconciling renders resume first; they already own their slots.
        await self._resume_owned()
        return report

    async def _resume_owned(self) -> None:
        """Start workers for in-flight jobs this instance owns but does not run yet."""
        owned = await self.store.list_jobs(None, list(IN_FLIGHT))
        for job in owned:
            if (job.lease_owner != self.instance_id or job.account is None
                    or job.claim_token is None or job.id in self._workers):
                continue
            account = await self.store.get_account(job.account)
            provider = self._provider_for(account) if account else None
            if provider is None:
                if self.config.shared_store:
                    await self._hand_back(job)
                continue
            # A listing cuts long values (store/listing.py): the render acts on the whole row.
            whole = await self.store.get_job(job.id)
            if whole is None:
                continue
            claim = Claim(whole, job.account, ClaimToken(job.id, job.claim_token),
                          resumed=True)
            self._start_worker(claim, provider)

    async def _hand_back(self, job: Job) -> None:
        """A takeover gave this instance a job of an account whose key is not on this
        machine: back to the queue, bound to its account with its submission (provider
        job id, client token), so an instance holding the key reattaches or reconciles it.
        The attempt is not spent."""
        assert job.claim_token is not None
        await self.store.release_to_queue(
            ClaimToken(job.id, job.claim_token),
            JobError(ErrorClass.ACCOUNT.value, "key not on this machine",
                     "Taken over by an instance without this account's key; handed back."),
            self.clock.now(), keep_submission=True)

    # -- the clock -----------------------------------------------------------------------
    async def measure_clock(self) -> float | None:
        """Measure this machine's clock against the store's (on the journal's thread) and
        say so in the log (a warning past ``clock_offset.OFFSET_WARN_SECONDS``); the
        offset in seconds, None where the store has no clock of its own."""
        reading = await self.store.call(measure_offset, self.store.sync, self.clock)
        self.clock_watch.update(reading)
        return None if reading is None else reading.offset

    @property
    def clock_offset(self) -> float | None:
        """This machine's clock minus the store's, as last measured (None: not measured,
        or a store whose caller's clock decides)."""
        reading = self.clock_watch.reading
        return None if reading is None else reading.offset

    def _server_now(self) -> float:
        """Now on the clock the store compares with: the server's on a shared store
        (this machine's clock less its measured offset), else this machine's."""
        return self.clock_watch.to_server(self.clock.now())

    # -- commands ----------------------------------------------------------------------
    def wake(self) -> None:
        """Something changed (jobs imported, an account edited): look for work now."""
        self._wake.set()

    def pause(self) -> None:
        """Stop handing out new work; running renders go on."""
        self._paused = True
        self._state_key = None
        self.bus.publish(EngineStateEvent("paused", self.clock.now()))

    def resume(self) -> None:
        self._paused = False
        self._state_key = None  # the next pass says what is true (stalled, done...)
        self.bus.publish(EngineStateEvent("running", self.clock.now()))
        self.wake()

    @property
    def paused(self) -> bool:
        return self._paused

    def stop_claiming(self) -> None:
        self._claiming = False
        self.wake()

    async def changed(self, *, jobs: Iterable[int] = (),
                      accounts: Iterable[str] = ()) -> None:
        """The journal changed under these jobs and accounts (a user's command wrote it,
        on this engine's journal thread): look at them now, then wake the pump. The one
        way a command tells the engine; the engine has no command of its own.

        A job the journal now says is cancelled stops its render here (its fenced writes
        would be refused anyway); each job's new state is published. Each account's
        adapter is built again at its next claim (a new key, limit or status) and its card
        told (also while the queue is paused)."""
        ids = list(dict.fromkeys(jobs))
        if ids:
            rows = await self.store.call(_read_jobs, self.store.sync, ids)
            for job in rows:
                task = self._workers.get(job.id)
                if task is not None and job.state == JobState.CANCELLED:
                    task.cancel()
                self.manifests.job_changed(job.id)
                self.bus.publish(JobEvent(job.id, job.state, self.clock.now(),
                                          account=job.account, unbound=job.account is None,
                                          attempts=job.attempts))
        names = list(dict.fromkeys(accounts))
        if names:  # a user's command (a new cap, a new capacity): shown as written
            await self.figures.refresh(force=True)
        for name in names:
            self._providers.pop(name, None)
            await self._publish_account(name)
        self.wake()

    async def _mark_account_ready(self, account: str) -> None:
        """A rate-limited account's cool-down is over."""
        await self.store.set_account_status(account, AccountStatus.READY, self.clock.now())
        await self.changed(accounts=[account])

    # -- draining ----------------------------------------------------------------------
    async def run_until_drained(self, *, budget_seconds: float | None = None,
                                batch_id: int | None = None) -> DrainResult:
        """Wait until every job is final (or stalled, or the budget ran out)."""
        deadline = None if budget_seconds is None else self.clock.now() + budget_seconds
        while True:
            if self._workers:
                # Renders run: nothing to read until they end or the budget runs out (a
                # journal read per finished render cost the journal thread at 1,000 in
                # flight: issue 33 item 4).
                if deadline is not None and self.clock.now() >= deadline and self._claiming:
                    self.stop_claiming()
                self._idle.clear()
                await wait_event(self._idle, 0.5)
                continue
            counts = await self.store.counts()
            # Parked jobs wait for the user: settled, not open (and shown as needing
            # attention by the front ends).
            open_jobs = sum(n for s, n in counts.by_state.items()
                            if JobState(s) not in SETTLED)
            if open_jobs == 0 and not self._workers:
                self.bus.publish(EngineStateEvent("drained", self.clock.now()))
                return DrainResult("drained")
            if deadline is not None and self.clock.now() >= deadline and self._claiming:
                self.stop_claiming()
            if not self._claiming and not self._workers:
                return DrainResult("budget", f"{open_jobs} jobs not finished")
            if not self._workers and not self._paused and self._claiming:
                stall = await self._stall_reason(counts.by_state)
                if stall:
                    self.bus.publish(EngineStateEvent("stalled", self.clock.now(), stall))
                    return DrainResult("stalled", stall)
            self._idle.clear()
            await wait_event(self._idle, 0.5)

    async def _stall_reason(self, by_state: dict[str, int]) -> str | None:
        """Jobs wait, nothing runs, no timer is due, and a fresh pump pass claimed nothing:
        nothing will change without the user (a rejected key, a missing account...)."""
        waiting = sum(by_state.get(s.value, 0) for s in WAITING)
        if not waiting:
            return None
        # A pass that starts from now on: one already under way may have looked at the
        # journal before the change that woke us (a user's retry) and claimed nothing.
        fresh = self._passes_started + 1
        self.wake()
        while self._passes < fresh:
            await self._pass_done.wait()
        if self._workers or self._last_pass_claims:
            return None
        if self.views.reading:
            # A view read under way may show a raised limit or a top-up (issue 32 items 3
            # and 4): not a stall before it has landed (kept, it wakes the pump).
            await self.views.wait()
            return None
        if self._wake.is_set():
            # Woken since that pass began (a view read at connect kept just after the
            # pass found its account still reading, a user's command): the next pass may
            # claim. Concluding "stalled" here stopped a fresh run with one job waiting.
            return None
        # Read again: a job counted as waiting may have settled meanwhile (a worker that
        # just failed it, a user's cancel).
        by_state = (await self.store.counts()).by_state
        waiting = sum(by_state.get(s.value, 0) for s in WAITING)
        if not waiting:
            return None
        # Due times are compared with the start of that pass, not with now: a retry that
        # fell due after the pass looked (the next pass claims it) is no stall. The
        # store's due times are on its clock (the server's on a shared store).
        if await self.store.next_wakeup(
                self.clock_watch.to_server(self._last_pass_started)) is not None:
            return None
        accounts = await self.store.list_accounts()
        blocked = [f"{a.name}: " + (self._machine_words(a)
                                     or (a.status.value if a.enabled else "disabled"))
                   for a in accounts
                   if not a.enabled or a.status not in (AccountStatus.READY,
                                                        AccountStatus.RATE_LIMITED)
                   or self._provider_for(a) is None]
        waiting_jobs = await self.store.list_jobs(None, list(WAITING), 50)
        providers = sorted({j.provider for j in waiting_jobs})
        now = self.clock.now()
        capped = spend_cap_reasons(await self.store.spend_summary(
            now, local_day_start(now)))
        low = await self._credits_low(accounts, waiting_jobs)
        jobs_wait = f"{waiting:,} job waits" if waiting == 1 else f"{waiting:,} jobs wait"
        if capped and not blocked:
            return f"{jobs_wait} because of a spend cap: " + "; ".join(
                f"{r.subject}: {r.detail}" for r in capped)
        elsewhere = not_configured_reasons(accounts, await self.store.to_go())
        if elsewhere and not blocked:
            return f"{jobs_wait}: " + "; ".join(str(r.detail) for r in elsewhere)
        if low and not blocked:
            return (f"{jobs_wait}: credits low on " + ", ".join(r.subject for r in low)
                    + " (the balance less the renders it does not include yet cannot pay "
                      "for the next render; they start again when a read shows more)")
        detail = "; ".join(blocked) if blocked else "no account for provider " + ", ".join(
            providers)
        return f"{jobs_wait} but no usable account can take them ({detail})"

    async def _publish_state(self, pass_started: float) -> None:
        """After a pass, say what is true (EngineStateEvent), only when it changed: no
        journal read while renders run; when nothing runs, why the waiting jobs wait."""
        now, running = self.clock.now(), len(self._workers)
        if self._paused or not self._claiming:
            event = EngineStateEvent("paused", now, running=running)
            key: tuple[object, ...] = ("paused",)
        elif running:
            event, key = EngineStateEvent("running", now, running=running), ("running",)
        else:
            counts = await self.store.counts()
            waiting = sum(counts.by_state.get(s.value, 0) for s in WAITING)
            if not waiting:
                event, key = EngineStateEvent("done", now), ("done",)
            else:
                accounts = await self.store.list_accounts()
                waiting_jobs = await self.store.list_jobs(None, list(WAITING), 200)
                providers = {j.provider for j in waiting_jobs}
                paused = [b.name for b in await self.store.list_batches()
                          if b.settings.get("paused")]
                reasons, takes_work = stall_reasons(
                    accounts, providers, lambda a: self._provider_for(a) is not None,
                    self._has_key, paused, needs_confirm=self._needs_confirm)
                reasons += spend_cap_reasons(await self.store.spend_summary(
                    now, local_day_start(now)))
                reasons += not_configured_reasons(accounts, await self.store.to_go())
                reasons += tuple(await self._credits_low(accounts, waiting_jobs))
                due = await self.store.next_wakeup(self.clock_watch.to_server(pass_started))
                if due is not None:  # shown: on this machine's clock
                    due = self.clock_watch.to_local(due)
                state: EngineState = "waiting" if due is not None and takes_work else "stalled"
                event = EngineStateEvent(state, now, waiting=waiting,
                                         next_due=due if state == "waiting" else None,
                                         reasons=reasons)
                key = (state, waiting, event.next_due, reasons)
        if key != self._state_key:
            self._state_key = key
            self.bus.publish(event)

    def _key_answer(self, account: Account) -> KeyAnswer:
        """The key this account's requests may carry here, or why there is none."""
        info = self.providers.get(account.provider)
        # On a shared store an account naming a key is only used where that key is
        # (issue 15: "key not on this machine"), also for a provider that needs none.
        needs = info.requires_key or bool(self.config.shared_store and account.key_ref)
        if not (needs or account.key_ref):
            return KeyAnswer()  # no key involved
        answer = self._keys.key_for(account, info.default_base_url)
        if answer.problem == NO_KEY and not needs:
            return KeyAnswer()  # an optional key that is not here: render without one
        return answer

    def _has_key(self, account: Account) -> bool:
        try:
            return self._key_answer(account).problem != NO_KEY
        except KnownError:
            return True  # not a key problem: the account is unusable (unknown provider)

    def _needs_confirm(self, account: Account) -> bool:
        return self._machine_words(account) is not None

    def _machine_words(self, account: Account) -> str | None:
        """This machine's own word on the account: it waits for ``accounts confirm``."""
        try:
            answer = self._key_answer(account)
        except KnownError:
            return None
        return answer.detail if answer.problem == CONFIRM else None

    # -- the pump ----------------------------------------------------------------------
    async def _pump(self) -> None:
        while True:
            self._wake.clear()
            started = self.clock.now()
            self._passes_started += 1
            number = self._passes_started
            try:
                self._last_pass_claims = 0
                if not self._paused and self._claiming:
                    self._last_pass_claims = await self._fill_slots()
                self._last_pass_started = started
                self._passes = number  # passes done: this one and all before it
                self._pass_done.set()
                self._pass_done.clear()
                await self._publish_state(started)
                timeout = await self._until_next_due()
            except asyncio.CancelledError:
                raise
            except ReelQueueError as exc:
                self._report_error(exc)
                timeout = 5.0
            except Exception as exc:  # keep the pump alive; the error is shown
                log.exception("pump pass failed")
                self._report_error(exc)
                timeout = 5.0
            await wait_event(self._wake, timeout)

    async def _until_next_due(self) -> float:
        now = self._server_now()  # the store's due times are on its clock
        due = await self.store.next_wakeup(now)
        # A safety net only; every real change wakes the pump directly. A confirm made on
        # this machine by another process (`accounts confirm`) writes only its keyring,
        # which wakes nobody: look again sooner while an account waits for one.
        cap = self.config.safety_net_seconds
        if self._waiting_confirm:
            cap = min(cap, CONFIRM_LOOK_SECONDS)
        if self._braked:  # claims held back (overload): look again soon
            cap = min(cap, self.config.overload_retry_seconds)
        return cap if due is None else min(cap, max(0.01, due - now))

    async def _fill_slots(self) -> int:
        """One pass over the accounts in their fixed order; returns the claims made. While
        the event loop lags or the downloads fall behind (:mod:`engine.load`), at most
        ``config.overload_claims_per_pass`` claims are made, and the pump looks again
        after ``config.overload_retry_seconds``: overload slows starting, never the
        renders already running."""
        claims = 0
        budget: int | None = None
        lagging = self.gauge.overloaded(self.config.overload_lag_seconds)
        backlog = self._ctx.downloads
        if lagging or backlog.overloaded(self.config.overload_downloads):
            budget = self.config.overload_claims_per_pass
            if self._brake_since is None:
                self._brake_since = time.monotonic()
                if lagging:
                    log.info("the engine is busy (its loop lags %.2f s): new renders start "
                             "slower until it catches up", self.gauge.lag)
                else:
                    log.info("the engine is busy (%d finished renders wait for their "
                             "download): new renders start slower until it catches up",
                             backlog.count)
        elif self._brake_since is not None:
            # Both lines, with the log's own times, say how long starts were held back
            # (benchmarks/bench_inflight.py reads them: what bounds the fill).
            log.info("the engine caught up after %.1f s: new renders start at full pace",
                     time.monotonic() - self._brake_since)
            self._brake_since = None
        self._braked = False
        accounts, newest_batch = await self.store.call(_pass_reading, self.store.sync)
        # A batch the pump has not seen: each account's view is read again before its
        # first claim, unless a minute-old one is kept (issue 32 item 2).
        new_batch = self._batches_seen and newest_batch != self._newest_batch
        self._newest_batch, self._batches_seen = newest_batch, True
        # Read when older than config.figures_seconds; and at once when nothing runs
        # here (no hot path then: the cards of a stalled or finished run show the last
        # spend, not the one of a few seconds before).
        await self.figures.refresh(force=not self._workers)
        waiting_confirm: set[str] = set()
        charging = self._charging()
        for account in accounts:  # the fixed order of the accounts table
            if not account.enabled:
                continue
            provider = self._provider_for(account)
            if provider is None:
                if self._needs_confirm(account):
                    waiting_confirm.add(account.name)
                if self._published.get(account.name) != self._event_key(account):
                    await self._publish_account(account.name, account)
                continue
            # The cool-down's end is on the store's clock (the server's on a shared
            # store); the claim checks it there itself, this only sets the status back.
            if (account.status == AccountStatus.RATE_LIMITED and account.cooldown_until
                    and account.cooldown_until <= self._server_now()):
                await self._mark_account_ready(account.name)
            # At connect, every 5 min, before a new batch and after an out-of-credits
            # refusal; never waited for here (a slow provider holds up no claim elsewhere).
            if new_batch:
                self.views.batch_arrived(account.name)
            self.views.visit(account.name, account.status, account_view_of(provider))
            claimed_here = 0
            default_model = self._default_model(account)
            # While its first read (or the one before a new batch) is under way the
            # provider's limits and balance are not known: a claim now could start more
            # than the provider allows or the balance pays. Its end wakes the pump.
            connecting = self.views.connecting(account.name)
            while self._claiming and not self._paused and not connecting:
                if self._own_live.get(account.name, 0) >= account.capacity:
                    # Full with this engine's own renders alone: the claim would refuse
                    # (it counts every machine's), so it is not asked. A pass per
                    # finished render asked every account's claim, a journal call each,
                    # in the queue of the render transitions (issue 33).
                    break
                if budget is not None and claims + claimed_here >= budget:
                    self._braked = True
                    break
                now = self.clock.now()
                claim = await self.store.claim_next_job(ClaimParams(
                    account.name, self.instance_id, now,
                    self.config.lease_seconds, local_day_start(now), default_model,
                    charging))
                if claim is None:
                    break
                self.bus.publish(JobEvent(claim.job.id, JobState.CLAIMED,
                                          self.clock.now(), account=account.name,
                                          attempts=claim.job.attempts,
                                          provider=_routed_provider(claim),
                                          kind=_routed_kind(claim)))
                self._start_worker(claim, provider)
                self.figures.claimed(account.name)
                claimed_here += 1
                if self._unseen_batch(claim.job.batch_id):
                    # Added during this pass (after its read): this one job went on the
                    # view the account had; the rest of the batch waits for a new read.
                    new_batch = True
                    self.views.batch_arrived(account.name)
                    self.views.visit(account.name, account.status,
                                     account_view_of(provider))
                    break
            claims += claimed_here
            # Every finished job wakes a pass: publish only what changed (the figures are
            # in memory: no journal read for an event).
            if self._published.get(account.name) != self._event_key(account):
                await self._publish_account(account.name, account)
        self._waiting_confirm = waiting_confirm
        return claims

    def _unseen_batch(self, batch_id: int) -> bool:
        """Whether a claimed job's batch is newer than the newest the pass read (added
        while the pass ran): then it counts as seen from now on."""
        if self._newest_batch is not None and batch_id <= self._newest_batch:
            return False
        self._newest_batch = batch_id
        return True

    async def _credits_low(self, accounts: list[Account],
                           waiting: Iterable[Job]) -> list[StallReason]:
        """Code ``credits_low`` for each enabled account whose published balance gates
        (store/balance.py) and, less what it cannot include yet, cannot pay for the
        cheapest of the waiting jobs (a sample) that would create there, or any when a
        price is unknown. The words with the figures are the application's
        (application/balance_words.py)."""
        creates: dict[str, list[float | None]] = {}
        for job in waiting:
            if job.provider_job_id is None and job.client_token is None:
                creates.setdefault(job.provider, []).append(price_of(job.metadata))
        charging = self._charging()
        low: list[StallReason] = []
        for account in accounts:
            prices = creates.get(account.provider)
            if not account.enabled or not prices:
                continue
            left = await self.store.balance_left(account.name, self._server_now(),
                                                 charging.get(account.provider))
            if left is None:
                continue
            known = [p for p in prices if p is not None]
            rest = left.left
            if (rest is None or not known
                    or min(in_units(p, left) for p in known) > rest + UNIT_SLACK):
                low.append(StallReason(account.name, "credits_low"))
        return low

    def _charging(self) -> dict[str, Charging]:
        """How each provider charges its accounts' balance, as its adapter declares it:
        the claim subtracts from a published balance what it cannot include yet
        (store/balance.py)."""
        out: dict[str, Charging] = {}
        for kind in self.providers.kinds():
            try:
                out[kind] = self.providers.get(kind).params.charging
            except KnownError:
                continue
        return out

    def _default_model(self, account: Account) -> str | None:
        """The model a job that names none renders with on ``account`` (its own default
        model setting, else the provider's first): the claim counts it against that
        model's limit from the provider (store/provider_limits.py)."""
        return self.providers.default_model(account.provider, account.settings)

    def _provider_for(self, account: Account) -> Provider | None:
        cached = self._providers.get(account.name)
        if cached and cached[0] == account:
            return cached[1]
        try:
            info = self.providers.get(account.provider)
        except KnownError:
            return None
        answer = self._key_answer(account)
        if answer.problem is not None:
            # "key not on this machine", or its address changed on the team database:
            # never claimed here (and the key is not sent) until confirmed.
            return None
        key = answer.key
        try:
            provider = build_provider(info, session_of(self._http_for(account)),
                                      account=account.name,
                                      base_url=account.base_url, api_key=key,
                                      settings=account.settings)
        except (ReelQueueError, ValueError) as exc:  # ValueError: an unparsable address
            log.warning("account %s cannot be used: %s", account.name, exc)
            return None
        self._providers[account.name] = (account, provider)
        # Its polls spread within the provider's published budget, else one from capacity.
        self.polling.set_budget(account.name, poll_budget(provider, account.capacity))
        return provider

    def _http_for(self, account: Account) -> httpx2.AsyncClient:
        """The account's own HTTP client, its pool sized to its capacity
        (:func:`account_pool_size`). A new capacity gets a new client (renders in flight
        keep the adapter and client they started with); all are closed at stop."""
        if self._given_http is not None:
            return self._given_http
        size = account_pool_size(account.capacity)
        client = self._account_http.get((account.name, size))
        if client is None:
            client = httpx2.AsyncClient(
                timeout=httpx2.Timeout(self.config.http_timeout_seconds,
                                      connect=self.config.http_connect_timeout_seconds),
                limits=httpx2.Limits(max_connections=size, max_keepalive_connections=size),
                # Redirects are followed by ApiClient itself, each hop checked (issue 11).
                follow_redirects=False)
            self._account_http[(account.name, size)] = client
        return client

    def _start_worker(self, claim: Claim, provider: Provider) -> None:
        attempt = RenderAttempt(self._ctx, claim, provider)
        task = asyncio.create_task(attempt.run(), name=f"render-{claim.job.id}")
        self._workers[claim.job.id] = task
        self._tokens[claim.job.id] = claim.token.token
        self._own_live[claim.account] = self._own_live.get(claim.account, 0) + 1
        task.add_done_callback(functools.partial(self._worker_done, claim.job.id,
                                                 claim.account))

    def _worker_done(self, job_id: int, claimed_on: str, task: asyncio.Task[None]) -> None:
        # A job handed over to another account may have its new worker started before
        # this one's end is seen: the job's own entries may be the new worker's already.
        if self._workers.get(job_id) is task:
            self._workers.pop(job_id, None)
            self._tokens.pop(job_id, None)
        self.figures.ended(claimed_on)
        self._own_live[claimed_on] -= 1
        if not task.cancelled() and task.exception() is not None:
            self._report_error(task.exception())  # type: ignore[arg-type]
        self._idle.set()
        self.wake()

    async def _publish_account(self, name: str, account: Account | None = None) -> None:
        if account is None:
            account = await self.store.get_account(name)
        if account is None:
            return
        # Read when older than config.figures_seconds, or at once when the account's
        # row changed (a new daily cap: the spend summary carries it; rare, no event's).
        row, before = _account_key(account), self._published_rows.get(name)
        await self.figures.refresh(force=before is not None and before != row)
        self._published_rows[name] = row
        self._published[name] = self._event_key(account)
        self.bus.publish(account_event(account, self.figures.live(name), self.clock.now(),
                                       self.figures.spend(name),
                                       machine=self._machine_words(account)))

    def _event_key(self, account: Account) -> tuple[object, ...]:
        spend = self.figures.spend(account.name)
        return (*_account_key(account), self._machine_words(account),
                self.figures.live(account.name),
                None if spend is None else (spend.committed, spend.cap, spend.waiting))

    def _report_error(self, exc: BaseException) -> None:
        self.bus.publish(EngineErrorEvent(str(exc), self.clock.now()))

    @property
    def active_workers(self) -> int:
        return len(self._workers)

    # -- heartbeat ---------------------------------------------------------------------
    async def _heartbeat(self) -> None:
        while True:
            await asyncio.sleep(self.config.heartbeat_seconds)
            try:
                # Only the claims a worker runs: a claim this engine never learned of
                # (its COMMIT's answer lost, the read-back failed) runs out and is taken
                # over, instead of being renewed by this live instance forever. The
                # registry gets the clock offset last measured.
                await self.store.renew_leases(self.instance_id, self.clock.now(),
                                              self.config.lease_seconds,
                                              tokens=list(self._tokens.values()),
                                              clock_offset=self.clock_offset)
                if self.config.shared_store:
                    await self.measure_clock()
                    await self._take_over_expired()
            except ReelQueueError as exc:
                self._report_error(exc)

    async def _watch_journal(self) -> None:
        """Wake the pump when another connection committed to the journal (a command of
        another process: ``accounts refresh``, ``batch cap``, ``submit``...), asking the
        store about once every ``config.journal_watch_seconds`` (one cheap read; nothing
        when unchanged). A write of another connection of this process wakes one pass
        more: at most one a period, never a busy loop."""
        while True:
            await asyncio.sleep(self.config.journal_watch_seconds)
            try:
                if await self.store.changed_elsewhere():
                    self.wake()
            except ReelQueueError as exc:  # the journal's trouble shows at the next pass
                log.debug("journal watch: %s", exc)

    async def _take_over_expired(self) -> None:
        report = await self.store.recover(
            await self._recover_params(only_expired=True, prune=False))
        if report.touched:
            self.bus.publish(RecoveryEvent(report, self.clock.now()))
            await self._resume_owned()
            self.wake()


def _pass_reading(store: Store) -> tuple[list[Account], int | None]:
    """On the journal thread, in one hop: the accounts and the newest batch's id."""
    return store.list_accounts(), store.newest_batch_id()


def _read_jobs(store: Store, job_ids: list[int]) -> list[Job]:
    """On the journal thread: the jobs that exist, in one hop."""
    return [job for job_id in job_ids if (job := store.get_job(job_id)) is not None]


def account_pool_size(capacity: int) -> int:
    """Connections an account's client keeps: one per render in flight (each render has
    one request open at a time: a create, a poll or its download), plus room for the key
    check, the account's one reconciliation search and a cancel, so a render never waits
    for a connection of its own account and no pool is larger than its account needs."""
    return max(capacity, 1) + 4


def _routed_provider(claim: Claim) -> str | None:
    """A routed job's provider for its claim's event (this claim may have taken it over
    from another provider: issue 24); None for any other job (unchanged)."""
    return None if claim.job.route is None else claim.job.provider


def _routed_kind(claim: Claim) -> str | None:
    job = claim.job
    return None if job.route is None else render_kind(job.provider, job.params)
