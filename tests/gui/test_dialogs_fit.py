"""Every dialog of the window fits the screen (N5): each QDialog subclass under ui/ is
opened with its worst-case content (row errors, the longest account name, a long error)
on a 1280x720 screen at scale 1.0 (this process, see conftest) and, in a child process,
on 1920x1080 at QT_SCALE_FACTOR=1.5; its frame lies inside the screen's free area and
every button lies inside the dialog (the import dialog of a sheet with row errors was
20 px taller than 720: its buttons were cut).

A scan of ui/ finds every QDialog subclass: one this test does not know fails it, so a new
dialog gets a worst-case builder here.
"""

from __future__ import annotations

import importlib
import inspect
import json
import os
import pkgutil
import subprocess
import sys
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import pytest
from PySide6.QtCore import QMargins, QRect
from PySide6.QtWidgets import QAbstractButton, QAbstractScrollArea, QApplication, QDialog

import reelqueue.ui
from reelqueue.application.gallery import GalleryItem
from reelqueue.application.team import TeamMachine
from reelqueue.domain.models import Job, LedgerEntry
from reelqueue.domain.states import JobState
from reelqueue.engine.queries import JobDetail
from reelqueue.intake import ImportOptions
from reelqueue.intake.estimate import CostEstimate, CostLine
from reelqueue.intake.planner import plan_import
from reelqueue.ui.about import AboutDialog
from reelqueue.ui.account_dialog import AccountDialog
from reelqueue.ui.account_manage import ManageAccountDialog
from reelqueue.ui.costs import CostsDialog
from reelqueue.ui.gallery import PreviewDialog
from reelqueue.ui.gallery_thumbs import GalleryThumbs
from reelqueue.ui.import_dialog import ImportDialog
from reelqueue.ui.instances import InstancesDialog
from reelqueue.ui.job_detail import JobDetailDialog
from reelqueue.ui.main_window import FRAME_GUESS, MainWindow
from reelqueue.ui.settings import Settings
from reelqueue.ui.settings_dialog import SettingsDialog
from tests.gui.test_account_manage_gui import _account
from tests.gui.test_no_clipped_text import LONG_NAME, NO_KEYRING, clipped

HERE = Path(__file__).parent
SHA = "9f2c4e1ab8d03f6e5c7b2a9180d4e6f3c5b7a9d1e2f4a6c8b0d2e4f6a8c0b2d4"


def dialog_classes() -> set[type[QDialog]]:
    """Every QDialog subclass defined in a module of reelqueue.ui."""
    found: set[type[QDialog]] = set()
    for info in pkgutil.iter_modules(reelqueue.ui.__path__):
        module = importlib.import_module(f"reelqueue.ui.{info.name}")
        for _name, value in inspect.getmembers(module, inspect.isclass):
            if issubclass(value, QDialog) and value.__module__ == module.__name__:
                found.add(value)
    return found


def _sheet_with_errors(folder: Path) -> Path:
    sheet = folder / ("Northwind spring campaign, all regions, final v2 "
                      "(approved by legal on the third of March).csv")
    extra = ",".join(f"{word} notes from the art department" for word in (
        "mood", "camera", "lighting", "wardrobe", "location", "sound", "colour grade"))
    rows = [f"name,prompt,duration,aspect_ratio,seed,{extra}"]
    for n in range(40):
        bad = n % 3 == 0
        rows.append(f"shot {n},\"A slow aerial drift over a misty forest, take {n}\","
                    f"{'forever' if bad else 6},{'5:7' if bad else '16:9'},{n},calm,"
                    + ",".join(["a dolly in"] * 7))
    sheet.write_text("\n".join(rows) + "\n", encoding="utf-8")
    return sheet


def import_dialog(window: MainWindow, folder: Path) -> QDialog:
    sheet = _sheet_with_errors(folder)
    options = ImportOptions(output_root=folder / "videos" / ("a long folder name " * 4))
    plan = plan_import(sheet, options, now=1.0)
    assert plan.errors, "the sheet has row errors"
    estimate = CostEstimate(lines=(
        CostLine("openai_compat", LONG_NAME, 12_345, 61_725.0, 12_345.67),
        CostLine("veo", LONG_NAME + " (backup)", 45_678, 228_390.0, 110.91,
                 unpriced_jobs=3),
        CostLine("runway", LONG_NAME + " (overflow)", 45_678, 228_390.0, 110.91),
        CostLine("luma", LONG_NAME + " (night shift)", 45_678, 228_390.0, None,
                 unpriced_jobs=45_678)),
        total_usd=12_456.58, unpriced_jobs=3, sources=("built-in price list 2026-11",))
    dialog = ImportDialog(sheet, options, window)
    dialog.set_plan(replace(plan, estimate=estimate))
    dialog.set_error("The sheet changed while it was read: open it again to see its "
                     "rows as they are now, or cancel.")
    dialog.error_label.setText(dialog.error_label.text())
    return dialog


def account_dialog(window: MainWindow, _folder: Path) -> QDialog:
    dialog = AccountDialog(set(), window)
    dialog.name.setText(LONG_NAME)
    dialog.set_result(False, NO_KEYRING)
    return dialog


def manage_dialog(window: MainWindow, _folder: Path) -> QDialog:
    dialog = ManageAccountDialog(_account(name=LONG_NAME, status_detail=NO_KEYRING),
                                 "OpenAI-compatible gateway", team=True, parent=window)
    dialog.set_confirm("waits for 'accounts confirm' on every other machine of the team")
    return dialog


def settings_dialog(window: MainWindow, _folder: Path) -> QDialog:
    return SettingsDialog(Settings(output_dir="/home/someone/Videos/ReelQueue/a long "
                                              "folder name for all the renders"),
                          "/home/someone/Videos/ReelQueue", window)


def job_detail(window: MainWindow, folder: Path) -> QDialog:
    job = Job(id=2, batch_id=1, job_key="k", row_number=3, name=LONG_NAME,
              prompt="A very long prompt " * 40, provider="openai_compat",
              params={"duration": 8, "model": "sora-2-pro", "seed": 123456789,
                      "aspect_ratio": "16:9"},
              pinned_account=LONG_NAME, priority=0, output_path=str(folder / "x.mp4"),
              state=JobState.FAILED, attempts=3, max_attempts=3, account=LONG_NAME,
              claim_token=None, lease_owner=None, lease_until=None, client_token="c",
              provider_job_id="video_68d7f2c1a9b04e3f8c2d1e0f", sub_status=None,
              progress=None, run_after=0.0, output_size=12_345_678, output_sha256=SHA,
              cost=12_345.67, error_class="permanent", error_label="content policy",
              error_message="Your request was rejected by the safety system. " * 6,
              created_at=900.0, updated_at=1000.0, started_at=950.0, finished_at=1000.0,
              metadata={})
    ledger = [LedgerEntry(seq=n, at=950.0 + n, event="claimed", job_id=2, account=LONG_NAME,
                          claim_token="t", detail={"owner": "inst-1"}) for n in range(60)]
    dialog = JobDetailDialog(2, window)
    dialog.set_detail(JobDetail(job=job, ledger=ledger))
    return dialog


def instances_dialog(window: MainWindow, _folder: Path) -> QDialog:
    dialog = InstancesDialog(window)
    dialog.set_machines([
        TeamMachine(id=f"inst-{n}", host=f"render-box-{n}.studio.northwind.example.com",
                    pid=100_000 + n, version="9.9.1", started_at=0.0, heartbeat_at=10.0,
                    live_renders=n, state="SILENT" if n % 2 else "RUNNING",
                    silent_for=200.0 * n, clock_offset=1.5, lease_seconds=60.0)
        for n in range(40)])
    return dialog


def costs_dialog(window: MainWindow, _folder: Path) -> QDialog:
    dialog = CostsDialog(window)
    dialog.set_lines(["Cost reconciliation, UTC days 2026-11-30 to 2026-12-06 (the journal "
                      "against the provider's usage):"]
                     + [f"Account {LONG_NAME}-{n} (Runway):\n  2026-12-06 gen4.5: the journal "
                        "started 3 creates priced $1.80 = 180 credits; the provider used 216 "
                        "credits: price drift, the provider charged 20 % more than the "
                        "table's gen4.5 price, 12 credits/s (source: " + "x" * 200 + ")"
                        for n in range(40)])
    return dialog


def preview_dialog(window: MainWindow, folder: Path) -> QDialog:
    thumbs = GalleryThumbs(folder / "thumbs", parent=window)
    dialog = PreviewDialog(thumbs, window)
    dialog.show_item(GalleryItem(
        job_id=1, batch_id=1, row_number=3, name=LONG_NAME, prompt="A long prompt " * 30,
        provider="openai_compat", account=LONG_NAME, state="COMPLETED",
        output_path=str(folder / "x.mp4"), output_size=1, output_sha256=SHA, held_by=None,
        seed=None, seed_blocked=None, error=None))
    return dialog


def about_dialog(window: MainWindow, _folder: Path) -> QDialog:
    from reelqueue.application.providers import PluginReport, provider_registry
    from reelqueue.providers.plugins import LoadedPlugin, SkippedPlugin

    report = PluginReport(
        tuple(LoadedPlugin(f"reelqueue-plugin-{n}-{LONG_NAME}", "10.20.30", f"kind-{n}",
                           LONG_NAME) for n in range(20)),
        tuple(SkippedPlugin(f"broken-{n}", "0.0.1", "p", "it could not be imported "
                            + "(ModuleNotFoundError: x) " * 12) for n in range(20)))
    return AboutDialog(provider_registry(), report, window)


BUILDERS: dict[type[QDialog], Callable[[MainWindow, Path], QDialog]] = {
    AboutDialog: about_dialog,
    ImportDialog: import_dialog,
    AccountDialog: account_dialog,
    ManageAccountDialog: manage_dialog,
    SettingsDialog: settings_dialog,
    JobDetailDialog: job_detail,
    InstancesDialog: instances_dialog,
    CostsDialog: costs_dialog,
    PreviewDialog: preview_dialog,
}


def misfits(dialog: QDialog) -> list[str]:
    """What of ``dialog`` lies off its screen's free area, or off the dialog."""
    for _ in range(3):
        QApplication.processEvents()
    name = type(dialog).__name__
    available = dialog.screen().availableGeometry()
    found: list[str] = []
    # A window manager's title bar is taller than the test platform's frame: the dialog
    # must fit with the one the window assumes (FRAME_GUESS) around it.
    frame = dialog.frameGeometry().marginsAdded(QMargins(0, 0, 0, 0))
    framed = dialog.geometry().marginsAdded(FRAME_GUESS)
    for what, rect in (("frame", frame), ("with a title bar", framed)):
        if not available.contains(rect):
            found.append(f"{name}: {what} {rect.getRect()} off {available.getRect()}")
    room = available.marginsRemoved(FRAME_GUESS)
    least = dialog.minimumSize().expandedTo(dialog.minimumSizeHint())
    if least.height() > room.height() or least.width() > room.width():
        found.append(f"{name}: asks for at least {least.toTuple()}")
    found += [f"{name}: {text}" for text in clipped(dialog)]
    for button in dialog.findChildren(QAbstractButton):
        if not button.isVisible() or button.window() is not dialog:
            continue
        parent = button.parentWidget()
        scrolled = False
        while parent is not None and parent is not dialog:
            if isinstance(parent.parentWidget(), QAbstractScrollArea):
                scrolled = True
            parent = parent.parentWidget()
        if scrolled:
            continue
        where = QRect(button.mapTo(dialog, button.rect().topLeft()), button.size())
        if not dialog.rect().contains(where):
            found.append(f"{name}: button {button.text()!r} at {where} off {dialog.rect()}")
    return found


def test_every_dialog_under_ui_has_a_worst_case_here() -> None:
    unknown = {cls.__name__ for cls in dialog_classes()} - {c.__name__ for c in BUILDERS}
    assert unknown == set(), f"add a worst-case builder to BUILDERS for {unknown}"


@pytest.mark.parametrize("cls", list(BUILDERS), ids=lambda cls: cls.__name__)
def test_dialog_fits_a_1280x720_screen(themed_app: QApplication, tmp_path: Path,
                                       cls: type[QDialog]) -> None:
    window = MainWindow()
    window.show()
    dialog = BUILDERS[cls](window, tmp_path)
    try:
        dialog.show()
        assert dialog.screen().availableGeometry().size().toTuple() == (1280, 720)
        assert misfits(dialog) == []
    finally:
        if hasattr(dialog, "stop_timers"):
            dialog.stop_timers()
        dialog.close()
        dialog.deleteLater()
        window.allow_close = True
        window.close()
        window.deleteLater()
        QApplication.processEvents()


CHILD = r"""
import json, sys, tempfile
from pathlib import Path
from PySide6.QtWidgets import QApplication
from reelqueue.ui import theme
app = QApplication(sys.argv[:1])
theme.install(app, "light")
from reelqueue.ui.main_window import FRAME_GUESS, MainWindow
from tests.gui.test_dialogs_fit import BUILDERS, misfits
found = []
window = MainWindow()
window.show()
for cls, build in BUILDERS.items():
    with tempfile.TemporaryDirectory() as folder:
        dialog = build(window, Path(folder))
        dialog.show()
        found += misfits(dialog)
        if hasattr(dialog, "stop_timers"):
            dialog.stop_timers()
        dialog.close()
print(json.dumps({"misfits": found, "dpr": window.devicePixelRatio(),
                  "available": window.screen().availableGeometry().getRect()}))
"""


def test_every_dialog_fits_1920x1080_at_150_percent(tmp_path: Path) -> None:
    config = tmp_path / "screen.json"
    config.write_text(json.dumps({"windowFrameMargins": True, "screens": [
        {"name": "s", "x": 0, "y": 0, "width": 1920, "height": 1080,
         "logicalDpi": 96, "logicalBaseDpi": 96, "dpr": 1}]}))
    env = dict(os.environ, QT_QPA_PLATFORM=f"offscreen:configfile={config}",
               QT_SCALE_FACTOR="1.5", QT_API="pyside6",
               XDG_CONFIG_HOME=str(tmp_path / "config"))
    done = subprocess.run([sys.executable, "-c", CHILD], env=env, capture_output=True,
                          text=True, timeout=180, check=False, cwd=HERE.parents[1])
    assert done.returncode == 0, done.stderr[-2000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["dpr"] == 1.5 and result["available"] == [0, 0, 1280, 720]
    assert result["misfits"] == []
