"""Store contract (SQLite, memory, PostgreSQL) for "never run an account dry" (issue 32
item 4): the claim subtracts from the account's published balance, in its own
transaction, the renders the balance cannot include yet, and starts no create the rest
cannot pay for."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from reelqueue.domain.account_view import AccountView, Balance, Charging
from reelqueue.domain.clock import FakeClock
from reelqueue.domain.models import AccountSpec, BatchSpec, Claim, JobSpec
from reelqueue.domain.routes import Candidate, Route, RoutePolicy
from reelqueue.domain.states import JobState
from reelqueue.store.base import ClaimParams, Store
from reelqueue.store.provider_limits import VIEW_FRESH_SECONDS
from reelqueue.store.sqlite import SqliteStore

pytestmark = pytest.mark.unit

PRICE = 0.6  # USD: 60 credits at $0.01
CREATE = Charging("create", "credits", 0.01)
UNKNOWN = Charging("unknown", "credits", 0.01)


def jobs(tmp_path: Path, count: int, prefix: str, price: float | None = PRICE
         ) -> list[JobSpec]:
    return [JobSpec(job_key=f"{prefix}-{i}", prompt=f"p {i}", provider="runway",
                    output_path=str(tmp_path / "out" / f"{prefix}-{i}.mp4"),
                    params={"model": "gen4.5"},
                    metadata={} if price is None else {"price": price})
            for i in range(count)]


def setup(store: Store, tmp_path: Path, clock: FakeClock, *, count: int = 10,
          price: float | None = PRICE, capacity: int = 20) -> int:
    batch = store.create_batch(BatchSpec("b", "s.csv", str(tmp_path)), clock.now())
    store.add_jobs(batch.id, jobs(tmp_path, count, "b", price), clock.now())
    store.add_account(AccountSpec("acct-a", "runway", capacity), clock.now())
    return batch.id


def balance(store: Store, clock: FakeClock, amount: float, unit: str = "credits",
            read_at: float | None = None) -> None:
    assert store.put_account_view(AccountView(
        "acct-a", Balance(amount, unit), (), None,
        clock.now() if read_at is None else read_at, "reader"))


def claim(store: Store, clock: FakeClock, charging: Charging | None = CREATE
          ) -> Claim | None:
    extra = {} if charging is None else {"charging": {"runway": charging}}
    return store.claim_next_job(ClaimParams("acct-a", "inst", clock.now(), 600.0, 0.0,
                                            **extra))


def claims(store: Store, clock: FakeClock, charging: Charging | None = CREATE,
           most: int = 30) -> list[Claim]:
    got: list[Claim] = []
    for _ in range(most):
        c = claim(store, clock, charging)
        if c is None:
            break
        got.append(c)
    return got


def submit(store: Store, clock: FakeClock, c: Claim) -> None:
    assert store.mark_submitting(c.token, "ct-" + c.token.token, clock.now())
    assert store.record_submitted(c.token, f"pj-{c.job.id}", clock.now())


def finish(store: Store, clock: FakeClock, c: Claim) -> None:
    assert store.mark_downloading(c.token, clock.now())
    assert store.mark_completed(c.token, size=10, sha256="ab" * 32, cost=None,
                                now=clock.now())


def test_a_batch_costing_twice_the_balance_starts_exactly_what_it_pays_for(
    store: Store, tmp_path: Path, clock: FakeClock,
) -> None:
    setup(store, tmp_path, clock, count=10)
    balance(store, clock, 300.0)
    clock.advance(1)
    first = claims(store, clock)
    assert len(first) == 5, "floor(300 / 60)"
    for c in first:  # sent, finished: still not in the balance read before them
        submit(store, clock, c)
        finish(store, clock, c)
    assert claims(store, clock) == []
    states = [j.state for j in store.list_jobs()]
    assert states.count(JobState.QUEUED) == 5 and JobState.FAILED not in states
    left = store.balance_left("acct-a", clock.now(), CREATE)
    assert left is not None and left.amount == 300.0 and left.unit == "credits"
    assert left.left == pytest.approx(0.0)


def test_a_balance_that_goes_up_resumes_the_account(
    store: Store, tmp_path: Path, clock: FakeClock,
) -> None:
    setup(store, tmp_path, clock, count=10)
    balance(store, clock, 100.0)
    clock.advance(1)
    (one,) = claims(store, clock)
    submit(store, clock, one)
    clock.advance(60)
    balance(store, clock, 40.0)  # the provider took the 60
    assert claims(store, clock) == []
    left = store.balance_left("acct-a", clock.now(), CREATE)
    assert left is not None and left.left == pytest.approx(40.0)
    clock.advance(60)
    balance(store, clock, 160.0)  # a top-up
    assert len(claims(store, clock)) == 2


def test_finish_or_unknown_subtracts_every_render_in_flight(
    store: Store, tmp_path: Path, clock: FakeClock,
) -> None:
    setup(store, tmp_path, clock, count=10)
    before = claims(store, clock, most=2)
    for c in before:
        submit(store, clock, c)
    clock.advance(1)
    balance(store, clock, 180.0)  # read after both were created: maybe not charged yet
    clock.advance(1)
    assert len(claims(store, clock, UNKNOWN)) == 1, "180 - 2 x 60 in flight = 60"
    assert len(claims(store, clock, CREATE)) == 2, (
        "charged at create: the two sent before the read are in it; 180 - 60 claimed since")


def test_a_job_without_a_price_does_not_start_where_the_balance_is_known(
    store: Store, tmp_path: Path, clock: FakeClock,
) -> None:
    batch_id = setup(store, tmp_path, clock, count=2, price=None)
    other = store.create_batch(BatchSpec("c", "s.csv", str(tmp_path)), clock.now())
    store.add_jobs(other.id, jobs(tmp_path, 2, "c"), clock.now())
    balance(store, clock, 1000.0)
    got = claims(store, clock)
    assert [c.job.batch_id for c in got] == [other.id, other.id]
    assert {j.state for j in store.list_jobs(batch_id)} == {JobState.QUEUED}
    assert len(claims(store, clock, None)) == 2, "no charging declared: the balance is shown"


def test_a_unit_that_cannot_be_converted_or_a_stale_balance_gates_nothing(
    store: Store, tmp_path: Path, clock: FakeClock,
) -> None:
    setup(store, tmp_path, clock, count=6)
    balance(store, clock, 1.0, unit="USD")
    assert len(claims(store, clock, most=2)) == 2, "credits are not USD"
    clock.advance(1)
    balance(store, clock, 0.0)
    assert claims(store, clock) == []
    clock.advance(VIEW_FRESH_SECONDS + 1)
    assert len(claims(store, clock)) == 4, "a balance 15 min old gates nothing"


def test_two_processes_on_one_journal_start_exactly_what_the_balance_pays_for(
    tmp_path: Path, clock: FakeClock,
) -> None:
    path = tmp_path / "journal.sqlite3"
    one = SqliteStore.open(path, now=clock.now())
    two = SqliteStore.open(path, now=clock.now())
    try:
        setup(one, tmp_path, clock, count=12)
        balance(one, clock, 300.0)
        got: list[Claim] = []
        lock = threading.Lock()

        def run(store: SqliteStore) -> None:
            for _ in range(12):
                c = claim(store, clock)
                if c is not None:
                    submit(store, clock, c)
                    with lock:
                        got.append(c)

        threads = [threading.Thread(target=run, args=(s,)) for s in (one, two)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert len(got) == 5
    finally:
        one.close()
        two.close()


def test_a_routed_job_the_balance_cannot_pay_for_is_handed_to_the_next_candidate(
    store: Store, tmp_path: Path, clock: FakeClock,
) -> None:
    route = Route(RoutePolicy.ORDER, (Candidate("runway", {"duration": 5}, PRICE),
                                      Candidate("veo", {"duration": 5}, 0.5)))
    batch = store.create_batch(BatchSpec("b", "s.csv", str(tmp_path)), clock.now())
    store.add_jobs(batch.id, [
        JobSpec(f"r-{i}", "p", "runway", str(tmp_path / f"r-{i}.mp4"),
                params={"duration": 5}, metadata={"price": PRICE}, route=route)
        for i in range(3)], clock.now())
    store.add_account(AccountSpec("acct-a", "runway", 5), clock.now())
    store.add_account(AccountSpec("acct-v", "veo", 5), clock.now())
    balance(store, clock, 60.0)
    params = {"charging": {"runway": CREATE}}
    assert store.claim_next_job(ClaimParams("acct-a", "i", clock.now(), 600.0, 0.0,
                                            **params)) is not None
    assert store.claim_next_job(ClaimParams("acct-a", "i", clock.now(), 600.0, 0.0,
                                            **params)) is None
    moved = [store.claim_next_job(ClaimParams("acct-v", "i", clock.now(), 600.0, 0.0,
                                              **params)) for _ in range(3)]
    assert [c is not None for c in moved] == [True, True, False]
    assert [e.account for e in store.ledger() if e.event == "handed_over"] == ["acct-v"] * 2
