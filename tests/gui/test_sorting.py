"""The jobs table sorts by any column, the journal doing the sort, on both stores; the
order survives live updates and filters; the window's header drives it."""

from __future__ import annotations

import gc
import time
from pathlib import Path

import pytest
from PySide6.QtCore import QPersistentModelIndex, QPoint, Qt
from PySide6.QtTest import QTest

from reelqueue.cli.context import CliContext
from reelqueue.domain.clock import FakeClock
from reelqueue.domain.models import AccountSpec, BatchSpec, JobSpec
from reelqueue.domain.states import JobState
from reelqueue.engine.events import JobEvent
from reelqueue.engine.queries import to_row
from reelqueue.store.base import JOB_ORDERS, ClaimParams, JobError, Store
from reelqueue.store.sqlite import SqliteStore
from reelqueue.ui import jobs_model
from reelqueue.ui.jobs_model import (
    COL_NAME,
    COL_PROGRESS,
    COL_ROW,
    COL_STATE,
    FEW_KEPT,
    HEADERS,
    SORT_ORDERS,
    JobFilter,
    JobIdRole,
    JobTableModel,
)
from tests.gui.conftest import WindowHarness, on_qloop, until

NAMES = ["delta", "Alpha", "charlie", "bravo", "Echo", "alpha", "", "zulu", "Bravo", "mike"]


def fill(store: Store, tmp_path: Path, now: float) -> None:
    batch = store.create_batch(BatchSpec("b", "s.csv", str(tmp_path)), now)
    store.add_jobs(batch.id, [
        JobSpec(job_key=f"k{i}", prompt=f"{name} prompt {i % 3}", provider="mock", name=name,
                output_path=str(tmp_path / f"{i:03d}_{name}.mp4"),
                row_number=None if i == 4 else (i * 7) % 11)
        for i, name in enumerate(NAMES)], now)


def model_on(store: Store) -> JobTableModel:
    """A jobs model fed from ``store``, its order asked of the store at once."""
    model = JobTableModel()
    model.add_rows([to_row(job, lambda _job: None) for job in store.list_jobs()])
    model.orderRequested.connect(
        lambda order, desc: model.set_order(order, desc, store.job_ids_ordered(order, desc)))
    return model


def shown_ids(model: JobTableModel) -> list[int]:
    return [model.index(r, 0).data(JobIdRole) for r in range(model.rowCount())]


def test_every_column_has_a_journal_order() -> None:
    assert len(SORT_ORDERS) == len(HEADERS)
    assert set(SORT_ORDERS) == set(JOB_ORDERS)


@pytest.mark.parametrize("column", range(len(HEADERS)), ids=lambda c: HEADERS[c])
def test_each_column_sorts_like_the_journal_on_both_stores(
    store: Store, tmp_path: Path, clock: FakeClock, qtmodeltester, column: int
) -> None:
    fill(store, tmp_path, clock.now())
    model = model_on(store)
    model.sort(column, Qt.SortOrder.AscendingOrder)
    ascending = store.job_ids_ordered(SORT_ORDERS[column])
    assert shown_ids(model) == ascending
    model.sort(column, Qt.SortOrder.DescendingOrder)
    assert shown_ids(model) == ascending[::-1]
    qtmodeltester.check(model)
    model.sort(-1)  # the third click: id order again
    assert shown_ids(model) == sorted(ascending)


def test_the_shown_text_is_in_order(store: Store, tmp_path: Path, clock: FakeClock) -> None:
    """Read from the cells, independent of the store's own key: names case-insensitively,
    row numbers with the empty one first."""
    fill(store, tmp_path, clock.now())
    model = model_on(store)
    model.sort(COL_NAME, Qt.SortOrder.AscendingOrder)
    names = [model.index(r, COL_NAME).data() for r in range(model.rowCount())]
    assert names == sorted(NAMES, key=str.lower)
    assert names[1:3] == ["Alpha", "alpha"], "equal names keep id order"
    model.sort(COL_ROW, Qt.SortOrder.DescendingOrder)
    rows = [model.index(r, COL_ROW).data() for r in range(model.rowCount())]
    assert rows[-1] == "" and [int(v) for v in rows[:-1]] == sorted(
        (int(v) for v in rows[:-1]), reverse=True)


def test_sort_survives_live_updates_filters_and_new_rows(
    store: Store, tmp_path: Path, clock: FakeClock, qtmodeltester,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(jobs_model, "RESORT_SECONDS", 0.0)
    fill(store, tmp_path, clock.now())
    model = model_on(store)
    asked: list[tuple[str, bool]] = []
    model.orderRequested.connect(lambda order, desc: asked.append((order, desc)))
    model.sort(COL_STATE, Qt.SortOrder.DescendingOrder)
    assert asked == [("state", True)]
    last = model.index(model.rowCount() - 1, 0)
    kept = QPersistentModelIndex(last)
    job_id = last.data(JobIdRole)
    # The job fails in the journal, and the window hears of it by an event.
    store.add_account(AccountSpec("acct", "mock", 20), clock.now())
    store.prioritize_jobs([job_id], clock.now())
    claim = store.claim_next_job(ClaimParams("acct", "inst", clock.now(), 60.0))
    assert claim is not None and claim.job.id == job_id
    assert store.mark_failed(claim.token, JobError("permanent", "content policy", "no"),
                             clock.now())
    model.apply_event(JobEvent(job_id, JobState.FAILED, clock.now() + 1, account="acct",
                               error_label="content policy"))
    model.flush()
    assert asked == [("state", True)] * 2, "a changed sort value asks for the order again"
    assert shown_ids(model)[0] == job_id, "failed sorts after queued: first when descending"
    assert kept.isValid() and kept.row() == 0 and kept.data(JobIdRole) == job_id
    # An event that changes no sorted value asks nothing.
    count = len(asked)
    model.apply_event(JobEvent(job_id, JobState.FAILED, clock.now() + 2,
                               error_label="content policy"))
    model.flush()
    assert len(asked) == count
    # A filter applies over the order; new rows join it.
    model.set_filter(JobFilter(text="a"))
    qtmodeltester.check(model)
    batch = store.list_batches()[0]
    store.add_jobs(batch.id, [JobSpec(job_key="new", prompt="late prompt", provider="mock",
                                      name="aaa late", output_path=str(tmp_path / "n.mp4"),
                                      row_number=99)], clock.now())
    new = [to_row(j, lambda _job: None) for j in store.list_jobs()][-1:]
    model.add_rows(new)
    model.flush()
    model.set_filter(JobFilter())
    assert shown_ids(model) == store.job_ids_ordered("state", descending=True)
    qtmodeltester.check(model)


def test_a_late_answer_for_an_old_sort_is_dropped(
    store: Store, tmp_path: Path, clock: FakeClock
) -> None:
    fill(store, tmp_path, clock.now())
    model = JobTableModel()
    model.add_rows([to_row(job, lambda _job: None) for job in store.list_jobs()])
    model.sort(COL_NAME, Qt.SortOrder.AscendingOrder)
    model.sort(COL_ROW, Qt.SortOrder.AscendingOrder)
    assert not model.set_order("name", False, store.job_ids_ordered("name"))
    assert shown_ids(model) == sorted(shown_ids(model)), "still id order"
    assert model.set_order("row", False, store.job_ids_ordered("row"))
    assert shown_ids(model) == store.job_ids_ordered("row")


@on_qloop
async def test_clicking_a_header_sorts_the_window(windows: WindowHarness, app_ctx: CliContext,
                                                  tmp_path: Path) -> None:
    app_ctx.data_dir.mkdir(parents=True)
    store = SqliteStore.open(app_ctx.journal_path, now=time.time())
    fill(store, tmp_path, time.time())
    expected = store.job_ids_ordered("name", descending=False)
    store.close()
    controller = await windows.open(app_ctx, start=False)
    table, model = controller.window.table, controller.model
    assert table.horizontalHeader().sortIndicatorSection() == -1
    assert shown_ids(model) == sorted(expected), "id order until a header is clicked"
    header = table.horizontalHeader()

    def click_name() -> None:
        middle = QPoint(header.sectionViewportPosition(COL_NAME)
                        + header.sectionSize(COL_NAME) // 2, header.height() // 2)
        QTest.mouseClick(header.viewport(), Qt.MouseButton.LeftButton, pos=middle)

    click_name()
    await until(lambda: shown_ids(model) == expected, timeout=10)
    assert header.sortIndicatorSection() == COL_NAME
    click_name()
    await until(lambda: shown_ids(model) == expected[::-1], timeout=10)
    click_name()  # the third click: back to id order
    await until(lambda: shown_ids(model) == sorted(expected), timeout=10)


@pytest.mark.parametrize("filtered", [False, True])
def test_an_answer_looked_up_off_the_gui_thread_shows_the_same_as_one_looked_up_on_it(
    store: Store, tmp_path: Path, clock: FakeClock, filtered: bool,
) -> None:
    """The live sort's answer is mapped to rows on a worker thread (jobs_model.order_lookup,
    with the rows' places); rows added after the journal answered follow at the end; the
    table shows the same order, places and selection as when mapped on the GUI thread."""
    fill(store, tmp_path, clock.now())
    models = [model_on(store), model_on(store)]
    order = store.job_ids_ordered("name", False)
    for model in models:
        model.sort(COL_NAME, Qt.SortOrder.AscendingOrder)
        if filtered:
            model.set_filter(JobFilter(text="prompt 1"))
    batch_id = store.list_jobs()[0].batch_id
    store.add_jobs(batch_id, [JobSpec(job_key="late", prompt="late prompt 1", provider="mock",
                                      name="aaa", output_path=str(tmp_path / "late.mp4"))],
                   clock.now())
    late = [to_row(job, lambda _job: None) for job in store.list_jobs() if job.job_key == "late"]
    selected = []
    for model in models:
        model.add_rows(late)  # the journal's answer (read before) does not know it
        keep = QPersistentModelIndex(model.index(1, COL_NAME))
        selected.append((keep, model.index(1, COL_NAME).data(JobIdRole)))
    plain, lookup = models
    assert plain.set_order("name", False, list(order))
    indexes, positions = jobs_model.order_lookup(lookup.table, list(order))
    assert lookup.set_order("name", False, list(order), indexes=indexes, positions=positions)
    assert shown_ids(lookup) == shown_ids(plain)
    assert shown_ids(lookup)[-1] == late[0].id  # added after the answer: at the end
    for job in store.list_jobs():
        assert lookup.view_row_of(job.id) == plain.view_row_of(job.id), job.job_key
    for (keep, job_id), model in zip(selected, models, strict=True):
        assert keep.isValid() and model.index(keep.row(), 0).data(JobIdRole) == job_id


@pytest.mark.parametrize("filtered", [False, True])
def test_the_sorts_order_and_view_hold_nothing_the_collector_walks(
    store: Store, tmp_path: Path, clock: FakeClock, filtered: bool,
) -> None:
    """A live sort makes its order and view again once a second: as lists of 100,000
    indices they sat among the young objects every collection walks (2-5 at a time, 5-12
    ms of the GUI thread each, bench_gui.py). Kept as arrays, nothing in them is walked."""
    fill(store, tmp_path, clock.now())
    for lookup in (False, True):
        model = model_on(store)
        model.sort(COL_NAME, Qt.SortOrder.AscendingOrder)
        if lookup:
            order = store.job_ids_ordered("name", False)
            indexes, positions = jobs_model.order_lookup(model.table, order)
            assert model.set_order("name", False, order, indexes=indexes, positions=positions)
        if filtered:
            model.set_filter(JobFilter(text="prompt 1"))
        assert model.rowCount() > 0
        walked = [name for name, value in vars(model).items()
                  if isinstance(value, list) and gc.is_tracked(value)
                  and len(value) >= model.rowCount()]
        assert walked == []


def test_rows_whose_progress_changes_end_up_in_order_and_unmoved_rows_relay_nothing(
    store: Store, tmp_path: Path, clock: FakeClock, qtmodeltester,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A live sort by progress: renders' progress goes to the journal and the window (as
    the engine writes, then publishes); after the next ticks the table shows the journal's
    order, with a kept selection of more than FEW_KEPT rows on its jobs. An answer that
    moves no row (values changed in their places) tells the views nothing: no re-layout,
    only the changed cells."""
    monkeypatch.setattr(jobs_model, "RESORT_SECONDS", 0.0)
    fill(store, tmp_path, clock.now())
    store.add_account(AccountSpec("acct", "mock", 20), clock.now())
    claims = []
    while (claim := store.claim_next_job(ClaimParams("acct", "inst", clock.now(), 60.0))):
        assert store.mark_submitting(claim.token, f"ct-{claim.job.id}", clock.now())
        assert store.record_submitted(claim.token, f"r-{claim.job.id}", clock.now())
        assert store.mark_rendering(claim.token, clock.now())
        claims.append(claim)
    assert len(claims) == len(NAMES)
    model = JobTableModel()
    model.add_rows([to_row(job, lambda _job: None) for job in store.list_jobs()])
    answers: list[tuple[str, bool]] = []
    model.orderRequested.connect(lambda order, desc: answers.append((order, desc)))
    layouts: list[int] = []
    model.layoutChanged.connect(lambda *_a: layouts.append(1))
    changed: list[int] = []
    model.dataChanged.connect(lambda *_a: changed.append(1))

    def answer() -> None:  # the pager's way: the rows and places looked up off-thread
        order, desc = answers.pop()
        ids = store.job_ids_ordered(order, desc)
        indexes, positions = jobs_model.order_lookup(model.table, ids)
        assert model.set_order(order, desc, ids, indexes=indexes, positions=positions)

    def progress(values: dict[int, float]) -> None:
        clock.advance(1)
        for claim in claims:
            if claim.job.id in values:
                assert store.record_progress(claim.token, "running", values[claim.job.id],
                                             clock.now())
                model.apply_event(JobEvent(claim.job.id, JobState.RENDERING, clock.now(),
                                           sub_status="running",
                                           progress=values[claim.job.id]))
        model.flush()
        if answers:
            answer()

    model.sort(COL_PROGRESS, Qt.SortOrder.DescendingOrder)
    answer()
    kept = [QPersistentModelIndex(model.index(row, COL_NAME)) for row in range(FEW_KEPT + 2)]
    kept_ids = [index.data(JobIdRole) for index in kept]
    ids = [claim.job.id for claim in claims]
    # Every render moves: the last ones now lead.
    progress({job_id: 0.05 * n for n, job_id in enumerate(ids)})
    shown = shown_ids(model)
    assert shown == store.job_ids_ordered("progress", descending=True) == ids[::-1]
    values = [model.index(r, COL_PROGRESS).data(jobs_model.JobRowRole).progress
              for r in range(model.rowCount())]
    assert values == sorted(values, reverse=True)
    assert [index.data(JobIdRole) for index in kept] == kept_ids, "kept indexes follow"
    assert all(index.isValid() for index in kept)
    qtmodeltester.check(model)
    # Each render advances by the same step: the order holds, nothing is laid out again.
    layouts.clear()
    changed.clear()
    progress({job_id: 0.05 * n + 0.01 for n, job_id in enumerate(ids)})
    assert answers == [], "the journal was asked and answered"
    assert shown_ids(model) == shown
    assert layouts == [] and changed == [1]
    # One render overtakes the others: it moves to the top at the next answer.
    progress({ids[0]: 0.99})
    assert shown_ids(model) == [ids[0], *shown[:-1]]
    assert layouts == [1]
    assert [index.data(JobIdRole) for index in kept] == kept_ids


def test_counters_stay_exact_when_progress_notes_skip_the_recount(
    store: Store, tmp_path: Path, clock: FakeClock,
) -> None:
    """A live (sorted) table's events are mostly progress notes, and the table does not
    take their row out of its counters and count it back in (jobs_data.JobTable.apply).
    Mixed with every other kind of change, in a seeded random stream, the counters and
    the in-flight sets still equal ones counted afresh from the rows after each event."""
    import random

    from reelqueue.domain.errors import ErrorLabel
    from reelqueue.ui.jobs_data import IN_FLIGHT_VALUES, JobTable, stats_of

    fill(store, tmp_path, clock.now())
    table = JobTable()
    rows = [to_row(job, lambda _job: None) for job in store.list_jobs()]
    table.append(rows, stats_of(rows))
    chance = random.Random(23)
    states = [JobState.CLAIMED, JobState.RENDERING, JobState.DOWNLOADING, JobState.COMPLETED,
              JobState.RETRY_WAIT, JobState.QUEUED, JobState.FAILED, JobState.PARKED]
    labels = [None, None, "timeout", ErrorLabel.SUBMIT_UNKNOWN.value]
    at = clock.now() + 1
    unchanged = 0
    for _ in range(2_000):
        row = chance.choice(table.rows)
        at += 0.5
        if chance.random() < 0.6:  # a progress note, now and then naming its account
            event = JobEvent(row.id, JobState(row.state), at, sub_status="running",
                             progress=chance.random(),
                             account=row.account if chance.random() < 0.5 else None)
        else:
            event = JobEvent(
                row.id, chance.choice(states), at,
                account=chance.choice([None, "a", "b"]), unbound=chance.random() < 0.1,
                progress=chance.choice([None, 0.3]), attempts=chance.choice([None, 1, 2]),
                error_label=chance.choice(labels), error_message="why",
                cost=chance.choice([None, 0.25]),
                provider=chance.choice([None, None, "mock", "other"]))
        before = (row.state, row.account, row.error_label)
        assert table.apply(event)
        unchanged += before == (row.state, row.account, row.error_label)
        fresh = stats_of(table.rows, since=0.0)
        for name in ("by_state", "by_account", "open_by_batch", "waiting_by_provider",
                     "unknown"):
            assert +getattr(table.stats, name) == +getattr(fresh, name), name
        assert {k: round(v, 9) for k, v in table.stats.spend.items() if round(v, 9)} == \
            {k: round(v, 9) for k, v in fresh.spend.items() if round(v, 9)}
        live = {account: {i for i, r in enumerate(table.rows)
                          if r.account == account and r.state in IN_FLIGHT_VALUES}
                for account in ("a", "b")}
        assert {k: v for k, v in table.live.items() if v} == {k: v for k, v in live.items()
                                                              if v}
    assert unchanged > 1_000, "the stream was mostly progress notes"
