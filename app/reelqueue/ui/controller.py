"""The glue between the window and the engine session (the only qasync-aware code).

Widgets emit what the user asked for; the controller runs it as a task of the session
(never blocking the GUI thread) and shows the outcome. Engine events reach it through the
:class:`EngineBridge`; the job model applies them at once and the views hear of them on
the next tick of one 200 ms timer, which also refreshes the cards and the status bar.
"""

from __future__ import annotations

import asyncio
import logging
import random
import time
from pathlib import Path
from typing import Any

from PySide6.QtCore import QObject, QTimer, Signal
from PySide6.QtWidgets import QApplication, QFileDialog, QMessageBox, QSystemTrayIcon

from reelqueue.domain.errors import KnownError, ProviderError
from reelqueue.domain.states import JobState
from reelqueue.engine import queries, queue_commands, spend_commands
from reelqueue.engine.events import (
    AccountEvent,
    EngineErrorEvent,
    EngineStateEvent,
    JobEvent,
    RecoveryEvent,
)
from reelqueue.intake import ImportOptions, ImportPlan
from reelqueue.ui import files, theme
from reelqueue.ui import format as fmt
from reelqueue.ui.account_dialog import AccountDialog
from reelqueue.ui.banner import BannerAction
from reelqueue.ui.bridge import EngineBridge
from reelqueue.ui.dashboard import (
    compose_cards,
    engine_words,
    shared_queue_text,
    stall_banner,
    totals_text,
)
from reelqueue.ui.import_dialog import ImportDialog
from reelqueue.ui.job_detail import JobDetailDialog
from reelqueue.ui.jobs_data import stats_of
from reelqueue.ui.main_window import MainWindow
from reelqueue.ui.qtcompat import emit
from reelqueue.ui.session import AccountDraft, EngineSession, OpenReport, RecoveryFollowUp
from reelqueue.ui.settings import Settings, save_settings
from reelqueue.ui.settings_dialog import SettingsDialog
from reelqueue.ui.thumbnails import Thumbnailer

log = logging.getLogger(__name__)

# Cancelling these may cost: the create was (or may have been) sent and billed.
CHARGED_STATES = frozenset({JobState.SUBMITTING, JobState.RENDERING, JobState.DOWNLOADING})
FINISHED_STATES = frozenset({JobState.COMPLETED, JobState.FAILED, JobState.CANCELLED})
TICK_MS = 200
SLOW_TICKS = 5  # cards, status bar and elapsed times: once a second
FIRST_PAGE = 2_000
PENDING_MAX = 50_000


class AppController(QObject):
    """Signals:
        finished(int): the session is closed; the exit code.

    Attributes:
        window: the main window. session: the engine session. bridge: engine -> Qt.
        report: how the session opened (None until it did).
    """

    finished = Signal(int)

    def __init__(self, window: MainWindow, session: EngineSession,
                 parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.window = window
        self.session = session
        self.model = window.model
        self.bridge = EngineBridge(self)
        self.report: OpenReport | None = None
        self.summaries: list[queries.AccountSummary] = []
        self.account_events: dict[str, AccountEvent] = {}
        self.batches: dict[int, str] = {}
        self.dialogs: list[Any] = []
        self.loaded = asyncio.Event()
        self.closing = False
        self._pending: dict[int, list[JobEvent]] = {}
        self._fetching = False
        self._refetch = False
        self._ticks = 0
        self._open_by_batch: dict[int, int] = {}
        self._plan_serial = 0
        self._tray: QSystemTrayIcon | None = None
        self.engine_state: EngineStateEvent | None = None  # the engine's last word
        self.follow_up: RecoveryFollowUp | None = None  # what became of recovered renders
        self._status_dirty = False  # an event arrived: status bar on the next tick
        self._cards_dirty = False  # a state or account changed: cards on the next tick
        self.timer = QTimer(self)
        self.timer.setInterval(TICK_MS)
        self.timer.timeout.connect(self.tick)
        # Thumbnails (PyAV, a worker thread) are kept in the data folder by sha256.
        self.thumbnails = Thumbnailer(session.ctx.data_dir / "thumbnails", self)
        session.on_error = self.show_exception
        self._connect()

    # -- wiring --------------------------------------------------------------------------
    def _connect(self) -> None:
        b, w = self.bridge, self.window
        b.jobEvent.connect(self._on_job_event)
        b.accountEvent.connect(self._on_account_event)
        b.recoveryEvent.connect(self._on_recovery_event)
        b.engineState.connect(self._on_engine_state)
        b.engineError.connect(self._on_engine_error)
        w.importRequested.connect(self.request_import)
        w.startRequested.connect(self.start_queue)
        w.pauseRequested.connect(self.pause_queue)
        w.retryFailedRequested.connect(self.retry_failed)
        w.retryRequested.connect(self.retry)
        w.cancelRequested.connect(self.cancel)
        w.prioritizeRequested.connect(self.prioritize)
        w.batchPriorityRequested.connect(self.prioritize_batch)
        w.batchPauseRequested.connect(self.pause_batch)
        w.exportRequested.connect(self.export)
        w.openFolderRequested.connect(self.open_output_folder)
        w.settingsRequested.connect(self.show_settings)
        w.addAccountRequested.connect(self.show_account_dialog)
        w.jobActivated.connect(self.show_job)
        w.revealRequested.connect(self.reveal_job)
        w.closeRequested.connect(self.request_close)
        self.model.orderRequested.connect(
            lambda order, descending: self.spawn(self._sort_rows(order, descending), "sort"))

    def spawn(self, coro: Any, name: str = "ui-command") -> asyncio.Task[Any]:
        return self.session.spawn(coro, name)

    # -- opening -------------------------------------------------------------------------
    async def open(self, *, start: bool) -> OpenReport | None:
        """Open the session, show what recovery did, then load the jobs page by page."""
        self.bridge.connect_bus(self.session.bus)
        try:
            report = await self.session.open(start=start)
        except KnownError as exc:
            self.window.set_engine_state("stopped")
            self.window.banners.show_banner("error", str(exc), key="open-failed")
            self.session.closed = True
            return None
        self.report = report
        await self.refresh_accounts()  # the banner names built-in mock accounts
        self._show_open_report(report)
        await self.refresh_batches()
        if self.engine_state is None:
            self.window.set_engine_state("paused" if report.paused else "running")
        self.bridge.attach()  # held events (the engine's state above all) arrive now
        self.timer.start()
        await self.load_rows()
        self.refresh_cards()
        self.refresh_status()
        self.loaded.set()
        return report

    def _show_open_report(self, report: OpenReport) -> None:
        recovery = report.recovery
        builtin = self.session.builtin_mock_accounts(s.account for s in self.summaries)
        self.follow_up = RecoveryFollowUp(recovery, builtin)
        if report.unclean or (report.kept_renders and recovery.touched):
            actions = ([("Resume queue", self._resume_from_banner)]
                       if report.unclean and report.paused else [])
            self.window.banners.show_banner("warning" if report.unclean else "info",
                                            self._recovery_text(), actions, key="recovery")
        elif recovery.missing_outputs:
            self.window.banners.show_banner("warning", recovery.summary(), key="recovery")
        for problem in report.keyring_problems[:1]:
            self.window.banners.show_banner("error", problem, key="keyring")

    def _recovery_text(self) -> str:
        """The recovery banner: what recovery did, and what became of each render it
        handed back, as the provider answered (never promised ahead)."""
        report, follow = self.report, self.follow_up
        if report is None or follow is None:
            return ""
        head = ("ReelQueue did not shut down cleanly last time." if report.unclean
                else "Renders kept from last time:")
        parts = [head]
        if follow.jobs:
            if not report.unclean:
                parts = [f"{fmt.count(len(follow.jobs), 'render')} kept from last time:"]
            parts.append(follow.text() if follow.outcomes else
                         f"checking {fmt.count(len(follow.jobs), 'render')} with the "
                         "provider…")
        facts = follow.facts()
        if facts:
            parts.append(facts)
        if report.unclean and report.paused and self.window.paused:
            picked = follow.count("picked_up")
            parts.append("The queue is paused so you can check first"
                         + (f"; the {fmt.count(picked, 'render')} picked up "
                            f"{fmt.plural(picked, 'goes', 'go')} on." if picked else "."))
        return " ".join(p if p.endswith((".", "…", ":")) else p + "." for p in parts)

    def _update_recovery_banner(self) -> None:
        banner = self.window.banners.get("recovery")
        if banner is not None:
            banner.label.setText(self._recovery_text())

    def _resume_from_banner(self) -> None:
        self.start_queue()
        self.window.banners.remove("recovery")

    async def load_rows(self) -> None:
        """Read jobs not shown yet, a first small page (fast first paint) then big ones."""
        if self._fetching:
            self._refetch = True
            return
        self._fetching = True
        try:
            while True:
                self._refetch = False
                engine = self.session.running_engine
                size = FIRST_PAGE if not len(self.model.table) else queries.PAGE_ROWS
                rows = await queries.job_rows(engine.store, len(self.model.table), size)
                if rows:
                    stats = await asyncio.to_thread(stats_of, rows)
                    self.model.add_rows(rows, stats)
                    self._apply_pending()
                if len(rows) < size and not self._refetch:
                    break
        finally:
            self._fetching = False
        self._open_by_batch = {b: n for b, n in self.model.table.stats.open_by_batch.items()}

    def _apply_pending(self) -> None:
        table = self.model.table
        for job_id in [i for i in self._pending if table.index_of(i) is not None]:
            for event in self._pending.pop(job_id):
                table.apply(event)

    async def refresh_accounts(self) -> None:
        self.summaries = await queries.accounts(self.session.running_engine.store)
        self.refresh_cards()
        self.window.set_filter_choices(sorted(self._batch_choices().items()),
                                       [s.account.name for s in self.summaries])

    async def refresh_batches(self) -> None:
        batches = await queries.batches(self.session.running_engine.store)
        self.batches = {b.id: b.name for b in batches}
        self.window.batch_names = dict(self.batches)
        self.window.paused_batches = {b.id for b in batches if queue_commands.is_paused(b)}
        self.window.set_filter_choices(sorted(self._batch_choices().items()),
                                       [s.account.name for s in self.summaries])

    def _batch_choices(self) -> dict[int, str]:
        """Batch names for the filter, a paused one marked so."""
        return {bid: name + (" (paused)" if bid in self.window.paused_batches else "")
                for bid, name in self.batches.items()}

    # -- events --------------------------------------------------------------------------
    def _on_job_event(self, event: JobEvent) -> None:
        self._status_dirty = True
        row = self.model.table.row(event.job_id)
        if row is None or row.state != event.state:
            self._cards_dirty = True
        if self.follow_up is not None and self.follow_up.observe(event):
            self._update_recovery_banner()
        if not self.model.apply_event(event):
            queue = self._pending.setdefault(event.job_id, [])
            if sum(map(len, self._pending.values())) < PENDING_MAX:
                queue.append(event)
            if not self._fetching and self.loaded.is_set():
                self.spawn(self.load_rows(), "load-new-rows")

    def _on_account_event(self, event: AccountEvent) -> None:
        self.account_events[event.name] = event
        self._status_dirty = self._cards_dirty = True
        if not any(s.account.name == event.name for s in self.summaries):
            self.spawn(self.refresh_accounts(), "refresh-accounts")

    def _on_recovery_event(self, event: RecoveryEvent) -> None:
        if self.report is None or event.report is self.report.recovery:
            return  # start-up recovery: the open report's banner already says it
        if event.report.touched:  # a lease take-over later on (shared store)
            self.window.banners.show_banner("info", event.report.summary(), key="takeover")

    def _on_engine_state(self, event: EngineStateEvent) -> None:
        """The engine said what is true (running, waiting, stalled, done, paused): the
        button, the status bar and the stalled banner follow; stale banners go."""
        if self.closing or event.state in ("drained", "stopped"):
            return  # the drain's own words (CLI); the window says "done" from the pump
        if event.state == "stalled" and not event.reasons:
            return  # run_until_drained's text-only word; the pump's has the reasons
        self.engine_state = event
        self.window.set_engine_state(event.state)
        banners = self.window.banners
        if event.state == "stalled":
            actions = ([("Connect an account…", self.show_account_dialog)]
                       if any(r.code == "no_account" for r in event.reasons) else [])
            banners.show_banner("warning", stall_banner(event), actions, key="stalled")
        else:
            banners.remove("stalled")
        if event.state == "running":
            # The run started: "Imported ... [Start]" and the Start hints are stale.
            banners.remove("imported")
            banners.remove("hint:start")
        if event.state in ("running", "paused"):
            self._update_recovery_banner()
        self.refresh_status()

    def _on_engine_error(self, event: EngineErrorEvent) -> None:
        self.window.banners.show_banner("error", event.message, key=f"engine:{event.message}")

    def show_exception(self, exc: BaseException) -> None:
        """A failed command or async slot: known errors plainly, bugs with a pointer to
        the log (they are logged with their traceback)."""
        if isinstance(exc, KnownError | ProviderError):
            self.window.banners.show_banner("error", str(exc), key=f"error:{exc}")
            return
        log.error("unexpected error in the window", exc_info=(type(exc), exc, exc.__traceback__))
        self.window.banners.show_banner(
            "error", f"Something went wrong inside ReelQueue ({type(exc).__name__}: {exc}). "
            "The details are in the log; your jobs are safe in the journal.",
            key=f"bug:{type(exc).__name__}:{exc}")

    # -- the tick --------------------------------------------------------------------------
    def tick(self) -> None:
        self.model.flush()
        self._ticks += 1
        table = self.model.table
        if table.completed_since_tick:
            ids, table.completed_since_tick = table.completed_since_tick, []
            self.spawn(self._refresh_rows(ids), "refresh-completed")
        if self._ticks % SLOW_TICKS:
            # Event-driven: what an event changed shows on the next tick (200 ms), in
            # the table, the cards and the status bar alike.
            if self._cards_dirty:
                self.refresh_cards()
            if self._status_dirty:
                self.refresh_status()
            return
        now = time.time()
        table.prune_completions(now)
        self.refresh_cards(now)
        self.refresh_status(now)
        view = self.window.table
        first = view.rowAt(0)
        last = view.rowAt(view.viewport().height() - 1)
        if first >= 0 and self.model.visible_in_flight(first, last if last >= 0 else first + 40):
            view.viewport().update()
        self._check_batches_finished()

    def refresh_status(self, now: float | None = None) -> None:
        """The status bar: counts, rate and ETA (only while something renders) and the
        engine's word, from the same mirror the table shows."""
        self._status_dirty = False
        table = self.model.table
        self.window.set_totals(*totals_text(table, now or time.time()))
        if self.closing or self.session.closed:
            return
        if self.window.paused and (self.engine_state is None
                                   or self.engine_state.state != "paused"):
            return  # starting or stopping: set_engine_state's own word stands
        self.window.set_engine_text(*engine_words(self.engine_state, table))

    def refresh_cards(self, now: float | None = None) -> None:
        self._cards_dirty = False
        cards = compose_cards(self.model.table, self.summaries, self.account_events,
                              now or time.time())
        self.window.set_shared_queue(shared_queue_text(self.model.table, self.summaries))
        for card in self.window.accounts.set_accounts(cards):
            card.capacityChanged.connect(self.set_capacity)
            card.enabledChanged.connect(self.set_enabled)
            card.markReady.connect(self.mark_ready)
            card.dailyCapChanged.connect(self.set_daily_cap)
            card.showJobs.connect(self.window.show_account)

    async def _sort_rows(self, order: str, descending: bool) -> None:
        """The jobs table's sort, done by the journal (jobs_model.py)."""
        if self.session.engine is None or self.session.closed:
            return
        ids = await queries.job_order(self.session.running_engine.store, order, descending)
        self.model.set_order(order, descending, ids)

    async def _refresh_rows(self, job_ids: list[int]) -> None:
        rows = await queries.job_rows_by_id(self.session.running_engine.store, job_ids)
        self.model.replace_rows(rows)

    def _check_batches_finished(self) -> None:
        current = self.model.table.stats.open_by_batch
        for batch_id, before in list(self._open_by_batch.items()):
            if before > 0 and current.get(batch_id, 0) == 0:
                self._batch_finished(batch_id)
        self._open_by_batch = {b: n for b, n in current.items() if n > 0}

    def _batch_finished(self, batch_id: int) -> None:
        rows = [r for r in self.model.table.rows if r.batch_id == batch_id]
        done = sum(r.state == JobState.COMPLETED for r in rows)
        failed = sum(r.state == JobState.FAILED for r in rows)
        cancelled = sum(r.state == JobState.CANCELLED for r in rows)
        parked = sum(r.state == JobState.PARKED for r in rows)
        name = self.batches.get(batch_id, f"batch {batch_id}")
        text = (f"Batch “{name}” finished: {fmt.number(done)} completed, "
                f"{fmt.number(failed)} failed, {fmt.number(cancelled)} cancelled"
                + (f", {fmt.number(parked)} parked (they keep their render; Retry reads "
                   "it again)" if parked else "") + ".")
        actions = [("Open folder", self.open_output_folder)]
        if failed:
            actions.insert(0, ("Retry failed", self.retry_failed))
        if self._is_demo(name):
            actions.append(("Run the demo again", self.run_demo_again))
        # Green only when something completed and nothing failed or waits for the user.
        kind = ("warning" if failed or parked else "success" if done else "info")
        # One "finished" banner: the newest batch's replaces an older one.
        self.window.banners.remove_family("batch:")
        self.window.banners.show_banner(kind, text, actions, key=f"batch:{batch_id}")
        if QSystemTrayIcon.isSystemTrayAvailable():
            if self._tray is None:
                self._tray = QSystemTrayIcon(theme.app_icon(), self)
                self._tray.show()
            self._tray.showMessage("ReelQueue", text)

    # -- queue commands --------------------------------------------------------------------
    def start_queue(self) -> None:
        if self.session.engine is not None and not self.session.closed:
            self.session.start_queue()

    def pause_queue(self) -> None:
        if self.session.engine is not None and not self.session.closed:
            self.session.pause_queue()

    def cancel(self, job_ids: list[int]) -> QMessageBox | None:
        """Cancel asks first, naming what it may cost (renders in flight may already be
        charged); one queued job goes without a question. Returns the question asked."""
        rows = [r for i in job_ids if (r := self.model.table.row(i)) is not None]
        open_ids = [r.id for r in rows if r.state not in FINISHED_STATES]
        rendering = sum(r.state in CHARGED_STATES for r in rows)
        if rows and not open_ids:
            self.window.banners.show_banner(
                "info", f"Nothing to cancel: {fmt.plural(len(rows), 'this')} "
                f"{fmt.plural(len(rows), 'job')} already finished.", key="cancelled")
            return None
        if len(open_ids) <= 1 and not rendering and len(rows) == len(job_ids):
            self.spawn(self._cancel(job_ids, rendering), "cancel")
            return None
        n = len(open_ids) if rows else len(job_ids)
        box = QMessageBox(QMessageBox.Icon.Question, "Cancel jobs",
                          f"Cancel {fmt.count(n, 'job')}?", parent=self.window)
        box.setInformativeText(
            (f"{fmt.number(rendering)} {fmt.plural(rendering, 'is')} rendering now and may "
             "already be charged; the provider is asked to stop "
             f"{fmt.plural(rendering, 'it', 'them')}. " if rendering else "")
            + "Cancelled jobs stay in the list; Retry queues them again.")
        box.setStandardButtons(QMessageBox.StandardButton.Yes | QMessageBox.StandardButton.No)
        box.setDefaultButton(QMessageBox.StandardButton.No)
        box.setEscapeButton(QMessageBox.StandardButton.No)
        box.button(QMessageBox.StandardButton.Yes).setText(f"Cancel {fmt.count(n, 'job')}")
        box.button(QMessageBox.StandardButton.No).setText("Keep them")

        def answered(button: object) -> None:
            if button is box.button(QMessageBox.StandardButton.Yes):
                self.spawn(self._cancel(job_ids, rendering), "cancel")

        box.buttonClicked.connect(answered)
        box.finished.connect(lambda _r: self._forget(box))
        box.setWindowModality(box.windowModality().WindowModal)
        self.dialogs.append(box)
        self.cancel_box = box
        box.open()
        return box

    async def _cancel(self, job_ids: list[int], rendering: int = 0) -> None:
        done = await self.session.cancel(job_ids)
        text = f"Cancelled {fmt.count(len(done), 'job')}"
        if rendering:
            text += (f", {fmt.count(rendering, 'render')} stopped while running (the "
                     "provider may have charged for what it rendered)")
        if len(done) < len(job_ids):
            text += (f"; {fmt.number(len(job_ids) - len(done))} had already finished and "
                     "were left as they were")
        self.window.banners.show_banner("info", text + ".", key="cancelled")

    def retry(self, job_ids: list[int], seed: object = None) -> None:
        new_seed = random.randrange(2**31) if seed == -1 else seed
        self.spawn(self._retry(job_ids, new_seed if isinstance(new_seed, int) else None),
                   "retry")

    async def _retry(self, job_ids: list[int], seed: int | None, *,
                     confirmed: bool = False) -> None:
        # Retry asks before it pays (issue 10): a charge, known or not ("price unknown"),
        # waits for the banner's button; re-reading a kept render is free and goes at once.
        plan = await self.session.retry_plan(job_ids, seed)
        if (plan.rerender_usd > 0 or plan.unpriced) and not confirmed:
            price = (f"est. ${plan.rerender_usd:.2f}" if not plan.unpriced
                     else "price unknown" if not plan.rerender_usd
                     else f"est. ${plan.rerender_usd:.2f} + unknown")
            self.window.banners.show_banner(
                "warning", f"Retry: {plan.summary()}",
                [(f"Retry ({price})", lambda: self.spawn(
                    self._retry(job_ids, seed, confirmed=True), "retry"))], key="retry")
            return
        done = await self.session.retry(job_ids, seed)
        if not done:
            self.window.banners.show_banner("info", "Only failed, cancelled or parked jobs "
                                            "can be retried.", key="retry")
            return
        if plan.reread:
            self.window.banners.show_banner("info", f"Retry: {plan.summary()}", key="retry")
        await self._refresh_rows(done)
        if confirmed:  # from the banner: the job's open detail view follows too
            for dialog in list(self.dialogs):
                if isinstance(dialog, JobDetailDialog) and dialog.job_id in done:
                    await self._load_detail(dialog)

    def retry_failed(self) -> None:
        batch = self.window.batch_filter.currentData()
        ids = [r.id for r in self.model.table.rows
               if r.state in (JobState.FAILED, JobState.PARKED)
               and (batch is None or r.batch_id == batch)]
        if not ids:
            self.window.banners.show_banner("info", "There are no failed jobs to retry.",
                                            key="retry")
            return
        self.spawn(self._retry_failed(ids), "retry-failed")

    async def _retry_failed(self, ids: list[int], *, include_permanent: bool = False,
                            confirmed: bool = False) -> None:
        """Like ``reelqueue retry --failed``: permanent failures (content policy, invalid
        input...) are left out unless asked for; it says what it re-reads for free and
        what it renders again at a price, and a price waits for the user's button."""
        plan = await self.session.running_engine.retry_plan(
            ids, include_permanent=include_permanent)
        skipped = len(plan.skipped_permanent)
        text = plan.summary(include_hint="'Also retry' queues them too")
        also = [(f"Also retry {fmt.number(skipped)} refused by the provider's rules",
                 lambda: self.spawn(self._retry_failed(ids, include_permanent=True),
                                    "retry-failed"))] if skipped else []
        if not plan.job_ids:
            self.window.banners.show_banner("info", f"Retry failed: {text}", also,
                                            key="retry")
            return
        if (plan.rerender_usd > 0 or plan.unpriced) and not confirmed:
            price = (f"est. ${plan.rerender_usd:.2f}" if not plan.unpriced
                     else "price unknown" if not plan.rerender_usd
                     else f"est. ${plan.rerender_usd:.2f} + unknown")
            self.window.banners.show_banner(
                "warning", f"Retry failed: {text}",
                [(f"Retry ({price})", lambda: self.spawn(self._retry_failed(
                    ids, include_permanent=include_permanent, confirmed=True),
                    "retry-failed")), *also], key="retry")
            return
        done = await self.session.retry(plan.job_ids)
        self.window.banners.show_banner(
            "info", f"Queued {fmt.count(len(done), 'job')} again. {text}", also, key="retry")
        await self._refresh_rows(done)

    # -- the demo ------------------------------------------------------------------------
    def _is_demo(self, batch_name: str) -> bool:
        from reelqueue.application.demo import DEMO_BATCH

        return (self.session.ctx.data_dir.name == "demo"
                and batch_name.split(" ")[0] == DEMO_BATCH)

    def run_demo_again(self) -> None:
        self.spawn(self._run_demo_again(), "demo-again")

    async def _run_demo_again(self) -> None:
        """The sample sheet once more, as a new batch ("demo 2"...): the journal is open
        here, so the finished one stays on the record ('reelqueue demo --reset' clears it)."""
        from reelqueue.application.demo import DEMO_BATCH
        from reelqueue.resources import resource

        taken = set(self.batches.values())
        n = 2
        while f"{DEMO_BATCH} {n}" in taken:
            n += 1
        options = self.session.import_options(provider="mock", batch_name=f"{DEMO_BATCH} {n}")
        plan = await self.session.plan_import(resource("sample_prompts.csv"), options)
        result = await self.session.apply_import(plan)
        await self.refresh_batches()
        await self.load_rows()
        self.start_queue()
        self.window.banners.show_banner(
            "info", f"The demo runs again: {fmt.count(result.added, 'new job')} in batch "
            f"“{result.batch_name}”.", key="demo")

    # -- queue order -------------------------------------------------------------------
    def prioritize(self, job_ids: list[int]) -> None:
        self.spawn(self._prioritize(job_ids), "prioritize")

    async def _prioritize(self, job_ids: list[int]) -> None:
        result = await queue_commands.prioritize_jobs(self.session.running_engine, job_ids)
        left = len(set(job_ids)) - result.changed
        self.window.banners.show_banner(
            "info", f"Moved {fmt.count(result.changed, 'job')} to the front of the queue"
            + (f"; {fmt.number(left)} already finished" if left else "") + ".",
            key="priority")

    def prioritize_batch(self, batch_id: int) -> None:
        self.spawn(self._prioritize_batch(batch_id), "prioritize-batch")

    async def _prioritize_batch(self, batch_id: int) -> None:
        result = await queue_commands.prioritize_batch(self.session.running_engine, batch_id)
        name = self.batches.get(batch_id, f"batch {batch_id}")
        self.window.banners.show_banner(
            "info", f"Batch “{name}” moved to the front: its "
            f"{fmt.count(result.changed, 'unfinished job')} go before the others.",
            key="priority")

    def pause_batch(self, batch_id: int, paused: bool) -> None:
        self.spawn(self._pause_batch(batch_id, paused), "pause-batch")

    async def _pause_batch(self, batch_id: int, paused: bool) -> None:
        batch = await queue_commands.set_batch_paused(self.session.running_engine, batch_id,
                                                      paused)
        await self.refresh_batches()
        if batch is None:
            return
        text = (f"Batch “{batch.name}” paused: its waiting jobs are not started; renders "
                "already running finish." if paused else
                f"Batch “{batch.name}” resumed.")
        actions = [("Resume", lambda: self.pause_batch(batch_id, False))] if paused else []
        self.window.banners.show_banner("info", text, actions, key=f"batch-paused:{batch_id}")

    def set_capacity(self, account: str, capacity: int) -> None:
        self.spawn(self._account_command(self.session.set_capacity(account, capacity)))

    def set_enabled(self, account: str, enabled: bool) -> None:
        self.spawn(self._account_command(self.session.set_enabled(account, enabled)))

    def set_daily_cap(self, account: str, usd: float | None) -> None:
        """From the card: raising or removing the cap releases the jobs it held at once."""
        self.spawn(self._account_command(spend_commands.set_daily_cap(
            self.session.running_engine, account, usd)))

    def mark_ready(self, account: str) -> None:
        self.spawn(self._account_command(self.session.mark_ready(account)))

    async def _account_command(self, command: Any) -> None:
        await command
        await self.refresh_accounts()

    # -- import ----------------------------------------------------------------------------
    def request_import(self, path: Path | None) -> None:
        if path is not None:
            self.open_import(Path(path))
            return
        dialog = QFileDialog(self.window, "Import a sheet of prompts")
        dialog.setFileMode(QFileDialog.FileMode.ExistingFile)
        dialog.setNameFilter("Sheets (*.csv *.tsv *.tab *.txt *.xlsx *.xlsm *.xlsb *.xls *.ods)")
        dialog.fileSelected.connect(lambda name: self.open_import(Path(name)))
        dialog.open()
        self.dialogs.append(dialog)

    def open_import(self, path: Path) -> ImportDialog:
        dialog = ImportDialog(path, self.session.import_options(), self.window)
        dialog.replanRequested.connect(lambda options: self.spawn(self._plan(dialog, options)))
        dialog.importRequested.connect(
            lambda plan, rows: self.spawn(self._apply(dialog, plan, rows), "import"))
        dialog.finished.connect(lambda _r: self._forget(dialog))
        self.dialogs.append(dialog)
        dialog.show()
        self.spawn(self._plan(dialog, dialog.current_options()), "plan-import")
        return dialog

    async def _plan(self, dialog: ImportDialog, options: ImportOptions) -> None:
        self._plan_serial += 1
        serial = self._plan_serial
        try:
            plan = await self.session.plan_import(dialog.path, options)
        except KnownError as exc:
            if serial == self._plan_serial:
                dialog.set_error(str(exc))
            return
        if serial == self._plan_serial:
            dialog.set_plan(plan)

    async def _apply(self, dialog: ImportDialog, plan: ImportPlan, rows: int | None) -> None:
        try:
            result = await self.session.apply_import(plan, rows,
                                                     max_spend=dialog.spend_cap())
        except KnownError as exc:
            dialog.set_error(str(exc))
            return
        dialog.accept()
        await self.refresh_batches()
        await self.load_rows()
        what = f"a test run of {fmt.count(result.added, 'job')}" if rows is not None else \
            fmt.count(result.added, "new job")
        text = (f"Imported {what} into batch “{result.batch_name}”"
                + (f" ({fmt.number(result.already_present)} "
                   f"{fmt.plural(result.already_present, 'was')} already there)"
                   if result.already_present else "") + ".")
        actions: list[BannerAction] = (
            [("Start", self._start_from_banner)] if self.window.paused else [])
        if not self.summaries:
            text += " Connect an account to render them."
            actions = [("Connect an account…", self.show_account_dialog)]
        self.window.banners.show_banner("success", text, actions, key="imported")

    def _start_from_banner(self) -> None:
        self.start_queue()
        self.window.banners.remove("imported")

    # -- export and folders -------------------------------------------------------------
    def _chosen_batch(self) -> int | None:
        batch = self.window.batch_filter.currentData()
        return batch if batch is not None else max(self.batches, default=None)

    def export(self) -> None:
        batch = self._chosen_batch()
        if batch is None:
            self.window.banners.show_banner("info", "Import a sheet first; there is nothing "
                                            "to export yet.", key="export")
            return
        dialog = QFileDialog(self.window, "Export results", str(self._output_folder(batch)))
        dialog.setAcceptMode(QFileDialog.AcceptMode.AcceptSave)
        dialog.setNameFilters(["CSV (*.csv)", "Excel workbook (*.xlsx)"])
        dialog.selectFile(f"{self.batches.get(batch, 'results')} results.csv")
        dialog.fileSelected.connect(lambda name: self.spawn(self._export(batch, Path(name))))
        dialog.open()
        self.dialogs.append(dialog)

    async def _export(self, batch: int, path: Path) -> None:
        kind = "xlsx" if path.suffix.lower() == ".xlsx" else "csv"
        count = await self.session.export(batch, path, kind)
        self.window.banners.show_banner("success", f"Exported {fmt.count(count, 'row')} to "
                                        f"{path}.", [("Show", lambda: self._reveal(path))],
                                        key="export")

    def _reveal(self, path: Path) -> None:
        if not files.reveal(path):
            self.window.no_file_opener(path)

    def open_output_folder(self) -> None:
        folder = self._output_folder()
        folder.mkdir(parents=True, exist_ok=True)
        if not files.open_path(folder):
            self.window.no_file_opener(folder)

    def _output_folder(self, batch: int | None = None) -> Path:
        """The batch's folder (default: the one chosen in the filter), else the output
        root. Exports start there too, beside the videos."""
        settings = self.session.settings
        folder = Path(settings.output_dir) if settings.output_dir else self.session.ctx.videos_dir
        if batch is None:
            batch = self.window.batch_filter.currentData()
        if batch is not None:
            rows = [r for r in self.model.table.rows[:1000] if r.batch_id == batch]
            if rows:
                folder = Path(rows[0].output_path).parent
        return folder

    def reveal_job(self, job_id: int) -> None:
        row = self.model.table.row(job_id)
        if row is not None:
            self._reveal(Path(row.output_path))

    # -- dialogs -------------------------------------------------------------------------
    def _forget(self, dialog: Any) -> None:
        if hasattr(dialog, "stop_timers"):
            dialog.stop_timers()
        if dialog in self.dialogs:
            self.dialogs.remove(dialog)
        dialog.deleteLater()

    def show_job(self, job_id: int) -> JobDetailDialog:
        for dialog in self.dialogs:
            if isinstance(dialog, JobDetailDialog) and dialog.job_id == job_id:
                dialog.raise_()
                dialog.activateWindow()
                return dialog
        dialog = JobDetailDialog(job_id, self.window, thumbnails=self.thumbnails)
        dialog.retryRequested.connect(
            lambda jid, seed: self.spawn(self._detail_command(dialog, self._retry([jid], seed))))
        dialog.cancelRequested.connect(
            lambda jid: self.spawn(self._detail_command(dialog, self._cancel([jid]))))
        dialog.revealRequested.connect(lambda path: files.reveal(Path(path)))
        dialog.finished.connect(lambda _r: self._forget(dialog))
        self.dialogs.append(dialog)
        dialog.show()
        self.spawn(self._load_detail(dialog), "job-detail")
        return dialog

    async def _detail_command(self, dialog: JobDetailDialog, command: Any) -> None:
        await command
        await self._load_detail(dialog)

    async def _load_detail(self, dialog: JobDetailDialog) -> None:
        detail = await queries.job_detail(self.session.running_engine.store, dialog.job_id)
        if detail is None or dialog not in self.dialogs:
            return
        dialog.set_detail(detail)  # it asks self.thumbnails for a completed job's picture

    def show_account_dialog(self) -> AccountDialog:
        dialog = AccountDialog({s.account.name for s in self.summaries}, self.window,
                               providers=self.session.providers)
        dialog.testRequested.connect(lambda draft: self.spawn(self._test_key(dialog, draft)))
        dialog.connectRequested.connect(
            lambda draft: self.spawn(self._add_account(dialog, draft)))
        dialog.finished.connect(lambda _r: self._forget(dialog))
        self.dialogs.append(dialog)
        dialog.show()
        return dialog

    async def _test_key(self, dialog: AccountDialog, draft: AccountDraft) -> None:
        dialog.set_busy("Asking the provider…")
        try:
            await self.session.test_key(draft)
        except (KnownError, ProviderError) as exc:
            dialog.set_result(False, str(exc))
            return
        dialog.set_result(True, "Key accepted by the provider.")

    async def _add_account(self, dialog: AccountDialog, draft: AccountDraft) -> None:
        dialog.set_busy("Checking the key and storing it in the OS keyring…")
        try:
            await self.session.add_account(draft)
        except (KnownError, ProviderError) as exc:
            dialog.set_result(False, str(exc))
            return
        dialog.accept()
        await self.refresh_accounts()
        self.window.banners.show_banner("success", f"Account {draft.name} connected "
                                        f"(limit {draft.capacity}).", key="account")

    def show_settings(self) -> SettingsDialog:
        default = str(self.session.ctx.videos_dir)
        dialog = SettingsDialog(self.session.settings, default, self.window)
        dialog.saved.connect(lambda settings: self.spawn(self._save_settings(settings)))
        dialog.finished.connect(lambda _r: self._forget(dialog))
        self.dialogs.append(dialog)
        dialog.show()
        return dialog

    async def _save_settings(self, settings: Settings) -> None:
        old = self.session.settings
        await asyncio.to_thread(save_settings, self.session.ctx.data_dir, settings)
        self.session.settings = settings
        if settings.theme != old.theme:
            app = QApplication.instance()
            if isinstance(app, QApplication):
                theme.apply_theme(app, settings.theme)
                self.refresh_cards()

    # -- closing -------------------------------------------------------------------------
    def live_renders(self) -> int:
        return sum(len(rows) for rows in self.model.table.live.values())

    def request_close(self) -> None:
        if self.closing:
            return
        live = self.live_renders()
        if self.session.closed or self.session.engine is None or not live:
            self.spawn(self.shutdown(keep_renders=True), "shutdown")
            return
        box = QMessageBox(QMessageBox.Icon.Question, "Renders are still running",
                          f"{live} render{'s are' if live != 1 else ' is'} still running at "
                          "the provider.", parent=self.window)
        builtin = set(self.session.builtin_mock_accounts(s.account for s in self.summaries))
        on_mock = sum(len(ids) for name, ids in self.model.table.live.items()
                      if name in builtin)
        real = live - on_mock
        info = []
        if real:
            info.append(f"Keep for next time: {fmt.plural(real, 'this render', 'these renders')}"
                        " at the provider keep running there; when you open ReelQueue "
                        "again it asks the provider for each and picks up those it still "
                        "has (one it no longer has is rendered again).")
        if on_mock:
            info.append(f"{fmt.count(on_mock, 'render')} on the built-in mock stop with "
                        "ReelQueue: nothing of them survives, whatever you choose; they are "
                        "rendered again next time (the mock charges nothing).")
        info.append("Or cancel them now.")
        box.setInformativeText(" ".join(info))
        keep = box.addButton("Keep for next time", QMessageBox.ButtonRole.AcceptRole)
        cancel = box.addButton("Cancel renders and quit", QMessageBox.ButtonRole.DestructiveRole)
        box.addButton("Don't quit", QMessageBox.ButtonRole.RejectRole)
        box.setDefaultButton(keep)

        def chosen(button: object) -> None:
            if button is keep:
                self.spawn(self.shutdown(keep_renders=True), "shutdown")
            elif button is cancel:
                self.spawn(self.shutdown(keep_renders=False), "shutdown")

        box.buttonClicked.connect(chosen)
        box.setWindowModality(box.windowModality().WindowModal)
        box.open()
        self.dialogs.append(box)
        self.close_box = box

    async def shutdown(self, *, keep_renders: bool = True) -> int:
        """Close in order; the window goes last. Returns the renders kept."""
        if self.closing:
            return 0
        self.closing = True
        self.window.set_engine_state("stopping")
        self.timer.stop()
        for dialog in list(self.dialogs):
            if hasattr(dialog, "stop_timers"):
                dialog.stop_timers()
            dialog.close()
        self.window.stop_timers()
        self.thumbnails.close()
        kept = await self.session.close(keep_renders=keep_renders)
        self.bridge.disconnect_bus()
        if self._tray is not None:
            self._tray.hide()
        self.window.allow_close = True
        self.window.close()
        emit(self.finished, 0)
        return kept
