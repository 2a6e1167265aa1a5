"""Read-only questions a view asks the journal, answered on the journal thread.

Every function here is a coroutine over :class:`AsyncStore`: the store call runs on the
journal thread, so an event loop (the window's above all) never waits on SQLite. Rows for
a big table come back as :class:`JobRow` — the few fields a view shows, in a slotted,
mutable record the view owns and updates from :class:`~reelqueue.engine.events.JobEvent`
values — built on the journal thread as well, so the loop does no per-row work.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from reelqueue.domain.errors import KnownError
from reelqueue.domain.models import Account, Batch, Job, LedgerEntry
from reelqueue.domain.render_times import render_kind
from reelqueue.domain.states import IN_FLIGHT, JobState
from reelqueue.engine.async_store import AsyncStore
from reelqueue.intake.estimate import AccountPrices, quote_job
from reelqueue.providers.base import ParamSpec
from reelqueue.providers.builtin import builtin_registry
from reelqueue.providers.registry import ProviderRegistry
from reelqueue.store.base import Store

PAGE_ROWS = 20_000
"""How many jobs one call of :func:`job_rows` reads at most."""


@dataclass(slots=True)
class JobRow:
    """One job as a table shows it. Mutable on purpose: its owner applies events to it.

    Attributes:
        id, batch_id, row_number, name, prompt, provider: from the import.
        account: the account rendering (or that rendered) the job, if any.
        state: a :class:`JobState` value.
        sub_status: the provider's own word while rendering (queued, throttled, running).
        progress: 0..1 when the provider gives a number, else None.
        attempts, max_attempts: attempts used and allowed.
        output_path: where the video goes (is, once completed).
        error_label, error_message: the last error, in the user's words.
        attempt_started: when the current (or last) attempt was claimed, epoch seconds.
        finished_at: when the job reached a final state.
        updated_at: the time of the last change applied (journal write or event).
        cost: what the provider charged, when it says.
        estimate: the estimated price (:func:`price_estimator`; None: price unknown).
        kind: what its render time is compared by (``domain.render_times.render_kind``).
        host: the machine that holds a completed job's file (``jobs.output_host``).
        priority: claims take higher first (0: as imported; "Move to the front" gives one
            above every waiting job's).
        pinned_account: the account the sheet pinned the job to, if any.
        provider_job_id: the provider's id of its render, as read (a create of unknown
            outcome has none: its state's name says so, application.words).
    """

    id: int
    batch_id: int
    row_number: int | None
    name: str
    prompt: str
    provider: str
    account: str | None
    state: str
    sub_status: str | None
    progress: float | None
    attempts: int
    max_attempts: int
    output_path: str
    error_label: str | None
    error_message: str | None
    attempt_started: float | None
    finished_at: float | None
    updated_at: float
    cost: float | None
    estimate: float | None
    kind: str = ""
    host: str | None = None
    priority: int = 0
    pinned_account: str | None = None
    provider_job_id: str | None = None


@dataclass(frozen=True)
class AccountSummary:
    """An account with its live render count (from the same journal read)."""

    account: Account
    live: int


@dataclass(frozen=True)
class JobDetail:
    """A job and its ledger history, oldest first."""

    job: Job
    ledger: list[LedgerEntry]


def price_estimator(
    accounts: Iterable[Account], providers: ProviderRegistry | None = None,
) -> Callable[[Job], float | None]:
    """A job's estimated price as the import counts it (intake/estimate.py ``quote_job``:
    the account's own price, else the provider's table), on the account the job runs on
    once it has one; None: price unknown."""
    registry = providers or builtin_registry()
    prices = AccountPrices.of(accounts)
    specs: dict[str, ParamSpec] = {}
    known: dict[tuple[Any, ...], float | None] = {}  # a page repeats a few settings

    def quote(job: Job, account: str | None) -> float | None:
        spec = specs.get(job.provider)
        if spec is None:
            try:
                spec = registry.get(job.provider).params
            except KnownError:
                spec = ParamSpec()
            specs[job.provider] = spec
        return quote_job(job.provider, job.params, account, spec, prices).usd

    def estimate(job: Job) -> float | None:
        params, account = job.params, job.pinned_account or job.account
        key = (job.provider, account, params.get("model"), params.get("resolution"),
               params.get("audio"), params.get("duration"))
        try:
            return known[key]
        except KeyError:
            usd = known[key] = quote(job, account)
            return usd
        except TypeError:  # a value that cannot be a key
            return quote(job, account)

    return estimate


def to_row(job: Job, estimate: Callable[[Job], float | None]) -> JobRow:
    """The row a table shows; ``estimate`` prices the job (:func:`price_estimator`)."""
    started: float | None = job.started_at
    if job.attempts > 1:  # the journal keeps the first claim's time; the last change is
        started = job.updated_at  # the closest we have to this attempt's start
    elif job.state in IN_FLIGHT and started is None:
        started = job.updated_at
    return JobRow(
        id=job.id, batch_id=job.batch_id, row_number=job.row_number, name=job.name,
        prompt=job.prompt, provider=job.provider, account=job.account, state=job.state.value,
        sub_status=job.sub_status, progress=job.progress, attempts=job.attempts,
        max_attempts=job.max_attempts, output_path=job.output_path,
        error_label=job.error_label, error_message=job.error_message,
        attempt_started=started, finished_at=job.finished_at, updated_at=job.updated_at,
        cost=job.cost, estimate=estimate(job), kind=render_kind(job.provider, job.params),
        host=job.output_host if job.state == JobState.COMPLETED else None,
        priority=job.priority, pinned_account=job.pinned_account,
        provider_job_id=job.provider_job_id,
    )


def _rows_page(store: Store, offset: int, limit: int,
               providers: ProviderRegistry | None = None) -> list[JobRow]:
    estimate = price_estimator(store.list_accounts(), providers)
    return [to_row(job, estimate) for job in store.list_jobs(limit=limit, offset=offset)]


async def job_rows(astore: AsyncStore, offset: int = 0, limit: int = PAGE_ROWS,
                   providers: ProviderRegistry | None = None) -> list[JobRow]:
    """Jobs in id order, ``limit`` from ``offset``. Jobs are never deleted, so the count
    of rows already read is the offset of the new ones. ``providers``: whose price tables
    estimate (default: the built-in ones; the session passes its own, plug-ins included)."""
    return await astore.call(_rows_page, astore.sync, offset, limit, providers)


async def job_order(astore: AsyncStore, order: str, descending: bool = False) -> list[int]:
    """Every job id sorted by a column of the jobs table (``store.base.JOB_ORDERS``), the
    journal doing the sort on its thread."""
    return await astore.job_ids_ordered(order, descending)


async def job_rows_by_id(astore: AsyncStore, job_ids: list[int],
                         providers: ProviderRegistry | None = None) -> list[JobRow]:
    """Fresh rows for a few jobs (after a command changed them)."""

    def read(store: Store) -> list[JobRow]:
        estimate = price_estimator(store.list_accounts(), providers)
        jobs = [store.get_job(job_id) for job_id in job_ids]
        return [to_row(job, estimate) for job in jobs if job is not None]

    return await astore.call(read, astore.sync)


async def job_detail(astore: AsyncStore, job_id: int) -> JobDetail | None:
    def read(store: Store) -> JobDetail | None:
        job = store.get_job(job_id)
        if job is None:
            return None
        return JobDetail(job, store.ledger(job_id=job_id))

    return await astore.call(read, astore.sync)


async def accounts(astore: AsyncStore) -> list[AccountSummary]:
    """Every account in the pump's order, with its live count."""

    def read(store: Store) -> list[AccountSummary]:
        live = store.counts().live_by_account
        return [AccountSummary(a, live.get(a.name, 0)) for a in store.list_accounts()]

    return await astore.call(read, astore.sync)


async def batches(astore: AsyncStore) -> list[Batch]:
    return await astore.list_batches()


async def in_flight_count(astore: AsyncStore) -> int:
    """Jobs a previous run left in flight (before recovery: a sign of an unclean exit)."""
    counts = await astore.counts()
    return sum(counts.by_state.get(state.value, 0) for state in IN_FLIGHT)
