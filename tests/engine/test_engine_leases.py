"""The heartbeat renews only the claims the engine runs (issue 15): a claim written while
its caller got an error (a COMMIT whose answer was lost, the read-back too) is not kept
alive by its own live instance; its lease runs out and the job is taken over."""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Collection
from pathlib import Path

import pytest

from reelqueue.domain.errors import JournalError
from reelqueue.domain.models import AccountSpec, Claim
from reelqueue.domain.states import JobState
from reelqueue.store.base import ClaimParams
from reelqueue.store.memory import MemoryStore
from tests.engine.fakes import FakeProvider, Script
from tests.engine.test_engine import FAST, add_batch, drain, install

pytestmark = [pytest.mark.unit,
              pytest.mark.expect_warnings("could not be asked", "lost the answer")]


class LostClaimAnswer(MemoryStore):
    """The first claim is written, but its caller hears an error."""

    def __init__(self) -> None:
        super().__init__()
        self.lost: Claim | None = None
        self.renewed_tokens: list[list[str] | None] = []

    def claim_next_job(self, params: ClaimParams) -> Claim | None:
        claim = super().claim_next_job(params)
        if claim is not None and self.lost is None:
            self.lost = claim
            raise JournalError("The team database lost the answer to the last change (a "
                               "claim) and could not be asked whether it was written.")
        return claim

    def renew_leases(self, instance_id: str, now: float, lease_seconds: float,
                     tokens: Collection[str] | None = None,
                     clock_offset: float | None = None) -> int:
        self.renewed_tokens.append(None if tokens is None else list(tokens))
        return super().renew_leases(instance_id, now, lease_seconds, tokens, clock_offset)


async def test_a_claim_the_engine_never_learned_is_taken_over(tmp_path: Path) -> None:
    provider = FakeProvider({f"p{i}": Script(submit_seconds=0.3) for i in range(3)})
    store = LostClaimAnswer()
    add_batch(store, tmp_path, [f"p{i}" for i in range(3)])
    store.add_account(AccountSpec("a", "fake", 2), 0)
    # A create is sent only with three quarters of the lease left (EngineConfig.fitted_to_lease):
    # 1 s leaves a busy machine a quarter second between the claim and the create.
    config = dataclasses.replace(FAST, lease_seconds=1.0, shared_store=True)
    engine = await asyncio.wait_for(drain(store, config, providers=install(provider)), 30)
    assert engine.last_result.outcome == "drained"  # type: ignore[attr-defined]
    assert store.lost is not None, "a claim's answer was lost (else this proves nothing)"
    lost = store.lost
    assert {j.state for j in store.list_jobs()} == {JobState.COMPLETED}, "nothing stranded"
    assert store.renewed_tokens, "the heartbeat ran"
    assert None not in store.renewed_tokens, "the heartbeat names its claims"
    assert all(lost.token.token not in t for t in store.renewed_tokens if t is not None)
    assert any(t for t in store.renewed_tokens), "the claims it runs are renewed"
    recoveries = [e.detail for e in store.ledger() if e.event == "recovery"]
    assert any(lost.job.id in d.get("requeued", []) for d in recoveries), recoveries
    assert sum(provider.creates.values()) == 3, "each job rendered once"
