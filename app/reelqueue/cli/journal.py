"""How a one-shot command runs an application command: open a session on the journal
(holding the data-folder lock unless told otherwise), run the command on an event loop,
close the session (and the built-in mock, if the command started it).

The rule of the lock (issue 34): while another ReelQueue holds the folder (the window,
``run``, ``demo``, ``serve``), a command changes only what that engine reads again from the
journal on its next pass: a spend cap or a price (``batch cap``, ``accounts set
--daily-cap/--price-per-second``), or this machine's keyring (``accounts confirm``). These
pass ``lock=False``; every other change (accounts, jobs, imports) is refused with
:data:`HELD_RULE`, since the engine holding the folder keeps them in memory and recovers the
folder as its own."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import TypeVar

from reelqueue.application.context import AppContext
from reelqueue.application.session import Session
from reelqueue.domain.errors import DataDirLocked

T = TypeVar("T")

HELD_RULE = ("While it runs, only a spend cap, a price or a confirm is changed from here "
             "(reelqueue batch cap, reelqueue accounts set NAME --daily-cap or "
             "--price-per-second, reelqueue accounts confirm); make other changes in the "
             "window, or after it closes.")
PICKED_UP = ("A ReelQueue already running on this journal (the window, or 'reelqueue run') "
             "picks the change up within 30 seconds.")


def run_on_journal(ctx: AppContext, command: Callable[[Session], Awaitable[T]], *,
                   lock: bool = True) -> T:
    """Run ``command(session)`` on the journal of ``ctx``; return what it returns."""

    async def run() -> T:
        session = Session(ctx)
        try:
            await session.open_journal(lock=lock)
        except DataDirLocked as exc:
            raise DataDirLocked(f"{exc} {HELD_RULE}") from None
        try:
            return await command(session)
        finally:
            await session.stop()

    return asyncio.run(run())
