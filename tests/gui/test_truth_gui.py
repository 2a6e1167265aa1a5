"""The window tells the truth (issue 13): stalled with its reasons, all done, cancelled
counted, banners replaced and dismissed when stale, and recovery worded from what the
provider answered after a real SIGKILL (built-in mock: the renders are gone; a separate
mock provider process: the renders are picked up again, the same provider job ids)."""

from __future__ import annotations

import contextlib
import os
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from reelqueue.cli.cmd_demo import DEMO_ACCOUNTS, prepare
from reelqueue.domain.models import AccountSpec
from reelqueue.domain.states import AccountStatus
from reelqueue.intake import ImportOptions, apply_import, plan_import
from reelqueue.ui.settings import Settings
from tests.gui.conftest import REPO, WindowHarness, on_qloop, save_screenshot, until
from tests.gui.test_crash_gui import LONG_SHEET, in_flight, killed_run

FAST_SHEET = "name,prompt\n" + "".join(f"shot{i},A quick scene number {i}\n"
                                       for i in range(22))


def out_of_credits_everywhere(ctx, tmp_path: Path) -> None:
    """The issue's case: 22 jobs waiting, every account out of credits."""
    sheet = tmp_path / "shots.csv"
    sheet.write_text(FAST_SHEET, "utf-8")
    prepare(ctx, sheet, render_seconds=None)
    with ctx.open_store() as store:
        for name, _capacity in DEMO_ACCOUNTS:
            store.set_account_status(name, AccountStatus.OUT_OF_CREDITS, ctx.clock.now(),
                                     detail="insufficient credits")


@on_qloop
async def test_stalled_with_reasons_then_all_done(windows: WindowHarness, app_ctx,
                                                  tmp_path) -> None:
    out_of_credits_everywhere(app_ctx, tmp_path)
    controller = await windows.open(app_ctx, start=True)
    window = controller.window
    await until(lambda: window.banners.get("stalled") is not None, 30)
    label = window.engine_label.text()
    assert label.startswith("Stalled") and "out of credits" in label, label
    assert "Running" not in label and "ETA" not in window.rate_label.text()
    banner = window.banners.get("stalled")
    assert banner is not None and banner.kind == "warning"
    assert "22 jobs wait" in banner.text
    # The three accounts share one reason: named together, the advice said once.
    names = ", ".join(name for name, _capacity in DEMO_ACCOUNTS)
    assert f"{names}: out of credits" in banner.text, banner.text
    assert banner.text.count("Mark ready") == 1  # what the user can do, once
    assert "22 waiting" in window.totals_label.text()
    # The shared queue once, above the cards; no card claims the 22 as its own.
    # What they will cost is said there too, from the journal (22 x $0.05; issue 23).
    await until(lambda: window.queue_label.text() == "Shared queue: 22 waiting for 3 accounts"
                " · Mock provider (local) est. $1.10 to go", 5)
    assert all(card.queued.text() == "0" for card in window.accounts.cards.values())
    save_screenshot(window, "stalled")

    # The user tops up one account: work moves, the stalled banner goes, and when the
    # last job is done the window says so (never "Running" after the end).
    controller.actions.mark_ready(DEMO_ACCOUNTS[0][0])
    await until(lambda: window.banners.get("stalled") is None, 30)
    await until(lambda: window.engine_label.text().startswith("All done"), 60)
    assert window.engine_label.text() == "All done · 22 completed, 0 failed, 0 cancelled"
    assert window.rate_label.text() == ""  # no rate or ETA when nothing renders
    assert "22 completed" in window.totals_label.text()
    assert "0 cancelled" in window.totals_label.text()
    assert not window.paused  # the queue is still on: new jobs would start


@on_qloop
async def test_no_account_for_provider_is_a_stall(windows: WindowHarness, app_ctx,
                                                  tmp_path) -> None:
    sheet = tmp_path / "shots.csv"
    sheet.write_text(FAST_SHEET, "utf-8")
    with app_ctx.open_store() as store:
        plan = plan_import(sheet, ImportOptions(provider="mock",
                                                output_root=app_ctx.videos_dir,
                                                batch_name="no account"),
                           existing_keys=store.existing_job_keys)
        apply_import(store, plan, app_ctx.clock.now())
    controller = await windows.open(app_ctx, start=True)
    window = controller.window
    await until(lambda: window.banners.get("stalled") is not None, 30)
    banner = window.banners.get("stalled")
    assert banner is not None
    # The provider by its title, never its internal kind ("mock").
    assert "provider Mock provider (local)" in banner.text, banner.text
    assert "no account" in banner.text and "Connect an account…" in banner.buttons
    assert "no account" in window.engine_label.text()


@on_qloop
async def test_cancelled_counted_and_finished_banner_not_green(
        windows: WindowHarness, app_ctx, tmp_path) -> None:
    sheet = tmp_path / "shots.csv"
    sheet.write_text(FAST_SHEET, "utf-8")
    prepare(app_ctx, sheet, render_seconds=None)
    controller = await windows.open(app_ctx, start=False)
    window = controller.window
    ids = [row.id for row in controller.model.table.rows]
    assert len(ids) == 22
    await controller.actions.cancel_now(ids)
    await until(lambda: window.banners.get("batch:1") is not None, 10)
    banner = window.banners.get("batch:1")
    assert banner is not None
    assert "0 completed, 0 failed, 22 cancelled" in banner.text
    assert banner.kind != "success"  # nothing completed: never green
    await until(lambda: "22 cancelled" in window.totals_label.text(), 5)
    controller.actions.start_queue()
    await until(lambda: window.engine_label.text().startswith("All done"), 30)
    assert window.engine_label.text() == "All done · 0 completed, 0 failed, 22 cancelled"


@on_qloop
async def test_banners_replace_their_kind_and_stale_ones_go(windows: WindowHarness, app_ctx,
                                                            tmp_path) -> None:
    sheet = tmp_path / "long.csv"
    sheet.write_text(LONG_SHEET, "utf-8")
    prepare(app_ctx, sheet, render_seconds=None)
    controller = await windows.open(app_ctx, start=False)
    banners = controller.window.banners
    banners.show_banner("success", "Imported 6 new jobs into batch “demo”.",
                        [("Start", controller.start_from_banner)], key="imported")
    banners.show_banner("success", "Imported 29 new jobs into batch “demo”.",
                        [("Start", controller.start_from_banner)], key="imported")
    imported = [b for b in banners.banners() if b.key == "imported"]
    assert [b.text for b in imported] == ["Imported 29 new jobs into batch “demo”."]
    banners.show_banner("success", "Batch “a” finished.", key="batch:7")
    banners.remove_family("batch:")
    assert banners.get("batch:7") is None
    # Started from the toolbar (not the banner's own button): the banner is stale.
    controller.actions.start_queue()
    await until(lambda: banners.get("imported") is None, 10)
    await until(lambda: controller.window.engine_label.text().startswith("Running"), 30)


# -- recovery after a real SIGKILL ------------------------------------------------------
def provider_job_ids(journal: Path) -> dict[int, str]:
    with sqlite3.connect(f"file:{journal}?mode=ro", uri=True, timeout=5) as db:
        return {job: pid for job, pid in db.execute(
            "SELECT id, provider_job_id FROM jobs WHERE state IN ('SUBMITTING','RENDERING')"
            " AND provider_job_id IS NOT NULL")}


@pytest.mark.slow
@on_qloop
async def test_recovery_with_the_builtin_mock_says_the_renders_are_gone(
        windows: WindowHarness, app_ctx, tmp_path) -> None:
    killed_run(app_ctx, tmp_path)  # the built-in mock died with the killed process
    left = in_flight(app_ctx.journal_path)
    assert left >= 3
    controller = await windows.open(app_ctx, start=True,
                                    settings=Settings(theme="light",
                                                      start_paused_after_crash=True))
    window = controller.window
    follow = controller.follow_up
    # Recovery knows the built-in mock's renders ended with the killed process: lost, to be
    # rendered again without an attempt (issue 19, 6); only creates inside the submit
    # window are followed (asked for, then sent once).
    lost = len(controller.report.recovery.lost_renders) if controller.report else 0
    assert follow is not None and len(follow.jobs) + lost >= left
    banner = window.banners.get("recovery")
    assert banner is not None and "did not shut down cleanly" in banner.text
    await until(lambda: follow.settled, 60)
    text = window.banners.get("recovery").text
    assert follow.count("picked_up") == 0  # nothing of the old mock survived
    assert "picked up again" not in text and "reattached" not in text
    never = follow.count("never_arrived")
    assert never == len(follow.jobs)
    if lost:
        renders = "render" if lost == 1 else "renders"
        assert f"{lost} {renders} of the built-in mock lost when ReelQueue stopped" in text
    if never:
        assert "never reached the provider" in text
    assert "The queue is paused so you can check first." in text
    save_screenshot(window, "crash-banner-builtin-mock")


@contextlib.contextmanager
def mock_process() -> Iterator[str]:
    env = dict(os.environ, PYTHONPATH=str(REPO / "app"))
    proc = subprocess.Popen([sys.executable, "-m", "reelqueue", "mock-provider", "--port", "0"],
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                            text=True)
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert "listening on" in line, line
        yield line.strip().rsplit(" ", 1)[-1]
    finally:
        proc.terminate()
        proc.wait(10)
        if proc.stdout:
            proc.stdout.close()


@pytest.mark.slow
@on_qloop
async def test_recovery_with_a_separate_mock_process_picks_renders_up(
        windows: WindowHarness, app_ctx, tmp_path) -> None:
    with mock_process() as url:
        sheet = tmp_path / "long.csv"
        sheet.write_text(LONG_SHEET, "utf-8")
        with app_ctx.open_store() as store:
            store.add_account(AccountSpec("studio", "mock", 6, base_url=url),
                              app_ctx.clock.now())
            plan = plan_import(sheet, ImportOptions(provider="mock",
                                                    output_root=app_ctx.videos_dir,
                                                    batch_name="long"),
                               existing_keys=store.existing_job_keys)
            apply_import(store, plan, app_ctx.clock.now())
        env = dict(os.environ, PYTHONPATH=str(REPO / "app"))
        child = subprocess.Popen(
            [sys.executable, "-m", "reelqueue", "--data-dir", str(app_ctx.data_dir),
             "--videos-dir", str(app_ctx.videos_dir), "run", "--no-progress"],
            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            deadline = time.monotonic() + 60
            while len(provider_job_ids(app_ctx.journal_path)
                      if app_ctx.journal_path.exists() else {}) < 6:
                assert child.poll() is None, "the run ended before it could be killed"
                assert time.monotonic() < deadline, "the renders did not start"
                time.sleep(0.05)
        finally:
            child.send_signal(signal.SIGKILL)
            child.wait(timeout=10)
        before = provider_job_ids(app_ctx.journal_path)
        assert len(before) == 6

        controller = await windows.open(app_ctx, start=True,
                                        settings=Settings(theme="light",
                                                          start_paused_after_crash=True))
        window = controller.window
        follow = controller.follow_up
        assert follow is not None and set(before) <= follow.jobs
        await until(lambda: follow.settled, 60)
        text = window.banners.get("recovery").text
        assert follow.count("picked_up") == len(follow.jobs)
        assert f"{len(follow.jobs)} renders picked up again" in text, text
        assert "could not be found" not in text and "built-in mock" not in text
        assert "the 6 renders picked up go on" in text
        # Truly reattached: the same renders at the provider, none created again.
        engine = controller.session.app.running_engine
        for job_id, provider_job_id in before.items():
            job = await engine.store.call(engine.store.sync.get_job, job_id)
            assert job is not None and job.provider_job_id == provider_job_id
            assert job.state.value in ("RENDERING", "DOWNLOADING", "COMPLETED")
        save_screenshot(window, "crash-banner")
        await windows._shutdown_all()


def test_a_lowered_limit_is_explained(themed_app) -> None:
    from reelqueue.ui.accounts_view import AccountCard, AccountCardData

    card = AccountCard(AccountCardData(name="studio", provider_title="Mock", status="ready",
                                       enabled=True, capacity=1, live=4))
    assert card.over_label.text() == "4 running, limit now 1: no new renders until below"
    assert not card.over_label.isHidden()
    card.set_data(AccountCardData(name="studio", provider_title="Mock", status="ready",
                                  enabled=True, capacity=4, live=4))
    assert card.over_label.isHidden()
    card.stop_timers()
    card.deleteLater()
