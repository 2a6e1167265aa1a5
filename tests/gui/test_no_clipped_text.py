"""No clipped text: every dialog and the main window, at the sizes they get on a 1280x720
screen (= 1920x1080 at 150 %) and at their floor, filled with the longest strings (long
account names, 5-digit counts, money like $12,345.67), and every visible QLabel,
QPushButton and QCheckBox compared with what its text needs.

A one-line label or a button needs its ``sizeHint``; a word-wrapped label needs
``heightForWidth`` at its width. A widget must also lie inside its window (or inside a
scroll area's viewport, which scrolls).
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest
from PySide6.QtCore import QPoint, QRect, QSize
from PySide6.QtWidgets import (
    QAbstractButton,
    QAbstractScrollArea,
    QApplication,
    QCheckBox,
    QLabel,
    QPushButton,
    QToolButton,
    QWidget,
)

from reelqueue.application.account_figures import CardFigures
from reelqueue.domain.models import Job, LedgerEntry
from reelqueue.domain.states import JobState
from reelqueue.engine.queries import JobDetail
from reelqueue.intake import ImportOptions
from reelqueue.intake.estimate import CostEstimate, CostLine
from reelqueue.intake.planner import plan_import
from reelqueue.resources import resource
from reelqueue.ui.account_dialog import AccountDialog
from reelqueue.ui.accounts_view import AccountCardData, RenderLine
from reelqueue.ui.import_dialog import ImportDialog
from reelqueue.ui.job_detail import JobDetailDialog
from reelqueue.ui.jobs_data import stats_of
from reelqueue.ui.main_window import MINIMUM_SIZE, MainWindow
from reelqueue.ui.settings import Settings
from reelqueue.ui.settings_dialog import SettingsDialog
from tests.gui.conftest import save_screenshot
from tests.gui.test_models import make_row

LONG_NAME = "Northwind Studio — marketing renders (EU)"
SCREEN = QRect(0, 0, 1280, 720)
NO_KEYRING = (
    "No usable OS keyring: keyring.errors.NoKeyringError: No recommended backend was "
    "available. Install a Secret Service (e.g. gnome-keyring) and log in to a desktop "
    "session, or run ReelQueue where one exists. ReelQueue never stores keys in plain "
    "text, so the account was not added.")


def _scroll_area_of(widget: QWidget, root: QWidget) -> QAbstractScrollArea | None:
    parent = widget.parentWidget()
    while parent is not None and parent is not root:
        if isinstance(parent.parentWidget(), QAbstractScrollArea):
            return parent.parentWidget()
        parent = parent.parentWidget()
    return None


def clipped(root: QWidget) -> list[str]:
    """Every visible text widget under ``root`` whose text does not fit its geometry."""
    found: list[str] = []
    for widget in root.findChildren(QWidget):
        if not widget.isVisibleTo(root) or not widget.isVisible():
            continue
        if isinstance(widget, QLabel):
            text = widget.text()
            if not text or (widget.pixmap() is not None and not widget.pixmap().isNull()):
                continue
            if widget.wordWrap():
                need = QSize(0, widget.heightForWidth(widget.width()))
            else:
                need = widget.sizeHint()
        elif isinstance(widget, QPushButton | QCheckBox | QToolButton):
            text = widget.text()
            if not text:
                continue
            need = widget.sizeHint()
        else:
            continue
        name = f"{type(widget).__name__} {text[:50]!r}"
        if need.width() > widget.width() or need.height() > widget.height():
            found.append(f"{name}: needs {need.width()}x{need.height()}, "
                         f"has {widget.width()}x{widget.height()}")
            continue
        if isinstance(widget, QAbstractButton) and widget.parentWidget() is not None \
                and widget.parentWidget().inherits("QToolBarExtension"):
            continue
        area = _scroll_area_of(widget, root)
        center = widget.mapTo(root, widget.rect().center())
        if area is None:
            where = QRect(widget.mapTo(root, widget.rect().topLeft()), widget.size())
            if not root.rect().contains(where):
                found.append(f"{name}: outside its window at {where.getRect()}")
                continue
        else:
            viewport = area.viewport()
            if not QRect(viewport.mapTo(root, QPoint(0, 0)), viewport.size()).contains(center):
                continue  # scrolled out of view: the scroll bar shows there is more
        hit = root.childAt(center)
        if hit is not None and hit is not widget and not widget.isAncestorOf(hit):
            found.append(f"{name}: covered by {type(hit).__name__} "
                         f"{getattr(hit, 'text', lambda: '')()[:30]!r}")
    return found


def settle(widget: QWidget, size: QSize | None = None) -> None:
    widget.show()
    if size is not None:
        widget.resize(size)
    for _ in range(3):
        QApplication.processEvents()


@pytest.fixture
def window(themed_app: QApplication) -> Iterator[MainWindow]:
    win = MainWindow()
    yield win
    win.allow_close = True
    win.close()
    win.deleteLater()
    QApplication.processEvents()


LONG_FIGURES = CardFigures(
    balance="balance: 123,456,789.50 credits, as of 23:59 (stale: 1,440 min old, gates "
            "nothing)",
    details=("balance: 123,456,789.50 credits", "gen4.5: 2 at once, 50 a day (12 used)"),
    limit="999 set · provider's limits not applied (stale): 2 for gen4.5, 1 for gen4_turbo",
    credits="credits low: 12,345.67 left, this render needs 99,999.99", stale=True,
    can_update=True)
"""The provider's figures at their longest (issue 32): every line of them shown."""


def big_cards() -> list[AccountCardData]:
    renders = tuple(RenderLine(f"clip_{i:05}_a_long_file_name", 0.4, "12:34")
                    for i in range(5))
    return [
        AccountCardData(name=LONG_NAME, provider_title="OpenAI-compatible gateway",
                        status="out_of_credits", enabled=True, capacity=999, live=999,
                        queued=98_765, completed=12_345, failed=10_234, spend=12_345.67,
                        estimate=110.91, renders=renders, per_minute=(3,) * 60,
                        figures=LONG_FIGURES),
        AccountCardData(name="Studio B", provider_title="Google Veo", status="rate_limited",
                        enabled=True, capacity=12, live=12, cooldown_until=1_800_000_000.0,
                        queued=45_678, completed=99_999, failed=0, spend=1_234.5,
                        estimate=9_876.54),
        AccountCardData(name="mock-medium", provider_title="Built-in mock", status="ready",
                        enabled=False, capacity=4, live=0, queued=0, completed=7),
    ]


def fill(window: MainWindow) -> None:
    window.accounts.set_accounts(big_cards())
    rows = [make_row(i, "RENDERING", account=LONG_NAME) for i in range(1, 40)]
    window.model.add_rows(rows, stats_of(rows))
    window.set_totals("98,765 jobs · 12,345 done · 10,234 failed · 999 rendering · "
                      "76,187 waiting · 0 cancelled", "123.4/min · ETA 13 h 20 min")
    window.set_engine_state("running")


@pytest.mark.parametrize("compact", [False, True], ids=["full-cards", "small-cards"])
@pytest.mark.parametrize("size", [None, MINIMUM_SIZE], ids=["fitted", "floor"])
def test_main_window(window: MainWindow, compact: bool, size: QSize | None) -> None:
    fill(window)
    settle(window, size)
    window.compact_button.setChecked(compact)
    settle(window)
    assert window.accounts.compact is compact
    assert SCREEN.contains(window.frameGeometry()) or size == MINIMUM_SIZE
    assert clipped(window) == []
    save_screenshot(window, f"layout-main-{'small' if compact else 'full'}-"
                            f"{'floor' if size else 'fitted'}")


@pytest.mark.parametrize("size", [None, MINIMUM_SIZE], ids=["fitted", "floor"])
def test_first_run_empty_state(window: MainWindow, size: QSize | None) -> None:
    settle(window, size)
    assert window.jobs_stack.currentWidget() is window.empty
    assert clipped(window) == []
    save_screenshot(window, f"layout-first-run-{'floor' if size else 'fitted'}")


@pytest.mark.parametrize("message", ["", NO_KEYRING])
def test_account_dialog(window: MainWindow, message: str) -> None:
    settle(window)
    dialog = AccountDialog(set(), window)
    if message:
        dialog.name.setText(LONG_NAME)
        dialog.set_result(False, message)
    settle(dialog)
    for size in (dialog.size(), dialog.minimumSizeHint()):
        settle(dialog, size)
        assert clipped(dialog) == []
        # The fields keep their height next to a long message (issue 13: ~10 px).
        assert dialog.name.height() >= dialog.name.sizeHint().height()
        assert dialog.key.height() >= dialog.key.sizeHint().height()
    save_screenshot(dialog, "layout-account-no-keyring" if message else "layout-account")
    dialog.close()


def test_settings_dialog(window: MainWindow) -> None:
    settle(window)
    dialog = SettingsDialog(Settings(output_dir="/home/someone/Videos/ReelQueue/a long "
                                                "folder name for all the renders"),
                            "/home/someone/Videos/ReelQueue", window)
    for size in (None, QSize(1, 1)):  # as opened, and squeezed to its floor
        settle(dialog, size)
        assert clipped(dialog) == []
    save_screenshot(dialog, "layout-settings")
    dialog.close()


def test_import_dialog(window: MainWindow, tmp_path: Path) -> None:
    settle(window)
    sheet = tmp_path / ("Northwind spring campaign, all regions, final v2 "
                        "(approved by legal on the third of March).csv")
    shutil.copyfile(resource("sample_prompts.csv"), sheet)
    plan = plan_import(sheet, ImportOptions(output_root=tmp_path / "videos"), now=1.0)
    estimate = CostEstimate(lines=(
        CostLine("openai_compat", LONG_NAME, 12_345, 61_725.0, 12_345.67),
        CostLine("veo", None, 45_678, 228_390.0, 110.91, unpriced_jobs=3)),
        total_usd=12_456.58, unpriced_jobs=3, sources=("built-in price list 2026-11",))
    plan = replace(plan, estimate=estimate, unmapped=["mood", "camera notes"])
    dialog = ImportDialog(sheet, ImportOptions(output_root=tmp_path / "videos"), window)
    dialog.set_plan(plan)
    for size in (None, QSize(1, 1)):
        settle(dialog, size)
        assert clipped(dialog) == []
        assert SCREEN.contains(dialog.frameGeometry())
    header = dialog.preview_view.horizontalHeader()
    metrics = header.fontMetrics()
    for column, title in enumerate(dialog.preview_model.HEADERS):
        # issue 13: "Provider" showed as "Provide" (a header is not a QLabel)
        assert header.sectionSize(column) >= metrics.horizontalAdvance(title) + 16, title
    save_screenshot(dialog, "layout-import")
    dialog.stop_timers()
    dialog.close()


def test_job_detail(window: MainWindow, tmp_path: Path) -> None:
    settle(window)
    job = Job(id=2, batch_id=1, job_key="k", row_number=3, name=None,
              prompt="A very long prompt " * 20, provider="openai_compat",
              params={"duration": 8, "model": "sora-2-pro", "seed": 123456789,
                      "aspect_ratio": "16:9"},
              pinned_account=LONG_NAME, priority=0, output_path=str(tmp_path / "x.mp4"),
              state=JobState.FAILED, attempts=3, max_attempts=3, account=LONG_NAME,
              claim_token=None, lease_owner=None, lease_until=None, client_token="c",
              provider_job_id="video_68d7f2c1a9b04e3f8c2d1e0f", sub_status=None,
              progress=None, run_after=0.0, output_size=None, output_sha256=None,
              cost=12_345.67, error_class="permanent", error_label="content policy",
              error_message="Your request was rejected by the safety system. " * 3,
              created_at=900.0, updated_at=1000.0, started_at=950.0, finished_at=1000.0,
              metadata={})
    ledger = [LedgerEntry(seq=1, at=950.0, event="claimed", job_id=2, account=LONG_NAME,
                          claim_token="t", detail={"owner": "inst-1", "resume": False})]
    dialog = JobDetailDialog(2, window)
    dialog.set_detail(JobDetail(job=job, ledger=ledger))
    for size, name in ((None, "opened"), (QSize(1, 1), "floor")):
        settle(dialog, size)
        assert clipped(dialog) == []
        save_screenshot(dialog, f"layout-job-detail-{name}")
    assert dialog.title.text() == "Row 3"
    # A failed job says how many attempts it used, never "attempt 3 of 3".
    assert dialog.subtitle.text() == f"row 3 · openai_compat on {LONG_NAME} · 3 attempts"
    assert dialog.ledger_model.index(0, 3).data() == ""  # no owner, no "resume: False"
    dialog.close()


def test_settings_labels_keep_apart_from_their_boxes_and_say_no_jargon(
        window: MainWindow) -> None:
    settle(window)
    dialog = SettingsDialog(Settings(), "/videos", window)
    settle(dialog)
    for label, box in ((dialog.retry_base_label, dialog.retry_base),
                       (dialog.retry_cap_label, dialog.retry_cap)):
        gap = box.geometry().left() - label.geometry().right()
        assert gap >= 6, f"{label.text()!r} touches its box ({gap} px)"
    texts = " ".join(w.text() for w in dialog.findChildren(QLabel))
    assert "Lease" not in texts and "lease" not in texts and "Backoff" not in texts
    dialog.close()
