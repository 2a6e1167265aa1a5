"""A create is sent only while the claim's lease outlasts it (issue 19): on a shared store
the engine's intent names ``EngineConfig.create_min_lease_seconds`` (the create's timeout
plus a margin), and the provider timeouts are fitted into the lease so that a fresh claim
always has it."""

from __future__ import annotations

import asyncio
import dataclasses
from pathlib import Path

import pytest

from reelqueue.domain.models import AccountSpec, ClaimToken
from reelqueue.domain.states import JobState
from reelqueue.engine.config import EngineConfig
from reelqueue.store.memory import MemoryStore
from tests.engine.fakes import FakeProvider
from tests.engine.test_engine import FAST, add_batch, drain, install

pytestmark = pytest.mark.unit


def test_the_create_fits_in_the_lease() -> None:
    one_machine = EngineConfig()
    assert one_machine.create_min_lease_seconds is None, "nobody takes a lease over"
    team = dataclasses.replace(EngineConfig(), shared_store=True).fitted_to_lease()
    assert (team.http_connect_timeout_seconds, team.http_timeout_seconds,
            team.create_margin_seconds) == (10.0, 30.0, 5.0)
    assert team.create_min_lease_seconds == 45.0 == team.lease_seconds * 0.75
    short = dataclasses.replace(team, lease_seconds=4.0).fitted_to_lease()
    assert (short.http_connect_timeout_seconds, short.http_timeout_seconds,
            short.create_margin_seconds, short.create_min_lease_seconds) == (1.0, 1.5, 0.5, 3.0)
    long = dataclasses.replace(EngineConfig(), shared_store=True,
                               lease_seconds=600.0).fitted_to_lease()
    assert long.http_timeout_seconds == 60.0, "a long lease keeps the timeouts"
    assert short.fitted_to_lease() == short, "fitting twice changes nothing"


class FrozenBeforeTheCreate(MemoryStore):
    """The first claim's worker is late to its intent: by then its lease has 0.5 s left
    (as after a freeze between claim and create). Records each intent's minimum."""

    def __init__(self) -> None:
        super().__init__()
        self.minimums: list[float | None] = []
        self.frozen: ClaimToken | None = None

    def mark_submitting(self, token: ClaimToken, client_token: str, now: float, *,
                        min_lease_seconds: float | None = None) -> bool:
        self.minimums.append(min_lease_seconds)
        if self.frozen is None:
            self.frozen = token
            self.raw_connection().execute("UPDATE jobs SET lease_until = ? WHERE id = ?",
                                          (now + 0.5, token.job_id))
        return super().mark_submitting(token, client_token, now,
                                       min_lease_seconds=min_lease_seconds)


async def test_no_create_goes_out_on_a_lease_too_short_for_it(tmp_path: Path) -> None:
    provider = FakeProvider()
    store = FrozenBeforeTheCreate()
    add_batch(store, tmp_path, ["p0", "p1"])
    store.add_account(AccountSpec("a", "fake", 2), 0)
    config = dataclasses.replace(FAST, lease_seconds=4.0, shared_store=True)
    engine = await asyncio.wait_for(drain(store, config, providers=install(provider)), 30)
    assert engine.last_result.outcome == "drained"  # type: ignore[attr-defined]
    assert set(store.minimums) == {3.0}, "the intent names the create's timeout + margin"
    assert store.frozen is not None
    refused = [e for e in store.ledger(store.frozen.job_id) if e.event == "fenced_out"]
    assert refused and refused[0].detail["why"] == "lease too short for a create"
    assert refused[0].claim_token == store.frozen.token
    # Taken over once its lease ran out, requeued (it never reached SUBMITTING), created
    # once by the next claim.
    assert {j.state for j in store.list_jobs()} == {JobState.COMPLETED}
    assert sorted(provider.creates.values()) == [1, 1], "no create on the short lease"


async def test_one_machine_sends_the_create_whatever_the_lease(tmp_path: Path) -> None:
    provider = FakeProvider()
    store = FrozenBeforeTheCreate()
    add_batch(store, tmp_path, ["p0"])
    store.add_account(AccountSpec("a", "fake", 1), 0)
    engine = await asyncio.wait_for(drain(store, FAST, providers=install(provider)), 30)
    assert engine.last_result.outcome == "drained"  # type: ignore[attr-defined]
    assert store.minimums == [None]
    assert sum(provider.creates.values()) == 1
