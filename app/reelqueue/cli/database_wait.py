"""``--wait-for-database SECONDS``, shared by ``reelqueue worker`` and ``reelqueue serve``:
the option, and the wait for a team database that cannot be reached at the start
(:mod:`reelqueue.application.team_wait` decides what is waited for and how long between
tries), ended at once by SIGTERM or SIGINT as either command's orderly stop is.
"""

from __future__ import annotations

import argparse
import contextlib
import signal
import threading
from collections.abc import Callable, Iterator
from typing import TypeVar

from reelqueue.application.team_wait import wait_for_team_database
from reelqueue.cli.context import CliContext

T = TypeVar("T")


def add_wait_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--wait-for-database", type=seconds, default=None, metavar="SECONDS",
        help="when the team database cannot be reached at the start, wait for it at most "
             "SECONDS (default: no limit; 0: stop at once); a refused login or TLS "
             "handshake is said at once")


def seconds(text: str) -> float:
    """An argparse type: a number of seconds, 0 or more (not nan, not inf)."""
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0 <= value < float("inf"):
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds (0 or more)")
    return value


def wait_for_database(ctx: CliContext, open_store: Callable[[], T],
                      limit: float | None) -> T | None:
    """``open_store()`` once the team database can be reached (see
    :func:`~reelqueue.application.team_wait.wait_for_team_database`: JournalUnreachable
    past ``limit``, any other error at once). None when SIGTERM or SIGINT came while
    waiting, or as the store was reached: the command stops without starting (anything
    ``open_store`` opened is its caller's to close, e.g. through an ExitStack)."""
    with stopped_by_signals() as stop:
        opened = wait_for_team_database(open_store, limit=limit, say=ctx.print, stop=stop)
    return None if stop.is_set() else opened


@contextlib.contextmanager
def stopped_by_signals() -> Iterator[threading.Event]:
    """An event set by SIGTERM or SIGINT while the block runs (the handlers it replaced are
    put back after it): a wait on it ends at once, as the command's orderly stop does."""
    stop = threading.Event()
    signums = (signal.SIGTERM, signal.SIGINT)
    before = {signum: signal.getsignal(signum) for signum in signums}
    for signum in signums:
        signal.signal(signum, lambda *_: stop.set())
    try:
        yield stop
    finally:
        for signum, handler in before.items():
            signal.signal(signum, handler)
