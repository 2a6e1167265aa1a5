"""The journal in memory: the same rules as the SQLite journal, because they are its rules.

Most engine tests and the demo's throwaway runs use a store that nothing outlives. It
used to be a second implementation of the contract (1,176 lines of Python restating each
SQL statement's rule, kept honest by the contract suites); issue 36 item 4 asked for one
copy of the rules. :class:`MemoryStore` is now :class:`~reelqueue.store.sqlite.SqliteStore`
(that is, :class:`~reelqueue.store.sql_journal.SqlJournal` and its named statements) on a
private in-memory SQLite database: no file, no WAL and no fsync, nothing left behind.

Each store starts as a copy of one migrated empty journal built once per process (SQLite's
backup of a few pages), so a test pays for the schema once, not per store.
"""

from __future__ import annotations

import functools
import sqlite3
import threading
from pathlib import Path

from reelqueue.store.sqlite import SqliteStore

MEMORY = Path(":memory:")
"""What a memory store names as its file in an error ("… in :memory:")."""

_template_lock = threading.Lock()


@functools.cache
def _empty_journal() -> sqlite3.Connection:
    """An empty journal at the current schema, built on the first call of the process."""
    db = _connect()
    SqliteStore(db, MEMORY)._migrate(0.0)  # version 0: the schema, no ledger entry
    return db


def _connect() -> sqlite3.Connection:
    db = sqlite3.connect(":memory:", isolation_level=None, check_same_thread=False)
    db.row_factory = sqlite3.Row
    return db


class MemoryStore(SqliteStore):
    """A private journal in memory with the SQLite journal's contract and code.

    Writes are as atomic as the file journal's; "durable" means nothing here, so the
    connection's ``synchronous`` is never switched.
    """

    def __init__(self) -> None:
        db = _connect()
        template = _empty_journal()
        with _template_lock:
            template.backup(db)
        super().__init__(db, MEMORY)
        self._db.execute(self._q["foreign_keys_on"])

    def _set_synchronous(self, full: bool) -> None:
        self._synchronous_full = full  # no file: nothing to sync


__all__ = ["MemoryStore"]
