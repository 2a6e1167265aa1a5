"""What a front end reads to show the queue: pages of job rows, one job's detail, the
accounts, the batches and the counts. Read-only; each answer is built on the journal's
thread (:mod:`reelqueue.engine.queries`), so the caller's event loop never waits on disk.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import replace

from reelqueue.application.outputs import local_path_texts, this_host
from reelqueue.application.session import Session
from reelqueue.domain.models import Batch
from reelqueue.engine import queries
from reelqueue.engine.queries import PAGE_ROWS, AccountSummary, JobDetail, JobRow
from reelqueue.store.base import Counts

__all__ = ["PAGE_ROWS", "AccountSummary", "ChangeFollower", "Counts", "JobDetail", "JobRow",
           "accounts", "batches", "counts", "here", "in_flight_count", "job_detail",
           "job_order", "job_rows", "job_rows_by_id"]


def _placer(session: Session) -> Callable[[str], str]:
    """The journal's path of a file (relative to the videos folder, issue 23) as this
    machine has it: under its own videos folder; a refused path as the journal says."""
    here = local_path_texts(session.ctx.videos_dir)

    def place(stored: str) -> str:
        path = here(stored)
        return path if path is not None else stored

    return place


def _local_rows(session: Session, rows: list[JobRow]) -> list[JobRow]:
    """``rows`` (just read for this call: nothing else holds them yet) with each file as
    this machine has it, set in place (``dataclasses.replace`` rebuilt each row of a
    100,000-row page field by field, about 5 µs a row)."""
    place = _placer(session)
    for row in rows:
        row.output_path = place(row.output_path)
    return rows


async def job_rows(session: Session, offset: int = 0, limit: int = PAGE_ROWS) -> list[JobRow]:
    """Jobs in id order, ``limit`` from ``offset`` (jobs are never deleted: the count of
    rows already read is the offset of the new ones). Each row's file as this machine
    has it (under its videos folder)."""
    rows = await queries.job_rows(session.journal, offset, limit, session.providers)
    # Off the caller's thread (the window's GUI thread): a page is up to PAGE_ROWS paths
    # placed under the videos folder, about a second of CPU for 100,000 rows.
    return await asyncio.to_thread(_local_rows, session, rows)


async def job_order(session: Session, order: str, descending: bool = False) -> list[int]:
    """Every job id sorted by a column of the jobs table (``store.base.JOB_ORDERS``)."""
    return await queries.job_order(session.journal, order, descending)


async def job_rows_by_id(session: Session, job_ids: list[int]) -> list[JobRow]:
    """Fresh rows for a few jobs (after a command changed them)."""
    return _local_rows(session, await queries.job_rows_by_id(session.journal, job_ids,
                                                             session.providers))


async def job_detail(session: Session, job_id: int) -> JobDetail | None:
    """A job and its ledger history, oldest first; None when there is no such job. Its
    file as this machine has it (under its videos folder)."""
    detail = await queries.job_detail(session.journal, job_id)
    if detail is None:
        return None
    return replace(detail, job=replace(detail.job,
                                       output_path=_placer(session)(detail.job.output_path)))


async def accounts(session: Session) -> list[AccountSummary]:
    """Every account in the pump's order, with its live render count."""
    return await queries.accounts(session.journal)


async def batches(session: Session) -> list[Batch]:
    """Every batch, oldest first."""
    return await queries.batches(session.journal)


async def counts(session: Session) -> Counts:
    """Jobs by state and live renders by account, from one journal read."""
    journal = session.journal
    return await journal.counts()


async def in_flight_count(session: Session) -> int:
    """Jobs left in flight (before recovery: a sign of an unclean exit)."""
    return await queries.in_flight_count(session.journal)


FOLLOW_OVERLAP = 200
"""Ledger entries read again below the last one seen when following a team's changes: on
a shared database an entry can commit after one with a higher number (a transaction still
open on another machine); reading from below what was seen picks such late ones up."""
FOLLOW_PAGE = 5_000


class ChangeFollower:
    """Follows the changes other machines write to a team database (their engines tell
    this window nothing): each :meth:`changed` names the jobs whose ledger entries it has
    not seen yet. Entries are read again from :data:`FOLLOW_OVERLAP` below the newest
    seen, so one that committed late (a lower number than some already read) is still
    picked up; those already seen are skipped by their number.

    Start it (:meth:`start`) before the first rows are read: what commits from then on is
    followed."""

    def __init__(self) -> None:
        self.newest = 0
        self._seen: set[int] = set()

    async def start(self, session: Session) -> None:
        tail = await session.journal.ledger(limit=FOLLOW_OVERLAP)
        self._seen = {e.seq for e in tail}
        self.newest = max(self._seen, default=0)

    async def changed(self, session: Session) -> tuple[list[int], bool]:
        """The jobs named by entries not seen before, in the order they were written, and
        whether there was any such entry (an import's names no job: rows may be new)."""
        entries = await session.journal.ledger_after(max(0, self.newest - FOLLOW_OVERLAP),
                                                     FOLLOW_PAGE)
        fresh = [e for e in entries if e.seq not in self._seen]
        self._seen.update(e.seq for e in fresh)
        self.newest = max([self.newest, *(e.seq for e in fresh)])
        floor = self.newest - FOLLOW_OVERLAP
        self._seen = {seq for seq in self._seen if seq > floor}
        return (list(dict.fromkeys(e.job_id for e in fresh if e.job_id is not None)),
                bool(fresh))


def here() -> str:
    """This machine's host name, as the journal names the holder of a file."""
    return this_host()
