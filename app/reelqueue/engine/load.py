"""How busy the engine's own event loop is, so that overload slows the start of new renders
and never the finishing of running ones (DESIGN.md invariant 16, issue 33 item 1).

Every render in flight is polled, downloaded, hashed and written by tasks on one event
loop. When that loop lags (a thousand polls answered at once, downloads backing up), a new
claim adds one more render to a loop that already cannot keep up with the ones it has: the
running ones then finish later, their results wait at the provider, and at worst nothing
finishes at all (issue 33 measured 0 completions in 150 s at 2,000 slots). So the pump asks
:class:`LoopGauge` before it claims: while the loop lags, it claims at most
``EngineConfig.overload_claims_per_pass`` jobs a pass and looks again soon, and every
render already running keeps its pace.

The gauge is a task that asks the loop for a short sleep and measures how late it comes
back: the loop's own lateness, whatever caused it. It reads the loop's monotonic time,
never the engine's injected clock (a test's clock does not move the loop).
"""

from __future__ import annotations

import asyncio
import collections
import logging

log = logging.getLogger(__name__)


class LoopGauge:
    """The event loop's recent lag.

    Attributes:
        interval: the sleep asked for between two readings (seconds).
        lag: the largest lateness over the last ``window`` readings (seconds).
    """

    def __init__(self, interval: float = 0.2, window: int = 10) -> None:
        self.interval = interval
        self._recent: collections.deque[float] = collections.deque(maxlen=window)
        self._task: asyncio.Task[None] | None = None

    @property
    def lag(self) -> float:
        return max(self._recent, default=0.0)

    def overloaded(self, threshold: float) -> bool:
        """Whether the loop came back later than ``threshold`` seconds lately."""
        return self.lag > threshold

    def start(self) -> None:
        if self._task is None:
            self._task = asyncio.create_task(self._run(), name="loop-gauge")

    async def stop(self) -> None:
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)

    async def _run(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            asked = loop.time()
            await asyncio.sleep(self.interval)
            self._recent.append(max(0.0, loop.time() - asked - self.interval))
