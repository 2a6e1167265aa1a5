"""How long renders take, from what the journal knows (issue 23): per provider, model and
duration, the middle half (p25–p75) of finished renders' times once there are
:data:`MIN_SAMPLES` of them, the range seen until then. One figure for every view that
says "left" (the job table, the account cards); routing's "fastest first" reads the same.

A render's time runs from its claim to its completion: what the user waits, provider
queue included. An estimate is a range, never a point: the window says "about 20–40 s
left", and once a render is past the range's top it says so instead of "< 1 s left".
"""

from __future__ import annotations

from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

MIN_SAMPLES = 5
"""Finished renders of a kind before its range is the middle half rather than all seen."""
KEEP = 200
"""The most recent renders of a kind that count (older ones age out)."""


def render_kind(provider: str, params: Mapping[str, Any]) -> str:
    """What renders are compared by: ``provider/model/duration`` ("-" where unsaid)."""
    model = params.get("model")
    duration = params.get("duration")
    return (f"{provider}/{model if model not in (None, '') else '-'}/"
            f"{duration if duration not in (None, '') else '-'}")


@dataclass(frozen=True)
class TimeRange:
    """Seconds a render of one kind takes.

    Attributes:
        low, high: p25 and p75 (with :data:`MIN_SAMPLES` or more), else the shortest and
            longest seen.
        samples: how many finished renders it comes from.
    """

    low: float
    high: float
    samples: int

    @property
    def quartiles(self) -> bool:
        return self.samples >= MIN_SAMPLES


@dataclass(frozen=True)
class Eta:
    """What is left of one render, against its kind's :class:`TimeRange`.

    Attributes:
        low, high: seconds left at the range's bottom and top (0 when passed).
        overdue: the render has taken longer than the range's top.
        typical: the range itself, for the words ("most take 20–40 s").
    """

    low: float
    high: float
    overdue: bool
    typical: TimeRange

    def fraction(self, elapsed: float) -> float:
        """How far along, for a bar: elapsed against the range's middle."""
        middle = (self.typical.low + self.typical.high) / 2
        return min(1.0, elapsed / max(1.0, middle))


class RenderTimes:
    """Finished renders' times by kind (:func:`render_kind`), the newest :data:`KEEP`."""

    def __init__(self) -> None:
        self._seen: dict[str, deque[float]] = {}

    def add(self, kind: str, seconds: float) -> None:
        if seconds < 0 or seconds != seconds:  # a clock step back or NaN: not a time
            return
        self._seen.setdefault(kind, deque(maxlen=KEEP)).append(seconds)

    def range(self, kind: str) -> TimeRange | None:
        seen = self._seen.get(kind)
        if not seen:
            return None
        ordered = sorted(seen)
        if len(ordered) < MIN_SAMPLES:
            return TimeRange(ordered[0], ordered[-1], len(ordered))
        return TimeRange(_quantile(ordered, 0.25), _quantile(ordered, 0.75), len(ordered))

    def eta(self, kind: str, elapsed: float) -> Eta | None:
        typical = self.range(kind)
        if typical is None:
            return None
        return Eta(max(0.0, typical.low - elapsed), max(0.0, typical.high - elapsed),
                   elapsed > typical.high, typical)


def _quantile(ordered: list[float], q: float) -> float:
    """The ``q`` quantile of sorted values, interpolated between neighbours."""
    position = q * (len(ordered) - 1)
    below = int(position)
    above = min(below + 1, len(ordered) - 1)
    return ordered[below] + (ordered[above] - ordered[below]) * (position - below)
