"""Issue 23: with 100,000 rows shown, a full run of the cyclic garbage collector walked
every row (250-450 ms of the interpreter, started by any thread's allocations: the live
sort's fetch on the journal thread) and stalled the window. Pages of rows are moved out
of its reach once shown (ui/paging.py ``keep_out_of_collections``)."""

from __future__ import annotations

import gc
import time

import pytest

from reelqueue.cli.context import CliContext
from reelqueue.domain.models import BatchSpec, JobSpec
from reelqueue.store.sqlite import SqliteStore
from tests.gui.conftest import WindowHarness, on_qloop, until

pytestmark = [pytest.mark.gui, pytest.mark.integration]

JOBS = 2_500


def fill(ctx: CliContext) -> None:
    ctx.data_dir.mkdir(parents=True, exist_ok=True)
    store = SqliteStore.open(ctx.journal_path, now=time.time())
    try:
        batch = store.create_batch(BatchSpec("b", "s.csv", "b"), time.time())
        store.add_jobs(batch.id, [JobSpec(f"k{i}", f"shot {i}", "mock", f"b/{i}.mp4",
                                          row_number=i + 2) for i in range(JOBS)], time.time())
    finally:
        store.close()


@on_qloop
async def test_the_rows_shown_are_out_of_the_collectors_reach(
    windows: WindowHarness, app_ctx: CliContext,
) -> None:
    fill(app_ctx)
    gc.unfreeze()
    controller = await windows.open(app_ctx, start=False)
    await until(lambda: len(controller.model.table) == JOBS)
    frozen = gc.get_freeze_count()
    assert frozen >= JOBS, "the rows' pages were frozen"
    rows = controller.model.table.rows
    assert all(gc.is_tracked(row) for row in rows[:10])
    # a collection of the youngest generations no longer sees them: the tracked objects
    # the collector walks are far fewer than the rows shown
    assert len(gc.get_objects()) < frozen
    gc.unfreeze()
