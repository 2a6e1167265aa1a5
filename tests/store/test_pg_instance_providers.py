"""Which machine has which provider (issue 36 item 2), in the team database's instances
registry: each instance writes the kinds it can build at hello; a row any machine (or a hand
edit) wrote is read back bounded, at most 64 names of at most 80 characters, anything else
"unknown" (None). Schema 13; a registry row of schema 12 reads unknown."""

from __future__ import annotations

from collections.abc import Iterator

import psycopg
import pytest

from reelqueue.store.pg_instances import bounded_kinds, kinds_of_row
from reelqueue.store.postgres import PostgresStore
from tests import pgserver


@pytest.fixture
def team(pg_dsn: str) -> Iterator[tuple[PostgresStore, str]]:
    schema = pgserver.new_schema_name()
    store = PostgresStore.open(pg_dsn, now=100, schema=schema)
    try:
        yield store, schema
    finally:
        store.close()
        pgserver.drop_schema(pg_dsn, schema)


def test_an_instance_says_its_providers_at_hello_and_keeps_them_on_a_second_hello(
        team: tuple[PostgresStore, str]) -> None:
    store, _ = team
    store.register_instance("a", host="box-a", pid=1, version="v",
                            providers=["veo", "mock", "sample", "mock"])
    store.register_instance("old", host="box-o", pid=2, version="v")  # before schema 13
    rows = {r.id: r for r in store.list_instances()}
    assert rows["a"].providers == ("mock", "sample", "veo")
    assert rows["old"].providers is None
    store.register_instance("a", host="box-a", pid=1, version="v")  # a hello without them
    assert {r.id: r for r in store.list_instances()}["a"].providers == (
        "mock", "sample", "veo")


def test_a_list_out_of_bounds_is_not_written(team: tuple[PostgresStore, str]) -> None:
    store, _ = team
    store.register_instance("many", host="h", pid=1, version="v",
                            providers=[f"kind-{i}" for i in range(65)])
    store.register_instance("long", host="h", pid=2, version="v", providers=["k" * 81])
    store.register_instance("none", host="h", pid=3, version="v", providers=[])
    rows = {r.id: r.providers for r in store.list_instances()}
    assert rows == {"many": None, "long": None, "none": ()}


@pytest.mark.parametrize("raw", [
    "not json", "{\"a\": 1}", "\"mock\"", "[1, 2]", "[\"\"]", "[null]",
    "[\"ok\", \"" + "x" * 81 + "\"]", "[\"bell\\u0007\"]",
    "[" + ", ".join(f"\"k{i}\"" for i in range(65)) + "]",
])
def test_a_hostile_row_reads_unknown(team: tuple[PostgresStore, str], pg_dsn: str,
                                     raw: str) -> None:
    store, schema = team
    store.register_instance("x", host="h", pid=1, version="v", providers=["mock"])
    with psycopg.connect(pg_dsn, autocommit=True) as db:
        db.execute(f'UPDATE "{schema}".instances SET providers = %s', (raw,))
    (row,) = store.list_instances()
    assert row.providers is None and row.host == "h"


def test_the_bounds_take_64_names_of_80_characters() -> None:
    names = [f"{i:02d}" + "k" * 78 for i in range(64)]
    assert bounded_kinds(names) == tuple(sorted(names))
    assert bounded_kinds([*names, "one-more"]) is None
    assert kinds_of_row(None) is None and kinds_of_row(b"[]") is None
    assert kinds_of_row("[\"mock\", \"veo\"]") == ("mock", "veo")
    assert kinds_of_row("[" * 100_000) is None  # over the 8 KiB bound
    assert kinds_of_row("[" * 5_000) is None  # under it, nested past Python's parser
