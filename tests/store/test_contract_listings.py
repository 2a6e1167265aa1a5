"""Listings are bounded (issue 34; store/listing.py): a row rewritten in the journal with
50 MB values is listed with them cut, on the server, with a visible marker, by every store
alike; a job's single fetch (``get_job``) keeps the whole value, and so does the claim."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

import pytest

from reelqueue.domain.clock import FakeClock
from reelqueue.store.base import Store
from reelqueue.store.listing import (
    CUT_KEY,
    LIST_ERROR_CHARS,
    LIST_NAME_CHARS,
    LIST_PATH_CHARS,
    LIST_PROMPT_CHARS,
    cut_marker,
)
from tests.conftest import seed_store

pytestmark = pytest.mark.unit

BIG = 50 * 1024 * 1024


def rewrite(store: Store, job_id: int, **columns: Any) -> None:
    """What a hostile writer does: the row changed behind the store's back."""
    _rewrite(store, "jobs", job_id, **columns)


def _rewrite(store: Store, table: str, row_id: int, **columns: Any) -> None:
    """``table``'s row ``row_id`` (jobs or batches) rewritten behind the store's back."""
    for column, value in columns.items():
        if isinstance(value, dict):
            value = json.dumps(value)
        if type(store).__name__ == "PostgresStore":
            cast = "::jsonb" if column in ("params", "metadata", "settings") else ""
            with store.raw_connection() as db:  # type: ignore[attr-defined]
                db.execute(f"UPDATE {table} SET {column} = %s{cast} WHERE id = %s",
                           (value, row_id))
        else:
            store.raw_connection().execute(  # type: ignore[attr-defined]
                f"UPDATE {table} SET {column} = ? WHERE id = ?", (value, row_id))

def test_list_jobs_cuts_huge_values_and_get_job_keeps_them(
        store: Store, tmp_path: Path, clock: FakeClock) -> None:
    seed_store(store, tmp_path, clock.now(), jobs=2)
    first = store.list_jobs()[0].id
    rewrite(store, first, prompt="p" * BIG, error_message="e" * BIG, name="n" * BIG,
            output_path="o" * (LIST_PATH_CHARS + 5))
    listed = {job.id: job for job in store.list_jobs()}
    job = listed[first]
    assert job.prompt == "p" * LIST_PROMPT_CHARS + cut_marker(BIG)
    assert job.error_message == "e" * LIST_ERROR_CHARS + cut_marker(BIG)
    assert job.name == "n" * LIST_NAME_CHARS + cut_marker(BIG)
    assert job.output_path == "o" * LIST_PATH_CHARS + cut_marker(LIST_PATH_CHARS + 5)
    other = next(j for j in listed.values() if j.id != first)
    assert other.prompt == "prompt 1" and other.name == "row1"  # short values untouched
    # The filtered listings are cut alike.
    assert store.list_jobs(batch_id=job.batch_id, states=[job.state])[0].prompt == job.prompt
    whole = store.get_job(first)
    assert whole is not None
    assert len(whole.prompt) == len(whole.error_message or "") == len(whole.name) == BIG


def test_list_jobs_replaces_huge_json_with_a_marker(
        store: Store, tmp_path: Path, clock: FakeClock) -> None:
    seed_store(store, tmp_path, clock.now(), jobs=1)
    job_id = store.list_jobs()[0].id
    rewrite(store, job_id, params={"blob": "b" * 1_000_000}, metadata={"m": "x" * 100_000})
    [job] = store.list_jobs()
    assert set(job.params) == {CUT_KEY} and "bytes" in job.params[CUT_KEY]
    assert set(job.metadata) == {CUT_KEY}
    whole = store.get_job(job_id)
    assert whole is not None and len(whole.params["blob"]) == 1_000_000


@pytest.mark.parametrize("read", ["ledger_after", "ledger_tail"])
def test_the_ledger_listings_cut_a_huge_detail(store: Store, tmp_path: Path,
                                               clock: FakeClock, read: str) -> None:
    """The API's stream (``ledger_after``) and the tail the window follows
    (``ledger(limit=...)``) alike; the job's whole ledger keeps it."""
    seed_store(store, tmp_path, clock.now(), jobs=1)
    job_id = store.list_jobs()[0].id
    store.note("note", clock.now(), job_id=job_id, detail={"huge": "d" * 1_000_000})
    entries = (store.ledger_after(0, 1_000) if read == "ledger_after"
               else store.ledger(limit=3))
    entry = entries[-1]
    assert entry.job_id == job_id and set(entry.detail) == {CUT_KEY}
    assert len(store.ledger(job_id)[-1].detail["huge"]) == 1_000_000


def test_the_api_readers_list_cut_values(store: Store, tmp_path: Path, clock: FakeClock,
                                         request: pytest.FixtureRequest) -> None:
    """``GET /v1/jobs`` and the event stream read through the journal readers (SQLite's
    journal_reader.py, the team's pg_reader.py): their lists are cut alike."""
    seed_store(store, tmp_path, clock.now(), jobs=1)
    job_id = store.list_jobs()[0].id
    rewrite(store, job_id, prompt="p" * BIG)
    store.note("note", clock.now(), job_id=job_id, detail={"huge": "d" * 1_000_000})
    reader: Any
    if type(store).__name__ == "PostgresStore":
        from reelqueue.store.pg_reader import PgJournalReader

        dsn: str = request.getfixturevalue("pg_dsn")
        reader = PgJournalReader(dsn)
        # The reader of a team database reads the server's search path: the test's schema.
        reader._link._conn.execute(  # type: ignore[union-attr]
            f"SET search_path TO {store.schema}")  # type: ignore[attr-defined]
    else:
        from reelqueue.store.journal_reader import JournalReader

        reader = JournalReader(tmp_path / "journal.sqlite3")
    try:
        [job] = reader.jobs_after(0, 10)
        assert job.prompt == "p" * LIST_PROMPT_CHARS + cut_marker(BIG)
        entries = reader.ledger_after(0, 1_000)
        assert set(entries[-1].detail) == {CUT_KEY}
    finally:
        reader.close()


def rewrite_batch(store: Store, batch_id: int, **columns: Any) -> None:
    """A hostile writer changing a batch's row behind the store's back."""
    _rewrite(store, "batches", batch_id, **columns)

def test_list_batches_cuts_huge_values_and_never_cuts_a_folder_name(
        store: Store, tmp_path: Path, clock: FakeClock) -> None:
    seed_store(store, tmp_path, clock.now(), jobs=1)
    [batch] = store.list_batches()
    folder = "f" * (LIST_PATH_CHARS + 1)
    rewrite_batch(store, batch.id, name="n" * BIG, source_path="s" * BIG, output_dir=folder,
                  settings={"paused": True, "max_spend": 2.5, "intake": {"x": "i" * BIG}})
    [listed] = store.list_batches()
    assert listed.name == "n" * LIST_NAME_CHARS + cut_marker(BIG)
    assert listed.source_path == "s" * LIST_PATH_CHARS + cut_marker(BIG)
    # A cut folder name would be another folder: the listing gives one every reader refuses.
    assert listed.output_dir == ""
    assert set(listed.settings) == {CUT_KEY, "paused", "max_spend"}
    assert listed.settings["paused"] and listed.settings["max_spend"] == 2.5
    assert "bytes" in listed.settings[CUT_KEY]
    # The single read keeps the whole row.
    whole = store.get_batch(batch.id)
    assert whole is not None and whole.output_dir == folder and len(whole.name) == BIG


def test_list_batches_keeps_an_ordinary_batch_whole(
        store: Store, tmp_path: Path, clock: FakeClock) -> None:
    seed_store(store, tmp_path, clock.now(), jobs=1)
    [before] = store.list_batches()
    whole = store.get_batch(before.id)
    assert whole is not None and before == whole


def test_a_long_text_is_cut_by_characters_and_its_size_said_in_bytes(
        store: Store, tmp_path: Path, clock: FakeClock) -> None:
    """Cut at the character bound (never inside a character), the marker giving the whole
    value's size in UTF-8 bytes (what PostgreSQL reads without fetching the value); a text
    over the bound in bytes but not in characters is whole."""
    seed_store(store, tmp_path, clock.now(), jobs=2)
    first, second = (job.id for job in store.list_jobs())
    long_one = "映" * (LIST_PROMPT_CHARS + 1)
    short_one = "映" * (LIST_PROMPT_CHARS - 500)  # 4,500 bytes, 1,500 characters
    rewrite(store, first, prompt=long_one)
    rewrite(store, second, prompt=short_one)
    listed = {job.id: job for job in store.list_jobs()}
    assert listed[first].prompt == "映" * LIST_PROMPT_CHARS + cut_marker(
        len(long_one.encode()))
    assert cut_marker(3) == "… [cut: 3 bytes]"
    assert listed[second].prompt == short_one


def test_the_health_check_does_not_wait_behind_a_listing(
        store: Store, tmp_path: Path, clock: FakeClock, request: pytest.FixtureRequest) -> None:
    """``/v1/health`` reads on its own connection: while a listing holds the reader's
    connection (rows of 50 MB values take seconds to list), the health check answers."""
    seed_store(store, tmp_path, clock.now(), jobs=1)
    reader: Any
    if type(store).__name__ == "PostgresStore":
        from reelqueue.store.pg_reader import PgJournalReader

        reader = PgJournalReader(request.getfixturevalue("pg_dsn"))
        for link in (reader._link, reader._health_link):  # the test's schema
            link._conn.execute(  # type: ignore[union-attr]
                f"SET search_path TO {store.schema}")  # type: ignore[attr-defined]
        busy = reader._link._lock
    else:
        from reelqueue.store.journal_reader import JournalReader

        reader = JournalReader(tmp_path / "journal.sqlite3")
        busy = reader._lock
    answers: list[str] = []
    try:
        with busy:  # a listing in progress on the reader's connection
            checker = threading.Thread(target=lambda: answers.append(reader.writable()))
            checker.start()
            checker.join(60)  # a bound for a deadlock, not a timing: it answers at once
            alive = checker.is_alive()
        checker.join()
        assert not alive and answers == ["writable"]
    finally:
        reader.close()
