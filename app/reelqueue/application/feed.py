"""What a remote client reads (the HTTP API's job listing, health and event stream): the
journal read through its own read-only connection (WAL: these reads never wait behind the
engine's journal thread; on a team database, a connection of its own to it), each call
run on a worker thread.

The event stream is the ledger: every entry has a ``seq``, so a client that reconnects
with the last one it saw misses nothing and sees nothing twice. :meth:`JournalFeed.follow`
yields the entries after a ``seq`` page by page and waits for the engine's event bus (or a
short idle time) when it has caught up.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, Callable, Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from reelqueue.domain.models import Job, LedgerEntry
from reelqueue.engine.waits import wait_event

if TYPE_CHECKING:
    from reelqueue.application.context import AppContext

__all__ = ["FeedReader", "JournalFeed", "LedgerEntry"]

Subscribe = Callable[[Callable[[object], None]], Callable[[], None]]


class FeedReader(Protocol):
    """The reads behind a feed: the SQLite journal's (``store/journal_reader.py``) or the
    team database's (``store/pg_reader.py``). Blocking; safe from any one thread at a
    time (each holds its own lock)."""

    def close(self) -> None: ...
    def job_by_key(self, job_key: str) -> Job | None: ...
    def existing_keys(self, keys: Iterable[str]) -> set[str]: ...
    def jobs_after(self, after_id: int, limit: int, *, batch_id: int | None = None,
                   states: Sequence[str] = ()) -> list[Job]: ...
    def ledger_after(self, seq: int, limit: int) -> list[LedgerEntry]: ...
    def writable(self) -> str: ...
    def last_ledger_seq(self) -> int: ...


def open_reader(ctx: AppContext) -> FeedReader:
    """The reads of ``ctx``'s journal: the team database's with ``ctx.store_url`` (its
    password from this machine's keyring or pgpass file, TLS as the store opens it), else
    the local SQLite file's. Blocking."""
    from reelqueue.application.team_seam import journal_mode

    return journal_mode(ctx).open_reader(ctx)


class JournalFeed:
    """Reads of one journal for remote clients; close when done."""

    def __init__(self, journal: Path | FeedReader) -> None:
        if isinstance(journal, Path):
            from reelqueue.store.journal_reader import JournalReader

            journal = JournalReader(journal)
        self._reader: FeedReader = journal

    @classmethod
    async def open(cls, journal: Path) -> JournalFeed:
        return await asyncio.to_thread(cls, journal)

    @classmethod
    async def open_for(cls, ctx: AppContext) -> JournalFeed:
        """The feed of ``ctx``'s journal (SQLite or the team database), off the loop."""
        return cls(await asyncio.to_thread(open_reader, ctx))

    def close(self) -> None:
        self._reader.close()

    # Blocking reads, for code already on a worker thread (the import's planner, submit).
    def job_by_key(self, job_key: str) -> Job | None:
        return self._reader.job_by_key(job_key)

    def existing_keys(self, keys: Iterable[str]) -> set[str]:
        return self._reader.existing_keys(keys)

    @property
    def reader(self) -> FeedReader:
        return self._reader

    # The same reads off the loop.
    async def writable(self) -> str:
        """"writable", or why not (the journal's state, for the health check)."""
        return await asyncio.to_thread(self._reader.writable)

    async def jobs_after(self, after_id: int, limit: int, *, batch_id: int | None = None,
                         states: Sequence[str] = ()) -> list[Job]:
        return await asyncio.to_thread(self._reader.jobs_after, after_id, limit,
                                       batch_id=batch_id, states=list(states))

    async def ledger_after(self, seq: int, limit: int) -> list[LedgerEntry]:
        return await asyncio.to_thread(self._reader.ledger_after, seq, limit)

    async def last_seq(self) -> int:
        return await asyncio.to_thread(self._reader.last_ledger_seq)

    async def follow(self, after: int, subscribe: Subscribe, *, page: int = 500,
                     idle_seconds: float = 1.0) -> AsyncGenerator[list[LedgerEntry], None]:
        """The ledger entries after ``after``, page by page, for as long as the caller
        reads; an empty list after ``idle_seconds`` with nothing new (a keep-alive).
        ``subscribe`` (the engine's event bus) wakes it as soon as something happens."""
        woken = asyncio.Event()
        unsubscribe = subscribe(lambda _event: woken.set())
        try:
            while True:
                woken.clear()
                entries = await self.ledger_after(after, page)
                if entries:
                    after = entries[-1].seq
                    yield entries
                    if len(entries) == page:
                        continue
                if not await wait_event(woken, idle_seconds):
                    yield []
        finally:
            unsubscribe()
