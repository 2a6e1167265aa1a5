"""Every index of the SQLite journal's jobs and ledger earns its writes (issue 20): each
one that is not a uniqueness rule is chosen by SQLite's planner for at least one named
query. An index no statement uses only costs: every transition that changes its columns
rewrites its entries (jobs_in_flight went so, schema version 11)."""

from __future__ import annotations

import re
import sqlite3
from pathlib import Path

import pytest

from reelqueue.store.queries import named_queries
from reelqueue.store.sqlite import SqliteStore

pytestmark = pytest.mark.unit


def _plans(db: sqlite3.Connection) -> dict[str, str]:
    plans: dict[str, str] = {}
    for name, sql in named_queries().items():
        if "{" in sql or sql.split(None, 1)[0].upper() in ("PRAGMA", "BEGIN", "COMMIT",
                                                           "ROLLBACK"):
            continue  # templates, and statements that are not planned
        params = dict.fromkeys(re.findall(r"(?<!:):(\w+)", sql))
        try:
            rows = db.execute("EXPLAIN QUERY PLAN " + sql, params).fetchall()
        except sqlite3.Error:
            continue  # a statement for another file (the API tokens' own tables...)
        plans[name] = " | ".join(str(row[3]) for row in rows)
    return plans


def test_every_index_of_jobs_and_ledger_is_used_by_a_query(tmp_path: Path) -> None:
    store = SqliteStore.open(tmp_path / "j.sqlite3", now=1)
    db = store.raw_connection()
    indexes = [(name, table) for name, table, unique in (
        (r[0], r[1], r[2]) for r in db.execute(
            "SELECT name, tbl_name, sql LIKE 'CREATE UNIQUE%' FROM sqlite_master "
            "WHERE type = 'index' AND sql IS NOT NULL AND tbl_name IN ('jobs', 'ledger')"))
        if not unique]
    assert indexes
    plans = " || ".join(_plans(db).values())
    unused = [name for name, _table in indexes
              if not re.search(rf"\b{re.escape(name)}\b", plans)]
    store.close()
    assert unused == [], f"indexes no named query uses: {unused}"
