"""The window's actions on jobs (issue 13): cancel asks naming what may be charged, retry
of failed jobs leaves permanent failures out unless asked, priority and paused batches."""

from __future__ import annotations

import time
from pathlib import Path

from PySide6.QtWidgets import QMessageBox

from reelqueue.application import imports
from reelqueue.cli.cmd_demo import prepare
from reelqueue.cli.context import CliContext
from reelqueue.domain.models import BatchSpec, JobSpec
from reelqueue.store.base import ClaimParams, JobError
from reelqueue.store.lockfile import make_private_dir
from reelqueue.store.sqlite import SqliteStore
from tests.gui.conftest import WindowHarness, on_qloop, save_screenshot, until

PRICED = {"model": "mock-1", "duration": 5}  # mock-1: $0.01 a second


@on_qloop
async def test_cancel_asks_naming_renders_that_may_be_charged(
        windows: WindowHarness, app_ctx: CliContext, tmp_path: Path) -> None:
    sheet = tmp_path / "long.csv"
    sheet.write_text("name,prompt\n" + "".join(
        f"s{i},Scene {i} [[mock:render_seconds=60]]\n" for i in range(12)), "utf-8")
    prepare(app_ctx, sheet)
    controller = await windows.open(app_ctx, start=True)
    table = controller.model.table
    await until(lambda: table.stats.by_state["RENDERING"] == 9
                and table.stats.by_state["QUEUED"] == 3, 60)
    controller.actions.pause_queue()
    queued = [r.id for r in table.rows if r.state == "QUEUED"]
    # The Cancel button and Del ask even for one queued job (a key pressed by mistake).
    window = controller.window
    window.table.selectRow(window.model.view_row_of(queued[1]))
    window.cancel_action.trigger()
    asked = controller.actions.cancel_box
    assert isinstance(asked, QMessageBox) and asked.text() == "Cancel 1 job?"
    asked.button(QMessageBox.StandardButton.No).click()
    await until(lambda: not asked.isVisible(), 5)
    assert table.row(queued[1]).state == "QUEUED"
    # One queued job from the context menu: cancelled without a question.
    assert controller.actions.cancel(queued[:1]) is None
    await until(lambda: table.row(queued[0]).state == "CANCELLED", 10)

    ids = [r.id for r in table.rows]
    box = controller.actions.cancel(ids)
    assert box is not None and box.isVisible()
    assert box.text() == "Cancel 11 jobs?"
    assert "9 are rendering now and may already be charged" in box.informativeText()
    assert box.defaultButton() is box.button(QMessageBox.StandardButton.No)
    box.button(QMessageBox.StandardButton.No).click()  # the user keeps them
    await until(lambda: not box.isVisible(), 5)
    assert table.stats.by_state["RENDERING"] == 9 and table.stats.by_state["QUEUED"] == 2

    box = controller.actions.cancel(ids)
    assert box is not None
    box.button(QMessageBox.StandardButton.Yes).click()
    await until(lambda: table.stats.by_state["CANCELLED"] == 12, 20)
    banner = controller.window.banners.get("cancelled")
    assert banner is not None
    assert banner.text.startswith("Cancelled 11 jobs, 9 renders stopped while running")
    assert "1 had already finished" in banner.text
    assert banner.kind != "success"


def _failed_journal(ctx: CliContext) -> dict[str, int]:
    """A content-policy refusal and a retryable failure, neither with a render."""
    make_private_dir(ctx.data_dir)
    store = SqliteStore.open(ctx.journal_path, now=time.time())
    batch = store.create_batch(BatchSpec("b", "s.csv", str(ctx.videos_dir)), time.time())
    store.add_jobs(batch.id, [JobSpec(n, n, "mock", str(ctx.videos_dir / f"{n}.mp4"),
                                      params=dict(PRICED)) for n in ("policy", "flaky")],
                   time.time())
    from reelqueue.domain.models import AccountSpec

    store.add_account(AccountSpec("acct", "mock", 4, "http://127.0.0.1:9"), time.time())
    ids = {}
    for label in ("content policy", "provider error"):
        claim = store.claim_next_job(ClaimParams("acct", "i", time.time(), 60))
        assert claim is not None
        ids[claim.job.prompt] = claim.job.id
        kind = "permanent" if label == "content policy" else "retryable"
        store.mark_failed(claim.token, JobError(kind, label, "no"), time.time())
    store.close()
    return ids


@on_qloop
async def test_retry_failed_leaves_permanent_failures_out_unless_asked(
        windows: WindowHarness, app_ctx: CliContext) -> None:
    ids = _failed_journal(app_ctx)
    controller = await windows.open(app_ctx, start=False)
    table, banners = controller.model.table, controller.window.banners
    controller.window.retry_action.trigger()
    await until(lambda: banners.get("retry") is not None, 10)
    banner = banners.get("retry")
    # Same words as 'reelqueue retry --failed', and a price waits for the user.
    assert "1 job: 1 will be rendered again (est. $0.05)" in banner.text
    assert "1 permanent failure (content policy, invalid input...) was left out" \
        in banner.text
    assert set(banner.buttons) == {"Retry (est. $0.05)",
                                   "Also retry 1 refused by the provider's rules"}
    assert table.row(ids["flaky"]).state == "FAILED", "nothing changes before the click"
    banner.buttons["Retry (est. $0.05)"].click()
    await until(lambda: table.row(ids["flaky"]).state == "QUEUED", 10)
    assert table.row(ids["policy"]).state == "FAILED", "the refusal was left out"
    await until(lambda: banners.get("retry") is not None
                and banners.get("retry").text.startswith("Queued 1 job again."), 10)
    banners.get("retry").buttons["Also retry 1 refused by the provider's rules"].click()
    await until(lambda: "Retry (est. $0.05)" in getattr(banners.get("retry"), "buttons", {})
                and "permanent" not in banners.get("retry").text, 10)
    banners.get("retry").buttons["Retry (est. $0.05)"].click()
    await until(lambda: table.row(ids["policy"]).state == "QUEUED", 10)


@on_qloop
async def test_a_batch_moved_to_the_front_and_paused_from_the_window(
        windows: WindowHarness, app_ctx: CliContext) -> None:
    make_private_dir(app_ctx.data_dir)
    store = SqliteStore.open(app_ctx.journal_path, now=time.time())
    for name in ("first", "second"):
        batch = store.create_batch(BatchSpec(name, "s.csv", str(app_ctx.videos_dir)),
                                   time.time())
        store.add_jobs(batch.id, [JobSpec(f"{name}{i}", "p", "mock",
                                          str(app_ctx.videos_dir / f"{name}{i}.mp4"))
                                  for i in range(2)], time.time())
    store.close()
    controller = await windows.open(app_ctx, start=False)
    window, engine = controller.window, controller.session.app.running_engine
    controller.actions.prioritize_batch(2)
    await until(lambda: window.banners.get("priority") is not None, 10)
    assert "Batch “second” moved to the front: its 2 unfinished jobs" in \
        window.banners.get("priority").text
    controller.actions.pause_batch(1, True)
    await until(lambda: window.paused_batches == {1}, 10)
    assert window.batch_filter.findText("first (paused)") > 0
    assert "paused: its waiting jobs are not started" in \
        window.banners.get("batch-paused:1").text
    jobs = await engine.store.call(engine.store.sync.list_jobs)
    assert [j.priority for j in jobs] == [0, 0, 1, 1]
    batch = await engine.store.call(engine.store.sync.get_batch, 1)
    assert batch is not None and batch.settings.get("paused") is True
    window.banners.get("batch-paused:1").buttons["Resume"].click()
    await until(lambda: not window.paused_batches, 10)
    assert window.batch_filter.findText("first") > 0


@on_qloop
async def test_a_finished_demo_offers_to_run_again(windows: WindowHarness,
                                                    tmp_path: Path) -> None:
    ctx = CliContext(data_dir=tmp_path / "data" / "demo", videos_dir=tmp_path / "videos")
    sheet = tmp_path / "two.csv"
    sheet.write_text("name,prompt\na,One scene\nb,Two scene\n", "utf-8")
    prepare(ctx, sheet, render_seconds=None)
    controller = await windows.open(ctx, start=True)
    table, banners = controller.model.table, controller.window.banners
    await until(lambda: banners.get("batch:1") is not None, 60)
    banners.get("batch:1").buttons["Run the demo again"].click()
    # The "runs again" banner says what the command did; the table shows the new rows as
    # their events and the re-read arrive (on a busy machine after the banner: waited for
    # by progress, not assumed in order).
    await until(lambda: banners.get("demo") is not None, 20)
    await until(lambda: len(table) == 2 + 12, 20)
    await until(lambda: set(controller.batches.values()) == {"demo", "demo 2"}, 20)
    assert "The demo runs again: 12 new jobs in batch “demo 2”" in banners.get("demo").text


def _unaskable_unknown_and_refused_journal(ctx: CliContext) -> dict[str, int]:
    """A create whose outcome stayed unknown on an account whose provider cannot be asked
    (parked: error_class 'unknown', label 'submit outcome unknown') and, with
    ``refused``, a content-policy refusal."""
    from reelqueue.domain.models import AccountSpec

    make_private_dir(ctx.data_dir)
    store = SqliteStore.open(ctx.journal_path, now=time.time())
    batch = store.create_batch(BatchSpec("b", "s.csv", str(ctx.videos_dir)), time.time())
    store.add_jobs(batch.id, [JobSpec(n, n, "mock", str(ctx.videos_dir / f"{n}.mp4"),
                                      params=dict(PRICED)) for n in ("unknown", "policy")],
                   time.time())
    store.add_account(AccountSpec("acct", "mock", 4, "http://127.0.0.1:9",
                                  settings={"reconcile": "none"}), time.time())
    ids = {}
    claim = store.claim_next_job(ClaimParams("acct", "i", time.time(), 60))
    assert claim is not None and store.mark_submitting(claim.token, "ct-u", time.time())
    assert store.park_job(claim.token, JobError(
        "unknown", "submit outcome unknown", "Submit outcome unknown: no answer"),
        time.time())
    ids[claim.job.prompt] = claim.job.id
    claim = store.claim_next_job(ClaimParams("acct", "i", time.time(), 60))
    assert claim is not None
    store.mark_failed(claim.token, JobError("permanent", "content policy", "no"), time.time())
    ids[claim.job.prompt] = claim.job.id
    store.close()
    return ids


@on_qloop
async def test_retry_failed_never_calls_an_unknown_outcome_refused(
        windows: WindowHarness, app_ctx: CliContext) -> None:
    """Issue 23: bulk "Retry failed" counted a submit outcome unknown as "refused by the
    provider's rules (content policy...)" and priced its re-render without saying the
    first create may already be charged."""
    ids = _unaskable_unknown_and_refused_journal(app_ctx)
    controller = await windows.open(app_ctx, start=False)
    table, banners = controller.model.table, controller.window.banners
    await until(lambda: table.row(ids["unknown"]) is not None, 10)
    assert table.row(ids["unknown"]).state == "PARKED"
    controller.window.retry_action.trigger()
    await until(lambda: banners.get("retry") is not None, 10)
    banner = banners.get("retry")
    assert "1 permanent failure (content policy, invalid input...) was left out" \
        in banner.text
    assert ("1 marked “outcome unknown” that cannot be looked for in the provider's "
            "records (a retry creates them again, and the first create may already be "
            "charged) was left out") in banner.text
    assert list(banner.buttons) == ["Also retry these 2 (1 refused, 1 outcome unknown)"]
    save_screenshot(controller.window, "retry-failed-unknown-outcome")

    # Only the unknown one in the filter: never "refused by the provider's rules".
    await controller.actions._retry_failed([ids["unknown"]])
    banner = banners.get("retry")
    assert "refused" not in " ".join([banner.text, *banner.buttons]), banner.text
    [also] = banner.buttons
    assert also == "Also retry 1 (outcome unknown)"
    assert "and the first create may already be charged) was left out" in banner.text
    banner.buttons[also].click()
    # Asked for: its re-render is priced, and the button that pays says the first create
    # may already be charged (the retry plan's words, in the text too).
    await until(lambda: "Retry (est. $0.05; 1 may already be charged)"
                in getattr(banners.get("retry"), "buttons", {}), 10)
    banner = banners.get("retry")
    assert "1 will be rendered again (est. $0.05)" in banner.text
    assert ("for 1 of them (est. $0.05) the first create may already be charged, so this "
            "may pay twice") in banner.text
    assert table.row(ids["unknown"]).state == "PARKED", "nothing changes before the click"
    banner.buttons["Retry (est. $0.05; 1 may already be charged)"].click()
    await until(lambda: table.row(ids["unknown"]).state == "QUEUED", 10)


def _unknown_journal(ctx: CliContext) -> int:
    """A create whose outcome stayed unknown: the provider's records held two renders
    that could be it (issue 19), so the job is parked for the user."""
    from reelqueue.domain.models import AccountSpec

    make_private_dir(ctx.data_dir)
    store = SqliteStore.open(ctx.journal_path, now=time.time())
    batch = store.create_batch(BatchSpec("b", "s.csv", str(ctx.videos_dir)), time.time())
    store.add_jobs(batch.id, [JobSpec("u", "a cat", "mock", str(ctx.videos_dir / "u.mp4"),
                                      params=dict(PRICED))], time.time())
    store.add_account(AccountSpec("acct", "mock", 4, "http://127.0.0.1:9",
                                  settings={"reconcile": "search"}), time.time())
    claim = store.claim_next_job(ClaimParams("acct", "i", time.time(), 60))
    assert claim is not None and store.mark_submitting(claim.token, "ct-u", time.time())
    store.note("reconcile_unresolved", time.time(), job_id=claim.job.id, account="acct",
               detail={"candidates": [
                   {"id": "r-mine", "created_at": time.time() - 5, "status": "succeeded"},
                   {"id": "r-other", "created_at": time.time() - 3, "status": "succeeded"}]})
    assert store.park_job(claim.token, JobError(
        "unknown", "submit outcome unknown", "Submit outcome unknown: two candidates"),
        time.time())
    store.close()
    return claim.job.id


@on_qloop
async def test_an_unknown_outcome_is_resolved_in_the_window_by_picking_its_render(
        windows: WindowHarness, app_ctx: CliContext) -> None:
    job_id = _unknown_journal(app_ctx)
    controller = await windows.open(app_ctx, start=False)
    table = controller.model.table
    await until(lambda: table.row(job_id) is not None, 10)
    assert table.row(job_id).state == "PARKED"
    dialog = controller.keeper.show_job(job_id)
    await until(lambda: dialog.job is not None, 10)
    assert dialog.resolve_box.isVisible() and dialog.use_render.isVisible()
    assert [dialog.candidates.itemData(i) for i in range(dialog.candidates.count())] == [
        "r-mine", "r-other"]
    assert dialog.chip.text() == "outcome unknown"
    assert "not counted as failed" in dialog.error_hint.text()
    dialog.use_render.click()  # the first candidate: r-mine
    await until(lambda: table.row(job_id).state == "QUEUED", 10)
    store = SqliteStore.open(app_ctx.journal_path, now=time.time())
    job = store.get_job(job_id)
    events = [e.event for e in store.ledger(job_id)]
    store.close()
    assert job is not None and job.provider_job_id == "r-mine" and job.account == "acct"
    assert "resolved_by_user" in events
    await until(lambda: not dialog.resolve_box.isVisible(), 10)


def _state_cells(model) -> dict[int, str]:  # type: ignore[no-untyped-def]
    from reelqueue.ui.jobs_model import COL_STATE, JobRowRole

    cells = {}
    for r in range(model.rowCount()):
        index = model.index(r, COL_STATE)
        cells[index.data(JobRowRole).id] = index.data()
    return cells


@on_qloop
async def test_moved_to_the_front_shows_in_the_state_column(
        windows: WindowHarness, app_ctx: CliContext) -> None:
    """Issue 34 (N6-N13 c): "Move to the front" showed nowhere in the table, so a user
    could not see which jobs go first."""
    make_private_dir(app_ctx.data_dir)
    store = SqliteStore.open(app_ctx.journal_path, now=time.time())
    batch = store.create_batch(BatchSpec("b", "s.csv", str(app_ctx.videos_dir)), time.time())
    store.add_jobs(batch.id, [JobSpec(f"j{i}", "p", "mock",
                                      str(app_ctx.videos_dir / f"j{i}.mp4"))
                              for i in range(3)], time.time())
    store.prioritize_jobs([3], time.time())  # before the window opened: read by its page
    store.close()
    controller = await windows.open(app_ctx, start=False)
    model = controller.window.model
    await until(lambda: len(_state_cells(model)) == 3, 10)
    cells = _state_cells(model)
    assert "↑ front" in cells[3] and "↑ front" not in cells[1], cells
    controller.actions.prioritize([2])
    await until(lambda: "↑ front" in _state_cells(model)[2], 10)
    assert "↑ front" not in _state_cells(model)[1]
    controller.actions.prioritize_batch(batch.id)  # its rows follow without a re-read
    await until(lambda: "↑ front" in _state_cells(model)[1], 10)


@on_qloop
async def test_a_batch_cap_is_raised_from_the_stalled_banner(
        windows: WindowHarness, app_ctx: CliContext) -> None:
    """Issue 34 (N6-N13 e): the stalled banner of a batch held by its spend cap quoted a
    command line to type; the window now asks for the new cap and sets it."""
    from reelqueue.engine.events import EngineStateEvent, StallReason

    make_private_dir(app_ctx.data_dir)
    store = SqliteStore.open(app_ctx.journal_path, now=time.time())
    batch = store.create_batch(BatchSpec("shots", "s.csv", str(app_ctx.videos_dir)),
                               time.time())
    store.add_jobs(batch.id, [JobSpec("s0", "p", "mock", str(app_ctx.videos_dir / "s0.mp4"),
                                      metadata={"price": 0.05})], time.time())
    store.update_batch_settings(batch.id, {"max_spend": 0.0}, time.time())
    store.close()
    controller = await windows.open(app_ctx, start=False)
    window = controller.window
    controller._on_engine_state(EngineStateEvent(
        "stalled", time.time(), waiting=1, reasons=(StallReason(
            "shots", "spend_cap", detail="spend cap reached: $0.00 of $0.00, 1 waiting"),)))
    banner = window.banners.get("stalled")
    assert banner is not None
    assert "reelqueue batch cap" not in banner.text, banner.text
    assert "Raise batch cap…" in banner.buttons, banner.buttons
    banner.buttons["Raise batch cap…"].click()
    await until(lambda: controller.actions.cap_box is not None
                and controller.actions.cap_box.isVisible(), 10)
    box = controller.actions.cap_box
    assert box is not None and "shots" in box.labelText() and "$0.00" in box.labelText()
    box.setTextValue("2.50")
    box.accept()
    engine = controller.session.app.journal
    await until(lambda: window.banners.get("batch-cap:1") is not None, 10)
    got = await engine.get_batch(batch.id)
    assert got is not None and got.settings.get("max_spend") == 2.5
    assert "$2.50" in window.banners.get("batch-cap:1").text


@on_qloop
async def test_a_job_pinned_to_an_account_not_here_says_why_it_waits(
        windows: WindowHarness, app_ctx: CliContext) -> None:
    """Issue 34 (N1): a row pinned to an account that does not exist waited forever, the
    window saying 'mock · any' and nothing about why."""
    from reelqueue.domain.models import AccountSpec
    from reelqueue.engine.events import EngineStateEvent, StallReason
    from reelqueue.ui.jobs_model import COL_ACCOUNT

    make_private_dir(app_ctx.data_dir)
    store = SqliteStore.open(app_ctx.journal_path, now=time.time())
    store.add_account(AccountSpec("m", "mock", 2), time.time())
    batch = store.create_batch(BatchSpec("b", "s.csv", str(app_ctx.videos_dir)), time.time())
    store.add_jobs(batch.id, [JobSpec("x0", "p", "mock", str(app_ctx.videos_dir / "x0.mp4"),
                                      pinned_account="studio-x")], time.time())
    store.close()
    controller = await windows.open(app_ctx, start=False)
    window = controller.window
    await until(lambda: window.banners.get("not-configured") is not None, 10)
    banner = window.banners.get("not-configured")
    assert "1 job pinned to account studio-x, which is not configured here" in banner.text
    assert "Connect an account…" in banner.buttons
    await until(lambda: window.model.rowCount() == 1, 10)
    assert window.model.index(0, COL_ACCOUNT).data() == "studio-x (pinned)"
    # Once nothing else can start, the Stalled banner says the same.
    controller._on_engine_state(EngineStateEvent(
        "stalled", time.time(), waiting=1, reasons=(StallReason(
            "studio-x", "not_configured",
            detail="1 job pinned to account studio-x, which is not configured here"),)))
    stalled = window.banners.get("stalled")
    assert stalled is not None
    assert "1 job pinned to account studio-x, which is not configured here (add the " \
        "account" in stalled.text, stalled.text
    # The import dialog says it of a sheet's pinned rows before Import (never refused).
    from reelqueue.ui.import_dialog import ImportDialog

    sheet = app_ctx.data_dir / "pins.csv"
    sheet.write_text("name,prompt,duration,account\na,one,4,\nb,two,4,studio-y\n"
                     "c,three,4,m\n", encoding="utf-8")
    options = controller.session.import_options()
    plan = await imports.plan_import(controller.session.app, sheet, options)
    dialog = ImportDialog(sheet, options, window)
    try:
        dialog.set_plan(plan)
        dialog.show()
        assert dialog.pinned_label.isVisible()
        assert dialog.pinned_label.text().startswith(
            "Row 3: pinned to account studio-y, which is not configured here;")
        assert dialog.import_button.isEnabled()
    finally:
        dialog.stop_timers()
        dialog.deleteLater()
