"""The glue between the window and the engine session (the only qasync-aware code).

Widgets emit what the user asked for; the controller runs it as a task of the session
(never blocking the GUI thread) and shows the outcome. Engine events reach it through the
:class:`EngineBridge`; the job model applies them at once and the views hear of them on
the next tick of one 200 ms timer, which also refreshes the cards and the status bar.

The controller wires these parts, one concern each, and keeps what they share (the
window, the session, accounts and batches, the engine's last word):

- :class:`~reelqueue.ui.paging.JobPager`: the jobs table's rows, page by page.
- :class:`~reelqueue.ui.queue_actions.QueueActions`: start, pause, cancel, retry, order.
- :class:`~reelqueue.ui.dialogs.DialogKeeper`: import, job detail, account, settings,
  export and folders.
- :class:`~reelqueue.ui.tray.BatchFinishWatch`: a finished batch's banner and tray message.
- :class:`~reelqueue.ui.close_flow.CloseFlow`: closing with renders running.

Each part is given what it uses (the session, the window, the dialog keeper, ``spawn``)
and, for the controller's changing state and callbacks, a narrow Protocol of its own
module that the controller satisfies; none imports the controller or reaches back through
it (issue 20, checked in tests/test_layers.py).
"""

from __future__ import annotations

import asyncio
import logging
import math
import time
from collections.abc import Coroutine
from typing import Any

from PySide6.QtCore import QObject, QTimer, Signal

from reelqueue.application import jobs, status, team, views
from reelqueue.application.builtin_mock import builtin_mock_accounts
from reelqueue.application.events import (
    AccountEvent,
    EngineErrorEvent,
    EngineStateEvent,
    JobEvent,
    RecoveryEvent,
    not_configured_reasons,
)
from reelqueue.application.words import Condition, condition_words
from reelqueue.domain.errors import (
    JournalLoginRefused,
    JournalTlsRefused,
    JournalUnreachable,
    KnownError,
    ProviderError,
)
from reelqueue.ui import format as fmt
from reelqueue.ui.account_figures_part import AccountFiguresPart
from reelqueue.ui.account_manage_part import AccountManagePart
from reelqueue.ui.banner import BannerAction
from reelqueue.ui.bridge import EngineBridge
from reelqueue.ui.close_flow import CloseFlow
from reelqueue.ui.dashboard import (
    compose_cards,
    engine_words,
    removed_accounts,
    removed_accounts_text,
    shared_queue_text,
    stall_banner,
    totals_text,
)
from reelqueue.ui.dialogs import DialogKeeper
from reelqueue.ui.gallery_part import GalleryPart
from reelqueue.ui.main_window import MainWindow
from reelqueue.ui.paging import JobPager
from reelqueue.ui.qtcompat import emit
from reelqueue.ui.queue_actions import QueueActions
from reelqueue.ui.session import OpenReport, RecoveryFollowUp, WindowSession
from reelqueue.ui.thumbnails import Thumbnailer
from reelqueue.ui.tray import BatchFinishWatch
from reelqueue.ui.unreachable import LOCAL_QUEUE_EXIT, retry_delay

log = logging.getLogger(__name__)

TICK_MS = 200
SLOW_TICKS = 5  # cards, status bar and elapsed times: once a second
TEAM_REFRESH_TICKS = 5  # a team store: team-wide account figures every 5 slow ticks
MONEY_REFRESH_TICKS = 5  # the journal's money figures: every 5 slow ticks, and after events
MONEY_SHARE = 0.05
"""The most of the journal thread's time the money figures' reads may take: the next read
waits (1 / MONEY_SHARE - 1) times as long as the last one took. Their aggregate over the
waiting jobs' prices costs 120-220 ms with 100,000 jobs waiting; read once a second during
a run, that was a fifth of the thread the engine writes its transitions on."""
TEAM_CONNECTION_ERRORS = (JournalUnreachable, JournalLoginRefused, JournalTlsRefused)


def window_words(message: str) -> str:
    """A journal error's words for the window, which tries again by itself: not "run the
    command again" (the page says what is kept)."""
    for tail in (", then run the command again: nothing recorded before was lost.",
                 ": nothing recorded before was lost.", "; nothing recorded before was lost."):
        if message.endswith(tail):
            return message[:-len(tail)] + "."
    return message


class AppController(QObject):
    """Signals:
        finished(int): the session is closed; the exit code.

    Attributes:
        window: the main window. session: the engine session. bridge: engine -> Qt.
        report: how the session opened (None until it did).
        pager, actions, keeper, batch_watch, closer: the parts (module docstring).
    """

    finished = Signal(int)

    def __init__(self, window: MainWindow, session: WindowSession,
                 parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.window = window
        self.session = session
        self.model = window.model
        self.bridge = EngineBridge(self)
        self.report: OpenReport | None = None
        self.summaries: list[views.AccountSummary] = []
        self.account_events: dict[str, AccountEvent] = {}
        self.batches: dict[int, str] = {}
        self.closing = False
        self._ticks = 0
        self.engine_state: EngineStateEvent | None = None  # the engine's last word
        self.follow_up: RecoveryFollowUp | None = None  # what became of recovered renders
        self._status_dirty = False  # an event arrived: status bar on the next tick
        self._cards_dirty = False  # a state or account changed: cards on the next tick
        self._team_reading: asyncio.Task[Any] | None = None  # a team store's read
        self.follower: views.ChangeFollower | None = None  # a team store's changes
        self.money: status.Money | None = None  # the journal's money figures
        self._money_dirty = False  # an event changed them: read again on the slow tick
        self._money_reading: asyncio.Task[Any] | None = None
        self._money_not_before = 0.0  # time.monotonic(): paced by MONEY_SHARE
        self.timer = QTimer(self)
        self.timer.setInterval(TICK_MS)
        self.timer.timeout.connect(self.tick)
        # Thumbnails (PyAV, a worker thread) are kept in the data folder by sha256.
        self.thumbnails = Thumbnailer(session.ctx.data_dir / "thumbnails", self)
        self.keeper = DialogKeeper(session, window, self.thumbnails, self.spawn, self)
        self.batch_watch = BatchFinishWatch(window, self.keeper, self, parent=self)
        self.pager = JobPager(self.model, session, self.spawn, self.batch_watch.recount)
        self.loaded = self.pager.loaded
        self.actions = QueueActions(session, window, self.keeper, self.pager, self.spawn, self)
        self.closer = CloseFlow(session, window, self.keeper, self.thumbnails, self.bridge,
                                self.batch_watch, self.timer, self.spawn, self,
                                lambda code: emit(self.finished, code))
        self.gallery = GalleryPart(session, window, self.bridge, self.spawn, self,
                                   parent=self)  # the results gallery (issue 23)
        self.manage = AccountManagePart(session, window, self.keeper, self.spawn, self,
                                        parent=self)  # a card's "Manage…" dialog (issue 23)
        # the provider's figures on the cards, their "Update", credits notices (issue 32)
        self.figures = AccountFiguresPart(session, window, self.spawn, self, parent=self)
        session.app.on_error = self.show_exception
        self._connect()

    # -- wiring --------------------------------------------------------------------------
    def _connect(self) -> None:
        b, w, a, k = self.bridge, self.window, self.actions, self.keeper
        b.jobEvent.connect(self._on_job_event)
        b.accountEvent.connect(self._on_account_event)
        b.recoveryEvent.connect(self._on_recovery_event)
        b.engineState.connect(self._on_engine_state)
        b.engineError.connect(self._on_engine_error)
        w.importRequested.connect(k.request_import)
        w.startRequested.connect(a.start_queue)
        w.pauseRequested.connect(a.pause_queue)
        w.retryFailedRequested.connect(a.retry_failed)
        w.retryRequested.connect(a.retry)
        w.cancelRequested.connect(a.cancel)
        w.cancelAskRequested.connect(lambda ids: a.cancel(ids, always_ask=True))
        w.prioritizeRequested.connect(a.prioritize)
        w.batchPriorityRequested.connect(a.prioritize_batch)
        w.batchPauseRequested.connect(a.pause_batch)
        w.exportRequested.connect(k.export)
        w.openFolderRequested.connect(k.open_output_folder)
        w.settingsRequested.connect(k.show_settings)
        w.instancesRequested.connect(k.show_instances)
        w.costsRequested.connect(k.show_costs)
        w.aboutRequested.connect(k.show_about)
        w.addAccountRequested.connect(k.show_account_dialog)
        w.jobActivated.connect(k.show_job)
        w.revealRequested.connect(k.reveal_job)
        w.closeRequested.connect(self.closer.request_close)
        self.model.orderRequested.connect(
            lambda order, descending: self.spawn(self.pager.sort_rows(order, descending),
                                                 "sort"))

    def spawn(self, coro: Coroutine[Any, Any, Any], name: str = "ui-command"
              ) -> asyncio.Task[Any]:
        return self.session.app.spawn(coro, name)

    async def load_rows(self) -> None:
        """Read the jobs not shown yet (:meth:`JobPager.load_rows`)."""
        await self.pager.load_rows()

    async def shutdown(self, *, keep_renders: bool = True) -> int:
        """Close in order; the window goes last (:meth:`CloseFlow.shutdown`)."""
        return await self.closer.shutdown(keep_renders=keep_renders)

    # -- opening -------------------------------------------------------------------------
    async def open(self, *, start: bool) -> OpenReport | None:
        """Open the session, show what recovery did, then load the jobs page by page.

        A team database that cannot be opened is said so in place of the queue and tried
        again (:meth:`_wait_for_team`) until it opens or the user picks the local queue
        (``finished`` with :data:`LOCAL_QUEUE_EXIT`: the entry reopens on the local
        journal)."""
        self.bridge.connect_bus(self.session.app.bus)
        attempt = 0
        report: OpenReport | None = None
        while report is None:
            try:
                report = await self.session.open(start=start)
                break
            except KnownError as exc:
                on_team = team.is_team_session(self.session.app)
                if not (on_team and isinstance(exc, TEAM_CONNECTION_ERRORS)):
                    self.window.set_engine_state("stopped")
                    self.window.banners.show_banner("error", str(exc), key="open-failed")
                    self.session.closed = True
                    return None
                log.info("team database not opened (try %d): %s", attempt + 1, exc)
                if await self._wait_for_team(exc, attempt) == "local":
                    self.session.closed = True
                    emit(self.finished, LOCAL_QUEUE_EXIT)
                    return None
                attempt += 1
        self.window.hide_unreachable()
        self.report = report
        try:
            await self._show_opened(report)
        except KnownError as exc:
            # The journal opened but cannot be read through (a row changed outside
            # ReelQueue: "reelqueue doctor" names it): said as an open that failed, the
            # engine stopped in order, never a traceback that closes the window.
            log.warning("the journal opened but could not be read: %s", exc)
            self.timer.stop()
            self.window.set_engine_state("stopped")
            self.window.banners.show_banner("error", str(exc), key="open-failed")
            try:
                await self.session.close(keep_renders=True)
            except KnownError:
                log.warning("the session did not close in order", exc_info=True)
            return None
        return report

    async def _show_opened(self, report: OpenReport) -> None:
        on_team = team.is_team_session(self.session.app)
        self.window.set_team(on_team)
        if on_team:  # the other machines' work: followed from the ledger
            self.model.here = views.here()
            self.follower = views.ChangeFollower()
            await self.follower.start(self.session.app)
        await self.refresh_accounts()  # the banner names built-in mock accounts
        self._show_open_report(report)
        await self.refresh_batches()
        if self.engine_state is None:
            self.window.set_engine_state("paused" if report.paused else "running")
        self.bridge.attach()  # held events (the engine's state above all) arrive now
        self.timer.start()
        self.gallery.start()
        if self.session.settings.serve_api:
            await self.keeper.apply_api(at_launch=True)
        await self.load_rows()
        self.refresh_cards()
        self.refresh_status()
        self.loaded.set()

    async def _wait_for_team(self, exc: KnownError, attempt: int) -> str:
        """Show why the team database did not open and wait for the next try: "retry"
        after :func:`retry_delay` seconds or "Try again now", "local" for "Open the local
        queue"."""
        page = self.window.unreachable
        title = ("The team database refused the login" if isinstance(exc, JournalLoginRefused)
                 else "The team database's encrypted connection failed"
                 if isinstance(exc, JournalTlsRefused)
                 else "The team database cannot be reached")
        self.window.set_engine_state("stopped")
        self.window.show_unreachable(title, window_words(str(exc)))
        loop = asyncio.get_running_loop()
        pressed: asyncio.Future[str] = loop.create_future()

        def press(choice: str) -> None:
            if not pressed.done():
                pressed.set_result(choice)

        def retry() -> None:
            press("retry")

        def local() -> None:
            press("local")

        page.retryRequested.connect(retry)
        page.localRequested.connect(local)
        try:
            deadline = loop.time() + retry_delay(attempt)
            while not pressed.done():
                left = deadline - loop.time()
                if left <= 0:
                    press("retry")
                    break
                page.set_status(f"Trying again in {math.ceil(left)} s · tried "
                                f"{fmt.count(attempt + 1, 'time')}")
                await asyncio.wait({pressed}, timeout=min(1.0, left))
            if pressed.result() == "retry":
                page.set_status("Trying now…")
            return pressed.result()
        finally:
            page.retryRequested.disconnect(retry)
            page.localRequested.disconnect(local)

    def _show_open_report(self, report: OpenReport) -> None:
        recovery = report.recovery
        builtin = builtin_mock_accounts(s.account for s in self.summaries)
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
                else "Renders kept from last time:" if follow.jobs
                else "Renders left running last time:")
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
            going = follow.picked_up_going_on()
            ended = picked - going
            word = ("finished" if all(state == "COMPLETED" for state in follow.ended.values())
                    else "ended")
            if going and ended:
                tail = (f"; of the {fmt.count(picked, 'render')} picked up, "
                        f"{fmt.number(ended)} {word} and {fmt.number(going)} "
                        f"{fmt.plural(going, 'goes', 'go')} on.")
            elif going:
                tail = (f"; the {fmt.count(picked, 'render')} picked up "
                        f"{fmt.plural(picked, 'goes', 'go')} on.")
            elif picked:
                tail = (f"; the {fmt.count(picked, 'render')} picked up "
                        f"{fmt.plural(picked, 'has', 'have')} {word} (see the table).")
            else:
                tail = "."
            parts.append("The queue is paused so you can check first" + tail)
        return " ".join(p if p.endswith((".", "…", ":")) else p + "." for p in parts)

    def _update_recovery_banner(self) -> None:
        banner = self.window.banners.get("recovery")
        if banner is not None:
            banner.label.setText(self._recovery_text())

    def _resume_from_banner(self) -> None:
        self.actions.start_queue()
        self.window.banners.remove("recovery")

    async def refresh_accounts(self) -> None:
        self.summaries = await views.accounts(self.session.app)
        await self.refresh_money()
        self.refresh_cards()
        self.window.set_filter_choices(sorted(self._batch_choices().items()),
                                       self._account_choices())

    async def refresh_money(self) -> None:
        """Read the journal's money figures (application.status.money): the one source of
        the cards' dollars, read again after events (at most once a second) and every
        MONEY_REFRESH_TICKS seconds."""
        self._money_dirty = False
        if self.session.closed:
            return
        started = time.monotonic()
        self.money = await status.money(self.session.app)
        await self.figures.refresh()  # the cards' balance and limits, at the same pace
        took = time.monotonic() - started
        self._money_not_before = time.monotonic() + took * (1 / MONEY_SHARE - 1)
        self._cards_dirty = True
        self._show_not_configured()

    def _show_not_configured(self) -> None:
        """Waiting jobs pinned to an account not configured here wait for it (issue 34,
        N1): said in a banner from the journal's figures, while other jobs run too (the
        engine's Stalled banner says it only once nothing else can start)."""
        reasons = not_configured_reasons([s.account for s in self.summaries],
                                         self.money.to_go if self.money else ())
        banners = self.window.banners
        text = ("Waiting: " + "; ".join(str(r.detail) for r in reasons) + ". Add "
                + ("it" if len(reasons) == 1 else "them")
                + (", or render them on a machine of the team that has "
                   + ("it" if len(reasons) == 1 else "them")
                   if team.is_team_session(self.session.app) else "")
                + ".") if reasons else ""
        shown = banners.get("not-configured")
        if not text:
            if shown is not None:
                banners.remove("not-configured")
        elif shown is None or shown.text != text:
            banners.show_banner("warning", text, [
                ("Connect an account…", self.keeper.show_account_dialog)],
                key="not-configured")

    async def refresh_batches(self) -> None:
        batches = await views.batches(self.session.app)
        self.batches = {b.id: b.name for b in batches}
        self.window.batch_names = dict(self.batches)
        self.window.paused_batches = {b.id for b in batches if jobs.is_paused(b)}
        self.window.set_filter_choices(sorted(self._batch_choices().items()),
                                       self._account_choices())

    def _account_choices(self) -> list[tuple[str, str]]:
        """(label, account) for the filter: every account, then the removed ones that jobs
        still name, marked so (their jobs stay in reach)."""
        return ([(s.account.name, s.account.name) for s in self.summaries]
                + [(f"{name} (removed)", name) for name in removed_accounts(
                    self.model.table, self.summaries, self.money)])

    def _batch_choices(self) -> dict[int, str]:
        """Batch names for the filter, a paused one marked so."""
        paused = f" ({condition_words(Condition.PAUSED).name})"
        return {bid: name + (paused if bid in self.window.paused_batches else "")
                for bid, name in self.batches.items()}

    # -- events --------------------------------------------------------------------------
    def _on_job_event(self, event: JobEvent) -> None:
        self._status_dirty = True
        row = self.model.table.row(event.job_id)
        if row is None or row.state != event.state:
            # A job that starts, ends or is queued changes what is to go: the journal's
            # figure is read again on the next slow tick (at most once a second).
            self._cards_dirty = self._money_dirty = True
        if self.follow_up is not None and self.follow_up.observe(event):
            self._update_recovery_banner()
        self.pager.apply(event)

    def _on_account_event(self, event: AccountEvent) -> None:
        self.account_events[event.name] = event
        self._status_dirty = self._cards_dirty = self._money_dirty = True
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
            actions: list[BannerAction] = (
                [("Connect an account…", self.keeper.show_account_dialog)]
                if any(r.code in ("no_account", "not_configured") for r in event.reasons)
                else [])
            actions += self._batch_cap_actions(event)
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

    def _batch_cap_actions(self, event: EngineStateEvent) -> list[BannerAction]:
        """"Raise batch cap…" for each batch a spend cap holds (the reasons name it; an
        account's cap has its card's Cap…)."""
        accounts = {s.account.name for s in self.summaries}
        held = {r.subject for r in event.reasons if r.code == "spend_cap"} - accounts
        ids = [bid for bid, name in sorted(self.batches.items()) if name in held]
        return [("Raise batch cap…" if len(ids) == 1 else
                 f"Raise the cap of “{self.batches[bid]}”…",
                 lambda bid=bid: self.actions.ask_batch_cap(bid))  # type: ignore[misc]
                for bid in ids]

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
            self.spawn(self.pager.refresh_rows(ids), "refresh-completed")
            self._money_dirty = True
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
        if ((self._money_dirty or (self._ticks // SLOW_TICKS) % MONEY_REFRESH_TICKS == 0)
                and (self._money_reading is None or self._money_reading.done())
                and time.monotonic() >= self._money_not_before
                and self.loaded.is_set()):
            self._money_reading = self.spawn(self.refresh_money(), "money")
        self.refresh_cards(now)
        self.refresh_status(now)
        view = self.window.table
        first = view.rowAt(0)
        last = view.rowAt(view.viewport().height() - 1)
        if first >= 0 and self.model.visible_in_flight(first, last if last >= 0 else first + 40):
            view.viewport().update()
        self.batch_watch.check()
        if team.is_team_session(self.session.app):
            self._team_tick()

    def _team_tick(self) -> None:
        """A team store: other machines change the queue without telling this window's
        engine, so the team-wide figures (live renders per account) are read again every
        TEAM_REFRESH_TICKS, and an open Instances view every second; one read at a time,
        on the journal's thread."""
        if self._team_reading is not None and not self._team_reading.done():
            return
        if self.keeper.instances is not None:
            self._team_reading = self.spawn(self.keeper.refresh_instances(), "instances")
        elif (self._ticks // SLOW_TICKS) % TEAM_REFRESH_TICKS == 0:
            self._team_reading = self.spawn(self._team_refresh(), "team-refresh")

    async def _team_refresh(self) -> None:
        """The team-wide figures and the rows other machines changed or added."""
        await self.refresh_accounts()
        if self.follower is not None:
            await self.pager.follow_team(self.follower)

    def refresh_status(self, now: float | None = None) -> None:
        """The status bar: counts, rate and ETA (only while something renders) and the
        engine's word, from the same mirror the table shows."""
        self._status_dirty = False
        table = self.model.table
        self.window.set_totals(*totals_text(table, now or time.time(), self.engine_state,
                                            self.money))
        if self.closing or self.session.closed:
            return
        if self.window.paused and (self.engine_state is None
                                   or self.engine_state.state != "paused"):
            return  # starting or stopping: set_engine_state's own word stands
        self.window.set_engine_text(*engine_words(self.engine_state, table))

    def refresh_cards(self, now: float | None = None) -> None:
        self._cards_dirty = False
        app, on_team = self.session.app, team.is_team_session(self.session.app)
        cards = compose_cards(self.model.table, self.summaries, self.account_events,
                              now or time.time(), team=on_team, money=self.money,
                              keys_not_here=team.keys_not_here(
                                  app, [s.account for s in self.summaries])
                              if on_team else set(),
                              to_confirm=team.keys_to_confirm(
                                  app, [s.account for s in self.summaries]),
                              figures=self.figures.figures)
        self.window.set_shared_queue(" · ".join(text for text in (
            shared_queue_text(self.model.table, self.summaries, self.money),
            removed_accounts_text(self.model.table, self.summaries, self.money)) if text))
        for card in self.window.accounts.set_accounts(cards):
            card.capacityChanged.connect(self.actions.set_capacity)
            card.enabledChanged.connect(self.actions.set_enabled)
            card.markReady.connect(self.actions.mark_ready)
            card.dailyCapChanged.connect(self.actions.set_daily_cap)
            card.showJobs.connect(self.window.show_account)
            self.manage.connect_card(card)
            self.figures.connect_card(card)
        self.figures.notify(cards)

    # -- import ----------------------------------------------------------------------------
    def start_from_banner(self) -> None:
        self.actions.start_queue()
        self.window.banners.remove("imported")

    # -- closing -------------------------------------------------------------------------
