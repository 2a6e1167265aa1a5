"""This machine's clock against the team database's (DESIGN.md invariant 14, issue 19).

On a shared store every time compared across machines is the server's (leases, retry and
cool-down times, heartbeats, the spend cap's day): the statements read it themselves. A
worker still reads its own clock for what it shows and for its own timers (when the next
retry is due, whether a cool-down has ended), so it measures how far its clock is from the
server's, at start and at every heartbeat, and converts with it.

The measure: the store's clock read between two readings of ours, ``offset = (t0 + t1) / 2
- server`` (the server read it about half a round trip after ``t0``), best of a few
samples (the one with the shortest round trip is the least uncertain: +- half of it).
Run on the journal's thread, so a queue of store calls ahead of it does not count as round
trip. A store whose caller's clock decides (SQLite, memory: one machine) has no offset.

Past :data:`OFFSET_WARN_SECONDS` the worker warns: nothing goes wrong in the queue (the
server decides), but the times this machine shows are off by the offset, and its timers
wake it early or late by as much.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from reelqueue.domain.clock import Clock
from reelqueue.store.base import Store

log = logging.getLogger(__name__)

OFFSET_WARN_SECONDS = 5.0
"""A clock further than this from the team database's is warned about (docs/team.md)."""

SAMPLES = 3


@dataclass(frozen=True)
class ClockReading:
    """Attributes:
    offset: this machine's clock minus the server's, in seconds (positive: ahead).
    round_trip: the round trip of the sample it comes from (the offset is known to
        within half of it).
    """

    offset: float
    round_trip: float

    def sentence(self, where: str = "the team database") -> str:
        """The reading in words: '0.004 s ahead of the team database's clock (...)'."""
        side = "ahead of" if self.offset >= 0 else "behind"
        return (f"this machine's clock is {abs(self.offset):.3f} s {side} {where}'s clock "
                f"(measured to within {self.round_trip / 2 * 1000:.1f} ms)")


def measure_offset(store: Store, clock: Clock, samples: int = SAMPLES) -> ClockReading | None:
    """Measure ``clock`` against the store's own clock; None when the store has none (the
    caller's clock decides there). Blocking: run it on the journal's thread."""
    best: ClockReading | None = None
    for _ in range(samples):
        before = clock.now()
        server = store.server_time()
        after = clock.now()
        if server is None:
            return None
        reading = ClockReading((before + after) / 2 - server, max(0.0, after - before))
        if best is None or reading.round_trip < best.round_trip:
            best = reading
    return best


class ClockWatch:
    """The latest reading, and what is said about it: each reading in the log (debug; the
    first at info), a warning when the offset passes :data:`OFFSET_WARN_SECONDS`, once
    until it comes back within it.

    Attributes:
        reading: the latest reading (None: not measured, or a store without a clock).
        where: the database named in messages (no password).
    """

    def __init__(self, where: str = "the team database") -> None:
        self.reading: ClockReading | None = None
        self.where = where
        self._warned = False

    @property
    def offset(self) -> float:
        """Seconds to subtract from this machine's clock to get the server's (0 unknown)."""
        return self.reading.offset if self.reading is not None else 0.0

    def to_server(self, local: float) -> float:
        return local - self.offset

    def to_local(self, server: float) -> float:
        return server + self.offset

    def update(self, reading: ClockReading | None) -> None:
        first = self.reading is None
        if reading is None:
            return
        self.reading = reading
        text = reading.sentence(self.where)
        if abs(reading.offset) > OFFSET_WARN_SECONDS:
            if not self._warned:
                log.warning("%s, more than %.0f s: leases, retries and heartbeats follow the "
                            "database's clock, so the team stays correct, but the times "
                            "this machine shows and its timers are off by that much. Set "
                            "this machine's clock right (turn on NTP, e.g. "
                            "'timedatectl set-ntp true').", text[0].upper() + text[1:],
                            OFFSET_WARN_SECONDS)
                self._warned = True
            return
        if self._warned:
            log.info("%s: back within %.0f s", text, OFFSET_WARN_SECONDS)
            self._warned = False
        elif first:
            log.info("%s", text)
        else:
            log.debug("%s", text)


__all__ = ["OFFSET_WARN_SECONDS", "ClockReading", "ClockWatch", "measure_offset"]
