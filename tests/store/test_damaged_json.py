"""A local journal whose JSON columns were changed outside ReelQueue (a hand edit in an
SQLite browser, a damaged page that still checks): every file on disk is hostile input.

- A query whose JSON functions meet such a text says "the journal holds a value that is
  not JSON ... 'reelqueue doctor' names the rows" (JournalCorrupt, exit 2), never "a bug
  in ReelQueue".
- ``doctor`` names each damaged row by table, row and column (exit 1).
- Listings decode in Python: a text that is not JSON, or nested past Python's parser,
  reads as ``{"unreadable": why}`` instead of stopping the listing.
"""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path

import pytest

from reelqueue.cli import main as cli_main
from reelqueue.domain.account_view import AccountView, Balance
from reelqueue.domain.errors import JournalCorrupt
from reelqueue.domain.models import BatchSpec, JobSpec
from reelqueue.store.rows import UNREADABLE
from reelqueue.store.sqlite import SqliteStore

DEEP = "[" * 5000  # past SQLite's JSON depth and Python's recursion limit


def journal(data: Path) -> Path:
    """A journal of two queued jobs and a ledger, then damaged from outside: job 1's
    metadata nested too deep, job 2's params not JSON, the newest ledger row's detail
    not JSON."""
    data.mkdir(parents=True, exist_ok=True)
    path = data / "journal.sqlite3"
    store = SqliteStore.open(path, now=time.time())
    try:
        batch = store.create_batch(BatchSpec("b", "s.csv", "b"), time.time())
        store.add_jobs(batch.id, [
            JobSpec(f"k{i}", f"a fox {i}", "mock", f"b/{i}.mp4", params={"duration": 5},
                    metadata={"price": 0.5}) for i in (1, 2)], time.time())
    finally:
        store.close()
    with sqlite3.connect(path) as db:
        db.execute("UPDATE jobs SET metadata = ? WHERE id = 1", (DEEP,))
        db.execute("UPDATE jobs SET params = 'not json' WHERE id = 2")
        db.execute("DROP TRIGGER ledger_append_only")  # a hand edit does what it likes
        db.execute("UPDATE ledger SET detail = '{broken' WHERE seq = "
                   "(SELECT MAX(seq) FROM ledger)")
    db.close()
    return path


def test_a_query_meeting_damaged_json_says_so_and_the_doctor_names_the_rows(
        tmp_path: Path) -> None:
    store = SqliteStore.open(journal(tmp_path / "data"), now=time.time())
    try:
        with pytest.raises(JournalCorrupt) as caught:
            store.to_go()  # its SQL reads each waiting job's price
        words = str(caught.value)
        assert "holds a value that is not JSON" in words and "'reelqueue doctor'" in words
        assert "bug" not in words
        results = store.doctor_queries(instance_alive=False)
        assert sorted(results["json_values"]) == sorted([
            ("jobs", 1, "metadata"), ("jobs", 2, "params"),
            ("ledger", max(e.seq for e in store.ledger()), "detail")])
        assert results["integrity"] == [], "the pages are fine: only values changed"
        # Listings decode in Python and go on past the damaged rows.
        assert [job.id for job in store.list_jobs()] == [1, 2]
        newest = store.ledger()[-1]
        assert newest.detail == {UNREADABLE: "not valid JSON"}
    finally:
        store.close()


def test_the_commands_say_it_plainly(tmp_path: Path,
                                     capsys: pytest.CaptureFixture[str]) -> None:
    data = tmp_path / "data"
    journal(data)

    def cli(*argv: str) -> int:
        return cli_main.main(["--data-dir", str(data), "--videos-dir",
                              str(tmp_path / "videos"), *argv])

    assert cli("status") == 2
    err = capsys.readouterr().err
    assert "holds a value that is not JSON where JSON belongs" in err
    assert "unexpected error" not in err and "bug" not in err
    assert cli("doctor") == 1
    out = capsys.readouterr().out
    assert "FAIL json values: [" in out and "('jobs', 2, 'params')" in out
    assert "('jobs', 1, 'metadata')" in out


def test_a_sound_journal_passes_the_json_check(tmp_path: Path) -> None:
    store = SqliteStore.open(tmp_path / "journal.sqlite3", now=time.time())
    try:
        batch = store.create_batch(BatchSpec("b", "s.csv", "b"), time.time())
        store.add_jobs(batch.id, [JobSpec("k", "a fox", "mock", "b/1.mp4",
                                          params={"duration": 5})], time.time())
        assert store.doctor_queries(instance_alive=False)["json_values"] == []
    finally:
        store.close()


def test_an_account_views_limits_nested_past_the_parser_read_as_none(tmp_path: Path) -> None:
    """Within the column's 16 KiB bound, 5,000 "[" are valid for SQLite's length check but
    nest past Python's parser: the account's view reads with no limits (as any unreadable
    limits do), and the doctor names the row."""
    path = tmp_path / "journal.sqlite3"
    store = SqliteStore.open(path, now=time.time())
    try:
        store.put_account_view(AccountView("acct", Balance(5.0, "credits"), (), None,
                                           time.time(), "here"))
    finally:
        store.close()
    with sqlite3.connect(path) as db:
        db.execute("UPDATE account_views SET limits = ?", (DEEP,))
    db.close()
    store = SqliteStore.open(path, now=time.time())
    try:
        (view,) = store.account_views()
        assert view.account == "acct" and view.limits == ()
        assert view.balance == Balance(5.0, "credits")
        assert store.doctor_queries(instance_alive=False)["json_values"] == [
            ("account_views", "acct", "limits")]
    finally:
        store.close()
