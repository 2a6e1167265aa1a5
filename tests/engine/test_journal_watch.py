"""The engine notices another connection's commit (issue 32): ``Store.changed_elsewhere``
asked every ``journal_watch_seconds`` wakes the pump, so jobs another process imports (or
an account view it keeps) are claimed at once, not at the safety net; and a journal
another connection writes all the time (a commit every few ms) costs at most one pump
pass per look, never a busy loop."""

from __future__ import annotations

import asyncio
import random
import time
from dataclasses import replace
from pathlib import Path

import pytest

from reelqueue.domain.models import AccountSpec
from reelqueue.domain.states import JobState
from reelqueue.engine.engine import Engine
from reelqueue.store.sqlite import SqliteStore
from tests.engine.fakes import FakeProvider
from tests.engine.test_engine import FAST, add_batch, install

pytestmark = pytest.mark.unit

WATCHED = replace(FAST, safety_net_seconds=600.0, journal_watch_seconds=0.05)


async def asleep(engine: Engine) -> None:
    """Until the pump has claimed what it could and sleeps: no pass under way (with no
    wake-up, its next pass is the safety net's, 600 s away)."""
    await engine.run_until_drained()
    while not engine._passes_started >= 1 or engine._passes < engine._passes_started:
        await asyncio.sleep(0.01)


class CountingStore(SqliteStore):
    """The SQLite journal, counting the engine's looks at it."""

    looks = 0

    def changed_elsewhere(self) -> bool:
        type(self).looks += 1
        return super().changed_elsewhere()


async def test_jobs_another_connection_imports_are_claimed_without_the_safety_net(
        tmp_path: Path) -> None:
    path = tmp_path / "journal.sqlite3"
    store = SqliteStore.open(path, now=1.0)
    store.add_account(AccountSpec("acct", "fake", 2), 0)
    provider = FakeProvider()
    engine = Engine(store, config=WATCHED, rng=random.Random(1),
                    providers=install(provider), instance_id="instance-A")
    command = SqliteStore.open(path, now=1.0)  # another process's connection
    await engine.start()
    try:
        await asleep(engine)
        passes = engine._passes_started
        add_batch(command, tmp_path, ["a fox", "a hen", "an owl"])  # nobody is told
        for _ in range(30_000):  # bounded by the engine's own looks, not by a guess
            done = [j for j in command.list_jobs() if j.state == JobState.COMPLETED]
            if len(done) == 3:
                break
            await asyncio.sleep(0.01)
        assert len(done) == 3
        assert engine._passes_started > passes
    finally:
        await engine.stop()
        engine.close_store()
        command.close()


async def test_a_journal_written_all_the_time_wakes_one_pass_per_look(
        tmp_path: Path) -> None:
    path = tmp_path / "journal.sqlite3"
    CountingStore.looks = 0
    store = CountingStore.open(path, now=1.0)
    store.add_account(AccountSpec("acct", "fake", 2), 0)
    engine = Engine(store, config=WATCHED, rng=random.Random(1),
                    providers=install(FakeProvider()), instance_id="instance-A")
    command = SqliteStore.open(path, now=1.0)
    await engine.start()
    try:
        await asleep(engine)
        passes, looks = engine._passes_started, CountingStore.looks
        writes = 0
        stop_at = time.monotonic() + 1.0
        while time.monotonic() < stop_at or CountingStore.looks < looks + 5:
            command.update_account("acct", 0, capacity=2 + writes % 2)  # a commit each
            writes += 1
            await asyncio.sleep(0.005)
        woken = engine._passes_started - passes
        looked = CountingStore.looks - looks
    finally:
        await engine.stop()
        engine.close_store()
        command.close()
    assert looked >= 5 and writes > looked  # many commits between two looks
    assert 1 <= woken <= looked + 1, (woken, looked, writes)
