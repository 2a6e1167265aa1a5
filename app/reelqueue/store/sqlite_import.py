"""The SQLite journal's bulk import (``SqliteStore.add_jobs``' insert): many jobs per INSERT
statement, their ids known without reading them back, a page cache sized for the import,
and the lookup of the keys already present. Every function runs on the store's connection
inside its write transaction; the statements are the named queries of ``sql/queries.sql``.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from reelqueue.domain.models import Batch, JobSpec
from reelqueue.store.sqlite_support import _ENCODE

Queries = dict[str, str]


def insert_jobs(db: sqlite3.Connection, q: Queries, batch: Batch, specs: Sequence[JobSpec],
                now: float, *, per_insert: int, cache_kib: int) -> list[int]:
    """Insert ``specs`` as jobs of ``batch``, ``per_insert`` per statement; their ids, in
    order."""
    first_id = db.execute(q["next_job_id"]).fetchone()[0]
    # Rows are made as they are inserted, never all at once; the encoder is _dumps's.
    encode = _ENCODE
    batch_id, attempts = batch.id, batch.max_attempts
    with _page_cache_for(db, q, min(len(specs), cache_kib)):
        _insert_job_rows(
            db, q,
            ((batch_id, s.job_key, s.row_number, s.name, s.prompt, s.provider,
              encode(s.params), s.pinned_account, s.priority, s.output_path, attempts,
              now, now, encode(s.metadata), None if s.route is None else s.route.to_json(),
              None if s.route is None else s.route.order_key())
             for s in specs),
            per_insert,
        )
    return _inserted_ids(db, q, first_id, [s.job_key for s in specs])


def present_job_keys(db: sqlite3.Connection, q: Queries, keys: Sequence[str]) -> set[str]:
    """Which of ``keys`` the journal has (inside add_jobs' transaction). An empty
    journal has none; a journal with no more jobs than ``keys`` is read once (one scan
    of the key index) rather than looked up 500 keys at a time."""
    top = db.execute(q["max_job_id"]).fetchone()[0]
    if top is None or not keys:
        return set()
    if top > len(keys):  # ids only grow: MAX(id) bounds the number of jobs
        return existing_keys(db, q, keys)
    wanted = set(keys)
    cursor = db.cursor()
    cursor.row_factory = None
    return {key for (key,) in cursor.execute(q["all_job_keys"]) if key in wanted}


def existing_keys(db: sqlite3.Connection, q: Queries, keys: Sequence[str]) -> set[str]:
    """Which of ``keys`` the journal has, looked up."""
    if not keys:
        return set()
    return {r[0] for r in db.execute(q["present_job_keys"], {"keys": json.dumps(list(keys))})}


@contextmanager
def _page_cache_for(db: sqlite3.Connection, q: Queries, wanted_kib: int) -> Iterator[None]:
    """A page cache big enough for a bulk insert, for its duration. With SQLite's
    default 2 MB, the pages of the job-key index (random keys) are spilled to the WAL
    and read back again and again mid-transaction; what reaches the disk at commit,
    and when, is the same either way."""
    before = int(db.execute(q["cache_size"]).fetchone()[0])
    # A negative cache_size is in KiB; a positive one in pages.
    page_kib = db.execute(q["page_size"]).fetchone()[0] / 1024
    if wanted_kib <= (-before if before < 0 else before * page_kib):
        yield  # already big enough (a small import, or a cache set larger)
        return
    db.execute(q["set_cache_size"].format(value=-int(wanted_kib)))
    try:
        yield
    finally:
        db.execute(q["set_cache_size"].format(value=before))


def _insert_job_rows(db: sqlite3.Connection, q: Queries, rows: Iterable[Sequence[Any]],
                     per_insert: int) -> None:
    """Insert ``rows`` (the values of insert_job, in order), many per statement."""
    head, _, row = q["insert_job"].rpartition("VALUES")
    row = row.strip()
    width = row.count("?")
    per = max(1, min(per_insert, db.getlimit(sqlite3.SQLITE_LIMIT_VARIABLE_NUMBER) // width))
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

    db.executemany(f"{head}VALUES {','.join([row] * per)}", full_statements())
    if rest:
        db.execute(f"{head}VALUES {','.join([row] * (len(rest) // width))}", rest)


def _inserted_ids(db: sqlite3.Connection, q: Queries, first_id: int,
                  keys: Sequence[str]) -> list[int]:
    """The ids of the jobs just inserted, in insertion order. SQLite gives a new row
    MAX(id) + 1, so inside one write transaction they are first_id, first_id + 1...;
    that is checked, and the keys are looked up if it ever does not hold."""
    if not keys:
        return []
    last = first_id + len(keys) - 1
    top, count = db.execute(q["inserted_since"], {"first_id": first_id}).fetchone()
    if top == last and count == len(keys):
        return list(range(first_id, last + 1))
    return [r[0] for r in db.execute(q["ids_for_keys"], {"keys": json.dumps(list(keys))})]


__all__ = ["existing_keys", "insert_jobs", "present_job_keys"]
