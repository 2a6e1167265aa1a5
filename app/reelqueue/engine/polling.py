"""When a render is polled (issue 33 item 3): poll when it can matter.

Two rules, both in memory (no journal read per poll):

- **The first poll from the typical time.** The engine keeps each render kind's finished
  times (:class:`~reelqueue.domain.render_times.RenderTimes`): read once at start from the
  journal (``recent_render_times``, bounded) and added to by its own completions. A render
  this engine submitted on an account whose answers carry no progress is first polled at
  a fraction of its kind's typical time (the range's low end: p25 once there are enough
  renders), never later than the account's last poll hint, between the config's floor and
  ceiling. Without a typical time, or on an account whose answers carry progress (the pace
  of the progress says when it ends: ``render.poll_wait``), the first poll is at once, as
  before. Later polls keep their pacing.
- **An even spread within the account's budget.** Each account's polls go through a slot
  schedule: one poll every ``60 / per_minute`` seconds at most, in the order the polls
  fell due (the oldest due goes first, so no render waits for ever). The budget is the
  provider's published limit where its adapter gives one (``polls_per_minute``), else
  :func:`default_polls_per_minute` from the account's capacity. A thousand renders
  reattached after a restart then poll spread over seconds, not at one tick. Only polls
  wait for a slot: creates and downloads never do, and no account waits for another's.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from reelqueue.domain.render_times import RenderTimes

POLLS_PER_SLOT_MINUTE = 60.0
"""The default budget per render slot: one poll a second on average, well above what the
poll back-off asks in steady state (one every 5–20 s) and far below a herd."""
MIN_POLLS_PER_MINUTE = 60.0
"""The least default budget of an account, whatever its capacity."""
MAX_POLLS_PER_MINUTE = 600_000.0
"""A published budget above this is read as this (a slot of 0.1 ms)."""


def default_polls_per_minute(capacity: int) -> float:
    """An account's poll budget when its provider publishes none: from its capacity."""
    return max(MIN_POLLS_PER_MINUTE, max(capacity, 1) * POLLS_PER_SLOT_MINUTE)


def published_polls_per_minute(provider: object) -> float | None:
    """The adapter's ``polls_per_minute`` (the provider's documented limit for status
    reads), or None when it gives none or something that is not a positive number."""
    value = getattr(provider, "polls_per_minute", None)
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    if not math.isfinite(value) or value <= 0:
        return None
    return min(float(value), MAX_POLLS_PER_MINUTE)


def poll_budget(provider: object, capacity: int) -> float:
    """Polls per minute an account may make: published, else from its capacity."""
    return published_polls_per_minute(provider) or default_polls_per_minute(capacity)


def first_poll_wait(typical_low: float | None, *, fraction: float, hint: float | None,
                    floor: float, ceiling: float) -> float | None:
    """Seconds from a create's answer to its render's first poll, or None (poll at once)
    when no typical time is known. ``fraction`` of the typical time, never later than the
    provider's ``hint`` when there is one, between ``floor`` and ``ceiling``."""
    if typical_low is None or not math.isfinite(typical_low) or typical_low <= 0:
        return None
    wait = typical_low * fraction
    if hint is not None and math.isfinite(hint) and hint > 0:
        wait = min(wait, hint)
    return min(max(wait, floor), max(floor, ceiling))


@dataclass
class _Account:
    """One account's slot schedule (``interval`` 0: no budget set, no wait) and what its
    last poll answer carried."""

    interval: float = 0.0
    next_slot: float = -math.inf
    progress: bool = False
    hint: float | None = None


class PollPlanner:
    """Attributes:
    render_times: finished renders' times by kind (the journal's at start, then this
        engine's own completions).
    polls: polls that went through a slot, by account (for tests and benchmarks).
    delayed: polls that waited for their slot, by account.
    """

    def __init__(self, now: Callable[[], float] | None = None) -> None:
        # The loop's monotonic time by default: slots are this process's own schedule,
        # never compared across machines (DESIGN.md invariant 14 is for journal times).
        self._now = now
        self.render_times = RenderTimes()
        self._accounts: dict[str, _Account] = {}
        self.polls: dict[str, int] = {}
        self.delayed: dict[str, int] = {}

    def _time(self) -> float:
        return self._now() if self._now is not None else asyncio.get_running_loop().time()

    # -- typical times -----------------------------------------------------------------
    def load(self, times: Iterable[tuple[str, float]]) -> int:
        """Add the journal's finished renders (kind, seconds); how many were kept. A
        value that is not a finite time is left out."""
        kept = 0
        for kind, seconds in times:
            if math.isfinite(seconds) and seconds >= 0:
                self.render_times.add(kind, float(seconds))
                kept += 1
        return kept

    def finished(self, kind: str, seconds: float) -> None:
        """A render of ``kind`` this engine completed took ``seconds`` (claim to file)."""
        if math.isfinite(seconds):
            self.render_times.add(kind, seconds)

    def typical_low(self, kind: str) -> float | None:
        typical = self.render_times.range(kind)
        return None if typical is None else typical.low

    # -- what an account's answers carry -------------------------------------------------
    def answered(self, account: str, *, progress: bool, hint: float | None) -> None:
        """An unfinished render's poll answer on ``account``: whether it carried progress
        and the hint it gave (the last hint given is kept)."""
        state = self._accounts.get(account)
        if state is None:
            state = self._accounts[account] = _Account()
        # Progress once seen stays: a queued answer has none on providers that give it
        # while running.
        state.progress = state.progress or progress
        if hint is not None:
            state.hint = hint

    def first_wait(self, account: str, kind: str, *, fraction: float, floor: float,
                   ceiling: float) -> float | None:
        """Seconds from the create's answer to the first poll (:func:`first_poll_wait`),
        or None (at once) where the account's answers carry progress or no typical time
        of ``kind`` is known."""
        state = self._accounts.get(account)
        if state is not None and state.progress:
            return None
        return first_poll_wait(self.typical_low(kind), fraction=fraction,
                               hint=None if state is None else state.hint,
                               floor=floor, ceiling=ceiling)

    # -- the per-account budget ----------------------------------------------------------
    def set_budget(self, account: str, per_minute: float) -> None:
        """The account's polls per minute from now on (slots already given stand)."""
        # A hair longer than 60 / per_minute, so float sums of slots never fit one poll
        # more than the budget in a minute.
        interval = 60.0 / max(per_minute, 1e-9) * (1 + 1e-9)
        state = self._accounts.get(account)
        if state is None:
            self._accounts[account] = _Account(interval)
        else:
            state.interval = interval

    def budget(self, account: str) -> float | None:
        state = self._accounts.get(account)
        return None if state is None or not state.interval else 60.0 / state.interval

    def reserve(self, account: str) -> float:
        """Take the account's next free slot: seconds to wait for it (0: now; always 0 on
        an account whose budget was never set)."""
        self.polls[account] = self.polls.get(account, 0) + 1
        state = self._accounts.get(account)
        if state is None or not state.interval:
            return 0.0
        now = self._time()
        slot = max(now, state.next_slot)
        state.next_slot = slot + state.interval
        return slot - now

    async def turn(self, account: str) -> None:
        """Wait for the account's next poll slot. Slots are given in the order polls
        ask, which is the order they fell due: the oldest due polls first."""
        wait = self.reserve(account)
        if wait > 0:
            self.delayed[account] = self.delayed.get(account, 0) + 1
            await asyncio.sleep(wait)
