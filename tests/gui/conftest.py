"""GUI test fixtures: a themed QApplication, a qasync loop the test drives, the window.

pytest-qt has no qasync support, so tests that need the engine create a
``qasync.QEventLoop`` and run coroutines on it with :func:`run` (the Qt event loop turns
while they wait, so widgets, timers and signals work). Everything is torn down: the
session closes in order, windows are deleted, leftover tasks cancelled, the loop closed.
"""

from __future__ import annotations

import asyncio
import os
import shutil
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import keyring
import pytest

os.environ.setdefault("QT_API", "pyside6")

import qasync  # noqa: E402
from PySide6.QtWidgets import QApplication, QWidget  # noqa: E402

from reelqueue.cli.context import CliContext  # noqa: E402
from reelqueue.credentials import MemoryKeyring  # noqa: E402
from reelqueue.ui import theme  # noqa: E402
from reelqueue.ui.controller import AppController  # noqa: E402
from reelqueue.ui.main_window import MainWindow  # noqa: E402
from reelqueue.ui.session import EngineSession  # noqa: E402
from reelqueue.ui.settings import Settings  # noqa: E402

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
def themed_app(qapp: QApplication) -> QApplication:
    theme.install(qapp, "light")
    qapp.setQuitOnLastWindowClosed(False)
    return qapp


@pytest.fixture
def qloop(themed_app: QApplication) -> Iterator[qasync.QEventLoop]:
    loop = qasync.QEventLoop(themed_app)
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


async def pause(seconds: float) -> None:
    await asyncio.sleep(seconds)


@pytest.fixture
def memory_keyring() -> Iterator[MemoryKeyring]:
    previous = keyring.get_keyring()
    backend = MemoryKeyring()
    keyring.set_keyring(backend)
    yield backend
    keyring.set_keyring(previous)


@pytest.fixture
def app_ctx(tmp_path: Path) -> CliContext:
    return CliContext(data_dir=tmp_path / "data", videos_dir=tmp_path / "videos")


class WindowHarness:
    """Opens windows on a context and closes them all at teardown."""

    def __init__(self, loop: qasync.QEventLoop) -> None:
        self.loop = loop
        self.opened: list[AppController] = []

    def open(self, ctx: CliContext, *, start: bool = True,
             settings: Settings | None = None, wait_loaded: bool = True) -> AppController:
        window = MainWindow()
        session = EngineSession(ctx, settings or Settings(theme="light"))
        controller = AppController(window, session)
        self.opened.append(controller)
        window.show()
        run(self.loop, controller.open(start=start))
        if wait_loaded:
            run(self.loop, controller.loaded.wait())
        return controller

    def close(self, controller: AppController, *, keep_renders: bool = True) -> int:
        kept = run(self.loop, controller.shutdown(keep_renders=keep_renders))
        self._dispose(controller)
        return int(kept)

    def _dispose(self, controller: AppController) -> None:
        window = controller.window
        window.allow_close = True
        window.close()
        window.deleteLater()
        QApplication.processEvents()

    def close_all(self) -> None:
        for controller in self.opened:
            if not controller.closing:
                run(self.loop, controller.shutdown(keep_renders=True))
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
    QApplication.processEvents()


def save_screenshot(widget: QWidget, name: str) -> Path:
    """Save ``widget`` as artifacts/screenshots/NAME.png and copy it to docs/screenshots."""
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    DOCS_SHOTS.mkdir(parents=True, exist_ok=True)
    target = ARTIFACTS / f"{name}.png"
    assert widget.grab().save(str(target)), f"could not save {target}"
    shutil.copyfile(target, DOCS_SHOTS / f"{name}.png")
    return target
