"""Overload slows starting, never finishing (DESIGN.md invariant 16, issue 33 item 1):
while the engine's event loop lags, the pump claims at most a few jobs a pass and looks
again soon; the renders already running go on and every job still completes."""

from __future__ import annotations

import asyncio
import random
from dataclasses import replace
from pathlib import Path

import pytest

from reelqueue.domain.models import AccountSpec
from reelqueue.domain.states import JobState
from reelqueue.engine.engine import Engine
from reelqueue.engine.load import LoopGauge
from reelqueue.store.memory import MemoryStore
from tests.engine.fakes import FakeProvider
from tests.engine.test_engine import FAST, add_batch, install

pytestmark = pytest.mark.unit


class StuckGauge(LoopGauge):
    """A loop that lags as long as ``lagging`` says (the test's switch, not the clock)."""

    def __init__(self) -> None:
        super().__init__()
        self.lagging = True

    @property
    def lag(self) -> float:
        return 2.0 if self.lagging else 0.0


async def _engine(tmp_path: Path, gauge: LoopGauge) -> tuple[Engine, FakeProvider,
                                                            MemoryStore]:
    provider = FakeProvider()
    provider.gate = asyncio.Event()  # renders stay running until the test opens it
    store = MemoryStore()
    add_batch(store, tmp_path, [f"p{i}" for i in range(12)])
    store.add_account(AccountSpec("a", "fake", 10), 0)
    config = replace(FAST, overload_claims_per_pass=1, overload_retry_seconds=60.0)
    engine = Engine(store, providers=install(provider), config=config,
                    rng=random.Random(1), gauge=gauge)
    await engine.start()
    return engine, provider, store


async def _first_pass(engine: Engine, provider: FakeProvider, live: int) -> None:
    """Until the first pass is done and ``live`` renders were created (progress, not
    time)."""
    while engine._passes < 1 or provider.live < live:
        await asyncio.sleep(0.005)


async def test_a_lagging_loop_slows_claims_and_every_render_still_finishes(
        tmp_path: Path) -> None:
    gauge = StuckGauge()
    engine, provider, store = await _engine(tmp_path, gauge)
    try:
        await asyncio.wait_for(_first_pass(engine, provider, 1), 10)
        assert engine._last_pass_claims == 1, "one claim a pass while the loop lags"
        assert engine._braked and provider.max_live <= engine._passes, "one a pass at most"
        gauge.lagging = False  # the loop catches up: the renders finish, claims resume
        assert provider.gate is not None
        provider.gate.set()
        engine.wake()
        await asyncio.wait_for(engine.run_until_drained(), 30)
        assert {j.state for j in store.list_jobs()} == {JobState.COMPLETED}
    finally:
        await engine.stop()


async def test_a_loop_that_keeps_up_fills_every_slot_at_once(tmp_path: Path) -> None:
    gauge = StuckGauge()
    gauge.lagging = False
    engine, provider, store = await _engine(tmp_path, gauge)
    try:
        await asyncio.wait_for(_first_pass(engine, provider, 10), 10)
        assert engine._passes >= 1 and provider.max_live == 10 and not engine._braked
        assert provider.gate is not None
        provider.gate.set()
        await asyncio.wait_for(engine.run_until_drained(), 30)
        assert {j.state for j in store.list_jobs()} == {JobState.COMPLETED}
    finally:
        await engine.stop()


async def test_the_gauge_reads_the_loops_own_lateness() -> None:
    gauge = LoopGauge(interval=0.01, window=50)
    gauge.start()
    try:
        while len(gauge._recent) < 2:  # readings come as the loop turns
            await asyncio.sleep(0.01)
        import time
        time.sleep(0.3)  # the loop is held: the next reading comes back late
        before = len(gauge._recent)
        while len(gauge._recent) == before:
            await asyncio.sleep(0.01)
        assert gauge.lag >= 0.25 and gauge.overloaded(0.2)
    finally:
        await gauge.stop()
