"""Closing the window: with renders still running it asks whether to keep them for next
time or cancel them (naming those on the built-in mock, which never survive), then
closes in order (dialogs, timers, the session, the bus) and the window last."""

from __future__ import annotations

from typing import TYPE_CHECKING

from PySide6.QtWidgets import QMessageBox

from reelqueue.ui import format as fmt
from reelqueue.ui.qtcompat import emit

if TYPE_CHECKING:
    from reelqueue.ui.controller import AppController


class CloseFlow:
    """Attributes:
        ctl: the controller. close_box: the question asked (None if none was).
    """

    def __init__(self, ctl: AppController) -> None:
        self.ctl = ctl
        self.close_box: QMessageBox | None = None

    def live_renders(self) -> int:
        return sum(len(rows) for rows in self.ctl.model.table.live.values())

    def request_close(self) -> None:
        if self.ctl.closing:
            return
        live = self.live_renders()
        if self.ctl.session.closed or self.ctl.session.engine is None or not live:
            self.ctl.spawn(self.shutdown(keep_renders=True), "shutdown")
            return
        box = QMessageBox(QMessageBox.Icon.Question, "Renders are still running",
                          f"{live} render{'s are' if live != 1 else ' is'} still running at "
                          "the provider.", parent=self.ctl.window)
        builtin = set(self.ctl.session.builtin_mock_accounts(s.account for s in self.ctl.summaries))
        on_mock = sum(len(ids) for name, ids in self.ctl.model.table.live.items()
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
                self.ctl.spawn(self.shutdown(keep_renders=True), "shutdown")
            elif button is cancel:
                self.ctl.spawn(self.shutdown(keep_renders=False), "shutdown")

        box.buttonClicked.connect(chosen)
        box.setWindowModality(box.windowModality().WindowModal)
        box.open()
        self.ctl.keeper.open.append(box)
        self.close_box = box

    async def shutdown(self, *, keep_renders: bool = True) -> int:
        """Close in order; the window goes last. Returns the renders kept."""
        if self.ctl.closing:
            return 0
        self.ctl.closing = True
        self.ctl.window.set_engine_state("stopping")
        self.ctl.timer.stop()
        for dialog in list(self.ctl.keeper.open):
            if hasattr(dialog, "stop_timers"):
                dialog.stop_timers()
            dialog.close()
        self.ctl.window.stop_timers()
        self.ctl.thumbnails.close()
        kept = await self.ctl.session.close(keep_renders=keep_renders)
        self.ctl.bridge.disconnect_bus()
        self.ctl.batch_watch.hide()
        self.ctl.window.allow_close = True
        self.ctl.window.close()
        emit(self.ctl.finished, 0)
        return kept
