"""The user's queue-order commands for a running engine: priority and pausing a batch.

Qt-free, for the window (the CLI calls the same store operations on its own journal).
Each runs on the journal thread and then wakes the pump, so a batch resumed or moved to
the front is claimed at once.
"""

from __future__ import annotations

from reelqueue.domain.models import Batch
from reelqueue.engine.engine import Engine
from reelqueue.store.base import Prioritized


async def prioritize_jobs(engine: Engine, job_ids: list[int],
                          priority: int | None = None) -> Prioritized:
    """Give the jobs ``priority`` (None: move them to the front)."""
    store = engine.store
    result = await store.prioritize_jobs(job_ids, engine.clock.now(), priority=priority)
    engine.wake()
    return result


async def prioritize_batch(engine: Engine, batch_id: int,
                           priority: int | None = None) -> Prioritized:
    """Every unfinished job of the batch (None: to the front)."""
    store = engine.store
    result = await store.prioritize_batch(batch_id, engine.clock.now(), priority=priority)
    engine.wake()
    return result


async def set_batch_paused(engine: Engine, batch_id: int, paused: bool) -> Batch | None:
    """Pause (its jobs are not claimed; renders in flight finish) or resume a batch."""
    store = engine.store
    batch = await store.set_batch_paused(batch_id, paused, engine.clock.now())
    engine.wake()
    return batch


def is_paused(batch: Batch) -> bool:
    return bool(batch.settings.get("paused"))
