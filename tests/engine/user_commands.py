"""The user's commands as the application layer gives them to an engine, for the engine's
own tests: a journal write on the engine's journal thread, then one ``Engine.changed``."""

from __future__ import annotations

from reelqueue.domain.models import Account, Batch
from reelqueue.engine.engine import Engine
from reelqueue.store.spend import SpendSummary, local_day_start


async def cancel(engine: Engine, job_ids: list[int]) -> list[int]:
    done = await engine.store.cancel_jobs(job_ids, engine.clock.now())
    await engine.changed(jobs=done)
    return done


async def retry(engine: Engine, job_ids: list[int], *, reconcile: bool = True) -> list[int]:
    done = await engine.store.requeue_jobs(job_ids, engine.clock.now(), reconcile=reconcile)
    await engine.changed(jobs=done)
    return done


async def set_daily_cap(engine: Engine, account: str, usd: float | None) -> Account:
    updated = await engine.store.update_account(account, engine.clock.now(),
                                                settings={"daily_cap": usd})
    await engine.changed(accounts=[account])
    return updated


async def set_batch_cap(engine: Engine, batch_id: int, usd: float | None) -> Batch | None:
    batch = await engine.store.update_batch_settings(batch_id, {"max_spend": usd},
                                                     engine.clock.now())
    await engine.changed()
    return batch


async def spend_summary(engine: Engine) -> SpendSummary:
    now = engine.clock.now()
    return await engine.store.spend_summary(now, local_day_start(now))
