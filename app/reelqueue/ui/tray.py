"""When a batch finishes: its banner (what completed, failed, was cancelled or parked, with
Retry failed / Open folder / Run the demo again) and a message from the tray icon."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from typing import TYPE_CHECKING, Protocol

from PySide6.QtCore import QObject
from PySide6.QtWidgets import QSystemTrayIcon

from reelqueue.application.words import OUTCOME_UNKNOWN, job_state_words
from reelqueue.domain.states import JobState
from reelqueue.ui import format as fmt
from reelqueue.ui import theme
from reelqueue.ui.banner import BannerAction

if TYPE_CHECKING:
    from reelqueue.ui.dialogs import DialogKeeper
    from reelqueue.ui.main_window import MainWindow


class BatchCommands(Protocol):
    """The queue's commands a finished batch's banner offers (:class:`QueueActions`)."""

    def retry_failed(self) -> None: ...

    def is_demo(self, batch_name: str) -> bool: ...

    def run_demo_again(self) -> None: ...


class FinishHost(Protocol):
    """What the watch reads of the window's state (the controller): the batches' names
    as they change, and the queue's commands (made after the watch)."""

    @property
    def batches(self) -> Mapping[int, str]: ...

    @property
    def actions(self) -> BatchCommands: ...


class BatchFinishWatch:
    """Counts each batch's open jobs from one slow tick to the next; a batch whose count
    drops to zero is finished and said so once.

    Attributes:
        tray: the tray icon, made on the first message (None where there is no tray).
    """

    def __init__(self, window: MainWindow, keeper: DialogKeeper, host: FinishHost,
                 parent: QObject) -> None:
        self.window = window
        self.keeper = keeper
        self.host = host
        self.tray_parent = parent  # the tray icon's
        self.tray: QSystemTrayIcon | None = None
        self._open_by_batch: dict[int, int] = {}

    def recount(self) -> None:
        """Take the current counts as the baseline (after rows were read)."""
        stats = self.window.model.table.stats
        self._open_by_batch = dict(stats.open_by_batch.items())

    def check(self) -> None:
        current = self.window.model.table.stats.open_by_batch
        for batch_id, before in list(self._open_by_batch.items()):
            if before > 0 and current.get(batch_id, 0) == 0:
                self.finished(batch_id)
        self._open_by_batch = {b: n for b, n in current.items() if n > 0}

    def finished(self, batch_id: int) -> None:
        rows = [r for r in self.window.model.table.rows if r.batch_id == batch_id]
        codes = Counter(job_state_words(r.state, r.sub_status, r.error_label,
                                        r.provider_job_id).code for r in rows)
        done, failed = codes[JobState.COMPLETED], codes[JobState.FAILED]
        parked, unknown = codes[JobState.PARKED], codes[OUTCOME_UNKNOWN]

        def said(code: str, n: int) -> str:  # "3 completed": each state by its one name
            return f"{fmt.number(n)} {job_state_words(code).name}"

        name = self.host.batches.get(batch_id, f"batch {batch_id}")
        text = (f"Batch “{name}” finished: {said(JobState.COMPLETED, done)}, "
                f"{said(JobState.FAILED, failed)}, "
                f"{said(JobState.CANCELLED, codes[JobState.CANCELLED])}"
                + (f", {said(JobState.PARKED, parked)} (they keep their render; Retry reads "
                   "it again)" if parked else "")
                + (f", {said(OUTCOME_UNKNOWN, unknown)} (not charged twice; open the job to "
                   "resolve it)" if unknown else "") + ".")
        actions: list[BannerAction] = [("Open folder", self.keeper.open_output_folder)]
        if failed:
            actions.insert(0, ("Retry failed", self.host.actions.retry_failed))
        if self.host.actions.is_demo(name):
            actions.append(("Run the demo again", self.host.actions.run_demo_again))
        # Green only when something completed and nothing failed or waits for the user.
        kind = ("warning" if failed or parked or unknown else "success" if done else "info")
        # One "finished" banner: the newest batch's replaces an older one.
        self.window.banners.remove_family("batch:")
        self.window.banners.show_banner(kind, text, actions, key=f"batch:{batch_id}")
        if QSystemTrayIcon.isSystemTrayAvailable():
            if self.tray is None:
                self.tray = QSystemTrayIcon(theme.app_icon(), self.tray_parent)
                self.tray.show()
            self.tray.showMessage("ReelQueue", text)

    def hide(self) -> None:
        if self.tray is not None:
            self.tray.hide()
