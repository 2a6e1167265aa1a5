"""After a killed run the window says what recovery did before anything runs; closing
with renders running asks whether to keep them, and they are picked up on reopen."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from reelqueue.cli.cmd_demo import prepare
from reelqueue.ui import format as fmt
from reelqueue.ui.session import NEVER_ARRIVED
from reelqueue.ui.settings import Settings, read_marker
from tests.gui.conftest import REPO, WindowHarness, on_qloop, save_screenshot, until

LONG_SHEET = "name,prompt\n" + "".join(
    f"long{i},A slow scene number {i} [[mock:render_seconds=60]]\n" for i in range(6))


def in_flight(journal: Path) -> int:
    if not journal.exists():
        return 0
    try:
        with sqlite3.connect(f"file:{journal}?mode=ro", uri=True, timeout=1) as db:
            return db.execute("SELECT COUNT(*) FROM jobs WHERE state IN "
                              "('SUBMITTING','RENDERING')").fetchone()[0]
    except sqlite3.Error:
        return 0


def killed_run(ctx, tmp_path: Path) -> None:
    """Run ``python -m reelqueue run`` as a child and SIGKILL it mid-render."""
    sheet = tmp_path / "long.csv"
    sheet.write_text(LONG_SHEET, "utf-8")
    prepare(ctx, sheet)
    env = dict(os.environ, PYTHONPATH=str(REPO / "app"))
    child = subprocess.Popen(
        [sys.executable, "-m", "reelqueue", "--data-dir", str(ctx.data_dir),
         "--videos-dir", str(ctx.videos_dir), "run", "--no-progress"],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 60
        while in_flight(ctx.journal_path) < 3:
            assert child.poll() is None, "the run ended before it could be killed"
            assert time.monotonic() < deadline, "no render started"
            time.sleep(0.05)
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait(timeout=10)


@pytest.mark.slow
@on_qloop
async def test_crash_banner_after_a_killed_run(windows: WindowHarness, app_ctx,
                                               tmp_path) -> None:
    killed_run(app_ctx, tmp_path)
    left = in_flight(app_ctx.journal_path)
    assert left >= 3
    controller = await windows.open(app_ctx, start=True,
                                    settings=Settings(theme="light",
                                                      start_paused_after_crash=True))
    window = controller.window
    report = controller.report
    assert report is not None and report.unclean and report.paused
    # The killed run's renders were on its own built-in mock, which died with it: recovery
    # says so and renders them again without spending an attempt (issue 19, 6).
    assert len(report.recovery.lost_renders) + len(report.recovery.reconcile) >= left
    banner = window.banners.get("recovery")
    assert banner is not None and banner.kind == "warning"
    assert "did not shut down cleanly" in banner.text
    # The banner tells what became of each render once the provider answered, never
    # ahead (issue 13: it used to say "reattached ... continue" of renders the built-in
    # mock had lost): checking first, then the outcome (tests/gui/test_truth_gui.py).
    # The killed run's renders were on its own built-in mock, which died with it: once
    # every one has its answer, none is picked up, and the banner says each outcome in
    # the mock's words (never a real provider's "could not be found").
    follow = controller.follow_up
    assert follow is not None
    await until(lambda: follow.settled, 30)
    lost = len(report.recovery.lost_renders)
    never = follow.count(NEVER_ARRIVED)
    assert never == len(follow.jobs) and lost + never >= left, follow.outcomes
    assert (f"{fmt.count(lost, 'render')} of the built-in mock lost when ReelQueue "
            "stopped" in banner.text) == bool(lost), banner.text
    assert ("never reached the provider" in banner.text) == bool(never), banner.text
    assert "could not be found" not in banner.text and "checking" not in banner.text
    assert "reattached" not in banner.text and "continue" not in banner.text
    assert "paused" in banner.text and "Resume queue" in banner.buttons
    assert window.engine_label.text().startswith("Paused")
    assert controller.session.app.running_engine.paused
    save_screenshot(window, "crash-banner")

    banner.buttons["Resume queue"].click()
    await until(lambda: not window.engine_label.text().startswith("Paused"), 5)
    assert not window.paused
    assert window.banners.get("recovery") is None


@on_qloop
async def test_closing_with_renders_asks_and_keeps_them(windows: WindowHarness, app_ctx,
                                                        tmp_path) -> None:
    sheet = tmp_path / "long.csv"
    sheet.write_text(LONG_SHEET, "utf-8")
    prepare(app_ctx, sheet)
    controller = await windows.open(app_ctx, start=True)
    await until(lambda: controller.model.table.stats.by_state["RENDERING"] >= 3, 30)
    controller.window.close()  # the user closes the window
    box = controller.closer.close_box
    assert box.isVisible() and "still running" in box.text()
    keep = next(b for b in box.buttons() if b.text() == "Keep for next time")
    keep.click()
    await until(lambda: controller.session.closed and controller.window.allow_close, 30)
    await until(lambda: read_marker(app_ctx.data_dir).kept_renders >= 3, 10)
    windows.opened.remove(controller)
    windows._dispose(controller)

    reopened = await windows.open(app_ctx, start=False)
    report = reopened.report
    assert report is not None and not report.unclean and report.kept_renders >= 3
    # They ran on the built-in mock, which stopped with the window: recovery says so (no
    # attempt spent, nothing charged) instead of promising them back (issue 19, 6).
    assert len(report.recovery.lost_renders) >= 3 and not report.recovery.reattached
    banner = reopened.window.banners.get("recovery")
    assert banner is not None and "left running last time" in banner.text, banner.text
    assert "lost when ReelQueue stopped" in banner.text and "kept from" not in banner.text
