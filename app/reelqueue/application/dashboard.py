"""The reads the web dashboard needs beyond the API's first routes (issue 37): a job's
history in the window's words (and where the ledger was pruned), every batch with its
counts by state, the jobs that need the user (parked, outcome unknown) with what the
user can do, a search over prompts and names, and the machines sharing the journal.

Each read is one visit to the journal's thread; none writes.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from reelqueue.application.create_evidence import CreateEvidence, job_create_evidence
from reelqueue.application.history_words import event_words, history_detail
from reelqueue.application.jobs import is_paused, unknown_candidates
from reelqueue.application.session import Session
from reelqueue.application.words import StateWords, job_state_words
from reelqueue.domain.errors import ErrorLabel, InputError
from reelqueue.domain.models import Batch, Job
from reelqueue.domain.states import JobState
from reelqueue.store.base import Store

__all__ = ["AttentionItem", "BatchCounts", "HistoryLine", "JobHistory", "QueueCounts",
           "attention", "batch_counts", "job_history", "matches", "state_names"]

MAX_HISTORY = 2000
"""Entries of one job's history sent at most (the newest kept): a job retried for weeks
still answers in one bounded read."""
MAX_ATTENTION = 500


@dataclass(frozen=True)
class HistoryLine:
    """One ledger entry as the window's history shows it. Attributes: seq, at, event
    (its code), words (its name), account, detail (its details in plain words)."""

    seq: int
    at: float
    event: str
    words: str
    account: str | None
    detail: str


@dataclass(frozen=True)
class JobHistory:
    """Attributes: job; lines oldest first; pruned_before: the ledger lost the entries
    before this time (None: the history is whole)."""

    job: Job
    lines: list[HistoryLine]
    pruned_before: float | None


async def job_history(session: Session, job_id: int) -> JobHistory | None:
    """The job and its history in words; None when there is no such job."""
    journal = session.journal

    def read(store: Store) -> JobHistory | None:
        job = store.get_job(job_id)
        if job is None:
            return None
        entries = store.ledger(job_id)
        pruned = None
        if len(entries) > MAX_HISTORY:
            entries = entries[-MAX_HISTORY:]
            pruned = entries[0].at
        # The ledger is pruned by age at start-up (oldest rows first): a job made before
        # the oldest row left may have lost the start of its history.
        oldest = store.ledger_after(0, 1)
        if oldest and job.created_at < oldest[0].at:
            pruned = oldest[0].at if pruned is None else pruned
        lines = [HistoryLine(e.seq, e.at, e.event, event_words(e.event), e.account,
                             history_detail(e.event, e.detail)) for e in entries]
        return JobHistory(job, lines, pruned)

    return await journal.call(read, journal.sync)


@dataclass(frozen=True)
class BatchCounts:
    """A batch with its jobs counted by state. Attributes: batch, by_state (state code
    -> jobs), paused."""

    batch: Batch
    by_state: dict[str, int]

    @property
    def paused(self) -> bool:
        return is_paused(self.batch)


@dataclass(frozen=True)
class QueueCounts:
    """Attributes: batches (each with its jobs by state); by_account (account -> state
    -> jobs, for the jobs an account took: its cards' done and failed)."""

    batches: list[BatchCounts]
    by_account: dict[str, dict[str, int]]


async def batch_counts(session: Session) -> QueueCounts:
    """Every batch, oldest first, with its jobs counted by state, and each account's
    jobs by state (one read)."""
    journal = session.journal

    def read(store: Store) -> QueueCounts:
        counts: dict[int, Counter[str]] = {}
        accounts: dict[str, Counter[str]] = {}
        for job in store.list_jobs():
            counts.setdefault(job.batch_id, Counter())[job.state.value] += 1
            if job.account:
                accounts.setdefault(job.account, Counter())[job.state.value] += 1
        return QueueCounts([BatchCounts(batch, dict(counts.get(batch.id, Counter())))
                            for batch in store.list_batches()],
                           {name: dict(c) for name, c in accounts.items()})

    return await journal.call(read, journal.sync)


@dataclass(frozen=True)
class AttentionItem:
    """A job waiting for the user. Attributes: job; words (its state's name and hint);
    unknown (its create's outcome is unknown: ``resolve`` it); what_to_do (one paragraph);
    candidates (renders the last look could not choose between); evidence (the last
    reading of the provider's counts for its unknown create, None: none read)."""

    job: Job
    words: StateWords
    unknown: bool
    what_to_do: str
    candidates: list[dict[str, object]]
    evidence: CreateEvidence | None = None


def _unknown(job: Job) -> bool:
    return (job.provider_job_id is None
            and job.error_label == ErrorLabel.SUBMIT_UNKNOWN.value)


async def attention(session: Session, limit: int = MAX_ATTENTION) -> list[AttentionItem]:
    """The parked jobs and the creates of unknown outcome (oldest first, at most
    ``limit``), each with what the user can do about it."""
    jobs = await session.journal.list_jobs(states=[JobState.PARKED, JobState.FAILED])
    waiting = [j for j in jobs if j.state is JobState.PARKED or _unknown(j)][:limit]
    out = []
    for job in waiting:
        words = job_state_words(job.state.value, job.sub_status, job.error_label,
                                job.provider_job_id)
        unknown = _unknown(job)
        what, candidates = words.hint, []
        evidence = None
        if unknown:
            try:
                found = await unknown_candidates(session, job.id)
            except InputError:  # it changed meanwhile: its state's hint says enough
                unknown = False
            else:
                what, candidates = found.words, list(found.candidates)
                evidence = await job_create_evidence(session, job.id)
        out.append(AttentionItem(job, words, unknown, what, candidates, evidence))
    return out


def matches(job: Job, words: str) -> bool:
    """The job's prompt or name holds ``words`` (case folded; each word somewhere)."""
    haystack = f"{job.name or ''}\n{job.prompt}".casefold()
    return all(word in haystack for word in words.casefold().split())


def state_names() -> dict[str, str]:
    """Each state's code -> its one name (application.words), for counts by state."""
    return {state.value: job_state_words(state.value).name for state in JobState}
