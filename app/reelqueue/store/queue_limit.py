"""The queue limit (``--max-waiting``): how many jobs may wait at once, checked in one place.

The intake checks it before it touches anything (a refused import leaves the journal as it
was) and every store checks it again inside the write transaction that adds the jobs (the
authoritative count); both call :func:`check_queue_room`, so the rule and its message exist
once.
"""

from __future__ import annotations

from reelqueue.domain.errors import InputError


def check_queue_room(waiting: int, new: int, limit: int | None) -> None:
    """InputError when ``new`` jobs do not fit beside the ``waiting`` ones under ``limit``
    (None: no limit). Adding nothing always fits."""
    if limit is None or new == 0 or waiting + new <= limit:
        return
    room = max(0, limit - waiting)
    raise InputError(
        f"The queue holds {waiting} waiting jobs and its limit is {limit}: only {room} of "
        f"these {new} new jobs fit. Nothing was imported; import fewer rows or raise the "
        "limit."
    )
