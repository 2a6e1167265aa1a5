"""SQLite's listings read cut values kept by triggers (issue 34; schema.sql job_cuts):
SQLite reads a whole text to measure it, so the values over a listing's bound are measured
and cut once, as the row is written, and a listing never loads a 50 MB value."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from reelqueue.domain.clock import FakeClock
from reelqueue.domain.models import JobSpec
from reelqueue.store.listing import LIST_PROMPT_CHARS, cut_marker
from reelqueue.store.sqlite import SCHEMA_VERSION, SqliteStore
from tests.conftest import seed_store
from tests.store.test_check_forms import make_journal

pytestmark = pytest.mark.unit

BIG = 5 * 1024 * 1024


def cuts(path: Path) -> list[tuple[int, str]]:
    db = sqlite3.connect(path)
    try:
        return db.execute("SELECT job_id, substr(prompt, 1, 3) FROM job_cuts").fetchall()
    finally:
        db.close()


def test_the_cut_values_follow_every_write_of_the_row(tmp_path: Path) -> None:
    clock = FakeClock()
    store = SqliteStore.open(tmp_path / "journal.sqlite3", now=clock.now())
    seed_store(store, tmp_path, clock.now(), jobs=2)
    first = store.list_jobs()[0].id
    db = store.raw_connection()
    db.execute("UPDATE jobs SET prompt = ? WHERE id = ?", ("p" * BIG, first))
    assert cuts(tmp_path / "journal.sqlite3") == [(first, "ppp")]
    # Another listed value of the cut row changes: the listing shows the new one.
    db.execute("UPDATE jobs SET name = ? WHERE id = ?", ("renamed", first))
    job = next(j for j in store.list_jobs() if j.id == first)
    assert job.name == "renamed"
    assert job.prompt == "p" * LIST_PROMPT_CHARS + cut_marker(BIG)
    # Short again: the row lists its own values and its cut entry is gone.
    db.execute("UPDATE jobs SET prompt = 'short' WHERE id = ?", (first,))
    assert cuts(tmp_path / "journal.sqlite3") == []
    assert next(j for j in store.list_jobs() if j.id == first).prompt == "short"
    # A row inserted over a bound is cut from the start; deleting it drops its entry.
    batch = store.list_batches()[0]
    long_prompt = "q" * (LIST_PROMPT_CHARS + 10)
    store.add_jobs(batch.id, [JobSpec(job_key="long", prompt=long_prompt, provider="mock",
                                      output_path="b/long.mp4", name="long")], clock.now())
    [added] = [j for j in store.list_jobs() if j.job_key == "long"]
    assert added.prompt == "q" * LIST_PROMPT_CHARS + cut_marker(LIST_PROMPT_CHARS + 10)
    db.execute("DELETE FROM jobs WHERE id = ?", (added.id,))
    assert cuts(tmp_path / "journal.sqlite3") == []
    store.close()


def test_migrating_to_the_cuts_measures_the_rows_already_there(tmp_path: Path) -> None:
    """A journal of schema 14 holding a hostile row: opening it migrates, and the row is
    listed cut at once."""
    path = tmp_path / "journal.sqlite3"
    make_journal(path, 14)  # as a ReelQueue of schema 14 left it, with one batch
    db = sqlite3.connect(path)
    with db:
        db.execute("INSERT INTO jobs (batch_id, job_key, name, prompt, provider, params, "
                   "output_path, created_at, updated_at) VALUES (1, 'k1', 'n', ?, 'mock', "
                   "'{}', 'b/1.mp4', 1, 1)", ("p" * BIG,))
        db.execute("INSERT INTO jobs (batch_id, job_key, name, prompt, provider, params, "
                   "output_path, created_at, updated_at) VALUES (1, 'k2', 'n', 'short', "
                   "'mock', '{}', 'b/2.mp4', 1, 1)")
    db.close()
    store = SqliteStore.open(path, now=2)
    try:
        assert store.migrated_from == 14 and SCHEMA_VERSION >= 15
        listed = {job.job_key: job for job in store.list_jobs()}
        assert listed["k1"].prompt == "p" * LIST_PROMPT_CHARS + cut_marker(BIG)
        assert listed["k2"].prompt == "short"
        whole = store.get_job(listed["k1"].id)
        assert whole is not None and len(whole.prompt) == BIG
    finally:
        store.close()
