"""The journal's policy, written once over thin SQL drivers (issue 20).

:class:`SqlJournal` holds what the SQLite journal (``sqlite.py``) and the team journal on
PostgreSQL (``postgres.py``) do alike: the fenced transitions and their ledger entries,
recovery applied, spend caps, the user's commands (prioritise, pause, cancel, requeue),
accounts and listing. It has no dialect branches: each store is a driver that implements
the primitives below, and the SQL of a named query is its own dialect's (``sql/`` and
``sql_pg/``; a query of the same name in both files is what keeps this module
dialect-free). Where the two stores really behave differently, the difference is a
primitive or a hook here, and its docstring says why.

Parameters are passed by name, and a driver ignores the names its statement does not use,
so a query may take a value only one dialect needs (``lease_seconds`` beside
``lease_until``: PostgreSQL computes a lease on the server's clock, SQLite from ``now``).
"""

from __future__ import annotations

import functools
import uuid
from collections.abc import Callable, Iterable, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any, ClassVar

from reelqueue.domain.errors import InputError, RenderAlreadyRecorded
from reelqueue.domain.models import (
    Account,
    AccountSpec,
    Batch,
    BatchSpec,
    Claim,
    ClaimToken,
    Job,
    JobSpec,
    LedgerEntry,
    RecoveryReport,
)
from reelqueue.domain.row_limits import (
    MAX_REFUSED_PER_CLAIM,
    ROW_LIMITS,
    ROW_REFUSED,
    refusal_words,
)
from reelqueue.domain.states import AccountStatus, JobState
from reelqueue.store.base import (
    JOB_ORDERS,
    AddJobsResult,
    ClaimParams,
    Counts,
    JobError,
    Prioritized,
    RecoverParams,
    downloading_detail,
)
from reelqueue.store.queue_limit import check_queue_room
from reelqueue.store.recovery_plan import (
    RecoveryAction,
    failure_of,
    plan_recovery,
    record_applied,
    requeued_detail,
)
from reelqueue.store.spend import (
    SLACK,
    AccountSpend,
    BatchSpend,
    SpendSummary,
    ToGo,
    cap_of,
    refusal,
)

Row = Any
"""A row of a driver, read by column name (``sqlite3.Row`` or psycopg's dict row)."""


def public_methods(cls: type, skip: Iterable[str] = ()) -> dict[str, Callable[..., Any]]:
    """The public operations of ``cls``, inherited ones included (the most derived
    definition of each name), for a driver's error-mapping decorator."""
    found: dict[str, Callable[..., Any]] = {}
    skipped = set(skip)
    for klass in reversed(cls.__mro__):
        if klass is object:
            continue
        for name, value in vars(klass).items():
            if name.startswith("_") or name in skipped:
                continue
            if callable(value) and not isinstance(value, classmethod | staticmethod):
                found[name] = value
    return found


def render_recorded(provider_job_id: str, holder: int) -> RenderAlreadyRecorded:
    return RenderAlreadyRecorded(
        f"Render {provider_job_id} is already recorded for job {holder}; a render goes to "
        "at most one job.")


def claim_of(job: Job, account: str, token: str) -> Claim:
    """The claim of ``job`` for ``account`` under ``token``."""
    return Claim(job=job, account=account, token=ClaimToken(job.id, token),
                 resumed=job.provider_job_id is not None)


def _number(value: Any) -> float | None:
    """A JSON number read from a row (a price, a cap), or None (missing, text, a bool)."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    return None


@dataclass(frozen=True)
class RowReaders:
    """How a driver turns its rows into domain values (JSON columns are text in SQLite,
    decoded jsonb in PostgreSQL)."""

    job: Callable[[Row], Job]
    batch: Callable[[Row], Batch]
    account: Callable[[Row], Account]
    entry: Callable[[Row], LedgerEntry]


class SqlJournal:
    """The policy of a journal kept in SQL. Subclasses are drivers: they implement the
    primitives (the ``NotImplementedError`` methods) and the operations whose statements
    differ in kind between the dialects (claims, imports, the submission intent...)."""

    host: str
    _q: dict[str, str]

    ROWS: ClassVar[RowReaders]
    """How the driver's rows become domain values."""

    NO_LIMIT: ClassVar[Any]
    """The ``:limit`` that means "all rows" (SQLite's LIMIT -1, PostgreSQL's LIMIT NULL)."""

    # -- driver primitives -------------------------------------------------------------
    def _write(self) -> AbstractContextManager[Any]:
        """One durable write transaction; nested calls join the open one."""
        raise NotImplementedError

    def _reading(self) -> AbstractContextManager[Any]:
        """Several reads that belong together. SQLite: the connection's lock (its reads
        need no transaction); PostgreSQL: one transaction on one pooled connection (one
        connection for all of them, and a snapshot per statement as READ COMMITTED)."""
        raise NotImplementedError

    def _one(self, query: str, /, **params: Any) -> Row | None:
        """The first row of a named query (in the open transaction, if any)."""
        raise NotImplementedError

    def _all(self, query: str, /, **params: Any) -> list[Row]:
        """Every row of a named query."""
        raise NotImplementedError

    def _scalar(self, query: str, /, **params: Any) -> Any:
        """The first column of a named query's first row (None: no row)."""
        raise NotImplementedError

    def _exec(self, query: str, /, **params: Any) -> int:
        """A named write; the rows it changed."""
        raise NotImplementedError

    def _all_sql(self, sql: str, /, **params: Any) -> list[Row]:
        """Every row of a statement made from a named template (``job_ids_ordered``)."""
        raise NotImplementedError

    def _ledger(
        self, event: str, now: float, *, job_id: int | None = None, account: str | None = None,
        claim_token: str | None = None, detail: dict[str, Any] | None = None,
    ) -> None:
        """One ledger entry, in the open transaction."""
        raise NotImplementedError

    def _json(self, value: Any) -> Any:
        """A JSON value as the driver binds it (SQLite: text; PostgreSQL: jsonb)."""
        raise NotImplementedError

    def _list(self, values: Iterable[Any]) -> Any:
        """A list parameter as the driver binds it (SQLite: JSON text for ``json_each``;
        PostgreSQL: an array)."""
        raise NotImplementedError

    def _transition(
        self, query: str, event: str, token: ClaimToken, now: float,
        detail: dict[str, Any] | None = None, *, durable: bool = True,
        written: dict[str, Any] | None = None, **params: Any,
    ) -> bool:
        """One fenced transition: the named update (``fenced_*``) names the job and its
        claim token, and writes ``event`` with ``detail`` to the ledger, or a
        ``fenced_out`` entry when it changed nothing. Whether it was written.

        ``durable=False``: the commit need not wait for the disk (a write whose loss in a
        power cut recovery handles the same way). ``written``: the columns the job's row
        has once this write is in, for a driver that reads back a commit whose answer was
        lost (PostgreSQL); None: this claim token's ``event`` entry in the ledger says it.
        SQLite's commit is local and never unanswered, so it uses neither read-back."""
        raise NotImplementedError

    def _present_job_keys(self, keys: Sequence[str]) -> set[str]:
        """Which of ``keys`` the journal has, inside :meth:`add_jobs`' transaction."""
        raise NotImplementedError

    def _lock_queue(self) -> None:
        """Before an import with a queue limit counts the waiting jobs: PostgreSQL takes an
        advisory lock, so imports from several machines count one after the other; SQLite
        needs nothing (the import's BEGIN IMMEDIATE holds the file's write lock)."""
        raise NotImplementedError

    def _insert_jobs(self, batch: Batch, specs: Sequence[JobSpec], now: float) -> list[int]:
        """Insert new jobs of ``batch`` (keys not yet in the journal, each once), in bulk
        as the dialect does it fastest; the ids of those inserted, in order. On PostgreSQL
        another machine may import a key meanwhile: that one is left out."""
        raise NotImplementedError

    def _jobs_query(self, batch_id: int | None, states: object | None) -> str:
        """The named query :meth:`list_jobs` runs for these filters (None: no filter)."""
        raise NotImplementedError

    def _account_taken(self, name: str) -> bool:
        """Before :meth:`add_account` inserts: whether the name is known to be taken
        (False: the insert's count says it)."""
        raise NotImplementedError

    def _lock_account(self, name: str) -> bool:
        """Before :meth:`remove_account` counts the account's renders: lock it so no
        claim adds one meanwhile; False when the account is known to be missing."""
        raise NotImplementedError

    def _account_with_room(self, params: ClaimParams) -> Account | None:
        """The claim's first step: the account, when it may take one more render now
        (enabled, usable, not cooling down, a free slot), held so that no other claim on
        it can count the same free slot. SQLite reads the account with its live renders
        under the claim's write lock and compares the cool-down with the caller's clock;
        PostgreSQL locks the account's row and asks the server's clock (one clock for a
        team, DESIGN.md invariant 14)."""
        raise NotImplementedError

    def _lock_batch(self, batch_id: int) -> None:
        """Before a capped batch's spend is counted for a claim: PostgreSQL locks the
        batch's row, so claims from several machines count it one after the other; SQLite
        needs nothing (the claim's ``BEGIN IMMEDIATE`` already holds the file's write lock)."""
        raise NotImplementedError

    # -- batches and jobs --------------------------------------------------------------
    def create_batch(self, spec: BatchSpec, now: float) -> Batch:
        with self._write():
            batch_id = int(self._scalar(
                "insert_batch", name=spec.name, source_path=spec.source_path,
                output_dir=spec.output_dir, max_attempts=spec.max_attempts,
                settings=self._json(spec.settings), now=now))
            self._ledger("batch_created", now, detail={"batch_id": batch_id, "name": spec.name})
            batch = self.get_batch(batch_id)
        assert batch is not None
        return batch

    def add_jobs(
        self, batch_id: int, specs: Sequence[JobSpec], now: float,
        max_waiting: int | None = None,
    ) -> AddJobsResult:
        with self._write():
            batch = self.get_batch(batch_id)
            if batch is None:
                raise InputError(f"There is no batch {batch_id}.")
            present = self._present_job_keys([s.job_key for s in specs])
            # Repeated keys inside one import count once.
            unique: dict[str, JobSpec] = {}
            for spec in specs:
                if spec.job_key not in present:
                    unique.setdefault(spec.job_key, spec)
            if max_waiting is not None:
                self._lock_queue()
                check_queue_room(int(self._scalar("count_waiting")), len(unique),
                                 max_waiting)
            ids = self._insert_jobs(batch, list(unique.values()), now)
            added = len(ids)
            self._ledger("imported", now, detail={
                "batch_id": batch_id, "added": added, "already_present": len(specs) - added,
            })
        return AddJobsResult(added=added, already_present=len(specs) - added,
                             job_ids=tuple(ids))

    def get_batch(self, batch_id: int) -> Batch | None:
        row = self._one("get_batch", id=batch_id)
        return self.ROWS.batch(row) if row else None

    def list_batches(self) -> list[Batch]:
        return [self.ROWS.batch(r) for r in self._all("list_batches")]

    def get_job(self, job_id: int) -> Job | None:
        row = self._one("get_job", id=job_id)
        return self.ROWS.job(row) if row else None

    def list_jobs(
        self, batch_id: int | None = None, states: Iterable[JobState] | None = None,
        limit: int | None = None, offset: int = 0,
    ) -> list[Job]:
        return [self.ROWS.job(r) for r in self._all(
            self._jobs_query(batch_id, states), batch_id=batch_id,
            states=None if states is None else self._list(str(s) for s in states),
            limit=self.NO_LIMIT if limit is None else limit,
            offset=offset if limit is not None else 0)]

    def job_ids_ordered(
        self, order: str, descending: bool = False, limit: int | None = None, offset: int = 0,
    ) -> list[int]:
        if order not in JOB_ORDERS:
            raise ValueError(f"unknown job order {order!r}; one of {', '.join(JOB_ORDERS)}")
        # The key is a named expression from queries.sql, picked from a fixed list.
        sql = self._q["job_ids_ordered"].format(
            key=self._q[f"job_order_{order}"], direction="DESC" if descending else "ASC",
            nulls="NULLS LAST" if descending else "NULLS FIRST")
        return [r["id"] for r in self._all_sql(
            sql, limit=self.NO_LIMIT if limit is None else limit, offset=offset)]

    def count_waiting(self) -> int:
        return int(self._scalar("count_waiting"))

    def counts(self) -> Counts:
        with self._reading():
            by_state = {r["state"]: r["count"] for r in self._all("counts_by_state")}
            live = {r["account"]: r["count"] for r in self._all("live_by_account")}
        return Counts(by_state=by_state, live_by_account=live)

    def update_batch_settings(
        self, batch_id: int, patch: dict[str, Any], now: float,
    ) -> Batch | None:
        with self._write():
            if not self._exec("update_batch_settings", id=batch_id, patch=self._json(patch)):
                return None
            self._ledger("batch_changed", now, detail={"batch_id": batch_id, **patch})
            return self.get_batch(batch_id)

    # -- accounts ----------------------------------------------------------------------
    def add_account(self, spec: AccountSpec, now: float) -> Account:
        with self._write():
            if self._account_taken(spec.name) or not self._exec(
                    "insert_account", name=spec.name, provider=spec.provider,
                    capacity=spec.capacity, base_url=spec.base_url, key_ref=spec.key_ref,
                    settings=self._json(spec.settings), now=now):
                raise InputError(f"An account named {spec.name!r} already exists.")
            self._ledger("account_added", now, account=spec.name,
                         detail={"provider": spec.provider, "capacity": spec.capacity})
            account = self.get_account(spec.name)
        assert account is not None
        return account

    def remove_account(self, name: str, now: float) -> None:
        with self._write():
            if not self._lock_account(name):
                raise InputError(f"There is no account named {name!r}.")
            live = int(self._scalar("live_count", account=name))
            if live:
                raise InputError(
                    f"Account {name!r} has {live} renders in flight; wait for them or "
                    "disable the account first."
                )
            if not self._exec("delete_account", name=name):
                raise InputError(f"There is no account named {name!r}.")
            self._ledger("account_removed", now, account=name)

    def get_account(self, name: str) -> Account | None:
        row = self._one("get_account", name=name)
        return self.ROWS.account(row) if row else None

    def list_accounts(self) -> list[Account]:
        return [self.ROWS.account(r) for r in self._all("list_accounts")]

    def update_account(
        self, name: str, now: float, *, capacity: int | None = None,
        enabled: bool | None = None, base_url: str | None = None,
        settings: dict[str, Any] | None = None,
    ) -> Account:
        if capacity is not None and capacity < 1:
            raise InputError("An account's limit must be at least 1.")
        with self._write():
            changed = self._exec("update_account", name=name, capacity=capacity,
                                 enabled=enabled, base_url=base_url,
                                 settings=None if settings is None else self._json(settings))
            if not changed:
                raise InputError(f"There is no account named {name!r}.")
            self._ledger("account_changed", now, account=name, detail={
                k: v for k, v in {"capacity": capacity, "enabled": enabled,
                                  "base_url": base_url, "settings": settings}.items()
                if v is not None})
            account = self.get_account(name)
        assert account is not None
        return account

    def set_account_status(
        self, name: str, status: AccountStatus, now: float, *,
        detail: str | None = None, cooldown_until: float | None = None,
    ) -> None:
        with self._write():
            self._exec("set_account_status", name=name, status=str(status), detail=detail,
                       cooldown_until=cooldown_until, now=now)
            self._ledger("account_status", now, account=name, detail={
                "status": str(status), "detail": detail, "cooldown_until": cooldown_until})

    def live_count(self, account: str) -> int:
        return int(self._scalar("live_count", account=account))

    # -- claims ------------------------------------------------------------------------
    def _claim_steps(self, params: ClaimParams, token: str, tried: list[int]) -> Claim | None:
        """A claim inside the driver's claim transaction: the account with room, the next
        job no spend cap refuses, the job marked CLAIMED under ``token`` (its id appended
        to ``tried`` first, for a driver that reads back a lost commit) and the ledger
        entry."""
        account = self._account_with_room(params)
        if account is None:
            return None
        for _ in range(MAX_REFUSED_PER_CLAIM):
            candidate = self._spend_checked_candidate(account, params)
            if candidate is None:
                return None
            problem = self._one("row_problem", id=candidate, **ROW_LIMITS)
            if problem is None or problem["problem"] is None:
                break
            self._refuse_row(candidate, str(problem["problem"]), params)
        else:
            return None
        tried.append(candidate)
        claimed = self._one(
            "claim_job", id=candidate, account=account.name, token=token,
            owner=params.instance_id, lease_until=params.now + params.lease_seconds,
            lease_seconds=params.lease_seconds, now=params.now)
        if claimed is None:  # the claim's lock holds the row: cannot happen; a guard
            return None
        return self._claimed(claimed, account.name, token, params)

    def _refuse_row(self, job_id: int, problem: str, params: ClaimParams) -> None:
        """Fail a job whose row is over a bound of domain/row_limits.py (it was not written
        by ReelQueue), in the claim's transaction: the transition ``row_refused``."""
        self._exec("refuse_row", id=job_id, now=params.now, message=refusal_words(problem),
                   **ROW_LIMITS)
        self._ledger(ROW_REFUSED, params.now, job_id=job_id,
                     detail={"problem": problem, "by": params.instance_id})

    def _claimed(self, row: Row, account: str, token: str, params: ClaimParams) -> Claim:
        """The claim just written (``row``: the job's row after it), with its ledger
        entry, in the claim's transaction."""
        job = self.ROWS.job(row)
        self._ledger("claimed", params.now, job_id=job.id, account=account,
                     claim_token=token, detail={"owner": params.instance_id,
                                                "attempt": job.attempts,
                                                "resume": job.provider_job_id is not None})
        return claim_of(job, account, token)

    # -- spend caps --------------------------------------------------------------------
    def _spend_checked_candidate(self, account: Account, params: ClaimParams) -> int | None:
        """The next claimable job that no spend cap refuses (inside the claim's write
        transaction, so no other claim can pass a cap at the same time)."""
        skip: list[int] = []
        creates = True
        account_cap = cap_of(account.settings, "daily_cap")
        tries, batches = 0, None
        # Each refusal steps over one more batch (or stops creates once): however many
        # batches are at their caps, a later one that may spend is reached. The batches
        # are counted only once a cap has refused (the bound of that walk).
        while batches is None or tries < batches + 2:
            tries += 1
            row = self._one("next_claimable", provider=account.provider, now=params.now,
                            account=account.name, creates=creates,
                            skip_batches=self._list(skip))
            if row is None:
                return None
            refused = refusal(
                needs_create=row["provider_job_id"] is None and row["client_token"] is None,
                price=_number(row["price"]),
                batch_cap=_number(row["max_spend"]),
                batch_committed=functools.partial(self._batch_committed, int(row["batch_id"])),
                account_cap=account_cap,
                account_committed=functools.partial(self._account_committed, account.name,
                                                    params.day_start),
            )
            if refused is None:
                return int(row["id"])
            if batches is None:
                batches = int(self._scalar("count_batches"))
            if refused.scope == "account":
                creates = False
            else:
                skip.append(int(row["batch_id"]))
        return None

    def _batch_committed(self, batch_id: int) -> float:
        self._lock_batch(batch_id)
        return (float(self._scalar("spend_of_batch", batch=batch_id))
                + float(self._scalar("reserved_of_batch", batch=batch_id)))

    def _account_committed(self, account: str, day_start: float) -> float:
        return (float(self._scalar("spend_of_account", account=account, day_start=day_start))
                + float(self._scalar("reserved_of_account", account=account)))

    def spend_summary(self, now: float, day_start: float) -> SpendSummary:
        with self._reading():
            batches: list[BatchSpend] = []
            for row in self._all("capped_batches"):
                if not isinstance(row["max_spend"], int | float):
                    continue
                cap = float(row["max_spend"])
                spent = float(self._scalar("spend_of_batch", batch=row["id"]))
                reserved = float(self._scalar("reserved_of_batch", batch=row["id"]))
                waiting = int(self._scalar("waiting_creates_of_batch", batch=row["id"],
                                           room=cap - spent - reserved + SLACK))
                batch = self.get_batch(int(row["id"]))
                batches.append(BatchSpend(int(row["id"]), batch.name if batch else "",
                                          spent, reserved, cap, waiting))
            accounts: list[AccountSpend] = []
            for account in self.list_accounts():
                acap = cap_of(account.settings, "daily_cap")
                spent = float(self._scalar("spend_of_account", account=account.name,
                                           day_start=day_start))
                reserved = float(self._scalar("reserved_of_account", account=account.name))
                waiting = 0 if acap is None else int(self._scalar(
                    "waiting_creates_of_account", account=account.name,
                    provider=account.provider, room=acap - spent - reserved + SLACK))
                accounts.append(AccountSpend(account.name, spent, reserved, acap, waiting))
        return SpendSummary(tuple(batches), tuple(accounts))

    def to_go(self) -> tuple[ToGo, ...]:
        with self._reading():
            rows = self._all("to_go_by_provider")
        groups = [ToGo(str(row["provider"]), row["account"],
                       round(float(row["usd"] or 0.0), 6), int(row["priced"]),
                       int(row["unpriced"]))
                  for row in rows]
        # Sorted here, not by the server's collation: every store lists them alike.
        return tuple(sorted(groups, key=lambda g: (g.provider, g.account or "")))

    # -- fenced transitions ------------------------------------------------------------
    def _refuse_recorded_render(self, job_id: int, provider_job_id: str) -> None:
        """RenderAlreadyRecorded when another job of this job's provider holds the render
        (inside the caller's write transaction; the unique index jobs_render_once is the
        last word, between two machines too)."""
        row = self._one("render_holder", id=job_id, provider_job_id=provider_job_id)
        if row is not None:
            raise render_recorded(provider_job_id, row["id"])

    def forget_submission(self, token: ClaimToken, now: float, detail: dict[str, Any],
                          event: str = "reconciled_absent") -> bool:
        return self._transition("fenced_forget_submission", event, token, now, detail)

    def unresolved_submissions(self, account: str) -> list[tuple[Job, float | None]]:
        return [(self.ROWS.job(r), r["intent_at"])
                for r in self._all("unresolved_submissions", account=account)]

    def known_provider_job_ids(self, provider: str, account: str,
                               ids: Sequence[str]) -> set[str]:
        if not ids:
            return set()
        return {r["provider_job_id"] for r in self._all(
            "known_provider_job_ids", provider=provider, account=account,
            ids=self._list(ids))}

    def attach_render(self, job_id: int, provider_job_id: str, now: float) -> bool:
        with self._write():
            row = self._one("get_job_for_update", id=job_id)
            self._refuse_recorded_render(job_id, provider_job_id)
            if row is None or not self._exec("attach_render", id=job_id, now=now,
                                             provider_job_id=provider_job_id):
                return False
            self._ledger("resolved_by_user", now, job_id=job_id, account=row["account"],
                         detail={"provider_job_id": provider_job_id, "from": row["state"],
                                 "client_token": row["client_token"]})
            return True

    # "resumed" and "remote_status" may repeat for one claim token: whether they were
    # written is read from the row (``written``), not from the ledger.
    def mark_rendering(self, token: ClaimToken, now: float) -> bool:
        return self._transition("fenced_mark_rendering", "resumed", token, now,
                                written={"state": "RENDERING"})

    def record_progress(
        self, token: ClaimToken, sub_status: str, progress: float | None, now: float
    ) -> bool:
        return self._transition("fenced_record_progress", "remote_status", token, now,
                                {"sub_status": sub_status}, durable=False,
                                written={"state": "RENDERING", "sub_status": sub_status,
                                         "progress": progress},
                                sub_status=sub_status, progress=progress)

    def mark_downloading(self, token: ClaimToken, now: float, *,
                         output_path: str | None = None, part: str | None = None) -> bool:
        return self._transition("fenced_mark_downloading", "downloading", token, now,
                                downloading_detail(output_path, part), durable=False,
                                output_path=output_path, part=part)

    def record_download(self, token: ClaimToken, *, size: int, sha256: str,
                        now: float) -> bool:
        # Not fsynced (docs/design-notes.md, refinements 8 and 14): a process that dies
        # keeps it; only a power cut before the next durable commit loses it, and then the
        # render is read again beside the unrecorded file, never created again.
        return self._transition("fenced_record_download", "downloaded", token, now,
                                {"size": size, "sha256": sha256}, durable=False,
                                written={"state": "DOWNLOADING", "output_sha256": sha256},
                                size=size, sha256=sha256)

    def set_retry_wait(
        self, token: ClaimToken, error: JobError, run_after: float, now: float, *,
        keep_provider_job: bool,
    ) -> bool:
        return self._transition(
            "fenced_set_retry_wait", "retry_wait", token, now,
            {"error_class": error.error_class, "label": error.label,
             "message": error.message, "run_after": run_after,
             "keeps_render": keep_provider_job},
            run_after=run_after, keep=bool(keep_provider_job), error_class=error.error_class,
            error_label=error.label, error_message=error.message,
        )

    def release_to_queue(
        self, token: ClaimToken, error: JobError, now: float, *,
        run_after: float | None = None, keep_submission: bool = False,
    ) -> bool:
        return self._transition(
            "fenced_release_to_queue", "released", token, now,
            {"error_class": error.error_class, "label": error.label, "message": error.message,
             **({"keeps_submission": True} if keep_submission else {})},
            run_after=float(run_after or 0.0), error_class=error.error_class,
            error_label=error.label, error_message=error.message,
            keep_submission=bool(keep_submission),
        )

    def mark_failed(self, token: ClaimToken, error: JobError, now: float, *,
                    drop_render: bool = False) -> bool:
        return self._transition(
            "fenced_mark_failed", "failed", token, now,
            {"error_class": error.error_class, "label": error.label, "message": error.message,
             **({"dropped_render": True} if drop_render else {})},
            error_class=error.error_class, error_label=error.label,
            error_message=error.message, drop_render=bool(drop_render),
        )

    def park_job(self, token: ClaimToken, error: JobError, now: float) -> bool:
        return self._transition(
            "fenced_park", "parked", token, now,
            {"error_class": error.error_class, "label": error.label, "message": error.message},
            error_class=error.error_class, error_label=error.label,
            error_message=error.message,
        )

    def note(
        self, event: str, now: float, *, job_id: int | None = None,
        account: str | None = None, claim_token: str | None = None,
        detail: dict[str, Any] | None = None,
    ) -> None:
        with self._write():
            self._ledger(event, now, job_id=job_id, account=account,
                         claim_token=claim_token, detail=detail)

    # -- user commands -----------------------------------------------------------------
    def cancel_jobs(self, job_ids: Iterable[int], now: float) -> list[int]:
        done: list[int] = []
        with self._write():
            for job_id in job_ids:
                row = self._one("get_job_for_update", id=job_id)
                if row is None:
                    continue
                if self._exec("cancel_job", id=job_id, now=now):
                    done.append(job_id)
                    self._ledger("cancelled", now, job_id=job_id, account=row["account"],
                                 claim_token=row["claim_token"],
                                 detail={"from": row["state"],
                                         "provider_job_id": row["provider_job_id"]})
        return done

    def requeue_jobs(
        self, job_ids: Iterable[int], now: float, *, new_seed: int | None = None,
        reconcile: bool = True,
    ) -> list[int]:
        done: list[int] = []
        with self._write():
            for job_id in job_ids:
                row = self._one("get_job_for_update", id=job_id)
                keep = new_seed is None
                if row is not None and self._exec("requeue_job", id=job_id, now=now,
                                                  seed=new_seed, keep=keep,
                                                  reconcile=reconcile):
                    done.append(job_id)
                    self._ledger("requeued", now, job_id=job_id,
                                 detail=requeued_detail(row, keep=keep, new_seed=new_seed,
                                                        reconcile=reconcile))
        return done

    def _priority(self, priority: int | None) -> int:
        if priority is not None:
            return int(priority)
        return int(self._scalar("front_priority"))

    def prioritize_jobs(
        self, job_ids: Iterable[int], now: float, *, priority: int | None = None
    ) -> Prioritized:
        done: list[int] = []
        with self._write():
            value = self._priority(priority)
            for job_id in dict.fromkeys(job_ids):
                if self._exec("set_job_priority", id=job_id, priority=value, now=now):
                    done.append(job_id)
                    self._ledger("prioritized", now, job_id=job_id,
                                 detail={"priority": value, "front": priority is None})
        return Prioritized(value, len(done), tuple(done))

    def prioritize_batch(
        self, batch_id: int, now: float, *, priority: int | None = None
    ) -> Prioritized:
        with self._write():
            value = self._priority(priority)
            changed = self._exec("set_batch_priority", batch_id=batch_id, priority=value,
                                 now=now)
            self._ledger("batch_prioritized", now, detail={
                "batch_id": batch_id, "priority": value, "front": priority is None,
                "jobs": changed})
        return Prioritized(value, changed)

    def set_batch_paused(self, batch_id: int, paused: bool, now: float) -> Batch | None:
        with self._write():
            if not self._exec("set_batch_paused", id=batch_id, paused=bool(paused)):
                return None
            self._ledger("batch_paused" if paused else "batch_resumed", now,
                         detail={"batch_id": batch_id})
            return self.get_batch(batch_id)

    # -- recovery ----------------------------------------------------------------------
    def recover(self, params: RecoverParams) -> RecoveryReport:
        """Start-up recovery and takeover (DESIGN.md invariant 7), applied in one write
        transaction.

        Output files are looked at (and hashed) before the transaction, so the write lock
        is held only for the updates. Each update names the claim token it saw and, with
        ``only_expired``, the lease's expiry: a row that changed meanwhile (another
        machine renewed or took it over) is left alone.
        """
        query = "in_flight_expired" if params.only_expired else "in_flight_all"
        leftovers = [self.ROWS.job(r) for r in self._all(query, now=params.now)]
        crashes = {job.id: int(self._scalar("crash_requeues", id=job.id))
                   for job in leftovers}
        actions = plan_recovery(leftovers, params, crashes)
        completed = ([self.ROWS.job(r) for r in self._all("completed_jobs")]
                     if params.verify_completed else [])
        report = RecoveryReport()
        with self._write():
            for action in actions:
                self._apply_recovery(action, params, report)
            for job in completed:
                if not params.check_output(job).exists:
                    report.missing_outputs.append(job.id)
                    self._ledger("output_missing", params.now, job_id=job.id,
                                 detail={"path": job.output_path})
            if params.prune_before is not None:
                report.pruned_ledger_rows = self._exec(
                    "prune_ledger", before=params.prune_before, now=params.now)
            if report.touched or report.pruned_ledger_rows:
                self._ledger("recovery", params.now, detail={
                    "instance": params.instance_id, **report.as_dict()})
        return report

    def _apply_recovery(
        self, action: RecoveryAction, params: RecoverParams, report: RecoveryReport
    ) -> None:
        job, now = action.job, params.now
        # The update names what the plan read: the token, the state and (taking over
        # expired leases only) the expiry; a row that moved on since is left alone.
        common = {"id": job.id, "old_token": job.claim_token, "now": now,
                  "planned_state": str(job.state), "any_lease": not params.only_expired}
        token: str | None = None
        if action.kind == "complete":
            assert action.file is not None and action.file.sha256 is not None
            applied = self._exec("recover_complete", size=action.file.size,
                                 sha256=action.file.sha256, host=self.host, **common)
        elif action.kind in ("reattach", "reconcile"):
            token = uuid.uuid4().hex
            applied = self._exec("recover_reattach", state=str(action.resume_state),
                                 token=token, owner=params.instance_id,
                                 lease_until=now + params.lease_seconds,
                                 lease_seconds=params.lease_seconds, **common)
        elif action.kind in ("fail", "unknown"):
            error_class, label, message = failure_of(action)
            applied = self._exec("recover_park" if action.kind == "unknown" else "recover_fail",
                                 error_class=error_class, error_label=label,
                                 error_message=message, **common)
        else:  # requeue, or a render lost with the process
            applied = self._exec("recover_requeue", **common)
        if applied:  # a row that changed since it was read is left alone
            for note in record_applied(action, report, token):
                self._ledger(note.event, now, job_id=job.id, account=job.account,
                             claim_token=note.claim_token, detail=note.detail)

    # -- listing -----------------------------------------------------------------------
    def completed_outputs(self) -> list[tuple[int, str, int]]:
        return [(r["id"], r["output_path"], r["output_size"])
                for r in self._all("completed_outputs")]

    def next_wakeup(self, now: float) -> float | None:
        with self._reading():
            times = [self._scalar("next_retry_at", now=now),
                     self._scalar("next_cooldown_at", now=now)]
        due = [float(t) for t in times if t is not None]
        return min(due) if due else None

    def ledger_after(self, seq: int, limit: int) -> list[LedgerEntry]:
        return [self.ROWS.entry(r) for r in self._all("ledger_after", seq=seq, limit=limit)]


__all__ = ["Row", "RowReaders", "SqlJournal", "claim_of", "public_methods", "render_recorded"]
