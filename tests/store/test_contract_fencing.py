"""Every fenced write refuses a claim that was replaced, on every store (issue 15: the
PostgreSQL store's fencing is checked write by write, not only where the state machine
happens to try it)."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from pathlib import Path

import pytest

from reelqueue.domain.clock import FakeClock
from reelqueue.domain.models import ClaimToken
from reelqueue.store.base import ClaimParams, JobError, Store
from tests.conftest import seed_store

pytestmark = pytest.mark.unit

ERR = JobError("retryable", "provider error", "boom")

WRITES: dict[str, Callable[[Store, ClaimToken, float], bool]] = {
    "submitting": lambda s, t, now: s.mark_submitting(t, "ct-late", now),
    "submitted": lambda s, t, now: s.record_submitted(t, "pj-late", now),
    "rendering": lambda s, t, now: s.mark_rendering(t, now),
    "progress": lambda s, t, now: s.record_progress(t, "running", 0.5, now),
    "downloading": lambda s, t, now: s.mark_downloading(t, now),
    "completed": lambda s, t, now: s.mark_completed(t, size=1, sha256="ab" * 32, cost=None,
                                                    now=now),
    "retry_wait": lambda s, t, now: s.set_retry_wait(t, ERR, now + 5, now,
                                                     keep_provider_job=False),
    "released": lambda s, t, now: s.release_to_queue(t, ERR, now),
    "failed": lambda s, t, now: s.mark_failed(t, ERR, now),
    "parked": lambda s, t, now: s.park_job(t, ERR, now),
}


@pytest.mark.parametrize("write", sorted(WRITES))
def test_a_replaced_claim_changes_nothing(
    store: Store, tmp_path: Path, clock: FakeClock, write: str
) -> None:
    seed_store(store, tmp_path, clock.now(), jobs=1, accounts={"acct-a": 1})
    old = store.claim_next_job(ClaimParams("acct-a", "inst-1", clock.now(), 60))
    assert old is not None
    assert store.release_to_queue(old.token, ERR, clock.now())
    new = store.claim_next_job(ClaimParams("acct-a", "inst-2", clock.now(), 60))
    assert new is not None and new.job.id == old.job.id
    assert store.mark_submitting(new.token, "ct-new", clock.now())
    assert store.record_submitted(new.token, "pj-new", clock.now())
    if write == "completed":  # the state each write accepts: only the token refuses
        assert store.mark_downloading(new.token, clock.now())
    before = store.get_job(old.job.id)
    assert WRITES[write](store, old.token, clock.now()) is False
    after = store.get_job(old.job.id)
    assert after is not None and before is not None
    assert dataclasses.replace(after, updated_at=0) == dataclasses.replace(before,
                                                                           updated_at=0)
    assert store.ledger()[-1].event == "fenced_out"
    assert store.ledger()[-1].claim_token == old.token.token
