"""Exponential backoff with full jitter and a cap (AWS architecture blog's "full jitter")."""

from __future__ import annotations

import random
from dataclasses import dataclass


@dataclass(frozen=True)
class BackoffPolicy:
    """Attributes:
    base: the first ceiling, in seconds.
    cap: no wait is longer than this.
    factor: the ceiling grows by this per attempt.
    """

    base: float = 2.0
    cap: float = 300.0
    factor: float = 2.0

    def ceiling(self, attempt: int) -> float:
        """The largest wait after the given attempt (1-based)."""
        exponent = max(0, attempt - 1)
        # Cap the exponent too so huge attempt numbers cannot overflow.
        return float(min(self.cap, self.base * self.factor ** min(exponent, 64)))

    def delay(self, attempt: int, rng: random.Random) -> float:
        """A wait drawn uniformly from [0, ceiling(attempt)]."""
        return rng.uniform(0.0, self.ceiling(attempt))
