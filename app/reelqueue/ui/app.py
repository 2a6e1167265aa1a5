"""Starting and ending the window: ``run_app(ctx, start=...)`` returns the exit code.

The Qt loop runs asyncio through qasync. PySide6 is imported before qasync (with PyQt
installed, qasync could otherwise bind to it). Tasks are created inside the main coroutine,
never in widget constructors before the loop runs. ``sys.excepthook`` is replaced while the
window runs: exceptions from slots and tasks are logged with their traceback and shown in
an error banner, never lost.
"""

from __future__ import annotations

import asyncio
import logging
import os
import sys
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any

os.environ.setdefault("QT_API", "pyside6")

from PySide6.QtCore import QEvent, Qt
from PySide6.QtWidgets import QApplication

from reelqueue.application.compose import journal_mode
from reelqueue.application.context import AppContext
from reelqueue.ui import theme
from reelqueue.ui.settings import Settings, load_settings
from reelqueue.ui.unreachable import LOCAL_QUEUE_EXIT

if TYPE_CHECKING:
    from reelqueue.application.remote import ApiStarter

log = logging.getLogger(__name__)

ExceptHook = Callable[[type[BaseException], BaseException, TracebackType | None], Any]


def install_excepthook(show: Callable[[BaseException], None]) -> Callable[[], None]:
    """Route uncaught exceptions to the log and to ``show``; return the undo function."""
    previous = sys.excepthook

    def hook(kind: type[BaseException], exc: BaseException, tb: TracebackType | None) -> None:
        if issubclass(kind, KeyboardInterrupt):
            previous(kind, exc, tb)
            return
        log.error("uncaught exception", exc_info=(kind, exc, tb))
        try:
            show(exc)
        except Exception:  # the banner itself failed: the log has it anyway
            log.exception("could not show the error banner")

    sys.excepthook = hook

    def undo() -> None:
        sys.excepthook = previous

    return undo


def make_application(theme_choice: str = "system") -> QApplication:
    if QApplication.instance() is None:  # only before the application exists
        QApplication.setHighDpiScaleFactorRoundingPolicy(
            Qt.HighDpiScaleFactorRoundingPolicy.PassThrough)
    app = QApplication.instance()
    if not isinstance(app, QApplication):
        app = QApplication(sys.argv[:1])
    app.setApplicationName("ReelQueue")
    app.setOrganizationName("ReelQueue")
    app.setApplicationDisplayName("ReelQueue")
    app.setQuitOnLastWindowClosed(False)  # the controller ends the loop, in order
    theme.install(app, theme_choice)
    hints = app.styleHints()
    hints.colorSchemeChanged.connect(
        lambda _scheme: theme.apply_theme(app, "system") if theme_choice == "system" else None)
    return app


def _setup_logging(ctx: AppContext) -> None:
    if logging.getLogger().handlers:
        return
    from reelqueue.application.logs import setup_logging

    setup_logging(ctx.data_dir, verbose=False)


def window_context(ctx: AppContext, settings: Settings) -> AppContext:
    """``ctx`` on the team queue of Settings -> "Team queue" when neither ``--store`` nor
    REELQUEUE_STORE named a journal (they win over the setting)."""
    if not journal_mode(ctx).shared and settings.team_store:
        return replace(ctx, store_url=settings.team_store)
    return ctx


def run_app(ctx: AppContext, *, start: bool = True, open_sheet: Path | None = None,
            api_starter: ApiStarter | None = None) -> int:
    """Open the window on ``ctx``'s journal; ``start`` hands out work at once (else the
    queue opens paused); ``api_starter`` serves the HTTP API when Settings ask for it
    (given by :mod:`reelqueue.entry`). Returns when the window is closed and the engine
    stopped."""
    from reelqueue.ui.qtcompat import QEventLoop

    _setup_logging(ctx)
    settings = load_settings(ctx.data_dir)
    ctx = window_context(ctx, settings)
    app = make_application(settings.theme)
    loop = QEventLoop(app)
    asyncio.set_event_loop(loop)
    try:
        code = int(loop.run_until_complete(main(ctx, settings, start=start,
                                                open_sheet=open_sheet,
                                                api_starter=api_starter)))
        if code == LOCAL_QUEUE_EXIT and journal_mode(ctx).shared:
            # "Open the local queue" on an unreachable team database: this launch only.
            log.info("opening the local queue instead of the team database")
            code = int(loop.run_until_complete(main(replace(ctx, store_url=None), settings,
                                                    start=start, open_sheet=open_sheet,
                                                    api_starter=api_starter)))
        return code
    finally:
        loop.close()
        asyncio.set_event_loop(None)


async def main(ctx: AppContext, settings: Any, *, start: bool,
               open_sheet: Path | None = None, api_starter: ApiStarter | None = None) -> int:
    from reelqueue.ui.controller import AppController
    from reelqueue.ui.main_window import MainWindow
    from reelqueue.ui.session import WindowSession

    window = MainWindow()
    session = WindowSession(ctx, settings, api_starter=api_starter)
    controller = AppController(window, session)
    undo = install_excepthook(controller.show_exception)
    done: asyncio.Future[int] = asyncio.get_running_loop().create_future()

    def finish(code: int) -> None:
        if not done.done():
            done.set_result(code)

    controller.finished.connect(finish)
    try:
        window.show()
        report = await controller.open(start=start)
        if report is not None and open_sheet is not None:
            controller.keeper.open_import(open_sheet)  # "Open with ReelQueue" on a sheet
        code = await done
        if code == LOCAL_QUEUE_EXIT:
            return code
        return 2 if report is None else code  # None: the journal could not be opened
    finally:
        undo()
        if not session.closed:
            await session.close(keep_renders=True)
        window.deleteLater()  # on this thread, not whenever (and wherever) GC gets to it
        QApplication.sendPostedEvents(None, QEvent.Type.DeferredDelete)
