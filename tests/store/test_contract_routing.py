"""Store contract for routes across providers (issue 24, docs/routing.md), on every store:
an account takes a routed job when no better-ranked candidate has a free slot now; a
definite refusal hands the job to the next candidate; nothing that may have a create
moves."""

from __future__ import annotations

from pathlib import Path

import pytest

from reelqueue.domain.clock import FakeClock
from reelqueue.domain.models import AccountSpec, BatchSpec, Claim, JobSpec
from reelqueue.domain.routes import Candidate, Route, RoutePolicy
from reelqueue.domain.states import AccountStatus, JobState
from reelqueue.store.base import ClaimParams, JobError, Store
from reelqueue.store.sqlite import SqliteStore

pytestmark = pytest.mark.unit

RUNWAY = Candidate("runway", {"model": "gen4_turbo", "duration": 5}, 0.25)
LUMA = Candidate("luma", {"model": "ray-2", "duration": 5}, 0.4)
VEO = Candidate("veo", {"model": "veo-3.1", "duration": 8}, 1.2)
REFUSAL = JobError("permanent", "invalid input", "duration 7 is not accepted")


def routed(tmp_path: Path, count: int, route: Route, prefix: str = "r") -> list[JobSpec]:
    best = route.best()
    assert best is not None
    meta = {} if best.price is None else {"price": best.price}
    return [JobSpec(job_key=f"{prefix}-{i}", prompt=f"prompt {i}", provider=best.provider,
                    output_path=f"b/{prefix}{i}.mp4", params=dict(best.params),
                    row_number=i + 2, name=f"{prefix}{i}", metadata=dict(meta), route=route)
            for i in range(count)]


def setup(store: Store, tmp_path: Path, clock: FakeClock, *, jobs: int = 4,
          route: Route | None = None, accounts: dict[str, tuple[str, int]] | None = None,
          ) -> int:
    batch = store.create_batch(BatchSpec("b", "s.csv", "b"), clock.now())
    store.add_jobs(batch.id, routed(tmp_path, jobs, route or Route(
        RoutePolicy.ORDER, (RUNWAY, LUMA))), clock.now())
    for name, (provider, capacity) in (accounts or {
            "runway-a": ("runway", 1), "luma-a": ("luma", 2)}).items():
        store.add_account(AccountSpec(name, provider, capacity), clock.now())
    return batch.id


def claim(store: Store, clock: FakeClock, account: str) -> Claim | None:
    return store.claim_next_job(ClaimParams(account, "inst", clock.now(), 60.0, 0.0))


def handed(store: Store) -> list[dict[str, object]]:
    return [dict(e.detail) for e in store.ledger() if e.event == "handed_over"]


def test_the_best_ranked_provider_with_a_free_slot_takes_the_job(
    store: Store, tmp_path: Path, clock: FakeClock,
) -> None:
    setup(store, tmp_path, clock)
    assert claim(store, clock, "luma-a") is None, "runway ranks first and has a free slot"
    first = claim(store, clock, "runway-a")
    assert first is not None and first.job.provider == "runway"
    assert claim(store, clock, "runway-a") is None, "runway's one slot is taken"
    second = claim(store, clock, "luma-a")
    assert second is not None, "runway has no free slot now: luma takes the next job"
    assert second.job.provider == "luma" and second.job.params == dict(LUMA.params)
    assert second.job.metadata["price"] == pytest.approx(0.4)
    assert second.job.route is not None and second.job.route.providers() == ["runway", "luma"]
    (entry,) = handed(store)
    assert entry["from"] == "runway" and entry["to"] == "luma" and entry["price"] == 0.4
    assert "runway had no free slot" in str(entry["why"])
    third = claim(store, clock, "luma-a")
    assert third is not None and third.job.provider == "luma"
    assert claim(store, clock, "luma-a") is None, "luma's two slots are taken"
    assert [j.provider for j in store.list_jobs() if j.state is JobState.QUEUED] == ["runway"]


@pytest.mark.parametrize("status", [AccountStatus.KEY_REJECTED, AccountStatus.OUT_OF_CREDITS])
def test_an_account_that_stopped_passes_its_jobs_on(
    store: Store, tmp_path: Path, clock: FakeClock, status: AccountStatus,
) -> None:
    setup(store, tmp_path, clock, jobs=2)
    store.set_account_status("runway-a", status, clock.now(), detail="stopped")
    claims = [claim(store, clock, "luma-a"), claim(store, clock, "luma-a")]
    assert all(c is not None and c.job.provider == "luma" for c in claims)
    assert len(handed(store)) == 2


def test_a_cooling_account_passes_its_jobs_on(
    store: Store, tmp_path: Path, clock: FakeClock,
) -> None:
    setup(store, tmp_path, clock, jobs=1)
    store.set_account_status("runway-a", AccountStatus.RATE_LIMITED, clock.now(),
                             cooldown_until=clock.now() + 600)
    taken = claim(store, clock, "luma-a")
    assert taken is not None and taken.job.provider == "luma"


def test_a_disabled_or_missing_better_provider_does_not_hold_the_job(
    store: Store, tmp_path: Path, clock: FakeClock,
) -> None:
    setup(store, tmp_path, clock, jobs=2, accounts={"luma-a": ("luma", 2)})
    taken = claim(store, clock, "luma-a")
    assert taken is not None and taken.job.provider == "luma"
    store.add_account(AccountSpec("runway-a", "runway", 1), clock.now())
    store.update_account("runway-a", clock.now(), enabled=False)
    assert claim(store, clock, "luma-a") is not None


def test_spread_takes_any_candidate_with_a_free_slot(
    store: Store, tmp_path: Path, clock: FakeClock,
) -> None:
    setup(store, tmp_path, clock, jobs=2, route=Route(RoutePolicy.SPREAD, (RUNWAY, LUMA)))
    taken = claim(store, clock, "luma-a")
    assert taken is not None and taken.job.provider == "luma", "no rank under spread"
    again = claim(store, clock, "runway-a")
    assert again is not None and again.job.provider == "runway"


def test_a_job_that_may_have_a_create_never_moves(
    store: Store, tmp_path: Path, clock: FakeClock,
) -> None:
    setup(store, tmp_path, clock, jobs=1)
    c = claim(store, clock, "runway-a")
    assert c is not None
    assert store.mark_submitting(c.token, "ct-1", clock.now())
    # the answer was lost: the job goes back keeping its client token (outcome unknown)
    assert store.release_to_queue(c.token, JobError("account", "key rejected", "x"),
                                  clock.now(), keep_submission=True)
    store.set_account_status("runway-a", AccountStatus.KEY_REJECTED, clock.now())
    assert claim(store, clock, "luma-a") is None, "an unknown create is never handed over"
    (job,) = store.list_jobs()
    assert job.provider == "runway" and job.client_token == "ct-1"
    assert handed(store) == []


def test_a_pinned_or_paused_job_is_not_taken_over(
    store: Store, tmp_path: Path, clock: FakeClock,
) -> None:
    batch_id = setup(store, tmp_path, clock, jobs=1)
    store.set_account_status("runway-a", AccountStatus.KEY_REJECTED, clock.now())
    store.set_batch_paused(batch_id, True, clock.now())
    assert claim(store, clock, "luma-a") is None, "a paused batch's job waits"
    store.set_batch_paused(batch_id, False, clock.now())
    assert claim(store, clock, "luma-a") is not None


def test_a_definite_refusal_hands_the_job_to_the_next_candidate(
    store: Store, tmp_path: Path, clock: FakeClock,
) -> None:
    setup(store, tmp_path, clock, jobs=1)
    c = claim(store, clock, "runway-a")
    assert c is not None and c.job.route is not None and c.job.attempts == 1
    assert store.mark_submitting(c.token, "ct-1", clock.now())
    route = c.job.route.refuse("runway", "duration 7 is not accepted")
    assert store.hand_over(c.token, REFUSAL, clock.now(), route=route, to=LUMA,
                           came_from="runway")
    (job,) = store.list_jobs()
    assert (job.state, job.provider, job.params, job.attempts) == (
        JobState.QUEUED, "luma", dict(LUMA.params), 0)
    assert job.client_token is None and job.account is None
    assert job.metadata["price"] == pytest.approx(0.4)
    assert job.route is not None and job.route.candidate("runway") is None
    assert job.error_label == "invalid input"
    (entry,) = handed(store)
    assert (entry["from"], entry["to"], entry["label"]) == ("runway", "luma", "invalid input")
    assert claim(store, clock, "runway-a") is None, "runway refused it: never again"
    taken = claim(store, clock, "luma-a")
    assert taken is not None and taken.job.id == job.id and taken.job.provider == "luma"
    # the stale claim is fenced out
    assert not store.hand_over(c.token, REFUSAL, clock.now(), route=route, to=LUMA,
                               came_from="runway")


def test_a_cap_that_refuses_the_better_price_lets_a_cheaper_candidate_take_it(
    store: Store, tmp_path: Path, clock: FakeClock,
) -> None:
    dear = Candidate("veo", VEO.params, 1.2)
    batch_id = setup(store, tmp_path, clock, jobs=2,
                     route=Route(RoutePolicy.ORDER, (dear, LUMA)),
                     accounts={"veo-a": ("veo", 2), "luma-a": ("luma", 2)})
    assert store.update_batch_settings(batch_id, {"max_spend": 0.5}, clock.now())
    assert claim(store, clock, "veo-a") is None, "veo's price passes the cap"
    taken = claim(store, clock, "luma-a")
    assert taken is not None and taken.job.provider == "luma"
    assert claim(store, clock, "luma-a") is None, "two at luma's price pass the cap of 0.5"


def test_an_unknown_price_under_a_cap_is_never_started(
    store: Store, tmp_path: Path, clock: FakeClock,
) -> None:
    unpriced = Candidate("luma", LUMA.params, None)
    batch_id = setup(store, tmp_path, clock, jobs=1,
                     route=Route(RoutePolicy.ORDER, (RUNWAY, unpriced)))
    assert store.update_batch_settings(batch_id, {"max_spend": 10.0}, clock.now())
    store.set_account_status("runway-a", AccountStatus.OUT_OF_CREDITS, clock.now())
    assert claim(store, clock, "luma-a") is None


def test_an_unreadable_route_stays_where_it_is(tmp_path: Path, clock: FakeClock) -> None:
    """A hostile journal: a route naming luma that is not a route reads as none."""
    store = SqliteStore.open(tmp_path / "j.sqlite3", now=clock.now())
    setup(store, tmp_path, clock, jobs=1)
    store.raw_connection().execute(
        "UPDATE jobs SET route = '{\"luma\": [\"luma\"' || '}}}'")
    store.set_account_status("runway-a", AccountStatus.KEY_REJECTED, clock.now())
    assert claim(store, clock, "luma-a") is None
    store.close()


def test_takeovers_count_what_each_account_took_and_from_where(
    store: Store, tmp_path: Path, clock: FakeClock,
) -> None:
    setup(store, tmp_path, clock, jobs=3)
    assert store.takeovers() == {}
    assert claim(store, clock, "runway-a") is not None
    assert claim(store, clock, "luma-a") is not None
    c = claim(store, clock, "luma-a")
    assert c is not None and c.job.provider == "luma"
    assert store.takeovers() == {"luma-a": {"runway": 2}}
    # a hand-over after a refusal is not a take-over by the account
    assert store.mark_submitting(c.token, "ct-9", clock.now())
    assert c.job.route is not None
    assert store.hand_over(c.token, REFUSAL, clock.now(),
                           route=c.job.route.refuse("luma", "no"), to=RUNWAY,
                           came_from="luma")
    assert store.takeovers() == {"luma-a": {"runway": 2}}


@pytest.mark.parametrize("kind", ["sqlite", "postgresql"])
def test_machines_claiming_at_once_take_each_routed_job_once_within_the_limits(
    request: pytest.FixtureRequest, tmp_path: Path, clock: FakeClock, kind: str,
) -> None:
    """A team: four connections (machines) claim on the accounts of three providers at
    the same moment, over routed jobs of every policy; each job is claimed once, no
    account passes its limit, and every take-over is written with its claim."""
    import threading

    stores: list[Store] = []
    cleanup: list[object] = []
    if kind == "postgresql":
        from reelqueue.store.postgres import PostgresStore
        from tests import pgserver

        dsn: str = request.getfixturevalue("pg_dsn")
        schema = pgserver.new_schema_name()
        stores = [PostgresStore.open(dsn, now=clock.now(), schema=schema,
                                     server_clock=clock) for _ in range(4)]
        cleanup.append(lambda: pgserver.drop_schema(dsn, schema))
    else:
        stores = [SqliteStore.open(tmp_path / "j.sqlite3", now=clock.now())
                  for _ in range(4)]
    try:
        first = stores[0]
        batch = first.create_batch(BatchSpec("b", "s.csv", "b"), clock.now())
        specs: list[JobSpec] = []
        for n, policy in enumerate(RoutePolicy):
            route = Route(policy, (RUNWAY, LUMA, VEO)[n % 3:] + (RUNWAY, LUMA, VEO)[:n % 3])
            specs += routed(tmp_path, 15, route, prefix=f"p{n}")
        first.add_jobs(batch.id, specs, clock.now())
        limits = {"runway-a": ("runway", 2), "luma-a": ("luma", 3), "veo-a": ("veo", 1),
                  "luma-b": ("luma", 1)}
        for name, (provider, capacity) in limits.items():
            first.add_account(AccountSpec(name, provider, capacity), clock.now())
        got: list[Claim] = []
        lock = threading.Lock()
        start = threading.Barrier(len(stores))

        def machine(store: Store) -> None:
            start.wait()
            for _ in range(3):
                for name in limits:
                    c = claim(store, clock, name)
                    if c is not None:
                        with lock:
                            got.append(c)

        threads = [threading.Thread(target=machine, args=(s,)) for s in stores]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
        assert len({c.job.id for c in got}) == len(got), "a job claimed twice"
        assert len(got) == sum(capacity for _, capacity in limits.values())
        for name, (provider, capacity) in limits.items():
            mine = [c for c in got if c.account == name]
            assert len(mine) == capacity and all(c.job.provider == provider for c in mine)
            assert first.live_count(name) == capacity
        claimed_by = {e.job_id: e.account for e in first.ledger() if e.event == "claimed"}
        for e in first.ledger():
            if e.event == "handed_over":
                assert claimed_by.get(e.job_id) == e.account, "a move without its claim"
    finally:
        for s in stores:
            s.close()
        for done in cleanup:
            done()  # type: ignore[operator]


def test_a_new_seed_goes_with_the_job_to_whichever_provider_takes_it(
    store: Store, tmp_path: Path, clock: FakeClock,
) -> None:
    """A user's retry with a new seed changes the job's params, not every candidate's; a
    take-over must keep it (else the retry renders the old seed's video again)."""
    seeded = Route(RoutePolicy.ORDER, (
        Candidate("runway", {"duration": 5, "seed": 7}, 0.25),
        Candidate("luma", {"duration": 5, "seed": 7}, 0.4),
        Candidate("veo", {"duration": 8}, 1.2)))  # takes no seed
    setup(store, tmp_path, clock, jobs=1, route=seeded,
          accounts={"runway-a": ("runway", 1), "luma-a": ("luma", 1), "veo-a": ("veo", 1)})
    c = claim(store, clock, "runway-a")
    assert c is not None
    assert store.mark_failed(c.token, REFUSAL, clock.now())
    assert store.requeue_jobs([c.job.id], clock.now(), new_seed=99) == [c.job.id]
    store.set_account_status("runway-a", AccountStatus.KEY_REJECTED, clock.now())
    taken = claim(store, clock, "luma-a")
    assert taken is not None and taken.job.provider == "luma"
    assert taken.job.params == {"duration": 5, "seed": 99}
    (entry,) = handed(store)
    assert entry["params"] == {"duration": 5, "seed": 99}
