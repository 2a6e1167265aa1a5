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

The loop can keep up while the downloads do not: a slow disk, a thin connection, two
writer threads behind a wave of renders ending together. Each finished render then waits
at the provider, whose links expire (docs/providers.md), and every new claim adds one
more render to wait later. :class:`DownloadBacklog` counts this engine's renders that
ended at the provider and whose file is not on disk yet; above
``EngineConfig.overload_downloads`` the pump holds new claims back as it does for the
loop's lag.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import logging
from collections.abc import Iterator

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


class DownloadBacklog:
    """This engine's renders whose end the provider reported and whose file is not on
    disk yet (the download, its hash, fsync and rename, and the completion's write).

    Attributes:
        count: the renders in that stretch now.
        most: the largest ``count`` seen (a figure for benchmarks and the log).
    """

    def __init__(self) -> None:
        self.count = 0
        self.most = 0

    @contextlib.contextmanager
    def fetching(self) -> Iterator[None]:
        """The stretch from a render's end seen to its file written (or given up)."""
        self.count += 1
        self.most = max(self.most, self.count)
        try:
            yield
        finally:
            self.count -= 1

    def overloaded(self, limit: int) -> bool:
        """Whether more than ``limit`` finished renders wait for their file."""
        return self.count > limit
