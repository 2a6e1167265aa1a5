"""The SQLite journal: the embedded default store.

Durability settings (DESIGN.md invariant 1, issue 2): WAL, ``synchronous=FULL`` (a recorded
provider job id or completion survives a power cut), a busy timeout, and ``BEGIN IMMEDIATE``
for every write so a read-then-update holds the write lock throughout. The file is created
``0600``. A file that is not a ReelQueue journal is refused and left untouched; an older
journal is copied (``journal.sqlite3.bak-vN``) before it is migrated.
"""

from __future__ import annotations

import functools
import json
import logging
import os
import sqlite3
import threading
import uuid
from collections.abc import Callable, Collection, Iterable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import Any, TypeVar, cast

from reelqueue.domain.errors import (
    JournalBug,
    JournalBusy,
    JournalCorrupt,
    JournalError,
    JournalFull,
    JournalReadOnly,
)
from reelqueue.domain.models import Account, Batch, Claim, ClaimToken, JobSpec, LedgerEntry
from reelqueue.domain.states import AccountStatus
from reelqueue.store.base import ClaimParams, short_lease, this_host
from reelqueue.store.queries import migration_sql, named_queries, schema_sql
from reelqueue.store.rows import account_from_row, batch_from_row, job_from_row, ledger_from_row
from reelqueue.store.spend import SLACK, SPEND_EVENT, price_of
from reelqueue.store.sql_journal import RowReaders, SqlJournal, public_methods

log = logging.getLogger(__name__)

SCHEMA_VERSION = 9
APPLICATION_ID = 0x52515545  # "RQUE": marks the file as a ReelQueue journal
_SQLITE_MAGIC = b"SQLite format 3\x00"
MIN_SQLITE = (3, 35, 0)
"""RETURNING (3.35): a fenced update answers the row it changed (issue 20)."""


_ENCODE = json.JSONEncoder(sort_keys=True, separators=(",", ":"), default=str).encode


def _dumps(value: Any) -> str:
    # One encoder for every call: json.dumps with options builds a new one each time.
    return _ENCODE(value)


def _loads(text: str | None) -> Any:
    return json.loads(text) if text and text != "{}" else {}


# SQLite's primary result codes (https://sqlite.org/rescode.html), read from
# ``sqlite3.Error.sqlite_errorcode & 0xff``: the extended code's low byte.
_SQLITE_PERM, _SQLITE_BUSY, _SQLITE_LOCKED, _SQLITE_READONLY = 3, 5, 6, 8
_SQLITE_IOERR, _SQLITE_CORRUPT, _SQLITE_FULL, _SQLITE_CANTOPEN = 10, 11, 13, 14
_SQLITE_NOTADB = 26


def _known_error(exc: sqlite3.Error, path: Path | None = None) -> Exception:
    """Sort an SQLite error into the environment's fault (a :class:`JournalError` with a
    plain message) or ours (:class:`JournalBug`, reported as a bug with the log path).

    Sorted by the primary result code, not by the message's words; errors from before
    Python 3.11 (no code) fall back on the words.
    """
    where = f" ({path})" if path else ""
    code = getattr(exc, "sqlite_errorcode", None)
    primary = code & 0xFF if isinstance(code, int) else _code_from_words(str(exc))
    if primary == _SQLITE_FULL:
        return JournalFull(f"The disk that holds the journal{where} is full; the last "
                           "change was not written. Free some space, then run the command "
                           "again: nothing recorded before was lost.")
    if primary in (_SQLITE_READONLY, _SQLITE_PERM, _SQLITE_CANTOPEN):
        return JournalReadOnly(f"The journal{where} cannot be written: the file or its "
                               "folder is read-only. Check the permissions of the data "
                               "folder, or pass a different --data-dir.")
    if primary in (_SQLITE_BUSY, _SQLITE_LOCKED):
        return JournalBusy(f"The journal{where} is locked by another program. Close it (or "
                           "wait for it), then run the command again.")
    if primary in (_SQLITE_CORRUPT, _SQLITE_NOTADB):
        return JournalCorrupt(f"The journal{where} is damaged (SQLite: {exc}). It was left "
                              "as it is: restore it from a backup (a .bak-v* copy is kept "
                              "beside it before each upgrade), or move it away to start a "
                              "new one.")
    if primary == _SQLITE_IOERR:
        return JournalError(f"The disk did not read or write the journal{where} ({exc}). "
                            "Check the disk, then run the command again.")
    return JournalBug(f"The journal refused a request: {exc}. This is a bug in ReelQueue; "
                      "please report it with the log file.")


def _code_from_words(text: str) -> int | None:
    text = text.lower()
    for words, code in (("full", _SQLITE_FULL), ("readonly", _SQLITE_READONLY),
                        ("read-only", _SQLITE_READONLY), ("unable to open", _SQLITE_CANTOPEN),
                        ("locked", _SQLITE_BUSY), ("busy", _SQLITE_BUSY),
                        ("malformed", _SQLITE_CORRUPT), ("not a database", _SQLITE_NOTADB),
                        ("disk i/o", _SQLITE_IOERR)):
        if words in text:
            return code
    return None


_F = TypeVar("_F", bound=Callable[..., Any])


def _mapped(method: _F) -> _F:
    @functools.wraps(method)
    def call(self: SqliteStore, *args: Any, **kwargs: Any) -> Any:
        try:
            return method(self, *args, **kwargs)
        except sqlite3.Error as exc:
            raise _known_error(exc, self.path) from exc

    return cast(_F, call)


def _errors_mapped(cls: type[SqliteStore]) -> type[SqliteStore]:
    """Every public store operation raises our errors, never a raw ``sqlite3.Error``.

    Reads as well as writes: a damaged page met by a ``SELECT`` must say "the journal is
    damaged", not "database disk image is malformed" with exit 70. Writes are already
    mapped inside ``_write`` (where the rollback happens); this covers every other path,
    including operations added later.
    """
    for name, value in public_methods(cls, skip=("close", "raw_connection")).items():
        setattr(cls, name, _mapped(value))
    return cls


@_errors_mapped
class SqliteStore(SqlJournal):
    """The journal on one SQLite file.

    Attributes:
        path: the database file.
        migrated_from: the schema version found on open, if a migration ran (else None).
    """

    def __init__(self, connection: sqlite3.Connection, path: Path) -> None:
        self._db = connection
        self._lock = threading.RLock()
        self._q = named_queries()
        #: the connection's ``synchronous``: True FULL, False NORMAL, None not known
        self._synchronous_full: bool | None = None
        self.path = path
        self.migrated_from: int | None = None
        #: written as ``output_host`` with every file this instance completes
        self.host = this_host()

    # -- opening -----------------------------------------------------------------------
    @classmethod
    def open(cls, path: Path | str, *, now: float, busy_timeout_ms: int = 10_000) -> SqliteStore:
        path = Path(path)
        if sqlite3.sqlite_version_info < MIN_SQLITE:
            raise JournalError(
                f"This Python's SQLite is {sqlite3.sqlite_version}; the journal needs SQLite "
                f"{'.'.join(map(str, MIN_SQLITE))} or later (UPDATE ... RETURNING). Use a "
                "Python built with a newer SQLite (the official installers are).")
        _refuse_foreign_file(path)
        if not path.exists():
            # Owner-only from the first byte; SQLite gives -wal/-shm the same mode.
            fd = os.open(path, os.O_CREAT | os.O_RDWR | os.O_EXCL, 0o600)
            os.close(fd)
        try:
            db = sqlite3.connect(
                str(path), isolation_level=None, timeout=busy_timeout_ms / 1000,
                check_same_thread=False,
            )
        except sqlite3.Error as exc:
            raise _known_error(exc, path) from exc
        db.row_factory = sqlite3.Row
        store = cls(db, path)
        try:
            store._configure(busy_timeout_ms)
            store._migrate(now)
        except sqlite3.Error as exc:
            db.close()
            raise _known_error(exc, path) from exc
        except BaseException:
            db.close()
            raise
        return store

    def _configure(self, busy_timeout_ms: int) -> None:
        self._db.execute(self._q["set_busy_timeout"].format(ms=int(busy_timeout_ms)))
        mode = self._db.execute(self._q["journal_mode_wal"]).fetchone()[0]
        if str(mode).lower() != "wal":
            raise JournalError(f"The journal could not switch to WAL mode (got {mode}).")
        self._set_synchronous(True)
        self._db.execute(self._q["foreign_keys_on"])

    def _migrate(self, now: float) -> None:
        app_id = self._db.execute(self._q["application_id"]).fetchone()[0]
        version = self._db.execute(self._q["user_version"]).fetchone()[0]
        tables = self._db.execute(self._q["count_tables"]).fetchone()[0]
        if app_id != APPLICATION_ID and (tables or version):
            raise JournalCorrupt(
                f"{self.path} is an SQLite database but not a ReelQueue journal. "
                "It was left untouched; move it away or choose another --data-dir."
            )
        if version > SCHEMA_VERSION:
            raise JournalError(
                f"The journal was written by a newer ReelQueue (schema {version}, this "
                f"version knows {SCHEMA_VERSION}). Update ReelQueue."
            )
        if version == SCHEMA_VERSION:
            return
        if version == 0:
            with self._write():
                for statement in _split_sql(schema_sql()):
                    self._db.execute(statement)
                self._db.execute(self._q["set_application_id"].format(value=APPLICATION_ID))
                self._db.execute(self._q["set_user_version"].format(value=SCHEMA_VERSION))
            return
        self._backup(version)
        with self._write():
            for step in range(version + 1, SCHEMA_VERSION + 1):
                for statement in _split_sql(migration_sql(step)):
                    self._db.execute(statement)
            self._db.execute(self._q["set_user_version"].format(value=SCHEMA_VERSION))
            self._ledger("migrated", now, detail={"from": version, "to": SCHEMA_VERSION})
        self.migrated_from = version

    def _backup(self, version: int) -> None:
        target = self.path.with_name(f"{self.path.name}.bak-v{version}")
        fd = os.open(target, os.O_CREAT | os.O_WRONLY | os.O_TRUNC, 0o600)
        os.close(fd)
        copy = sqlite3.connect(str(target))
        try:
            self._db.backup(copy)
        finally:
            copy.close()
        log.info("journal copied to %s before migrating from schema %d", target, version)

    def close(self) -> None:
        with self._lock:
            self._db.close()

    # -- helpers -----------------------------------------------------------------------
    @contextmanager
    def _write(self, *, durable: bool = True) -> Iterator[sqlite3.Connection]:
        """One write transaction, ``BEGIN IMMEDIATE``.

        ``durable=False`` commits without an fsync (WAL with ``synchronous=NORMAL``): still
        atomic, and made durable by the next durable commit, but it may be lost in a power
        cut. Used only for writes whose loss recovery already handles the same way (a claim
        before its submission intent, a progress note, the switch to downloading, a lease
        renewal); the submission intent, the provider job id, completions and failures are
        always durable (docs/design-notes.md).

        ``synchronous`` is a setting of the connection, not of a transaction: it is set
        before ``BEGIN`` only when this transaction needs another value than the one the
        connection has (a run of durable writes sets it once, not twice per write).
        """
        with self._lock:
            if self._db.in_transaction:  # nested in an open write: part of it
                yield self._db
                return
            try:
                if self._synchronous_full is not durable:
                    self._set_synchronous(durable)
                self._db.execute(self._q["begin_write"])
            except sqlite3.Error as exc:
                raise _known_error(exc, self.path) from exc
            try:
                yield self._db
            except sqlite3.Error as exc:
                self._rollback()
                raise _known_error(exc, self.path) from exc
            except BaseException:
                self._rollback()
                raise
            try:
                self._db.execute(self._q["commit_write"])
            except sqlite3.Error as exc:
                self._rollback()
                raise _known_error(exc, self.path) from exc

    def _rollback(self) -> None:
        """Roll back the open transaction, if SQLite has not already done it.

        After SQLITE_FULL, an I/O error or a failed COMMIT, SQLite may have rolled back by
        itself; a second ROLLBACK would raise "no transaction is active" over the real
        error, which must be the one the user sees.
        """
        if not self._db.in_transaction:
            return
        try:
            self._db.execute(self._q["rollback_write"])
        except sqlite3.Error:
            log.warning("journal: ROLLBACK failed after an error", exc_info=True)

    def _set_synchronous(self, full: bool) -> None:
        self._synchronous_full = None  # unknown until the PRAGMA has run
        self._db.execute(self._q["synchronous_full" if full else "synchronous_normal"])
        self._synchronous_full = full

    def _read(self, query: str, /, **params: Any) -> list[sqlite3.Row]:
        with self._lock:
            try:
                return self._db.execute(self._q[query], params).fetchall()
            except sqlite3.Error as exc:
                raise _known_error(exc, self.path) from exc

    def _exec(self, query: str, /, **params: Any) -> int:
        """Run a named write inside an open transaction; return the rows changed."""
        return self._db.execute(self._q[query], params).rowcount

    # -- the driver's primitives (sql_journal.SqlJournal) ------------------------------
    NO_LIMIT = -1

    def _reading(self) -> AbstractContextManager[Any]:
        return self._lock

    def _one(self, query: str, /, **params: Any) -> sqlite3.Row | None:
        rows = self._read(query, **params)
        return rows[0] if rows else None

    def _all(self, query: str, /, **params: Any) -> list[sqlite3.Row]:
        return self._read(query, **params)

    def _scalar(self, query: str, /, **params: Any) -> Any:
        rows = self._read(query, **params)
        return rows[0][0] if rows else None

    def _all_sql(self, sql: str, /, **params: Any) -> list[sqlite3.Row]:
        with self._lock:
            try:
                return self._db.execute(sql, params).fetchall()
            except sqlite3.Error as exc:
                raise _known_error(exc, self.path) from exc

    def _json(self, value: Any) -> str:
        return _dumps(value)

    def _list(self, values: Iterable[Any]) -> str:
        return _dumps(list(values))

    ROWS = RowReaders(job_from_row, batch_from_row, account_from_row, ledger_from_row)

    def _lock_batch(self, batch_id: int) -> None:
        """Nothing: the claim's BEGIN IMMEDIATE already holds the file's write lock."""

    def _ledger(
        self, event: str, now: float, *, job_id: int | None = None, account: str | None = None,
        claim_token: str | None = None, detail: dict[str, Any] | None = None,
    ) -> None:
        self._db.execute(self._q["insert_ledger"], {
            "now": now, "event": event, "job_id": job_id, "account": account,
            "claim_token": claim_token, "detail": _dumps(detail) if detail else "{}"})

    def _fenced(
        self, query: str, event: str | None, token: ClaimToken, now: float,
        detail: dict[str, Any] | None = None, *, durable: bool = True,
        why: Callable[[], dict[str, Any]] | None = None, **params: Any,
    ) -> bool:
        """One fenced transition: the update names the job and its claim token. ``why``
        adds to a refusal's ``fenced_out`` entry (a refusal that was not the token's)."""
        return self._fenced_row(query, event, token, now, detail, durable=durable, why=why,
                                **params) is not None

    def _fenced_row(
        self, query: str, event: str | None, token: ClaimToken, now: float,
        detail: dict[str, Any] | None = None, *, durable: bool = True,
        why: Callable[[], dict[str, Any]] | None = None, **params: Any,
    ) -> sqlite3.Row | None:
        """:meth:`_fenced`, answering the updated row's RETURNING columns (the job's
        account, and whatever else the query returns), or None when it was refused. Only a
        refusal reads the job again, for its ``fenced_out`` entry."""
        params.update(id=token.job_id, token=token.token, now=now)
        with self._write(durable=durable):
            # fetchall: the statement runs to its end (and is reset) before COMMIT.
            rows = self._db.execute(self._q[query], params).fetchall()
            if rows:
                if event:
                    self._ledger(event, now, job_id=token.job_id, account=rows[0]["account"],
                                 claim_token=token.token, detail=detail)
                return cast(sqlite3.Row, rows[0])
            row = self._db.execute(self._q["job_account"], {"id": token.job_id}).fetchone()
            self._ledger("fenced_out", now, job_id=token.job_id,
                         account=row["account"] if row else None, claim_token=token.token,
                         detail={"write": query.removeprefix("fenced_"),
                                 **(why() if why else {})})
            return None

    def _transition(
        self, query: str, event: str, token: ClaimToken, now: float,
        detail: dict[str, Any] | None = None, *, durable: bool = True,
        written: dict[str, Any] | None = None, **params: Any,
    ) -> bool:
        # ``written`` is for a read-back after an unanswered commit: SQLite's is local.
        return self._fenced(query, event, token, now, detail, durable=durable, **params)

    # -- batches and jobs --------------------------------------------------------------
    ADD_JOBS_PER_INSERT = 100
    """Jobs per INSERT statement in :meth:`add_jobs` (fewer if SQLite allows fewer
    variables). Each execution of a statement opens cursors on the table and its seven
    indexes (and on batches, for the foreign key) and builds the lookup tables of the
    CHECK constraints' IN lists: with one job per statement, that set-up made a
    100,000-job insert take 2.1 s instead of 1.6 s."""

    def _insert_jobs(self, batch: Batch, specs: Sequence[JobSpec], now: float) -> list[int]:
        first_id = self._db.execute(self._q["next_job_id"]).fetchone()[0]
        # Rows are made as they are inserted, never all at once; the encoder is _dumps's.
        encode = _ENCODE
        batch_id, attempts = batch.id, batch.max_attempts
        with self._page_cache_for(len(specs)):
            self._insert_job_rows(
                (batch_id, s.job_key, s.row_number, s.name, s.prompt, s.provider,
                 encode(s.params), s.pinned_account, s.priority, s.output_path, attempts,
                 now, now, encode(s.metadata))
                for s in specs
            )
        return self._inserted_ids(first_id, [s.job_key for s in specs])

    def _lock_queue(self) -> None:
        """Nothing: the import's BEGIN IMMEDIATE already holds the file's write lock."""

    def _present_job_keys(self, keys: Sequence[str]) -> set[str]:
        """Which of ``keys`` the journal has (inside add_jobs' transaction). An empty
        journal has none; a journal with no more jobs than ``keys`` is read once (one scan
        of the key index) rather than looked up 500 keys at a time."""
        top = self._db.execute(self._q["max_job_id"]).fetchone()[0]
        if top is None or not keys:
            return set()
        if top > len(keys):  # ids only grow: MAX(id) bounds the number of jobs
            return self._existing_keys_locked(keys)
        wanted = set(keys)
        cursor = self._db.cursor()
        cursor.row_factory = None
        return {key for (key,) in cursor.execute(self._q["all_job_keys"]) if key in wanted}

    ADD_JOBS_CACHE_KIB = 32_768
    """The most page cache :meth:`add_jobs` asks for (KiB), at about 1 KiB per job."""

    @contextmanager
    def _page_cache_for(self, jobs: int) -> Iterator[None]:
        """A page cache big enough for a bulk insert, for its duration. With SQLite's
        default 2 MB, the pages of the job-key index (random keys) are spilled to the WAL
        and read back again and again mid-transaction; what reaches the disk at commit,
        and when, is the same either way."""
        wanted_kib = min(jobs, self.ADD_JOBS_CACHE_KIB)
        before = int(self._db.execute(self._q["cache_size"]).fetchone()[0])
        # A negative cache_size is in KiB; a positive one in pages.
        page_kib = self._db.execute(self._q["page_size"]).fetchone()[0] / 1024
        if wanted_kib <= (-before if before < 0 else before * page_kib):
            yield  # already big enough (a small import, or a cache set larger)
            return
        self._db.execute(self._q["set_cache_size"].format(value=-int(wanted_kib)))
        try:
            yield
        finally:
            self._db.execute(self._q["set_cache_size"].format(value=before))

    def _insert_job_rows(self, rows: Iterable[Sequence[Any]]) -> None:
        """Insert ``rows`` (the values of insert_job, in order), many per statement."""
        head, _, row = self._q["insert_job"].rpartition("VALUES")
        row = row.strip()
        width = row.count("?")
        per = max(1, min(self.ADD_JOBS_PER_INSERT,
                         self._db.getlimit(sqlite3.SQLITE_LIMIT_VARIABLE_NUMBER) // width))
        rest: list[Any] = []

        def full_statements() -> Iterator[list[Any]]:
            nonlocal rest
            values: list[Any] = []
            count = 0
            for job in rows:
                values += job
                count += 1
                if count == per:
                    yield values
                    values, count = [], 0
            rest = values

        self._db.executemany(f"{head}VALUES {','.join([row] * per)}", full_statements())
        if rest:
            self._db.execute(f"{head}VALUES {','.join([row] * (len(rest) // width))}", rest)

    def _inserted_ids(self, first_id: int, keys: Sequence[str]) -> list[int]:
        """The ids of the jobs just inserted, in insertion order. SQLite gives a new row
        MAX(id) + 1, so inside one write transaction they are first_id, first_id + 1...;
        that is checked, and the keys are looked up if it ever does not hold."""
        if not keys:
            return []
        last = first_id + len(keys) - 1
        top, count = self._db.execute(self._q["inserted_since"],
                                      {"first_id": first_id}).fetchone()
        if top == last and count == len(keys):
            return list(range(first_id, last + 1))
        return self._ids_for_keys(keys)

    def _ids_for_keys(self, keys: Sequence[str]) -> list[int]:
        return [r[0] for r in self._db.execute(self._q["ids_for_keys"],
                                               {"keys": json.dumps(list(keys))})]

    def _existing_keys_locked(self, keys: Sequence[str]) -> set[str]:
        if not keys:
            return set()
        return {r[0] for r in self._db.execute(self._q["present_job_keys"],
                                               {"keys": json.dumps(list(keys))})}

    def existing_job_keys(self, keys: Iterable[str]) -> set[str]:
        with self._lock:
            return self._existing_keys_locked(list(keys))

    def _jobs_query(self, batch_id: int | None, states: object | None) -> str:
        """One statement per filter: each names only the columns it filters on, so
        SQLite's planner sees which index serves it."""
        return "list_jobs" + ("" if batch_id is None else "_of_batch") + (
            "" if states is None else "_in_states")

    # -- accounts ----------------------------------------------------------------------
    def _account_taken(self, name: str) -> bool:
        """Looked up: the write lock keeps it so until the insert."""
        return self._one("get_account", name=name) is not None

    def _lock_account(self, name: str) -> bool:
        """Nothing to lock (the write lock is held); the delete's count says whether the
        account was there."""
        return True

    # -- claims ------------------------------------------------------------------------
    def claim_next_job(self, params: ClaimParams) -> Claim | None:
        # Not fsynced: a claim lost in a power cut leaves the job queued, and nothing was
        # sent yet; the submission intent that follows is durable and syncs it too.
        with self._write(durable=False):
            return self._claim_steps(params, uuid.uuid4().hex, [])

    def _account_with_room(self, params: ClaimParams) -> Account | None:
        row = self._one("claim_account", name=params.account)
        if row is None:
            return None
        account = account_from_row(row)
        # The free slots are counted inside the same write transaction as the claim
        # (claim_account reads them with the account), so two processes on one journal
        # can never both take the last slot.
        if not _eligible(account, params.now) or row["live"] >= account.capacity:
            return None
        return account

    def renew_leases(self, instance_id: str, now: float, lease_seconds: float,
                     tokens: Collection[str] | None = None,
                     clock_offset: float | None = None) -> int:
        # One machine: the caller's clock decides, there is no registry for an offset.
        with self._write(durable=False):
            return self._exec("renew_leases", owner=instance_id, lease_until=now + lease_seconds,
                              every=tokens is None,
                              tokens=json.dumps([] if tokens is None else list(tokens)))

    def server_time(self) -> float | None:
        return None  # one machine: the caller's clock decides

    # -- fenced transitions ------------------------------------------------------------
    def mark_submitting(self, token: ClaimToken, client_token: str, now: float, *,
                        min_lease_seconds: float | None = None) -> bool:
        # The intent and its spend are one transaction: from here the render may be billed.
        with self._write():
            before = self._db.execute(self._q["intent_before"],
                                      {"id": token.job_id}).fetchone()
            row = self._fenced_row("fenced_mark_submitting", "submitting", token, now,
                                   {"client_token": client_token}, client_token=client_token,
                                   min_lease=min_lease_seconds,
                                   why=functools.partial(self._submit_refusal, token, now,
                                                         min_lease_seconds))
            if row is None:
                return False
            price = price_of(_loads(before["metadata"]))
            # The same intent again (an unresolved submission re-entering SUBMITTING to be
            # looked up) sends no create: its spend was written with the first.
            if price is not None and before["client_token"] != client_token:
                self._ledger(SPEND_EVENT, now, job_id=token.job_id, account=row["account"],
                             claim_token=token.token, detail={"usd": price})
            return True

    def _submit_refusal(self, token: ClaimToken, now: float,
                        min_lease: float | None) -> dict[str, Any]:
        rows = self._db.execute(self._q["submit_refusal"],
                                {"id": token.job_id, "token": token.token, "now": now}
                                ).fetchall()
        return short_lease(rows[0]["lease_left"] if rows else None, min_lease)

    def record_submitted(self, token: ClaimToken, provider_job_id: str, now: float) -> bool:
        with self._write():
            self._refuse_recorded_render(token.job_id, provider_job_id)
            return self._fenced("fenced_record_submitted", "submitted", token, now,
                                {"provider_job_id": provider_job_id},
                                provider_job_id=provider_job_id)

    def mark_completed(
        self, token: ClaimToken, *, size: int, sha256: str, cost: float | None, now: float
    ) -> bool:
        with self._write():
            row = self._fenced_row("fenced_mark_completed", "completed", token, now,
                                   {"size": size, "sha256": sha256, "cost": cost},
                                   size=size, sha256=sha256, cost=cost, host=self.host)
            if row is None:
                return False
            if cost is not None:
                # The provider's reported cost corrects the price its intent wrote.
                difference = float(cost) - (price_of(_loads(row["metadata"])) or 0.0)
                if abs(difference) > SLACK:
                    self._ledger(SPEND_EVENT, now, job_id=token.job_id,
                                 account=row["account"], claim_token=token.token,
                                 detail={"usd": round(difference, 6),
                                         "reported_cost": cost})
            return True

    # -- audit -------------------------------------------------------------------------
    def ledger(self, job_id: int | None = None, limit: int | None = None) -> list[LedgerEntry]:
        rows = (self._read("ledger_for_job", job_id=job_id) if job_id is not None
                else self._read("ledger_all"))
        entries = [ledger_from_row(r) for r in rows]
        return entries[-limit:] if limit else entries

    def doctor_queries(self, instance_alive: bool) -> dict[str, list[Any]]:
        results: dict[str, list[Any]] = {
            "completed_twice": [tuple(r) for r in self._read("doctor_completed_twice")],
            "over_capacity": [tuple(r) for r in self._read("doctor_over_capacity")],
        }
        results["live_claims_after_exit"] = (
            [] if instance_alive else [tuple(r) for r in self._read("doctor_live_claims")]
        )
        with self._lock:
            check = self._db.execute(self._q["quick_check"]).fetchone()[0]
        results["integrity"] = [] if check == "ok" else [check]
        return results

    # -- used by tests and benchmarks --------------------------------------------------
    def raw_connection(self) -> sqlite3.Connection:
        return self._db


def _eligible(account: Account, now: float) -> bool:
    if not account.enabled:
        return False
    if account.cooldown_until is not None and account.cooldown_until > now:
        return False
    return account.status in (AccountStatus.READY, AccountStatus.RATE_LIMITED)


def _refuse_foreign_file(path: Path) -> None:
    if path.is_dir():
        raise JournalCorrupt(f"{path} is a folder, not a journal file.")
    if not path.exists() or path.stat().st_size == 0:
        return
    with path.open("rb") as handle:
        head = handle.read(len(_SQLITE_MAGIC))
    if head != _SQLITE_MAGIC:
        raise JournalCorrupt(
            f"{path} is not a ReelQueue journal (not an SQLite file). It was left "
            "untouched; move it away or choose another --data-dir."
        )


def _split_sql(script: str) -> list[str]:
    """Split a schema script into statements (trigger bodies kept whole)."""
    statements: list[str] = []
    buffer: list[str] = []
    for line in script.splitlines():
        stripped = line.strip()
        if stripped.startswith("--") or not stripped:
            continue
        buffer.append(line)
        candidate = "\n".join(buffer)
        if stripped.endswith(";") and sqlite3.complete_statement(candidate):
            statements.append(candidate)
            buffer = []
    if buffer and "".join(buffer).strip():
        statements.append("\n".join(buffer))
    return statements


__all__ = ["SCHEMA_VERSION", "SqliteStore"]
