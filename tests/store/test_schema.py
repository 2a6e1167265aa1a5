"""The journal file: fresh schema equals a migrated one, backups, permissions, refusals."""

from __future__ import annotations

import sqlite3
import stat
from collections.abc import Callable
from pathlib import Path

import pytest

from reelqueue.domain.errors import JournalCorrupt, JournalError
from reelqueue.store.queries import migration_sql
from reelqueue.store.sqlite import APPLICATION_ID, SCHEMA_VERSION, SqliteStore, _split_sql
from tests.store.test_check_forms import make_journal

pytestmark = pytest.mark.unit


def schema_of(path: Path) -> list[tuple[str, str, str]]:
    db = sqlite3.connect(path)
    try:
        rows = db.execute("SELECT type, name, sql FROM sqlite_master "
                          "WHERE name NOT LIKE 'sqlite_%' ORDER BY type, name").fetchall()
        return [(t, n, " ".join((s or "").split())) for t, n, s in rows]
    finally:
        db.close()


def make_v1(path: Path) -> None:
    db = sqlite3.connect(path)
    for statement in _split_sql(migration_sql(1)):
        db.execute(statement)
    db.execute(f"PRAGMA application_id = {APPLICATION_ID}")
    db.execute("PRAGMA user_version = 1")
    db.execute("INSERT INTO batches (name, source_path, output_dir, created_at) "
               "VALUES ('old', 's.csv', '/tmp', 1)")
    db.commit()
    db.close()


def test_fresh_schema_equals_a_migrated_one(tmp_path: Path) -> None:
    fresh = tmp_path / "fresh.sqlite3"
    SqliteStore.open(fresh, now=1).close()
    old = tmp_path / "old.sqlite3"
    make_v1(old)
    store = SqliteStore.open(old, now=2)
    assert store.migrated_from == 1
    assert [b.name for b in store.list_batches()] == ["old"], "data survives the migration"
    assert [e.event for e in store.ledger()] == ["migrated"]
    store.close()
    assert schema_of(fresh) == schema_of(old)
    db = sqlite3.connect(old)
    assert db.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    db.close()


def test_the_journal_is_copied_before_migrating(tmp_path: Path) -> None:
    old = tmp_path / "journal.sqlite3"
    make_v1(old)
    SqliteStore.open(old, now=2).close()
    backup = tmp_path / "journal.sqlite3.bak-v1"
    assert backup.exists()
    db = sqlite3.connect(backup)
    assert db.execute("PRAGMA user_version").fetchone()[0] == 1
    assert db.execute("SELECT name FROM batches").fetchall() == [("old",)]
    db.close()
    assert stat.S_IMODE(backup.stat().st_mode) == 0o600


def test_the_journal_is_owner_only_and_durable(tmp_path: Path) -> None:
    path = tmp_path / "journal.sqlite3"
    store = SqliteStore.open(path, now=1)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    db = store.raw_connection()
    assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert db.execute("PRAGMA synchronous").fetchone()[0] == 2  # FULL
    assert db.execute("PRAGMA busy_timeout").fetchone()[0] >= 1000
    store.close()


def test_check_constraints_guard_the_states(tmp_path: Path) -> None:
    store = SqliteStore.open(tmp_path / "j.sqlite3", now=1)
    db = store.raw_connection()
    db.execute("INSERT INTO batches (name, source_path, output_dir, created_at) "
               "VALUES ('b', 's', '/tmp', 1)")
    insert = ("INSERT INTO jobs (batch_id, job_key, prompt, provider, output_path, state, "
              "created_at, updated_at, finished_at) VALUES (1, ?, 'p', 'mock', '/o', ?, 1, 1, ?)")
    with pytest.raises(sqlite3.IntegrityError):
        db.execute(insert, ("a", "DONE", None))  # not a state
    with pytest.raises(sqlite3.IntegrityError):
        db.execute(insert, ("b", "FAILED", None))  # finished without finished_at
    with pytest.raises(sqlite3.IntegrityError):
        db.execute(insert, ("c", "COMPLETED", 5))  # completed without size and hash
    with pytest.raises(sqlite3.IntegrityError):
        db.execute(insert, ("d", "RENDERING", None))  # in flight without a claim
    db.execute(insert, ("e", "QUEUED", None))
    store.close()


def test_the_ledger_is_append_only(tmp_path: Path) -> None:
    store = SqliteStore.open(tmp_path / "j.sqlite3", now=1)
    store.note("something", 1.0)
    with pytest.raises(sqlite3.IntegrityError, match="append-only"):
        store.raw_connection().execute("UPDATE ledger SET event = 'rewritten'")
    assert [e.event for e in store.ledger()] == ["something"]
    store.close()


def test_non_journal_files_are_refused_untouched(tmp_path: Path) -> None:
    text = tmp_path / "text.sqlite3"
    text.write_text("hello")
    with pytest.raises(JournalCorrupt):
        SqliteStore.open(text, now=1)
    assert text.read_text() == "hello"
    folder = tmp_path / "folder.sqlite3"
    folder.mkdir()
    with pytest.raises(JournalCorrupt):
        SqliteStore.open(folder, now=1)


def test_a_journal_from_a_newer_version_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "j.sqlite3"
    SqliteStore.open(path, now=1).close()
    db = sqlite3.connect(path)
    db.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    db.commit()
    db.close()
    with pytest.raises(JournalError, match="newer ReelQueue"):
        SqliteStore.open(path, now=1)


def test_only_recoverable_writes_skip_the_fsync(tmp_path: Path) -> None:
    """Claims, progress, downloading and leases commit without fsync; the submission
    intent, the provider job id and completion always fsync. ``synchronous`` is set only
    when it changes (issue 20), so what is checked is the setting in effect at each COMMIT,
    followed through the PRAGMAs the store runs."""
    from reelqueue.domain.models import AccountSpec, BatchSpec, JobSpec
    from reelqueue.store.base import ClaimParams

    store = SqliteStore.open(tmp_path / "j.sqlite3", now=1)
    db = store.raw_connection()
    assert db.execute("PRAGMA synchronous").fetchone()[0] == 2  # FULL after open
    setting = ["FULL"]
    commits: list[str] = []

    def follow(sql: str) -> None:
        words = " ".join(sql.split()).rstrip(";")
        if words.startswith("PRAGMA synchronous = "):
            setting[0] = words.removeprefix("PRAGMA synchronous = ")
        elif words == "COMMIT":
            commits.append(setting[0])

    db.set_trace_callback(follow)
    batch = store.create_batch(BatchSpec("b", "s", str(tmp_path)), 1)
    store.add_jobs(batch.id, [JobSpec("k", "p", "mock", str(tmp_path / "o.mp4"))], 1)
    store.add_account(AccountSpec("a", "mock", 1), 1)
    assert commits == ["FULL"] * 3, "user commands are durable"

    def committed(write: Callable[[], bool]) -> list[str]:
        commits.clear()
        assert write()
        return list(commits)

    claim = store.claim_next_job(ClaimParams("a", "i", 2, 60))
    assert claim is not None and commits[-1:] == ["NORMAL"], "a claim is not fsynced"
    token = claim.token
    assert committed(lambda: store.mark_submitting(token, "ct", 3)) == ["FULL"]
    assert committed(lambda: store.record_submitted(token, "pj", 3)) == ["FULL"]
    assert committed(lambda: store.record_progress(token, "running", 0.5, 3)) == ["NORMAL"]
    assert committed(lambda: store.mark_downloading(token, 3)) == ["NORMAL"]
    assert committed(lambda: store.record_download(token, size=1, sha256="ab" * 32,
                                                   now=3)) == ["NORMAL"]
    assert committed(lambda: store.mark_completed(token, size=1, sha256="ab" * 32,
                                                  cost=None, now=3)) == ["FULL"]
    assert db.execute("PRAGMA synchronous").fetchone()[0] == 2
    db.set_trace_callback(None)
    store.close()


def test_migrations_keep_the_jobs_and_allow_parked_only_with_a_submission(
    tmp_path: Path
) -> None:
    """Migrations 0004 and 0007 rebuild the jobs table (a CHECK cannot be changed in place):
    PARKED keeps a render or, since 7 (issue 19), an unknown create's client token; a render
    goes to at most one job."""
    old = tmp_path / "old.sqlite3"
    make_v1(old)
    db = sqlite3.connect(old)
    db.execute("INSERT INTO jobs (batch_id, job_key, prompt, provider, output_path, state, "
               "client_token, provider_job_id, created_at, updated_at, finished_at) "
               "VALUES (1, 'k1', 'p', 'mock', '/tmp/k1.mp4', 'FAILED', 'ct', 'pj', 1, 1, 1)")
    db.commit()
    db.close()
    store = SqliteStore.open(old, now=2)
    job = store.get_job(1)
    assert job is not None and job.job_key == "k1" and job.provider_job_id == "pj"
    db = store.raw_connection()
    db.execute("UPDATE jobs SET state = 'PARKED', finished_at = NULL WHERE id = 1")
    db.execute("UPDATE jobs SET provider_job_id = NULL, error_class = 'unknown' WHERE id = 1")
    with pytest.raises(sqlite3.IntegrityError):
        db.execute("UPDATE jobs SET client_token = NULL WHERE id = 1")
    db.execute("UPDATE jobs SET provider_job_id = 'pj', account = 'a' WHERE id = 1")
    db.execute("INSERT INTO jobs (batch_id, job_key, prompt, provider, output_path, state, "
               "account, client_token, provider_job_id, created_at, updated_at, finished_at) "
               "VALUES (1, 'k2', 'p', 'mock', '/tmp/k2.mp4', 'FAILED', 'b', 'ct', 'pj', 1, 1, 1)")
    with pytest.raises(sqlite3.IntegrityError, match="UNIQUE"):
        db.execute("INSERT INTO jobs (batch_id, job_key, prompt, provider, output_path, "
                   "state, account, client_token, provider_job_id, created_at, updated_at, "
                   "finished_at) VALUES (1, 'k3', 'p', 'mock', '/tmp/k3.mp4', 'FAILED', 'a', "
                   "'ct', 'pj', 1, 1, 1)")
    db.rollback()
    store.close()


def test_an_sqlite_without_returning_is_refused_plainly(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The fenced writes use UPDATE ... RETURNING (SQLite 3.35, issue 20): an older SQLite
    is named at open, before any file is made, not met as a syntax error mid-render."""
    monkeypatch.setattr(sqlite3, "sqlite_version_info", (3, 34, 1))
    monkeypatch.setattr(sqlite3, "sqlite_version", "3.34.1")
    with pytest.raises(JournalError, match=r"SQLite is 3\.34\.1.*3\.35\.0 or later"):
        SqliteStore.open(tmp_path / "j.sqlite3", now=1)
    assert not (tmp_path / "j.sqlite3").exists()


def test_the_ledger_rebuilt_by_schema_12_never_gives_a_seq_again(tmp_path: Path) -> None:
    """Schema 12 drops the ledger's AUTOINCREMENT. A schema-11 journal whose newest entries
    were pruned had given seqs above its MAX(seq); the migration keeps the highest given,
    so the next entry comes after every seq a reader may have seen."""
    path = tmp_path / "v11.sqlite3"
    make_journal(path, 11)
    db = sqlite3.connect(path)
    db.executemany("INSERT INTO ledger (at, event, detail) VALUES (?, ?, '{}')",
                   [(float(n), f"e{n}") for n in range(1, 6)])
    db.execute("DELETE FROM ledger WHERE seq >= 4")  # pruned under schema 11
    db.commit()
    db.close()
    store = SqliteStore.open(path, now=10)
    assert store.migrated_from == 11
    store.note("after", 11)
    entries = [(e.seq, e.event) for e in store.ledger()]
    store.close()
    assert entries[:4] == [(1, "e1"), (2, "e2"), (3, "e3"), (5, "seq_kept")]
    assert [event for _, event in entries[4:]] == ["migrated", "after"]
    assert entries[4][0] > 5
