"""Spend caps for a running engine (docs/design-notes.md "Spend caps").

Qt-free, for the window; the CLI calls the same store operations on its own journal. A cap
raised or removed here wakes the pump at once; a change made by another process (the CLI
while ``run`` runs) is read by the running engine's next pass (its timer, at most 30 s),
because the claim reads the caps from the journal every time.
"""

from __future__ import annotations

from reelqueue.domain.models import Account, Batch
from reelqueue.engine.engine import Engine
from reelqueue.store.spend import SpendSummary, local_day_start

__all__ = ["local_day_start", "set_batch_cap", "set_daily_cap", "spend_summary"]


async def set_batch_cap(engine: Engine, batch_id: int, usd: float | None) -> Batch | None:
    """The batch's ``max_spend`` (None: no cap). None: no such batch."""
    store = engine.store
    batch = await store.update_batch_settings(batch_id, {"max_spend": usd}, engine.clock.now())
    engine.wake()
    return batch


async def set_daily_cap(engine: Engine, account: str, usd: float | None) -> Account:
    """The account's ``daily_cap`` (None: no cap)."""
    return await engine.set_daily_cap(account, usd)


async def spend_summary(engine: Engine) -> SpendSummary:
    store, now = engine.store, engine.clock.now()
    return await store.spend_summary(now, local_day_start(now))
