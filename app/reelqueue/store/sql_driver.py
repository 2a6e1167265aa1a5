"""What a driver of the SQL journal implements (issue 20): the primitives and hooks that
:class:`~reelqueue.store.sql_journal.SqlJournal`'s policy is written over, and the values
they pass (:class:`RowReaders`, :class:`FencedWrite`).

A driver (``sqlite.py``, ``postgres.py``) holds connections, transactions and their
durability, error mapping, the dialect's adapters and the write paths that differ in kind
between the dialects; what a transition checks and writes is decided in ``SqlJournal``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import Any, ClassVar

from reelqueue.domain.models import Account, Batch, Claim, ClaimToken, Job, JobSpec, LedgerEntry
from reelqueue.store.base import ClaimParams

Row = Any
"""A row of a driver, read by column name (``sqlite3.Row`` or psycopg's dict row)."""

CLAIM_IN_STEPS: Any = object()
"""A driver's :meth:`SqlJournal._claim_at_once` when it claims in steps only (or now)."""


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


@dataclass(frozen=True)
class RowReaders:
    """How a driver turns its rows into domain values (JSON columns are text in SQLite,
    decoded jsonb in PostgreSQL)."""

    job: Callable[[Row], Job]
    batch: Callable[[Row], Batch]
    account: Callable[[Row], Account]
    entry: Callable[[Row], LedgerEntry]
    values: Callable[[Row], tuple[Any, ...]]
    """A row's values in column order (the doctor's rows)."""
    json: Callable[[Any], Any]
    """A JSON column's value, decoded (a job's ``metadata``...)."""


@dataclass(frozen=True)
class FencedWrite:
    """One fenced transition, named for a driver's :meth:`SqlJournal._fenced_write`.

    Attributes:
        query: the fenced update (``fenced_*``): it names the job and its claim token, and
            answers the changed row (at least its ``account``) or nothing.
        event: the ledger entry written with it (``fenced_out`` when it changed nothing).
        detail: that entry's detail.
        params: the update's parameters beside ``id``, ``token`` and ``now``.
        durable: False: the commit need not wait for the disk (a write whose loss in a
            power cut recovery handles the same way).
        statement: the same write as one statement (``one_trip_*``: the update, its ledger
            entries, or the fenced_out entry), for a driver that runs it so.
        written: the columns the job's row has once this write is in, for a driver that
            reads back a commit whose answer was lost (PostgreSQL); None: this claim
            token's ``event`` entry in the ledger says it.
    """

    query: str
    event: str
    token: ClaimToken
    now: float
    detail: dict[str, Any] | None = None
    params: dict[str, Any] = field(default_factory=dict)
    durable: bool = True
    statement: str = "one_trip_fenced"
    written: dict[str, Any] | None = None


class SqlDriver:
    """The primitives and hooks a driver implements (the ``NotImplementedError``
    methods): connections, transactions, adapters, the bulk insert, and how a fenced
    write, a claim and its room are run (SQLite claims in ``_claim_steps`` in one write
    transaction; PostgreSQL in one statement when no spend cap has to look, else in those
    steps, settled)."""

    host: str
    _q: dict[str, str]

    ROWS: ClassVar[RowReaders]
    """How the driver's rows become domain values."""

    NO_LIMIT: ClassVar[Any]
    """The ``:limit`` that means "all rows" (SQLite's LIMIT -1, PostgreSQL's LIMIT NULL)."""

    DOCTOR_CLAIM_CHECKS: ClassVar[tuple[tuple[str, str, bool], ...]]
    """The doctor's checks of live claims: (result key, named query, asked while this
    instance runs). One machine: any live claim after a clean exit (not while it runs);
    a team: leases run out and still held, claims of silent instances (always: other
    machines' live claims are legitimate, so ``instance_alive`` is not asked)."""

    INTEGRITY_CHECK: ClassVar[str | None]
    """The named query that checks the database's pages ("ok"), or None (the PostgreSQL
    server checks its own: data checksums, WAL)."""

    JSON_CHECK: ClassVar[str | None]
    """The named query that lists the rows whose JSON columns hold a text that is not JSON
    (table, row, column), or None (PostgreSQL's jsonb holds only valid JSON)."""

    # -- driver primitives -------------------------------------------------------------
    def _write(self, *, durable: bool = True) -> AbstractContextManager[Any]:
        """One write transaction; nested calls join the open one. ``durable=False``: its
        commit need not wait for the disk (SQLite; PostgreSQL commits a transaction
        durably, and says otherwise in a one-statement write's SQL: ``commit_async``)."""
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

    def _ids_sql(self, sql: str, /, **params: Any) -> list[int]:
        """The first column of every row of a statement made from a named template
        (``job_ids_ordered``), read a row at a time: no row outlives its read, so a
        100,000-row read leaves nothing for the cyclic garbage collector, whose full
        collections it used to start on the journal thread every second of a sorted
        window's live run (docs/ui.md)."""
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

    def _fenced_write(self, write: FencedWrite, steps: Callable[[], Row | None]) -> Row | None:
        """Run one fenced write (:class:`FencedWrite`): the row it answers, None when it
        was refused (its ``fenced_out`` entry written). ``steps`` is the write as steps
        (:meth:`_fenced_steps`), for a driver that runs them in one write transaction
        (SQLite: ``BEGIN IMMEDIATE``, a local commit that is never unanswered). PostgreSQL
        runs ``write.statement`` instead, the same steps in one statement sent in
        autocommit, and reads back whether a commit whose answer was lost was written."""
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

    def _claim_at_once(self, params: ClaimParams, token: str) -> Row:
        """The claim in one statement, or :data:`CLAIM_IN_STEPS` (SQLite always: its claim
        is one local write transaction). PostgreSQL: ``claim_fast`` (the account's room,
        the candidate, a hostile row refused, the claim and its ledger entry) in one round
        trip; its row says which (``room_ok``, ``refused_id``, ``candidate_id``: a candidate
        a spend cap has to look at, not claimed; the job's columns when claimed)."""
        raise NotImplementedError

    def _claim_in_steps(self, params: ClaimParams, token: str) -> Claim | None:
        """The claim as :meth:`_claim_steps` in one write transaction, not fsynced (a claim
        lost in a power cut leaves the job queued with nothing sent); PostgreSQL reads back
        a claim whose commit went unanswered."""
        raise NotImplementedError

    def _claim_room(self, account_row: Row, params: ClaimParams) -> Row | None:
        """The account's live renders (``live``) and whether it is cooling down
        (``cooling``), counted so that no other claim can count the same free slot.
        SQLite: ``account_row`` itself (``claim_account`` reads them with the account,
        under the claim's write lock, on the caller's clock); PostgreSQL: read once the
        account's row is locked (a new snapshot, so every machine's renders are counted),
        on the server's clock (DESIGN.md invariant 14)."""
        raise NotImplementedError

    def _lock_batch(self, batch_id: int) -> None:
        """Before a capped batch's spend is counted for a claim: PostgreSQL locks the
        batch's row, so claims from several machines count it one after the other; SQLite
        needs nothing (the claim's ``BEGIN IMMEDIATE`` already holds the file's write lock)."""
        raise NotImplementedError


__all__ = ["CLAIM_IN_STEPS", "FencedWrite", "Row", "RowReaders", "SqlDriver", "public_methods"]
