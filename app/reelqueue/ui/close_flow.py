"""Closing the window: with renders still running it asks whether to keep them for next
time or cancel them (naming those on the built-in mock, which never survive), then
closes in order (dialogs, timers, the session, the bus) and the window last."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Protocol

from PySide6.QtWidgets import QMessageBox

from reelqueue.application.builtin_mock import builtin_mock_accounts
from reelqueue.ui import format as fmt

if TYPE_CHECKING:
    from PySide6.QtCore import QTimer

    from reelqueue.application.views import AccountSummary
    from reelqueue.ui.bridge import EngineBridge
    from reelqueue.ui.dialogs import DialogKeeper
    from reelqueue.ui.main_window import MainWindow
    from reelqueue.ui.session import Spawn, WindowSession
    from reelqueue.ui.thumbnails import Thumbnailer
    from reelqueue.ui.tray import BatchFinishWatch


class CloseState(Protocol):
    """The window's state closing reads and sets (the controller): ``closing`` is set
    once the shutdown began; ``summaries`` name the accounts (the built-in mock's)."""

    closing: bool

    @property
    def summaries(self) -> Sequence[AccountSummary]: ...


class CloseFlow:
    """Attributes:
        close_box: the question asked (None if none was).

    ``finish`` is called with the exit code once everything is closed (the controller's
    ``finished`` signal)."""

    def __init__(self, session: WindowSession, window: MainWindow, keeper: DialogKeeper,
                 thumbnails: Thumbnailer, bridge: EngineBridge,
                 batch_watch: BatchFinishWatch, timer: QTimer, spawn: Spawn,
                 state: CloseState, finish: Callable[[int], None]) -> None:
        self.session = session
        self.window = window
        self.keeper = keeper
        self.thumbnails = thumbnails
        self.bridge = bridge
        self.batch_watch = batch_watch
        self.timer = timer
        self.spawn = spawn
        self.state = state
        self.finish = finish
        self.close_box: QMessageBox | None = None

    def live_renders(self) -> int:
        return sum(len(rows) for rows in self.window.model.table.live.values())

    def request_close(self) -> None:
        if self.state.closing:
            return
        live = self.live_renders()
        if self.session.closed or self.session.app.engine is None or not live:
            self.spawn(self.shutdown(keep_renders=True), "shutdown")
            return
        box = QMessageBox(QMessageBox.Icon.Question, "Renders are still running",
                          f"{live} render{'s are' if live != 1 else ' is'} still running at "
                          "the provider.", parent=self.window)
        builtin = set(builtin_mock_accounts(s.account for s in self.state.summaries))
        on_mock = sum(len(ids) for name, ids in self.window.model.table.live.items()
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
                        "rendered again next time (the mock is not a real provider: nothing "
                        "is charged; its dollar figures are practice prices).")
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
        self.keeper.open.append(box)
        self.close_box = box

    async def shutdown(self, *, keep_renders: bool = True) -> int:
        """Close in order; the window goes last. Returns the renders kept."""
        if self.state.closing:
            return 0
        self.state.closing = True
        self.window.set_engine_state("stopping")
        self.timer.stop()
        for dialog in list(self.keeper.open):
            if hasattr(dialog, "stop_timers"):
                dialog.stop_timers()
            dialog.close()
        self.window.stop_timers()
        self.thumbnails.close()
        kept = await self.session.close(keep_renders=keep_renders)
        self.bridge.disconnect_bus()
        self.batch_watch.hide()
        self.window.allow_close = True
        self.window.close()
        self.finish(0)
        return kept
