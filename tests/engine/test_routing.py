"""Routing across providers end to end (issue 24): the engine against four scripted
providers — one runs out of credits mid-batch, one rejects its key, one refuses the rows'
duration, one is healthy — on every store. Every row completes on the next candidate in
the route's order with one render, the ledger shows each hand-over, and a create whose
outcome is unknown never moves."""

from __future__ import annotations

import asyncio
import random
from collections import Counter
from pathlib import Path

import pytest

from reelqueue.domain.errors import ErrorClass, ErrorLabel, ProviderError
from reelqueue.domain.models import AccountSpec, BatchSpec, JobSpec
from reelqueue.domain.routes import Candidate, Route, RoutePolicy
from reelqueue.domain.states import AccountStatus, JobState
from reelqueue.engine.engine import Engine
from reelqueue.engine.events import JobEvent
from reelqueue.providers.base import ParamSpec, RenderRequest
from reelqueue.providers.builtin import builtin_registry
from reelqueue.providers.registry import ProviderInfo, ProviderRegistry
from reelqueue.store.base import Store
from tests.engine.fakes import FakeProvider, Script
from tests.engine.test_engine import FAST

pytestmark = pytest.mark.unit


class OutOfCredits(FakeProvider):
    """Renders ``credits`` videos, then answers every create "out of credits"."""

    def __init__(self, credits: int) -> None:
        super().__init__()
        self.credits = credits

    async def submit(self, request: RenderRequest) -> str:
        if self.credits <= 0:
            self.creates[request.job_key] = self.creates.get(request.job_key, 0) + 1
            raise ProviderError("402 insufficient credits", error_class=ErrorClass.ACCOUNT,
                                label=ErrorLabel.OUT_OF_CREDITS, status_code=402)
        self.credits -= 1
        return await super().submit(request)


class Refusing(FakeProvider):
    """Answers every create with ``error`` (nothing is made)."""

    def __init__(self, error: ProviderError) -> None:
        super().__init__()
        self.error = error

    async def submit(self, request: RenderRequest) -> str:
        self.creates[request.job_key] = self.creates.get(request.job_key, 0) + 1
        raise self.error


def registry_of(providers: dict[str, FakeProvider]) -> ProviderRegistry:
    registry = builtin_registry()
    for kind, provider in providers.items():
        registry = registry.with_provider(ProviderInfo(
            kind, kind, lambda client, cfg, p=provider: p, ParamSpec(), None,
            requires_key=False))
    return registry


def add_routed(store: Store, tmp_path: Path, rows: int, kinds: list[str],
               policy: RoutePolicy = RoutePolicy.ORDER) -> None:
    route = Route(policy, tuple(Candidate(k, {"duration": 5}, None) for k in kinds))
    batch = store.create_batch(BatchSpec("b", "s.csv", str(tmp_path / "out")), 0)
    store.add_jobs(batch.id, [
        JobSpec(f"k{i}", f"p{i}", kinds[0], str(tmp_path / "out" / f"{i:03d}.mp4"),
                params={"duration": 5}, row_number=i + 2, route=route)
        for i in range(rows)], 0)


async def run(store: Store, providers: dict[str, FakeProvider]) -> list[JobEvent]:
    seen: list[JobEvent] = []
    engine = Engine(store, config=FAST, rng=random.Random(3),
                    providers=registry_of(providers))
    engine.bus.subscribe(lambda e: seen.append(e) if isinstance(e, JobEvent) else None)
    await engine.start()
    try:
        # Bounded by progress, not by the wall clock (CI's two cores may be busy): the
        # ledger must grow in every 30 s until the batch is drained.
        drained = asyncio.ensure_future(engine.run_until_drained())
        written = -1
        while not drained.done():
            await asyncio.wait({drained}, timeout=30)
            now_written = len(store.ledger())
            assert drained.done() or now_written != written, "no progress in 30 s"
            written = now_written
        assert drained.result().outcome == "drained", drained.result()
    finally:
        await engine.stop()
    return seen


async def test_every_row_completes_on_the_next_candidate_in_order(
    store: Store, tmp_path: Path,
) -> None:
    providers: dict[str, FakeProvider] = {
        "credits": OutOfCredits(credits=3),
        "badkey": Refusing(ProviderError("401 invalid api key", error_class=ErrorClass.ACCOUNT,
                                         label=ErrorLabel.KEY_REJECTED, status_code=401)),
        "noduration": Refusing(ProviderError(
            "400 duration must be one of 4, 6, 8", error_class=ErrorClass.PERMANENT,
            label=ErrorLabel.INVALID_INPUT, status_code=400)),
        "healthy": FakeProvider({f"p{i}": Script(polls=2) for i in range(12)}),
    }
    order = ["credits", "badkey", "noduration", "healthy"]
    add_routed(store, tmp_path, 12, order)
    for kind, capacity in (("credits", 1), ("badkey", 1), ("noduration", 2), ("healthy", 2)):
        store.add_account(AccountSpec(f"{kind}-a", kind, capacity), 0)
    seen = await run(store, providers)

    jobs = store.list_jobs()
    assert {j.state for j in jobs} == {JobState.COMPLETED}
    where = Counter(j.provider for j in jobs)
    assert where["credits"] == 3, "three renders fit the credits it had"
    assert where["healthy"] == 9 and set(where) == {"credits", "healthy"}
    # one render per row, across all four providers
    renders = Counter(str(r["prompt"]) for p in providers.values() for r in p.renders.values())
    assert renders == Counter(f"p{i}" for i in range(12))
    assert {a.name: a.status for a in store.list_accounts()} == {
        "credits-a": AccountStatus.OUT_OF_CREDITS, "badkey-a": AccountStatus.KEY_REJECTED,
        "noduration-a": AccountStatus.READY, "healthy-a": AccountStatus.READY}
    # the ledger shows each move; a refusal marks the refusing provider in the route
    moves = [e for e in store.ledger() if e.event == "handed_over"]
    for job in jobs:
        if job.provider != "healthy":
            continue
        mine = [(e.detail["from"], e.detail["to"]) for e in moves if e.job_id == job.id]
        assert mine and mine[-1][1] == "healthy", (job.id, mine)
        assert all(order.index(str(b)) > order.index(str(a)) or a == b or b != "healthy"
                   for a, b in mine)
    refused = [e for e in moves if e.detail.get("label") == "invalid input"]
    assert refused and all(e.detail["from"] == "noduration" for e in refused)
    for e in refused:
        job = store.get_job(int(e.job_id or 0))
        assert job is not None and job.route is not None
        assert job.route.candidate("noduration") is None, "never tried there again"
    # the window heard where each job went
    assert any(e.provider == "healthy" for e in seen)


async def test_an_unknown_create_never_moves(store: Store, tmp_path: Path) -> None:
    lost = ProviderError("timed out after sending", error_class=ErrorClass.RETRYABLE,
                         label=ErrorLabel.TIMED_OUT, body_maybe_sent=True)
    providers: dict[str, FakeProvider] = {
        "flaky": FakeProvider({"p0": Script(submit_errors=[lost])}),  # cannot be asked
        "healthy": FakeProvider(),
    }
    add_routed(store, tmp_path, 1, ["flaky", "healthy"])
    store.add_account(AccountSpec("flaky-a", "flaky", 1), 0)
    store.add_account(AccountSpec("healthy-a", "healthy", 2), 0)
    await run(store, providers)
    (job,) = store.list_jobs()
    assert job.state is JobState.PARKED and job.provider == "flaky"
    assert job.error_label == "submit outcome unknown"
    assert providers["healthy"].creates == {}, "the render may exist at flaky: never paid twice"
    assert not [e for e in store.ledger() if e.event == "handed_over"]


async def test_no_candidate_left_fails_with_the_last_refusal(store: Store, tmp_path: Path,
                                                             ) -> None:
    refusal = ProviderError("400 duration must be 4, 6 or 8", error_class=ErrorClass.PERMANENT,
                            label=ErrorLabel.INVALID_INPUT, status_code=400)
    providers: dict[str, FakeProvider] = {"one": Refusing(refusal), "two": Refusing(refusal)}
    add_routed(store, tmp_path, 1, ["one", "two"])
    store.add_account(AccountSpec("one-a", "one", 1), 0)
    store.add_account(AccountSpec("two-a", "two", 1), 0)
    await run(store, providers)
    (job,) = store.list_jobs()
    assert job.state is JobState.FAILED and job.provider == "two"
    assert job.error_label == "invalid input"
    assert providers["one"].creates == {"k0": 1} and providers["two"].creates == {"k0": 1}
    assert [(e.detail["from"], e.detail["to"]) for e in store.ledger()
            if e.event == "handed_over"] == [("one", "two")]


async def test_a_refused_create_is_not_counted_as_spent(store: Store, tmp_path: Path) -> None:
    """The intent charges the price before the create leaves; a 4xx refusal means nothing
    was made, so the charge is given back once the error is recorded: a routed job refused
    by one provider and rendered by the next counts one price, and caps see that."""
    refusal = ProviderError("400 duration must be 4, 6 or 8", error_class=ErrorClass.PERMANENT,
                            label=ErrorLabel.INVALID_INPUT, status_code=400)
    providers: dict[str, FakeProvider] = {"picky": Refusing(refusal), "healthy": FakeProvider()}
    route = Route(RoutePolicy.ORDER, (Candidate("picky", {"duration": 5}, 0.9),
                                      Candidate("healthy", {"duration": 5}, 0.3)))
    batch = store.create_batch(BatchSpec("b", "s.csv", str(tmp_path / "out")), 0)
    store.add_jobs(batch.id, [
        JobSpec("k0", "p0", "picky", str(tmp_path / "out" / "0.mp4"), params={"duration": 5},
                metadata={"price": 0.9}, route=route),
        JobSpec("k1", "p1", "picky", str(tmp_path / "out" / "1.mp4"), params={"duration": 5},
                metadata={"price": 0.9})], 0)  # unrouted: fails, and is not charged
    store.add_account(AccountSpec("picky-a", "picky", 1), 0)
    store.add_account(AccountSpec("healthy-a", "healthy", 1), 0)
    await run(store, providers)
    jobs = {j.job_key: j for j in store.list_jobs()}
    assert jobs["k0"].state is JobState.COMPLETED and jobs["k0"].provider == "healthy"
    assert jobs["k1"].state is JobState.FAILED
    spends = [(e.job_id, e.account, round(float(e.detail["usd"]), 4))
              for e in store.ledger() if e.event == "spend"]
    # each refused intent charged 0.9 and was given back; healthy's render: 0.3, and the
    # fake's reported cost of 0.25 corrects it
    assert sum(usd for _, _, usd in spends) == pytest.approx(0.25)
    assert sorted(usd for job, account, usd in spends if account == "picky-a") == [-0.9, -0.9,
                                                                                  0.9, 0.9]
    summary = store.spend_summary(10**10, 0.0)
    assert {a.account: round(a.spent_today, 4) for a in summary.accounts} == {
        "picky-a": 0.0, "healthy-a": 0.25}
