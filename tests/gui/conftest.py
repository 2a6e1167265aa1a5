"""GUI test fixtures: a themed QApplication, a qasync loop the test drives, the window.

pytest-qt has no qasync support, so tests that need the engine create a
``qasync.QEventLoop`` and run one coroutine per test on it with :func:`run` (the Qt event
loop turns while it waits, so widgets, timers and signals work). One coroutine for the
whole scenario matters: qasync processes Qt events once more after
``run_until_complete`` returns, outside any running loop, and an engine task stepped
there would find no loop. Everything is torn down: the session closes in order, windows
are deleted, leftover tasks cancelled, the loop closed.
"""

from __future__ import annotations

import asyncio
import gc
import inspect
import os
import shutil
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

os.environ.setdefault("QT_API", "pyside6")

import qasync
from PySide6.QtCore import QEvent, QSettings
from PySide6.QtWidgets import QApplication, QWidget

from reelqueue.cli.context import CliContext
from reelqueue.credentials import MemoryKeyring
from reelqueue.providers.registry import ProviderRegistry
from reelqueue.ui import theme
from reelqueue.ui.controller import AppController
from reelqueue.ui.main_window import MainWindow, placement_store
from reelqueue.ui.qtcompat import QEventLoop
from reelqueue.ui.session import WindowSession
from reelqueue.ui.settings import Settings

# Before pytest-qt makes the QApplication: the smallest screen the window must fit
# (the offscreen platform's default is 800x800).
# (1920x1080 at 150 % is the same logical size; tests/gui/test_layout.py starts windows
# on both real configurations in a child process.)
SCREEN_CONFIG = Path(__file__).with_name("screen_1280x720.json")
if os.environ.get("QT_QPA_PLATFORM") == "offscreen":
    os.environ["QT_QPA_PLATFORM"] = f"offscreen:configfile={SCREEN_CONFIG}"

REPO = Path(__file__).resolve().parents[2]
ARTIFACTS = REPO / "artifacts" / "screenshots"
DOCS_SHOTS = REPO / "docs" / "screenshots"
OFFSCREEN_NOISE = "This plugin does not support propagateSizeHints"


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    here = Path(__file__).parent
    for item in items:
        if here in Path(str(item.fspath)).parents:
            item.add_marker(pytest.mark.gui)
            # The offscreen platform says this for every top-level window; it is not ours.
            item.add_marker(pytest.mark.qt_log_ignore(OFFSCREEN_NOISE))


@pytest.fixture(scope="session")
def themed_app(qapp: QApplication, tmp_path_factory: pytest.TempPathFactory) -> QApplication:
    # The window remembers its place in the user's QSettings: never the tester's own.
    QSettings.setPath(QSettings.Format.IniFormat, QSettings.Scope.UserScope,
                      str(tmp_path_factory.mktemp("qsettings")))
    theme.install(qapp, "light")
    qapp.setQuitOnLastWindowClosed(False)
    return qapp


@pytest.fixture(autouse=True)
def fresh_placement(themed_app: QApplication) -> Iterator[None]:
    """Each test starts with no remembered window place or card mode."""
    placement_store().clear()
    yield
    placement_store().clear()


@pytest.fixture
def qloop(themed_app: QApplication) -> Iterator[qasync.QEventLoop]:
    loop = QEventLoop(themed_app)
    asyncio.set_event_loop(loop)
    yield loop
    pending = [task for task in asyncio.all_tasks(loop) if not task.done()]
    for task in pending:
        task.cancel()
    if pending:
        loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
    loop.close()
    asyncio.set_event_loop(None)


def run(loop: qasync.QEventLoop, coro: Awaitable[Any], timeout: float = 30.0) -> Any:
    """Run ``coro`` on the qasync loop (Qt events are processed meanwhile)."""
    return loop.run_until_complete(asyncio.wait_for(coro, timeout))


async def until(predicate: Callable[[], object], timeout: float = 30.0,
                step: float = 0.05) -> None:
    deadline = asyncio.get_running_loop().time() + timeout
    while not predicate():
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError(f"condition not met within {timeout} s")
        await asyncio.sleep(step)



@pytest.fixture
def app_ctx(tmp_path: Path) -> CliContext:
    return CliContext(data_dir=tmp_path / "data", videos_dir=tmp_path / "videos")


class WindowHarness:
    """Opens windows on a context and closes them all at teardown."""

    def __init__(self, loop: qasync.QEventLoop) -> None:
        self.loop = loop
        self.opened: list[AppController] = []

    async def open(self, ctx: CliContext, *, start: bool = True,
                   settings: Settings | None = None,
                   providers: ProviderRegistry | None = None,
                   api_starter: Any = None) -> AppController:
        window = MainWindow()
        session = WindowSession(ctx, settings or Settings(theme="light"), providers=providers,
                                api_starter=api_starter)
        controller = AppController(window, session)
        self.opened.append(controller)
        window.show()
        await controller.open(start=start)
        await controller.loaded.wait()
        return controller

    async def close(self, controller: AppController, *, keep_renders: bool = True) -> int:
        kept = await controller.shutdown(keep_renders=keep_renders)
        self._dispose(controller)
        self.opened.remove(controller)
        return int(kept)

    def _dispose(self, controller: AppController) -> None:
        window = controller.window
        window.allow_close = True
        window.close()
        window.deleteLater()
        # Delete now, on this thread: left to the garbage collector, the window could be
        # destroyed on the journal thread ("Timers cannot be stopped from another thread").
        QApplication.sendPostedEvents(None, QEvent.Type.DeferredDelete)
        QApplication.processEvents()

    async def _shutdown_all(self) -> None:
        for controller in self.opened:
            if not controller.closing:
                await controller.shutdown(keep_renders=True)
            elif not controller.session.closed:
                await controller.session.close(keep_renders=True)

    def close_all(self) -> None:
        run(self.loop, self._shutdown_all())
        for controller in self.opened:
            self._dispose(controller)
        self.opened.clear()


@pytest.fixture
def windows(qloop: qasync.QEventLoop, memory_keyring: MemoryKeyring) -> Iterator[WindowHarness]:
    harness = WindowHarness(qloop)
    yield harness
    harness.close_all()
    for widget in QApplication.topLevelWidgets():
        if isinstance(widget, QWidget) and widget.isVisible():
            widget.close()
        widget.deleteLater()
    QApplication.sendPostedEvents(None, QEvent.Type.DeferredDelete)
    QApplication.processEvents()
    gc.collect()


def save_screenshot(widget: QWidget, name: str) -> Path:
    """Save ``widget`` as artifacts/screenshots/NAME.png; copy it to docs/screenshots only
    when REELQUEUE_UPDATE_DOCS_SCREENSHOTS=1 (a test run must not change tracked files:
    the docs' pictures are taken on purpose, under a real X server, and looked at)."""
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    target = ARTIFACTS / f"{name}.png"
    assert widget.grab().save(str(target)), f"could not save {target}"
    if os.environ.get("REELQUEUE_UPDATE_DOCS_SCREENSHOTS") == "1":
        DOCS_SHOTS.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(target, DOCS_SHOTS / f"{name}.png")
    return target


def on_qloop(scenario: Callable[..., Awaitable[None]]) -> Callable[..., None]:
    """Run an ``async def`` test as one coroutine on the ``windows`` fixture's qasync loop
    (a plain function to pytest, so pytest-asyncio leaves it alone)."""

    async def scenario_then_close(*args: Any, **kwargs: Any) -> None:
        try:
            await scenario(*args, **kwargs)
        finally:  # close in the same coroutine: nothing may run between the two
            await kwargs["windows"]._shutdown_all()

    def test(*args: Any, **kwargs: Any) -> None:
        run(kwargs["windows"].loop, scenario_then_close(*args, **kwargs), timeout=240)

    test.__name__ = scenario.__name__
    test.__doc__ = scenario.__doc__
    test.__signature__ = inspect.signature(scenario)  # type: ignore[attr-defined]
    return test
