"""Polls when they can matter (issue 33 item 3), counted against a fixed schedule on
virtual time (tests/engine/virtual_time.py): no assertion reads the wall clock.

- A provider without progress or hint: the first poll of a render comes near its kind's
  typical time (from the engine's own completions, and from the journal at the next start),
  the later ones on the poll back-off; the poll count is what that schedule gives.
- A thousand renders resumed at once: the account's polls are spread within its budget
  (never more than the budget in any minute), every render is polled once before any is
  polled twice, and another account's polls wait for none of them.
"""

from __future__ import annotations

import asyncio
import bisect
import random
from pathlib import Path

import pytest

from reelqueue.domain.models import AccountSpec, BatchSpec, JobSpec
from reelqueue.domain.states import JobState, RemotePhase
from reelqueue.engine.config import EngineConfig
from reelqueue.engine.engine import Engine
from reelqueue.engine.polling import PollPlanner, first_poll_wait, poll_budget
from reelqueue.providers.base import ParamSpec, RemoteStatus, RenderRequest
from reelqueue.providers.builtin import builtin_registry
from reelqueue.providers.registry import ProviderInfo, ProviderRegistry
from reelqueue.store.memory import MemoryStore
from tests.engine.fakes import FakeProvider, Script
from tests.engine.virtual_time import LoopClock, VirtualTimeLoop, run

pytestmark = pytest.mark.unit

CONFIG = EngineConfig()  # the defaults: the schedule under test is the shipped one


class SteadyProvider(FakeProvider):
    """Renders of exactly ``seconds`` of the loop's time whose poll answers carry neither
    progress nor a hint (as Replicate's predictions: no progress); records every poll."""

    def __init__(self, seconds: float, polls_per_minute: float, prefix: str) -> None:
        super().__init__()
        self.prefix = prefix  # render ids unique across the providers of one journal
        self.seconds = seconds
        self.polls_per_minute = polls_per_minute
        self.started: dict[str, float] = {}
        self.poll_times: dict[str, list[float]] = {}

    def _create(self, request: RenderRequest, script: Script) -> str:
        render_id = super()._create(request, script)
        ours = f"{self.prefix}-{render_id}"
        self.renders[ours] = self.renders.pop(render_id)
        self.by_token[request.client_token] = ours
        return ours

    async def submit(self, request: RenderRequest) -> str:
        render_id = await super().submit(request)
        self.started[render_id] = asyncio.get_running_loop().time()
        return render_id

    async def poll(self, provider_job_id: str) -> RemoteStatus:
        now = asyncio.get_running_loop().time()
        self.poll_times.setdefault(provider_job_id, []).append(now)
        if now - self.started[provider_job_id] >= self.seconds:
            return RemoteStatus(RemotePhase.SUCCEEDED, "succeeded", cost=0.1,
                                video_url=f"mem://{provider_job_id}")
        return RemoteStatus(RemotePhase.RUNNING, "running")

    def all_polls(self) -> list[tuple[float, str]]:
        return sorted((t, r) for r, times in self.poll_times.items() for t in times)


class CountingStore(MemoryStore):
    """Counts the reads of the typical times: once per engine start, never per poll."""

    times_read = 0

    def recent_render_times(self, limit: int = 2_000) -> list[tuple[str, float]]:
        self.times_read += 1
        return super().recent_render_times(limit)


def registry(providers: dict[str, FakeProvider]) -> ProviderRegistry:
    out = builtin_registry()
    for kind, provider in providers.items():
        out = out.with_provider(ProviderInfo(kind, kind, lambda client, cfg, p=provider: p,
                                             ParamSpec(), None, requires_key=False))
    return out


def add_jobs(store: MemoryStore, tmp_path: Path, kind: str, count: int, tag: str) -> None:
    batch = store.create_batch(BatchSpec(tag, "s.csv", str(tmp_path / tag)), 0)
    store.add_jobs(batch.id, [JobSpec(f"{tag}{i}", f"{tag} {i}", kind,
                                      str(tmp_path / tag / f"{i:04d}.mp4"))
                              for i in range(count)], 0)


def scheduled_polls(first: float, length: float) -> int:
    """Polls a render of ``length`` seconds gets when first polled ``first`` seconds after
    its create, then on the config's back-off (no hint): the fixed schedule."""
    at, polls = first, 1
    while at < length:
        at += CONFIG.poll_backoff.ceiling(polls)
        polls += 1
    return polls


# -- the rules on their own -----------------------------------------------------------------
def test_the_first_poll_is_a_fraction_of_the_typical_time_never_after_the_hint() -> None:
    assert first_poll_wait(None, fraction=0.8, hint=5.0, floor=0.05, ceiling=300) is None
    assert first_poll_wait(60.0, fraction=0.8, hint=None, floor=0.05, ceiling=300) == 48.0
    assert first_poll_wait(60.0, fraction=0.8, hint=5.0, floor=0.05, ceiling=300) == 5.0
    assert first_poll_wait(3600.0, fraction=0.8, hint=None, floor=0.05, ceiling=300) == 300
    assert first_poll_wait(0.01, fraction=0.8, hint=None, floor=0.05, ceiling=300) == 0.05
    assert first_poll_wait(float("nan"), fraction=0.8, hint=None, floor=0.05,
                           ceiling=300) is None


def test_an_account_whose_answers_carry_progress_is_polled_at_once() -> None:
    planner = PollPlanner(now=lambda: 0.0)
    planner.load([("k", 60.0), ("k", float("inf")), ("k", -1.0)])
    assert planner.render_times.range("k") is not None
    assert planner.render_times.range("k").samples == 1  # type: ignore[union-attr]
    assert planner.first_wait("a", "k", fraction=0.8, floor=0.05, ceiling=300) == 48.0
    planner.answered("a", progress=False, hint=7.0)
    assert planner.first_wait("a", "k", fraction=0.8, floor=0.05, ceiling=300) == 7.0
    planner.answered("a", progress=True, hint=None)
    planner.answered("a", progress=False, hint=None)  # a queued answer: progress stays
    assert planner.first_wait("a", "k", fraction=0.8, floor=0.05, ceiling=300) is None
    assert planner.first_wait("b", "other", fraction=0.8, floor=0.05, ceiling=300) is None


def test_a_budget_comes_from_the_provider_else_from_capacity() -> None:
    class Publishes:
        polls_per_minute = 3_000

    class Garbles:
        polls_per_minute = "lots"

    assert poll_budget(Publishes(), 25) == 3_000.0
    assert poll_budget(Garbles(), 25) == 25 * 60.0
    assert poll_budget(object(), 0) == 60.0


# -- the schedule through the engine ----------------------------------------------------------
LENGTH = 60.0


async def _run_batches(tmp_path: Path, loop: VirtualTimeLoop
                       ) -> tuple[SteadyProvider, SteadyProvider]:
    store = CountingStore()
    store.add_account(AccountSpec("a", "steady", 10), 0)
    first = SteadyProvider(LENGTH, polls_per_minute=3_000, prefix="one")
    add_jobs(store, tmp_path, "steady", 30, "one")
    engine = Engine(store, providers=registry({"steady": first}), clock=LoopClock(loop),
                    rng=random.Random(7))
    await engine.start()
    assert (await engine.run_until_drained()).outcome == "drained"
    await engine.stop()
    engine.close_store()
    # A restart: the typical time is read back from the journal, once.
    second = SteadyProvider(LENGTH, polls_per_minute=3_000, prefix="two")
    add_jobs(store, tmp_path, "steady", 10, "two")
    engine = Engine(store, providers=registry({"steady": second}), clock=LoopClock(loop),
                    rng=random.Random(8))
    await engine.start()
    assert (await engine.run_until_drained()).outcome == "drained"
    await engine.stop()
    engine.close_store()
    assert all(job.state == JobState.COMPLETED for job in store.list_jobs())
    assert store.times_read == 2, "read once at each start, never per poll"
    return first, second


def test_polls_follow_the_fixed_schedule_and_the_first_comes_near_the_typical_time(
        tmp_path: Path) -> None:
    loop = VirtualTimeLoop()
    first, second = run(_run_batches(tmp_path, loop), loop)
    blind = scheduled_polls(0.0, LENGTH)  # no typical time yet: at once, then the back-off
    offsets = {r: first.poll_times[r][0] - first.started[r] for r in first.started}
    # The first ten (the account's capacity) start before any render of their kind ended.
    opening = sorted(first.started, key=first.started.__getitem__)[:10]
    for render in opening:
        # At once, give or take the account's budget spacing (3,000 a minute: 0.02 s).
        assert offsets[render] <= 10 * 60.0 / 3_000 + 1e-6, (render, offsets[render])
        assert len(first.poll_times[render]) == blind
    # Every later render, in this run and after the restart, is first polled near its
    # kind's typical time (0.8 of the range's low end) and then on the back-off.
    later = [(first, r) for r in first.started if r not in opening] + [
        (second, r) for r in second.started]
    assert len(later) == 30
    for provider, render in later:
        offset = provider.poll_times[render][0] - provider.started[render]
        assert 0.75 * LENGTH <= offset <= LENGTH, (render, offset)
        assert len(provider.poll_times[render]) == scheduled_polls(offset, LENGTH)
    total = sum(len(t) for t in first.poll_times.values()) + sum(
        len(t) for t in second.poll_times.values())
    assert total <= 10 * blind + 30 * scheduled_polls(0.75 * LENGTH, LENGTH)
    assert total < 40 * blind * 0.75, "the typical time saves a quarter of the polls or more"


# -- a thousand renders resumed at once ---------------------------------------------------------
BUDGET_A = 600.0  # a poll every 0.1 s
BUDGET_B = 600.0
RENDERS_A = 1_000
RENDERS_B = 5


async def _resume_a_thousand(tmp_path: Path, loop: VirtualTimeLoop
                             ) -> tuple[SteadyProvider, SteadyProvider, float]:
    store = MemoryStore()
    store.add_account(AccountSpec("a", "slowa", RENDERS_A), 0)
    store.add_account(AccountSpec("b", "slowb", RENDERS_B), 0)
    add_jobs(store, tmp_path, "slowa", RENDERS_A, "a")
    add_jobs(store, tmp_path, "slowb", RENDERS_B, "b")
    a = SteadyProvider(3_600.0, polls_per_minute=BUDGET_A, prefix="a")
    b = SteadyProvider(3_600.0, polls_per_minute=BUDGET_B, prefix="b")
    engine = Engine(store, providers=registry({"slowa": a, "slowb": b}),
                    clock=LoopClock(loop), rng=random.Random(1))
    await engine.start()
    # Bounded by progress: every render created and polled once.
    for _ in range(10_000):
        if len(a.poll_times) == RENDERS_A and len(b.poll_times) == RENDERS_B:
            break
        await asyncio.sleep(1.0)
    assert len(a.poll_times) == RENDERS_A and len(b.poll_times) == RENDERS_B
    await engine.stop(orderly=False)  # killed: every render is reattached at the start
    engine.close_store()
    a.poll_times.clear()
    b.poll_times.clear()
    engine = Engine(store, providers=registry({"slowa": a, "slowb": b}),
                    clock=LoopClock(loop), rng=random.Random(2))
    restarted = loop.time()
    await engine.start()
    await asyncio.sleep(150.0)  # 150 s of the loop's time: 1,500 slots of account a
    await engine.stop(orderly=False)
    engine.close_store()
    return a, b, restarted


@pytest.fixture(scope="module")
def resumed(tmp_path_factory: pytest.TempPathFactory
            ) -> tuple[SteadyProvider, SteadyProvider, float]:
    loop = VirtualTimeLoop()
    return run(_resume_a_thousand(tmp_path_factory.mktemp("resume"), loop), loop)


def test_a_thousand_resumed_renders_poll_within_the_budget_in_every_minute(
        resumed: tuple[SteadyProvider, SteadyProvider, float]) -> None:
    a, _, restarted = resumed
    times = [t for t, _ in a.all_polls()]
    per_minute = int(BUDGET_A)
    assert len(times) >= RENDERS_A, "every resumed render was polled"
    # Any budget + 1 polls span a minute or more: never more than the budget in a minute.
    for i in range(len(times) - per_minute):
        assert times[i + per_minute] - times[i] >= 60.0, (i, times[i])
    # No herd: in the first second after the restart, a second's share of the budget.
    assert bisect.bisect_left(times, restarted + 1.0) <= BUDGET_A / 60 + 1
    # Fair, oldest due first: all thousand are polled once before any is polled twice.
    first_thousand = {render for _, render in a.all_polls()[:RENDERS_A]}
    assert len(first_thousand) == RENDERS_A


def test_one_accounts_budget_does_not_delay_another_accounts_polls(
        resumed: tuple[SteadyProvider, SteadyProvider, float]) -> None:
    a, b, restarted = resumed
    first_b = [times[0] for times in b.poll_times.values()]
    assert len(first_b) == RENDERS_B
    # Account b's polls take b's own slots (0.1 s apart), not places behind a's 1,000.
    assert max(first_b) - restarted <= RENDERS_B * 60.0 / BUDGET_B + 1.0
    a_first = sorted(times[0] for times in a.poll_times.values())
    assert a_first[-1] - restarted >= (RENDERS_A - 1) * 60.0 / BUDGET_A - 1e-6
