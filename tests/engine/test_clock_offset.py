"""A worker knows and reports its clock's offset to the team database's (DESIGN.md
invariant 14, issue 19): measured at start and at every heartbeat, logged, warned about
past ``OFFSET_WARN_SECONDS``, and written in the instances registry."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Iterator

import pytest

from reelqueue.domain.clock import FakeClock, SkewedClock, SystemClock
from reelqueue.engine.clock_offset import (
    OFFSET_WARN_SECONDS,
    ClockReading,
    ClockWatch,
    measure_offset,
)
from reelqueue.engine.config import EngineConfig
from reelqueue.engine.engine import Engine
from reelqueue.store.memory import MemoryStore
from reelqueue.store.postgres import PostgresStore
from tests import pgserver

pytestmark = pytest.mark.unit


@pytest.fixture
def team_store(pg_dsn: str) -> Iterator[PostgresStore]:
    """A team journal on the real server's clock."""
    schema = pgserver.new_schema_name()
    store = PostgresStore.open(pg_dsn, now=time.time(), schema=schema)
    yield store
    store.close()
    pgserver.drop_schema(pg_dsn, schema)


def test_the_offset_is_measured_against_the_servers_clock(team_store: PostgresStore) -> None:
    honest = measure_offset(team_store, SystemClock())
    assert honest is not None
    # The same machine's clock: the offset is within the round trip (plus rounding).
    assert abs(honest.offset) <= honest.round_trip / 2 + 0.01, honest
    fast = measure_offset(team_store, SkewedClock(30.0))
    slow = measure_offset(team_store, SkewedClock(-30.0))
    assert fast is not None and slow is not None
    assert fast.offset == pytest.approx(30.0, abs=0.05)
    assert slow.offset == pytest.approx(-30.0, abs=0.05)
    assert "30.0" in fast.sentence() and "ahead of" in fast.sentence()
    assert "behind" in slow.sentence()


def test_a_store_of_one_machine_has_no_offset() -> None:
    assert measure_offset(MemoryStore(), FakeClock()) is None


@pytest.mark.expect_warnings("clock is 31.000 s ahead")
def test_an_offset_past_the_bound_is_warned_once(caplog: pytest.LogCaptureFixture) -> None:
    watch = ClockWatch("db")
    with caplog.at_level(logging.DEBUG, logger="reelqueue.engine.clock_offset"):
        watch.update(ClockReading(0.004, 0.002))
        watch.update(ClockReading(31.0, 0.002))
        watch.update(ClockReading(31.0, 0.002))
        watch.update(ClockReading(0.1, 0.002))
    levels = [(r.levelname, r.getMessage()) for r in caplog.records]
    assert [lv for lv, _ in levels] == ["INFO", "WARNING", "INFO"], levels
    assert "more than 5 s" in levels[1][1] and "set-ntp" in levels[1][1]
    assert "back within" in levels[2][1]
    assert OFFSET_WARN_SECONDS == 5.0  # docs/team.md says so
    assert watch.to_server(100.0) == pytest.approx(99.9)


@pytest.mark.expect_warnings("clock is 30.0\\d\\d s ahead")
async def test_a_worker_writes_its_offset_in_the_registry(team_store: PostgresStore) -> None:
    config = EngineConfig(shared_store=True, lease_seconds=30.0, heartbeat_seconds=0.05)
    engine = Engine(team_store, config=config, clock=SkewedClock(30.0))
    offset = await engine.measure_clock()
    assert offset == pytest.approx(30.0, abs=0.05)
    team_store.register_instance(engine.instance_id, host="h", pid=1, version="v",
                                 clock_offset=offset, lease_seconds=30.0)
    await engine.start()
    try:
        (row,) = team_store.list_instances()
        assert row.clock_offset == pytest.approx(30.0, abs=0.05)
        assert row.lease_seconds == 30.0
        heartbeat = row.heartbeat_at

        async def next_beat() -> None:
            while team_store.list_instances()[0].heartbeat_at == heartbeat:
                await asyncio.sleep(0.02)

        await asyncio.wait_for(next_beat(), 60)  # a hang's guard; beats come every 0.05 s
        (row,) = team_store.list_instances()
        assert row.clock_offset == pytest.approx(30.0, abs=0.05)
        assert abs(row.heartbeat_at - time.time()) < 5, "the heartbeat is the server's time"
        assert row.silent_for < 5
    finally:
        await engine.stop()
        engine.close_store()
