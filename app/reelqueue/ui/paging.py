"""The jobs table's rows from the journal: read page by page, events held for rows not read
yet, the journal's sort order, completed rows read again (their size, cost, file)."""

from __future__ import annotations

import asyncio
import gc
from collections.abc import Callable, Coroutine
from typing import Any

from reelqueue.application import views
from reelqueue.application.events import JobEvent
from reelqueue.ui.jobs_data import stats_of
from reelqueue.ui.jobs_model import JobTableModel, order_lookup
from reelqueue.ui.session import WindowSession

FIRST_PAGE = 2_000
PENDING_MAX = 50_000

Spawn = Callable[[Coroutine[Any, Any, Any], str], "asyncio.Task[Any]"]


class JobPager:
    """Fills the jobs model from the journal.

    Attributes:
        model: the jobs model filled. session: whose engine's store is read.
        loaded: set once the first full load finished (events for unknown rows then
            trigger a read of the new rows).
        after_load: called after each load (the batch watch counts open jobs again).
    """

    def __init__(self, model: JobTableModel, session: WindowSession, spawn: Spawn,
                 after_load: Callable[[], None]) -> None:
        self.model = model
        self.session = session
        self.spawn = spawn
        self.after_load = after_load
        self.loaded = asyncio.Event()
        self._pending: dict[int, list[JobEvent]] = {}
        self._fetching = False
        self._refetch = False

    async def load_rows(self) -> None:
        """Read jobs not shown yet, a first small page (fast first paint) then big ones."""
        if self._fetching:
            self._refetch = True
            return
        self._fetching = True
        try:
            while True:
                self._refetch = False
                size = FIRST_PAGE if not len(self.model.table) else views.PAGE_ROWS
                rows = await views.job_rows(self.session.app, len(self.model.table), size)
                if rows:
                    stats = await asyncio.to_thread(stats_of, rows)
                    self.model.add_rows(rows, stats)
                    self._apply_pending()
                    if len(rows) >= FREEZE_ROWS:
                        keep_out_of_collections()
                if len(rows) < size and not self._refetch:
                    break
        finally:
            self._fetching = False
        self.after_load()

    async def follow_team(self, follower: views.ChangeFollower) -> int:
        """A team database: read again the rows other machines changed, and the rows
        they added (their engines' events never reach this window). Returns how many
        known rows were read again."""
        ids, anything = await follower.changed(self.session.app)
        table = self.model.table
        known = [i for i in ids if table.index_of(i) is not None]
        if known:
            await self.refresh_rows(known)
        if anything:  # rows added elsewhere (an import's entry names no job): one read
            await self.load_rows()
        return len(known)

    def apply(self, event: JobEvent) -> None:
        """Apply an event to its row; one for a row not read yet waits for it (up to
        PENDING_MAX held events) and starts a read of the new rows."""
        if self.model.apply_event(event):
            return
        queue = self._pending.setdefault(event.job_id, [])
        if sum(map(len, self._pending.values())) < PENDING_MAX:
            queue.append(event)
        if not self._fetching and self.loaded.is_set():
            self.spawn(self.load_rows(), "load-new-rows")

    def _apply_pending(self) -> None:
        table = self.model.table
        for job_id in [i for i in self._pending if table.index_of(i) is not None]:
            for event in self._pending.pop(job_id):
                table.apply(event)

    async def sort_rows(self, order: str, descending: bool) -> None:
        """The jobs table's sort, done by the journal (jobs_model.py)."""
        if self.session.app.engine is None or self.session.closed:
            return
        ids = await views.job_order(self.session.app, order, descending)
        # Their rows looked up off the GUI thread: 100,000 lookups held it for 60-80 ms
        # once a second while a live sort was kept in order (bench_gui.py). The table only
        # grows meanwhile; rows added since follow at the end (set_order).
        indexes, positions = await asyncio.to_thread(order_lookup, self.model.table, ids)
        self.model.set_order(order, descending, ids, indexes=indexes, positions=positions)

    async def refresh_rows(self, job_ids: list[int]) -> None:
        rows = await views.job_rows_by_id(self.session.app, job_ids)
        self.model.replace_rows(rows)


FREEZE_ROWS = 1_000
"""A page of at least this many rows is moved out of the collector's reach (a few rows
added now and then are not worth it: each freeze also keeps whatever cyclic garbage
exists at that moment, usually nothing)."""


def keep_out_of_collections() -> None:
    """Move what is alive now — above all the table's rows — out of the cyclic garbage
    collector's reach (``gc.freeze``: O(1), no collection).

    With 100,000 rows shown, a full collection walked every one of them (86 ms for the
    model alone, 250-450 ms in the whole window, measured), and any thread's allocations
    could start one: the once-a-second sort's 100,000 fetched rows did, on the journal
    thread, holding the interpreter while the GUI thread waited (bench_gui.py stalls of
    250-450 ms, found with py-spy --gil). Rows are freed by their reference counts as
    before when they go; only garbage in cycles among what is frozen would stay, and the
    rows make none.
    """
    gc.freeze()
