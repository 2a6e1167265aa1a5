"""Journal version 9 (SQLite) / 6 (PostgreSQL), issues 21 and 23: the absolute output
paths of earlier versions become relative to the videos folder when they lie inside their
batch's folder; one outside is kept as it is (not trusted: never written to)."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest

from reelqueue.engine.outputs import output_refusal, resolve_output
from reelqueue.store.postgres import PostgresStore, pg_migration_sql
from reelqueue.store.queries import migration_sql
from reelqueue.store.sqlite import APPLICATION_ID, SqliteStore, _split_sql
from tests import pgserver

BATCHES = [(1, "shots", "/home/u/Videos/ReelQueue/shots"),
           (2, "win", "C:\\Users\\u\\Videos\\ReelQueue\\win"),
           (3, "done", "already")]
JOBS = [  # key, batch, old path, path after the migration
    ("in", 1, "/home/u/Videos/ReelQueue/shots/001.mp4", "shots/001.mp4"),
    ("nested", 1, "/home/u/Videos/ReelQueue/shots/sub/002.mp4", "shots/sub/002.mp4"),
    ("sibling", 1, "/home/u/Videos/ReelQueue/shots2/003.mp4",
     "/home/u/Videos/ReelQueue/shots2/003.mp4"),
    ("outside", 1, "/etc/004.mp4", "/etc/004.mp4"),
    ("windows", 2, "C:\\Users\\u\\Videos\\ReelQueue\\win\\005.mp4", "win/005.mp4"),
    ("relative", 3, "already/006.mp4", "already/006.mp4"),
]
FOLDERS = {1: "shots", 2: "win", 3: "already"}


def _fill(run: Callable[..., Any], placeholder: str) -> None:
    """The batches and jobs above, by the connection's ``execute``."""
    for batch_id, name, folder in BATCHES:
        run(f"INSERT INTO batches (id, name, source_path, output_dir, created_at) VALUES "
            f"({placeholder}, {placeholder}, 's.csv', {placeholder}, 1)",
            (batch_id, name, folder))
    for key, batch_id, path, _ in JOBS:
        run("INSERT INTO jobs (batch_id, job_key, prompt, provider, output_path, created_at, "
            f"updated_at) VALUES ({placeholder}, {placeholder}, 'p', 'mock', {placeholder}, "
            "1, 1)", (batch_id, key, path))


def _check(batches: dict[int, str], jobs: dict[str, str]) -> None:
    assert batches == FOLDERS
    assert jobs == {key: after for key, _, _, after in JOBS}


@pytest.mark.unit
def test_sqlite_version_9_makes_paths_relative(tmp_path: Path) -> None:
    path = tmp_path / "journal.sqlite3"
    db = sqlite3.connect(path)
    for step in range(1, 9):
        for statement in _split_sql(migration_sql(step)):
            db.execute(statement)
    db.execute(f"PRAGMA application_id = {APPLICATION_ID}")
    db.execute("PRAGMA user_version = 8")
    _fill(db.execute, "?")
    db.commit()
    db.close()
    store = SqliteStore.open(path, now=2)
    try:
        assert store.migrated_from == 8
        _check({b.id: b.output_dir for b in store.list_batches()},
               {j.job_key: j.output_path for j in store.list_jobs()})
    finally:
        store.close()


@pytest.fixture
def schema(pg_dsn: str) -> Iterator[str]:
    name = pgserver.new_schema_name()
    yield name
    pgserver.drop_schema(pg_dsn, name)


@pytest.mark.integration
def test_postgres_version_6_makes_paths_relative(pg_dsn: str, schema: str) -> None:
    with psycopg.connect(pg_dsn) as db:
        db.execute(f'CREATE SCHEMA "{schema}"')
        db.execute(f'SET search_path TO "{schema}"')
        for step in range(1, 6):
            db.execute(pg_migration_sql(step).encode())
        db.execute("INSERT INTO reelqueue_meta (key, value) VALUES ('schema_version', '5')")
        _fill(db.execute, "%s")
    store = PostgresStore.open(pg_dsn, now=2, schema=schema)
    try:
        assert store.migrated_from == 5
        _check({b.id: b.output_dir for b in store.list_batches()},
               {j.job_key: j.output_path for j in store.list_jobs()})
    finally:
        store.close()


@pytest.mark.unit
@pytest.mark.parametrize("stored", [
    "shots/../../escaped.mp4", "..", "../x.mp4", "shots\\..\\..\\x.mp4", "/etc/passwd",
    "C:\\Windows\\x.mp4", "\\\\server\\share\\x.mp4", "", "/",
])
def test_a_path_leaving_the_videos_folder_is_refused(tmp_path: Path, stored: str) -> None:
    videos = tmp_path / "Videos"
    assert output_refusal(stored, videos) is not None
    with pytest.raises(Exception, match="Not written"):
        resolve_output(stored, videos)


@pytest.mark.unit
def test_relative_paths_resolve_under_each_machines_folder(tmp_path: Path) -> None:
    assert resolve_output("shots/001.mp4", tmp_path / "a") == tmp_path / "a" / "shots" / "001.mp4"
    assert resolve_output("shots/001.mp4", tmp_path / "b") == tmp_path / "b" / "shots" / "001.mp4"
    # An absolute path of an earlier version is used only inside this machine's folder.
    inside = str(tmp_path / "a" / "old" / "x.mp4")
    assert resolve_output(inside, tmp_path / "a") == Path(inside)
    assert output_refusal(inside, tmp_path / "b") is not None
