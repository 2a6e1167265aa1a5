"""ETAs from what the journal knows (issue 23): "2 % · 4 min left" was shown for a render
that finished in 22 s (an extrapolation from the provider's first percent), and a create
whose answer hung showed a full bar and "< 1 s left" for 40 s (a running average per
account, whatever the model). Now: per provider, model and duration, the middle half of
finished renders' times (a range until five have finished), the time waited for a
create's answer, and "longer than most" once a render is past the range."""

from __future__ import annotations

import pytest

from reelqueue.application.status import Money
from reelqueue.domain.render_times import MIN_SAMPLES, RenderTimes, TimeRange, render_kind
from reelqueue.domain.states import JobState
from reelqueue.engine.events import EngineStateEvent, JobEvent, StallReason
from reelqueue.engine.queries import JobRow
from reelqueue.store.spend import AccountSpend, BatchSpend, SpendSummary
from reelqueue.ui.dashboard import _render_line, totals_text
from reelqueue.ui.jobs_data import JobTable, stats_of

pytestmark = pytest.mark.unit

FAST = render_kind("mock", {"model": "fast", "duration": 5})
SLOW = render_kind("mock", {"model": "slow", "duration": 10})


def row(job_id: int, kind: str, state: str = "QUEUED", *, started: float | None = None,
        finished: float | None = None, attempts: int = 0, progress: float | None = None,
        updated_at: float = 1000.0) -> JobRow:
    return JobRow(id=job_id, batch_id=1, row_number=job_id + 1, name=f"clip{job_id}",
                  prompt="p", provider="mock", account="a", state=state, sub_status=None,
                  progress=progress, attempts=attempts, max_attempts=3,
                  output_path=f"/v/{job_id}.mp4", error_label=None, error_message=None,
                  attempt_started=started, finished_at=finished, updated_at=updated_at,
                  cost=None, estimate=None, kind=kind)


def finished(first_id: int, kind: str, seconds: list[float]) -> list[JobRow]:
    return [row(first_id + i, kind, "COMPLETED", started=100.0, finished=100.0 + s,
                attempts=1) for i, s in enumerate(seconds)]


def table_with(rows: list[JobRow]) -> JobTable:
    table = JobTable()
    table.append(rows, stats_of(rows))
    return table


def test_the_kind_is_provider_model_and_duration() -> None:
    assert FAST == "mock/fast/5"
    assert render_kind("runway", {}) == "runway/-/-"
    assert FAST != SLOW


def test_a_range_until_five_then_the_middle_half() -> None:
    times = RenderTimes()
    for seconds in (20.0, 40.0, 30.0):
        times.add(FAST, seconds)
    assert times.range(FAST) == TimeRange(20.0, 40.0, 3)  # all seen, not quartiles
    assert not times.range(FAST).quartiles
    for seconds in (10.0, 100.0, 25.0, 35.0, 30.0):
        times.add(FAST, seconds)
    found = times.range(FAST)
    assert found is not None and found.samples == 8 >= MIN_SAMPLES and found.quartiles
    # sorted 10 20 25 30 30 35 40 100: p25 at 1.75 -> 23.75, p75 at 5.25 -> 36.25
    assert (found.low, found.high) == (pytest.approx(23.75), pytest.approx(36.25))
    assert times.range(SLOW) is None
    times.add(SLOW, -5.0)  # a clock stepped back: not a time
    assert times.range(SLOW) is None


def test_the_journal_s_finished_renders_set_the_range_per_kind() -> None:
    """Completed rows read from the journal count (one attempt: its claim time is the
    render's start); another model's times do not."""
    rows = finished(1, FAST, [20, 22, 24, 26, 28]) + finished(10, SLOW, [300, 320])
    # a job of two attempts: its first claim is not this render's start, left out
    rows.append(row(20, FAST, "COMPLETED", started=0.0, finished=1000.0, attempts=2))
    table = table_with(rows)
    assert table.render_times.range(FAST) == TimeRange(22.0, 26.0, 5)
    assert table.render_times.range(SLOW) == TimeRange(300.0, 320.0, 2)


def test_a_fast_kind_s_render_at_two_percent_is_not_four_minutes_away() -> None:
    table = table_with(finished(1, FAST, [20, 22, 24, 26, 28]))
    live = row(50, FAST, "RENDERING", started=1000.0, attempts=1, progress=0.02)
    table.append([live])
    fraction, words = table.progress_words(live, 1010.0)
    assert fraction == pytest.approx(0.02)
    assert words == "2% · about 12–16 s left", words


def test_no_finished_render_of_the_kind_gives_no_guess() -> None:
    table = table_with(finished(1, SLOW, [300, 320, 310, 305, 330]))
    live = row(50, FAST, "RENDERING", started=1000.0, attempts=1, progress=0.02)
    table.append([live])
    assert table.progress_words(live, 1010.0) == (pytest.approx(0.02), "2%")
    quiet = row(51, FAST, "RENDERING", started=1000.0, attempts=1)
    table.append([quiet])
    assert table.progress_words(quiet, 1042.0) == (None, "0:42")


def test_a_late_render_says_so_instead_of_less_than_a_second_left() -> None:
    table = table_with(finished(1, FAST, [20, 22, 24, 26, 28]))
    live = row(50, FAST, "RENDERING", started=1000.0, attempts=1)
    table.append([live])
    fraction, words = table.progress_words(live, 1012.0)
    assert fraction == pytest.approx(12 / 24) and words == "0:12 · about 10–14 s left"
    fraction, words = table.progress_words(live, 1040.0)
    assert fraction is None, "no full bar for a render past its kind's range"
    assert words == "0:40 · longer than most (22–26 s)", words


def test_a_create_waiting_for_its_answer_shows_the_time_waited_without_a_bar() -> None:
    table = table_with(finished(1, FAST, [20, 22, 24, 26, 28]))
    live = row(50, FAST, "CLAIMED", updated_at=1000.0)
    table.append([live])
    table.apply(JobEvent(50, JobState.SUBMITTING, 1001.0, account="a", attempts=1))
    shown = table.row(50)
    assert shown is not None
    assert table.progress_words(shown, 1041.0) == (None, "waiting for the provider · 0:40")


def test_the_account_card_says_what_the_table_says() -> None:
    table = table_with(finished(1, FAST, [20, 22, 24, 26, 28]))
    live = row(50, FAST, "RENDERING", started=1000.0, attempts=1)
    table.append([live])
    line = _render_line(table, live, 1040.0)
    assert (line.progress, line.text) == table.progress_words(live, 1040.0)


# -- the status bar's ETA (N4) ------------------------------------------------------------
def _busy_table(now: float) -> JobTable:
    """2 rendering, 6 waiting, 4 finished in the last 2 minutes (2/min)."""
    rows = ([row(i, FAST, "RENDERING", started=now - 10) for i in range(1, 3)]
            + [row(i, FAST) for i in range(3, 9)]
            + finished(20, FAST, [30.0] * 4))
    table = JobTable()
    table.append(rows, stats_of(rows))
    table.completions.extend((now - 120 + 30 * i, "a") for i in range(4))
    return table


def _money(batch_waiting: int = 0, batch_cap: bool = False,
           account_cap: float | None = None, account_waiting: int = 0) -> Money:
    batches = (BatchSpend(batch_id=1, name="shots", spent=0.2, reserved=0.0, cap=0.2,
                          waiting=batch_waiting),) if batch_cap or batch_waiting else ()
    accounts = (AccountSpend(account="a", spent_today=0.5, reserved=0.0, cap=account_cap,
                             waiting=account_waiting),)
    return Money(today=SpendSummary(batches=batches, accounts=accounts), spent={})


def test_the_status_bar_promises_no_eta_while_paused_stalled_or_held_by_a_cap() -> None:
    """N4: the status bar said "ETA 16 min" when a cap stopped the batch 2.5 min later,
    and "ETA 4 min" while paused. No ETA then: the reason stands in its place."""
    now = 10_000.0
    table = _busy_table(now)
    running = EngineStateEvent("running", now, waiting=6, running=2)
    _text, rate = totals_text(table, now, running, _money())
    assert rate == "2.0/min · ETA 4 min"  # 8 open at 2/min

    _text, rate = totals_text(table, now, EngineStateEvent("paused", now, running=2), _money())
    assert rate == "2.0/min · no ETA: paused" and "ETA 4" not in rate

    stalled = EngineStateEvent("stalled", now, waiting=6, running=2, reasons=(
        StallReason(subject="a", code="out_of_credits"),))
    _text, rate = totals_text(table, now, stalled, _money())
    assert rate == "2.0/min · no ETA: stalled (out of credits)"

    _text, rate = totals_text(table, now, running, _money(batch_waiting=6))
    assert rate == "2.0/min · no ETA: 6 jobs held by a spend cap"
    _text, rate = totals_text(table, now, running,
                              _money(account_cap=0.5, account_waiting=3))
    assert rate == "2.0/min · no ETA: 3 jobs held by a spend cap"
    capped = EngineStateEvent("running", now, waiting=6, running=2, reasons=(
        StallReason(subject="a", code="spend_cap"),))
    _text, rate = totals_text(table, now, capped, None)
    assert rate == "2.0/min · no ETA: a spend cap holds the waiting jobs"

    # A cap on the open work, not reached yet: the ETA says it may not get that far.
    _text, rate = totals_text(table, now, running, _money(batch_cap=True))
    assert rate == "2.0/min · ETA 4 min unless a spend cap stops it first"
