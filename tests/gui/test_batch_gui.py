"""A whole small batch against the mock provider, seen through the window."""

from __future__ import annotations

from pathlib import Path

from reelqueue.cli.cmd_demo import DEMO_ACCOUNTS, prepare
from reelqueue.resources import resource
from reelqueue.ui.job_detail import JobDetailDialog
from reelqueue.ui.settings import read_marker
from tests.gui.conftest import WindowHarness, on_qloop, save_screenshot, until


@on_qloop
async def test_demo_batch_runs_to_completion_in_the_window(windows: WindowHarness, app_ctx) -> None:
    # The mock's own fast renders: the demo's 20-26 s pace is tested headless (test_demo).
    prepare(app_ctx, resource("sample_prompts.csv"), render_seconds=None)
    controller = await windows.open(app_ctx, start=True)
    window, table = controller.window, controller.model.table
    assert len(table) == 12
    assert set(window.accounts.cards) == {name for name, _ in DEMO_ACCOUNTS}

    # mid-batch: renders are live on the cards and in the table
    await until(lambda: table.stats.by_state["RENDERING"] >= 3, 30)
    # The cards and the status bar follow within a tick (no fixed sleep: the condition).
    await until(lambda: any(card.gauge.live for card in window.accounts.cards.values()), 5)
    await until(lambda: "rendering" in window.totals_label.text(), 5)
    save_screenshot(window, "main-window-running")

    await until(lambda: table.stats.by_state["COMPLETED"] == 12, 90)
    cards = window.accounts.cards
    await until(lambda: sum(int(card.completed.text()) for card in cards.values()) == 12
                and all(card.gauge.live == 0 for card in cards.values()), 5)
    assert controller.model.rowCount() == 12
    assert all(row.state == "COMPLETED" for row in table.rows)
    assert all(Path(row.output_path).is_file() for row in table.rows)
    cards = window.accounts.cards
    assert sum(int(card.completed.text()) for card in cards.values()) == 12
    assert all(card.gauge.live == 0 and card.chip.text() == "ready" for card in cards.values())
    assert all(sum(card.sparkline.values) == int(card.completed.text())
               for card in cards.values())
    assert window.totals_label.text().startswith("12 jobs · 12 completed · 0 failed")
    # What the provider charged reaches the cards as renders complete (no reload needed).
    spent = {row.account: 0.0 for row in table.rows}
    for row in table.rows:
        spent[row.account] += row.cost or 0.0
    assert sum(spent.values()) > 0, "the mock reports a cost for every render"
    for name, card in cards.items():
        if spent.get(name):
            assert card.spend.text().startswith("Practice spend $")  # the mock: practice prices
            assert "$0.00" not in card.spend.text()
    # The "finished" banner comes on the next slow tick (once a second).
    await until(lambda: window.banners.get("batch:1") is not None, 5)
    banner = window.banners.get("batch:1")
    assert banner is not None and "12 completed, 0 failed" in banner.text
    save_screenshot(window, "main-window")
    save_screenshot(cards["mock-medium"], "account-card")

    # a job's detail: parameters, history from the ledger, the output file
    dialog = controller.keeper.show_job(table.rows[0].id)
    assert isinstance(dialog, JobDetailDialog) and not dialog.isModal()
    await until(lambda: dialog.job is not None)
    events = [entry.event for entry in dialog.ledger_model.entries]
    assert events[0] == "claimed" and "completed" in events
    assert dialog.open_button.isEnabled() and not dialog.retry_button.isEnabled()
    assert dialog.chip.text() == "completed"
    save_screenshot(dialog, "job-detail")
    # A finished video retried with a new seed: a new job beside it, priced and confirmed
    # first; the finished job and its file stay as they are (issue 23).
    original = table.rows[0]
    dialog.new_seed.setChecked(True)
    dialog.seed.setValue(77)
    assert dialog.retry_button.isEnabled()
    dialog.retry_button.click()
    await until(lambda: window.banners.get("retry") is not None, 10)
    confirm = window.banners.get("retry")
    assert "est. $" in confirm.text
    assert len(table.rows) == 12, "nothing may be added before the user says so"
    next(iter(confirm.buttons.values())).click()
    await until(lambda: len(table.rows) == 13, 10)
    variant = table.rows[-1]
    assert variant.prompt == original.prompt and variant.output_path != original.output_path
    assert "seed77" in variant.output_path
    kept = table.row(original.id)
    assert kept.state == "COMPLETED" and kept.output_path == original.output_path
    await until(lambda: table.row(variant.id).state == "COMPLETED", 60)

    assert await windows.close(controller) == 0
    assert read_marker(app_ctx.data_dir).running is False


@on_qloop
async def test_failed_job_detail_explains_and_retries(windows: WindowHarness, app_ctx,
                                                tmp_path) -> None:
    sheet = tmp_path / "policy.csv"
    sheet.write_text("name,prompt\nrefused,A scene [[mock:content_policy]]\n", "utf-8")
    prepare(app_ctx, sheet)
    controller = await windows.open(app_ctx, start=True)
    table = controller.model.table
    await until(lambda: table.stats.by_state["FAILED"] == 1, 30)
    job = table.rows[0]
    assert job.error_label == "content policy"
    dialog = controller.keeper.show_job(job.id)
    await until(lambda: dialog.job is not None)
    assert dialog.error_box.isVisibleTo(dialog)
    assert "safety filter" in dialog.error_hint.text()
    assert dialog.retry_button.isEnabled()
    save_screenshot(dialog, "job-detail-failed")
    dialog.new_seed.setChecked(True)
    dialog.seed.setValue(1234)
    dialog.retry_button.click()
    # A new seed renders again, at a price: the window says what it will cost and waits
    # for the user (issue 10, "Retry asks before it pays").
    await until(lambda: controller.window.banners.get("retry") is not None, 10)
    confirm = controller.window.banners.get("retry")
    assert "rendered again (est. $" in confirm.text
    assert dialog.job.params.get("seed") != 1234, "nothing may change before the user says so"
    next(iter(confirm.buttons.values())).click()
    await until(lambda: dialog.job.params.get("seed") == 1234, 10)
    # the retry runs (and the provider refuses it again): the table follows
    await until(lambda: table.row(job.id).state == "FAILED" and table.row(job.id).attempts == 1
                and table.stats.by_account.get(("mock-small", "FAILED"), 0) >= 1, 30)
