"""The controller's part for the results gallery: reads the chosen batch's tiles through
:mod:`reelqueue.application.gallery`, keeps them current while jobs change (at most once a
second, only while the gallery is shown) and runs its export.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from PySide6.QtCore import QObject, QTimer

from reelqueue.application import cut, gallery, review
from reelqueue.application.events import JobEvent
from reelqueue.application.review_pass import Ask
from reelqueue.domain.errors import KnownError
from reelqueue.ui import files

if TYPE_CHECKING:
    from reelqueue.ui.bridge import EngineBridge
    from reelqueue.ui.gallery import GalleryView
    from reelqueue.ui.main_window import MainWindow
    from reelqueue.ui.session import Spawn, WindowSession

log = logging.getLogger(__name__)

REFRESH_MS = 1000
REVIEW_REFRESH_TICKS = 5


class GalleryState(Protocol):
    """What the gallery reads of the window's state as it changes (the controller)."""

    @property
    def closing(self) -> bool: ...

    @property
    def batches(self) -> dict[int, str]: ...


class GalleryPart(QObject):
    """Attributes: view: the gallery page. loads: tile reads done (for tests).
    cuts_running: cuts being made; last_cut: the last one written."""

    def __init__(self, session: WindowSession, window: MainWindow, bridge: EngineBridge,
                 spawn: Spawn, state: GalleryState, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.session = session
        self.window = window
        self.spawn = spawn
        self.state = state
        self.view: GalleryView = window.gallery
        self.loads = 0
        self.cuts_running = 0
        self.last_cut: cut.CutResult | None = None  # the last cut written (for tests)
        self._dirty = True  # nothing read yet: read when first shown
        self._reading: asyncio.Task[Any] | None = None
        # Started by :meth:`start` once the queue is open, stopped with the window: ticking
        # from the controller's making, it outlived a window closed on "Open the local
        # queue" and read the deleted batch chooser twice a second (N2).
        self.timer = QTimer(self)
        self.timer.setObjectName("gallery-refresh")
        self.timer.setInterval(REFRESH_MS)
        self.timer.timeout.connect(self._tick)
        window.destroyed.connect(self.timer.stop)
        view = self.view
        view.set_cache_dir(session.ctx.data_dir / "thumbnails" / "gallery")
        view.batchChosen.connect(self._chosen)
        view.shown.connect(self._shown)
        view.exportRequested.connect(
            lambda batch, ids, folder: spawn(self.export(batch, ids, folder), "export"))
        view.cutRequested.connect(lambda batch, ids: spawn(self.cut(batch, ids), "cut"))
        view.noOpener.connect(window.no_file_opener)
        bridge.jobEvent.connect(self._on_job_event)
        # The review page (issue 35 item 2): its takes read, its asks written one at a time.
        self.review_loads = 0
        self._review_ticks = 0
        self._review_reading: asyncio.Task[Any] | None = None
        self._asks: list[Ask] = []
        self._writing: asyncio.Task[Any] | None = None
        view.reviewShown.connect(self.load_review)
        view.review.decisionAsked.connect(self._asked)
        view.review.rerollAsked.connect(
            lambda batch: spawn(self.reroll(batch), "reroll"))
        view.review.openAsked.connect(self._open)

    def start(self) -> None:
        """Keep the gallery current (the queue is open)."""
        self.timer.start()

    def _on_job_event(self, _event: JobEvent) -> None:
        self._dirty = True

    def _chosen(self, batch_id: int) -> None:
        """A batch chosen: read now if the gallery is shown, else when it is (a window
        opened on a 100,000-job batch read every tile at start, hidden: +200 MB and
        seconds of the GUI thread while the table's pages loaded)."""
        if self.view.isVisible():
            self.load(batch_id)
        else:
            self._dirty = True

    def _shown(self) -> None:
        """Read the tiles again if something changed since the last read."""
        if self._dirty:
            batch = self.view.current_batch()
            if batch is not None:
                self._dirty = False
                self.load(batch)
                if self.view.reviewing:
                    self.load_review(batch)

    def _tick(self) -> None:
        if self.state.closing:
            self.timer.stop()
            return
        self.view.set_batches(sorted(self.state.batches.items()))
        if self.view.isVisible():
            self._shown()
            # Another reviewer's decisions are no engine event: the review page reads its
            # takes again every few seconds while it shows (a change made on a version
            # not shown is refused anyway: "changed by X meanwhile").
            self._review_ticks += 1
            batch = self.view.current_batch()
            if (self.view.reviewing and batch is not None
                    and self._review_ticks % REVIEW_REFRESH_TICKS == 0):
                self.load_review(batch)

    def load(self, batch_id: int) -> None:
        """Read the batch's tiles (one read at a time; the last one asked wins)."""
        if self.session.closed:
            return
        if self._reading is not None and not self._reading.done():
            self._dirty = True  # read again on the next tick
            return
        self._reading = self.spawn(self._load(batch_id), "gallery")

    async def _load(self, batch_id: int) -> None:
        items = await gallery.gallery_items(self.session.app, batch_id)
        self.loads += 1
        self.view.set_items(batch_id, items)

    # -- review (issue 35 item 2) ---------------------------------------------------------
    def load_review(self, batch_id: int) -> None:
        """Read the batch's takes for the review page (one read at a time)."""
        if self.session.closed:
            return
        if self._review_reading is not None and not self._review_reading.done():
            self._dirty = True  # read again on the next tick
            return
        self._review_reading = self.spawn(self._load_review(batch_id), "review")

    async def _load_review(self, batch_id: int) -> None:
        try:
            takes = await review.batch_takes(self.session.app, batch_id)
        except KnownError as exc:
            self.view.review.refused(str(exc))
            return
        self.review_loads += 1
        if self._asks or (self._writing is not None and not self._writing.done()):
            return  # a change is on its way: the next read shows it
        self.view.review.set_takes(batch_id, list(takes.groups),
                                   review.local_videos(self.session.app, takes),
                                   takes.progress_words)

    def _asked(self, ask: Ask) -> None:
        """Changes are written in the order asked, one at a time: a key pressed again
        before the first change is back names the version that change wrote."""
        self._asks.append(ask)
        if self._writing is None or self._writing.done():
            self._writing = self.spawn(self._write_asks(), "review")

    async def _write_asks(self) -> None:
        page = self.view.review
        while self._asks:
            ask = self._asks.pop(0)
            known = page.review.version_of(ask.job_id)
            seen = ask.seen_version if ask.undo or known is None else known
            try:
                done = await review.set_decision(
                    self.session.app, ask.job_id, ask.decision, rating=ask.rating,
                    seen_version=seen)
            except KnownError as exc:  # changed meanwhile, a failed take, gone
                page.refused(str(exc))
                self._asks.clear()
                batch = page.batch_id
                if batch is not None:
                    await self._load_review(batch)
                return
            page.written(done, undo=ask.undo)

    async def reroll(self, batch_id: int, *, confirmed: float | None = None,
                     same_request: bool = False) -> None:
        """Re-roll the batch's rejected rows: priced first (a banner says it and its button
        pays), then written with that amount as the re-roll's cap. Rows whose provider
        takes no seed are said, and rendered again as they are only by their own button."""
        banners = self.window.banners
        app = self.session.app
        try:
            if confirmed is None:
                plan = await review.reroll_plan(app, batch_id)
                again = (await review.reroll_plan(app, batch_id, same_request=True)
                         if plan.seedless else None)
                buttons: list[tuple[str, Callable[[], object]]] = []
                if plan.specs:
                    buttons.append((f"Re-roll (est. ${plan.usd:.2f})", lambda: self.spawn(
                        self.reroll(batch_id, confirmed=plan.usd), "reroll")))
                if again is not None and again.specs:
                    buttons.append((
                        f"Also the same request again (est. ${again.usd:.2f})",
                        lambda: self.spawn(self.reroll(batch_id, confirmed=again.usd,
                                                       same_request=True), "reroll")))
                banners.show_banner("warning" if buttons else "info",
                                    f"Re-roll: {plan.words}", buttons, key="reroll")
                return
            done = await review.reroll(app, batch_id, confirmed_usd=confirmed,
                                       same_request=same_request)
        except KnownError as exc:
            banners.show_banner("warning", f"Re-roll: {exc}", key="reroll")
            return
        banners.show_banner("success", f"Re-roll: {len(done.job_ids)} new takes queued, "
                            f"spend cap ${done.cap:.2f}.", key="reroll")
        self.load_review(batch_id)

    async def export(self, batch_id: int, job_ids: list[int], folder: Path) -> None:
        banners = self.window.banners
        try:
            done = await gallery.export_selection(self.session.app, batch_id, job_ids,
                                                  folder)
        except KnownError as exc:
            banners.show_banner("warning", f"Export: {exc}", key="gallery-export")
            return
        banners.show_banner("success", f"Exported to {folder}: {done.summary()}.",
                            [("Open folder", lambda: self._open(folder))],
                            key="gallery-export")

    async def cut(self, batch_id: int, job_ids: list[int]) -> None:
        """Cut the batch with these picks (application/cut.py), its files checked and
        written on a worker thread; how the MP4 is made is said before it starts."""
        banners = self.window.banners
        app = self.session.app
        self.cuts_running += 1
        try:
            batch, rows = await cut.batch_rows(app, str(batch_id),
                                                [str(job_id) for job_id in job_ids])
            plan = await asyncio.to_thread(cut.plan_cut, batch, rows, app.ctx.videos_dir,
                                           cut.CutOptions())
            banners.show_banner("info", f"Cutting {plan.picks} picks and {plan.gaps} gaps "
                                f"({plan.duration:.0f} s). {plan.method_words()}", key="cut")
            result = await asyncio.to_thread(cut.write_cut, plan)
        except KnownError as exc:
            banners.show_banner("warning", f"Cut: {exc}", key="cut")
            return
        finally:
            self.cuts_running -= 1
        notes = " ".join(f"{line}." for line in result.notes + result.missing)
        folder = result.mp4.parent
        banners.show_banner("success", f"{result.summary()} {notes}".strip(),
                            [("Open folder", lambda: self._open(folder))], key="cut")
        self.last_cut = result

    def _open(self, folder: Path) -> None:
        if not files.open_path(folder):
            self.window.no_file_opener(folder)

    def stop(self) -> None:
        self.timer.stop()
        self.view.stop()
