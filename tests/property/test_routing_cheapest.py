""""Cheapest available now" over a 300-row sheet (issue 24), as a property: whatever the
prices, the limits and the order in which accounts ask and renders finish, each render
starts on the cheapest of its candidates that had an account with a free slot at that
moment — never waiting for a cheaper slot, never skipping a free cheaper one. The same
program runs on the memory store and the SQLite journal, which must agree claim by claim.
"""

from __future__ import annotations

import os
import random
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from reelqueue.domain.models import AccountSpec, BatchSpec, Claim, JobSpec
from reelqueue.domain.routes import Candidate, Route, RoutePolicy, ranked
from reelqueue.store.base import ClaimParams, JobError, Store
from reelqueue.store.memory import MemoryStore
from reelqueue.store.sqlite import SqliteStore

pytestmark = pytest.mark.unit

ROWS = 300
SHM = "/dev/shm"
DONE = JobError("permanent", "invalid input", "finished for the test")

providers_st = st.lists(
    st.tuples(st.integers(1, 200),  # price in cents
              st.lists(st.integers(1, 4), min_size=1, max_size=2)),  # account limits
    min_size=2, max_size=5)


def free_providers(store: Store) -> dict[str, bool]:
    """provider -> whether one of its accounts has a free slot now."""
    free: dict[str, bool] = {}
    for account in store.list_accounts():
        room = store.live_count(account.name) < account.capacity
        free[account.provider] = free.get(account.provider, False) or room
    return free


@settings(max_examples=10, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(providers=providers_st, seed=st.integers(0, 2**32 - 1))
def test_each_render_starts_on_the_cheapest_candidate_with_a_free_slot(
    providers: list[tuple[int, list[int]]], seed: int,
) -> None:
    rng = random.Random(seed)
    kinds = [f"p{i}" for i in range(len(providers))]
    price = {k: cents / 100 for k, (cents, _) in zip(kinds, providers, strict=True)}
    # each row lists the providers in its own order; cheapest ranks them by price
    # On tmpfs where there is one: the property is about choices, not fsyncs.
    with tempfile.TemporaryDirectory(dir=SHM if os.path.isdir(SHM) else None) as folder:
        stores: list[Store] = [MemoryStore(), SqliteStore.open(Path(folder) / "j.sqlite3",
                                                               now=0.0)]
        specs = []
        for i in range(ROWS):
            listed = rng.sample(kinds, rng.randint(2, len(kinds)))
            route = Route(RoutePolicy.CHEAPEST, ranked(
                (Candidate(k, {"duration": 5}, price[k]) for k in listed),
                RoutePolicy.CHEAPEST))
            best = route.candidates[0]
            specs.append(JobSpec(f"k{i}", f"p{i}", best.provider, f"b/{i}.mp4",
                                 params={"duration": 5}, metadata={"price": best.price},
                                 route=route))
        accounts = [(f"{k}-{n}", k, limit)
                    for k, (_, limits) in zip(kinds, providers, strict=True)
                    for n, limit in enumerate(limits)]
        for store in stores:
            batch = store.create_batch(BatchSpec("b", "s.csv", "b"), 0.0)
            store.add_jobs(batch.id, specs, 0.0)
            for name, kind, limit in accounts:
                store.add_account(AccountSpec(name, kind, limit), 0.0)
        live: list[list[Claim]] = [[] for _ in stores]
        # The jobs not started yet, by key, with the route the test gave each: the oracle
        # keeps its own list (nothing but a claim takes a job out of the queue here)
        # instead of reading 300 jobs back from the store after each empty claim.
        waiting = {spec.job_key: spec.route for spec in specs}
        started = 0
        now = 1.0
        while started < ROWS:
            now += 1.0
            if live[0] and rng.random() < 0.4:  # a render finishes somewhere
                index = rng.randrange(len(live[0]))
                for n, store in enumerate(stores):
                    assert store.mark_failed(live[n].pop(index).token, DONE, now)
                continue
            name, kind, _ = rng.choice(accounts)
            free = free_providers(stores[0])
            claims = [s.claim_next_job(ClaimParams(name, "inst", now, 600.0)) for s in stores]
            got = [None if c is None else (c.job.job_key, c.job.provider) for c in claims]
            assert got[0] == got[1], "the stores disagree"
            claim = claims[0]
            if claim is None:
                account = stores[0].get_account(name)
                assert account is not None
                if stores[0].live_count(name) >= account.capacity:
                    continue  # no room here
                # room, yet nothing to take: each waiting job listing this provider has
                # a better-ranked candidate with a free slot
                for key, route in waiting.items():
                    assert route is not None
                    if route.candidate(kind) is None:
                        continue
                    cheaper = [c for c in route.better_than(kind) if free.get(c.provider)]
                    assert cheaper, (key, "waits although", name, "was free")
                continue
            job = claim.job
            assert job.provider == kind and job.metadata["price"] == pytest.approx(price[kind])
            assert job.route is not None
            assert waiting.pop(job.job_key) is not None, (job.job_key, "started twice")
            cheaper_free = [c.provider for c in job.route.candidates
                            if c.price is not None and c.price < price[kind]
                            and free.get(c.provider)]
            assert not cheaper_free, (job.job_key, kind, cheaper_free)
            for n in range(len(stores)):
                live[n].append(claims[n])  # type: ignore[arg-type]
            started += 1
        for store in stores:
            store.close()
