"""Writing a planned import for a running engine (the window's import; the CLI writes on
its own journal before the engine starts).

Only the journal steps run on the journal thread (``intake/apply.py``: read, then write the
batch and jobs); the file steps (creating the folder, listing it, the manifest of up to
100,000 entries) run on the default executor, so a render's fenced write never waits
behind them. The batch's spend cap is set in the same journal call that adds the jobs: the
pump's claims run on that thread too, so none can take a job of the new batch before its
cap is in place.
"""

from __future__ import annotations

import asyncio

from reelqueue.domain.errors import InputError
from reelqueue.domain.models import Batch, JobSpec
from reelqueue.engine.engine import Engine
from reelqueue.intake.apply import (
    ImportRaced,
    ImportResult,
    JournalReading,
    finish_import,
    place_jobs,
    read_journal,
    write_jobs,
)
from reelqueue.intake.planner import ImportPlan
from reelqueue.store.base import AddJobsResult, Store

ATTEMPTS = 3
"""How often an import reads the journal again when another import changed it meanwhile."""


async def import_plan(engine: Engine, plan: ImportPlan, *,
                      max_spend: float | None = None) -> ImportResult:
    """Write the plan (batch, jobs, folder, manifest), with the batch's spend cap when one
    is given, and wake the pump. InputError when the import is refused."""
    store = engine.store
    for _ in range(ATTEMPTS):
        reading = await store.call(read_journal, store.sync, plan)
        specs = await asyncio.to_thread(place_jobs, plan, reading)
        try:
            batch, added = await store.call(_write, store.sync, plan, reading, specs,
                                            engine.clock.now(), max_spend)
        except ImportRaced:
            continue
        engine.wake()  # the jobs can be claimed now; the manifest does not hold them up
        return await asyncio.to_thread(finish_import, plan, reading, specs, batch, added)
    raise InputError("Other imports kept changing the journal while this one was written; "
                     "nothing was imported. Import the sheet again.")


def _write(journal: Store, plan: ImportPlan, reading: JournalReading, specs: list[JobSpec],
           now: float, max_spend: float | None) -> tuple[Batch, AddJobsResult]:
    """The journal step: the batch, its jobs and its cap, in one call on the journal thread."""
    batch, added = write_jobs(journal, plan, reading, specs, now)
    if max_spend is not None:
        journal.update_batch_settings(batch.id, {"max_spend": max_spend}, now)
    return batch, added
