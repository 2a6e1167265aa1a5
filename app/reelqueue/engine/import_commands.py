"""Writing a planned import for a running engine (the window's import; the CLI writes on
its own journal before the engine starts).

The write runs on the journal thread, where the pump's claims run too, so none can take a
job of the new batch before its spend cap is in place; then the pump is woken.
"""

from __future__ import annotations

from reelqueue.engine.engine import Engine
from reelqueue.intake.apply import ImportResult, apply_import
from reelqueue.intake.planner import ImportPlan
from reelqueue.store.base import Store


async def import_plan(engine: Engine, plan: ImportPlan, *,
                      max_spend: float | None = None) -> ImportResult:
    """Write the plan (batch, jobs, folder, manifest), with the batch's spend cap when one
    is given, and wake the pump. InputError when the import is refused."""
    now = engine.clock.now()

    def write(store: Store) -> ImportResult:
        result = apply_import(store, plan, now)
        if max_spend is not None:
            store.update_batch_settings(result.batch_id, {"max_spend": max_spend}, now)
        return result

    result = await engine.store.call(write, engine.store.sync)
    engine.wake()
    return result
