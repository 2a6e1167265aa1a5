"""Waiting for an :class:`asyncio.Event` with a timeout, safely on Python 3.11.

``asyncio.wait_for(event.wait(), t)`` on 3.11 can swallow a cancellation that arrives as
the event is set (python/cpython#86296, fixed by 3.12's rewrite of ``wait_for``): the
cancelled task goes on, and whoever awaits it after ``cancel()`` waits for ever. That
hung ``reelqueue run`` at its end once in CI: the manifest writer's loop, woken by the
last job's change as the stop cancelled it, kept running. ``asyncio.timeout`` has no such
window."""

from __future__ import annotations

import asyncio


async def wait_event(event: asyncio.Event, timeout: float) -> bool:
    """Wait until ``event`` is set or ``timeout`` seconds have passed; whether it was set.
    A cancellation is never swallowed."""
    try:
        async with asyncio.timeout(timeout):
            await event.wait()
    except TimeoutError:
        return event.is_set()
    return True
