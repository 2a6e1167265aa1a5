"""Polls land when a render should finish, not a whole hint period after it."""

from __future__ import annotations

import asyncio
import random
import time
from pathlib import Path

import pytest

from reelqueue.domain.models import AccountSpec, BatchSpec, JobSpec
from reelqueue.domain.states import JobState, RemotePhase
from reelqueue.engine.config import EngineConfig
from reelqueue.engine.engine import Engine
from reelqueue.engine.render import poll_wait
from reelqueue.providers.base import RemoteStatus, RenderRequest
from reelqueue.store.memory import MemoryStore
from tests.engine.fakes import FakeProvider
from tests.engine.test_engine import install

pytestmark = pytest.mark.unit


def test_without_a_pace_the_hint_is_kept() -> None:
    assert poll_wait(2.0, 0.05, None, 10.0, 0.5) == 2.0
    assert poll_wait(2.0, 0.05, (9.0, 0.2), 10.0, None) == 2.0
    assert poll_wait(2.0, 0.05, (9.0, 0.5), 10.0, 0.5) == 2.0, "no progress, no estimate"
    assert poll_wait(0.01, 0.05, None, 10.0, None) == 0.05, "never below the floor"


def test_a_render_due_before_the_hint_is_polled_when_due() -> None:
    # 25% -> 75% in 1 s: the last quarter needs another 0.5 s (aimed a little late).
    wait = poll_wait(2.0, 0.05, (9.0, 0.25), 10.0, 0.75)
    assert 0.5 < wait < 0.6
    assert poll_wait(0.2, 0.05, (9.0, 0.25), 10.0, 0.75) == 0.2, "never later than the hint"
    assert poll_wait(2.0, 0.5, (9.0, 0.25), 10.0, 0.999) == 0.5, "never below the floor"


def test_a_render_far_from_its_end_is_looked_at_just_before_it() -> None:
    # 10% -> 20% in 4 s: 32 s left; a hint of 60 s: looked at 0.5 s before the end,
    # then aimed from the pace over the whole span.
    assert poll_wait(60.0, 0.05, (0.0, 0.1), 4.0, 0.2) == pytest.approx(31.5)
    # 0.5 s before the end: the last poll is aimed a little after the end.
    last = poll_wait(60.0, 0.05, (4.0, 0.2), 35.5, 0.9875)
    assert 0.5 < last < 0.52


class PacedProvider(FakeProvider):
    """Renders take ``seconds`` of real time with linear progress; every poll answer asks
    for the next poll only after ``hint`` seconds."""

    def __init__(self, seconds: float, hint: float) -> None:
        super().__init__()
        self.seconds, self.hint = seconds, hint
        self.started: dict[str, float] = {}
        self.polls = 0

    async def submit(self, request: RenderRequest) -> str:
        render_id = await super().submit(request)
        self.started[render_id] = time.monotonic()
        return render_id

    async def poll(self, provider_job_id: str) -> RemoteStatus:
        self.polls += 1
        done = (time.monotonic() - self.started[provider_job_id]) / self.seconds
        if done >= 1.0:
            return RemoteStatus(RemotePhase.SUCCEEDED, "succeeded", cost=0.1,
                                video_url=f"mem://{provider_job_id}")
        return RemoteStatus(RemotePhase.RUNNING, "running", progress=done,
                            poll_after=self.hint)


async def test_the_engine_does_not_wait_out_a_long_hint(tmp_path: Path) -> None:
    provider = PacedProvider(seconds=0.3, hint=30.0)
    providers = install(provider, "paced")
    store = MemoryStore()
    batch = store.create_batch(BatchSpec("b", "s.csv", str(tmp_path)), 0)
    store.add_jobs(batch.id, [JobSpec("k", "p", "paced", str(tmp_path / "k.mp4"))], 0)
    store.add_account(AccountSpec("a", "paced", 1), 0)
    engine = Engine(store, providers=providers, config=EngineConfig(poll_min_seconds=0.01),
                    rng=random.Random(1))
    await engine.start()
    # A fixed 30 s cadence would take 30 s; the pace of the progress says ~0.3 s.
    await asyncio.wait_for(engine.run_until_drained(), 10)
    await engine.stop()
    engine.close_store()
    assert store.list_jobs()[0].state == JobState.COMPLETED
    assert provider.polls <= 6
