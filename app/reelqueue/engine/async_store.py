"""Runs every store call on one dedicated thread, so the event loop never waits on fsync.

One thread also serialises this process's writes, which keeps SQLite's lock waits short.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import ParamSpec, TypeVar

from reelqueue.store.base import Store

P = ParamSpec("P")
T = TypeVar("T")


class AsyncStore:
    """Attributes:
    sync: the wrapped store (for code already running on the store thread, and tests).
    """

    def __init__(self, store: Store) -> None:
        self.sync = store
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="journal")

    async def call(self, fn: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._executor, functools.partial(fn, *args, **kwargs))

    def shutdown(self) -> None:
        self._executor.shutdown(wait=True)
