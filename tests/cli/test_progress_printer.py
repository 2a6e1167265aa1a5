"""``run``'s progress line reads the journal on the journal's thread, through the
application layer, never from a thread of its own (issue 12, item 7)."""

from __future__ import annotations

import asyncio
import io
import threading
from pathlib import Path

import pytest

from reelqueue.application.session import Session
from reelqueue.cli.cmd_run import ProgressPrinter
from reelqueue.cli.context import CliContext
from reelqueue.store.base import Counts
from reelqueue.store.memory import MemoryStore

pytestmark = pytest.mark.unit


class CountingStore(MemoryStore):
    """A memory store that records the thread every ``counts()`` ran on."""

    def __init__(self) -> None:
        super().__init__()
        self.count_threads: list[str] = []

    def counts(self) -> Counts:
        self.count_threads.append(threading.current_thread().name)
        return super().counts()


def test_the_progress_line_reads_the_counts_on_the_journal_thread(tmp_path: Path) -> None:
    out = io.StringIO()
    ctx = CliContext(data_dir=tmp_path, videos_dir=tmp_path, out=out)
    store = CountingStore()

    async def run() -> None:
        session = Session(ctx)
        session.adopt_store(store)
        printer = ProgressPrinter(ctx, session, enabled=True)
        await printer.tick(final=True)
        await session.stop()

    asyncio.run(run())
    store.close()
    assert "0/0 done · 0 failed · 0 rendering · 0 waiting" in out.getvalue()
    assert len(store.count_threads) == 1
    assert store.count_threads[0].startswith("journal")
