"""Dropping a real sheet on the window opens the import dialog; importing adds the jobs."""

from __future__ import annotations

import shutil
from pathlib import Path

from PySide6.QtCore import QMimeData, QPoint, QPointF, Qt, QUrl
from PySide6.QtGui import QDragEnterEvent, QDropEvent
from PySide6.QtWidgets import QApplication

from reelqueue.resources import resource
from reelqueue.ui.import_dialog import ImportDialog
from tests.gui.conftest import WindowHarness, on_qloop, save_screenshot, until


def drop_file(widget, path: Path) -> tuple[bool, bool]:
    mime = QMimeData()
    mime.setUrls([QUrl.fromLocalFile(str(path))])
    where = QPoint(widget.width() // 2, widget.height() // 2)
    buttons, modifiers = Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier
    # Qt 6 takes a QPoint for drag-enter and a QPointF for drop.
    enter = QDragEnterEvent(where, Qt.DropAction.CopyAction, mime, buttons, modifiers)
    QApplication.sendEvent(widget, enter)
    drop = QDropEvent(QPointF(where), Qt.DropAction.CopyAction, mime, buttons, modifiers)
    QApplication.sendEvent(widget, drop)
    return enter.isAccepted(), drop.isAccepted()


@on_qloop
async def test_dropped_sheet_goes_through_the_dialog_into_the_table(windows: WindowHarness,
                                                              app_ctx, tmp_path) -> None:
    sheet = tmp_path / "spring prompts.csv"
    shutil.copyfile(resource("sample_prompts.csv"), sheet)
    controller = await windows.open(app_ctx, start=False)
    window = controller.window
    assert window.jobs_stack.currentWidget() is window.empty

    assert drop_file(window, sheet) == (True, True)
    dialogs = [d for d in controller.keeper.open if isinstance(d, ImportDialog)]
    assert len(dialogs) == 1
    dialog = dialogs[0]
    assert dialog.isVisible() and not dialog.isModal()
    await until(lambda: dialog.plan is not None)
    plan = dialog.plan
    assert len(plan.new_jobs) == 12 and not plan.errors
    assert dialog.preview_model.rowCount() == 10
    assert dialog.import_button.isEnabled() and dialog.import_button.text() == "Import 12 jobs"
    assert "Estimated cost $0.80" in dialog.estimate_label.text()
    save_screenshot(dialog, "import-dialog")

    dialog.import_button.click()
    await until(lambda: len(controller.model.table) == 12)
    assert dialog not in controller.keeper.open  # closed and released
    assert window.jobs_stack.currentWidget() is window.table
    assert controller.model.rowCount() == 12
    assert controller.model.table.stats.by_state["QUEUED"] == 12
    assert window.batch_filter.findText("spring prompts") > 0
    banner = window.banners.get("imported")
    assert banner is not None and "12 new jobs" in banner.text
    assert "Connect an account" in banner.text  # no account yet: says what to do next

    # the same sheet again: everything is already there, nothing to import
    drop_file(window, sheet)
    again = [d for d in controller.keeper.open if isinstance(d, ImportDialog)][-1]
    await until(lambda: again.plan is not None)
    assert again.plan.already_present == 12
    assert not again.import_button.isEnabled()
    again.close()


@on_qloop
async def test_a_test_run_imports_only_the_first_rows(windows: WindowHarness, app_ctx,
                                                tmp_path) -> None:
    controller = await windows.open(app_ctx, start=False)
    dialog = controller.keeper.open_import(resource("sample_prompts.csv"))
    await until(lambda: dialog.plan is not None)
    dialog.test_run.setChecked(True)
    dialog.test_rows.setValue(3)
    assert dialog.import_button.text() == "Test run 3 rows"
    dialog.import_button.click()
    await until(lambda: len(controller.model.table) == 3)
    assert [r.name for r in controller.model.table.rows] == ["forest_sunrise", "espresso",
                                                              "black_sand_waves"]


@on_qloop
async def test_a_sheet_with_errors_shows_them_before_anything_runs(windows: WindowHarness, app_ctx,
                                                             tmp_path) -> None:
    sheet = tmp_path / "bad.csv"
    sheet.write_text("prompt,duration\nA good one,5\nToo long,500\n,4\n", "utf-8")
    controller = await windows.open(app_ctx, start=False)
    dialog = controller.keeper.open_import(sheet)
    await until(lambda: dialog.plan is not None)
    assert dialog.errors_model.rowCount() >= 1
    assert dialog.tabs.tabText(2).startswith("Errors (")
    assert "refused" in dialog.summary_label.text()
    assert dialog.import_button.text() == "Import 1 job"

    not_a_sheet = tmp_path / "notes.csv"
    not_a_sheet.write_bytes(b"%PDF-1.4 not a sheet")
    broken = controller.keeper.open_import(not_a_sheet)
    await until(lambda: broken.error_label.text() != "")
    assert not broken.import_button.isEnabled()


@on_qloop
async def test_a_spend_cap_set_in_the_dialog_lands_on_the_batch(windows: WindowHarness,
                                                               app_ctx, tmp_path) -> None:
    controller = await windows.open(app_ctx, start=False)
    dialog = controller.keeper.open_import(resource("sample_prompts.csv"))
    await until(lambda: dialog.plan is not None)
    assert dialog.spend_cap() is None  # "no limit" unless asked
    dialog.max_spend.setValue(0.35)
    assert dialog.spend_cap() == 0.35
    dialog.import_button.click()
    await until(lambda: len(controller.model.table) == 12)
    engine = controller.session.app.running_engine
    batches = await engine.store.call(engine.store.sync.list_batches)
    assert [b.settings.get("max_spend") for b in batches] == [0.35]


@on_qloop
async def test_a_test_runs_summary_counts_and_prices_only_its_rows(windows: WindowHarness,
                                                                   app_ctx) -> None:
    """Issue 23: with "Test run: 2 rows" ticked the summary said the whole sheet's count
    and price ("12 new jobs", "Estimated cost $0.80")."""
    controller = await windows.open(app_ctx, start=False)
    dialog = controller.keeper.open_import(resource("sample_prompts.csv"))
    await until(lambda: dialog.plan is not None)
    plan = dialog.plan
    first_two = sum(plan.price_of(job).usd for job in plan.jobs[:2])
    whole = sum(plan.price_of(job).usd for job in plan.jobs)
    assert first_two < whole
    dialog.test_run.setChecked(True)
    dialog.test_rows.setValue(2)
    summary = dialog.summary_label.text()
    assert summary.startswith("<b>2 new jobs</b> (a test run of the first 2 rows of 12)"), summary
    assert "12 new jobs" not in summary
    estimate = dialog.estimate_label.text()
    assert estimate.startswith(f"Estimated cost ${first_two:.2f} — "), estimate
    assert f"${whole:.2f}" not in estimate
    assert dialog.import_button.text() == "Test run 2 rows"
    # The preview says the same: its first two rows are new, the others left out (it
    # listed every row as "new").
    preview = dialog.preview_model
    statuses = [preview.data(preview.index(row, 6)) for row in range(preview.rowCount())]
    assert statuses[:2] == ["new", "new"], statuses
    assert set(statuses[2:]) == {"not in this test run"}, statuses
    QApplication.processEvents()  # the button's new width, before the picture
    save_screenshot(dialog, "import-dialog-test-run")
    dialog.test_run.setChecked(False)
    assert dialog.summary_label.text().startswith("<b>12 new jobs</b>")
    assert {preview.data(preview.index(row, 6)) for row in range(preview.rowCount())} == {"new"}
    assert f"Estimated cost ${whole:.2f}" in dialog.estimate_label.text()


@on_qloop
async def test_images_from_other_folders_are_allowed_from_the_dialog(windows: WindowHarness,
                                                                    app_ctx, tmp_path) -> None:
    """Issue 23: the dialog had no way to take an image from outside the sheet's folder."""
    (tmp_path / "sheets").mkdir()
    (tmp_path / "pictures").mkdir()
    png = b"\x89PNG\r\n\x1a\n" + b"\x00" * 32
    (tmp_path / "sheets" / "here.png").write_bytes(png)
    (tmp_path / "pictures" / "there.png").write_bytes(png)
    sheet = tmp_path / "sheets" / "shots.csv"
    sheet.write_text("prompt,image\n"
                     f"Inside,{tmp_path / 'sheets' / 'here.png'}\n"
                     f"Elsewhere,{tmp_path / 'pictures' / 'there.png'}\n", "utf-8")
    controller = await windows.open(app_ctx, start=False)
    dialog = controller.keeper.open_import(sheet)
    await until(lambda: dialog.plan is not None)
    assert not dialog.images_anywhere.isChecked()
    assert [job.row_number for job in dialog.plan.jobs] == [2]  # the absolute one inside
    [error] = dialog.plan.errors
    assert error.row_number == 3
    assert error.message.startswith(
        f"the image is outside the sheet's folder ({tmp_path / 'sheets'}): ")
    dialog.tabs.setCurrentIndex(2)
    save_screenshot(dialog, "import-dialog-image-elsewhere")
    first = dialog.plan
    dialog.images_anywhere.setChecked(True)
    await until(lambda: dialog.plan is not first)
    assert dialog.plan.options.allow_images_anywhere
    assert [job.row_number for job in dialog.plan.jobs] == [2, 3]
    assert not dialog.plan.errors
    assert dialog.import_button.text() == "Import 2 jobs"


@on_qloop
async def test_routes_and_each_candidates_price_show_in_the_preview(windows: WindowHarness,
                                                                   app_ctx, tmp_path) -> None:
    """Issue 24: a row naming several providers shows its candidates best first with their
    prices (what the tolerance moved and who was left out in its tooltip); the Routing tab
    sets the batch's route, rank and tolerance; the worst case shows beside the estimate."""
    sheet = tmp_path / "shots.csv"
    sheet.write_text("prompt,providers,duration\n"
                     "a lighthouse at dusk,runway|luma|veo,7\n"
                     "a fox in the snow,,5\n", "utf-8")
    controller = await windows.open(app_ctx, start=False)
    dialog = controller.keeper.open_import(sheet)
    await until(lambda: dialog.plan is not None)
    # exact: a provider that does not take 7 s is left out
    first = dialog.plan
    routed = dialog.preview_model.rows[0]
    assert routed.route is not None
    # only runway takes 7 s as written; luma and veo are left out, each with why
    assert dialog.preview_model.index(0, 3).data() == "runway $0.84"
    tip = dialog.preview_model.index(0, 3).data(Qt.ItemDataRole.ToolTipRole)
    assert "left out: luma:" in tip and "left out: veo:" in tip, tip
    dialog.tabs.setCurrentIndex(3)
    dialog.route_policy.setCurrentIndex(dialog.route_policy.findData("cheapest"))
    dialog.tolerance.setCurrentIndex(dialog.tolerance.findData("nearest-duration"))
    dialog.route.setText("luma, runway")
    dialog.route.textEdited.emit("luma, runway")
    await until(lambda: dialog.plan is not first and dialog.plan.options.route_policy
                == "cheapest" and dialog.plan.options.route == ("luma", "runway"))
    plan = dialog.plan
    assert plan.options.tolerance == "nearest-duration"
    first_route, second_route = (row.route for row in dialog.preview_model.rows)
    assert first_route is not None and second_route is not None  # the batch route too
    prices = [c.price for c in first_route.usable()]
    assert len(prices) == 3 and prices == sorted(prices), "cheapest first, none left out"
    shown = dialog.preview_model.index(0, 3).data()
    assert shown.count(" → ") == 2 and shown.startswith("luma $"), shown
    assert "duration 7 → " in dialog.preview_model.index(0, 3).data(
        Qt.ItemDataRole.ToolTipRole)
    assert "Worst case" in dialog.estimate_label.text()
    dialog.tabs.setCurrentIndex(0)
    save_screenshot(dialog, "import-dialog-routes")
    dialog.close()
