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

Named SQL lives in ``sql_pg/*.sql``. The schema is versioned in ``reelqueue_meta``; a fresh
database is made from ``sql_pg/schema.sql``, an older one brought up by
``sql_pg/migrations/NNNN.sql`` under an advisory lock (two machines starting at once do not
both migrate). The DSN's password never reaches a message (``postgres_support``).
"""

from __future__ import annotations

import functools
import logging
import threading
import time
import uuid
from collections.abc import Callable, Collection, Iterable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager, suppress
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any, TypeVar, cast

import psycopg
from psycopg.rows import dict_row
from psycopg.types.json import Jsonb
from psycopg_pool import ConnectionPool, PoolTimeout, TooManyRequests

from reelqueue.domain.clock import Clock
from reelqueue.domain.errors import InputError, JournalCorrupt, JournalError
from reelqueue.domain.models import Account, Batch, Claim, ClaimToken, JobSpec, LedgerEntry
from reelqueue.domain.row_limits import MAX_REFUSED_PER_CLAIM, refusal_params
from reelqueue.domain.states import AccountStatus
from reelqueue.store.base import ClaimParams, this_host
from reelqueue.store.postgres_support import (
    account_from_pg,
    batch_from_pg,
    connection_error,
    describe_dsn,
    dsn_password,
    dumps,
    job_from_pg,
    known_error,
    ledger_from_pg,
    scrub,
    use_bounded_json,
)
from reelqueue.store.spend import SLACK
from reelqueue.store.sql_journal import (
    RowReaders,
    SqlJournal,
    claim_of,
    public_methods,
    render_recorded,
)

log = logging.getLogger(__name__)

SCHEMA_VERSION = 7
MIGRATION_LOCK = 0x5251_5545  # "RQUE": pg_advisory_xact_lock key held while migrating
IMPORT_LOCK = 0x5251_4951  # "RQIQ": held while an import counts the queue against its limit
IDLE_IN_TRANSACTION_MS = 60_000
IN_FLIGHT_STATES = ("CLAIMED", "SUBMITTING", "RENDERING", "DOWNLOADING")

Row = dict[str, Any]


def _sql_file(name: str) -> str:
    return resources.files("reelqueue.store").joinpath("sql_pg", name).read_text("utf-8")


@cache
def pg_queries() -> dict[str, str]:
    """The ``-- name: x`` blocks of ``sql_pg/queries.sql`` (comment lines dropped), with
    ``{server_now}`` replaced by the ``server_now`` expression (the server's clock)."""
    queries: dict[str, str] = {}
    current: str | None = None
    lines: list[str] = []
    for line in _sql_file("queries.sql").splitlines():
        if line.startswith("-- name:"):
            if current:
                queries[current] = "\n".join(lines).strip()
            current, lines = line.split(":", 1)[1].strip(), []
        elif current is not None and not line.startswith("--"):
            lines.append(line)
    if current:
        queries[current] = "\n".join(lines).strip()
    server_now = f"({queries['server_now']})"
    # next_claimable is also claim_fast's candidate, there gated by the account's room.
    claimable = queries["next_claimable"].rstrip().rstrip(";")
    queries["next_claimable"] = claimable.replace("{gate}", "").replace(
        "{provider}", "%(provider)s")
    queries["claim_fast"] = queries["claim_fast"].replace(
        "{claimable}", claimable.replace("{gate}", queries["claim_gate"]).replace(
            "{provider}", queries["claim_provider"])).replace(
        "{commit_async}", queries["commit_async"])
    problem, refuse = queries["row_problem_expr"], queries["refuse_set"]
    return {name: text.replace("{server_now}", server_now).replace("{row_problem}", problem)
            .replace("{refuse_set}", refuse) for name, text in queries.items()}


@cache
def fenced_sql(template: str, update: str, durable: bool = True) -> bytes:
    """A fenced write in one statement: ``template`` (``one_trip_*``) around the
    fenced update ``update`` (``fenced_*``), both from ``sql_pg/queries.sql``; committed
    durably, or (``durable`` False) without waiting for the WAL's flush."""
    queries = pg_queries()
    return queries[template].replace(
        "{update}", queries[update].rstrip().rstrip(";")).replace(
        "{commit}", queries["commit_durable" if durable else "commit_async"]).encode()


def pg_schema_sql() -> str:
    return _sql_file("schema.sql")


def pg_migration_sql(version: int) -> str:
    return _sql_file(f"migrations/{version:04d}.sql")


@dataclass(frozen=True)
class Instance:
    """One ReelQueue sharing the database (the ``instances`` registry). Its times are the
    server's.

    Attributes:
        id: its boot-unique instance id (the lease owner of its claims).
        live_renders: the in-flight jobs its last heartbeat renewed.
        stopped_at: when it said goodbye (None: running, or died without saying so).
        silent_for: seconds since its last heartbeat, on the server's clock, at the read.
        clock_offset: its clock minus the server's as it last measured it (None: not yet,
            or a version before schema 4).
        lease_seconds: the lease its claims get (None: a version before schema 4).
    """

    id: str
    host: str
    pid: int
    version: str
    started_at: float
    heartbeat_at: float
    live_renders: int
    stopped_at: float | None
    silent_for: float = 0.0
    clock_offset: float | None = None
    lease_seconds: float | None = None


class _RecentlyUsed:
    """The pool's check before it hands a connection out: an empty query (one round trip)
    finds a connection the server dropped (a restart, a network cut) and the pool replaces
    it, but a connection that completed a transaction within the last ``fresh_seconds`` is
    handed out unchecked: under load that saves a round trip per transaction, and a server
    dying meanwhile fails that one operation as "cannot be reached" all the same."""

    def __init__(self, fresh_seconds: float = 1.0) -> None:
        self.fresh_seconds = fresh_seconds
        self._last: dict[int, float] = {}

    def mark(self, conn: psycopg.Connection[Any]) -> None:
        self._last[id(conn)] = time.monotonic()

    def check(self, conn: psycopg.Connection[Any]) -> None:
        last = self._last.pop(id(conn), None)
        if last is None or time.monotonic() - last > self.fresh_seconds:
            ConnectionPool.check_connection(conn)


_F = TypeVar("_F", bound=Callable[..., Any])
_T = TypeVar("_T")


def _first_line(exc: BaseException, password: str | None) -> str:
    text = str(exc).strip()
    return scrub(text.splitlines()[0] if text else type(exc).__name__, password)


def _rollback(db: psycopg.Connection[Any]) -> None:
    """Roll back after a failed step; a connection that died cannot (the server rolled
    the transaction back itself) and the pool replaces it."""
    if db.closed:
        return
    with suppress(psycopg.Error):
        db.rollback()


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
            except _DRIVER_ERRORS as exc:
                if attempt == 1 and self._lost_before_commit(exc):
                    log.warning("team database %s: the connection was lost (%s); the "
                                "operation runs again on a new one", self.where,
                                _first_line(exc, self._password))
                    continue
                raise known_error(exc, self.where, self._password) from exc
        raise AssertionError("unreachable")

    return cast(_F, call)


def _errors_mapped(cls: type[PostgresStore]) -> type[PostgresStore]:
    """Every public operation raises our errors, never a raw ``psycopg.Error``."""
    for name, value in public_methods(cls, skip=("open", "close", "where")).items():
        setattr(cls, name, _mapped(value))
    return cls


_DRIVER_ERRORS: tuple[type[BaseException], ...] = (psycopg.Error, PoolTimeout, TooManyRequests)
"""What the driver and its pool raise (the pool's errors are psycopg's OperationalError
today; named anyway so a change there cannot leak a raw error)."""


@_errors_mapped
class PostgresStore(SqlJournal):
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
        self._recently_used = _RecentlyUsed()
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
        kwargs: dict[str, Any] = {"row_factory": dict_row, "autocommit": False,
                                  "connect_timeout": max(1, int(connect_timeout)),
                                  "application_name": "reelqueue"}
        if schema is not None and not schema.replace("_", "").isalnum():
            raise InputError(f"{schema!r} is not a plain schema name (letters, digits, _).")
        # A transaction of ours never waits on anything but the server: one left open by a
        # client that vanished (its COMMIT lost on the way) is ended by the server, so its
        # row locks cannot hold a job away from a takeover for longer than this.
        options = [f"-c idle_in_transaction_session_timeout={IDLE_IN_TRANSACTION_MS}"]
        if schema is not None:
            options.append(f"-c search_path={schema}")
        kwargs["options"] = " ".join(options)
        recently_used = _RecentlyUsed()
        # One plain connection first: a refused password or TLS handshake is said as
        # such at once (the pool would retry until its timeout, then say only that it
        # timed out), and it tells whether the connection is encrypted (issue 21).
        try:
            with psycopg.connect(dsn, **{k: v for k, v in kwargs.items()
                                         if k != "row_factory"}) as probe:
                encrypted = bool(probe.pgconn.ssl_in_use)
        except _DRIVER_ERRORS as exc:
            raise connection_error(exc, where, password, dsn) from None
        try:
            pool: ConnectionPool = ConnectionPool(
                dsn, kwargs=kwargs, min_size=1, max_size=max_size, open=False,
                check=recently_used.check, configure=use_bounded_json,
                timeout=connect_timeout, name="reelqueue")
            pool.open(wait=True, timeout=connect_timeout)
        except _DRIVER_ERRORS as exc:
            raise known_error(exc, where, password) from None
        store = cls(pool, where, schema, password, server_clock)
        store._recently_used = recently_used
        store.encrypted = encrypted
        try:
            store._prepare(now)
        except _DRIVER_ERRORS as exc:
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
            self._pool.close()

    # -- helpers -----------------------------------------------------------------------
    @contextmanager
    def _tx(self) -> Iterator[psycopg.Connection[Row]]:
        """One transaction (READ COMMITTED); nested calls join the open one. Committed
        when the block ends, rolled back when it raises."""
        with self._lock:
            if self._conn is not None:
                yield self._conn
                return
            with self._pool.connection() as conn:
                db = cast("psycopg.Connection[Row]", conn)
                self._conn = db
                self._committing = False
                try:
                    try:
                        yield db
                    except BaseException:
                        _rollback(db)
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
            clock = {"clock": self._clock()}
            if self._conn is not None:
                for name, args in before:
                    self._conn.execute(self._q[name], {**clock, **args})
                return self._conn.execute(sql, {**clock, **params}).fetchall()
            self._committing = False
            with self._pool.connection() as conn:
                db = cast("psycopg.Connection[Row]", conn)
                self._committing = True
                try:
                    db.autocommit = True
                    if not before:
                        rows = db.execute(sql, {**clock, **params}).fetchall()
                    else:
                        with db.pipeline():
                            db.execute(self._q["begin"])
                            for name, args in before:
                                db.execute(self._q[name], {**clock, **args})
                            cursor = db.execute(sql, {**clock, **params})
                            db.execute(self._q["commit"])
                        rows = cursor.fetchall()
                    self._recently_used.mark(db)
                    return rows
                finally:
                    if not db.closed:
                        if db.info.transaction_status != psycopg.pq.TransactionStatus.IDLE:
                            _rollback(db)  # a pipeline's statement failed: BEGIN still open
                        with suppress(psycopg.Error):
                            db.autocommit = False

    def _lost_before_commit(self, exc: BaseException) -> bool:
        """The connection died (a server restart, a cut network) before this transaction's
        COMMIT was sent: the server rolled it back, so running the operation again on a new
        connection cannot apply it twice. A failure during COMMIT is never retried (it may
        have committed), nor a pool timeout (the wait already happened)."""
        if self._committing or isinstance(exc, PoolTimeout | TooManyRequests):
            return False
        state = getattr(exc, "sqlstate", None) or ""
        return isinstance(exc, psycopg.OperationalError) and (
            not state or state.startswith("08") or state in ("57P01", "57P02", "57P03"))

    def _commit_unknown(self, exc: BaseException) -> bool:
        """The COMMIT was sent and its answer lost (the connection failed during it): the
        transaction may have committed or not. A COMMIT the server refused with a reason
        (a serialization failure, a constraint) was rolled back: that is known."""
        if not self._committing or isinstance(exc, PoolTimeout | TooManyRequests):
            return False
        state = getattr(exc, "sqlstate", None) or ""
        return isinstance(exc, psycopg.OperationalError | psycopg.InterfaceError) and (
            not state or state.startswith("08") or state in ("57P01", "57P02", "57P03"))

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
        except _DRIVER_ERRORS as exc:
            if not self._commit_unknown(exc):
                raise
            first = _first_line(exc, self._password)
        log.warning("team database %s: the answer to the COMMIT of %s was lost (%s); "
                    "reading back whether it was written", self.where, what, first)
        answer: _T | None = None
        for attempt in (1, 2):
            try:
                answer = landed()
                break
            except _DRIVER_ERRORS as exc:
                if attempt == 1 and self._lost_before_commit(exc):
                    continue  # a read: running it again cannot change anything
                raise JournalError(
                    f"The team database ({self.where}) lost the answer to the last change "
                    f"({what}) and could not be asked whether it was written "
                    f"({_first_line(exc, self._password)}). Nothing is assumed: the "
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

    def _write(self) -> AbstractContextManager[psycopg.Connection[Row]]:
        return self._tx()

    def _reading(self) -> AbstractContextManager[psycopg.Connection[Row]]:
        return self._tx()

    def _all_sql(self, sql: str, /, **params: Any) -> list[Row]:
        with self._tx() as db:
            return db.execute(sql.encode(), {"clock": self._clock(), **params}).fetchall()

    def _json(self, value: Any) -> Jsonb:
        return Jsonb(value, dumps=dumps)

    def _list(self, values: Iterable[Any]) -> list[Any]:
        return list(values)

    ROWS = RowReaders(job_from_pg, batch_from_pg, account_from_pg, ledger_from_pg)

    def _lock_batch(self, batch_id: int) -> None:
        # The batch's row lock: claims for one capped batch from several machines count
        # its spend one after the other.
        self._one("lock_batch", id=batch_id)

    def _fenced_rows(
        self, query: str, event: str, token: ClaimToken, now: float,
        detail: dict[str, Any] | None = None, *, template: str = "one_trip_fenced",
        durable: bool = True, **params: Any,
    ) -> list[Row]:
        """One fenced transition in one statement (``one_trip_*``): the update names the
        job and its claim token; its ledger entry, or the ``fenced_out`` entry when the
        update changed nothing, is written by the same statement. The statement's rows."""
        # Inside an open transaction (a step of it) the write commits with that one: durably
        # (commit_async would set the whole transaction's commit).
        durable = durable or self._conn is not None
        return self._single(fenced_sql(template, query, durable), {
            "id": token.job_id, "token": token.token, "now": now, "event": event,
            "detail": Jsonb(detail or {}, dumps=dumps),
            "fenced_detail": Jsonb({"write": query.removeprefix("fenced_")}, dumps=dumps),
            **params})

    def _fenced(
        self, query: str, event: str, token: ClaimToken, now: float,
        detail: dict[str, Any] | None = None, *, template: str = "one_trip_fenced",
        durable: bool = True, **params: Any,
    ) -> bool:
        """One fenced transition (:meth:`_fenced_rows`): whether it was written."""
        return bool(self._fenced_rows(query, event, token, now, detail, template=template,
                                      durable=durable, **params))

    # -- batches and jobs --------------------------------------------------------------
    ADD_JOBS_PER_INSERT = 5_000
    """Jobs per INSERT statement in :meth:`add_jobs` (the rows travel as arrays)."""

    def _lock_queue(self) -> None:
        # Imports with a queue limit count one after the other, from any machine.
        self._one("advisory_xact_lock", key=IMPORT_LOCK)

    def _present_job_keys(self, keys: Sequence[str]) -> set[str]:
        with self._tx() as db:
            return self._existing_keys(db, keys)

    def _insert_jobs(self, batch: Batch, specs: Sequence[JobSpec], now: float) -> list[int]:
        ids_by_key: dict[str, int] = {}
        with self._tx() as db:
            for start in range(0, len(specs), self.ADD_JOBS_PER_INSERT):
                chunk = specs[start:start + self.ADD_JOBS_PER_INSERT]
                rows = db.execute(self._q["insert_jobs"], {
                    "batch_id": batch.id, "max_attempts": batch.max_attempts, "now": now,
                    "keys": [s.job_key for s in chunk],
                    "rows": [s.row_number for s in chunk],
                    "names": [s.name for s in chunk], "prompts": [s.prompt for s in chunk],
                    "providers": [s.provider for s in chunk],
                    "params": [dumps(s.params) for s in chunk],
                    "pins": [s.pinned_account for s in chunk],
                    "priorities": [s.priority for s in chunk],
                    "outputs": [s.output_path for s in chunk],
                    "metas": [dumps(s.metadata) for s in chunk],
                }).fetchall()
                ids_by_key.update((r["job_key"], r["id"]) for r in rows)
        # Another machine may have imported the same key meanwhile: it is present.
        return [ids_by_key[s.job_key] for s in specs if s.job_key in ids_by_key]

    def _existing_keys(self, db: psycopg.Connection[Row], keys: Sequence[str]) -> set[str]:
        found: set[str] = set()
        for start in range(0, len(keys), 10_000):
            chunk = list(keys[start:start + 10_000])
            found.update(r["job_key"] for r in db.execute(self._q["existing_job_keys"],
                                                          {"keys": chunk}))
        return found

    def existing_job_keys(self, keys: Iterable[str]) -> set[str]:
        with self._tx() as db:
            return self._existing_keys(db, list(keys))

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
    def claim_next_job(self, params: ClaimParams) -> Claim | None:
        token = uuid.uuid4().hex
        tried: list[int] = []  # the job the claim wrote its token on, if it got that far
        # Inside an open transaction (a step of it) the claim goes the long way: the fast
        # way's statement would set the whole transaction's commit (commit_async).
        fast: object = _LONG_WAY
        for _ in range(MAX_REFUSED_PER_CLAIM):
            fast = _LONG_WAY if self._conn is not None else self._settled(
                functools.partial(self._claim_fast, params, token),
                functools.partial(self._claim_landed, params, token, []),
                f"a claim for {params.account}")
            if fast is not _REFUSED:  # a row refused (row_limits): the next candidate
                break
        if fast is _REFUSED:
            return None
        if fast is not _LONG_WAY:
            return cast("Claim | None", fast)
        return self._settled(functools.partial(self._claim, params, token, tried),
                             functools.partial(self._claim_landed, params, token, tried),
                             f"a claim for {params.account}")

    def _claim_fast(self, params: ClaimParams, token: str) -> Claim | object | None:
        """The claim in one round trip (issue 20): one pipeline sends BEGIN, the account's
        row lock (lock_account), claim_fast (room, candidate, claim, ledger entry) and
        COMMIT, which does not wait for the WAL's flush (a lost claim leaves the job queued
        with nothing sent). :data:`_LONG_WAY` when a spend cap has to look at the
        candidate: :meth:`_claim` claims it then."""
        rows = self._single(self._q["claim_fast"].encode(), {
            "account": params.account, "token": token, "owner": params.instance_id,
            "lease_seconds": params.lease_seconds, "now": params.now,
            "creates": True, "skip_batches": [], **refusal_params()},
            before=[("lock_account", {"name": params.account})])
        row = rows[0] if rows else None
        if row is None or not row["room_ok"]:
            return None
        if row["refused_id"] is not None:
            return _REFUSED
        if row["id"] is None:
            return None if row["candidate_id"] is None else _LONG_WAY
        job = job_from_pg(row)
        return claim_of(job, params.account, token)

    def _claim_landed(self, params: ClaimParams, token: str,
                      tried: list[int]) -> Claim | None:
        """The claim whose COMMIT went unanswered, if it committed: the row carrying its
        token (a row cancelled meanwhile carries none: no claim). The long way's row is
        known (``tried``): its lock is waited for; the fast way's is not, so the account's
        row lock is (the lost transaction held it), then the row carrying the token."""
        if tried:
            row = self._settle_row(tried[-1])
        else:
            with self._tx():
                self._exec("settle_lock_timeout")
                self._one("lock_account_for_share", name=params.account)
                row = self._one("claim_by_token", account=params.account, token=token)
        if row is None or row["claim_token"] != token:
            return None
        job = job_from_pg(row)
        assert job.account is not None
        return claim_of(job, job.account, token)

    def _claim(self, params: ClaimParams, token: str, tried: list[int]) -> Claim | None:
        with self._tx():
            return self._claim_steps(params, token, tried)

    def _account_with_room(self, params: ClaimParams) -> Account | None:
        row = self._one("lock_account", name=params.account)
        if row is None:
            return None
        account = account_from_pg(row)
        if not _eligible(account):
            return None
        # Counted under the account's row lock: every claim on this account, from any
        # machine, waits for this transaction, so none can take the same last slot.
        # Its cool-down is compared with the server's clock, not the caller's.
        room = self._one("claim_room", account=account.name)
        if room is None or room["cooling"] or int(room["live"]) >= account.capacity:
            return None
        return account

    def renew_leases(self, instance_id: str, now: float, lease_seconds: float,
                     tokens: Collection[str] | None = None,
                     clock_offset: float | None = None) -> int:
        """The leases and the heartbeat on the server's clock (``now`` is not used: a
        worker's clock never sets a lease), with the instance's lease length and its
        clock's offset in the registry."""
        return int(self._scalar("renew_leases", owner=instance_id,
                                lease_seconds=lease_seconds, clock_offset=clock_offset,
                                tokens=None if tokens is None else list(tokens)))

    def server_time(self) -> float:
        """The server's clock (``clock_timestamp()``), as every statement reads it."""
        return float(self._scalar("server_time"))

    # -- fenced transitions ------------------------------------------------------------
    # Each is settled (``_settled``): when its COMMIT goes unanswered, whether it was written
    # is read back. Most events happen once per claim token (the write moves the state on or
    # ends the claim), so their ledger entry, written in the same transaction, says it
    # exactly; "resumed" and "remote_status" may repeat and are read from the row instead.
    def _write_settled(self, token: ClaimToken, event: str, write: Callable[[], bool],
                       landed: Callable[[Row], bool] | None = None) -> bool:
        """A fenced write settled (:meth:`_settled`). Read back as not written while the
        row still carries the token, the write runs once more: the lost transaction has
        ended without it (the read waited for its lock), so it cannot apply twice, and a
        recorded submission is kept instead of reported lost (which would end the claim
        and leave a render to be looked for again)."""
        check = landed or functools.partial(self._event_written, token, event)
        still_held: list[bool] = []

        def read_back() -> bool:
            with self._tx():
                row = self._settle_row(token.job_id)
                if row is not None and check(row):
                    return True
                still_held.append(row is not None and row["claim_token"] == token.token)
                return False

        what = f"the {event} write of job {token.job_id}"
        answer = self._settled(write, read_back, what)
        if still_held and still_held[-1]:
            log.warning("team database %s: %s runs again", self.where, what)
            return self._settled(write, read_back, what)
        return answer

    def _event_written(self, token: ClaimToken, event: str, row: Row) -> bool:
        return bool(self._scalar("wrote_event", id=token.job_id, token=token.token,
                                 event=event))

    @staticmethod
    def _row_is(token: ClaimToken, expected: dict[str, Any], row: Row) -> bool:
        return row["claim_token"] == token.token and all(
            row[k] == v for k, v in expected.items())

    def _transition(
        self, query: str, event: str, token: ClaimToken, now: float,
        detail: dict[str, Any] | None = None, *, durable: bool = True,
        written: dict[str, Any] | None = None, **params: Any,
    ) -> bool:
        """One statement (``one_trip_fenced``), settled (:meth:`_write_settled`)."""
        return self._write_settled(
            token, event,
            functools.partial(self._fenced, query, event, token, now, detail,
                              durable=durable, **params),
            None if written is None else functools.partial(self._row_is, token, written))

    def mark_submitting(self, token: ClaimToken, client_token: str, now: float, *,
                        min_lease_seconds: float | None = None) -> bool:
        return self._write_settled(token, "submitting", functools.partial(
            self._mark_submitting, token, client_token, now, min_lease_seconds))

    def _mark_submitting(self, token: ClaimToken, client_token: str, now: float,
                         min_lease: float | None) -> bool:
        # The intent and its spend are one statement, committed durably: from here the
        # render may be billed. The lease left is the server's to measure, in the same
        # statement; a refusal while the claim held says so (base.short_lease).
        return self._fenced("fenced_mark_submitting", "submitting", token, now,
                            {"client_token": client_token},
                            template="one_trip_submitting", client_token=client_token,
                            min_lease=min_lease)

    def record_submitted(self, token: ClaimToken, provider_job_id: str, now: float) -> bool:
        return self._write_settled(token, "submitted", functools.partial(
            self._record_submitted, token, provider_job_id, now))

    def _record_submitted(self, token: ClaimToken, provider_job_id: str, now: float) -> bool:
        rows = self._fenced_rows("fenced_record_submitted", "submitted", token, now,
                                 {"provider_job_id": provider_job_id},
                                 template="one_trip_submitted",
                                 provider_job_id=provider_job_id)
        if rows and rows[0]["holder"] is not None:
            raise render_recorded(provider_job_id, rows[0]["holder"])
        return bool(rows and rows[0]["written"] is not None)

    def mark_completed(
        self, token: ClaimToken, *, size: int, sha256: str, cost: float | None, now: float
    ) -> bool:
        return self._write_settled(token, "completed", functools.partial(
            self._mark_completed, token, size=size, sha256=sha256, cost=cost, now=now))

    def _mark_completed(
        self, token: ClaimToken, *, size: int, sha256: str, cost: float | None, now: float
    ) -> bool:
        # With the provider's reported cost, the same statement writes the spend entry
        # correcting the price its intent wrote.
        return self._fenced("fenced_mark_completed", "completed", token, now,
                            {"size": size, "sha256": sha256, "cost": cost},
                            template="one_trip_completed", size=size, sha256=sha256,
                            cost=None if cost is None else float(cost), host=self.host,
                            slack=SLACK)

    # -- audit -------------------------------------------------------------------------
    def ledger(self, job_id: int | None = None, limit: int | None = None) -> list[LedgerEntry]:
        if limit:
            rows = self._all("ledger_tail", job_id=job_id, limit=limit)
        elif job_id is not None:
            rows = self._all("ledger_for_job", job_id=job_id)
        else:
            rows = self._all("ledger_all")
        return [ledger_from_pg(r) for r in rows]

    def doctor_queries(self, instance_alive: bool) -> dict[str, list[Any]]:
        """The invariant queries on a team's journal. Live claims are legitimate here
        (other machines render), so ``instance_alive`` is not asked: a claim is fine while
        its lease holds on the server's clock and its owner's heartbeat is recent; the
        others are listed (``expired_leases_held``: job, state, owner, seconds past;
        ``claims_of_silent_instances``: job, state, owner, host, seconds silent)."""
        with self._tx():
            results: dict[str, list[Any]] = {
                "completed_twice": [tuple(r.values())
                                    for r in self._all("doctor_completed_twice")],
                "over_capacity": [tuple(r.values())
                                  for r in self._all("doctor_over_capacity")],
                "expired_leases_held": [
                    (r["id"], r["state"], r["lease_owner"], float(r["expired_for"]))
                    for r in self._all("doctor_expired_leases")],
                "claims_of_silent_instances": [
                    (r["id"], r["state"], r["lease_owner"], r["host"],
                     float(r["silent_for"])) for r in self._all("doctor_silent_owners")],
            }
        # The server checks its own pages (data checksums, WAL); nothing to ask here.
        results["integrity"] = []
        return results

    # -- the instances registry (PostgreSQL only) -------------------------------------
    def register_instance(self, instance_id: str, *, host: str, pid: int, version: str,
                          clock_offset: float | None = None,
                          lease_seconds: float | None = None) -> None:
        """Say hello: this instance shares the database from now on (the registry's
        times are the server's; ``clock_offset`` is its clock minus the server's)."""
        with self._tx():
            self._exec("register_instance", id=instance_id, host=host, pid=pid,
                       version=version, clock_offset=clock_offset,
                       lease_seconds=lease_seconds)

    def stop_instance(self, instance_id: str) -> None:
        """Say goodbye on a clean exit (its leases are released by then)."""
        with self._tx():
            self._exec("stop_instance", id=instance_id)

    def list_instances(self) -> list[Instance]:
        return [Instance(id=r["id"], host=r["host"], pid=r["pid"], version=r["version"],
                         started_at=r["started_at"], heartbeat_at=r["heartbeat_at"],
                         live_renders=r["live_renders"], stopped_at=r["stopped_at"],
                         silent_for=max(0.0, float(r["silent_for"])),
                         clock_offset=r["clock_offset"], lease_seconds=r["lease_seconds"])
                for r in self._all("list_instances")]

    # -- used by tests and benchmarks --------------------------------------------------
    @contextmanager
    def raw_connection(self) -> Iterator[psycopg.Connection[Row]]:
        """A connection of the pool inside one transaction (committed at the end)."""
        with self._tx() as db:
            yield db


_LONG_WAY = object()
"""The fast claim's answer when a spend cap has to look at its candidate."""
_REFUSED = object()
"""The fast claim's answer when its candidate's row was refused (domain/row_limits.py)."""


def _eligible(account: Account) -> bool:
    """Enabled and usable; its cool-down is the server's to compare (``claim_room``)."""
    return account.enabled and account.status in (AccountStatus.READY,
                                                  AccountStatus.RATE_LIMITED)


__all__ = ["SCHEMA_VERSION", "Instance", "PostgresStore", "pg_queries"]
