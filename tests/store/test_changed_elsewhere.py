"""``Store.changed_elsewhere`` (issue 32): how a running engine learns, about once a second,
that another connection committed to the journal (``accounts refresh``, ``batch cap``,
``submit`` of another process), so that it wakes its pump at once instead of at its
safety net. SQLite answers from ``PRAGMA data_version`` of the store's own connection;
PostgreSQL always says no: its triggers NOTIFY (tests/team/test_wakeups.py)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from reelqueue.domain.account_view import AccountView, Balance
from reelqueue.domain.clock import FakeClock
from reelqueue.domain.models import AccountSpec, BatchSpec
from reelqueue.store.memory import MemoryStore
from reelqueue.store.sqlite import SqliteStore
from tests import pgserver
from tests.conftest import make_specs

pytestmark = pytest.mark.unit


def test_sqlite_says_yes_once_for_each_commit_of_another_connection(
        tmp_path: Path, clock: FakeClock) -> None:
    path = tmp_path / "journal.sqlite3"
    engine = SqliteStore.open(path, now=clock.now())
    command = SqliteStore.open(path, now=clock.now())  # another process's connection
    try:
        assert engine.changed_elsewhere() is False  # the first call takes its bearings
        engine.add_account(AccountSpec("acct", "mock", 2), clock.now())
        batch = engine.create_batch(BatchSpec("b", "s.csv", str(tmp_path)), clock.now())
        engine.add_jobs(batch.id, make_specs(tmp_path, 2), clock.now())
        assert engine.changed_elsewhere() is False  # its own writes: never

        assert command.put_account_view(AccountView("acct", Balance(90.0, "credits"), (),
                                                    None, clock.now(), "cli"))
        assert engine.changed_elsewhere() is True
        assert engine.changed_elsewhere() is False  # said once, not again
        command.list_accounts()  # a read commits nothing
        assert engine.changed_elsewhere() is False

        command.update_account("acct", clock.now(), capacity=5)
        command.set_batch_paused(batch.id, True, clock.now())
        assert engine.changed_elsewhere() is True  # two commits: one wake is enough
        assert engine.changed_elsewhere() is False
        assert command.changed_elsewhere() is False  # bearings
        engine.update_account("acct", clock.now(), capacity=3)
        assert command.changed_elsewhere() is True  # both ways
    finally:
        command.close()
        engine.close()


def test_the_memory_store_has_no_other_connection(clock: FakeClock) -> None:
    store = MemoryStore()
    try:
        assert store.changed_elsewhere() is False
        store.add_account(AccountSpec("acct", "mock", 2), clock.now())
        assert store.changed_elsewhere() is False
    finally:
        store.close()


def test_postgresql_never_asks_to_be_polled(pg_dsn: str) -> None:
    from reelqueue.store.postgres import PostgresStore

    schema = pgserver.new_schema_name()
    engine = PostgresStore.open(pg_dsn, now=time.time(), schema=schema)
    command = PostgresStore.open(pg_dsn, now=time.time(), schema=schema)
    try:
        assert engine.changed_elsewhere() is False
        command.add_account(AccountSpec("acct", "mock", 2), time.time())
        command.put_account_view(AccountView("acct", Balance(90.0, "credits"), (), None,
                                             time.time(), "cli"))
        assert engine.changed_elsewhere() is False  # heard through NOTIFY instead
    finally:
        command.close()
        engine.close()
        pgserver.drop_schema(pg_dsn, schema)
