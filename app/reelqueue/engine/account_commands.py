"""The user's account commands for a running engine that are not methods of the engine.

Qt-free, for the front ends. Each writes on the journal thread and then wakes the pump
itself, so a new account starts taking jobs at once and no caller hand-writes the wake.
"""

from __future__ import annotations

from reelqueue.domain.models import Account, AccountSpec
from reelqueue.engine.engine import Engine


async def add_account(engine: Engine, spec: AccountSpec) -> Account:
    """Add the account to the journal (its key is already in the keyring) and wake the
    pump."""
    account = await engine.store.add_account(spec, engine.clock.now())
    engine.wake()
    return account
