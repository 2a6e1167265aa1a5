"""Issue 13 item 11 and 10: plain words where the user reads them.

Provider transport failures without class names, a content-policy hint that does not ask
to edit a read-only prompt, one word ("paused") in the window and the CLI, Start with no
account says what to do, "Open folder" without a file opener says so, and the export
dialog opens where the videos are.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import httpx2
import pytest
from PySide6.QtCore import QObject, QUrl, Slot
from PySide6.QtGui import QDesktopServices
from PySide6.QtWidgets import QApplication, QFileDialog

from reelqueue.application import imports
from reelqueue.domain.errors import HINTS, ErrorLabel
from reelqueue.providers.httpx_session import transport_error
from reelqueue.resources import resource
from reelqueue.ui.accounts_view import AccountCardData
from reelqueue.ui.main_window import MainWindow
from tests.gui.conftest import WindowHarness, on_qloop, until

CLI = [sys.executable, "-m", "reelqueue"]


@pytest.mark.parametrize("exc", [
    httpx2.ConnectError("[Errno 111] Connection refused"),
    httpx2.ConnectTimeout("timed out"), httpx2.ReadTimeout("timed out"),
    httpx2.ReadError("reset"), httpx2.RemoteProtocolError("Server disconnected"),
    httpx2.WriteError("broken pipe"),
])
def test_transport_failures_in_plain_words(exc: httpx2.HTTPError) -> None:
    text = str(transport_error(exc, during_create=False))
    assert type(exc).__name__ not in text and "Error" not in text
    assert "provider" in text and text[0].isupper()


def test_content_policy_hint_does_not_ask_to_edit_the_read_only_prompt() -> None:
    hint = HINTS[ErrorLabel.CONTENT_POLICY]
    assert "Edit the row" not in hint
    assert "sheet" in hint and "import" in hint


def test_the_cli_says_paused_like_the_window(tmp_path: Path) -> None:
    def rq(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([*CLI, "--data-dir", str(tmp_path / "data"), "--videos-dir",
                               str(tmp_path / "videos"), *args], capture_output=True,
                              text=True, timeout=120, check=False)

    assert rq("accounts", "add", "m1", "--provider", "mock", "--no-check").returncode == 0
    paused = rq("accounts", "set", "m1", "--pause")
    assert paused.returncode == 0, paused.stderr
    for out in (paused.stdout, rq("accounts", "list").stdout, rq("status").stdout):
        assert "paused" in out and "disabled" not in out, out
    resumed = rq("accounts", "set", "m1", "--resume")
    assert resumed.returncode == 0 and "paused" not in resumed.stdout


def test_start_with_no_account_says_what_to_do(themed_app: QApplication) -> None:
    window = MainWindow()
    started: list[bool] = []
    window.startRequested.connect(lambda: started.append(True))
    window.show()
    window.set_engine_state("paused")
    try:
        window.start_action.trigger()
        banner = window.banners.get("hint:start")
        assert banner is not None and "Connect a provider account" in banner.text
        assert started == []  # nothing to hand work to: not started behind the user's back
        window.accounts.set_accounts([AccountCardData(
            name="m1", provider_title="Built-in mock", status="ready", enabled=True,
            capacity=2, live=0)])
        window.start_action.trigger()
        assert started == [True]
    finally:
        window.allow_close = True
        window.close()
        window.deleteLater()


class FileUrls(QObject):
    """Stands in for a file manager: records the file URLs it is asked to open."""

    def __init__(self) -> None:
        super().__init__()
        self.opened: list[str] = []

    @Slot(QUrl)
    def open(self, url: QUrl) -> None:
        self.opened.append(url.toLocalFile())


@pytest.mark.qt_log_ignore("does not support QPlatformServices::openDocument")
@on_qloop
async def test_open_folder_without_a_file_opener_says_so(windows: WindowHarness,
                                                        app_ctx) -> None:
    controller = await windows.open(app_ctx, start=False)
    window = controller.window
    # The offscreen platform has no file opener at all: the real "bare Linux" case.
    controller.keeper.open_output_folder()
    banner = window.banners.get("hint:opener")
    assert banner is not None and "Nothing on this system opens" in banner.text
    assert str(app_ctx.videos_dir) in banner.text
    window.banners.remove("hint:opener")

    opener = FileUrls()
    QDesktopServices.setUrlHandler("file", opener, "open")
    try:
        controller.keeper.open_output_folder()
    finally:
        QDesktopServices.unsetUrlHandler("file")
    assert opener.opened == [str(app_ctx.videos_dir)]
    assert window.banners.get("hint:opener") is None


@on_qloop
async def test_export_dialog_opens_in_the_batch_folder(windows: WindowHarness, app_ctx,
                                                      tmp_path) -> None:
    sheet = tmp_path / "spring prompts.csv"
    shutil.copyfile(resource("sample_prompts.csv"), sheet)
    controller = await windows.open(app_ctx, start=False)
    session = controller.session
    plan = await imports.plan_import(session.app, sheet, session.import_options())
    await imports.apply_import(session.app, plan)
    await controller.refresh_batches()
    await controller.load_rows()
    await until(lambda: len(controller.model.table) == 12)
    controller.keeper.export()
    dialogs = [d for d in controller.keeper.open if isinstance(d, QFileDialog)]
    assert len(dialogs) == 1
    folder = Path(dialogs[0].directory().absolutePath())
    assert folder == Path(controller.model.table.rows[0].output_path).parent
    assert app_ctx.videos_dir in folder.parents  # not the working directory
    dialogs[0].close()


def test_a_card_names_a_render_without_a_name_by_its_sheet_row() -> None:
    from dataclasses import replace

    from reelqueue.ui.dashboard import _render_line, totals_text
    from reelqueue.ui.jobs_data import JobTable, stats_of
    from tests.gui.test_models import make_row

    row = replace(make_row(2, "RENDERING", account="a"), name=None)  # sheet row 3
    table = JobTable()
    table.append([row], stats_of([row]))
    assert _render_line(table, row, 2000.0).name == "Row 3"
    text, _rate = totals_text(table, 2000.0)
    assert text.startswith("1 job ·")  # not "1 jobs"
