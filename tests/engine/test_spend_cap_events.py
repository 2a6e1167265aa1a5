"""The account card hears of a daily cap change at once (engine AccountEvent)."""

from __future__ import annotations

import asyncio
import random
from pathlib import Path

import pytest

from reelqueue.domain.models import AccountSpec
from reelqueue.engine.engine import Engine
from reelqueue.engine.events import AccountEvent
from reelqueue.store.memory import MemoryStore
from tests.engine import user_commands
from tests.engine.fakes import FakeProvider
from tests.engine.test_engine import FAST, install
from tests.engine.test_spend_caps import PRICE, add_priced_batch

pytestmark = pytest.mark.unit


def last_card(events: list[object], name: str) -> AccountEvent:
    return [e for e in events if isinstance(e, AccountEvent) and e.name == name][-1]


async def test_a_daily_cap_set_from_the_window_is_published_while_paused(
    tmp_path: Path,
) -> None:
    providers = install(FakeProvider())
    store = MemoryStore()
    add_priced_batch(store, tmp_path, 3, cap=None)
    store.add_account(AccountSpec("a", "fake", 2), 0)
    engine = Engine(store, providers=providers, config=FAST, rng=random.Random(1))
    events: list[object] = []
    engine.bus.subscribe(events.append)
    await engine.start(paused=True)
    try:
        account = await user_commands.set_daily_cap(engine, "a", 2 * PRICE)
        assert account.settings["daily_cap"] == 2 * PRICE
        card = last_card(events, "a")  # no pump pass runs while paused
        assert card.daily_cap == 2 * PRICE and card.spent_today == 0.0
        await user_commands.set_daily_cap(engine, "a", None)
        assert last_card(events, "a").daily_cap is None
        assert "daily_cap" not in store.get_account("a").settings  # type: ignore[union-attr]
    finally:
        await engine.stop()
        engine.close_store()


async def test_a_daily_cap_changed_by_another_process_reaches_the_card_on_the_next_pass(
    tmp_path: Path,
) -> None:
    providers = install(FakeProvider())
    store = MemoryStore()
    store.add_account(AccountSpec("a", "fake", 2), 0)
    engine = Engine(store, providers=providers, config=FAST, rng=random.Random(1))
    events: list[object] = []
    engine.bus.subscribe(events.append)
    await engine.start()
    try:
        async with asyncio.timeout(10):  # the first pass publishes the card
            while not [e for e in events if isinstance(e, AccountEvent)]:
                await asyncio.sleep(0.01)
        assert last_card(events, "a").daily_cap is None
        # 'reelqueue accounts set a --daily-cap 5' writes the journal only (no engine call).
        store.update_account("a", 1.0, settings={"daily_cap": 5.0})
        engine.wake()
        async with asyncio.timeout(10):
            while last_card(events, "a").daily_cap != 5.0:
                await asyncio.sleep(0.01)
    finally:
        await engine.stop()
        engine.close_store()
