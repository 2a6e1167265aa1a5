"""What the account cards show (renders live, spend today, the daily cap), kept in memory
and refreshed from the journal every few seconds (issue 33 item 4).

Before, every account event read the journal twice (``live_count`` and the whole
``spend_summary``), and every finished render wakes a pump pass that publishes its
account: at 1,000 renders in flight those reads were a fifth of the journal thread. Now
one hop reads both for every account at most once per ``refresh_seconds``; between two
reads the live count follows this engine's own claims and finished workers.

These figures are shown, never decided on: a claim counts the account's free slots and
checks its spend caps in SQL, in its own transaction (DESIGN.md invariant 2), whatever
is shown here.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from reelqueue.engine.async_store import AsyncStore
from reelqueue.store.base import Store
from reelqueue.store.spend import AccountSpend, SpendSummary, local_day_start


@dataclass(frozen=True)
class Reading:
    """One read of the journal: renders live per account and the spend summary."""

    live: dict[str, int] = field(default_factory=dict)
    spend: SpendSummary = field(default_factory=SpendSummary)


def _read(store: Store, now: float) -> Reading:
    """On the journal thread: both figures in one hop."""
    return Reading(dict(store.counts().live_by_account),
                   store.spend_summary(now, local_day_start(now)))


class AccountFigures:
    """Attributes:
    refresh_seconds: the least time between two reads of the journal.
    reads: how many times the journal was read (for tests and benchmarks).
    """

    def __init__(self, store: AsyncStore, now: Callable[[], float],
                 refresh_seconds: float) -> None:
        self._store = store
        self._now = now
        self.refresh_seconds = refresh_seconds
        self._reading: Reading | None = None
        self._read_at = float("-inf")
        self._moved: dict[str, int] = {}  # this engine's claims less its ended workers
        self.reads = 0

    def stale(self) -> bool:
        return self._reading is None or self._now() - self._read_at >= self.refresh_seconds

    async def refresh(self, *, force: bool = False) -> bool:
        """Read the journal if the figures are older than ``refresh_seconds`` (or
        ``force``); True when read."""
        if not (force or self.stale()):
            return False
        now = self._now()
        reading = await self._store.call(_read, self._store.sync, now)
        self.reads += 1
        self._reading, self._read_at, self._moved = reading, now, {}
        return True

    def claimed(self, account: str) -> None:
        """This engine claimed a job of ``account`` (shown live until the next read)."""
        self._moved[account] = self._moved.get(account, 0) + 1

    def ended(self, account: str) -> None:
        """A worker of this engine on ``account`` ended (its job left flight, or stays
        for a later start: the next read says which)."""
        self._moved[account] = self._moved.get(account, 0) - 1

    def live(self, account: str) -> int:
        """Renders live on ``account``: the last read plus what moved since, never below
        zero."""
        read = self._reading.live.get(account, 0) if self._reading else 0
        return max(0, read + self._moved.get(account, 0))

    def spend(self, account: str) -> AccountSpend | None:
        """The account's spend today as last read; None before the first read or for an
        account the read did not see."""
        if self._reading is None:
            return None
        return next((a for a in self._reading.spend.accounts if a.account == account), None)
