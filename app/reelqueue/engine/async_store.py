"""Runs every store call on one dedicated thread, so the event loop never waits on fsync.

One thread also serialises this process's writes, which keeps SQLite's lock waits short.
:class:`AsyncStore` has one typed ``async`` twin of each :class:`~reelqueue.store.base.Store`
operation (same name, parameters and result; ``tests/engine/test_async_store.py`` checks
that none is missing), so callers write ``await store.get_job(7)``.

Group commit (issue 33 item 5): the fenced render transitions of this engine's workers
(:data:`GROUPED_TRANSITIONS`) that arrive while the journal thread is busy wait in one
queue; the thread then hands all of them to the store's ``write_group``, which writes them
in one transaction with one commit (one fsync): SQLite (and the in-memory store, SQLite in
memory) each under its own savepoint, PostgreSQL each as a step of the transaction, the
group run again write by write if one raises (store/pg_group.py). Only after that does
the thread answer each caller with its own result or exception. Claims, reads and user
commands run alone.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import threading
from collections.abc import Callable, Collection, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, ParamSpec, TypeVar

from reelqueue.domain.account_view import AccountView, Charging
from reelqueue.domain.models import (
    Account,
    AccountSpec,
    Batch,
    BatchSpec,
    Claim,
    ClaimToken,
    Job,
    LedgerEntry,
    RecoveryReport,
)
from reelqueue.domain.review import ReviewChange, ReviewWritten
from reelqueue.domain.routes import Candidate, Route
from reelqueue.domain.states import AccountStatus, JobState
from reelqueue.store.balance import BalanceLeft
from reelqueue.store.base import (
    AddJobsResult,
    ClaimParams,
    Counts,
    JobError,
    Prioritized,
    RecoverParams,
    Store,
    write_each_alone,
)
from reelqueue.store.spend import SpendSummary, ToGo

P = ParamSpec("P")
T = TypeVar("T")

GROUPED_TRANSITIONS: dict[str, bool] = {
    "mark_submitting": True, "record_submitted": True, "mark_rendering": True,
    "record_progress": False, "mark_downloading": False, "record_download": False,
    "mark_completed": True, "set_retry_wait": True, "release_to_queue": True,
    "hand_over": True, "mark_failed": True, "park_job": True, "forget_submission": True,
}
"""The store operations that join a group commit, each with whether the store writes it
durably (a group is fsynced when any of its writes is). A write the store wants durable
in a group opened without fsync is refused by the store, never left undurable
(``tests/engine/test_group_commit.py`` checks this table against the store)."""


@dataclass(frozen=True)
class _Queued:
    """One transition waiting for the journal thread, and how to answer its caller."""

    write: Callable[[], Any]
    durable: bool
    answer: asyncio.Future[Any]
    loop: asyncio.AbstractEventLoop


def _settle(future: asyncio.Future[Any], answer: Any) -> None:
    """On the event loop: hand a transition's answer (or its exception) to its caller."""
    if future.done():  # the caller was cancelled meanwhile
        return
    if isinstance(answer, BaseException):
        future.set_exception(answer)
    else:
        future.set_result(answer)


class AsyncStore:
    """Attributes:
    sync: the wrapped store (for code already running on the journal thread, and tests).
    """

    def __init__(self, store: Store) -> None:
        self.sync = store
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="journal")
        self._queue_lock = threading.Lock()
        self._queued: list[_Queued] = []
        self._flush_submitted = False

    async def call(self, fn: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
        """Run ``fn`` on the journal thread. Only for work that is not one store operation
        but must run there, in order with the store's writes: several reads that belong
        together (a page of rows), an import's writes (``intake.apply``), an export's read.
        A single store operation has its typed method below."""
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._executor, functools.partial(fn, *args, **kwargs))

    async def _grouped(self, fn: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
        """Run the transition ``fn`` on the journal thread with the others that arrive
        together (one commit for the group); answered only once that commit returned."""
        loop = asyncio.get_running_loop()
        answer: asyncio.Future[T] = loop.create_future()
        queued = _Queued(functools.partial(fn, *args, **kwargs),
                         GROUPED_TRANSITIONS.get(getattr(fn, "__name__", ""), True),
                         answer, loop)
        with self._queue_lock:
            self._queued.append(queued)
            if not self._flush_submitted:
                try:
                    # Through the loop, as every other journal call: the loop knows a flush
                    # is under way (tests/engine/virtual_time.py waits for it).
                    loop.run_in_executor(self._executor, self._flush_group)
                except BaseException:
                    self._queued.remove(queued)
                    raise
                self._flush_submitted = True
        return await answer

    def _flush_group(self) -> None:
        """On the journal thread: every transition queued so far, in one group."""
        with self._queue_lock:
            group, self._queued = self._queued, []
            self._flush_submitted = False
        # A caller cancelled before its write ran is not written (as with run_in_executor).
        group = [queued for queued in group if not queued.answer.cancelled()]
        answers: list[Any]
        if len(group) < 2:
            answers = write_each_alone([queued.write for queued in group])
        else:
            try:
                answers = self.sync.write_group([queued.write for queued in group],
                                                durable=any(q.durable for q in group))
            except Exception as exc:  # not committed: no caller's write is in the journal
                answers = [exc] * len(group)
        for queued, answer in zip(group, answers, strict=True):
            # RuntimeError: the caller's loop is closed, so nobody is waiting.
            with contextlib.suppress(RuntimeError):
                queued.loop.call_soon_threadsafe(_settle, queued.answer, answer)

    def shutdown(self) -> None:
        self._executor.shutdown(wait=True)

    # -- lifecycle ---------------------------------------------------------------------
    async def close(self) -> None:
        """Close the store (on the journal thread)."""
        await self.call(self.sync.close)

    # -- batches and jobs --------------------------------------------------------------
    async def create_batch(self, spec: BatchSpec, now: float) -> Batch:
        """Store.create_batch on the journal thread."""
        return await self.call(self.sync.create_batch, spec, now)

    async def get_batch(self, batch_id: int) -> Batch | None:
        """Store.get_batch on the journal thread."""
        return await self.call(self.sync.get_batch, batch_id)

    async def list_batches(self) -> list[Batch]:
        """Store.list_batches on the journal thread."""
        return await self.call(self.sync.list_batches)

    async def newest_batch_id(self) -> int | None:
        """Store.newest_batch_id on the journal thread."""
        return await self.call(self.sync.newest_batch_id)

    async def add_jobs(
        self, batch_id: int, specs: Sequence[Any], now: float, max_waiting: int | None = None
    ) -> AddJobsResult:
        """Store.add_jobs on the journal thread."""
        return await self.call(self.sync.add_jobs, batch_id, specs, now, max_waiting)

    async def existing_job_keys(self, keys: Iterable[str]) -> set[str]:
        """Store.existing_job_keys on the journal thread."""
        return await self.call(self.sync.existing_job_keys, keys)

    async def get_job(self, job_id: int) -> Job | None:
        """Store.get_job on the journal thread."""
        return await self.call(self.sync.get_job, job_id)

    async def list_jobs(
        self, batch_id: int | None = None, states: Iterable[JobState] | None = None,
        limit: int | None = None, offset: int = 0,
    ) -> list[Job]:
        """Store.list_jobs on the journal thread."""
        return await self.call(self.sync.list_jobs, batch_id, states, limit, offset)

    async def job_ids_ordered(
        self, order: str, descending: bool = False, limit: int | None = None, offset: int = 0,
    ) -> list[int]:
        """Store.job_ids_ordered on the journal thread."""
        return await self.call(self.sync.job_ids_ordered, order, descending, limit, offset)

    async def count_waiting(self) -> int:
        """Store.count_waiting on the journal thread."""
        return await self.call(self.sync.count_waiting)

    async def takeovers(self) -> dict[str, dict[str, int]]:
        """Store.takeovers on the journal thread."""
        return await self.call(self.sync.takeovers)

    async def recent_render_times(self, limit: int = 2_000) -> list[tuple[str, float]]:
        """Store.recent_render_times on the journal thread."""
        return await self.call(self.sync.recent_render_times, limit)

    async def counts(self) -> Counts:
        """Store.counts on the journal thread."""
        return await self.call(self.sync.counts)

    # -- accounts ----------------------------------------------------------------------
    async def add_account(self, spec: AccountSpec, now: float) -> Account:
        """Store.add_account on the journal thread."""
        return await self.call(self.sync.add_account, spec, now)

    async def get_account(self, name: str) -> Account | None:
        """Store.get_account on the journal thread."""
        return await self.call(self.sync.get_account, name)

    async def list_accounts(self) -> list[Account]:
        """Store.list_accounts on the journal thread."""
        return await self.call(self.sync.list_accounts)

    async def remove_account(self, name: str, now: float) -> None:
        """Store.remove_account on the journal thread."""
        await self.call(self.sync.remove_account, name, now)

    async def update_account(
        self, name: str, now: float, *, capacity: int | None = None,
        enabled: bool | None = None, base_url: str | None = None,
        settings: dict[str, Any] | None = None,
    ) -> Account:
        """Store.update_account on the journal thread."""
        return await self.call(self.sync.update_account, name, now, capacity=capacity,
                               enabled=enabled, base_url=base_url, settings=settings)

    async def set_account_status(
        self, name: str, status: AccountStatus, now: float, *,
        detail: str | None = None, cooldown_until: float | None = None,
    ) -> None:
        """Store.set_account_status on the journal thread."""
        await self.call(self.sync.set_account_status, name, status, now, detail=detail,
                        cooldown_until=cooldown_until)

    async def live_count(self, account: str) -> int:
        """Store.live_count on the journal thread."""
        return await self.call(self.sync.live_count, account)

    async def put_account_view(self, view: AccountView) -> bool:
        """Store.put_account_view on the journal thread."""
        return await self.call(self.sync.put_account_view, view)

    async def account_views(self) -> list[AccountView]:
        """Store.account_views on the journal thread."""
        return await self.call(self.sync.account_views)

    async def balance_left(self, account: str, now: float,
                           charging: Charging | None) -> BalanceLeft | None:
        """Store.balance_left on the journal thread."""
        return await self.call(self.sync.balance_left, account, now, charging)

    # -- claims and fenced transitions -------------------------------------------------
    async def claim_next_job(self, params: ClaimParams) -> Claim | None:
        """Store.claim_next_job on the journal thread."""
        return await self.call(self.sync.claim_next_job, params)

    async def renew_leases(self, instance_id: str, now: float, lease_seconds: float,
                           tokens: Collection[str] | None = None,
                           clock_offset: float | None = None) -> int:
        """Store.renew_leases on the journal thread."""
        return await self.call(self.sync.renew_leases, instance_id, now, lease_seconds,
                               tokens, clock_offset)

    async def changed_elsewhere(self) -> bool:
        return await self.call(self.sync.changed_elsewhere)

    async def server_time(self) -> float | None:
        """Store.server_time on the journal thread."""
        return await self.call(self.sync.server_time)

    async def mark_submitting(self, token: ClaimToken, client_token: str, now: float, *,
                              min_lease_seconds: float | None = None) -> bool:
        """Store.mark_submitting on the journal thread, in a group commit."""
        return await self._grouped(self.sync.mark_submitting, token, client_token, now,
                                   min_lease_seconds=min_lease_seconds)

    async def record_submitted(
        self, token: ClaimToken, provider_job_id: str, now: float
    ) -> bool:
        """Store.record_submitted on the journal thread, in a group commit."""
        return await self._grouped(self.sync.record_submitted, token, provider_job_id, now)

    async def mark_rendering(self, token: ClaimToken, now: float) -> bool:
        """Store.mark_rendering on the journal thread, in a group commit."""
        return await self._grouped(self.sync.mark_rendering, token, now)

    async def record_progress(
        self, token: ClaimToken, sub_status: str, progress: float | None, now: float
    ) -> bool:
        """Store.record_progress on the journal thread, in a group commit."""
        return await self._grouped(self.sync.record_progress, token, sub_status, progress, now)

    async def mark_downloading(self, token: ClaimToken, now: float, *,
                               output_path: str | None = None,
                               part: str | None = None) -> bool:
        """Store.mark_downloading on the journal thread, in a group commit."""
        return await self._grouped(self.sync.mark_downloading, token, now,
                                   output_path=output_path, part=part)

    async def record_download(self, token: ClaimToken, *, size: int, sha256: str,
                              now: float) -> bool:
        """Store.record_download on the journal thread, in a group commit."""
        return await self._grouped(self.sync.record_download, token, size=size, sha256=sha256,
                                   now=now)

    async def mark_completed(
        self, token: ClaimToken, *, size: int, sha256: str, cost: float | None, now: float
    ) -> bool:
        """Store.mark_completed on the journal thread, in a group commit."""
        return await self._grouped(self.sync.mark_completed, token, size=size, sha256=sha256,
                                   cost=cost, now=now)

    async def set_retry_wait(
        self, token: ClaimToken, error: JobError, run_after: float, now: float, *,
        keep_provider_job: bool,
    ) -> bool:
        """Store.set_retry_wait on the journal thread, in a group commit."""
        return await self._grouped(self.sync.set_retry_wait, token, error, run_after, now,
                                   keep_provider_job=keep_provider_job)

    async def release_to_queue(
        self, token: ClaimToken, error: JobError, now: float, *, run_after: float | None = None,
        keep_submission: bool = False,
    ) -> bool:
        """Store.release_to_queue on the journal thread, in a group commit."""
        return await self._grouped(self.sync.release_to_queue, token, error, now,
                                   run_after=run_after, keep_submission=keep_submission)

    async def hand_over(self, token: ClaimToken, error: JobError, now: float, *,
                        route: Route, to: Candidate, came_from: str) -> bool:
        """Store.hand_over on the journal thread, in a group commit."""
        return await self._grouped(self.sync.hand_over, token, error, now, route=route, to=to,
                                   came_from=came_from)

    async def mark_failed(self, token: ClaimToken, error: JobError, now: float, *,
                          drop_render: bool = False) -> bool:
        """Store.mark_failed on the journal thread, in a group commit."""
        return await self._grouped(self.sync.mark_failed, token, error, now,
                                   drop_render=drop_render)

    async def park_job(self, token: ClaimToken, error: JobError, now: float) -> bool:
        """Store.park_job on the journal thread, in a group commit."""
        return await self._grouped(self.sync.park_job, token, error, now)

    async def forget_submission(self, token: ClaimToken, now: float, detail: dict[str, Any],
                                event: str = "reconciled_absent") -> bool:
        """Store.forget_submission on the journal thread, in a group commit."""
        return await self._grouped(self.sync.forget_submission, token, now, detail, event)

    async def unresolved_submissions(self, account: str) -> list[tuple[Job, float | None]]:
        """Store.unresolved_submissions on the journal thread."""
        return await self.call(self.sync.unresolved_submissions, account)

    async def known_provider_job_ids(self, provider: str, account: str,
                               ids: Sequence[str]) -> set[str]:
        """Store.known_provider_job_ids on the journal thread."""
        return await self.call(self.sync.known_provider_job_ids, provider, account, ids)

    async def attach_render(self, job_id: int, provider_job_id: str, now: float) -> bool:
        """Store.attach_render on the journal thread."""
        return await self.call(self.sync.attach_render, job_id, provider_job_id, now)

    async def note(
        self, event: str, now: float, *, job_id: int | None = None,
        account: str | None = None, claim_token: str | None = None,
        detail: dict[str, Any] | None = None,
    ) -> None:
        """Store.note on the journal thread."""
        await self.call(self.sync.note, event, now, job_id=job_id, account=account,
                        claim_token=claim_token, detail=detail)

    # -- user commands -----------------------------------------------------------------
    async def cancel_jobs(self, job_ids: Iterable[int], now: float) -> list[int]:
        """Store.cancel_jobs on the journal thread."""
        return await self.call(self.sync.cancel_jobs, job_ids, now)

    async def requeue_jobs(
        self, job_ids: Iterable[int], now: float, *, new_seed: int | None = None,
        reconcile: bool = True,
    ) -> list[int]:
        """Store.requeue_jobs on the journal thread."""
        return await self.call(self.sync.requeue_jobs, job_ids, now, new_seed=new_seed,
                               reconcile=reconcile)

    async def prioritize_jobs(
        self, job_ids: Iterable[int], now: float, *, priority: int | None = None
    ) -> Prioritized:
        """Store.prioritize_jobs on the journal thread."""
        return await self.call(self.sync.prioritize_jobs, job_ids, now, priority=priority)

    async def prioritize_batch(
        self, batch_id: int, now: float, *, priority: int | None = None
    ) -> Prioritized:
        """Store.prioritize_batch on the journal thread."""
        return await self.call(self.sync.prioritize_batch, batch_id, now, priority=priority)

    async def set_review(self, change: ReviewChange) -> ReviewWritten:
        """Store.set_review on the journal thread."""
        return await self.call(self.sync.set_review, change)

    async def set_batch_paused(self, batch_id: int, paused: bool, now: float) -> Batch | None:
        """Store.set_batch_paused on the journal thread."""
        return await self.call(self.sync.set_batch_paused, batch_id, paused, now)

    async def update_batch_settings(
        self, batch_id: int, patch: dict[str, Any], now: float,
    ) -> Batch | None:
        """Store.update_batch_settings on the journal thread."""
        return await self.call(self.sync.update_batch_settings, batch_id, patch, now)

    async def spend_summary(self, now: float, day_start: float) -> SpendSummary:
        """Store.spend_summary on the journal thread."""
        return await self.call(self.sync.spend_summary, now, day_start)

    async def to_go(self) -> tuple[ToGo, ...]:
        """Store.to_go on the journal thread."""
        return await self.call(self.sync.to_go)

    # -- recovery and audit ------------------------------------------------------------
    async def recover(self, params: RecoverParams) -> RecoveryReport:
        """Store.recover on the journal thread."""
        return await self.call(self.sync.recover, params)

    async def next_wakeup(self, now: float) -> float | None:
        """Store.next_wakeup on the journal thread."""
        return await self.call(self.sync.next_wakeup, now)

    async def completed_outputs(self) -> list[tuple[int, str, int]]:
        """Store.completed_outputs on the journal thread."""
        return await self.call(self.sync.completed_outputs)

    async def ledger(
        self, job_id: int | None = None, limit: int | None = None
    ) -> list[LedgerEntry]:
        """Store.ledger on the journal thread."""
        return await self.call(self.sync.ledger, job_id, limit)

    async def ledger_after(self, seq: int, limit: int) -> list[LedgerEntry]:
        """Store.ledger_after on the journal thread."""
        return await self.call(self.sync.ledger_after, seq, limit)

    async def doctor_queries(self, instance_alive: bool) -> dict[str, list[Any]]:
        """Store.doctor_queries on the journal thread."""
        return await self.call(self.sync.doctor_queries, instance_alive)
