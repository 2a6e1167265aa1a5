"""The store tests run on every implementation: SQLite and PostgreSQL (issue 15; the
memory store is the SQLite journal in memory since issue 36 item 4: the same code).

The PostgreSQL param uses the session's throwaway server (tests/pgserver.py), one fresh
schema per test; without a server it is skipped with the reason (failed when
REELQUEUE_REQUIRE_POSTGRES=1).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from reelqueue.domain.clock import FakeClock
from reelqueue.store.base import Store
from reelqueue.store.sqlite import SqliteStore
from tests import pgserver


@pytest.fixture(params=["sqlite", "postgresql"])
def store(request: pytest.FixtureRequest, tmp_path: Path, clock: FakeClock) -> Iterator[Store]:
    """Every contract test runs once per store implementation."""
    if request.param == "postgresql":
        dsn: str = request.getfixturevalue("pg_dsn")
        from reelqueue.store.postgres import PostgresStore

        schema = pgserver.new_schema_name()
        # The fake clock stands in for the server's: the tests move the team's clock.
        opened: Store = PostgresStore.open(dsn, now=clock.now(), schema=schema,
                                           server_clock=clock)
        try:
            yield opened
        finally:
            opened.close()
            pgserver.drop_schema(dsn, schema)
        return
    opened = SqliteStore.open(tmp_path / "journal.sqlite3", now=clock.now())
    yield opened
    opened.close()
