"""The window's mirror of the jobs: rows by id, live counters, throughput. No Qt here.

:class:`JobTable` holds one :class:`~reelqueue.engine.queries.JobRow` per job, applies
engine events to them in O(1), and keeps counters (by state, by account and state, open
jobs per batch, waiting jobs per provider, spend per account) exact by
removing a row's contribution before a change and adding it back after. Pages of rows are
summarised on a worker thread (:func:`stats_of`) and merged in one step.
"""

from __future__ import annotations

import time
from collections import Counter, defaultdict, deque
from collections.abc import Iterable
from dataclasses import dataclass, field

from reelqueue.application.events import JobEvent
from reelqueue.application.views import JobRow
from reelqueue.application.words import OUTCOME_UNKNOWN, is_outcome_unknown, job_state_words
from reelqueue.domain.errors import ErrorLabel
from reelqueue.domain.render_times import Eta, RenderTimes
from reelqueue.domain.states import FINAL, IN_FLIGHT, WAITING, JobState
from reelqueue.ui import format as fmt

FINAL_VALUES = frozenset(s.value for s in FINAL)
IN_FLIGHT_VALUES = frozenset(s.value for s in IN_FLIGHT)
WAITING_VALUES = frozenset(s.value for s in WAITING)
COMPLETED = JobState.COMPLETED.value
HOUR = 3600.0



def _named(state: str) -> str:
    return job_state_words(state).name


STATE_GROUPS: dict[str, frozenset[str] | None] = {
    "All states": None,
    "Waiting": WAITING_VALUES,
    "Running": IN_FLIGHT_VALUES,
    # the states' own names (application.words), the parked and unknown ones said so
    _named(JobState.COMPLETED).capitalize(): frozenset({JobState.COMPLETED}),
    f"{_named(JobState.FAILED).capitalize()}, {_named(JobState.PARKED)}, "
    f"{_named(OUTCOME_UNKNOWN)}": frozenset({JobState.FAILED, JobState.PARKED}),
    _named(JobState.CANCELLED).capitalize(): frozenset({JobState.CANCELLED}),
}


@dataclass
class JobStats:
    """Counters over a set of rows (see the module docstring)."""

    by_state: Counter[str] = field(default_factory=Counter)
    by_account: Counter[tuple[str, str]] = field(default_factory=Counter)
    open_by_batch: Counter[int] = field(default_factory=Counter)
    waiting_by_provider: Counter[str] = field(default_factory=Counter)
    # USD sums: typeshed's Counter holds ints only, so float sums are plain defaultdicts.
    # (What the waiting jobs will cost is not tallied here: it is the journal's figure,
    # application.status.Money.to_go, issue 23.)
    spend: defaultdict[str, float] = field(default_factory=lambda: defaultdict(float))
    completions: list[tuple[float, str | None]] = field(default_factory=list)
    #: state -> rows of it that are creates of unknown outcome (application.words): the
    #: status bar names them apart from the parked and failed ones
    unknown: Counter[str] = field(default_factory=Counter)

    def add(self, row: JobRow, sign: int = 1) -> None:
        state = row.state
        self.by_state[state] += sign
        if row.error_label is not None and is_outcome_unknown(state, row.error_label,
                                                              row.provider_job_id):
            self.unknown[state] += sign
        if state not in FINAL_VALUES:
            self.open_by_batch[row.batch_id] += sign
        if row.account:
            self.by_account[(row.account, state)] += sign
        if state in WAITING_VALUES:
            self.waiting_by_provider[row.provider] += sign
        elif state == COMPLETED and row.account and row.cost:
            self.spend[row.account] += sign * row.cost

    def merge(self, other: JobStats) -> None:
        for name in ("by_state", "by_account", "open_by_batch", "waiting_by_provider",
                     "unknown"):
            getattr(self, name).update(getattr(other, name))
        for key, value in other.spend.items():
            self.spend[key] += value


def stats_of(rows: Iterable[JobRow], since: float | None = None) -> JobStats:
    """Counters of ``rows`` (run it on a worker thread for big pages)."""
    stats = JobStats()
    since = time.time() - HOUR if since is None else since
    for row in rows:
        stats.add(row)
        if row.state == COMPLETED and row.finished_at and row.finished_at >= since:
            stats.completions.append((row.finished_at, row.account))
    stats.completions.sort(key=lambda item: item[0])
    return stats


class JobTable:
    """Attributes:
    rows: every job, in id order.
    stats: the live counters.
    completions: (time, account) of completions in the last hour, oldest first.
    render_times: finished renders' times by provider, model and duration (for ETAs:
        the journal's completed rows, then each completion as it happens).
    """

    def __init__(self) -> None:
        self.rows: list[JobRow] = []
        self.stats = JobStats()
        self.completions: deque[tuple[float, str | None]] = deque()
        self.render_times = RenderTimes()
        self._pos: dict[int, int] = {}
        self._dirty: set[int] = set()
        self.completed_since_tick: list[int] = []
        self.live: dict[str, set[int]] = {}

    def __len__(self) -> int:
        return len(self.rows)

    @property
    def last_id(self) -> int:
        return self.rows[-1].id if self.rows else 0

    def index_of(self, job_id: int) -> int | None:
        return self._pos.get(job_id)

    def indexes_of(self, job_ids: list[int]) -> list[int]:
        """The rows of ``job_ids``, in order, those not in the table left out: one C-level
        pass over the position map (a sort's answer maps 100,000 ids: a Python call per id
        held the GUI thread for 80 ms)."""
        return [i for i in map(self._pos.get, job_ids) if i is not None]

    def row(self, job_id: int) -> JobRow | None:
        index = self._pos.get(job_id)
        return None if index is None else self.rows[index]

    def append(self, rows: list[JobRow], stats: JobStats | None = None) -> tuple[int, int]:
        """Add new rows (ids above :attr:`last_id`); return the new index range [a, b)."""
        fresh = [row for row in rows if row.id not in self._pos]
        start = len(self.rows)
        self.rows.extend(fresh)
        self._pos.update(zip((row.id for row in fresh), range(start, start + len(fresh)),
                             strict=True))
        if stats is None or len(fresh) != len(rows):
            stats = stats_of(fresh)
        self.stats.merge(stats)
        self.completions.extend(stats.completions)
        for index in range(start, len(self.rows)):
            row = self.rows[index]
            if row.state in IN_FLIGHT_VALUES:
                self._track_live(index, None, row)
            elif (row.state == COMPLETED and row.attempts == 1 and row.finished_at is not None
                  and row.attempt_started is not None):
                # One attempt: the journal's claim time is this render's start (a later
                # attempt's start is not kept, so its time is not known).
                self.render_times.add(row.kind, row.finished_at - row.attempt_started)
        return start, len(self.rows)

    def _track_live(self, index: int, old: JobRow | None, new: JobRow) -> None:
        """Keep :attr:`live` (in-flight row indices per account) in step with a change."""
        if old is not None and old.account and old.state in IN_FLIGHT_VALUES:
            self.live.get(old.account, set()).discard(index)
        if new.account and new.state in IN_FLIGHT_VALUES:
            self.live.setdefault(new.account, set()).add(index)

    def live_rows(self, account: str) -> list[JobRow]:
        return [self.rows[i] for i in sorted(self.live.get(account, ()))]

    def replace(self, row: JobRow) -> bool:
        """A fresher copy of a known job (re-read after a command); older copies lose."""
        index = self._pos.get(row.id)
        if index is None:
            return False
        old = self.rows[index]
        if row.updated_at < old.updated_at:
            return False
        self.stats.add(old, -1)
        self._track_live(index, old, row)
        self.rows[index] = row
        self.stats.add(row)
        self._dirty.add(index)
        return True

    def apply(self, event: JobEvent) -> bool:
        """Apply one event; False when the job is not known yet (or the event is stale)."""
        index = self._pos.get(event.job_id)
        if index is None:
            return False
        row = self.rows[index]
        if event.at < row.updated_at:
            return True  # the row already shows something newer (read after the event)
        stats = self.stats
        state = event.state
        # What the counters and `live` read (state, account, provider, cost, the error
        # label, and the render id only beside a label) stays as it is in a progress
        # note, most of the events: its row is not taken out and counted back in.
        counted = not (state == row.state and event.provider is None and not event.unbound
                       and (event.account is None or event.account == row.account)
                       and event.error_label is None and row.error_label is None
                       and event.cost is None)
        if counted:
            stats.add(row, -1)
            if row.account and row.state in IN_FLIGHT_VALUES:
                self.live.get(row.account, set()).discard(index)
        if state != row.state:
            if state == JobState.CLAIMED or (state in IN_FLIGHT_VALUES
                                             and row.attempt_started is None):
                row.attempt_started = event.at
            if state == COMPLETED:
                self._completed(row, event.at)
            if state in FINAL_VALUES:
                row.finished_at = event.at
            elif row.state in FINAL_VALUES:
                row.finished_at = None
            if state in WAITING_VALUES:
                row.progress = None
                if state == JobState.QUEUED and event.error_label is None:
                    row.error_label = row.error_message = None
            row.state = state
            row.sub_status = None
        if event.provider is not None:  # a routed job moved (issue 24)
            row.provider = event.provider
            row.kind = event.kind or row.kind
        if event.unbound:
            row.account = None
        elif event.account is not None:
            row.account = event.account
        if event.sub_status is not None:
            row.sub_status = event.sub_status
        if event.progress is not None:
            row.progress = event.progress
        if event.attempts is not None:
            row.attempts = event.attempts
        if event.error_label is not None:
            row.error_label = event.error_label
            row.error_message = event.error_message
            if event.error_label == ErrorLabel.SUBMIT_UNKNOWN.value:
                # The engine writes this label only on a create that holds no render id:
                # the row's id read at load (if any) is no longer the job's.
                row.provider_job_id = None
        elif state in IN_FLIGHT_VALUES or state == COMPLETED:
            row.error_label = row.error_message = None
        if event.output_path is not None:
            row.output_path = event.output_path
        if event.cost is not None:
            row.cost = event.cost
        row.updated_at = event.at
        if counted:
            stats.add(row)
            if row.account and state in IN_FLIGHT_VALUES:
                self.live.setdefault(row.account, set()).add(index)
        self._dirty.add(index)
        return True

    def _completed(self, row: JobRow, at: float) -> None:
        self.completions.append((at, row.account))
        self.completed_since_tick.append(row.id)
        if row.attempt_started is not None:
            self.render_times.add(row.kind, at - row.attempt_started)

    def take_dirty(self) -> set[int]:
        dirty, self._dirty = self._dirty, set()
        return dirty

    def prune_completions(self, now: float) -> None:
        while self.completions and self.completions[0][0] < now - HOUR:
            self.completions.popleft()

    def throughput_per_minute(self, now: float, window: float = 600.0) -> float:
        """Completions per minute over the last ``window`` seconds (or since the first of
        them, when the batch is younger than that; at least a minute)."""
        count = 0
        oldest = now
        for at, _account in reversed(self.completions):
            if at < now - window:
                break
            count += 1
            oldest = at
        return count * 60.0 / max(60.0, now - oldest) if count else 0.0

    def eta(self, row: JobRow, now: float) -> Eta | None:
        """What is left of an in-flight row's render, against the finished renders of its
        provider, model and duration (None: none finished yet, or not in flight)."""
        if row.state not in IN_FLIGHT_VALUES or row.attempt_started is None:
            return None
        return self.render_times.eta(row.kind, max(0.0, now - row.attempt_started))

    def progress_words(self, row: JobRow, now: float) -> tuple[float | None, str]:
        """An in-flight row's bar (None: no bar) and words: the provider's percentage, the
        time waited for a create's answer, or the time so far against how long renders
        of its kind took — never a full bar or "< 1 s left" for a render that is late."""
        elapsed = max(0.0, now - row.attempt_started) if row.attempt_started else None
        if row.state == JobState.SUBMITTING:
            waited = max(0.0, now - row.updated_at)
            return None, f"waiting for the provider · {fmt.duration(waited)}"
        if row.state == JobState.DOWNLOADING and row.progress is None:
            return None, (f"{job_state_words(row.state).name} · "
                          f"{fmt.duration(max(0.0, now - row.updated_at))}")
        eta = self.eta(row, now)
        if row.progress is not None:
            percent = f"{round(row.progress * 100)}%"
            if eta is None:
                return row.progress, percent
            return row.progress, f"{percent} · {eta_words(eta)}"
        if eta is None or elapsed is None:
            return None, fmt.duration(elapsed)
        return (None if eta.overdue else eta.fraction(elapsed),
                f"{fmt.duration(elapsed)} · {eta_words(eta)}")


def eta_words(eta: Eta) -> str:
    """"about 20–40 s left", or once past the range "longer than most (20–40 s)"."""
    typical = eta.typical
    most = fmt.duration_span(typical.low, typical.high)
    if eta.overdue:
        return f"longer than {'most' if typical.quartiles else 'before'} ({most})"
    return f"about {fmt.duration_span(eta.low, eta.high)} left"
