"""An event loop on virtual time, for tests of schedules measured in minutes.

Whenever nothing is ready to run and no I/O is waiting, the loop's clock jumps to its next
timer instead of sleeping: ``asyncio.sleep(60)`` returns at once in real time and exactly
60 s later in the loop's time, and every callback due at one time runs at that time (a
jump is only taken between two rounds of ready callbacks). Work on other threads is waited
for (time stands still) when it goes through ``run_in_executor``: every journal call, file
write and ``asyncio.to_thread`` does.

Use :func:`run` for a coroutine, and :class:`LoopClock` for the engine's clock so that
journal times follow the loop.
"""

from __future__ import annotations

import asyncio
import selectors
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

T = TypeVar("T")

EPOCH = 1_800_000_000.0


class _JumpingSelector(selectors.BaseSelector):
    """The loop's selector, with a blocking wait replaced by a jump of the clock."""

    def __init__(self, real: selectors.BaseSelector, loop: VirtualTimeLoop) -> None:
        self._real = real
        self._loop = loop

    def register(self, fileobj: Any, events: int, data: Any = None) -> selectors.SelectorKey:
        return self._real.register(fileobj, events, data)

    def unregister(self, fileobj: Any) -> selectors.SelectorKey:
        return self._real.unregister(fileobj)

    def modify(self, fileobj: Any, events: int, data: Any = None) -> selectors.SelectorKey:
        return self._real.modify(fileobj, events, data)

    def select(self, timeout: float | None = None
               ) -> list[tuple[selectors.SelectorKey, int]]:
        if timeout is None or timeout <= 0:
            return self._real.select(timeout)
        ready = self._real.select(0)
        if ready:
            return ready
        if self._loop.threads_busy:
            # Work on a thread is under way: time stands still until it answers.
            return self._real.select(min(timeout, 0.1))
        self._loop.virtual += timeout
        return []

    def close(self) -> None:
        self._real.close()

    def get_key(self, fileobj: Any) -> selectors.SelectorKey:
        return self._real.get_key(fileobj)

    def get_map(self) -> Any:
        return self._real.get_map()


class VirtualTimeLoop(asyncio.SelectorEventLoop):
    """Attributes:
    virtual: the loop's time (seconds, starts at 0).
    """

    def __init__(self) -> None:
        self.virtual = 0.0
        self.threads_busy = 0  # run_in_executor calls not answered yet
        super().__init__(_JumpingSelector(selectors.DefaultSelector(), self))

    def time(self) -> float:
        return self.virtual

    def run_in_executor(self, executor: Any, func: Callable[..., T], *args: Any
                        ) -> asyncio.Future[T]:
        future = super().run_in_executor(executor, func, *args)
        self.threads_busy += 1
        future.add_done_callback(self._answered)
        return future

    def _answered(self, _: asyncio.Future[Any]) -> None:
        self.threads_busy -= 1


class LoopClock:
    """The engine's clock (epoch seconds) following the running loop's time."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop

    def now(self) -> float:
        return EPOCH + self._loop.time()


def run(coroutine: Coroutine[Any, Any, T], loop: VirtualTimeLoop) -> T:
    """Run ``coroutine`` to its end on ``loop``, then close the loop."""
    try:
        return loop.run_until_complete(coroutine)
    finally:
        loop.run_until_complete(loop.shutdown_asyncgens())
        loop.run_until_complete(loop.shutdown_default_executor())
        loop.close()
