"""Writing a planned import on the journal thread (the window's, the command line's and the
API's import: ``application.imports.apply_import``).

Only the journal steps run on the journal thread (``intake/apply.py``: read, then write the
batch and jobs): :func:`write_plan`; the file steps (creating the folder, listing it, the
manifest of up to 100,000 entries) run on the default executor, :func:`finish_plan`, so a
render's fenced write never waits behind them. The caller wakes the engine between the
two (the jobs can be claimed before the manifest is written). The batch's spend cap is set
in the same journal call that adds the jobs: the pump's claims run on that thread too, so
none can take a job of the new batch before its cap is in place.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from reelqueue.domain.errors import InputError
from reelqueue.domain.models import Batch, JobSpec
from reelqueue.engine.async_store import AsyncStore
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


@dataclass(frozen=True)
class WrittenPlan:
    """What :func:`write_plan` wrote, for :func:`finish_plan`."""

    reading: JournalReading
    specs: list[JobSpec]
    batch: Batch
    added: AddJobsResult


async def write_plan(journal: AsyncStore, plan: ImportPlan, now: float, *,
                     max_spend: float | None = None, cap: bool = False) -> WrittenPlan:
    """Write the plan's batch and jobs, with the batch's spend cap when ``cap`` (or
    ``max_spend`` is given; None with ``cap``: no cap). InputError when the import is
    refused."""
    cap = cap or max_spend is not None
    for _ in range(ATTEMPTS):
        reading = await journal.call(read_journal, journal.sync, plan)
        specs = await asyncio.to_thread(place_jobs, plan, reading)
        try:
            batch, added = await journal.call(_write, journal.sync, plan, reading, specs,
                                              now, max_spend, cap)
        except ImportRaced:
            continue
        return WrittenPlan(reading, specs, batch, added)
    raise InputError("Other imports kept changing the journal while this one was written; "
                     "nothing was imported. Import the sheet again.")


async def finish_plan(plan: ImportPlan, written: WrittenPlan) -> ImportResult:
    """The file steps (folder, manifest), off the journal thread."""
    return await asyncio.to_thread(finish_import, plan, written.reading, written.specs,
                                   written.batch, written.added)


def _write(journal: Store, plan: ImportPlan, reading: JournalReading, specs: list[JobSpec],
           now: float, max_spend: float | None, cap: bool) -> tuple[Batch, AddJobsResult]:
    """The journal step: the batch, its jobs and its cap, in one call on the journal thread."""
    batch, added = write_jobs(journal, plan, reading, specs, now)
    if cap:
        journal.update_batch_settings(batch.id, {"max_spend": max_spend}, now)
    return batch, added
