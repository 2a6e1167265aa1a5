"""A cancel that arrives as the awaited event is set is never swallowed (CI hung once at
the end of ``reelqueue run``: the manifest writer's loop, inside 3.11's ``wait_for``,
outlived its cancel, and the stop awaited it for ever)."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path

import pytest

from reelqueue.engine.waits import wait_event

APP = Path(__file__).resolve().parents[2] / "app" / "reelqueue"


async def _cancel_as_it_is_set(waiting: object) -> str:
    event = asyncio.Event()

    async def waiter() -> str:
        await waiting(event)  # type: ignore[operator]
        return "went on"

    task = asyncio.create_task(waiter())
    while not event._waiters:  # until the waiter is parked on the event
        await asyncio.sleep(0)
    event.set()
    task.cancel()
    try:
        return await task
    except asyncio.CancelledError:
        return "cancelled"


async def test_a_cancel_arriving_with_the_event_cancels() -> None:
    assert await _cancel_as_it_is_set(lambda e: wait_event(e, 30)) == "cancelled"


async def test_the_timeout_and_the_event_are_told_apart() -> None:
    event = asyncio.Event()
    assert await wait_event(event, 0.01) is False
    event.set()
    assert await wait_event(event, 30) is True


@pytest.mark.skipif(not hasattr(asyncio, "timeout"), reason="3.11+")
def test_no_wait_for_around_an_event_in_the_app() -> None:
    """The pattern that hung is gone from the source (use ``wait_event``)."""
    pattern = re.compile(r"wait_for\([^)]*\.wait\(\)")
    found = [f"{p.relative_to(APP)}:{n}" for p in APP.rglob("*.py") if p.name != "waits.py"
             for n, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1)
             if pattern.search(line)]
    assert found == []
