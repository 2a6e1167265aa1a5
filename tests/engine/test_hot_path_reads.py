"""No journal read per poll or per event (issue 33 item 4): what the cards show (renders
live, spend today, the cap) is read every few seconds, and a drain with renders running
reads nothing; the claim's checks stay in SQL (counted too: one claim per job started)."""

from __future__ import annotations

import asyncio
import random
from collections import Counter
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from reelqueue.domain.models import AccountSpec
from reelqueue.domain.states import JobState
from reelqueue.engine.engine import Engine
from reelqueue.engine.events import AccountEvent, JobEvent
from reelqueue.store.memory import MemoryStore
from tests.engine.fakes import FakeProvider, Script
from tests.engine.test_engine import FAST, add_batch, install

pytestmark = pytest.mark.unit

# The reads an account card or a drain used to make for each event.
FIGURE_READS = ("spend_summary", "live_count", "counts")


class CountingStore:
    """The memory store with every call counted by name (nothing else changed)."""

    def __init__(self, inner: MemoryStore) -> None:
        self._inner = inner
        self.calls: Counter[str] = Counter()

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._inner, name)
        if not callable(attr):
            return attr

        def counted(*args: Any, **kwargs: Any) -> Any:
            self.calls[name] += 1
            return attr(*args, **kwargs)

        return counted


async def _drain(store: CountingStore, figures_seconds: float,
                 provider: FakeProvider) -> tuple[Engine, list[object]]:
    engine = Engine(store, config=replace(FAST, figures_seconds=figures_seconds),  # type: ignore[arg-type]
                    providers=install(provider), rng=random.Random(1))
    events: list[object] = []
    engine.bus.subscribe(events.append)
    await engine.start()
    try:
        result = await asyncio.wait_for(engine.run_until_drained(), 60)
    finally:
        await engine.stop()
        engine.close_store()
    assert result.outcome == "drained"
    return engine, events


def _count(events: list[object], kind: type, test: Callable[[Any], bool]) -> int:
    return sum(1 for e in events if isinstance(e, kind) and test(e))


async def test_polls_and_events_read_no_figures_from_the_journal(tmp_path: Path) -> None:
    polls_each, jobs = 20, 16
    prompts = [f"shot {i}" for i in range(jobs)]
    # Renders of different lengths: they end one by one, as real ones do.
    provider = FakeProvider({p: Script(polls=polls_each + i) for i, p in enumerate(prompts)})
    inner = MemoryStore()
    add_batch(inner, tmp_path, prompts)
    for name in ("a", "b", "c", "d"):
        inner.add_account(AccountSpec(name, "fake", 2), 0)
    store = CountingStore(inner)
    # The figures are never older than the test: one read at the first pass, none after.
    engine, events = await _drain(store, 3600.0, provider)

    assert all(j.state == JobState.COMPLETED for j in inner.list_jobs())
    polls = sum(provider.polls_of.values())
    assert polls >= jobs * (polls_each + 1)
    progress = _count(events, JobEvent, lambda e: e.state == JobState.RENDERING)
    cards = _count(events, AccountEvent, lambda e: True)
    assert progress >= jobs * polls_each, "each poll still says how the render goes"
    # A card is published when what it shows changed (a claim and a finish on one
    # account between two passes leave it as it was): how often depends on how the
    # passes fall; every account's card is published at its first claims.
    assert {e.name for e in events if isinstance(e, AccountEvent)} == set("abcd")
    assert cards >= 4
    # The figures are read when nothing runs here (the first pass, and a pass after
    # the last render ended; one more if a slow machine lets a wave end before the next
    # pass), else never in this test: none per poll, per progress event or per card. The
    # drain counts the jobs only when nothing runs.
    assert 1 <= store.calls["spend_summary"] <= 4, store.calls
    assert store.calls["live_count"] == 0, store.calls
    assert store.calls["counts"] <= 4 + 4, store.calls  # the figures' own, the drain's
    assert 1 <= engine.figures.reads <= 4
    # One progress write per change of the render's sub-status (not one per poll), one
    # claim per job started (the claim's SQL checks), one completion per job.
    assert store.calls["record_progress"] == jobs, store.calls
    assert store.calls["mark_completed"] == jobs, store.calls
    # What the cards show ends right, from memory: nothing live on any account.
    assert {n: engine.figures.live(n) for n in "abcd"} == {"a": 0, "b": 0, "c": 0, "d": 0}


async def test_figures_are_read_again_once_they_are_old(tmp_path: Path) -> None:
    """A zero refresh reads every time a card is published: the figures follow the
    journal (the bound above comes from the refresh time, not from skipping reads)."""
    prompts = [f"shot {i}" for i in range(6)]
    provider = FakeProvider({p: Script(polls=3) for p in prompts})
    inner = MemoryStore()
    add_batch(inner, tmp_path, prompts)
    inner.add_account(AccountSpec("a", "fake", 2), 0)
    store = CountingStore(inner)
    engine, events = await _drain(store, 0.0, provider)
    cards = _count(events, AccountEvent, lambda e: True)
    assert store.calls["spend_summary"] >= engine.figures.reads >= cards > 1
