"""The window on a journal that opens but whose rows were changed from outside (a JSON
column that is not JSON): it says so in its error banner and stops the engine in order;
it used to end with a traceback from its first money read (docs/security.md)."""

from __future__ import annotations

from pathlib import Path

import pytest

from reelqueue.cli.context import CliContext
from reelqueue.ui.controller import AppController
from reelqueue.ui.main_window import MainWindow
from reelqueue.ui.session import WindowSession
from reelqueue.ui.settings import Settings
from tests.gui.conftest import WindowHarness, on_qloop
from tests.store.test_damaged_json import journal


@pytest.mark.expect_warnings("the journal opened but could not be read")
@on_qloop
async def test_a_journal_with_a_damaged_row_is_said_in_a_banner_not_a_traceback(
        app_ctx: CliContext, windows: WindowHarness, tmp_path: Path) -> None:
    journal(app_ctx.data_dir)
    window = MainWindow()
    controller = AppController(window, WindowSession(app_ctx, Settings(theme="light")))
    windows.opened.append(controller)
    window.show()
    assert await controller.open(start=True) is None
    (banner,) = [b for b in window.banners.banners() if b.kind == "error"]
    assert banner.text.startswith("The journal (")
    assert "holds a value that is not JSON where JSON belongs" in banner.text
    assert "'reelqueue doctor' names the rows" in banner.text
    assert controller.session.closed, "the engine was stopped in order"
    assert not controller.timer.isActive()
