"""The store contract (SQLite, memory, PostgreSQL): a create's intent is written only while
the claim's lease still holds for the create's timeout plus a margin (issue 19).

``mark_submitting(min_lease_seconds=...)`` checks the lease in the intent's own round trip
(on PostgreSQL against the server's clock) and refuses like a fenced-out write: False,
nothing written, a ``fenced_out`` entry saying why. The engine passes
``EngineConfig.create_min_lease_seconds`` on a shared store.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from reelqueue.domain.clock import FakeClock
from reelqueue.domain.states import JobState
from reelqueue.store.base import ClaimParams, Store
from tests.conftest import seed_store

pytestmark = pytest.mark.unit

LEASE = 60.0


def test_a_create_is_refused_when_the_lease_is_too_short_for_it(
    store: Store, tmp_path: Path, clock: FakeClock
) -> None:
    seed_store(store, tmp_path, clock.now(), jobs=1, accounts={"acct-a": 1})
    c = store.claim_next_job(ClaimParams("acct-a", "me", clock.now(), LEASE))
    assert c is not None
    clock.advance(50)  # 10 s of lease left; a create needs 15
    assert not store.mark_submitting(c.token, "ct-1", clock.now(), min_lease_seconds=15)
    job = store.get_job(c.job.id)
    assert job is not None
    assert (job.state, job.claim_token, job.client_token) == (
        JobState.CLAIMED, c.token.token, None), "nothing written: no intent, claim kept"
    (refusal,) = [e for e in store.ledger(c.job.id) if e.event == "fenced_out"]
    assert refusal.claim_token == c.token.token
    assert refusal.detail == {"write": "mark_submitting", "why": "lease too short for a create",
                              "lease_left": 10.0, "min_lease": 15}
    assert not [e for e in store.ledger(c.job.id) if e.event in ("submitting", "spend")]
    # Renewed by a heartbeat, the lease holds again: the intent is written.
    assert store.renew_leases("me", clock.now(), LEASE) == 1
    assert store.mark_submitting(c.token, "ct-1", clock.now(), min_lease_seconds=15)
    job = store.get_job(c.job.id)
    assert job is not None and job.state == JobState.SUBMITTING


def test_exactly_enough_lease_is_enough(store: Store, tmp_path: Path, clock: FakeClock) -> None:
    seed_store(store, tmp_path, clock.now(), jobs=1, accounts={"acct-a": 1})
    c = store.claim_next_job(ClaimParams("acct-a", "me", clock.now(), LEASE))
    assert c is not None
    clock.advance(LEASE - 15)
    assert store.mark_submitting(c.token, "ct-1", clock.now(), min_lease_seconds=15)


def test_without_a_minimum_the_lease_is_not_looked_at(
    store: Store, tmp_path: Path, clock: FakeClock
) -> None:
    """One machine (min_lease_seconds None): nobody takes a lease over while the process
    lives, so a claim whose lease ran out during a laptop's sleep still writes."""
    seed_store(store, tmp_path, clock.now(), jobs=1, accounts={"acct-a": 1})
    c = store.claim_next_job(ClaimParams("acct-a", "me", clock.now(), LEASE))
    assert c is not None
    clock.advance(LEASE * 2)
    assert store.mark_submitting(c.token, "ct-1", clock.now())


def test_a_lost_claim_is_refused_as_before(store: Store, tmp_path: Path, clock: FakeClock) -> None:
    seed_store(store, tmp_path, clock.now(), jobs=1, accounts={"acct-a": 1})
    c = store.claim_next_job(ClaimParams("acct-a", "me", clock.now(), LEASE))
    assert c is not None
    assert store.cancel_jobs([c.job.id], clock.now()) == [c.job.id]
    assert not store.mark_submitting(c.token, "ct-1", clock.now(), min_lease_seconds=15)
    (refusal,) = [e for e in store.ledger(c.job.id) if e.event == "fenced_out"]
    assert refusal.detail == {"write": "mark_submitting"}, "the token's refusal, no lease talk"
