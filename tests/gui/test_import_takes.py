"""The import dialog's takes (issue 35 item 1): the spinner sets every row's repeat, each
take gets its own seed, and above 10 takes the estimate says their price first."""

from __future__ import annotations

from reelqueue.resources import resource
from tests.gui.conftest import WindowHarness, on_qloop, until


@on_qloop
async def test_the_takes_spinner_repeats_every_row(windows: WindowHarness, app_ctx) -> None:
    controller = await windows.open(app_ctx, start=False)
    dialog = controller.keeper.open_import(resource("sample_prompts.csv"))
    await until(lambda: dialog.plan is not None)
    assert dialog.takes.value() == 1 and len(dialog.plan.new_jobs) == 12
    dialog.takes.setValue(2)
    await until(lambda: len(dialog.plan.new_jobs) == 24)
    assert dialog.current_options().takes == 2
    assert "Takes:" not in dialog.estimate_label.text()
    seeds: dict[int | None, set[object]] = {}
    for job in dialog.plan.jobs:
        seeds.setdefault(job.row_number, set()).add(job.params.get("seed"))
    assert all(len(pair) == 2 and None not in pair for pair in seeds.values())
    dialog.takes.setValue(11)
    await until(lambda: len(dialog.plan.new_jobs) == 132)
    assert dialog.estimate_label.text().startswith("Takes: up to 11 of a row")
    assert dialog.import_button.text() == "Import 132 jobs"
    dialog.test_run.setChecked(True)
    dialog.test_rows.setValue(1)
    assert dialog.import_button.text() == "Test run 1 row"
    assert dialog.summary_label.text().startswith(
        "<b>11 new jobs</b> (a test run of the first 1 row of 12)")
    assert " · 12 rows · " in dialog.source_label.text()
