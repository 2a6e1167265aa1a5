"""Every table model through pytest-qt's qtmodeltester, plus the jobs model's update rules."""

from __future__ import annotations

from pathlib import Path

import pytest
from PySide6.QtCore import QItemSelectionModel

from reelqueue.domain.models import Job, LedgerEntry
from reelqueue.domain.render_times import TimeRange
from reelqueue.domain.states import JobState
from reelqueue.engine.events import JobEvent
from reelqueue.engine.queries import JobRow
from reelqueue.intake import PreviewRow, RowError
from reelqueue.ui.import_dialog import PreviewModel, RowErrorModel
from reelqueue.ui.job_detail import LedgerModel
from reelqueue.ui.jobs_data import JobTable, stats_of
from reelqueue.ui.jobs_model import COL_STATE, JobFilter, JobIdRole, JobRowRole, JobTableModel


def make_row(job_id: int, state: str = "QUEUED", account: str | None = None,
             batch_id: int = 1, updated_at: float = 1000.0) -> JobRow:
    return JobRow(id=job_id, batch_id=batch_id, row_number=job_id + 1, name=f"clip{job_id}",
                  prompt=f"prompt number {job_id}", provider="mock", account=account,
                  state=state, sub_status=None, progress=None, attempts=0, max_attempts=3,
                  output_path=f"/videos/{job_id:03}_clip.mp4", error_label=None,
                  error_message=None, attempt_started=None, finished_at=None,
                  updated_at=updated_at, cost=None, estimate=0.05)


def filled_model(count: int = 50) -> JobTableModel:
    model = JobTableModel()
    rows = [make_row(i, "COMPLETED" if i % 5 == 0 else "QUEUED",
                     account="a" if i % 5 == 0 else None) for i in range(1, count + 1)]
    model.add_rows(rows, stats_of(rows))
    return model


def test_jobs_model_passes_the_model_tester(qtmodeltester) -> None:
    model = filled_model()
    qtmodeltester.check(model)
    model.set_filter(JobFilter(states=frozenset({"QUEUED"}), text="1"))
    qtmodeltester.check(model)
    model.add_rows([make_row(100), make_row(101, "FAILED")])
    qtmodeltester.check(model)


def test_empty_jobs_model_passes_the_model_tester(qtmodeltester) -> None:
    qtmodeltester.check(JobTableModel())


def test_preview_and_error_models_pass_the_model_tester(qtmodeltester) -> None:
    preview = PreviewModel()
    preview.set_rows([PreviewRow(2, "a", "a prompt", "mock", {"duration": 5}, "002_a.mp4",
                                 False),
                      PreviewRow(3, "b", "b prompt", "mock", {}, "003_b.mp4", True)])
    qtmodeltester.check(preview)
    errors = RowErrorModel()
    errors.set_errors([RowError(4, "duration", "not a number", "1 to 20 seconds"),
                       RowError(None, "(default model)", "unknown", "mock-1")])
    qtmodeltester.check(errors)


def test_ledger_model_passes_the_model_tester(qtmodeltester) -> None:
    ledger = LedgerModel()
    ledger.set_entries([LedgerEntry(1, 1000.0, "claimed", 1, "a", "t", {"attempt": 1}),
                        LedgerEntry(2, 1001.0, "failed", 1, "a", "t", {"label": "timed out"})])
    qtmodeltester.check(ledger)


def test_one_insert_per_page_and_one_data_changed_per_tick(qtbot) -> None:
    model = JobTableModel()
    inserts: list[tuple[int, int]] = []
    changes: list[tuple[int, int]] = []
    model.rowsInserted.connect(lambda _p, first, last: inserts.append((first, last)))
    model.dataChanged.connect(lambda a, b, _roles: changes.append((a.row(), b.row())))
    model.add_rows([make_row(i) for i in range(1, 1001)])
    model.add_rows([make_row(i) for i in range(1001, 3001)])
    assert inserts == [(0, 999), (1000, 2999)]
    for job_id in (5, 17, 2500):
        for progress in (0.1, 0.2, 0.3):
            assert model.apply_event(JobEvent(job_id, JobState.RENDERING, 2000.0 + progress,
                                              account="a", progress=progress))
    assert changes == []  # nothing reaches the views before the tick
    assert model.flush() == 3
    assert changes == [(4, 2499)]
    assert model.flush() == 0
    assert model.table.row(2500).progress == pytest.approx(0.3)


def test_counters_follow_events() -> None:
    table = JobTable()
    rows = [make_row(i) for i in range(1, 4)]
    table.append(rows, stats_of(rows))
    assert table.stats.by_state["QUEUED"] == 3
    assert table.stats.open_by_batch[1] == 3
    table.apply(JobEvent(1, JobState.CLAIMED, 1001.0, account="a", attempts=1))
    table.apply(JobEvent(1, JobState.RENDERING, 1002.0, account="a", progress=0.5))
    assert [r.id for r in table.live_rows("a")] == [1]
    assert table.stats.by_account[("a", "RENDERING")] == 1
    table.apply(JobEvent(1, JobState.COMPLETED, 1010.0, account="a", progress=1.0))
    assert table.live_rows("a") == []
    assert table.stats.by_account[("a", "COMPLETED")] == 1
    assert table.stats.open_by_batch[1] == 2
    assert table.render_times.range(table.row(1).kind) == TimeRange(9.0, 9.0, 1)
    # an event older than what the row shows (read from the journal after it) is ignored
    table.apply(JobEvent(1, JobState.RENDERING, 1005.0, account="a"))
    assert table.row(1).state == "COMPLETED"


def test_a_job_given_back_unbound_leaves_its_old_accounts_count() -> None:
    """A claim that ends holding nothing gives the job back to the shared queue: the
    journal clears its account, and so does the table (it kept counting the job as
    "waiting here" on the old account's card; issue 23)."""
    table = JobTable()
    rows = [make_row(1), make_row(2)]
    table.append(rows, stats_of(rows))
    table.apply(JobEvent(1, JobState.CLAIMED, 1001.0, account="a", attempts=1))
    table.apply(JobEvent(2, JobState.CLAIMED, 1001.0, account="a", attempts=1))
    # Job 1 back to the queue, unbound; job 2 back but still bound (it holds a render).
    table.apply(JobEvent(1, JobState.QUEUED, 1002.0, unbound=True, attempts=1))
    table.apply(JobEvent(2, JobState.RETRY_WAIT, 1002.0, account="a", attempts=1))
    assert table.row(1).account is None and table.row(2).account == "a"
    assert table.stats.by_account[("a", "QUEUED")] == 0
    assert table.stats.by_account[("a", "RETRY_WAIT")] == 1
    assert table.live_rows("a") == []


def test_filter_change_keeps_the_selected_job(qtbot) -> None:
    from PySide6.QtWidgets import QTableView

    model = filled_model(20)
    view = QTableView()
    qtbot.addWidget(view)
    view.setModel(model)
    row = model.view_row_of(12)
    view.selectionModel().select(model.index(row, 0),
                                 QItemSelectionModel.SelectionFlag.ClearAndSelect
                                 | QItemSelectionModel.SelectionFlag.Rows)
    model.set_filter(JobFilter(text="prompt number 1"))
    selected = view.selectionModel().selectedRows()
    assert [index.data(JobIdRole) for index in selected] == [12]
    assert model.rowCount() == 11  # 1, 10..19
    # a job leaving the filter by an event leaves the view at the next tick
    model.set_filter(JobFilter(states=frozenset({"QUEUED"})))
    before = model.rowCount()
    model.apply_event(JobEvent(12, JobState.CLAIMED, 2000.0, account="a"))
    model.flush()
    assert model.rowCount() == before - 1
    assert model.view_row_of(12) is None
    assert model.index(0, COL_STATE).data(JobRowRole).state == "QUEUED"


def test_job_rows_from_domain_jobs(tmp_path: Path) -> None:
    from reelqueue.engine.queries import price_estimator, to_row

    job = Job(id=7, batch_id=1, job_key="k", row_number=8, name="n", prompt="p",
              provider="mock", params={"duration": 5, "model": "mock-2"}, pinned_account=None,
              priority=0, output_path=str(tmp_path / "n.mp4"), state=JobState.RENDERING,
              attempts=1, max_attempts=3, account="a", claim_token="t", lease_owner="o",
              lease_until=2000.0, client_token="c", provider_job_id="r1",
              sub_status="running", progress=0.4, run_after=0.0, output_size=None,
              output_sha256=None, cost=None, error_class=None, error_label=None,
              error_message=None, created_at=900.0, updated_at=1000.0, started_at=950.0,
              finished_at=None, metadata={})
    row = to_row(job, price_estimator([]))  # the mock's table: mock-2 is $0.02/s
    assert (row.state, row.attempt_started, row.estimate) == ("RENDERING", 950.0, 0.1)
