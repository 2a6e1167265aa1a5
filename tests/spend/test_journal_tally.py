"""The journal's side of cost reconciliation read from every store (SQLite, memory,
PostgreSQL): each create counted once per client token, an intent withdrawn before it left
not counted and its price given back, a create without a price counted as unpriced, the
ledger read in pages as ``spend --reconcile`` reads it."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from reelqueue.application.spend_reconcile import JournalTally
from reelqueue.domain.clock import FakeClock
from reelqueue.domain.models import AccountSpec, BatchSpec, JobSpec
from reelqueue.store.base import ClaimParams, Store

pytestmark = pytest.mark.unit


def test_each_create_once_withdrawn_intents_not_unpriced_said(
        store: Store, clock: FakeClock) -> None:
    store.add_account(AccountSpec("a", "mock", 10), clock.now())
    batch = store.create_batch(BatchSpec("b", "s.csv", "b"), clock.now())
    prices = [0.6, None, 0.6, 0.6]
    store.add_jobs(batch.id, [
        JobSpec(f"k{i}", f"a fox {i}", "mock", f"b/{i}.mp4",
                params={"model": "mock-1", "duration": 5},
                metadata={} if price is None else {"price": price})
        for i, price in enumerate(prices)], clock.now())
    claims = [store.claim_next_job(ClaimParams("a", "inst", clock.now(), 600.0))
              for _ in prices]
    assert all(c is not None for c in claims)
    for i, c in enumerate(claims):
        assert c is not None
        assert store.mark_submitting(c.token, f"ct-{i}", clock.now())
    answered, unpriced, withdrawn, lost = claims
    assert answered is not None and unpriced is not None and withdrawn is not None
    assert lost is not None
    assert store.record_submitted(answered.token, "pj-1", clock.now())
    assert store.record_submitted(unpriced.token, "pj-2", clock.now())
    # an orderly stop before the create left: not a create, its price given back
    assert store.forget_submission(withdrawn.token, clock.now(), {}, event="intent_withdrawn")
    day = datetime.fromtimestamp(clock.now(), UTC).date()
    tally = JournalTally(store.list_jobs(), day, day + timedelta(days=1))
    seq = 0
    while page := store.ledger_after(seq, 3):  # small pages: the paging is exercised
        tally.add(page)
        seq = page[-1].seq
    (only,) = tally.days().values()
    assert (only.account, only.model, only.day) == ("a", "mock-1", day)
    assert only.creates == 3 and only.unpriced == 1 and only.seconds == 15.0
    assert only.priced_usd == pytest.approx(1.2)
    assert only.job_ids == tuple(sorted(c.job.id for c in (answered, unpriced, lost)))
    # another day reads nothing
    other = JournalTally(store.list_jobs(), day - timedelta(days=2), day - timedelta(days=1))
    other.add(store.ledger())
    assert other.days() == {}
