"""Spend caps end to end: the engine against a fake provider that counts creates."""

from __future__ import annotations

import asyncio
import random
from collections.abc import Callable
from pathlib import Path

import pytest

from reelqueue.domain.models import AccountSpec, BatchSpec, JobSpec
from reelqueue.domain.states import JobState
from reelqueue.engine.engine import Engine
from reelqueue.engine.events import AccountEvent, EngineStateEvent
from reelqueue.store.memory import MemoryStore
from reelqueue.store.sqlite import SqliteStore
from tests.engine import user_commands
from tests.engine.fakes import FakeProvider
from tests.engine.test_engine import FAST, install

pytestmark = pytest.mark.unit

PRICE = 0.25  # what the fake provider reports as the cost of a render


def add_priced_batch(store: MemoryStore | SqliteStore, tmp_path: Path, count: int,
                     cap: float | None) -> int:
    batch = store.create_batch(BatchSpec("capped", "s.csv", str(tmp_path / "out")), 0)
    store.add_jobs(batch.id, [
        JobSpec(f"k{i}", f"p{i}", "fake", str(tmp_path / "out" / f"{i:03d}.mp4"),
                row_number=i + 2, metadata={"price": PRICE}) for i in range(count)], 0)
    if cap is not None:
        store.update_batch_settings(batch.id, {"max_spend": cap}, 0)
    return batch.id


@pytest.mark.parametrize("kind", ["memory", "sqlite"])
async def test_a_cap_of_five_prices_starts_five_renders_then_raising_it_finishes(
    tmp_path: Path, kind: str,
) -> None:
    provider = FakeProvider()
    providers = install(provider)
    store = MemoryStore() if kind == "memory" else SqliteStore.open(tmp_path / "j.sqlite3", now=0)
    batch_id = add_priced_batch(store, tmp_path, 9, cap=5 * PRICE)
    store.add_account(AccountSpec("a", "fake", 3), 0)
    engine = Engine(store, providers=providers, config=FAST, rng=random.Random(1))
    events: list[object] = []
    engine.bus.subscribe(events.append)
    await engine.start()
    try:
        result = await asyncio.wait_for(engine.run_until_drained(), 20)
        assert result.outcome == "stalled" and "spend cap reached" in result.detail
        assert sum(provider.creates.values()) == 5
        by_state = [j.state for j in store.list_jobs()]
        assert by_state.count(JobState.COMPLETED) == 5
        assert by_state.count(JobState.QUEUED) == 4 and JobState.FAILED not in by_state
        summary = await user_commands.spend_summary(engine)
        assert summary.batches[0].waiting == 4 and summary.batches[0].reached

        def cap_stall() -> bool:  # the pump publishes it after the pass run_until_drained saw
            return any(r.code == "spend_cap" and r.subject == "capped" for e in events
                       if isinstance(e, EngineStateEvent) and e.state == "stalled"
                       for r in e.reasons)

        await asyncio.wait_for(_until(cap_stall), 10)

        assert await user_commands.set_batch_cap(engine, batch_id, 9 * PRICE)
        result = await asyncio.wait_for(engine.run_until_drained(), 20)
        assert result.outcome == "drained"
        assert sum(provider.creates.values()) == 9
        assert {j.state for j in store.list_jobs()} == {JobState.COMPLETED}
        assert max(provider.creates.values()) == 1
    finally:
        await engine.stop()
        engine.close_store()


async def test_an_account_daily_cap_is_published_on_its_card(tmp_path: Path) -> None:
    provider = FakeProvider()
    providers = install(provider)
    store = MemoryStore()
    add_priced_batch(store, tmp_path, 4, cap=None)
    store.add_account(AccountSpec("a", "fake", 2, settings={"daily_cap": 2 * PRICE}), 0)
    engine = Engine(store, providers=providers, config=FAST, rng=random.Random(1))
    events: list[object] = []
    engine.bus.subscribe(events.append)
    await engine.start()
    try:
        result = await asyncio.wait_for(engine.run_until_drained(), 20)
        assert result.outcome == "stalled"
        assert sum(provider.creates.values()) == 2
        cards = [e for e in events if isinstance(e, AccountEvent) and e.name == "a"]
        assert cards[-1].daily_cap == 2 * PRICE
        assert cards[-1].spent_today == pytest.approx(2 * PRICE)
        assert cards[-1].spend_capped and cards[-1].cap_waiting == 2
        await user_commands.set_daily_cap(engine, "a", None)
        result = await asyncio.wait_for(engine.run_until_drained(), 20)
        assert result.outcome == "drained" and sum(provider.creates.values()) == 4
    finally:
        await engine.stop()
        engine.close_store()


async def _until(condition: Callable[[], bool]) -> None:
    while not condition():
        await asyncio.sleep(0.01)
