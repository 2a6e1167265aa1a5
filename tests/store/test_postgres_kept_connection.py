"""The PostgreSQL store keeps its pool connection between operations (session 23): one
connection serves a run of operations; a connection the server ended is replaced once it
has been idle past the pool check's window; an operation that fails gives its connection
back to the pool."""

from __future__ import annotations

from collections.abc import Iterator

import psycopg
import pytest

from reelqueue.store.base import ClaimParams
from reelqueue.store.postgres import PostgresStore
from tests import pgserver

pytestmark = pytest.mark.unit


@pytest.fixture
def store(pg_dsn: str) -> Iterator[PostgresStore]:
    schema = pgserver.new_schema_name()
    opened = PostgresStore.open(pg_dsn, now=1, schema=schema)
    try:
        yield opened
    finally:
        opened.close()
        pgserver.drop_schema(pg_dsn, schema)


def backend_pid(store: PostgresStore) -> int:
    with store.raw_connection() as db:
        row = db.execute("SELECT pg_backend_pid() AS pid").fetchone()
    assert row is not None
    return int(row["pid"])


def test_a_run_of_operations_uses_one_connection(store: PostgresStore) -> None:
    first = backend_pid(store)
    store.note("one", 2.0)
    # a claim is one pipeline in autocommit (_single): the connection switches mode
    assert store.claim_next_job(ClaimParams("nobody", "boot-a", 2.0, 30.0)) is None
    assert store.server_time() > 0
    store.note("two", 3.0)
    assert backend_pid(store) == first
    assert [e.event for e in store.ledger()][-2:] == ["one", "two"]


def test_a_connection_the_server_ended_is_replaced_after_the_idle_window(
    store: PostgresStore, pg_dsn: str
) -> None:
    ended = backend_pid(store)
    with psycopg.connect(pg_dsn, autocommit=True) as admin:
        admin.execute("SELECT pg_terminate_backend(%s)", (ended,))
    # The idle window (1 s in use) made zero: the kept connection counts as idle at once,
    # so it goes back to the pool, whose check finds it dead and hands out another.
    store._recently_used.fresh_seconds = 0.0
    store.note("after", 2.0)
    assert backend_pid(store) != ended
    assert [e.event for e in store.ledger()][-1] == "after"


def test_an_operation_that_fails_gives_its_connection_back(store: PostgresStore) -> None:
    with pytest.raises(psycopg.errors.UndefinedTable), store.raw_connection() as db:
        db.execute("SELECT * FROM no_such_table")
    assert store._kept.held is None, "a failed operation's connection went back to the pool"
    store.note("next", 2.0)  # the store goes on, on a clean connection
    assert [e.event for e in store.ledger()][-1] == "next"
