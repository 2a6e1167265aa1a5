"""Reconciliation from the provider's records (issue 19, DESIGN.md invariant 13): the pure
decision over one listing, and the engine finding, creating once, or keeping unknown."""

from __future__ import annotations

import asyncio
import random
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from reelqueue.domain.errors import ErrorClass, ErrorLabel, ProviderError
from reelqueue.domain.models import AccountSpec
from reelqueue.domain.states import JobState
from reelqueue.engine.engine import Engine
from reelqueue.engine.reconcile import Pending, decide
from reelqueue.providers.base import (
    ReconcileMethod,
    RemoteRecord,
    RenderRequest,
    SearchResult,
    reconcile_method,
)
from reelqueue.store.base import ClaimParams
from reelqueue.store.memory import MemoryStore

from .fakes import FakeProvider, Script
from .test_engine import FAST, add_batch, install

pytestmark = pytest.mark.unit

CREATE = 10.0  # the create window of these decisions
MARGIN = 5.0
SETTLE = 2.0


def request(prompt: str, job: int = 1) -> RenderRequest:
    return RenderRequest(job_key=f"k{job}", client_token=f"ct{job}", prompt=prompt)


def echo(req: RenderRequest) -> dict[str, Any]:
    return {"prompt": req.prompt}


def record(rid: str, at: float | None, prompt: str | None = "p") -> RemoteRecord:
    return RemoteRecord(rid, at, "succeeded", None if prompt is None else {"prompt": prompt})


def verdicts(pending: list[Pending], records: list[RemoteRecord], *, complete: bool = True,
             others: list[Pending] | None = None, held: set[str] | None = None,
             read_at: float = 1000.0, keeps: float | None = None) -> dict[int, Any]:
    return decide(pending, others or [], SearchResult(tuple(records), complete),
                  read_at=read_at, held=held or set(), echo=echo, create_seconds=CREATE,
                  margin=MARGIN, settle_seconds=SETTLE, echo_keeps_hours=keeps)


# -- the decision over one listing -----------------------------------------------------------
def test_one_render_of_the_prompt_in_the_window_is_found() -> None:
    got = verdicts([Pending(1, request("p"), 100.0)],
                   [record("r-old", 50.0), record("r-mine", 103.0), record("r-other", 104.0, "q")])
    assert got[1].outcome == "found" and got[1].provider_job_id == "r-mine"
    assert got[1].window == (95.0, 115.0)


def test_nothing_in_a_complete_listing_is_absent_and_an_incomplete_one_is_unknown() -> None:
    pending = [Pending(1, request("p"), 100.0)]
    assert verdicts(pending, [record("r-old", 50.0)])[1].outcome == "absent"
    unknown = verdicts(pending, [record("r-old", 50.0)], complete=False)[1]
    assert unknown.outcome == "unknown" and "whole window" in unknown.why


def test_two_candidates_for_one_job_are_never_guessed_between() -> None:
    got = verdicts([Pending(1, request("p"), 100.0)],
                   [record("r-a", 101.0), record("r-b", 108.0)])[1]
    assert got.outcome == "unknown"
    assert [c.provider_job_id for c in got.candidates] == ["r-a", "r-b"]


def test_two_jobs_of_one_prompt_each_get_their_own_render_or_stay_unknown() -> None:
    both = [Pending(1, request("p", 1), 100.0), Pending(2, request("p", 2), 102.0)]
    got = verdicts(both, [record("r-b", 104.0), record("r-a", 101.0)])
    assert (got[1].provider_job_id, got[2].provider_job_id) == ("r-a", "r-b")
    one = verdicts(both, [record("r-a", 101.0)])
    assert one[1].outcome == one[2].outcome == "unknown", "which of the two landed?"
    # a parked job of the same prompt counts too: its render is never given away
    alone = verdicts([both[0]], [record("r-a", 101.0)], others=[both[1]])
    assert alone[1].outcome == "unknown"


def test_a_render_held_by_another_job_is_no_candidate() -> None:
    got = verdicts([Pending(1, request("p"), 100.0)],
                   [record("r-taken", 101.0), record("r-mine", 103.0)], held={"r-taken"})
    assert got[1].outcome == "found" and got[1].provider_job_id == "r-mine"
    none_left = verdicts([Pending(1, request("p"), 100.0)], [record("r-taken", 101.0)],
                         held={"r-taken"})
    assert none_left[1].outcome == "absent"


def test_what_cannot_be_compared_or_narrowed_stays_unknown() -> None:
    pending = [Pending(1, request("p"), 100.0)]
    blind = verdicts(pending, [record("r-removed", 103.0, prompt=None)])[1]
    assert blind.outcome == "unknown" and "cannot be compared" in blind.why
    assert [c.provider_job_id for c in blind.candidates] == ["r-removed"]
    undated = verdicts(pending, [record("r-undated", None, prompt=None)])[1]
    assert undated.outcome == "unknown"
    pruned = verdicts([Pending(1, request("p"), None)], [])[1]
    assert pruned.outcome == "unknown" and "no longer in the journal" in pruned.why
    early = verdicts(pending, [], read_at=100.0 + CREATE + SETTLE - 0.5)[1]
    assert early.outcome == "unknown" and "settle" in early.why
    expired = verdicts(pending, [], read_at=100.0 + 3600.0, keeps=1.0)[1]
    assert expired.outcome == "unknown" and "1 h" in expired.why


# -- the engine --------------------------------------------------------------------------------
class SearchingFake(FakeProvider):
    """A provider that lists the account's renders (prompt echoed, creation time), shows a
    new one only ``delay`` seconds after it was created, and keeps no client token."""

    settle_seconds = 0.3
    echo_keeps_hours = None
    supports_search = True

    def __init__(self, scripts: dict[str, Script] | None = None, delay: float = 0.2) -> None:
        super().__init__(scripts, supports_lookup=False)
        self.delay = delay
        self.created_at: dict[str, float] = {}
        self.foreign: list[RemoteRecord] = []
        self.searches = 0

    def _create(self, request: RenderRequest, script: Script) -> str:
        render_id = super()._create(request, script)
        self.created_at[render_id] = time.time()
        return render_id

    def echo(self, request: RenderRequest) -> dict[str, Any]:
        return {"prompt": request.prompt}

    async def search(self, since: float, until: float) -> SearchResult:
        self.searches += 1
        now = time.time()
        mine = [RemoteRecord(rid, at, "running", {"prompt": self.renders[rid]["prompt"]})
                for rid, at in self.created_at.items() if at + self.delay <= now]
        return SearchResult(tuple(mine + self.foreign), True)


QUICK = replace(FAST, http_timeout_seconds=0.04)


def answer_lost() -> ProviderError:
    return ProviderError("read timeout", error_class=ErrorClass.RETRYABLE,
                         label=ErrorLabel.TIMED_OUT, body_maybe_sent=True)


def setup(tmp_path: Path, provider: FakeProvider, prompts: list[str]) -> MemoryStore:
    store = MemoryStore()
    add_batch(store, tmp_path, prompts)
    store.add_account(AccountSpec("a", "fake", 2), 0)
    return store


async def run(store: MemoryStore, provider: FakeProvider) -> None:
    engine = Engine(store, providers=install(provider), config=QUICK, rng=random.Random(1))
    await engine.start()
    await asyncio.wait_for(engine.run_until_drained(), 30)
    await engine.stop()


def events(store: MemoryStore, job_id: int = 1) -> list[str]:
    return [e.event for e in store.ledger(job_id)]


def test_the_fake_is_reconciled_by_search() -> None:
    assert reconcile_method(SearchingFake()) == ReconcileMethod.SEARCH


async def test_a_lost_create_answer_is_found_in_the_list_and_never_created_again(
        tmp_path: Path) -> None:
    provider = SearchingFake({"p": Script(submit_errors=[answer_lost()])})
    store = setup(tmp_path, provider, ["p"])
    await run(store, provider)
    job = store.list_jobs()[0]
    assert job.state == JobState.COMPLETED, (job, events(store))
    assert provider.creates == {"k0": 1}
    reconciled = next(e for e in store.ledger(1) if e.event == "reconciled")
    assert reconciled.detail["method"] == "search" and reconciled.detail["provider_job_id"]
    assert reconciled.detail["window"] and reconciled.detail["complete"] is True


async def test_a_create_that_never_landed_is_created_once_on_the_record(
        tmp_path: Path) -> None:
    provider = SearchingFake({"p": Script(submit_errors=[answer_lost()], lost=True)})
    store = setup(tmp_path, provider, ["p"])
    await run(store, provider)
    job = store.list_jobs()[0]
    assert job.state == JobState.COMPLETED and job.attempts == 1, (job, events(store))
    assert provider.creates == {"k0": 2}, "the lost one never reached it; one real create"
    absent = next(e for e in store.ledger(1) if e.event == "reconciled_absent")
    assert absent.detail["settle_seconds"] == provider.settle_seconds
    assert "possible_duplicate_charge" not in events(store)


async def test_another_clients_render_of_the_same_prompt_keeps_it_unknown_for_the_user(
        tmp_path: Path) -> None:
    provider = SearchingFake({"p": Script(submit_errors=[answer_lost()])})
    provider.foreign.append(RemoteRecord("someone-else", time.time() + 0.1, "succeeded",
                                         {"prompt": "p"}))
    store = setup(tmp_path, provider, ["p", "q"])
    await run(store, provider)
    job = store.list_jobs()[0]
    assert job.state == JobState.PARKED and job.error_class == "unknown", events(store)
    assert job.claim_token is None and store.live_count("a") == 0, "holds no slot"
    assert "someone-else" in (job.error_message or "") and "r1" in (job.error_message or "")
    assert store.list_jobs()[1].state == JobState.COMPLETED, "the other row went on"
    unresolved = next(e for e in store.ledger(1) if e.event == "reconcile_unresolved")
    assert {c["id"] for c in unresolved.detail["candidates"]} == {"r1", "someone-else"}
    assert provider.creates == {"k0": 1, "k1": 1}
    # The user picks the render: it is read, never created again.
    assert store.attach_render(1, "r1", time.time())
    await run(store, provider)
    job = store.list_jobs()[0]
    assert job.state == JobState.COMPLETED and job.provider_job_id == "r1", events(store)
    assert provider.creates == {"k0": 1, "k1": 1}


async def test_died_inside_the_submit_window_is_reconciled_at_start(tmp_path: Path) -> None:
    provider = SearchingFake()
    store = setup(tmp_path, provider, ["p"])
    claim = store.claim_next_job(ClaimParams("a", "dead-instance", time.time(), 60.0))
    assert claim and store.mark_submitting(claim.token, "ct-died", time.time())
    await provider.submit(RenderRequest("k0", "ct-died", "p"))  # it reached the provider
    await run(store, provider)
    job = store.list_jobs()[0]
    assert job.state == JobState.COMPLETED and provider.creates == {"k0": 1}, events(store)
    assert "reconciled" in events(store) and provider.searches >= 1


class Cancelling(FakeProvider):
    def __init__(self, scripts: dict[str, Script]) -> None:
        super().__init__(scripts)
        self.cancelled: list[str] = []

    async def cancel(self, provider_job_id: str) -> None:
        self.cancelled.append(provider_job_id)


async def test_a_create_answered_after_its_claim_was_lost_is_an_orphan_cancelled_and_flagged(
        tmp_path: Path) -> None:
    provider = Cancelling({"p": Script(submit_seconds=0.5)})
    store = setup(tmp_path, provider, ["p"])
    engine = Engine(store, providers=install(provider), config=QUICK, rng=random.Random(1))
    await engine.start()
    for _ in range(20000):  # until the create is on its way
        if provider.creates:
            break
        await asyncio.sleep(0.001)
    # The claim is lost meanwhile (here: the job cancelled behind the worker's back).
    assert store.cancel_jobs([1], time.time()) == [1]
    for _ in range(20000):
        if "orphan_cancelled" in events(store):
            break
        await asyncio.sleep(0.001)
    await engine.stop()
    assert provider.cancelled == ["r1"], events(store)
    assert {"orphan_render", "possible_duplicate_charge", "orphan_cancelled"} <= set(
        events(store))
    orphan = next(e for e in store.ledger(1) if e.event == "orphan_render")
    assert orphan.detail["provider_job_id"] == "r1" and orphan.detail["job_state"] == "CANCELLED"
    assert store.list_jobs()[0].state == JobState.CANCELLED


async def test_a_lost_create_is_looked_for_early_and_reattached_long_before_the_settle_time(
        tmp_path: Path) -> None:
    """Issue 33, "look early, conclude late": a gateway's create answer was unreadable and
    its render listed within 2 s, yet the first list read waited the create window plus
    the whole settle time (320 s) with the slot held. Now the list is read as soon as the
    provider can have listed it, and a render found is reattached at once; only "not
    there" waits for the settle time."""
    provider = SearchingFake({"p": Script(submit_errors=[answer_lost()])}, delay=0.05)
    provider.settle_seconds = 3600.0  # an hour: the old first read would never come here
    store = setup(tmp_path, provider, ["p"])
    await run(store, provider)  # bounded: run() gives the engine 30 s to drain
    job = store.list_jobs()[0]
    assert job.state == JobState.COMPLETED, (job, events(store))
    assert provider.creates == {"k0": 1}, "found, never created again"
    reconciled = next(e for e in store.ledger(1) if e.event == "reconciled")
    assert reconciled.detail["provider_job_id"]


def test_early_looks_start_with_the_create_window_and_end_before_the_settle_time() -> None:
    from reelqueue.engine.reconcile import early_looks
    looks = early_looks(100.0, 20.0, 300.0)
    assert looks[0] == 120.0 and looks == [120.0, 195.0, 270.0, 345.0]
    assert all(at < 100.0 + 20.0 + 300.0 for at in looks)
    assert early_looks(100.0, 20.0, 0.0) == [], "no settle time: one conclusive read"


def test_an_early_read_finds_but_never_concludes_absent() -> None:
    pending = [Pending(1, request("p"), 100.0)]
    before = 100.0 + CREATE + SETTLE - 0.5
    found = verdicts(pending, [record("r1", 103.0)], read_at=before)[1]
    assert found.outcome == "found" and found.provider_job_id == "r1"
    nothing = verdicts(pending, [], read_at=before)[1]
    assert nothing.outcome == "unknown" and "settle" in nothing.why
    two = verdicts(pending, [record("r1", 103.0), record("r2", 104.0)], read_at=before)[1]
    assert two.outcome == "unknown"
