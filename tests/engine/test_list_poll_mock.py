"""List polling through the real engine and the real mock server (loopback): renders the
mock's list does not show yet (its list delay) are polled on their own and complete,
each created once; renders it shows are answered by list reads."""

from __future__ import annotations

import asyncio
import random
import time
from pathlib import Path

import pytest

from reelqueue.domain.backoff import BackoffPolicy
from reelqueue.domain.models import AccountSpec, BatchSpec, JobSpec
from reelqueue.domain.states import JobState
from reelqueue.engine.config import EngineConfig
from reelqueue.engine.engine import Engine
from reelqueue.mockprovider.options import MockOptions
from reelqueue.mockprovider.server import MockProviderServer
from reelqueue.store.memory import MemoryStore

pytestmark = pytest.mark.integration

CONFIG = EngineConfig(retry_backoff=BackoffPolicy(0.05, 0.2),
                      poll_backoff=BackoffPolicy(0.05, 0.2), poll_min_seconds=0.01,
                      heartbeat_seconds=1.0, http_timeout_seconds=2.0)
JOBS = 6


async def _drain(tmp_path: Path, options: MockOptions) -> tuple[MemoryStore, dict[str, int],
                                                                 Engine]:
    store = MemoryStore()
    with MockProviderServer(options) as server:
        batch = store.create_batch(BatchSpec("b", "s.csv", str(tmp_path)), time.time())
        store.add_jobs(batch.id, [JobSpec(f"k{i}", f"shot {i}", "mock",
                                          str(tmp_path / f"{i}.mp4")) for i in range(JOBS)],
                       time.time())
        store.add_account(AccountSpec("acct", "mock", JOBS, server.url), time.time())
        engine = Engine(store, config=CONFIG, rng=random.Random(2))
        try:
            await engine.start()
            # A bound for a hung run only; the assertions count requests, not seconds.
            result = await asyncio.wait_for(engine.run_until_drained(), 60)
        finally:
            await engine.stop()
            engine.close_store()
        assert result.outcome == "drained"
        counters = server.counters()
    return store, counters, engine


def _all_completed_once(store: MemoryStore, counters: dict[str, int]) -> None:
    assert [job.state for job in store.list_jobs()] == [JobState.COMPLETED] * JOBS
    assert counters["creates_by_job_key"] == {f"k{i}": 1 for i in range(JOBS)}


async def test_renders_not_listed_yet_are_polled_alone_and_complete(tmp_path: Path) -> None:
    options = MockOptions(render_seconds_min=0.2, render_seconds_max=0.3, seed=3,
                          list_delay_min=30.0, list_delay_max=30.0)
    store, counters, engine = await _drain(tmp_path, options)
    _all_completed_once(store, counters)
    # The list never showed them: every answer came from a render's own poll.
    assert counters["lists_total"] >= 1
    assert counters["polls_total"] >= JOBS
    assert engine.polling.listed.get("acct", 0) == 0
    assert engine.polling.missed["acct"] >= 1


async def test_listed_renders_are_answered_by_list_reads(tmp_path: Path) -> None:
    options = MockOptions(render_seconds_min=1.0, render_seconds_max=1.5, seed=3)
    store, counters, engine = await _drain(tmp_path, options)
    _all_completed_once(store, counters)
    assert engine.polling.listed["acct"] >= JOBS
    assert counters["lists_total"] == engine.polling.list_calls["acct"]
    assert counters["lists_total"] < engine.polling.listed["acct"]
