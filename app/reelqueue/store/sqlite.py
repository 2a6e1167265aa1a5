"""The SQLite journal: the embedded default store.

Durability settings (DESIGN.md invariant 1, issue 2): WAL, ``synchronous=FULL`` (a recorded
provider job id or completion survives a power cut), a busy timeout, and ``BEGIN IMMEDIATE``
for every write so a read-then-update holds the write lock throughout. The file is created
``0600``. A file that is not a ReelQueue journal is refused and left untouched; an older
journal is copied (``journal.sqlite3.bak-vN``) before it is migrated.

The journal's policy is :class:`~reelqueue.store.sql_journal.SqlJournal`'s; this module is
its driver: the connection, its transactions and their durability, error mapping
(``sqlite_support.py``) and the bulk import (``sqlite_import.py``).
"""

from __future__ import annotations

import functools
import logging
import os
import sqlite3
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import Any, TypeVar, cast

from reelqueue.domain.errors import JournalCorrupt, JournalError
from reelqueue.domain.models import Batch, Claim, JobSpec
from reelqueue.store.base import ClaimParams, this_host
from reelqueue.store.queries import migration_sql, named_queries, schema_sql
from reelqueue.store.rows import account_from_row, batch_from_row, job_from_row, ledger_from_row
from reelqueue.store.sql_journal import (
    CLAIM_IN_STEPS,
    FencedWrite,
    RowReaders,
    SqlJournal,
    public_methods,
)
from reelqueue.store.sqlite_import import existing_keys, insert_jobs, present_job_keys
from reelqueue.store.sqlite_support import (
    _dumps,
    _known_error,
    _loads,
    _refuse_foreign_file,
    _split_sql,
)

log = logging.getLogger(__name__)

SCHEMA_VERSION = 16
APPLICATION_ID = 0x52515545  # "RQUE": marks the file as a ReelQueue journal
MIN_SQLITE = (3, 35, 0)
"""RETURNING (3.35): a fenced update answers the row it changed (issue 20)."""


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
        #: during :meth:`write_group`, whether its commit is durable (None: no group open)
        self._group_durable: bool | None = None
        #: ``PRAGMA data_version`` at the last :meth:`changed_elsewhere` (None: not yet)
        self._data_version: int | None = None
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
                if durable and self._group_durable is False:
                    # A group opened without fsync cannot hold a write that needs one: it
                    # is refused (its savepoint rolled back) rather than left undurable.
                    raise JournalError("A durable write was sent in a group committed "
                                       "without fsync; it was not recorded.")
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

    def write_group(self, writes: Sequence[Callable[[], Any]], *, durable: bool
                    ) -> list[Any]:
        """Group commit: ``writes`` (each one store operation, called with no argument) in
        one ``BEGIN IMMEDIATE`` ... ``COMMIT``, each under its own ``SAVEPOINT``.

        Answers one entry per write, in order: its result, or the exception it raised (its
        savepoint rolled back, the others kept). The whole group is committed once, with an
        fsync if ``durable`` (``synchronous`` cannot change inside a transaction, so the
        caller says beforehand whether any write of the group must be durable). Raises, and
        so fails every write of the group, when the transaction cannot be opened or
        committed, or when SQLite itself rolled it back (SQLITE_FULL, an I/O error): no
        caller may then believe its write is in the journal.
        """
        with self._lock:
            if self._db.in_transaction:
                raise JournalError("A group commit cannot start inside an open transaction.")
            self._group_durable = durable
            try:
                with self._write(durable=durable):  # its BEGIN, COMMIT and rollbacks
                    return [self._group_item(write) for write in writes]
            finally:
                self._group_durable = None

    def _group_item(self, write: Callable[[], Any]) -> Any:
        """One write of :meth:`write_group` under its savepoint: its answer, or the
        exception it raised once its savepoint is rolled back."""
        self._db.execute(self._q["savepoint_group_item"])
        try:
            answer = write()
        except Exception as exc:
            if not self._db.in_transaction:
                # SQLite rolled the whole transaction back: the writes before are gone too.
                raise JournalError(
                    "The journal undid a group of writes after an error; none of them was "
                    "recorded.") from exc
            self._db.execute(self._q["rollback_to_group_item"])
            self._db.execute(self._q["release_group_item"])
            return exc
        self._db.execute(self._q["release_group_item"])
        return answer

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

    def _ids_sql(self, sql: str, /, **params: Any) -> list[int]:
        with self._lock:
            try:
                return [row[0] for row in self._db.execute(sql, params)]
            except sqlite3.Error as exc:
                raise _known_error(exc, self.path) from exc

    def _json(self, value: Any) -> str:
        return _dumps(value)

    def _list(self, values: Iterable[Any]) -> str:
        return _dumps(list(values))

    ROWS = RowReaders(job_from_row, batch_from_row, account_from_row, ledger_from_row,
                      values=tuple, json=_loads)
    DOCTOR_CLAIM_CHECKS = (("live_claims_after_exit", "doctor_live_claims", False),)
    INTEGRITY_CHECK = "quick_check"
    JSON_CHECK = "doctor_json_damaged"

    def _lock_batch(self, batch_id: int) -> None:
        """Nothing: the claim's BEGIN IMMEDIATE already holds the file's write lock."""

    def _ledger(
        self, event: str, now: float, *, job_id: int | None = None, account: str | None = None,
        claim_token: str | None = None, detail: dict[str, Any] | None = None,
    ) -> None:
        self._db.execute(self._q["insert_ledger"], {
            "now": now, "event": event, "job_id": job_id, "account": account,
            "claim_token": claim_token, "detail": _dumps(detail) if detail else "{}"})

    def _fenced_write(self, write: FencedWrite, steps: Callable[[], sqlite3.Row | None]
                      ) -> sqlite3.Row | None:
        # The steps in one BEGIN IMMEDIATE transaction; the commit is local, never
        # unanswered, so nothing is read back (``write.written`` is not needed).
        with self._write(durable=write.durable):
            return steps()

    # -- batches and jobs --------------------------------------------------------------
    ADD_JOBS_PER_INSERT = 100
    """Jobs per INSERT statement in :meth:`add_jobs` (fewer if SQLite allows fewer
    variables). Each execution of a statement opens cursors on the table and its seven
    indexes (and on batches, for the foreign key), and before schema 12 it built the
    lookup tables of the CHECK constraints' IN lists: with one job per statement, that
    set-up made a 100,000-job insert take 2.1 s instead of 1.6 s (schema 11)."""

    ADD_JOBS_CACHE_KIB = 32_768
    """The most page cache :meth:`add_jobs` asks for (KiB), at about 1 KiB per job."""

    def _insert_jobs(self, batch: Batch, specs: Sequence[JobSpec], now: float) -> list[int]:
        return insert_jobs(self._db, self._q, batch, specs, now,
                           per_insert=self.ADD_JOBS_PER_INSERT,
                           cache_kib=self.ADD_JOBS_CACHE_KIB)

    def _lock_queue(self) -> None:
        """Nothing: the import's BEGIN IMMEDIATE already holds the file's write lock."""

    def _present_job_keys(self, keys: Sequence[str]) -> set[str]:
        return present_job_keys(self._db, self._q, keys)

    def existing_job_keys(self, keys: Iterable[str]) -> set[str]:
        with self._lock:
            return existing_keys(self._db, self._q, list(keys))

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
    def _claim_at_once(self, params: ClaimParams, token: str) -> object:
        return CLAIM_IN_STEPS  # one write transaction is the claim's way

    def _claim_in_steps(self, params: ClaimParams, token: str) -> Claim | None:
        # Not fsynced: a claim lost in a power cut leaves the job queued, and nothing was
        # sent yet; the submission intent that follows is durable and syncs it too.
        with self._write(durable=False):
            return self._claim_steps(params, token, [])

    def _claim_room(self, account_row: sqlite3.Row, params: ClaimParams) -> sqlite3.Row:
        # claim_account read the live renders and the cool-down with the account, inside
        # the claim's write transaction: two processes on one journal can never both take
        # the last slot.
        return account_row

    def server_time(self) -> float | None:
        return None  # one machine: the caller's clock decides

    def changed_elsewhere(self) -> bool:
        """``PRAGMA data_version`` moves when a connection other than this store's own
        committed (another process, or another connection of this one: the window's, the
        API's); never for this store's own writes. One read of the WAL index, no I/O."""
        with self._lock:
            version = int(self._db.execute(self._q["data_version"]).fetchone()[0])
            seen, self._data_version = self._data_version, version
        return seen is not None and seen != version

    # -- used by tests and benchmarks --------------------------------------------------
    def raw_connection(self) -> sqlite3.Connection:
        return self._db


__all__ = ["SCHEMA_VERSION", "SqliteStore"]
