"""How a one-shot command runs an application command: open a session on the journal
(holding the data-folder lock unless told otherwise), run the command on an event loop,
close the session (and the built-in mock, if the command started it)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import TypeVar

from reelqueue.application.context import AppContext
from reelqueue.application.session import Session

T = TypeVar("T")


def run_on_journal(ctx: AppContext, command: Callable[[Session], Awaitable[T]], *,
                   lock: bool = True) -> T:
    """Run ``command(session)`` on the journal of ``ctx``; return what it returns."""

    async def run() -> T:
        session = Session(ctx)
        await session.open_journal(lock=lock)
        try:
            return await command(session)
        finally:
            await session.stop()

    return asyncio.run(run())
