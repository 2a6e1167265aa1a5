"""The start-up check of finished videos: reads (id, path, size) rows, stats each file."""

from __future__ import annotations

from pathlib import Path

import pytest

from reelqueue.domain.clock import FakeClock
from reelqueue.engine.engine import Engine
from reelqueue.store.base import ClaimParams, Store
from reelqueue.store.memory import MemoryStore
from tests.conftest import seed_store

pytestmark = pytest.mark.unit


def complete(store: Store, clock: FakeClock, size: int) -> int:
    claim = store.claim_next_job(ClaimParams("acct-a", "me", clock.now(), 60))
    assert claim is not None
    token = claim.token
    assert store.mark_submitting(token, "ct", clock.now())
    assert store.record_submitted(token, f"pj-{token.job_id}", clock.now())
    assert store.mark_downloading(token, clock.now())
    assert store.mark_completed(token, size=size, sha256="ab" * 32, cost=None, now=clock.now())
    return claim.job.id


def test_completed_outputs_lists_only_completed_jobs(
    store: Store, tmp_path: Path, clock: FakeClock
) -> None:
    seed_store(store, tmp_path, clock.now(), jobs=3, accounts={"acct-a": 1})
    done = complete(store, clock, 42)
    assert store.claim_next_job(ClaimParams("acct-a", "me", clock.now(), 60)) is not None
    job = store.get_job(done)
    assert job is not None
    assert store.completed_outputs() == [(done, job.output_path, 42)]


# The seeded mock account has no server: the engine says it cannot be used, which is not
# what this test is about (the output check at start is).
@pytest.mark.expect_warnings("account acct-a cannot be used")
async def test_start_reports_completed_videos_gone_or_changed(
    tmp_path: Path, clock: FakeClock
) -> None:
    store = MemoryStore()
    seed_store(store, tmp_path, clock.now(), jobs=3, accounts={"acct-a": 1})
    kept, gone, changed = (complete(store, clock, 10) for _ in range(3))
    for job_id, size in ((kept, 10), (changed, 11)):
        job = store.get_job(job_id)
        assert job is not None
        Path(job.output_path).parent.mkdir(parents=True, exist_ok=True)
        Path(job.output_path).write_bytes(b"x" * size)
    engine = Engine(store, clock=clock)
    report = await engine.start()
    await engine.stop()
    engine.close_store()
    assert sorted(report.missing_outputs) == sorted([gone, changed])
