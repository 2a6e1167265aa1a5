"""Schema 12 writes the jobs table's CHECK constraints as "=" tests joined by OR instead of
IN lists (an IN list of more than two constants is a lookup table SQLite builds on every
check: issue 20, docs/benchmarks.md). The constraints must accept and refuse exactly the
rows schema 11's did, and a schema-11 journal with jobs in it must come through the
rebuild whole."""

from __future__ import annotations

import itertools
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from reelqueue.domain.states import JobState
from reelqueue.store.queries import migration_sql
from reelqueue.store.sqlite import APPLICATION_ID, SCHEMA_VERSION, SqliteStore, _split_sql

pytestmark = pytest.mark.unit

V11 = 11


def make_journal(path: Path, version: int) -> None:
    """A journal at ``version`` made by the migrations, as an older ReelQueue left it."""
    db = sqlite3.connect(path)
    for step in range(1, version + 1):
        for statement in _split_sql(migration_sql(step)):
            db.execute(statement)
    db.execute(f"PRAGMA application_id = {APPLICATION_ID}")
    db.execute(f"PRAGMA user_version = {version}")
    db.execute("INSERT INTO batches (name, source_path, output_dir, created_at) "
               "VALUES ('b', 's.csv', 'b', 1)")
    db.commit()
    db.close()


def jobs_sql(path: Path) -> str:
    db = sqlite3.connect(path)
    try:
        return str(db.execute("SELECT sql FROM sqlite_master WHERE name = 'jobs'").fetchone()[0])
    finally:
        db.close()


STATES = [str(s) for s in JobState]
ERROR_CLASSES = ["retryable", "permanent", "account", "unknown"]

COLUMNS = ("state", "error_class", "finished_at", "claim_token", "lease_owner", "lease_until",
           "account", "output_size", "output_sha256", "client_token", "provider_job_id")


def grid() -> list[tuple[Any, ...]]:
    """Every state (and values that are not one: other words, another case, empty, NULL,
    a number) with every error class (and NULL, and others), finished or not, each of the
    four claim columns set or NULL, the file recorded or not, with and without a client
    token and a render."""
    states = [*STATES, "DONE", "queued", "", None, 1]
    classes = [*ERROR_CLASSES, "Retryable", "other", "", None]
    rows = []
    for (state, error_class, finished, token, owner, until, account, output,
         client, render) in itertools.product(
            states, classes, (None, 5.0), (None, "t"), (None, "o"), (None, 9.0),
            (None, "a"), (False, True), (None, "ct"), (False, True)):
        rows.append((state, error_class, finished, token, owner, until, account,
                     1 if output else None, "ab" if output else None, client,
                     render))
    return rows


def accepted(db: sqlite3.Connection, rows: list[tuple[Any, ...]]) -> list[bool]:
    insert = (f"INSERT INTO jobs (batch_id, job_key, prompt, provider, output_path, "
              f"created_at, updated_at, {', '.join(COLUMNS)}) "
              f"VALUES (1, ?, 'p', 'mock', 'o', 1, 1, {', '.join('?' * len(COLUMNS))})")
    answers = []
    for n, row in enumerate(rows):
        values = (*row[:-1], f"pj-{n}" if row[-1] else None)
        try:
            db.execute(insert, (f"k{n}", *values))
        except sqlite3.IntegrityError:
            answers.append(False)
        else:
            answers.append(True)
    return answers


def test_the_checks_accept_and_refuse_what_schema_11s_did(tmp_path: Path) -> None:
    old, new = tmp_path / "v11.sqlite3", tmp_path / "new.sqlite3"
    make_journal(old, V11)
    SqliteStore.open(new, now=1).close()
    assert " IN (" in jobs_sql(old) and " IN (" not in jobs_sql(new), "the forms differ"
    rows = grid()
    answers = []
    for path in (old, new):
        db = sqlite3.connect(path, isolation_level=None)
        db.execute("BEGIN")
        if path == new:
            db.execute("INSERT INTO batches (name, source_path, output_dir, created_at) "
                       "VALUES ('b', 's.csv', 'b', 1)")
        answers.append(accepted(db, rows))
        db.execute("ROLLBACK")
        db.close()
    differ = [row for row, a, b in zip(rows, *answers, strict=True) if a != b]
    assert differ == []
    assert 0 < sum(answers[0]) < len(rows), "the grid has rows on both sides"
    # each state is accepted in some row; the non-states never
    kept = {row[0] for row, ok in zip(rows, answers[1], strict=True) if ok}
    assert kept == set(STATES)


def test_a_schema_11_journal_keeps_its_jobs_through_the_rebuild(tmp_path: Path) -> None:
    path = tmp_path / "journal.sqlite3"
    make_journal(path, V11)
    db = sqlite3.connect(path)
    base = ("INSERT INTO jobs (batch_id, job_key, prompt, provider, output_path, created_at, "
            "updated_at, state, finished_at, claim_token, lease_owner, lease_until, account, "
            "client_token, provider_job_id, output_size, output_sha256, error_class, "
            "priority, route, route_order, metadata) "
            "VALUES (1, ?, 'p', 'mock', ?, 1, 2, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)")
    db.executemany(base, [
        ("q", "b/q.mp4", "QUEUED", None, None, None, None, None, None, None, None, None,
         None, 3, None, None, '{"price": 0.5}'),
        ("r", "b/r.mp4", "RENDERING", None, "t", "o", 9.0, "a", "ct", "pj", None, None,
         None, 0, None, None, "{}"),
        ("c", "b/c.mp4", "COMPLETED", 4.0, None, None, None, "a", "ct2", "pj2", 10, "ab",
         None, 0, None, None, "{}"),
        ("w", "b/w.mp4", "RETRY_WAIT", None, None, None, None, None, None, None, None, None,
         "retryable", 1, '{"c": []}', "|mock|", "{}"),
        ("p", "b/p.mp4", "PARKED", None, None, None, None, "a", "ct3", None, None, None,
         "unknown", 0, None, None, "{}"),
    ])
    db.execute("INSERT INTO ledger (at, event, job_id) VALUES (1, 'imported', NULL)")
    db.commit()
    before = db.execute("SELECT * FROM jobs ORDER BY id").fetchall()
    db.close()

    store = SqliteStore.open(path, now=5)
    assert store.migrated_from == V11
    db = store.raw_connection()
    after = [tuple(r) for r in db.execute("SELECT * FROM jobs ORDER BY id")]
    # v16 (issue 35) adds the review columns after them: no decision on an old job
    assert [r[:len(before[0])] for r in after] == before
    assert {r[len(before[0]):] for r in after} == {("none", None, None, None, 0)}
    assert db.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    assert db.execute("PRAGMA foreign_key_check").fetchall() == []
    indexes = {r[0] for r in db.execute(
        "SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'jobs' "
        "AND sql IS NOT NULL")}
    assert indexes == {"jobs_queued", "jobs_retry_due", "jobs_live_by_account",
                       "jobs_by_batch", "jobs_routed", "jobs_by_lease_owner",
                       "jobs_render_once"}
    assert not db.execute("SELECT 1 FROM sqlite_master WHERE name LIKE 'jobs_before%'"
                          ).fetchall()
    # the unique render rule came through: the same render for another job is refused
    with pytest.raises(sqlite3.IntegrityError, match="UNIQUE"):
        db.execute("UPDATE jobs SET account = 'a', client_token = 'x', provider_job_id = 'pj' "
                   "WHERE job_key = 'q'")
    assert [e.event for e in store.ledger()] == ["imported", "migrated"]
    assert store.live_count("a") == 1
    store.close()
    fresh = tmp_path / "fresh.sqlite3"
    SqliteStore.open(fresh, now=1).close()
    assert " ".join(jobs_sql(path).split()) == " ".join(jobs_sql(fresh).split())
