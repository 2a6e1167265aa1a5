"""The team journal on PostgreSQL (issue 15): the ``Store`` contract for several machines.

Same rules as the SQLite journal, kept across machines by PostgreSQL's own locks:

- A claim is one transaction: the account's row is locked (``SELECT … FOR UPDATE``), its
  live renders counted, the job taken with ``FOR UPDATE SKIP LOCKED`` and marked CLAIMED.
  Every claim on one account queues on that row, so the live renders of all machines
  together never pass the account's limit; claims on different accounts never wait for
  each other (a job another claim is taking is stepped over). A capped batch's spend is
  counted under its row's lock too.
- Every write after a claim is fenced by the claim token, exactly as in SQLite.
- Takeover (``recover`` with ``only_expired``) moves only rows whose lease has expired, and
  each update re-checks the token and the expiry, so a lease renewed meanwhile stays put.
- ``renew_leases`` renews an instance's leases and writes its heartbeat into ``instances``
  in one statement.
- One clock decides (DESIGN.md invariant 14): leases, retry and cool-down times, heartbeats,
  the spend cap's day and the ledger's times come from the server's ``clock_timestamp()``
  in the statement that writes or compares them (``sql_pg/queries.sql``), never from a
  worker's clock; the callers' ``now`` fills only the times shown (``updated_at``...).

The journal's policy is :class:`~reelqueue.store.sql_journal.SqlJournal`'s; this module is
its driver (the pool, transactions, one-statement writes and their commit settlement,
errors), with the instances registry in ``pg_instances.py`` and the kept connection and
raw statements in ``pg_connection.py``. Named SQL lives in
``sql_pg/*.sql`` (loaded by ``pg_sql.py``). The schema is versioned in ``reelqueue_meta``; a fresh
database is made from ``sql_pg/schema.sql``, an older one brought up by
``sql_pg/migrations/NNNN.sql`` under an advisory lock (two machines starting at once do not
both migrate). The DSN's password never reaches a message (``postgres_support``).
"""

from __future__ import annotations

import functools
import logging
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from typing import Any, TypeVar, cast

import psycopg
from psycopg.types.json import Jsonb
from psycopg_pool import ConnectionPool

from reelqueue.domain.clock import Clock
from reelqueue.domain.errors import InputError, JournalCorrupt, JournalError
from reelqueue.domain.models import Batch, Claim, ClaimToken, JobSpec
from reelqueue.domain.row_limits import refusal_params
from reelqueue.store.base import ClaimParams, this_host
from reelqueue.store.pg_connection import KeptConnection, encoded, send_raw
from reelqueue.store.pg_group import PgGroupCommit
from reelqueue.store.pg_import import existing_keys, insert_jobs
from reelqueue.store.pg_instances import Instance, InstancesRegistry
from reelqueue.store.pg_sql import (
    fenced_sql,
    pg_migration_sql,
    pg_queries,
    pg_schema_sql,
)
from reelqueue.store.postgres_support import (
    DRIVER_ERRORS,
    RecentlyUsed,
    account_from_pg,
    batch_from_pg,
    commit_unknown,
    describe_dsn,
    dsn_password,
    dumps,
    first_line,
    job_from_pg,
    known_error,
    ledger_from_pg,
    lost_before_commit,
    open_pool,
    rollback_quietly,
)
from reelqueue.store.provider_limits import VIEW_FRESH_SECONDS
from reelqueue.store.sql_journal import (
    CLAIM_IN_STEPS,
    FencedWrite,
    RowReaders,
    claim_of,
    public_methods,
)

log = logging.getLogger(__name__)

SCHEMA_VERSION = 14
MIGRATION_LOCK = 0x5251_5545  # "RQUE": pg_advisory_xact_lock key held while migrating
IMPORT_LOCK = 0x5251_4951  # "RQIQ": held while an import counts the queue against its limit
IDLE_IN_TRANSACTION_MS = 60_000

Row = dict[str, Any]


_F = TypeVar("_F", bound=Callable[..., Any])
_T = TypeVar("_T")
_IDLE = psycopg.pq.TransactionStatus.IDLE


def _mapped(method: _F) -> _F:
    @functools.wraps(method)
    def call(self: PostgresStore, *args: Any, **kwargs: Any) -> Any:
        if self._conn is not None:
            # A step of a transaction already open: its driver errors reach the operation
            # that opened it, which decides (run again on a new connection, or not).
            return method(self, *args, **kwargs)
        for attempt in (1, 2):
            try:
                return method(self, *args, **kwargs)
            except DRIVER_ERRORS as exc:
                if attempt == 1 and lost_before_commit(exc, self._committing):
                    log.warning("team database %s: the connection was lost (%s); the "
                                "operation runs again on a new one", self.where,
                                first_line(exc, self._password))
                    continue
                raise known_error(exc, self.where, self._password) from exc
        raise AssertionError("unreachable")

    return cast(_F, call)


def _errors_mapped(cls: type[PostgresStore]) -> type[PostgresStore]:
    """Every public operation raises our errors, never a raw ``psycopg.Error``."""
    for name, value in public_methods(cls, skip=("open", "close", "where")).items():
        setattr(cls, name, _mapped(value))
    return cls


@_errors_mapped
class PostgresStore(InstancesRegistry, PgGroupCommit):
    """The journal in one PostgreSQL schema, shared by every instance of a team.

    Attributes:
        where: the database named for messages (``user@host:port/db``, no password).
        schema: the PostgreSQL schema holding the tables (None: the server's search path).
        migrated_from: the schema version found on open, if a migration ran (else None).
    """

    def __init__(self, pool: ConnectionPool, where: str, schema: str | None,
                 password: str | None, server_clock: Clock | None = None) -> None:
        self._pool = pool
        self._server_clock = server_clock
        self._lock = threading.RLock()
        self._conn: psycopg.Connection[Row] | None = None
        self._q = pg_queries()
        self._password = password
        self._recently_used = RecentlyUsed()
        #: the pool's connection this store keeps between operations (:meth:`_connection`)
        self._kept = KeptConnection(pool, self._recently_used)
        self._committing = False
        self.where = where
        self.schema = schema
        self.migrated_from: int | None = None
        #: whether the connection uses TLS (read when the store was opened)
        self.encrypted = False
        #: the database's identity (issue 21): this machine's keyring entries of the team's
        #: keys are named after it (application/trust.py); a row, not a schema change
        self.database_id: str | None = None
        #: written as ``output_host`` with every file this instance completes
        self.host = this_host()

    def __repr__(self) -> str:
        return f"PostgresStore({self.where!r}, schema={self.schema!r})"

    # -- opening -----------------------------------------------------------------------
    @classmethod
    def open(cls, dsn: str, *, now: float, schema: str | None = None, max_size: int = 4,
             connect_timeout: float = 10.0,
             server_clock: Clock | None = None) -> PostgresStore:
        """Connect (a small pool: a connection that died with the server is replaced on
        its next use), create ``schema`` if asked for and missing, and bring the tables to
        :data:`SCHEMA_VERSION`. JournalError (password-free) when the server cannot be
        reached or refuses the login.

        ``server_clock`` is for tests only: it stands in for the server's clock in every
        statement (leases, retry times, heartbeats...), so a test can set or shift the
        team's clock. Left out, the server's ``clock_timestamp()`` decides."""
        where, password = describe_dsn(dsn), dsn_password(dsn)
        if schema is not None and not schema.replace("_", "").isalnum():
            raise InputError(f"{schema!r} is not a plain schema name (letters, digits, _).")
        pool, recently_used, encrypted = open_pool(
            dsn, schema=schema, max_size=max_size, connect_timeout=connect_timeout,
            idle_in_transaction_ms=IDLE_IN_TRANSACTION_MS)
        store = cls(pool, where, schema, password, server_clock)
        store._recently_used = store._kept.recently_used = recently_used
        store.encrypted = encrypted
        try:
            store._prepare(now)
        except DRIVER_ERRORS as exc:
            pool.close()
            raise known_error(exc, where, password) from None
        except BaseException:
            pool.close()
            raise
        return store

    def _prepare(self, now: float) -> None:
        self._prepare_schema(now)
        with self._tx():
            # Made once by whoever opens the database first (read first: a role that may
            # only read still opens it); kept by dumps and restores.
            row = self._one("get_database_id")
            if row is None:
                self._exec("make_database_id")
                row = self._one("get_database_id")
            self.database_id = str(row["value"]) if row else None

    def _prepare_schema(self, now: float) -> None:
        with self._tx() as db:
            if self.schema is not None:  # a plain name (checked by open)
                db.execute(self._q["create_schema"].replace("{schema}", self.schema).encode())
            # One migrator at a time: a second instance waits here, then finds it done.
            self._one("advisory_xact_lock", key=MIGRATION_LOCK)
            meta = self._one("meta_exists")
            if not (meta and meta["ok"]):
                tables = self._one("tables_in_schema")
                if tables and tables["n"]:
                    raise JournalCorrupt(
                        f"The schema {self.schema or 'public'} of {self.where} holds tables "
                        "that are not a ReelQueue journal. It was left untouched; choose "
                        "another database or schema.")
                db.execute(pg_schema_sql())
                self._exec("insert_schema_version", version=str(SCHEMA_VERSION))
                return
            row = self._one("get_schema_version")
            version = int(row["value"]) if row else 0
            if version > SCHEMA_VERSION:
                raise JournalError(
                    f"The team database was written by a newer ReelQueue (schema "
                    f"{version}, this version knows {SCHEMA_VERSION}). Update ReelQueue.")
            if version == SCHEMA_VERSION:
                return
            for step in range(version + 1, SCHEMA_VERSION + 1):
                db.execute(pg_migration_sql(step))
            self._exec("set_schema_version", version=str(SCHEMA_VERSION))
            self._ledger("migrated", now, detail={"from": version, "to": SCHEMA_VERSION})
            self.migrated_from = version
            log.info("team database %s migrated from schema %d", self.where, version)

    def close(self) -> None:
        with self._lock:
            self._kept.give_back()
            self._pool.close()

    # -- helpers -----------------------------------------------------------------------
    def _connection(self) -> AbstractContextManager[psycopg.Connection[Row]]:
        """The connection for one operation (inside ``self._lock``): :class:`KeptConnection`."""
        return self._kept.connection()

    @contextmanager
    def _tx(self) -> Iterator[psycopg.Connection[Row]]:
        """One transaction (READ COMMITTED); nested calls join the open one. Committed
        when the block ends, rolled back when it raises."""
        with self._lock:
            if self._conn is not None:
                yield self._conn
                return
            with self._connection() as db:
                if db.autocommit:  # kept from a one-statement write (_single)
                    db.autocommit = False
                self._conn = db
                self._committing = False
                try:
                    try:
                        yield db
                    except BaseException:
                        rollback_quietly(db)
                        raise
                    self._committing = True  # from here the outcome may be unknown
                    db.commit()
                    self._recently_used.mark(db)
                finally:
                    self._conn = None

    def _single(self, sql: bytes, params: dict[str, Any], *,
                before: Sequence[tuple[str, dict[str, Any]]] = ()) -> list[Row]:
        """One statement in a transaction of its own, in one round trip (issue 20): sent in
        autocommit, so its COMMIT is the statement's own end (whether that waits for the
        WAL's flush is the statement's: ``commit_async`` in ``queries.sql``). With
        statements to run ``before`` it in the same transaction (named queries; their
        answers are not read) the transaction is sent whole in one pipeline (BEGIN, those
        statements, this one, COMMIT), still one round trip. Inside an open transaction
        (``_tx``) it is a step of that one.

        From the send on, the outcome may be unknown (``_committing``): a connection lost
        then is read back by the caller's ``_settled``, never run again blindly."""
        with self._lock:
            clock = self._clock()
            if self._conn is not None:
                for name, args in before:
                    send_raw(self._conn, encoded(self._q[name]), clock, args)
                return send_raw(self._conn, sql, clock, params).fetchall()
            self._committing = False
            with self._connection() as db:
                self._committing = True
                try:
                    if not db.autocommit:  # kept in autocommit between such writes
                        db.autocommit = True
                    if not before:
                        rows = send_raw(db, sql, clock, params).fetchall()
                    else:
                        with db.pipeline():
                            db.execute(self._q["begin"])
                            for name, args in before:
                                send_raw(db, encoded(self._q[name]), clock, args)
                            cursor = send_raw(db, sql, clock, params)
                            db.execute(self._q["commit"])
                        rows = cursor.fetchall()
                    self._recently_used.mark(db)
                    return rows
                finally:
                    if not db.closed and db.pgconn.transaction_status != _IDLE:
                        rollback_quietly(db)  # a pipeline's statement failed: BEGIN still open

    def _settled(self, write: Callable[[], _T], landed: Callable[[], _T], what: str) -> _T:
        """``write()`` (one transaction); when its COMMIT's outcome is unknown, the answer
        is read back on a new connection by ``landed()`` (whether the write is there), so a
        committed claim or fenced write is never reported as "no" (a claim nobody knows of
        would be renewed forever; a recorded submission reported lost would be dropped).
        ``landed()`` first takes the job row's lock (:meth:`_settle_row`): the lost
        transaction held it if it wrote, so the read waits until that one has ended.
        When the read fails the outcome stays
        unknown: a JournalError, never a guess (and never a driver error, which would run
        the write again)."""
        if self._conn is not None:  # a step of a transaction already open: it commits
            return write()
        try:
            return write()
        except DRIVER_ERRORS as exc:
            if not commit_unknown(exc, self._committing):
                raise
            first = first_line(exc, self._password)
        log.warning("team database %s: the answer to the COMMIT of %s was lost (%s); "
                    "reading back whether it was written", self.where, what, first)
        answer: _T | None = None
        for attempt in (1, 2):
            try:
                answer = landed()
                break
            except DRIVER_ERRORS as exc:
                if attempt == 1 and lost_before_commit(exc, self._committing):
                    continue  # a read: running it again cannot change anything
                raise JournalError(
                    f"The team database ({self.where}) lost the answer to the last change "
                    f"({what}) and could not be asked whether it was written "
                    f"({first_line(exc, self._password)}). Nothing is assumed: the "
                    "job's lease runs out and another run takes it over.") from None
        log.warning("team database %s: %s %s", self.where, what,
                    "was written" if answer else "was not written")
        return cast(_T, answer)

    def _settle_row(self, job_id: int) -> Row | None:
        """The job's row once no other transaction holds its lock (a lost one that wrote
        it has then committed or rolled back), inside the caller's transaction."""
        with self._tx():
            self._exec("settle_lock_timeout")
            return self._one("job_for_share", id=job_id)

    def _clock(self) -> float | None:
        """The ``%(clock)s`` of every statement: None, so the server's clock decides, or
        the time of a test's stand-in clock (``open(server_clock=...)``)."""
        return None if self._server_clock is None else self._server_clock.now()

    def _one(self, query: str, /, **params: Any) -> Row | None:
        with self._tx() as db:
            return db.execute(self._q[query], {"clock": self._clock(), **params}).fetchone()

    def _all(self, query: str, /, **params: Any) -> list[Row]:
        with self._tx() as db:
            return db.execute(self._q[query], {"clock": self._clock(), **params}).fetchall()

    def _scalar(self, query: str, /, **params: Any) -> Any:
        row = self._one(query, **params)
        return None if row is None else next(iter(row.values()))

    def _exec(self, query: str, /, **params: Any) -> int:
        with self._tx() as db:
            return db.execute(self._q[query], {"clock": self._clock(), **params}).rowcount

    def _ledger(
        self, event: str, now: float, *, job_id: int | None = None, account: str | None = None,
        claim_token: str | None = None, detail: dict[str, Any] | None = None,
    ) -> None:
        self._exec("insert_ledger", now=now, event=event, job_id=job_id, account=account,
                   claim_token=claim_token, detail=Jsonb(detail or {}, dumps=dumps))

    # -- the driver's primitives (sql_journal.SqlJournal) ------------------------------
    NO_LIMIT = None

    def _write(self, *, durable: bool = True) -> AbstractContextManager[psycopg.Connection[Row]]:
        # A transaction commits durably; a one-statement write that need not wait says so
        # in its SQL (commit_async), a group of them when it opens (pg_group.py).
        if self._conn is not None:
            self._refuse_undurable(durable)
        return self._tx()

    def _reading(self) -> AbstractContextManager[psycopg.Connection[Row]]:
        return self._tx()

    def _ids_sql(self, sql: str, /, **params: Any) -> list[int]:
        with self._tx() as db:
            return [next(iter(row.values())) for row in
                    db.execute(sql.encode(), {"clock": self._clock(), **params})]

    def _json(self, value: Any) -> Jsonb:
        return Jsonb(value, dumps=dumps)

    def _list(self, values: Iterable[Any]) -> list[Any]:
        return list(values)

    ROWS = RowReaders(job_from_pg, batch_from_pg, account_from_pg, ledger_from_pg,
                      values=lambda row: tuple(row.values()), json=lambda value: value)
    DOCTOR_CLAIM_CHECKS = (("expired_leases_held", "doctor_expired_leases", True),
                           ("claims_of_silent_instances", "doctor_silent_owners", True))
    INTEGRITY_CHECK = None
    JSON_CHECK = None

    def _lock_batch(self, batch_id: int) -> None:
        # The batch's row lock: claims for one capped batch from several machines count
        # its spend one after the other.
        self._one("lock_batch", id=batch_id)

    # -- fenced transitions ------------------------------------------------------------
    def _fenced_write(self, write: FencedWrite, steps: Callable[[], Row | None]) -> Row | None:
        """The write as one statement (``write.statement``, around ``write.query``), settled
        (:meth:`_settled`). Read back as not written while the row still carries the
        token, it runs once more: the lost transaction has ended without it (the read
        waited for its lock), so it cannot apply twice, and a recorded submission is kept
        instead of reported lost (which would end the claim and leave a render to be
        looked for again). Most events happen once per claim token, so their ledger entry,
        written in the same statement, says whether it was written; "resumed" and
        "remote_status" may repeat and are read from the row (``write.written``)."""
        token = write.token
        check: Callable[[Row], bool] = (
            functools.partial(self._event_written, token, write.event)
            if write.written is None else functools.partial(self._row_is, token, write.written))
        still_held: list[bool] = []

        def read_back() -> Row | None:
            with self._tx():
                row = self._settle_row(token.job_id)
                if row is not None and check(row):
                    return {"account": row["account"], "holder": None}
                still_held.append(row is not None and row["claim_token"] == token.token)
                return None

        what = f"the {write.event} write of job {token.job_id}"
        once = functools.partial(self._one_trip, write)
        answer = self._settled(once, read_back, what)
        if still_held and still_held[-1]:
            log.warning("team database %s: %s runs again", self.where, what)
            return self._settled(once, read_back, what)
        return answer

    def _one_trip(self, write: FencedWrite) -> Row | None:
        """The fenced write in one statement: the update names the job and its claim token;
        its ledger entries, or the ``fenced_out`` entry when the update changed nothing,
        are written by the same statement. Its row, or None."""
        # Inside an open transaction (a step of it) the write commits with that one:
        # durably (commit_async would set the whole transaction's commit).
        durable = write.durable or self._conn is not None
        if self._conn is not None:
            self._refuse_undurable(write.durable)
        rows = self._single(fenced_sql(write.statement, write.query, durable), {
            "id": write.token.job_id, "token": write.token.token, "now": write.now,
            "event": write.event, "detail": Jsonb(write.detail or {}, dumps=dumps),
            "fenced_detail": Jsonb({"write": write.query.removeprefix("fenced_")},
                                   dumps=dumps),
            **write.params})
        return rows[0] if rows else None

    def _event_written(self, token: ClaimToken, event: str, row: Row) -> bool:
        return bool(self._scalar("wrote_event", id=token.job_id, token=token.token,
                                 event=event))

    @staticmethod
    def _row_is(token: ClaimToken, expected: dict[str, Any], row: Row) -> bool:
        return row["claim_token"] == token.token and all(
            row[k] == v for k, v in expected.items())

    # -- batches and jobs --------------------------------------------------------------
    ADD_JOBS_PER_INSERT = 5_000
    """Jobs per INSERT statement in :meth:`add_jobs` (the rows travel as arrays)."""

    def _lock_queue(self) -> None:
        # Imports with a queue limit count one after the other, from any machine.
        self._one("advisory_xact_lock", key=IMPORT_LOCK)

    def _present_job_keys(self, keys: Sequence[str]) -> set[str]:
        with self._tx() as db:
            return existing_keys(db, self._q, keys)

    def _insert_jobs(self, batch: Batch, specs: Sequence[JobSpec], now: float) -> list[int]:
        with self._tx() as db:
            return insert_jobs(db, self._q, batch, specs, now,
                               per_insert=self.ADD_JOBS_PER_INSERT)

    def existing_job_keys(self, keys: Iterable[str]) -> set[str]:
        with self._tx() as db:
            return existing_keys(db, self._q, list(keys))

    def _jobs_query(self, batch_id: int | None, states: object | None) -> str:
        """One statement whose NULL filters are left out (``list_jobs``)."""
        return "list_jobs"

    # -- accounts ----------------------------------------------------------------------
    def _account_taken(self, name: str) -> bool:
        """The table's lock (two machines adding one name wait for each other); the
        insert's ON CONFLICT DO NOTHING then says whether the name was taken."""
        self._exec("lock_accounts")
        return False

    def _lock_account(self, name: str) -> bool:
        # The account's lock: no claim can add a render while it is being removed.
        return self._one("lock_account", name=name) is not None

    # -- claims ------------------------------------------------------------------------
    def _claim_at_once(self, params: ClaimParams, token: str) -> Any:
        """The claim in one round trip (issue 20), settled: one pipeline sends BEGIN, the
        account's row lock (lock_account), claim_fast (room, candidate, claim, ledger entry)
        and COMMIT, which does not wait for the WAL's flush (a lost claim leaves the job
        queued with nothing sent). Inside an open transaction (a step of it) the claim is
        made in steps: claim_fast would set the whole transaction's commit."""
        if self._conn is not None:
            return CLAIM_IN_STEPS
        return self._settled(functools.partial(self._claim_fast, params, token),
                             functools.partial(self._claim_landed, params, token, []),
                             f"a claim for {params.account}")

    def _claim_fast(self, params: ClaimParams, token: str) -> Row | None:
        rows = self._single(encoded(self._q["claim_fast"]), {
            "account": params.account, "token": token, "owner": params.instance_id,
            "lease_seconds": params.lease_seconds, "now": params.now,
            "creates": True, "skip_batches": [], "skip_models": [],
            "default_model": params.default_model, "view_fresh_seconds": VIEW_FRESH_SECONDS,
            **refusal_params()},
            before=[("lock_account", {"name": params.account})])
        return rows[0] if rows else None

    def _claim_in_steps(self, params: ClaimParams, token: str) -> Claim | None:
        tried: list[int] = []  # the job the claim wrote its token on, if it got that far

        def landed() -> Claim | None:
            row = self._claim_landed(params, token, tried)
            return None if row is None else claim_of(job_from_pg(row), params.account, token)

        return self._settled(functools.partial(self._claim, params, token, tried), landed,
                             f"a claim for {params.account}")

    def _claim_landed(self, params: ClaimParams, token: str, tried: list[int]) -> Row | None:
        """The claim whose COMMIT went unanswered, if it committed: the row carrying its
        token, as claim_fast answers a claim (a row cancelled meanwhile carries none: no
        claim). The steps' row is known (``tried``): its lock is waited for; the fast way's
        is not, so the account's row lock is (the lost transaction held it), then the row
        carrying the token."""
        if tried:
            row = self._settle_row(tried[-1])
        else:
            with self._tx():
                self._exec("settle_lock_timeout")
                self._one("lock_account_for_share", name=params.account)
                row = self._one("claim_by_token", account=params.account, token=token)
        if row is None or row["claim_token"] != token:
            return None
        return {**row, "room_ok": True, "refused_id": None, "candidate_id": row["id"]}

    def _claim(self, params: ClaimParams, token: str, tried: list[int]) -> Claim | None:
        with self._tx():
            return self._claim_steps(params, token, tried)

    def _claim_room(self, account_row: Row, params: ClaimParams) -> Row | None:
        # Counted under the account's row lock (claim_account), in a snapshot taken once
        # it is held: every claim on this account, from any machine, waits for this
        # transaction, so none can take the same last slot. Its cool-down is compared with
        # the server's clock, not the caller's.
        return self._one("claim_room", account=params.account)

    def changed_elsewhere(self) -> bool:
        """Never: every change another connection commits is heard by its NOTIFY
        (store/postgres_notify.py), without a query per second."""
        return False

    def server_time(self) -> float:
        """The server's clock (``clock_timestamp()``), as every statement reads it."""
        return float(self._scalar("server_time"))

    # -- used by tests and benchmarks --------------------------------------------------
    @contextmanager
    def raw_connection(self) -> Iterator[psycopg.Connection[Row]]:
        """A connection of the pool inside one transaction (committed at the end)."""
        with self._tx() as db:
            yield db


__all__ = ["SCHEMA_VERSION", "Instance", "PostgresStore", "pg_migration_sql", "pg_queries"]
