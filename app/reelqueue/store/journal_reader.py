"""Reads of the journal that the HTTP API needs and the Store contract does not have: a
job by its key, jobs after a cursor, ledger entries after a sequence number.

Its own read connection (WAL: it never waits on the engine's writes and never blocks
them), used from one thread at a time behind a lock. SQLite journals only.
"""

from __future__ import annotations

import os
import sqlite3
import threading
from collections.abc import Iterable, Sequence
from pathlib import Path

from reelqueue.domain.models import Job, LedgerEntry
from reelqueue.store.rows import job_from_row, ledger_from_row


class JournalReader:
    def __init__(self, journal: Path, *, busy_timeout_ms: int = 10_000) -> None:
        self._path = journal
        self._db = sqlite3.connect(str(journal), isolation_level=None,
                                   timeout=busy_timeout_ms / 1000, check_same_thread=False)
        self._db.row_factory = sqlite3.Row
        self._db.execute(f"PRAGMA busy_timeout = {int(busy_timeout_ms)}")
        self._db.execute("PRAGMA query_only = ON")
        self._lock = threading.Lock()

    def close(self) -> None:
        self._db.close()

    def job_by_key(self, job_key: str) -> Job | None:
        with self._lock:
            row = self._db.execute("SELECT * FROM jobs WHERE job_key = ?",
                                   (job_key,)).fetchone()
        return None if row is None else job_from_row(row)

    def existing_keys(self, keys: Iterable[str]) -> set[str]:
        """Which of ``keys`` the journal has (500 at a time)."""
        wanted = list(keys)
        found: set[str] = set()
        with self._lock:
            for start in range(0, len(wanted), 500):
                chunk = wanted[start:start + 500]
                rows = self._db.execute(
                    f"SELECT job_key FROM jobs WHERE job_key IN ({', '.join('?' * len(chunk))})",
                    chunk).fetchall()
                found.update(row[0] for row in rows)
        return found

    def jobs_after(self, after_id: int, limit: int, *, batch_id: int | None = None,
                   states: Sequence[str] = ()) -> list[Job]:
        """Jobs with an id above ``after_id``, by id (keyset pagination)."""
        sql = "SELECT * FROM jobs WHERE id > ?"
        args: list[object] = [after_id]
        if batch_id is not None:
            sql += " AND batch_id = ?"
            args.append(batch_id)
        if states:
            sql += f" AND state IN ({', '.join('?' for _ in states)})"
            args.extend(states)
        sql += " ORDER BY id LIMIT ?"
        args.append(limit)
        with self._lock:
            rows = self._db.execute(sql, args).fetchall()
        return [job_from_row(row) for row in rows]

    def ledger_after(self, seq: int, limit: int) -> list[LedgerEntry]:
        """Ledger entries about a job or an account with a sequence number above ``seq``."""
        with self._lock:
            rows = self._db.execute(
                "SELECT * FROM ledger WHERE seq > ? AND (job_id IS NOT NULL OR account IS NOT"
                " NULL) ORDER BY seq LIMIT ?", (seq, limit)).fetchall()
        return [ledger_from_row(row) for row in rows]

    def writable(self) -> str:
        """"writable", "read-only" (file or folder cannot be written) or "unreadable"."""
        self.last_ledger_seq()
        ok = os.access(self._path, os.W_OK) and os.access(self._path.parent, os.W_OK)
        return "writable" if ok else "read-only"

    def last_ledger_seq(self) -> int:
        with self._lock:
            row = self._db.execute("SELECT COALESCE(MAX(seq), 0) FROM ledger").fetchone()
        return int(row[0])
