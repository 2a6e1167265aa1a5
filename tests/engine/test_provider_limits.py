"""Limits from the provider in the engine (issue 32 item 3): an account set to 5 on a tier
allowing 2 never has more than 2 renders open at the provider, also at connect (before its
first read has landed); a re-read raising the limit to 4 gives 4 without a restart; a
second model has its own limit; the user's 5 is kept."""

from __future__ import annotations

import asyncio
import random
from collections.abc import Callable
from pathlib import Path

import pytest

from reelqueue.domain.account_view import AccountView, ModelLimit
from reelqueue.domain.clock import FakeClock
from reelqueue.domain.models import AccountSpec, BatchSpec, JobSpec
from reelqueue.engine.account_views import VIEW_EVERY_SECONDS
from reelqueue.engine.engine import Engine
from reelqueue.providers.base import RenderRequest
from reelqueue.store.base import Store
from reelqueue.store.memory import MemoryStore
from reelqueue.store.sqlite import SqliteStore
from tests.engine.fakes import FakeProvider
from tests.engine.test_engine import FAST, install

pytestmark = pytest.mark.unit


class TieredProvider(FakeProvider):
    """A fake adapter whose account view publishes per-model limits (``limits``, changed
    by the test) and that counts the renders open per model."""

    def __init__(self, clock: FakeClock) -> None:
        super().__init__()
        self.clock = clock
        self.limits: tuple[ModelLimit, ...] = ()
        self.model_of: dict[str, str] = {}
        self.most_open: dict[str, int] = {}
        self.view_reads = 0
        self.gate = asyncio.Event()  # polls wait: renders stay open until it is set

    async def account_view(self) -> AccountView:
        self.view_reads += 1
        await asyncio.sleep(0.05)  # a read takes a while: claims must not run ahead of it
        return AccountView("ignored", None, self.limits, None, self.clock.now())

    async def submit(self, request: RenderRequest) -> str:
        render_id = await super().submit(request)
        self.model_of[render_id] = str(request.params.get("model"))
        for model, count in self.open_by_model().items():
            self.most_open[model] = max(self.most_open.get(model, 0), count)
        return render_id

    def open_by_model(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for render_id, render in self.renders.items():
            if not render.get("done"):
                model = self.model_of.get(render_id, "?")
                counts[model] = counts.get(model, 0) + 1
        return counts


async def until(check: Callable[[], bool], engine: Engine, seconds: float = 10.0) -> None:
    for _ in range(int(seconds / 0.01)):
        if check():
            return
        engine.wake()
        await asyncio.sleep(0.01)
    raise AssertionError("never came true")


async def settle(engine: Engine) -> None:
    """A few passes, so a claim the limits should refuse had its chances."""
    for _ in range(5):
        engine.wake()
        await asyncio.sleep(0.02)
    await engine.views.wait()


@pytest.fixture(params=["memory", "sqlite"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Store:
    if request.param == "memory":
        return MemoryStore()
    return SqliteStore.open(tmp_path / "journal.sqlite3", now=1.0)


async def test_five_set_two_allowed_never_more_than_two_open_and_a_reread_gives_four(
    store: Store, tmp_path: Path,
) -> None:
    clock = FakeClock(1_000_000.0)
    provider = TieredProvider(clock)
    provider.limits = (ModelLimit("gen4.5", 2, None), ModelLimit("gen4_turbo", 1, None))
    batch = store.create_batch(BatchSpec("b", "s.csv", str(tmp_path / "out")), 0)
    store.add_jobs(batch.id, [
        JobSpec(f"k{i}", f"prompt {i}", "fake", str(tmp_path / "out" / f"{i:03d}.mp4"),
                params={"model": "gen4.5" if i < 6 else "gen4_turbo"})
        for i in range(9)], 0)
    store.add_account(AccountSpec("acct", "fake", 5), 0)
    engine = Engine(store, config=FAST, clock=clock, rng=random.Random(1),
                    providers=install(provider), instance_id="instance-A")
    await engine.start()
    try:
        await until(lambda: provider.open_by_model() == {"gen4.5": 2, "gen4_turbo": 1},
                    engine)
        await settle(engine)
        assert provider.open_by_model() == {"gen4.5": 2, "gen4_turbo": 1}
        assert provider.most_open == {"gen4.5": 2, "gen4_turbo": 1}, "never more, at connect"
        assert store.get_account("acct").capacity == 5, "the user's setting is kept"
        # The tier goes up: the next read (every 5 min) gives 4, without a restart.
        provider.limits = (ModelLimit("gen4.5", 4, None), ModelLimit("gen4_turbo", 1, None))
        clock.advance(VIEW_EVERY_SECONDS + 1)
        await until(lambda: provider.open_by_model().get("gen4.5") == 4, engine)
        await settle(engine)
        assert provider.open_by_model() == {"gen4.5": 4, "gen4_turbo": 1}
        provider.gate.set()
        await until(lambda: len(provider.renders) == 9 and not provider.open_by_model(),
                    engine)
        assert provider.most_open == {"gen4.5": 4, "gen4_turbo": 1}
    finally:
        provider.gate.set()
        await engine.stop()
        engine.close_store()
