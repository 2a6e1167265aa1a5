"""Store.ledger's tail (``limit``): the last entries, oldest first, of all jobs or of one;
on every store (the PostgreSQL store reads only the tail from the server)."""

from __future__ import annotations

import pytest

from reelqueue.domain.clock import FakeClock
from reelqueue.store.base import Store

pytestmark = pytest.mark.unit


def test_the_ledger_tail_is_the_last_entries_oldest_first(
    store: Store, clock: FakeClock
) -> None:
    for n in range(5):
        store.note(f"e{n}", clock.now() + n, job_id=n % 2)
    assert [e.event for e in store.ledger()] == ["e0", "e1", "e2", "e3", "e4"]
    assert [e.event for e in store.ledger(limit=2)] == ["e3", "e4"]
    assert [e.event for e in store.ledger(job_id=0)] == ["e0", "e2", "e4"]
    assert [e.event for e in store.ledger(job_id=0, limit=2)] == ["e2", "e4"]
    assert [e.event for e in store.ledger(job_id=1, limit=9)] == ["e1", "e3"]
    assert store.ledger(job_id=7, limit=3) == []


def test_the_entries_after_a_sequence_number_in_order_and_bounded(
    store: Store, clock: FakeClock
) -> None:
    """Store.ledger_after: what a window on a team database reads to follow the changes
    other machines make."""
    for n in range(5):
        store.note(f"e{n}", clock.now() + n, job_id=n % 2)
    every = store.ledger()
    first = every[0].seq
    assert [e.event for e in store.ledger_after(first, 10)] == ["e1", "e2", "e3", "e4"]
    assert [e.event for e in store.ledger_after(first, 2)] == ["e1", "e2"]
    assert [e.event for e in store.ledger_after(0, 100)] == [e.event for e in every]
    assert store.ledger_after(every[-1].seq, 10) == []
