"""Following a team database's changes (issue 21): the window re-reads the jobs other
machines changed, from the ledger. An entry can commit after one with a higher number (a
transaction still open on another machine): the follower reads again from below what it
saw and picks such a late entry up, once."""

from __future__ import annotations

from typing import Any, cast

import pytest

from reelqueue.application.session import Session
from reelqueue.application.views import FOLLOW_OVERLAP, ChangeFollower
from reelqueue.domain.models import LedgerEntry

pytestmark = pytest.mark.unit


class _Journal:
    def __init__(self) -> None:
        self.entries: list[LedgerEntry] = []

    def commit(self, seq: int, job_id: int | None) -> None:
        self.entries.append(LedgerEntry(seq, float(seq), "x", job_id, None, None, {}))

    async def ledger(self, job_id: int | None = None,
                     limit: int | None = None) -> list[LedgerEntry]:
        ordered = sorted(self.entries, key=lambda e: e.seq)
        return ordered[-limit:] if limit else ordered

    async def ledger_after(self, seq: int, limit: int) -> list[LedgerEntry]:
        return sorted((e for e in self.entries if e.seq > seq), key=lambda e: e.seq)[:limit]


class _Session:
    def __init__(self, journal: _Journal) -> None:
        self.journal = journal


async def test_new_and_late_entries_are_named_once() -> None:
    journal = _Journal()
    for seq in range(1, 6):
        journal.commit(seq, seq)
    session = cast(Session, cast(Any, _Session(journal)))
    follower = ChangeFollower()
    await follower.start(session)
    assert await follower.changed(session) == ([], False)  # what was there is read
    journal.commit(7, 70)  # 6 is still open on another machine
    journal.commit(8, None)  # an import: names no job
    assert await follower.changed(session) == ([70], True)
    journal.commit(6, 60)  # commits late, below what was seen
    assert await follower.changed(session) == ([60], True)
    assert await follower.changed(session) == ([], False)
    for seq in range(9, 9 + FOLLOW_OVERLAP + 50):
        journal.commit(seq, seq % 4)
    ids, anything = await follower.changed(session)
    assert anything and ids == [1, 2, 3, 0]
    assert follower.newest == 8 + FOLLOW_OVERLAP + 50
    assert await follower.changed(session) == ([], False)
