"""Never run an account dry, in the engine (issue 32 item 4): a batch whose cost is twice
the account's published balance sends exactly floor(balance / price) creates, none
refused for credits, the rest wait with "credits low" (a stall the run reports) and
start when a read shows a top-up, or with a route move to the next candidate as recorded
hand-overs; the same with two engines on one journal."""

from __future__ import annotations

import asyncio
import random
from dataclasses import replace
from pathlib import Path

import pytest

from reelqueue.domain.account_view import AccountView, Balance, Charging
from reelqueue.domain.clock import FakeClock
from reelqueue.domain.models import AccountSpec, Batch, BatchSpec, JobSpec
from reelqueue.domain.routes import Candidate, Route, RoutePolicy
from reelqueue.domain.states import AccountStatus, JobState
from reelqueue.engine.account_views import VIEW_EVERY_SECONDS
from reelqueue.engine.engine import Engine
from reelqueue.providers.base import ParamSpec
from reelqueue.providers.builtin import builtin_registry
from reelqueue.providers.registry import ProviderInfo, ProviderRegistry
from reelqueue.store.base import Store
from reelqueue.store.memory import MemoryStore
from reelqueue.store.sqlite import SqliteStore
from tests.engine.fakes import FakeProvider
from tests.engine.test_account_views import one_pass
from tests.engine.test_engine import FAST

pytestmark = pytest.mark.unit

PRICE = 0.6  # USD: 60 credits at $0.01


class CreditsProvider(FakeProvider):
    """A fake adapter whose account view publishes a balance in credits."""

    def __init__(self, clock: FakeClock, credits: float) -> None:
        super().__init__()
        self.clock = clock
        self.credits = credits

    async def account_view(self) -> AccountView:
        return AccountView("ignored", Balance(self.credits, "credits"), (), None,
                           self.clock.now())


def install(provider: FakeProvider) -> ProviderRegistry:
    return builtin_registry().with_provider(ProviderInfo(
        "fake", "Fake", lambda client, cfg: provider,
        ParamSpec(charging=Charging("create", "credits", 0.01)), None, requires_key=False))


def add_jobs(store: Store, tmp_path: Path, count: int) -> None:
    batch = store.create_batch(BatchSpec("b", "s.csv", str(tmp_path / "out")), 0)
    store.add_jobs(batch.id, [
        JobSpec(f"k{i}", f"prompt {i}", "fake", str(tmp_path / "out" / f"{i:03d}.mp4"),
                metadata={"price": PRICE})
        for i in range(count)], 0)
    store.add_account(AccountSpec("acct", "fake", 20), 0)


@pytest.fixture(params=["memory", "sqlite"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Store:
    if request.param == "memory":
        return MemoryStore()
    return SqliteStore.open(tmp_path / "journal.sqlite3", now=1.0)


async def test_twice_the_balance_sends_what_it_pays_for_and_a_top_up_resumes(
    store: Store, tmp_path: Path,
) -> None:
    clock = FakeClock(1_000_000.0)
    provider = CreditsProvider(clock, 300.0)
    add_jobs(store, tmp_path, 10)
    engine = Engine(store, config=FAST, clock=clock, rng=random.Random(1),
                    providers=install(provider), instance_id="instance-A")
    await engine.start()
    try:
        result = await asyncio.wait_for(engine.run_until_drained(), 20)
        assert result.outcome == "stalled" and "credits low on acct" in result.detail
        assert sum(provider.creates.values()) == 5, "floor(300 / 60), sent exactly"
        states = [j.state for j in store.list_jobs()]
        assert states.count(JobState.COMPLETED) == 5 and states.count(JobState.QUEUED) == 5
        account = store.get_account("acct")
        assert account is not None and account.status is AccountStatus.READY, (
            "none refused for credits")
        # A top-up: the next read (every 5 min) shows it, and the rest start.
        provider.credits = 300.0
        clock.advance(VIEW_EVERY_SECONDS + 1)
        result = await asyncio.wait_for(engine.run_until_drained(), 20)
        assert result.outcome == "drained"
        assert sum(provider.creates.values()) == 10
    finally:
        await engine.stop()
        engine.close_store()


async def test_two_engines_on_one_journal_send_what_the_balance_pays_for(
    tmp_path: Path,
) -> None:
    """Two machines of a team, one provider account: the first starts what 120 credits
    pay for, and the second, counting those, starts none; a read shows 180 (the provider
    took the 120): the second starts 3, and the first, counting those, none."""
    clock = FakeClock(1_000_000.0)
    path = tmp_path / "journal.sqlite3"
    first, second = SqliteStore.open(path, now=1.0), SqliteStore.open(path, now=1.0)
    add_jobs(first, tmp_path, 10)
    provider = CreditsProvider(clock, 120.0)
    provider.gate = asyncio.Event()  # renders stay open: both engines claim meanwhile
    config = replace(FAST, shared_store=True)
    engines = [Engine(store, config=config, clock=clock, rng=random.Random(i),
                      providers=install(provider), instance_id=f"instance-{i}")
               for i, store in enumerate((first, second))]

    async def settle() -> None:
        for _ in range(50):
            for engine in engines:
                engine.wake()
            await asyncio.sleep(0.01)

    await engines[0].start()
    try:
        await settle()
        assert sum(provider.creates.values()) == 2
        await engines[1].start()
        await settle()
        assert sum(provider.creates.values()) == 2, "the second counts the first's creates"
        provider.credits = 180.0
        clock.advance(1)
        engines[0].pause()
        first.put_account_view(AccountView("acct", Balance(180.0, "credits"), (), None,
                                           clock.now(), "instance-0"))
        await settle()
        assert sum(provider.creates.values()) == 5, "the second starts what 180 pays for"
        engines[0].resume()
        await settle()
        assert sum(provider.creates.values()) == 5, "the first counts the second's"
        owners = {str(e.detail.get("owner")) for e in first.ledger() if e.event == "claimed"}
        assert owners == {"instance-0", "instance-1"}, "both engines claimed"
        provider.gate.set()
        for engine in engines:
            await asyncio.wait_for(engine.run_until_drained(), 20)
        assert sum(provider.creates.values()) == 5
        assert [j.state for j in first.list_jobs()].count(JobState.QUEUED) == 5
    finally:
        for engine in engines:
            await engine.stop()
            engine.close_store()


async def test_with_a_route_what_the_balance_cannot_pay_for_moves_to_the_next_candidate(
    store: Store, tmp_path: Path,
) -> None:
    clock = FakeClock(1_000_000.0)
    dear = CreditsProvider(clock, 300.0)
    other = FakeProvider()
    registry = install(dear).with_provider(ProviderInfo(
        "fake2", "Fake 2", lambda client, cfg: other, ParamSpec(), None, requires_key=False))
    route = Route(RoutePolicy.ORDER, (Candidate("fake", {"duration": 5}, PRICE),
                                      Candidate("fake2", {"duration": 5}, 0.5)))
    batch = store.create_batch(BatchSpec("b", "s.csv", str(tmp_path / "out")), 0)
    store.add_jobs(batch.id, [
        JobSpec(f"k{i}", f"p{i}", "fake", str(tmp_path / "out" / f"{i:03d}.mp4"),
                params={"duration": 5}, metadata={"price": PRICE}, route=route)
        for i in range(10)], 0)
    store.add_account(AccountSpec("acct", "fake", 20), 0)
    store.add_account(AccountSpec("acct2", "fake2", 20), 0)
    engine = Engine(store, config=FAST, clock=clock, rng=random.Random(1),
                    providers=registry, instance_id="instance-A")
    await engine.start()
    try:
        result = await asyncio.wait_for(engine.run_until_drained(), 20)
        assert result.outcome == "drained"
        assert sum(dear.creates.values()) == 5 and sum(other.creates.values()) == 5
        moved = [e for e in store.ledger() if e.event == "handed_over"]
        assert len(moved) == 5 and {e.account for e in moved} == {"acct2"}
        account = store.get_account("acct")
        assert account is not None and account.status is AccountStatus.READY
    finally:
        await engine.stop()
        engine.close_store()


def _add_batch(store: Store, tmp_path: Path, name: str, count: int) -> Batch:
    batch = store.create_batch(BatchSpec(name, "s.csv", str(tmp_path / name)), 0)
    store.add_jobs(batch.id, [
        JobSpec(f"{name}{i}", f"prompt {i}", "fake", str(tmp_path / name / f"{i:03d}.mp4"),
                metadata={"price": PRICE})
        for i in range(count)], 0)
    return batch


async def test_a_new_batch_is_claimed_on_a_view_read_for_it(store: Store,
                                                             tmp_path: Path) -> None:
    """"Before a batch's first claim" (issue 32 item 2): the view read at connect showed
    300 credits; two minutes later another tool on the key has spent all but 60. A batch
    added then is claimed only after its own read: one render of 60 credits, not five on
    the two-minute-old balance; a batch added while that read is a minute old or less is
    claimed on it, with no new read."""
    clock = FakeClock(1_000_000.0)
    provider = CreditsProvider(clock, 300.0)
    reads = 0
    viewed = provider.account_view

    async def counted() -> AccountView:
        nonlocal reads
        reads += 1
        return await viewed()

    provider.account_view = counted  # type: ignore[method-assign]
    store.add_account(AccountSpec("acct", "fake", 20), 0)
    engine = Engine(store, config=FAST, clock=clock, rng=random.Random(1),
                    providers=install(provider), instance_id="instance-A")
    await engine.start()
    try:
        await one_pass(engine)  # it starts the account's read at connect, and that read
        assert reads == 1, "read at connect"
        provider.credits = 60.0  # spent elsewhere: the journal's view still says 300
        clock.advance(120)
        _add_batch(store, tmp_path, "late", 5)
        engine.wake()
        result = await asyncio.wait_for(engine.run_until_drained(), 20)
        assert reads == 2, "the new batch's own read"
        assert result.outcome == "stalled" and "credits low on acct" in result.detail
        assert sum(provider.creates.values()) == 1, "what 60 credits pay, not 300"
        clock.advance(30)
        provider.credits = 600.0
        _add_batch(store, tmp_path, "next", 1)
        engine.wake()
        await asyncio.wait_for(engine.run_until_drained(), 20)
        assert reads == 2, "a view 30 s old is fresh enough: no read for this batch"
        assert sum(provider.creates.values()) == 1, "and it still gates on 60 credits"
    finally:
        await engine.stop()
        engine.close_store()


async def test_a_batch_added_during_a_pass_has_one_claim_before_its_read(
        tmp_path: Path) -> None:
    """A batch added after the pass read the newest batch id (another task or process
    wrote it meanwhile): its first claim shows it, and the account claims no more until its
    view is read again; the rest of the batch starts on the new read (120 credits: two
    renders in all, not the five the old 300 would pay)."""
    clock = FakeClock(1_000_000.0)
    store = SqliteStore.open(tmp_path / "journal.sqlite3", now=1.0)
    provider = CreditsProvider(clock, 300.0)
    store.add_account(AccountSpec("acct", "fake", 20), 0)
    engine = Engine(store, config=FAST, clock=clock, rng=random.Random(1),
                    providers=install(provider), instance_id="instance-A")
    await engine.start()
    try:
        await one_pass(engine)  # it starts the account's read at connect, and that read
        provider.credits = 120.0
        clock.advance(120)
        batch = _add_batch(store, tmp_path, "late", 5)
        stale = iter([None])  # the next pass reads the newest batch as it was before

        def newest_batch_id() -> int | None:
            return next(stale, batch.id)

        store.newest_batch_id = newest_batch_id  # type: ignore[method-assign]
        engine.wake()
        result = await asyncio.wait_for(engine.run_until_drained(), 20)
        assert result.outcome == "stalled" and "credits low on acct" in result.detail
        assert sum(provider.creates.values()) == 2, "one on the old view, then the read"
        (view,) = store.account_views()
        assert view.balance == Balance(120.0, "credits") and view.read_at == clock.now()
    finally:
        await engine.stop()
        engine.close_store()
