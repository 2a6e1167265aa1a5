"""Store contract for spend caps (docs/design-notes.md "Spend caps"): both stores."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from reelqueue.domain.clock import FakeClock
from reelqueue.domain.models import AccountSpec, BatchSpec, Claim, JobSpec
from reelqueue.domain.states import JobState
from reelqueue.store.base import ClaimParams, JobError, RecoverParams, Store
from reelqueue.store.memory import MemoryStore
from reelqueue.store.sqlite import SqliteStore
from tests.conftest import make_specs
from tests.store.test_contract import no_file

pytestmark = pytest.mark.unit

PRICE = 0.8


def priced(tmp_path: Path, count: int, price: float | None = PRICE, prefix: str = "key",
           **extra: Any) -> list[JobSpec]:
    specs = make_specs(tmp_path / prefix, count, **extra)
    return [type(s)(**{**s.__dict__, "job_key": f"{prefix}-{i}",
                       "metadata": {} if price is None else {"price": price}})
            for i, s in enumerate(specs)]


def setup(store: Store, tmp_path: Path, clock: FakeClock, *, jobs: int = 8,
          cap: float | None = 5 * PRICE, capacity: int = 20,
          price: float | None = PRICE) -> int:
    batch = store.create_batch(BatchSpec("b", "s.csv", str(tmp_path)), clock.now())
    store.add_jobs(batch.id, priced(tmp_path, jobs, price), clock.now())
    if cap is not None:
        assert store.update_batch_settings(batch.id, {"max_spend": cap}, clock.now())
    store.add_account(AccountSpec("acct-a", "mock", capacity), clock.now())
    return batch.id


def claim(store: Store, clock: FakeClock, account: str = "acct-a",
          day_start: float = 0.0) -> Claim | None:
    return store.claim_next_job(ClaimParams(account, "inst", clock.now(), 60.0, day_start))


def submit(store: Store, clock: FakeClock, c: Claim) -> None:
    assert store.mark_submitting(c.token, "ct-" + c.token.token, clock.now())
    assert store.record_submitted(c.token, f"pj-{c.job.id}", clock.now())


def spend_entries(store: Store) -> list[float]:
    return [float(e.detail["usd"]) for e in store.ledger() if e.event == "spend"]


def test_five_claims_that_submit_pass_a_cap_of_five_prices_and_the_sixth_waits(
    store: Store, tmp_path: Path, clock: FakeClock,
) -> None:
    batch_id = setup(store, tmp_path, clock)
    for _ in range(5):
        c = claim(store, clock)
        assert c is not None
        submit(store, clock, c)
    assert claim(store, clock) is None, "a sixth render would pass the cap"
    assert spend_entries(store) == [PRICE] * 5
    states = [j.state for j in store.list_jobs()]
    assert states.count(JobState.QUEUED) == 3 and JobState.FAILED not in states
    summary = store.spend_summary(clock.now(), 0.0)
    (batch,) = summary.batches
    assert (batch.batch_id, batch.cap, batch.waiting) == (batch_id, 5 * PRICE, 3)
    assert batch.spent == pytest.approx(5 * PRICE) and batch.reached


def test_claimed_jobs_reserve_their_price(store: Store, tmp_path: Path, clock: FakeClock) -> None:
    setup(store, tmp_path, clock)
    claims = [claim(store, clock) for _ in range(5)]
    assert all(claims), "five claims fit (reserved, not yet spent)"
    assert claim(store, clock) is None, "the reserved prices count against the cap"
    assert spend_entries(store) == []
    summary = store.spend_summary(clock.now(), 0.0)
    assert summary.batches[0].reserved == pytest.approx(5 * PRICE)


def test_a_resume_costs_nothing_more(store: Store, tmp_path: Path, clock: FakeClock) -> None:
    setup(store, tmp_path, clock)
    held = []
    for _ in range(5):
        c = claim(store, clock)
        assert c is not None
        submit(store, clock, c)
        held.append(c)
    # the process stops: a render in flight goes back keeping its render
    first = held[0]
    assert store.release_to_queue(first.token, _err(), clock.now(), keep_submission=True)
    again = claim(store, clock)
    assert again is not None and again.job.id == first.job.id and again.resumed
    assert claim(store, clock) is None
    assert spend_entries(store) == [PRICE] * 5


def test_unknown_price_is_refused_under_a_cap_only(
    store: Store, tmp_path: Path, clock: FakeClock,
) -> None:
    batch_id = setup(store, tmp_path, clock, jobs=2, price=None, cap=100.0)
    assert claim(store, clock) is None, "price unknown under a cap"
    assert store.spend_summary(clock.now(), 0.0).batches[0].waiting == 2
    store.update_batch_settings(batch_id, {"max_spend": None}, clock.now())
    assert claim(store, clock) is not None, "no cap: a job without a price runs"
    assert all(j.state is not JobState.FAILED for j in store.list_jobs())


def test_raising_the_cap_releases_the_waiting_jobs(
    store: Store, tmp_path: Path, clock: FakeClock,
) -> None:
    batch_id = setup(store, tmp_path, clock)
    for _ in range(5):
        c = claim(store, clock)
        assert c is not None
        submit(store, clock, c)
    assert claim(store, clock) is None
    store.update_batch_settings(batch_id, {"max_spend": 6 * PRICE}, clock.now())
    assert claim(store, clock) is not None
    assert claim(store, clock) is None
    store.update_batch_settings(batch_id, {"max_spend": None}, clock.now())
    assert [claim(store, clock) is not None for _ in range(2)] == [True, True]


def test_a_capped_batch_does_not_hold_up_other_batches(
    store: Store, tmp_path: Path, clock: FakeClock,
) -> None:
    setup(store, tmp_path, clock, cap=0.0)
    other = store.create_batch(BatchSpec("o", "o.csv", str(tmp_path)), clock.now())
    store.add_jobs(other.id, priced(tmp_path, 2, prefix="other"), clock.now())
    got = [claim(store, clock) for _ in range(3)]
    assert [c.job.batch_id if c else None for c in got] == [other.id, other.id, None]


def test_many_capped_batches_do_not_hold_up_a_later_batch(
    store: Store, tmp_path: Path, clock: FakeClock,
) -> None:
    # Older batches come first in the claim order; every one of them is at its cap. The
    # claim steps over each refused batch (however many) to the batch that may still spend.
    for n in range(7):
        capped = store.create_batch(BatchSpec(f"c{n}", f"c{n}.csv", str(tmp_path)),
                                    clock.now())
        store.add_jobs(capped.id, priced(tmp_path, 2, prefix=f"capped{n}"), clock.now())
        assert store.update_batch_settings(capped.id, {"max_spend": 0.0}, clock.now())
    free = store.create_batch(BatchSpec("f", "f.csv", str(tmp_path)), clock.now())
    store.add_jobs(free.id, priced(tmp_path, 1, prefix="free"), clock.now())
    store.add_account(AccountSpec("acct-a", "mock", 20), clock.now())
    got = claim(store, clock)
    assert got is not None and got.job.batch_id == free.id
    assert claim(store, clock) is None


def test_an_account_daily_cap_counts_from_day_start(
    store: Store, tmp_path: Path, clock: FakeClock,
) -> None:
    setup(store, tmp_path, clock, cap=None)
    store.update_account("acct-a", clock.now(), settings={"daily_cap": 2 * PRICE})
    day = clock.now()
    for _ in range(2):
        c = claim(store, clock, day_start=day)
        assert c is not None
        submit(store, clock, c)
    assert claim(store, clock, day_start=day) is None, "today's cap is reached"
    (acct,) = store.spend_summary(clock.now(), day).accounts
    assert acct.spent_today == pytest.approx(2 * PRICE) and acct.cap == 2 * PRICE
    assert acct.waiting == 6 and acct.reached
    clock.advance(86_400)
    tomorrow = day + 86_400
    assert claim(store, clock, day_start=tomorrow) is not None, "a new day, a new cap"
    store.update_account("acct-a", clock.now(), settings={"daily_cap": None})
    assert store.get_account("acct-a").settings.get("daily_cap") is None  # type: ignore[union-attr]


def test_an_account_over_its_cap_still_reads_renders_it_holds(
    store: Store, tmp_path: Path, clock: FakeClock,
) -> None:
    setup(store, tmp_path, clock, cap=None)
    c = claim(store, clock)
    assert c is not None
    submit(store, clock, c)
    assert store.release_to_queue(c.token, _err(), clock.now(), keep_submission=True)
    store.update_account("acct-a", clock.now(), settings={"daily_cap": PRICE})
    again = claim(store, clock)
    assert again is not None and again.job.id == c.job.id and again.resumed
    assert claim(store, clock) is None


def test_reported_cost_corrects_the_spend(store: Store, tmp_path: Path, clock: FakeClock) -> None:
    setup(store, tmp_path, clock)
    c = claim(store, clock)
    assert c is not None
    submit(store, clock, c)
    assert store.mark_downloading(c.token, clock.now())
    assert store.mark_completed(c.token, size=1, sha256="ab" * 32, cost=1.0, now=clock.now())
    assert sum(spend_entries(store)) == pytest.approx(1.0)
    assert store.spend_summary(clock.now(), 0.0).batches[0].spent == pytest.approx(1.0)


def test_pruning_keeps_spend(store: Store, tmp_path: Path, clock: FakeClock) -> None:
    setup(store, tmp_path, clock)
    c = claim(store, clock)
    assert c is not None
    submit(store, clock, c)
    clock.advance(90 * 86_400)
    store.recover(RecoverParams("inst-2", clock.now(), 60.0, only_expired=False,
                                check_output=lambda job: _no_file(),
                                prune_before=clock.now() - 86_400))
    assert spend_entries(store) == [PRICE]
    assert all(e.event == "spend" or e.at >= clock.now() - 86_400 for e in store.ledger())


def test_two_connections_claiming_alternately_never_pass_the_cap(
    tmp_path: Path, clock: FakeClock,
) -> None:
    path = tmp_path / "journal.sqlite3"
    one = SqliteStore.open(path, now=clock.now())
    two = SqliteStore.open(path, now=clock.now())
    try:
        setup(one, tmp_path, clock, jobs=12, cap=5 * PRICE)
        got: list[Claim] = []
        for i in range(12):
            store = one if i % 2 == 0 else two
            c = claim(store, clock)
            if c is not None:
                got.append(c)
                if i % 3 == 0:  # some move to spent, others stay reserved
                    submit(store, clock, c)
        assert len(got) == 5
        assert len({c.job.id for c in got}) == 5
    finally:
        one.close()
        two.close()


def test_memory_store_matches_on_the_same_calls(tmp_path: Path, clock: FakeClock) -> None:
    store = MemoryStore()
    setup(store, tmp_path, clock, jobs=3, cap=PRICE)
    assert claim(store, clock) is not None and claim(store, clock) is None


def test_an_unresolved_submission_looked_up_again_is_spent_once(
    store: Store, tmp_path: Path, clock: FakeClock,
) -> None:
    from reelqueue.store.base import JobError

    setup(store, tmp_path, clock, cap=2 * PRICE)
    first = claim(store, clock)
    assert first is not None
    assert store.mark_submitting(first.token, "ct-once", clock.now())
    # The create's outcome is unknown and the lookup met account trouble: the job goes back
    # keeping its client token; its next claim re-enters SUBMITTING with the same intent
    # to ask for it (engine/render.py), which sends no create.
    assert store.release_to_queue(first.token, JobError("account", "rate_limited", "429"),
                                  clock.now(), keep_submission=True)
    again = claim(store, clock)
    assert again is not None and again.job.id == first.job.id
    assert again.job.client_token == "ct-once"
    assert store.mark_submitting(again.token, "ct-once", clock.now())
    assert spend_entries(store) == [PRICE], "one intent, one spend"
    other = claim(store, clock)
    assert other is not None and other.job.id != first.job.id, (
        "the cap of two prices still has room for a second render")
    assert store.mark_submitting(other.token, "ct-other", clock.now())
    assert spend_entries(store) == [PRICE, PRICE]
    assert claim(store, clock) is None


def _err():  # type: ignore[no-untyped-def]
    from reelqueue.store.base import JobError
    return JobError("retryable", "stopped", "stopped")


def _no_file():  # type: ignore[no-untyped-def]
    from reelqueue.domain.models import FileCheck
    return FileCheck(exists=False)


def test_to_go_sums_the_waiting_jobs_stored_prices_per_provider_and_pinned_account(
    store: Store, tmp_path: Path, clock: FakeClock,
) -> None:
    """Issue 23: "est. $X to go" is one aggregate over the job rows (every store alike).
    Waiting = queued or retry wait with no create sent; a price that is not a number is
    no price; a claimed, submitted or parked job is not counted."""
    assert store.to_go() == ()
    batch = store.create_batch(BatchSpec("b", "s.csv", str(tmp_path)), clock.now())
    specs = (priced(tmp_path, 3, 0.5, prefix="open")
             + priced(tmp_path, 1, None, prefix="free")
             + priced(tmp_path, 1, PRICE, prefix="pin", pinned_account="acct-b")
             + [type(s)(**{**s.__dict__, "metadata": {"price": bad}})
                for s, bad in zip(priced(tmp_path, 2, None, prefix="odd"), ("0.5", True),
                                  strict=True)]
             + priced(tmp_path, 2, 0.25, prefix="other", provider="runway"))
    store.add_jobs(batch.id, specs, clock.now())
    store.add_account(AccountSpec("acct-a", "mock", 5), clock.now())
    store.add_account(AccountSpec("acct-b", "mock", 1), clock.now())
    groups = {(t.provider, t.account): t for t in store.to_go()}
    assert [(t.provider, t.account) for t in store.to_go()] == [
        ("mock", None), ("mock", "acct-b"), ("runway", None)]
    mock = groups[("mock", None)]
    assert (mock.usd, mock.priced, mock.unpriced) == (pytest.approx(1.5), 3, 3)
    assert mock.describe() == "est. $1.50 to go, 3 without a price"
    pinned = groups[("mock", "acct-b")]
    assert (pinned.usd, pinned.priced, pinned.unpriced) == (pytest.approx(PRICE), 1, 0)
    assert pinned.describe() == "est. $0.80 to go"
    assert groups[("runway", None)].usd == pytest.approx(0.5)

    before = store.to_go()
    c = claim(store, clock)  # claimed: reserved, no longer "to go"
    assert c is not None and c.job.pinned_account is None
    claimed_price = (c.job.metadata or {}).get("price")
    after = {(t.provider, t.account): t for t in store.to_go()}[("mock", None)]
    assert after.priced + after.unpriced == mock.priced + mock.unpriced - 1
    if isinstance(claimed_price, float):
        assert after.usd == pytest.approx(mock.usd - claimed_price)
    submit(store, clock, c)  # its price is in the spend entries now: never twice
    assert store.to_go() != before
    assert sum(t.priced + t.unpriced for t in store.to_go()) == len(specs) - 1


def test_a_render_of_the_built_in_mock_lost_with_the_process_is_not_charged(
    store: Store, tmp_path: Path, clock: FakeClock,
) -> None:
    """Recovery says of a lost mock render "rendered again, nothing was charged"; the spend
    said otherwise, and counted the price again when the job rendered a second time (the
    crash-recovered window: "no charge" beside cards whose spend held every lost render)."""
    batch_id = setup(store, tmp_path, clock, jobs=2, cap=10 * PRICE)
    store.update_account("acct-a", clock.now(), settings={"daily_cap": 10 * PRICE})
    for _ in range(2):
        c = claim(store, clock)
        assert c is not None
        submit(store, clock, c)
    report = store.recover(RecoverParams("new", clock.now(), 60, False, no_file,
                                         lost_render_accounts=frozenset({"acct-a"})))
    assert len(report.lost_renders) == 2
    summary = store.spend_summary(clock.now(), 0.0)
    assert summary.batches[0].batch_id == batch_id
    assert summary.batches[0].spent == pytest.approx(0.0)
    assert summary.accounts[0].spent_today == pytest.approx(0.0)
    assert sorted(spend_entries(store)) == pytest.approx([-PRICE, -PRICE, PRICE, PRICE])
    c = claim(store, clock)
    assert c is not None and c.job.id in report.lost_renders
    submit(store, clock, c)  # rendered again: charged once
    assert store.spend_summary(clock.now(), 0.0).batches[0].spent == pytest.approx(PRICE)


def test_a_removed_account_s_spend_stays_counted_and_its_parked_job_listed(
    store: Store, tmp_path: Path, clock: FakeClock,
) -> None:
    """Issue 34 (N6-N13 b): an account holding only a parked render (no slot taken) can be
    removed; its render may be billed, yet its spend left every total with it."""
    setup(store, tmp_path, clock, jobs=2, cap=None)
    c = claim(store, clock)
    assert c is not None
    submit(store, clock, c)
    assert store.park_job(c.token, JobError("retryable", "parked", "resume crashed"),
                          clock.now())
    store.remove_account("acct-a", clock.now())
    assert [a.name for a in store.list_accounts()] == []
    for day_start in (0.0, clock.now() - 60):
        (gone,) = store.spend_summary(clock.now(), day_start).accounts
        assert (gone.account, gone.removed, gone.cap, gone.waiting) == ("acct-a", True, None, 0)
        assert gone.spent_today == pytest.approx(PRICE)
    parked = [j for j in store.list_jobs() if j.state == JobState.PARKED]
    assert [j.account for j in parked] == ["acct-a"]
    # Added again under the same name, it is that account again, not listed twice.
    store.add_account(AccountSpec("acct-a", "mock", 2), clock.now())
    (back,) = store.spend_summary(clock.now(), 0.0).accounts
    assert not back.removed and back.spent_today == pytest.approx(PRICE)


def test_a_withdrawn_create_gives_its_price_back_and_an_absent_one_keeps_it(
    store: Store, tmp_path: Path, clock: FakeClock,
) -> None:
    """An orderly stop withdrew the intent before its create was sent: its price is given
    back with the forgetting, so the create this claim sends counts once and a cap of
    exactly the batch's prices lets every job through. A create reconciliation proved
    absent keeps its spend (money fails closed: the proof is the provider's records after a
    settle time), so under that exact cap the last job waits."""
    setup(store, tmp_path, clock, jobs=2, cap=2 * PRICE)
    first = claim(store, clock)
    assert first is not None
    assert store.mark_submitting(first.token, "ct-1", clock.now())
    assert store.forget_submission(first.token, clock.now(), {"why": "stop"},
                                   event="intent_withdrawn")
    assert spend_entries(store) == [PRICE, -PRICE]
    given_back = [e for e in store.ledger() if e.event == "spend"][-1]
    assert given_back.detail["refund"] is True and given_back.job_id == first.job.id
    assert store.mark_submitting(first.token, "ct-2", clock.now())
    assert store.record_submitted(first.token, "pj-1", clock.now())
    second = claim(store, clock)
    assert second is not None, "the price given back leaves room for the second job"
    assert store.mark_submitting(second.token, "ct-3", clock.now())
    assert spend_entries(store) == [PRICE, -PRICE, PRICE, PRICE]
    # Proven absent: the spend stays, and the create sent again counts once more.
    assert store.forget_submission(second.token, clock.now(), {"why": "absent"},
                                   event="reconciled_absent")
    assert spend_entries(store) == [PRICE, -PRICE, PRICE, PRICE]
