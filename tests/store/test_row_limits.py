"""Rows are untrusted input (issue 21; domain/row_limits.py): a job row rewritten in the
journal (a teammate's script, anyone with write access to the team database, a hand edit
of a local journal) with an oversized or too deeply nested value is failed with the reason
by the claim, in SQL and in the claim's own transaction, before the row is fetched; the
claim goes on to the next job (no head-of-line blocking). Runs on SQLite and PostgreSQL,
the fast claim and the long way (a spend cap) alike."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from reelqueue.domain.clock import FakeClock
from reelqueue.domain.models import AccountSpec, BatchSpec
from reelqueue.domain.row_limits import (
    MAX_JSON_DEPTH,
    MAX_PARAMS_BYTES,
    MAX_PROMPT_BYTES,
    MAX_ROUTE_BYTES,
    REFUSAL_PREFIX,
    ROW_REFUSED,
)
from reelqueue.domain.states import JobState
from reelqueue.store.base import ClaimParams, Store
from reelqueue.store.postgres import PostgresStore
from reelqueue.store.sqlite import SqliteStore
from tests import pgserver
from tests.conftest import make_specs, seed_store

pytestmark = pytest.mark.unit


def nested(depth: int) -> dict[str, Any]:
    """A parameter object whose deepest value is ``depth`` levels below the root."""
    value: Any = 1
    for _ in range(depth - 1):
        value = {"a": value}
    return {"duration": 5, "deep": value}


def deep_text(depth: int) -> str:
    """:func:`nested` as JSON text (json.dumps itself stops near a thousand levels)."""
    return ('{"duration": 5, "deep": ' + '{"a": ' * (depth - 1) + "1" + "}" * (depth - 1)
            + "}")


def rewrite(store: Store, job_id: int, column: str, value: Any) -> None:
    """What a hostile writer does: the row changed behind the store's back (``params``:
    a JSON text, or a value to dump)."""
    if column == "params" and not isinstance(value, str):
        value = json.dumps(value)
    if type(store).__name__ == "PostgresStore":
        cast = "::jsonb" if column == "params" else ""
        with store.raw_connection() as db:  # type: ignore[attr-defined]
            db.execute(f"UPDATE jobs SET {column} = %s{cast} WHERE id = %s",
                       (value, job_id))
    else:
        store.raw_connection().execute(  # type: ignore[attr-defined]
            f"UPDATE jobs SET {column} = ? WHERE id = ?", (value, job_id))


def claim(store: Store, clock: FakeClock) -> Any:
    return store.claim_next_job(ClaimParams("acct-a", "inst-1", clock.now(), 60.0))


HOSTILE: dict[str, tuple[str, Callable[[], Any], str]] = {
    "huge prompt": ("prompt", lambda: "x" * (MAX_PROMPT_BYTES * 40), "its prompt is"),
    "huge params": ("params", lambda: {"blob": "y" * (MAX_PARAMS_BYTES + 10)},
                    "its parameters are"),
    "deep params": ("params", lambda: deep_text(5000), "parameters"),
    "params not an object": ("params", lambda: [1, 2, 3], "not a JSON object"),
    "huge name": ("name", lambda: "n" * 100_000, "its name is"),
    "huge output path": ("output_path", lambda: "o/" * 50_000, "its output path is"),
    "huge route": ("route", lambda: "r" * (MAX_ROUTE_BYTES + 1), "its route is"),
}


@pytest.fixture(params=["sqlite", "postgresql"])
def sql_store(request: pytest.FixtureRequest, tmp_path: Path, clock: FakeClock
              ) -> Iterator[Store]:
    """The stores whose journal someone else can write (not the memory store)."""
    if request.param == "sqlite":
        opened: Store = SqliteStore.open(tmp_path / "journal.sqlite3", now=clock.now())
        yield opened
        opened.close()
        return
    dsn: str = request.getfixturevalue("pg_dsn")
    schema = pgserver.new_schema_name()
    opened = PostgresStore.open(dsn, now=clock.now(), schema=schema, server_clock=clock)
    try:
        yield opened
    finally:
        opened.close()
        pgserver.drop_schema(dsn, schema)


@pytest.mark.parametrize("case", list(HOSTILE))
@pytest.mark.parametrize("way", ["fast", "spend cap"])
def test_a_hostile_row_is_refused_and_the_next_job_claimed(
        sql_store: Store, tmp_path: Path, clock: FakeClock, case: str, way: str) -> None:
    store = sql_store
    if way == "spend cap":  # a capped batch of priced jobs takes the claim's long way
        capped = store.create_batch(BatchSpec("b", "s.csv", str(tmp_path / "out"),
                                              settings={"max_spend": 1000.0}), clock.now())
        store.add_jobs(capped.id, make_specs(tmp_path, 3, metadata={"price": 0.5}),
                       clock.now())
        store.add_account(AccountSpec("acct-a", "mock", 2), clock.now())
    else:
        seed_store(store, tmp_path, clock.now(), jobs=3)
    column, value, words = HOSTILE[case]
    rewrite(store, 1, column, value())
    got = claim(store, clock)
    assert got is not None and got.job.id == 2, "the next job, not a blocked queue"
    refused = store.get_job(1)
    assert refused is not None and refused.state == JobState.FAILED
    assert refused.error_label == "invalid input" and refused.error_class == "permanent"
    assert refused.error_message is not None
    assert refused.error_message.startswith(REFUSAL_PREFIX) and words in refused.error_message
    # Nothing oversized is kept for later reads; the key is freed for a new import.
    assert len(refused.prompt) <= 2000 and refused.params == {}
    assert len(refused.output_path) <= 1024 and len(refused.name) <= 200
    assert refused.job_key == "row-refused:1" and refused.route is None
    entries = [e for e in store.ledger(1) if e.event == ROW_REFUSED]
    assert len(entries) == 1 and words in entries[0].detail["problem"]
    assert [e.event for e in store.ledger(1)].count("claimed") == 0
    # The other jobs go on as ever.
    other = claim(store, clock)
    assert other is not None and other.job.id == 3


def test_rows_at_the_bounds_are_claimed(sql_store: Store, tmp_path: Path,
                                        clock: FakeClock) -> None:
    store = sql_store
    seed_store(store, tmp_path, clock.now(), jobs=2)
    rewrite(store, 1, "params", nested(MAX_JSON_DEPTH - 1))
    rewrite(store, 2, "prompt", "p" * MAX_PROMPT_BYTES)
    first, second = claim(store, clock), claim(store, clock)
    assert first is not None and first.job.id == 1
    assert first.job.params["deep"] == nested(MAX_JSON_DEPTH - 1)["deep"]
    assert second is not None and len(second.job.prompt) == MAX_PROMPT_BYTES


def test_one_level_deeper_is_refused(sql_store: Store, tmp_path: Path,
                                     clock: FakeClock) -> None:
    store = sql_store
    seed_store(store, tmp_path, clock.now(), jobs=1)
    rewrite(store, 1, "params", nested(MAX_JSON_DEPTH))
    assert claim(store, clock) is None
    job = store.get_job(1)
    assert job is not None and job.state == JobState.FAILED
    assert "nested 16 levels deep" in (job.error_message or "")


def test_many_hostile_rows_do_not_stall_the_queue(sql_store: Store, tmp_path: Path,
                                                  clock: FakeClock) -> None:
    """More refused rows than one claim refuses: each claim refuses its share, the good
    job at the end is reached, every hostile row ends FAILED with its reason."""
    store = sql_store
    seed_store(store, tmp_path, clock.now(), jobs=40)
    for job_id in range(1, 40):
        rewrite(store, job_id, "params", deep_text(200))
    got = None
    for _ in range(5):
        got = claim(store, clock)
        if got is not None:
            break
    assert got is not None and got.job.id == 40
    failed = [j for j in store.list_jobs() if j.state == JobState.FAILED]
    assert len(failed) == 39


def test_routed_jobs_with_huge_routes_are_refused_not_loaded(
        sql_store: Store, tmp_path: Path, clock: FakeClock) -> None:
    """Three waiting jobs another provider's account may take over, each with a 50 MB
    route (issue 34: the claim fetched them, worker 74 -> 588 MB): the claim reads no route
    over the bound, and refuses those rows with the reason instead."""
    store = sql_store
    seed_store(store, tmp_path, clock.now(), jobs=3)
    for job_id in (1, 2, 3):
        rewrite(store, job_id, "provider", "other")
        rewrite(store, job_id, "route", "r" * (50 * 1024 * 1024))
        rewrite(store, job_id, "route_order", "|other|mock|")
    assert claim(store, clock) is None
    for job_id in (1, 2, 3):
        refused = store.get_job(job_id)
        assert refused is not None and refused.state == JobState.FAILED, refused
        assert refused.error_message is not None and "its route is" in refused.error_message
        assert refused.route is None
