"""The store contract. Both implementations pass ``tests/store/test_contract.py``.

Every method is synchronous and short; the engine calls them from one dedicated thread
(:class:`reelqueue.engine.async_store.AsyncStore`) so the event loop never waits on fsync.

Fenced writes take a :class:`ClaimToken` and return False (and append a ``fenced_out``
ledger entry) when the job is no longer owned by that claim.
"""

from __future__ import annotations

import socket
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from reelqueue.domain.account_view import AccountView, Charging
from reelqueue.domain.models import (
    Account,
    AccountSpec,
    Batch,
    BatchSpec,
    Claim,
    ClaimToken,
    FileCheck,
    Job,
    LedgerEntry,
    RecoveryReport,
)
from reelqueue.domain.review import ReviewChange, ReviewWritten
from reelqueue.domain.routes import Candidate, Route
from reelqueue.domain.states import AccountStatus, JobState
from reelqueue.store.balance import BalanceLeft
from reelqueue.store.spend import SpendSummary, ToGo


def write_each_alone(writes: Sequence[Callable[[], Any]]) -> list[Any]:
    """A group of writes without group commit (a group of one; PostgreSQL's group once
    undone): each write run alone, in order; its answer, or the exception it raised."""
    answers: list[Any] = []
    for write in writes:
        try:
            answers.append(write())
        except Exception as exc:  # its own caller's answer, not the others'
            answers.append(exc)
    return answers


def this_host() -> str:
    """This machine's host name: what the journal records as the holder of a file an
    instance writes (``jobs.output_host``), as the instances registry names machines."""
    return socket.gethostname() or "localhost"


def short_lease(lease_left: float | None, min_lease: float | None) -> dict[str, Any]:
    """What a ``fenced_out`` entry of ``mark_submitting`` adds when the claim held but its
    lease was too short for a create (``lease_left`` None: the claim itself was gone)."""
    if lease_left is None or min_lease is None:
        return {}
    return {"why": "lease too short for a create", "lease_left": round(float(lease_left), 3),
            "min_lease": min_lease}


def account_usable(account: Account) -> bool:
    """Whether ``account`` takes claims, its cool-down aside (compared on the store's one
    clock: the caller's on one machine, the server's for a team): enabled, and ready or
    rate limited (a rate limit whose cool-down is over tries again)."""
    return account.enabled and account.status in (AccountStatus.READY,
                                                   AccountStatus.RATE_LIMITED)


def downloading_detail(output_path: str | None, part: str | None) -> dict[str, Any]:
    """The ledger detail of a ``downloading`` entry: the output path chosen and the
    temporary file (only what was given)."""
    return {k: v for k, v in (("output_path", output_path), ("part", part)) if v is not None}


@dataclass(frozen=True)
class ClaimParams:
    """Attributes:
    account: the account name to claim for (its provider and capacity come from the row).
    instance_id: the boot-unique owner id of the claiming process.
    now: the current time (epoch seconds).
    lease_seconds: how long the claim holds without a heartbeat.
    day_start: the local midnight of ``now``, where an account's daily spend cap starts.
    default_model: the model of a job whose params name none (the provider's default, or
        the account's), for the provider's per-model limits (store/provider_limits.py).
    charging: provider kind -> how it charges its accounts' balance (store/balance.py);
        a provider not in it: its balance gates nothing.
    """

    account: str
    instance_id: str
    now: float
    lease_seconds: float
    day_start: float = 0.0
    default_model: str | None = None
    charging: Mapping[str, Charging] = field(default_factory=dict)


@dataclass(frozen=True)
class JobError:
    error_class: str
    label: str
    message: str


def error_detail(error: JobError, **flags: Any) -> dict[str, Any]:
    """The ledger detail of a transition that records an error (``retry_wait``,
    ``released``, ``failed``, ``parked``): the error's class, label and message, then the
    ``flags`` given."""
    return {"error_class": error.error_class, "label": error.label, "message": error.message,
            **flags}


def claimed_detail(owner: str, job: Job) -> dict[str, Any]:
    """The ledger detail of a ``claimed`` entry (``job``: the row once claimed)."""
    return {"owner": owner, "attempt": job.attempts, "resume": job.provider_job_id is not None}


def claim_of(job: Job, account: str, token: str) -> Claim:
    """The claim of ``job`` for ``account`` under ``token``."""
    return Claim(job=job, account=account, token=ClaimToken(job.id, token),
                 resumed=job.provider_job_id is not None)


@dataclass(frozen=True)
class AddJobsResult:
    added: int
    already_present: int
    job_ids: tuple[int, ...]


@dataclass(frozen=True)
class RecoverParams:
    """Attributes:
    instance_id: the instance taking the leftovers over.
    now: the current time.
    lease_seconds: the lease given to reattached jobs.
    only_expired: True on a shared store (take over only expired leases); False on one
        machine behind the data-folder lock, where every in-flight row is a leftover.
    check_output: looks at a job's video (exists, size, sha256); recovery completes a job
        only when the sha256 is the one its download recorded (``output_sha256``).
    lookup_accounts: accounts whose provider can be asked for a create whose answer was lost
        (by client token, or by a search of the account's renders): their jobs are marked
        to reconcile.
    token_accounts: accounts whose provider keeps our client token (the words for an
        unknown create name it only there).
    lost_render_accounts: accounts whose renders ended with the process that died (the
        built-in mock runs inside ReelQueue): their jobs are rendered again, no attempt
        spent.
    max_crashes: how many claims in a row may end in a crash before the job is failed
        (each requeue by recovery gives the attempt back).
    prune_before: ledger rows older than this are deleted (None: keep all).
    """

    instance_id: str
    now: float
    lease_seconds: float
    only_expired: bool
    check_output: Callable[[Job], FileCheck]
    lookup_accounts: frozenset[str] = frozenset()
    token_accounts: frozenset[str] = frozenset()
    lost_render_accounts: frozenset[str] = frozenset()
    max_crashes: int = 5
    prune_before: float | None = None
    verify_completed: bool = False


@dataclass(frozen=True)
class Prioritized:
    """Attributes:
    priority: the priority the jobs now have (claims take higher first, then older).
    job_ids: the jobs changed (finished ones keep theirs); for a batch, not listed.
    changed: how many jobs changed.
    """

    priority: int
    changed: int
    job_ids: tuple[int, ...] = ()


JOB_ORDERS = ("row", "name", "prompt", "account", "state", "progress", "attempts", "output",
              "error")
"""What :meth:`Store.job_ids_ordered` sorts by: the jobs table's columns, in its order.

row: the sheet's row number (none first). name, prompt, output (the output path), error
(the error label; none first): text, ASCII case folded (SQLite's NOCASE). account: the
account, else "<provider> · any" as the table shows it. state: the lifecycle order
(queued, retry wait, claimed, submitting, rendering, downloading, completed, parked,
failed, cancelled). progress (none first), attempts: numbers. Ties always go by job id.
"""


@dataclass(frozen=True)
class Counts:
    by_state: dict[str, int]
    live_by_account: dict[str, int]


class Store(Protocol):
    host: str
    """This machine's name as the journal records it: the holder of the files its
    instance writes (``jobs.output_host``; :func:`this_host`)."""

    # -- lifecycle ---------------------------------------------------------------------
    def close(self) -> None: ...

    # -- batches and jobs --------------------------------------------------------------
    def create_batch(self, spec: BatchSpec, now: float) -> Batch: ...
    def get_batch(self, batch_id: int) -> Batch | None: ...
    def list_batches(self) -> list[Batch]: ...
    def newest_batch_id(self) -> int | None:
        """The highest batch id (None: no batch yet); one index look-up."""
        ...
    def add_jobs(
        self, batch_id: int, specs: Sequence[Any], now: float, max_waiting: int | None = None
    ) -> AddJobsResult: ...
    def existing_job_keys(self, keys: Iterable[str]) -> set[str]: ...
    def get_job(self, job_id: int) -> Job | None: ...
    def list_jobs(
        self, batch_id: int | None = None, states: Iterable[JobState] | None = None,
        limit: int | None = None, offset: int = 0,
    ) -> list[Job]: ...
    def job_ids_ordered(
        self, order: str, descending: bool = False, limit: int | None = None, offset: int = 0,
    ) -> list[int]:
        """Job ids sorted by ``order`` (one of :data:`JOB_ORDERS`), ties by id; descending
        is exactly the ascending order reversed. ValueError for an unknown order."""
        ...
    def count_waiting(self) -> int: ...
    def takeovers(self) -> dict[str, dict[str, int]]:
        """account -> provider -> how many routed jobs the account took over from that
        provider at claim (the ``handed_over`` ledger entries: issue 24)."""
        ...
    def recent_render_times(self, limit: int = 2_000) -> list[tuple[str, float]]:
        """The newest ``limit`` finished renders as (render kind, seconds from first claim
        to completion): routing's "fastest" (domain/render_times.py)."""
        ...
    def counts(self) -> Counts: ...

    # -- accounts ----------------------------------------------------------------------
    def add_account(self, spec: AccountSpec, now: float) -> Account: ...
    def get_account(self, name: str) -> Account | None: ...
    def list_accounts(self) -> list[Account]: ...
    def remove_account(self, name: str, now: float) -> None: ...
    def update_account(
        self, name: str, now: float, *, capacity: int | None = None,
        enabled: bool | None = None, base_url: str | None = None,
        settings: dict[str, Any] | None = None,
    ) -> Account:
        """``settings`` is merged into the account's (a None value removes the key)."""
        ...
    def set_account_status(
        self, name: str, status: AccountStatus, now: float, *,
        detail: str | None = None, cooldown_until: float | None = None,
    ) -> None: ...
    def live_count(self, account: str) -> int: ...
    def put_account_view(self, view: AccountView) -> bool:
        """Keep ``view`` (issue 32 item 2) as its account's row, its limits bounded
        (``domain.account_view.limits_to_json``); False when the row holds a newer
        reading (``read_at``), which is kept. Removing the account removes its view."""
        ...
    def account_views(self) -> list[AccountView]:
        """Every account's view, by account name."""
        ...
    def balance_left(self, account: str, now: float,
                     charging: Charging | None) -> BalanceLeft | None:
        """The account's published balance less what it cannot include yet, as the claim
        reckons it (store/balance.py); None when its balance gates nothing."""
        ...

    # -- claims and fenced transitions -------------------------------------------------
    def claim_next_job(self, params: ClaimParams) -> Claim | None: ...
    def renew_leases(self, instance_id: str, now: float, lease_seconds: float,
                     tokens: Collection[str] | None = None,
                     clock_offset: float | None = None) -> int:
        """Renew the instance's in-flight leases; with ``tokens`` only the rows carrying
        one of these claim tokens (the engine's heartbeat names the claims it runs, so a
        claim it never learned of, e.g. one whose COMMIT answer was lost, runs out and is
        taken over instead of being kept alive forever). Returns the leases renewed.
        ``clock_offset``: the instance's measured offset to :meth:`server_time`, kept in
        the instances registry where there is one."""
        ...
    def write_group(self, writes: Sequence[Callable[[], Any]], *, durable: bool
                    ) -> list[Any]:
        """The engine's render transitions that arrived together (engine/async_store.py),
        each a store operation called with no argument: one answer per write, its result
        or the exception it raised (that write alone undone). Both drivers commit them
        once (group commit; ``durable``: waiting for the disk): SQLite with a savepoint per
        write, PostgreSQL without (a write that raises sends the group to
        :func:`write_each_alone`: store/pg_group.py). Raises when the group as a whole
        failed (nothing of it is written) or its outcome cannot be learnt."""
        ...
    def changed_elsewhere(self) -> bool:
        """Whether another connection committed to the journal since the last call (the
        first call only takes its bearings: False). Cheap when nothing changed; the engine
        asks about once a second and wakes its pump on True, so a command of another
        process (``accounts refresh``, ``batch cap``, ``submit``) is seen at once.
        SQLite: ``PRAGMA data_version`` of this store's own connection (it moves only on
        another connection's commit). PostgreSQL: always False, its triggers NOTIFY
        (store/postgres_notify.py)."""
        ...
    def server_time(self) -> float | None:
        """The store's own clock (epoch seconds) when it is the one that decides compared
        times (PostgreSQL: the server's clock_timestamp()); None where the caller's clock
        decides (SQLite, memory: one machine)."""
        ...
    def mark_submitting(self, token: ClaimToken, client_token: str, now: float, *,
                        min_lease_seconds: float | None = None) -> bool:
        """The intent (write-ahead: before a create is sent). With ``min_lease_seconds``
        the claim's lease must still hold at least that long (PostgreSQL: on the server's
        clock), else nothing is written and a ``fenced_out`` entry says why (False, as a
        fenced-out write): a create is sent only when it will be answered or given up
        before another instance may take the job over."""
        ...
    def record_submitted(self, token: ClaimToken, provider_job_id: str, now: float) -> bool: ...
    def mark_rendering(self, token: ClaimToken, now: float) -> bool: ...
    def record_progress(
        self, token: ClaimToken, sub_status: str, progress: float | None, now: float
    ) -> bool: ...
    def mark_downloading(self, token: ClaimToken, now: float, *,
                         output_path: str | None = None, part: str | None = None) -> bool:
        """RENDERING -> DOWNLOADING. ``output_path``: where the video will be (a suffixed
        name when a file the journal did not record holds the planned one; None keeps the
        job's); ``part``: the temporary file's name beside it. The recorded size and hash
        are cleared: they belong to the file this download writes (issue 22)."""
        ...
    def record_download(self, token: ClaimToken, *, size: int, sha256: str,
                        now: float) -> bool:
        """The downloaded file's size and sha256 (DOWNLOADING stays), written after it was
        fsynced and before it is renamed into place: recovery completes a job from disk
        only from a file with this hash (issue 22)."""
        ...
    def mark_completed(
        self, token: ClaimToken, *, size: int, sha256: str, cost: float | None, now: float
    ) -> bool: ...
    def set_retry_wait(
        self, token: ClaimToken, error: JobError, run_after: float, now: float, *,
        keep_provider_job: bool,
    ) -> bool: ...
    def release_to_queue(
        self, token: ClaimToken, error: JobError, now: float, *, run_after: float | None = None,
        keep_submission: bool = False,
    ) -> bool:
        """Account-level trouble: back to the queue without spending the attempt. A job
        with a render keeps it and its account; ``keep_submission`` keeps an unresolved
        submission's client token and account too (it is asked for before any create)."""
        ...
    def hand_over(self, token: ClaimToken, error: JobError, now: float, *,
                  route: Route, to: Candidate, came_from: str) -> bool:
        """A routed job's create was definitely refused on ``came_from`` (nothing made):
        back to the queue on ``to`` (its parameters and price), ``route`` marking the
        refusal, without spending the attempt (issue 24, docs/routing.md)."""
        ...
    def mark_failed(self, token: ClaimToken, error: JobError, now: float, *,
                    drop_render: bool = False) -> bool:
        """``drop_render``: the provider's render itself failed; forget its id so that a
        user's retry creates anew instead of reattaching a dead render."""
        ...
    def park_job(self, token: ClaimToken, error: JobError, now: float) -> bool:
        """PARKED: kept for the user, holding no claim and no slot, never moved by itself:
        a render whose resume keeps killing the process (its provider job id; a retry reads
        it), or a create whose outcome stayed unknown (its client token; a retry looks for
        it in the provider's records first). Needs a client token."""
        ...
    def forget_submission(self, token: ClaimToken, now: float, detail: dict[str, Any],
                          event: str = "reconciled_absent") -> bool:
        """SUBMITTING -> CLAIMED without the client token: reconciliation proved the earlier
        create absent (``detail``: the window and settle time read), so this claim creates
        once. Ledger ``event``: ``reconciled_absent``, or ``intent_withdrawn`` (an orderly
        stop before the create was sent)."""
        ...
    def unresolved_submissions(self, account: str) -> list[tuple[Job, float | None]]:
        """The account's creates whose answer was lost and that hold no render (in flight,
        parked or failed "submit outcome unknown", waiting with the token kept), each with
        the time its intent was first committed (None once the ledger was pruned)."""
        ...
    def known_provider_job_ids(self, provider: str, account: str,
                               ids: Sequence[str]) -> set[str]:
        """Which of ``ids`` a job of ``provider`` on ``account`` already holds."""
        ...
    def attach_render(self, job_id: int, provider_job_id: str, now: float) -> bool:
        """The user's pick of the render of an unknown create (PARKED/FAILED, no render yet):
        the job is queued on its account to read that render. RenderAlreadyRecorded when
        another job holds it. Ledger ``resolved_by_user``."""
        ...
    def note(
        self, event: str, now: float, *, job_id: int | None = None,
        account: str | None = None, claim_token: str | None = None,
        detail: dict[str, Any] | None = None,
    ) -> None: ...

    # -- user commands -----------------------------------------------------------------
    def cancel_jobs(self, job_ids: Iterable[int], now: float) -> list[int]: ...
    def requeue_jobs(
        self, job_ids: Iterable[int], now: float, *, new_seed: int | None = None,
        reconcile: bool = True,
    ) -> list[int]:
        """The user's retry of FAILED / CANCELLED / PARKED jobs. A job that has a render
        keeps it (unless ``new_seed``): the next claim reads it before anything is created.
        A create whose outcome stayed unknown keeps its client token and account while
        ``reconcile`` (the next claim looks for it first); ``reconcile=False`` is the user's
        explicit "create it again" (a deliberate re-render, on the record)."""
        ...

    def prioritize_jobs(
        self, job_ids: Iterable[int], now: float, *, priority: int | None = None
    ) -> Prioritized:
        """Give unfinished jobs a priority; None moves them to the front (one above the
        highest priority of any waiting job), in one write transaction."""
        ...
    def prioritize_batch(
        self, batch_id: int, now: float, *, priority: int | None = None
    ) -> Prioritized:
        """:meth:`prioritize_jobs` for every unfinished job of a batch (one statement)."""
        ...
    def set_batch_paused(self, batch_id: int, paused: bool, now: float) -> Batch | None:
        """A paused batch's jobs are not claimed (``settings["paused"]``); jobs holding a
        render are, so renders in flight finish. None: no such batch."""
        ...

    def update_batch_settings(
        self, batch_id: int, patch: dict[str, Any], now: float,
    ) -> Batch | None:
        """Merge ``patch`` into the batch's settings (a None value removes the key), e.g.
        ``{"max_spend": 80}``. None: no such batch."""
        ...
    def spend_summary(self, now: float, day_start: float) -> SpendSummary:
        """Spend per capped batch and per account since ``day_start`` (store/spend.py)."""
        ...
    def to_go(self) -> tuple[ToGo, ...]:
        """What the waiting jobs will cost, per provider and pinned account (store/spend.py
        :class:`ToGo`): one aggregate over the job rows' stored prices, ordered by provider
        then pinned account (unpinned first)."""
        ...

    # -- review (issue 35 item 2) ------------------------------------------------------
    def set_review(self, change: ReviewChange) -> ReviewWritten:
        """A reviewer's change to a take, compare-and-set on the version they saw, with its
        ``reviewed`` ledger entry; a pick takes the pick of the other takes of its group
        (domain/review.py ``take_group``; a batch and its re-rolls) in the same
        transaction. ReviewRefused (failed, cancelled), ReviewConflict (changed
        meanwhile), InputError (no such job)."""
        ...

    # -- recovery and audit ------------------------------------------------------------
    def recover(self, params: RecoverParams) -> RecoveryReport: ...
    def next_wakeup(self, now: float) -> float | None:
        """The next retry or cool-down due after ``now``; both on the store's clock (the
        server's on a team database, :meth:`server_time`: the engine converts with its
        measured offset)."""
        ...
    def completed_outputs(self) -> list[tuple[int, str, int]]:
        """(job id, output path, recorded size) of every completed job: what the start-up
        check of finished videos needs, without building a Job per row."""
        ...
    def ledger(self, job_id: int | None = None, limit: int | None = None) -> list[LedgerEntry]: ...
    def ledger_after(self, seq: int, limit: int) -> list[LedgerEntry]:
        """The ledger's entries with a sequence number above ``seq``, oldest first, at most
        ``limit`` (a window on a team database follows the other machines' changes).
        On a shared database an entry can commit after one with a higher number: a reader
        that must miss nothing reads again from below what it saw."""
        ...
    def doctor_queries(self, instance_alive: bool) -> dict[str, list[Any]]:
        """The invariant queries, each a list of offending rows (empty: it holds). One
        machine: live claims are offending when no instance is alive. A team's journal
        checks them by their leases (server's clock) and their owners' heartbeats."""
        ...
