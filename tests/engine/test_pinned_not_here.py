"""A job pinned to an account not configured here waits with that reason (issue 34, N1):
the engine's Stalled state names the account, and run's stop says it."""

from __future__ import annotations

import asyncio
import random
from pathlib import Path

import pytest

from reelqueue.domain.models import AccountSpec, BatchSpec, JobSpec
from reelqueue.engine.engine import Engine
from reelqueue.engine.events import EngineStateEvent
from reelqueue.store.memory import MemoryStore
from tests.engine.fakes import FakeProvider
from tests.engine.test_engine import FAST, install
from tests.engine.test_spend_caps import _until

pytestmark = pytest.mark.unit


async def test_the_stalled_state_names_the_account_a_job_is_pinned_to(tmp_path: Path) -> None:
    provider = FakeProvider()
    store = MemoryStore()
    batch = store.create_batch(BatchSpec("b", "s.csv", str(tmp_path / "out")), 0)
    store.add_jobs(batch.id, [
        JobSpec("k0", "p0", "fake", str(tmp_path / "out" / "0.mp4"), row_number=2),
        JobSpec("k1", "p1", "fake", str(tmp_path / "out" / "1.mp4"), row_number=3,
                pinned_account="studio-x")], 0)
    store.add_account(AccountSpec("a", "fake", 2), 0)
    engine = Engine(store, providers=install(provider), config=FAST, rng=random.Random(1))
    events: list[object] = []
    engine.bus.subscribe(events.append)
    await engine.start()
    try:
        result = await asyncio.wait_for(engine.run_until_drained(), 20)
        assert result.outcome == "stalled"
        assert result.detail == ("1 job waits: 1 job pinned to account studio-x, which is "
                                 "not configured here"), result.detail

        def said() -> bool:
            return any(r.code == "not_configured" and r.subject == "studio-x"
                       for e in events if isinstance(e, EngineStateEvent)
                       and e.state == "stalled" for r in e.reasons)

        await asyncio.wait_for(_until(said), 10)
    finally:
        await engine.stop()
        engine.close_store()
