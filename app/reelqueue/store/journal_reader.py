"""Reads of the journal that the HTTP API needs and the Store contract does not have: a
job by its key, jobs after a cursor, ledger entries after a sequence number.

Its own read connection (WAL: it never waits on the engine's writes and never blocks
them), used from one thread at a time behind a lock. SQLite journals only.
"""

from __future__ import annotations

import json
import os
import sqlite3
import threading
from collections.abc import Iterable, Sequence
from pathlib import Path

from reelqueue.domain.models import Job, LedgerEntry
from reelqueue.store.queries import named_queries
from reelqueue.store.rows import job_from_row, ledger_from_row


class JournalReader:
    def __init__(self, journal: Path, *, busy_timeout_ms: int = 10_000) -> None:
        self._path = journal
        self._db = sqlite3.connect(str(journal), isolation_level=None,
                                   timeout=busy_timeout_ms / 1000, check_same_thread=False)
        self._db.row_factory = sqlite3.Row
        self._q = named_queries()
        self._db.execute(self._q["set_busy_timeout"].format(ms=int(busy_timeout_ms)))
        self._db.execute(self._q["query_only_on"])
        self._lock = threading.Lock()
        # The health check's own connection: it never waits behind a long listing read
        # (a listing of rows rewritten with 50 MB values takes seconds on SQLite).
        self._health_db = sqlite3.connect(str(journal), isolation_level=None,
                                          timeout=busy_timeout_ms / 1000,
                                          check_same_thread=False)
        self._health_db.execute(self._q["set_busy_timeout"].format(ms=int(busy_timeout_ms)))
        self._health_db.execute(self._q["query_only_on"])
        self._health_lock = threading.Lock()

    def close(self) -> None:
        self._db.close()
        self._health_db.close()

    def job_by_key(self, job_key: str) -> Job | None:
        with self._lock:
            row = self._db.execute(self._q["reader_job_by_key"],
                                   {"job_key": job_key}).fetchone()
        return None if row is None else job_from_row(row)

    def existing_keys(self, keys: Iterable[str]) -> set[str]:
        """Which of ``keys`` the journal has."""
        wanted = list(keys)
        if not wanted:
            return set()
        with self._lock:
            rows = self._db.execute(self._q["present_job_keys"],
                                    {"keys": json.dumps(wanted)}).fetchall()
        return {row[0] for row in rows}

    def jobs_after(self, after_id: int, limit: int, *, batch_id: int | None = None,
                   states: Sequence[str] = ()) -> list[Job]:
        """Jobs with an id above ``after_id``, by id (keyset pagination)."""
        query = "reader_jobs_after" if batch_id is None else "reader_jobs_after_of_batch"
        args = {"after_id": after_id, "batch_id": batch_id, "limit": limit,
                "any_state": not states, "states": json.dumps(list(states))}
        with self._lock:
            rows = self._db.execute(self._q[query], args).fetchall()
        return [job_from_row(row) for row in rows]

    def ledger_after(self, seq: int, limit: int) -> list[LedgerEntry]:
        """Ledger entries about a job or an account with a sequence number above ``seq``."""
        with self._lock:
            rows = self._db.execute(self._q["reader_ledger_after"],
                                    {"seq": seq, "limit": limit}).fetchall()
        return [ledger_from_row(row) for row in rows]

    def writable(self) -> str:
        """"writable", "read-only" (file or folder cannot be written) or "unreadable".
        On the health check's own connection."""
        with self._health_lock:
            self._health_db.execute(self._q["reader_last_ledger_seq"]).fetchone()
        ok = os.access(self._path, os.W_OK) and os.access(self._path.parent, os.W_OK)
        return "writable" if ok else "read-only"

    def last_ledger_seq(self) -> int:
        with self._lock:
            row = self._db.execute(self._q["reader_last_ledger_seq"]).fetchone()
        return int(row[0])
