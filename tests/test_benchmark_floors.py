"""The benchmarks' floor loops do what the store does (issue 20, docs/benchmarks.md "the
floor"): ``hand`` (compare_sqlite_queues.py) and ``floor`` (compare_pg_queues.py) send the
store's own statements without its code, and stand for it only while they leave the same
journal behind: every job completed, the same ledger entries. A renamed query or a new
parameter that one of them misses fails here, not silently in a benchmark run."""

from __future__ import annotations

import importlib
import sqlite3
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest

ROOT = Path(__file__).resolve().parents[1]
JOBS = 12


@pytest.fixture
def bench() -> Iterator[Callable[[str], Any]]:
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        yield importlib.import_module
    finally:
        sys.path.remove(str(ROOT / "benchmarks"))


def _sqlite_journal(folder: Path) -> tuple[list[tuple[str, int]], list[tuple[str, int]]]:
    db = sqlite3.connect(str(folder / "journal.sqlite3"))
    try:
        events = db.execute("SELECT event, COUNT(*) FROM ledger GROUP BY event "
                            "ORDER BY event").fetchall()
        states = db.execute("SELECT state, COUNT(*) FROM jobs GROUP BY state").fetchall()
    finally:
        db.close()
    return events, states


def test_the_sqlite_hand_loop_leaves_the_journal_the_store_leaves(
        bench: Callable[[str], Any], tmp_path: Path) -> None:
    module = bench("compare_sqlite_queues")
    seen = {}
    for name in ("reelqueue", "hand"):
        folder = tmp_path / name
        folder.mkdir()
        setup, work = module.CONTENDERS[name]
        setup(folder, JOBS)
        assert work(folder, 0) == JOBS
        seen[name] = _sqlite_journal(folder)
    assert seen["hand"] == seen["reelqueue"]
    events, states = seen["hand"]
    assert states == [("COMPLETED", JOBS)]
    assert ("submitting", JOBS) in events and ("completed", JOBS) in events


def test_the_postgres_floor_loop_leaves_the_journal_the_store_leaves(
        bench: Callable[[str], Any], pg_dsn: str) -> None:
    module = bench("compare_pg_queues")
    seen = {}
    for name in ("reelqueue", "floor"):
        with module.fresh_database(pg_dsn) as url:
            setup, work = module.CONTENDERS[name]
            setup(url, JOBS)
            assert work(url, 0) == JOBS
            with psycopg.connect(url) as db:
                seen[name] = (
                    db.execute("SELECT event, COUNT(*) FROM ledger GROUP BY event "
                               "ORDER BY event").fetchall(),
                    db.execute("SELECT state, COUNT(*) FROM jobs GROUP BY state").fetchall())
    assert seen["floor"] == seen["reelqueue"]
    events, states = seen["floor"]
    assert states == [("COMPLETED", JOBS)]
    assert ("submitting", JOBS) in events and ("completed", JOBS) in events
