"""Minimal, deterministic tests for engine bugs the proof suite found (docs/proof.md).

Each reproduces, in-process and without timing luck, a failure first seen in one of the
process-level proof tests.
"""

from __future__ import annotations

import asyncio
import random
from pathlib import Path
from typing import Any

import pytest

from reelqueue.domain.backoff import BackoffPolicy
from reelqueue.domain.clock import FakeClock
from reelqueue.domain.models import AccountSpec, BatchSpec, JobSpec
from reelqueue.domain.states import JobState
from reelqueue.engine.config import EngineConfig
from reelqueue.engine.engine import Engine
from reelqueue.providers.base import ParamSpec
from reelqueue.providers.builtin import builtin_registry
from reelqueue.providers.registry import ProviderInfo
from reelqueue.store.base import ClaimParams, JobError
from reelqueue.store.memory import MemoryStore
from tests.engine.fakes import FakeProvider

pytestmark = pytest.mark.unit

FAST = EngineConfig(retry_backoff=BackoffPolicy(0.001, 0.01), poll_backoff=BackoffPolicy(
    0.001, 0.01), poll_min_seconds=0.0005, heartbeat_seconds=0.05)


class TimeMovesOnAfterEachClaim(MemoryStore):
    """The memory store, with a clock that moves on by ``step`` after every claim call:
    what a loaded machine does between a pump pass and the next statement."""

    def __init__(self, clock: FakeClock, step: float) -> None:
        super().__init__()
        self.clock = clock
        self.step = step

    def claim_next_job(self, params: ClaimParams) -> Any:
        try:
            return super().claim_next_job(params)
        finally:
            self.clock.advance(self.step)


async def test_a_retry_falling_due_during_the_stall_check_is_not_a_stall(
    tmp_path: Path,
) -> None:
    """Found by test_fault_matrix.py::test_disk_full_during_download (about 1 run in 7).

    A job waits out a short retry. The drain loop asks whether the queue is stalled: a
    fresh pump pass finds the job not yet due (claims nothing), then ``next_wakeup(now)``
    is asked with a *later* now, when the job is already due, so it reports no future
    wake-up. The drain returned "stalled" (``reelqueue run`` exits 3) with a healthy
    account, and the job was claimed by the pump an instant later and left in flight.
    """
    provider = FakeProvider()
    providers = builtin_registry().with_provider(ProviderInfo(
        "fake", "Fake", lambda client, config: provider, ParamSpec(), None,
        requires_key=False))
    clock = FakeClock()
    store = TimeMovesOnAfterEachClaim(clock, step=1.0)
    batch = store.create_batch(BatchSpec("b", "s.csv", str(tmp_path)), clock.now())
    store.add_jobs(batch.id, [JobSpec("k", "p", "fake", str(tmp_path / "k.mp4"))], clock.now())
    store.add_account(AccountSpec("acct", "fake", 1), clock.now())
    claim = store.claim_next_job(ClaimParams("acct", "earlier", clock.now(), 60))
    assert claim is not None
    # The first attempt failed; the retry falls due between two claim calls.
    assert store.set_retry_wait(claim.token, JobError("retryable", "provider error", "x"),
                                clock.now() + 0.5, clock.now(), keep_provider_job=False)
    engine = Engine(store, config=FAST, clock=clock, rng=random.Random(1), providers=providers)
    await engine.start()
    try:
        result = await asyncio.wait_for(engine.run_until_drained(), 20)
    finally:
        await engine.stop()
        engine.close_store()
    job = store.get_job(1)
    assert result.outcome == "drained", (result, job)
    assert job is not None and job.state == JobState.COMPLETED
