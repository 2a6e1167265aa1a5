"""Time, injected. Wall time (epoch seconds) is what the journal stores; tests use FakeClock."""

from __future__ import annotations

import time
from typing import Protocol


class Clock(Protocol):
    def now(self) -> float:
        """Seconds since the epoch."""
        ...


class SystemClock:
    def now(self) -> float:
        return time.time()


class SkewedClock:
    """The system clock set wrong by ``skew`` seconds (positive: ahead), as a machine
    without NTP has it: what the team tests give a worker (``clock_for_tests``).

    Attributes:
        skew: seconds added to the system clock.
    """

    def __init__(self, skew: float) -> None:
        self.skew = skew

    def now(self) -> float:
        return time.time() + self.skew


class FakeClock:
    """A clock that only moves when told to.

    Attributes:
        current: the time it reports.
    """

    def __init__(self, start: float = 1_800_000_000.0) -> None:
        self.current = start

    def now(self) -> float:
        return self.current

    def advance(self, seconds: float) -> None:
        self.current += seconds
