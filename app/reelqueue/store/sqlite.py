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
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar, cast

from reelqueue.domain.errors import (
    InputError,
    JournalBug,
    JournalBusy,
    JournalCorrupt,
    JournalError,
    JournalFull,
    JournalReadOnly,
    RenderAlreadyRecorded,
)
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
    short_lease,
    this_host,
)
from reelqueue.store.queries import migration_sql, named_queries, schema_sql
from reelqueue.store.queue_limit import check_queue_room
from reelqueue.store.recovery_plan import (
    RecoveryAction,
    failure_of,
    plan_recovery,
    record_applied,
    requeued_detail,
)
from reelqueue.store.rows import account_from_row, batch_from_row, job_from_row, ledger_from_row
from reelqueue.store.spend import (
    SLACK,
    SPEND_EVENT,
    AccountSpend,
    BatchSpend,
    SpendSummary,
    cap_of,
    price_of,
    refusal,
)

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
    for name, value in list(vars(cls).items()):
        if name.startswith("_") or name in ("close", "raw_connection"):
            continue
        if callable(value) and not isinstance(value, classmethod | staticmethod):
            setattr(cls, name, _mapped(value))
    return cls


@_errors_mapped
class SqliteStore:
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

    # -- batches and jobs --------------------------------------------------------------
    def create_batch(self, spec: BatchSpec, now: float) -> Batch:
        with self._write():
            cursor = self._db.execute(self._q["insert_batch"], {
                "name": spec.name, "source_path": spec.source_path,
                "output_dir": spec.output_dir, "max_attempts": spec.max_attempts,
                "settings": _dumps(spec.settings), "now": now,
            })
            batch_id = int(cursor.lastrowid or 0)
            self._ledger("batch_created", now, detail={"batch_id": batch_id, "name": spec.name})
        batch = self.get_batch(batch_id)
        assert batch is not None
        return batch

    def get_batch(self, batch_id: int) -> Batch | None:
        rows = self._read("get_batch", id=batch_id)
        return batch_from_row(rows[0]) if rows else None

    def list_batches(self) -> list[Batch]:
        return [batch_from_row(r) for r in self._read("list_batches")]

    ADD_JOBS_PER_INSERT = 100
    """Jobs per INSERT statement in :meth:`add_jobs` (fewer if SQLite allows fewer
    variables). Each execution of a statement opens cursors on the table and its seven
    indexes (and on batches, for the foreign key) and builds the lookup tables of the
    CHECK constraints' IN lists: with one job per statement, that set-up made a
    100,000-job insert take 2.1 s instead of 1.6 s."""

    def add_jobs(
        self, batch_id: int, specs: Sequence[JobSpec], now: float,
        max_waiting: int | None = None,
    ) -> AddJobsResult:
        batch = self.get_batch(batch_id)
        if batch is None:
            raise InputError(f"There is no batch {batch_id}.")
        with self._write():
            present = self._present_job_keys([s.job_key for s in specs])
            # Repeated keys inside one import count once.
            unique: dict[str, JobSpec] = {}
            for spec in specs:
                if spec.job_key not in present:
                    unique.setdefault(spec.job_key, spec)
            if max_waiting is not None:
                waiting = self._db.execute(self._q["count_waiting"]).fetchone()[0]
                check_queue_room(waiting, len(unique), max_waiting)
            first_id = self._db.execute(self._q["next_job_id"]).fetchone()[0]
            # Rows are made as they are inserted, never all at once; the encoder is _dumps's.
            encode = _ENCODE
            attempts = batch.max_attempts
            with self._page_cache_for(len(unique)):
                self._insert_job_rows(
                    (batch_id, s.job_key, s.row_number, s.name, s.prompt, s.provider,
                     encode(s.params), s.pinned_account, s.priority, s.output_path, attempts,
                     now, now, encode(s.metadata))
                    for s in unique.values()
                )
            ids = self._inserted_ids(first_id, list(unique))
            self._ledger("imported", now, detail={
                "batch_id": batch_id, "added": len(unique),
                "already_present": len(specs) - len(unique),
            })
        return AddJobsResult(added=len(unique), already_present=len(specs) - len(unique),
                             job_ids=tuple(ids))

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

    def get_job(self, job_id: int) -> Job | None:
        rows = self._read("get_job", id=job_id)
        return job_from_row(rows[0]) if rows else None

    def list_jobs(
        self, batch_id: int | None = None, states: Iterable[JobState] | None = None,
        limit: int | None = None, offset: int = 0,
    ) -> list[Job]:
        query = "list_jobs" + ("" if batch_id is None else "_of_batch") + (
            "" if states is None else "_in_states")
        args = {"batch_id": batch_id, "limit": -1 if limit is None else limit,
                "offset": offset if limit is not None else 0,
                "states": None if states is None else json.dumps([str(s) for s in states])}
        with self._lock:
            return [job_from_row(r) for r in self._db.execute(self._q[query], args)]

    def job_ids_ordered(
        self, order: str, descending: bool = False, limit: int | None = None, offset: int = 0,
    ) -> list[int]:
        if order not in JOB_ORDERS:
            raise ValueError(f"unknown job order {order!r}; one of {', '.join(JOB_ORDERS)}")
        # The key is a named expression from queries.sql, picked from a fixed list.
        sql = self._q["job_ids_ordered"].format(key=self._q[f"job_order_{order}"],
                                                direction="DESC" if descending else "ASC")
        params = {"limit": -1 if limit is None else limit, "offset": offset}
        with self._lock:
            try:
                return [r[0] for r in self._db.execute(sql, params)]
            except sqlite3.Error as exc:
                raise _known_error(exc, self.path) from exc

    def count_waiting(self) -> int:
        return int(self._read("count_waiting")[0][0])

    def counts(self) -> Counts:
        by_state = {r[0]: r[1] for r in self._read("counts_by_state")}
        live = {r[0]: r[1] for r in self._read("live_by_account")}
        return Counts(by_state=by_state, live_by_account=live)

    # -- accounts ----------------------------------------------------------------------
    def add_account(self, spec: AccountSpec, now: float) -> Account:
        with self._write():
            if self._db.execute(self._q["get_account"], {"name": spec.name}).fetchone():
                raise InputError(f"An account named {spec.name!r} already exists.")
            self._exec("insert_account", name=spec.name, provider=spec.provider,
                       capacity=spec.capacity, base_url=spec.base_url, key_ref=spec.key_ref,
                       settings=_dumps(spec.settings), now=now)
            self._ledger("account_added", now, account=spec.name,
                         detail={"provider": spec.provider, "capacity": spec.capacity})
        account = self.get_account(spec.name)
        assert account is not None
        return account

    def get_account(self, name: str) -> Account | None:
        rows = self._read("get_account", name=name)
        return account_from_row(rows[0]) if rows else None

    def list_accounts(self) -> list[Account]:
        return [account_from_row(r) for r in self._read("list_accounts")]

    def remove_account(self, name: str, now: float) -> None:
        with self._write():
            live = self._db.execute(self._q["live_count"], {"account": name}).fetchone()[0]
            if live:
                raise InputError(
                    f"Account {name!r} has {live} renders in flight; wait for them or "
                    "disable the account first."
                )
            if not self._exec("delete_account", name=name):
                raise InputError(f"There is no account named {name!r}.")
            self._ledger("account_removed", now, account=name)

    def update_account(
        self, name: str, now: float, *, capacity: int | None = None,
        enabled: bool | None = None, base_url: str | None = None,
        settings: dict[str, Any] | None = None,
    ) -> Account:
        if capacity is not None and capacity < 1:
            raise InputError("An account's limit must be at least 1.")
        with self._write():
            changed = self._exec("update_account", name=name, capacity=capacity,
                                 enabled=None if enabled is None else int(enabled),
                                 base_url=base_url,
                                 settings=None if settings is None else _dumps(settings))
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
                       cooldown_until=cooldown_until)
            self._ledger("account_status", now, account=name, detail={
                "status": str(status), "detail": detail, "cooldown_until": cooldown_until})

    def live_count(self, account: str) -> int:
        return int(self._read("live_count", account=account)[0][0])

    # -- claims ------------------------------------------------------------------------
    def claim_next_job(self, params: ClaimParams) -> Claim | None:
        # Not fsynced: a claim lost in a power cut leaves the job queued, and nothing was
        # sent yet; the submission intent that follows is durable and syncs it too.
        with self._write(durable=False):
            row = self._db.execute(self._q["claim_account"],
                                   {"name": params.account}).fetchone()
            if row is None:
                return None
            account = account_from_row(row)
            if not _eligible(account, params.now):
                return None
            # The free slots are counted inside the same write transaction as the claim
            # (claim_account reads them with the account), so two processes on one journal
            # can never both take the last slot.
            if row["live"] >= account.capacity:
                return None
            candidate = self._spend_checked_candidate(account, params)
            if candidate is None:
                return None
            token = uuid.uuid4().hex
            claimed = self._db.execute(self._q["claim_job"], {
                "id": candidate["id"], "account": account.name, "token": token,
                "owner": params.instance_id, "lease_until": params.now + params.lease_seconds,
                "now": params.now,
            }).fetchall()
            if not claimed:  # cannot happen under the write lock; kept as a guard
                return None
            job = job_from_row(claimed[0])
            self._ledger("claimed", params.now, job_id=job.id, account=account.name,
                         claim_token=token, detail={"owner": params.instance_id,
                                                    "attempt": job.attempts,
                                                    "resume": job.provider_job_id is not None})
        return Claim(job=job, account=account.name, token=ClaimToken(job.id, token),
                     resumed=job.provider_job_id is not None)

    def _spend_checked_candidate(
        self, account: Account, params: ClaimParams,
    ) -> sqlite3.Row | None:
        """The next claimable job that no spend cap refuses (inside the claim's write
        transaction, so no other process can pass a cap at the same time)."""
        skip: list[int] = []
        creates = True
        account_cap = cap_of(account.settings, "daily_cap")
        # Each refusal steps over one more batch (or stops creates once): however many
        # batches are at their caps, a later one that may spend is reached. The batches
        # are counted only once a cap has refused (the bound of that walk).
        refusals, bound = 0, None
        while True:
            row = self._db.execute(self._q["next_claimable"], {
                "provider": account.provider, "now": params.now, "account": account.name,
                "creates": int(creates), "skip_batches": _dumps(skip) if skip else "[]",
            }).fetchone()
            if row is None:
                return None
            batch_cap = row["max_spend"] if isinstance(row["max_spend"], int | float) else None
            refused = refusal(
                needs_create=row["provider_job_id"] is None and row["client_token"] is None,
                price=row["price"] if isinstance(row["price"], int | float) else None,
                batch_cap=None if batch_cap is None else float(batch_cap),
                batch_committed=functools.partial(self._batch_committed, int(row["batch_id"])),
                account_cap=account_cap,
                account_committed=functools.partial(self._account_committed, account.name,
                                                    params.day_start),
            )
            if refused is None:
                return cast(sqlite3.Row, row)
            if refused.scope == "account":
                creates = False
            else:
                skip.append(int(row["batch_id"]))
            refusals += 1
            if bound is None:
                bound = self._db.execute(self._q["count_batches"]).fetchone()[0] + 2
            if refusals >= bound:
                return None

    def _batch_committed(self, batch_id: int) -> float:
        spent = self._db.execute(self._q["spend_of_batch"], {"batch": batch_id}).fetchone()[0]
        reserved = self._db.execute(self._q["reserved_of_batch"],
                                    {"batch": batch_id}).fetchone()[0]
        return float(spent) + float(reserved)

    def _account_committed(self, account: str, day_start: float) -> float:
        spent = self._db.execute(self._q["spend_of_account"],
                                 {"account": account, "day_start": day_start}).fetchone()[0]
        reserved = self._db.execute(self._q["reserved_of_account"],
                                    {"account": account}).fetchone()[0]
        return float(spent) + float(reserved)

    def spend_summary(self, now: float, day_start: float) -> SpendSummary:
        with self._lock:
            batches: list[BatchSpend] = []
            for row in self._db.execute(self._q["capped_batches"]).fetchall():
                if not isinstance(row["max_spend"], int | float):
                    continue
                cap = float(row["max_spend"])
                spent = float(self._db.execute(self._q["spend_of_batch"],
                                               {"batch": row["id"]}).fetchone()[0])
                reserved = float(self._db.execute(self._q["reserved_of_batch"],
                                                  {"batch": row["id"]}).fetchone()[0])
                waiting = int(self._db.execute(self._q["waiting_creates_of_batch"], {
                    "batch": row["id"], "room": cap - spent - reserved + SLACK}).fetchone()[0])
                batch = self.get_batch(int(row["id"]))
                batches.append(BatchSpend(int(row["id"]), batch.name if batch else "",
                                          spent, reserved, cap, waiting))
            accounts: list[AccountSpend] = []
            for account in self.list_accounts():
                acap = cap_of(account.settings, "daily_cap")
                spent = float(self._db.execute(self._q["spend_of_account"], {
                    "account": account.name, "day_start": day_start}).fetchone()[0])
                reserved = float(self._db.execute(self._q["reserved_of_account"],
                                                  {"account": account.name}).fetchone()[0])
                waiting = 0 if acap is None else int(self._db.execute(
                    self._q["waiting_creates_of_account"], {
                        "account": account.name, "provider": account.provider,
                        "room": acap - spent - reserved + SLACK}).fetchone()[0])
                accounts.append(AccountSpend(account.name, spent, reserved, acap, waiting))
        return SpendSummary(tuple(batches), tuple(accounts))

    def update_batch_settings(
        self, batch_id: int, patch: dict[str, Any], now: float,
    ) -> Batch | None:
        with self._write():
            if not self._exec("update_batch_settings", id=batch_id, patch=_dumps(patch)):
                return None
            self._ledger("batch_changed", now, detail={"batch_id": batch_id, **patch})
        return self.get_batch(batch_id)

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

    def _refuse_recorded_render(self, job_id: int, provider_job_id: str) -> None:
        """RenderAlreadyRecorded when another job of this job's provider holds the render
        (inside the caller's write transaction; the unique index jobs_render_once is the
        last word)."""
        row = self._db.execute(self._q["render_holder"], {
            "id": job_id, "provider_job_id": provider_job_id}).fetchone()
        if row is not None:
            raise RenderAlreadyRecorded(
                f"Render {provider_job_id} is already recorded for job {row[0]}; a render "
                "goes to at most one job.")

    def forget_submission(self, token: ClaimToken, now: float, detail: dict[str, Any],
                          event: str = "reconciled_absent") -> bool:
        return self._fenced("fenced_forget_submission", event, token, now, detail)

    def unresolved_submissions(self, account: str) -> list[tuple[Job, float | None]]:
        return [(job_from_row(r), r["intent_at"])
                for r in self._read("unresolved_submissions", account=account)]

    def known_provider_job_ids(self, provider: str, account: str,
                               ids: Sequence[str]) -> set[str]:
        if not ids:
            return set()
        return {r[0] for r in self._read("known_provider_job_ids", provider=provider,
                                          account=account, ids=json.dumps(list(ids)))}

    def attach_render(self, job_id: int, provider_job_id: str, now: float) -> bool:
        with self._write():
            self._refuse_recorded_render(job_id, provider_job_id)
            row = self._db.execute(self._q["get_job"], {"id": job_id}).fetchone()
            if row is None or not self._exec("attach_render", id=job_id, now=now,
                                             provider_job_id=provider_job_id):
                return False
            self._ledger("resolved_by_user", now, job_id=job_id, account=row["account"],
                         detail={"provider_job_id": provider_job_id, "from": row["state"],
                                 "client_token": row["client_token"]})
            return True

    def mark_rendering(self, token: ClaimToken, now: float) -> bool:
        return self._fenced("fenced_mark_rendering", "resumed", token, now)

    def record_progress(
        self, token: ClaimToken, sub_status: str, progress: float | None, now: float
    ) -> bool:
        return self._fenced("fenced_record_progress", "remote_status", token, now,
                            {"sub_status": sub_status}, durable=False,
                            sub_status=sub_status, progress=progress)

    def mark_downloading(self, token: ClaimToken, now: float, *,
                         output_path: str | None = None, part: str | None = None) -> bool:
        return self._fenced("fenced_mark_downloading", "downloading", token, now,
                            downloading_detail(output_path, part), durable=False,
                            output_path=output_path, part=part)

    def record_download(self, token: ClaimToken, *, size: int, sha256: str,
                        now: float) -> bool:
        # Not fsynced (docs/design-notes.md, refinements 8 and 14): a process that dies
        # keeps it; only a power cut before the next durable commit loses it, and then the
        # render is read again beside the unrecorded file, never created again.
        return self._fenced("fenced_record_download", "downloaded", token, now,
                            {"size": size, "sha256": sha256}, durable=False,
                            size=size, sha256=sha256)

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

    def set_retry_wait(
        self, token: ClaimToken, error: JobError, run_after: float, now: float, *,
        keep_provider_job: bool,
    ) -> bool:
        return self._fenced(
            "fenced_set_retry_wait", "retry_wait", token, now,
            {"error_class": error.error_class, "label": error.label,
             "message": error.message, "run_after": run_after,
             "keeps_render": keep_provider_job},
            run_after=run_after, keep=int(keep_provider_job), error_class=error.error_class,
            error_label=error.label, error_message=error.message,
        )

    def release_to_queue(
        self, token: ClaimToken, error: JobError, now: float, *,
        run_after: float | None = None, keep_submission: bool = False,
    ) -> bool:
        return self._fenced(
            "fenced_release_to_queue", "released", token, now,
            {"error_class": error.error_class, "label": error.label, "message": error.message,
             **({"keeps_submission": True} if keep_submission else {})},
            run_after=run_after or 0.0, error_class=error.error_class,
            error_label=error.label, error_message=error.message,
            keep_submission=int(keep_submission),
        )

    def mark_failed(self, token: ClaimToken, error: JobError, now: float, *,
                    drop_render: bool = False) -> bool:
        return self._fenced(
            "fenced_mark_failed", "failed", token, now,
            {"error_class": error.error_class, "label": error.label, "message": error.message,
             **({"dropped_render": True} if drop_render else {})},
            error_class=error.error_class, error_label=error.label,
            error_message=error.message, drop_render=int(drop_render),
        )

    def park_job(self, token: ClaimToken, error: JobError, now: float) -> bool:
        return self._fenced(
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
                row = self._db.execute(self._q["get_job"], {"id": job_id}).fetchone()
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
                row = self._db.execute(self._q["get_job"], {"id": job_id}).fetchone()
                keep = new_seed is None
                if row is not None and self._exec("requeue_job", id=job_id, now=now,
                                                  seed=new_seed, keep=int(keep),
                                                  reconcile=int(reconcile)):
                    done.append(job_id)
                    self._ledger("requeued", now, job_id=job_id,
                                 detail=requeued_detail(row, keep=keep, new_seed=new_seed,
                                                        reconcile=reconcile))
        return done

    def _priority(self, priority: int | None) -> int:
        if priority is not None:
            return int(priority)
        return int(self._db.execute(self._q["front_priority"]).fetchone()[0])

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
            if not self._exec("set_batch_paused", id=batch_id, paused=int(paused)):
                return None
            self._ledger("batch_paused" if paused else "batch_resumed", now,
                         detail={"batch_id": batch_id})
        return self.get_batch(batch_id)

    # -- recovery ----------------------------------------------------------------------
    def recover(self, params: RecoverParams) -> RecoveryReport:
        """Start-up recovery (DESIGN.md invariant 7), applied in one write transaction.

        Output files are looked at (and hashed) before the transaction, so the write lock
        is held only for the updates; each update is conditioned on the claim token it
        saw, so a row that changed meanwhile is left alone.
        """
        query = "in_flight_expired" if params.only_expired else "in_flight_all"
        leftovers = [job_from_row(r) for r in self._read(query, now=params.now)]
        crashes = {job.id: int(self._read("crash_requeues", id=job.id)[0][0])
                   for job in leftovers}
        actions = plan_recovery(leftovers, params, crashes)
        completed = ([job_from_row(r) for r in self._read("completed_jobs")]
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
                report.pruned_ledger_rows = self._exec("prune_ledger",
                                                       before=params.prune_before)
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
                                 lease_until=now + params.lease_seconds, **common)
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

    def completed_outputs(self) -> list[tuple[int, str, int]]:
        return [(r[0], r[1], r[2]) for r in self._read("completed_outputs")]

    def next_wakeup(self, now: float) -> float | None:
        times = [self._read("next_retry_at", now=now)[0][0],
                 self._read("next_cooldown_at", now=now)[0][0]]
        due = [float(t) for t in times if t is not None]
        return min(due) if due else None

    def ledger(self, job_id: int | None = None, limit: int | None = None) -> list[LedgerEntry]:
        rows = (self._read("ledger_for_job", job_id=job_id) if job_id is not None
                else self._read("ledger_all"))
        entries = [ledger_from_row(r) for r in rows]
        return entries[-limit:] if limit else entries

    def ledger_after(self, seq: int, limit: int) -> list[LedgerEntry]:
        return [ledger_from_row(r) for r in self._read("ledger_after", seq=seq, limit=limit)]

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
