"""The controller's part for the results gallery: reads the chosen batch's tiles through
:mod:`reelqueue.application.gallery`, keeps them current while jobs change (at most once a
second, only while the gallery is shown) and runs its export.
"""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from PySide6.QtCore import QObject, QTimer

from reelqueue.application import cut, gallery
from reelqueue.application.events import JobEvent
from reelqueue.domain.errors import KnownError
from reelqueue.ui import files

if TYPE_CHECKING:
    from reelqueue.ui.bridge import EngineBridge
    from reelqueue.ui.gallery import GalleryView
    from reelqueue.ui.main_window import MainWindow
    from reelqueue.ui.session import EngineSession, Spawn

log = logging.getLogger(__name__)

REFRESH_MS = 1000


class GalleryState(Protocol):
    """What the gallery reads of the window's state as it changes (the controller)."""

    @property
    def closing(self) -> bool: ...

    @property
    def batches(self) -> dict[int, str]: ...


class GalleryPart(QObject):
    """Attributes: view: the gallery page. loads: tile reads done (for tests).
    cuts_running: cuts being made; last_cut: the last one written."""

    def __init__(self, session: EngineSession, window: MainWindow, bridge: EngineBridge,
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

    def _tick(self) -> None:
        if self.state.closing:
            self.timer.stop()
            return
        self.view.set_batches(sorted(self.state.batches.items()))
        if self.view.isVisible():
            self._shown()

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
