"""A worker started while its team database cannot be reached waits for it (and so does
``reelqueue serve``, with the same ``--wait-for-database``: cli/database_wait.py).

``reelqueue worker`` is a service: it renders until told to stop, and it rides out a
server restart or a cut network while it runs (docs/team.md). Until now it refused to
start when the server was down at its start (a machine booting before the database's, a
database restarted at the same time as its workers), leaving the restart to whoever
watches it. Now the start waits as the run does: only for what time can mend (the server
not reached: connection refused, a timeout, a name not resolved yet, a server starting
up), never for what it cannot (a refused login, a refused or unverified TLS handshake, a
schema newer than this version): those are said at once, as before.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import TypeVar

from reelqueue.domain.errors import JournalUnreachable

__all__ = ["FIRST_DELAY", "MAX_DELAY", "NOTE_EVERY", "wait_for_team_database"]

T = TypeVar("T")

FIRST_DELAY = 1.0
MAX_DELAY = 30.0
"""Seconds between two tries: 1 s, doubled after each failure, at most 30 s."""

NOTE_EVERY = 60.0
"""Seconds between two "still waiting" lines (the first failure is said at once)."""


def wait_for_team_database(open_store: Callable[[], T], *, limit: float | None,
                           say: Callable[[str], None], stop: threading.Event,
                           clock: Callable[[], float] = time.monotonic) -> T | None:
    """``open_store()``, tried again while it raises :class:`JournalUnreachable`.

    ``limit``: the seconds to wait at most (None: no limit; 0: not at all); past it the
    last JournalUnreachable is raised. ``stop`` set (SIGTERM, Ctrl+C): None, nothing
    opened. Any other error is raised at once. ``say`` gets the first failure, a line at
    most every :data:`NOTE_EVERY` seconds while waiting, and the time it took once
    reached.
    """
    started = clock()
    delay = FIRST_DELAY
    noted = None
    while True:
        try:
            opened = open_store()
        except JournalUnreachable as exc:
            waited = clock() - started
            if limit is not None and waited + delay > limit:
                raise
            if noted is None:
                bound = "no limit" if limit is None else f"at most {limit:g} s"
                say(f"{_why(exc)} Waiting for it ({bound}; trying again every "
                    f"{MAX_DELAY:g} s at most). Stop with Ctrl+C or SIGTERM.")
                noted = waited
            elif waited - noted >= NOTE_EVERY:
                say(f"Still waiting ({waited:.0f} s): {_why(exc)}")
                noted = waited
            if stop.wait(delay):
                return None
            delay = min(delay * 2, MAX_DELAY)
            continue
        if noted is not None:
            say(f"Team database reached after {clock() - started:.0f} s of waiting.")
        return opened


def _why(exc: JournalUnreachable) -> str:
    """The error's first sentence, what and why, without its advice to run the command
    again (the worker is doing just that)."""
    text = str(exc)
    what, advice, _ = text.partition(" Check that the server runs")
    return what if advice else text
