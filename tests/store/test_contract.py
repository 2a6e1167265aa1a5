"""The store contract: every test here runs against SqliteStore and PostgresStore (the
memory store is SqliteStore on an in-memory database: issue 36 item 4)."""

from __future__ import annotations

from pathlib import Path

import pytest

from reelqueue.domain.clock import FakeClock
from reelqueue.domain.errors import InputError
from reelqueue.domain.models import AccountSpec, BatchSpec, FileCheck, Job, JobSpec
from reelqueue.domain.states import AccountStatus, JobState
from reelqueue.store.base import ClaimParams, JobError, RecoverParams, Store
from tests.conftest import make_specs, seed_store

pytestmark = pytest.mark.unit

ERR = JobError("retryable", "provider error", "boom")


def claim(store: Store, clock: FakeClock, account: str = "acct-a", owner: str = "inst-1",
          lease: float = 60.0):  # type: ignore[no-untyped-def]
    return store.claim_next_job(ClaimParams(account, owner, clock.now(), lease))


def no_file(job: Job) -> FileCheck:
    return FileCheck(exists=False)


def run_to_completion(store: Store, clock: FakeClock, c) -> None:  # type: ignore[no-untyped-def]
    assert store.mark_submitting(c.token, "ct-" + c.token.token, clock.now())
    assert store.record_submitted(c.token, "pj-" + str(c.job.id), clock.now())
    assert store.mark_downloading(c.token, clock.now())
    assert store.mark_completed(c.token, size=10, sha256="ab" * 32, cost=0.5, now=clock.now())


def test_import_is_idempotent_on_job_key(store: Store, tmp_path: Path, clock: FakeClock) -> None:
    batch = store.create_batch(BatchSpec("b", "s.csv", str(tmp_path)), clock.now())
    first = store.add_jobs(batch.id, make_specs(tmp_path, 3), clock.now())
    again = store.add_jobs(batch.id, make_specs(tmp_path, 4), clock.now())
    assert (first.added, first.already_present) == (3, 0)
    assert (again.added, again.already_present) == (1, 3)
    assert len(store.list_jobs()) == 4
    assert store.existing_job_keys(["key-00000", "nope"]) == {"key-00000"}


def test_backpressure_refuses_whole_import(store: Store, tmp_path: Path, clock: FakeClock) -> None:
    batch = store.create_batch(BatchSpec("b", "s.csv", str(tmp_path)), clock.now())
    store.add_jobs(batch.id, make_specs(tmp_path, 3), clock.now(), max_waiting=5)
    with pytest.raises(InputError, match="only 2 of these 4 new jobs fit"):
        store.add_jobs(batch.id, make_specs(tmp_path, 7), clock.now(), max_waiting=5)
    assert len(store.list_jobs()) == 3


def test_claim_respects_capacity_and_counts_attempts(
    store: Store, tmp_path: Path, clock: FakeClock
) -> None:
    seed_store(store, tmp_path, clock.now(), jobs=5, accounts={"acct-a": 2})
    first, second = claim(store, clock), claim(store, clock)
    assert first and second and first.job.id != second.job.id
    assert claim(store, clock) is None, "a third claim would exceed the limit of 2"
    assert first.job.attempts == 1 and first.job.state == JobState.CLAIMED
    assert store.live_count("acct-a") == 2
    run_to_completion(store, clock, first)
    assert store.live_count("acct-a") == 1
    third = claim(store, clock)
    assert third is not None and third.job.id not in (first.job.id, second.job.id)


def test_claim_goes_to_provider_and_pinned_account(
    store: Store, tmp_path: Path, clock: FakeClock
) -> None:
    batch = store.create_batch(BatchSpec("b", "s.csv", str(tmp_path)), clock.now())
    specs = make_specs(tmp_path, 2)
    pinned = make_specs(tmp_path / "p", 1, pinned_account="acct-b")
    pinned = [type(s)(**{**s.__dict__, "job_key": "pinned"}) for s in pinned]
    other = [type(s)(**{**s.__dict__, "job_key": "other", "provider": "runway"})
             for s in make_specs(tmp_path / "o", 1)]
    store.add_jobs(batch.id, pinned + specs + other, clock.now())
    store.add_account(AccountSpec("acct-a", "mock", 5), clock.now())
    store.add_account(AccountSpec("acct-b", "mock", 5), clock.now())
    taken_by_a = []
    while (c := claim(store, clock, "acct-a")) is not None:
        taken_by_a.append(c.job.job_key)
    assert sorted(taken_by_a) == ["key-00000", "key-00001"]
    c = claim(store, clock, "acct-b")
    assert c is not None and c.job.job_key == "pinned"
    assert claim(store, clock, "acct-b") is None, "the runway job never goes to a mock account"


def test_ineligible_accounts_get_nothing(store: Store, tmp_path: Path, clock: FakeClock) -> None:
    seed_store(store, tmp_path, clock.now(), jobs=3, accounts={"acct-a": 2})
    store.update_account("acct-a", clock.now(), enabled=False)
    assert claim(store, clock) is None
    store.update_account("acct-a", clock.now(), enabled=True)
    store.set_account_status("acct-a", AccountStatus.KEY_REJECTED, clock.now())
    assert claim(store, clock) is None
    store.set_account_status("acct-a", AccountStatus.RATE_LIMITED, clock.now(),
                             cooldown_until=clock.now() + 30)
    assert claim(store, clock) is None
    assert store.next_wakeup(clock.now()) == clock.now() + 30
    clock.advance(31)
    assert claim(store, clock) is not None


def test_fencing_refuses_a_stale_claim_and_logs_it(
    store: Store, tmp_path: Path, clock: FakeClock
) -> None:
    seed_store(store, tmp_path, clock.now(), jobs=1)
    stale = claim(store, clock, owner="slow", lease=10)
    assert stale is not None
    assert store.mark_submitting(stale.token, "ct-1", clock.now())
    assert store.record_submitted(stale.token, "pj-1", clock.now())
    clock.advance(11)
    report = store.recover(RecoverParams("fast", clock.now(), 60, True, no_file))
    assert report.reattached == [stale.job.id]
    fresh = store.get_job(stale.job.id)
    assert fresh is not None and fresh.claim_token != stale.token.token
    assert fresh.lease_owner == "fast" and fresh.attempts == 1, "reattach spends no attempt"
    assert not store.mark_downloading(stale.token, clock.now())
    assert not store.mark_completed(stale.token, size=1, sha256="x", cost=None, now=clock.now())
    events = [e.event for e in store.ledger(stale.job.id)]
    assert events.count("fenced_out") == 2
    assert events.count("completed") == 0


def test_heartbeat_renews_all_leases_of_an_instance(
    store: Store, tmp_path: Path, clock: FakeClock
) -> None:
    seed_store(store, tmp_path, clock.now(), jobs=4, accounts={"acct-a": 3})
    mine = [claim(store, clock, owner="me", lease=10) for _ in range(2)]
    other = claim(store, clock, owner="other", lease=10)
    assert all(mine) and other
    clock.advance(5)
    assert store.renew_leases("me", clock.now(), 10) == 2
    clock.advance(7)  # mine last until t+15, other's until t+10: only other's expired
    report = store.recover(RecoverParams("me", clock.now(), 10, True, no_file))
    assert report.requeued == [other.job.id]


def test_heartbeat_with_tokens_renews_only_those_claims(
    store: Store, tmp_path: Path, clock: FakeClock
) -> None:
    """The engine names the claims it runs: a claim of the instance it never learned of
    (its answer lost) is not renewed, runs out and is taken over (issue 15)."""
    seed_store(store, tmp_path, clock.now(), jobs=4, accounts={"acct-a": 3})
    known, unknown = (claim(store, clock, owner="me", lease=10) for _ in range(2))
    assert known and unknown
    clock.advance(5)
    assert store.renew_leases("me", clock.now(), 10, tokens=[known.token.token]) == 1
    assert store.renew_leases("me", clock.now(), 10, tokens=[]) == 0
    clock.advance(7)  # known lasts until t+15, unknown's ran out at t+10
    report = store.recover(RecoverParams("other", clock.now(), 10, True, no_file))
    assert report.requeued == [unknown.job.id]
    assert store.mark_submitting(known.token, "ct", clock.now())


def test_retry_wait_then_reclaim_after_run_after(
    store: Store, tmp_path: Path, clock: FakeClock
) -> None:
    seed_store(store, tmp_path, clock.now(), jobs=1)
    c = claim(store, clock)
    assert c and store.set_retry_wait(c.token, ERR, clock.now() + 20, clock.now(),
                                      keep_provider_job=False)
    job = store.get_job(c.job.id)
    assert job and job.state == JobState.RETRY_WAIT and job.account is None
    assert job.error_label == "provider error"
    assert claim(store, clock) is None
    assert store.next_wakeup(clock.now()) == clock.now() + 20
    clock.advance(21)
    again = claim(store, clock)
    assert again and again.job.attempts == 2


def test_retry_that_keeps_the_render_resumes_on_the_same_account(
    store: Store, tmp_path: Path, clock: FakeClock
) -> None:
    seed_store(store, tmp_path, clock.now(), jobs=1, accounts={"acct-a": 1, "acct-b": 1})
    c = claim(store, clock, "acct-a")
    assert c and store.mark_submitting(c.token, "ct", clock.now())
    assert store.record_submitted(c.token, "pj", clock.now())
    assert store.mark_downloading(c.token, clock.now())
    assert store.set_retry_wait(c.token, ERR, clock.now(), clock.now(), keep_provider_job=True)
    assert claim(store, clock, "acct-b") is None, "the finished render belongs to acct-a"
    again = claim(store, clock, "acct-a")
    assert again and again.resumed and again.job.provider_job_id == "pj"
    assert not store.mark_submitting(again.token, "ct2", clock.now()), "never submitted again"
    assert store.mark_rendering(again.token, clock.now())


def test_release_to_queue_spends_no_attempt(store: Store, tmp_path: Path, clock: FakeClock) -> None:
    seed_store(store, tmp_path, clock.now(), jobs=1)
    c = claim(store, clock)
    assert c and c.job.attempts == 1
    assert store.release_to_queue(c.token, JobError("account", "rate limited", "429"),
                                  clock.now())
    job = store.get_job(c.job.id)
    assert job and job.state == JobState.QUEUED and job.attempts == 0


def test_mark_failed_and_user_requeue_with_new_seed(
    store: Store, tmp_path: Path, clock: FakeClock
) -> None:
    seed_store(store, tmp_path, clock.now(), jobs=1)
    c = claim(store, clock)
    assert c and store.mark_failed(c.token, JobError("permanent", "content policy", "no"),
                                   clock.now())
    job = store.get_job(c.job.id)
    assert job and job.state == JobState.FAILED and job.finished_at is not None
    assert store.requeue_jobs([c.job.id], clock.now(), new_seed=7) == [c.job.id]
    job = store.get_job(c.job.id)
    assert job and job.state == JobState.QUEUED and job.params["seed"] == 7
    assert job.attempts == 0 and job.finished_at is None


def test_cancel_fences_out_the_worker(store: Store, tmp_path: Path, clock: FakeClock) -> None:
    seed_store(store, tmp_path, clock.now(), jobs=2)
    c = claim(store, clock)
    assert c and store.cancel_jobs([c.job.id, 999], clock.now()) == [c.job.id]
    assert not store.mark_submitting(c.token, "ct", clock.now())
    job = store.get_job(c.job.id)
    assert job and job.state == JobState.CANCELLED
    assert store.cancel_jobs([c.job.id], clock.now()) == [], "cancelling twice changes nothing"


def test_completed_exactly_once(store: Store, tmp_path: Path, clock: FakeClock) -> None:
    seed_store(store, tmp_path, clock.now(), jobs=1)
    c = claim(store, clock)
    assert c is not None
    run_to_completion(store, clock, c)
    assert not store.mark_completed(c.token, size=1, sha256="y", cost=None, now=clock.now())
    checks = store.doctor_queries(instance_alive=False)
    assert not any(checks.values()), checks
    # Live claims: after the exit on one machine; by lease and heartbeat on a team's.
    assert set(checks) in ({"completed_twice", "over_capacity", "integrity", "json_values",
                            "live_claims_after_exit"},
                           {"completed_twice", "over_capacity", "integrity", "json_values",
                            "expired_leases_held", "claims_of_silent_instances"})


def test_recovery_sorts_every_leftover(store: Store, tmp_path: Path, clock: FakeClock) -> None:
    seed_store(store, tmp_path, clock.now(), jobs=6, accounts={"acct-a": 6})
    claims = [claim(store, clock) for _ in range(4)]
    assert all(claims)
    on_disk, rendering, in_window, just_claimed = claims  # type: ignore[misc]
    for c in (on_disk, rendering, in_window):
        assert store.mark_submitting(c.token, "ct-" + c.token.token, clock.now())
    for c in (on_disk, rendering):
        assert store.record_submitted(c.token, "pj-" + c.token.token, clock.now())
    assert store.mark_downloading(on_disk.token, clock.now())
    # The download recorded its file's hash before renaming it (issue 22): only that file
    # completes the job from disk.
    assert store.record_download(on_disk.token, size=10, sha256="cd" * 32, now=clock.now())

    def check(job: Job) -> FileCheck:
        if job.id == on_disk.job.id:
            return FileCheck(True, 10, "cd" * 32)
        return FileCheck(False)
    # acct-a's provider keeps our client token: the words name it (issue 19)
    report = store.recover(RecoverParams("new", clock.now(), 60, False, check,
                                         verify_completed=True,
                                         token_accounts=frozenset({"acct-a"})))
    assert report.completed_from_disk == [on_disk.job.id]
    assert report.reattached == [rendering.job.id]
    # Invariants 11 and 13: died while submitting, provider cannot be asked -> parked as an
    # unknown outcome with its client token (not a failure), never requeued to be created
    # again.
    assert report.unknown_submissions == [in_window.job.id]
    assert report.requeued == [just_claimed.job.id]
    job = store.get_job(on_disk.job.id)
    assert job and job.state == JobState.COMPLETED and job.output_sha256 == "cd" * 32
    unknown = store.get_job(in_window.job.id)
    assert unknown and unknown.state == JobState.PARKED and unknown.finished_at is None
    assert unknown.error_label == "submit outcome unknown"
    assert unknown.error_class == "unknown"
    assert unknown.claim_token is None and unknown.client_token == "ct-" + in_window.token.token
    assert "ct-" + in_window.token.token in (unknown.error_message or "")
    events = [e.event for e in store.ledger(in_window.job.id)]
    assert events[-2:] == ["submit_outcome_unknown", "parked"]
    assert "requeued" not in events
    claimed_after = []
    while (again := claim(store, clock)) is not None:
        claimed_after.append(again.job.id)
    assert sorted(claimed_after) == sorted([just_claimed.job.id, 5, 6]), claimed_after
    assert store.doctor_queries(instance_alive=True)["completed_twice"] == []
    assert "recovery" in [e.event for e in store.ledger()]


def test_recovery_reconciles_where_the_provider_can_be_asked(
    store: Store, tmp_path: Path, clock: FakeClock
) -> None:
    seed_store(store, tmp_path, clock.now(), jobs=1)
    c = claim(store, clock)
    assert c and store.mark_submitting(c.token, "ct-1", clock.now())
    report = store.recover(RecoverParams("new", clock.now(), 60, False, no_file,
                                         lookup_accounts=frozenset({"acct-a"})))
    assert report.reconcile == [c.job.id]
    job = store.get_job(c.job.id)
    assert job and job.state == JobState.SUBMITTING and job.lease_owner == "new"
    assert job.client_token == "ct-1"


def test_a_crash_spends_no_attempt_and_a_job_that_keeps_crashing_fails(
    store: Store, tmp_path: Path, clock: FakeClock
) -> None:
    """A claim that ends in a crash is ReelQueue's fault, not the provider's: recovery
    gives its attempt back; past ``max_crashes`` crashes in a row the job fails instead of
    looping (issue 19, 6). A retry wait in between starts the count again."""
    seed_store(store, tmp_path, clock.now(), jobs=1)
    c = claim(store, clock)
    assert c and store.set_retry_wait(c.token, ERR, clock.now(), clock.now(),
                                      keep_provider_job=False)
    for boot in range(3):
        c = claim(store, clock)
        assert c is not None and c.job.attempts == 2, "the crashes' attempts came back"
        report = store.recover(RecoverParams(f"boot{boot}", clock.now(), 60, False, no_file,
                                             max_crashes=2))
    assert report.failed == [c.job.id] and report.requeued == []
    job = store.get_job(c.job.id)
    assert job and job.state == JobState.FAILED and job.attempts == 2
    assert "died 3 times in a row" in (job.error_message or "")
    requeued = [e for e in store.ledger(c.job.id) if e.event == "requeued"]
    assert [e.detail.get("crash") for e in requeued] == [True, True]


def test_a_render_lost_with_the_process_is_rendered_again_without_an_attempt(
    store: Store, tmp_path: Path, clock: FakeClock
) -> None:
    seed_store(store, tmp_path, clock.now(), jobs=1, accounts={"acct-a": 1})
    c = claim(store, clock)
    assert c and store.mark_submitting(c.token, "ct", clock.now())
    assert store.record_submitted(c.token, "pj-lost", clock.now())
    report = store.recover(RecoverParams("new", clock.now(), 60, False, no_file,
                                         lost_render_accounts=frozenset({"acct-a"})))
    assert report.lost_renders == [c.job.id] and not report.reattached
    job = store.get_job(c.job.id)
    assert job and job.state == JobState.QUEUED and job.attempts == 0
    assert job.provider_job_id is None and job.client_token is None and job.account is None
    lost = next(e for e in store.ledger(c.job.id) if e.event == "render_lost")
    assert lost.detail["provider_job_id"] == "pj-lost" and "built-in mock" in lost.detail["why"]


def test_recovery_reports_completed_jobs_whose_file_is_gone(
    store: Store, tmp_path: Path, clock: FakeClock
) -> None:
    seed_store(store, tmp_path, clock.now(), jobs=1)
    c = claim(store, clock)
    assert c is not None
    run_to_completion(store, clock, c)
    report = store.recover(RecoverParams("new", clock.now(), 60, False, no_file,
                                         verify_completed=True))
    assert report.missing_outputs == [c.job.id]
    job = store.get_job(c.job.id)
    assert job and job.state == JobState.COMPLETED, "a missing file is reported, not re-rendered"


def test_ledger_pruned_by_age_at_recovery(store: Store, tmp_path: Path, clock: FakeClock) -> None:
    seed_store(store, tmp_path, clock.now(), jobs=1)
    old = len(store.ledger())
    clock.advance(100)
    store.note("marker", clock.now())
    report = store.recover(RecoverParams("new", clock.now(), 60, False, no_file,
                                         prune_before=clock.now() - 50))
    assert report.pruned_ledger_rows == old
    assert [e.event for e in store.ledger()] == ["marker", "recovery"]


def test_a_ledger_seq_is_never_given_twice_even_when_pruning_takes_every_old_entry(
        store: Store, tmp_path: Path, clock: FakeClock) -> None:
    """The API's event stream resumes after the last seq a client saw: a seq given again
    would never reach it. SQLite gives MAX(seq) + 1 (no AUTOINCREMENT, schema 12), so
    its pruning keeps the newest entry whatever its age (PostgreSQL's seq is a sequence)."""
    seed_store(store, tmp_path, clock.now(), jobs=2)
    store.note("newest", clock.now())
    seen = max(e.seq for e in store.ledger())
    clock.advance(100)
    report = store.recover(RecoverParams("new", clock.now(), 60, False, no_file,
                                         prune_before=clock.now()))
    assert report.pruned_ledger_rows > 0
    store.note("after", clock.now())
    entries = store.ledger()
    assert [e.event for e in entries][-2:] == ["recovery", "after"]
    assert entries[-2].seq > seen and entries[-1].seq > entries[-2].seq


@pytest.mark.parametrize("store", ["sqlite"], indirect=True)
def test_pruning_takes_every_old_entry_and_nothing_newer_with_a_clock_set_back(
        store: Store, clock: FakeClock) -> None:
    """SQLite finds the old entries by a binary search over seq (no index on every entry's
    time, schema 12): each old entry written before the first new one goes, no entry at or
    after the cut goes, even when a clock set back wrote an old time among new ones.
    (PostgreSQL stamps entries with the server's clock: these times cannot be written.)"""
    for n in range(300):
        store.note("old", float(n))
    for at in (2_000.0, 500.0, 2_001.0, 2_002.0):  # 500: a clock set back
        store.note("late", at)
    report = store.recover(RecoverParams("new", 3_000.0, 60, False, no_file,
                                         prune_before=1_000.0))
    assert report.pruned_ledger_rows >= 300
    left = store.ledger()
    assert "old" not in [e.event for e in left]
    assert [e.at for e in left if e.event == "late" and e.at >= 1_000] == [2_000, 2_001, 2_002]


def test_accounts_keep_their_order_and_refuse_duplicates(
    store: Store, clock: FakeClock
) -> None:
    for name in ("zeta", "alpha", "mid"):
        store.add_account(AccountSpec(name, "mock", 1, key_ref=f"account:{name}"), clock.now())
    assert [a.name for a in store.list_accounts()] == ["zeta", "alpha", "mid"]
    with pytest.raises(InputError):
        store.add_account(AccountSpec("alpha", "mock", 1), clock.now())
    with pytest.raises(InputError):
        store.update_account("alpha", clock.now(), capacity=0)
    store.remove_account("mid", clock.now())
    assert [a.name for a in store.list_accounts()] == ["zeta", "alpha"]


def test_an_account_with_renders_in_flight_cannot_be_removed(
    store: Store, tmp_path: Path, clock: FakeClock
) -> None:
    seed_store(store, tmp_path, clock.now(), jobs=1)
    assert claim(store, clock) is not None
    with pytest.raises(InputError, match="in flight"):
        store.remove_account("acct-a", clock.now())


def test_a_bulk_import_keeps_order_ids_and_values_across_statements(
    store: Store, tmp_path: Path, clock: FakeClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The SQLite store inserts many jobs per statement: make the statements small, so
    # that 257 jobs take several full ones and a shorter last one.
    monkeypatch.setattr(type(store), "ADD_JOBS_PER_INSERT", 7, raising=False)
    batch = store.create_batch(BatchSpec("b", "s.csv", str(tmp_path), max_attempts=4),
                               clock.now())
    specs = make_specs(tmp_path, 257, priority=3)
    specs[100] = JobSpec(
        job_key=specs[100].job_key, prompt="naïve «café» ☕", provider="mock",
        output_path=specs[100].output_path, params={"seed": 2**53, "duration": 7.5,
                                                    "model": "m"},
        pinned_account="acct-a", row_number=102, name="ünï", priority=-4,
        metadata={"columns": {"notes": "=1+1", "n": None, "x": 1.5}},
    )
    first = store.add_jobs(batch.id, specs[:57], clock.now())
    # Repeated keys inside one import count once; the ones already there are skipped.
    result = store.add_jobs(batch.id, specs + specs[:5] + specs[200:203], clock.now())
    assert (result.added, result.already_present) == (200, 65)
    jobs = store.list_jobs(batch_id=batch.id)
    assert [job.job_key for job in jobs] == [spec.job_key for spec in specs]
    assert first.job_ids == tuple(job.id for job in jobs[:57])
    assert result.job_ids == tuple(job.id for job in jobs[57:])
    odd = jobs[100]
    assert (odd.prompt, odd.name, odd.pinned_account, odd.priority, odd.row_number) == (
        "naïve «café» ☕", "ünï", "acct-a", -4, 102)
    assert odd.params == {"seed": 2**53, "duration": 7.5, "model": "m"}
    assert odd.metadata == {"columns": {"notes": "=1+1", "n": None, "x": 1.5}}
    assert {(job.state, job.max_attempts, job.attempts) for job in jobs} == {
        (JobState.QUEUED, 4, 0)}
    assert jobs[5].priority == 3 and jobs[5].created_at == clock.now()
    # A journal with more jobs than the import: the keys are looked up one by one.
    extra = [*make_specs(tmp_path, 258)[255:], specs[0]]
    again = store.add_jobs(batch.id, extra, clock.now())
    assert (again.added, again.already_present) == (1, 3)
    assert again.job_ids == (store.list_jobs(batch_id=batch.id)[-1].id,)


def test_an_empty_or_all_present_import_adds_nothing(
    store: Store, tmp_path: Path, clock: FakeClock
) -> None:
    batch = store.create_batch(BatchSpec("b", "s.csv", str(tmp_path)), clock.now())
    assert store.add_jobs(batch.id, [], clock.now(), max_waiting=0).job_ids == ()
    store.add_jobs(batch.id, make_specs(tmp_path, 3), clock.now())
    again = store.add_jobs(batch.id, make_specs(tmp_path, 3), clock.now(), max_waiting=0)
    assert (again.added, again.already_present, again.job_ids) == (0, 3, ())
    with pytest.raises(InputError, match="There is no batch 99"):
        store.add_jobs(99, make_specs(tmp_path, 1), clock.now())


# -- issue 10: never pay twice -----------------------------------------------------------------
def _rendering(store: Store, clock: FakeClock, render: str = "pj"):  # type: ignore[no-untyped-def]
    c = claim(store, clock)
    assert c and store.mark_submitting(c.token, "ct", clock.now())
    assert store.record_submitted(c.token, render, clock.now())
    return c


def test_a_parked_job_keeps_its_render_holds_no_claim_and_recovery_leaves_it(
    store: Store, tmp_path: Path, clock: FakeClock
) -> None:
    seed_store(store, tmp_path, clock.now(), jobs=1, accounts={"acct-a": 1})
    c = _rendering(store, clock)
    parked = JobError("retryable", "parked", "resume keeps crashing")
    assert store.park_job(c.token, parked, clock.now())
    job = store.get_job(c.job.id)
    assert job and job.state == JobState.PARKED and job.provider_job_id == "pj"
    assert job.claim_token is None and job.lease_owner is None and job.finished_at is None
    assert job.account == "acct-a" and job.error_label == "parked"
    assert store.live_count("acct-a") == 0
    assert claim(store, clock) is None, "a parked job is not resumed by itself"
    report = store.recover(RecoverParams("new", clock.now(), 60, False, no_file))
    assert not report.touched
    assert store.get_job(c.job.id).state == JobState.PARKED  # type: ignore[union-attr]
    doctor = store.doctor_queries(instance_alive=False)
    assert not any(doctor.values()), doctor
    assert not store.park_job(c.token, parked, clock.now()), "fenced: no claim any more"


def test_park_needs_a_submission(store: Store, tmp_path: Path, clock: FakeClock) -> None:
    seed_store(store, tmp_path, clock.now(), jobs=1)
    c = claim(store, clock)
    assert c and not store.park_job(c.token, ERR, clock.now())
    assert store.get_job(c.job.id).state == JobState.CLAIMED  # type: ignore[union-attr]


def test_retry_keeps_a_render_so_it_is_read_before_anything_is_paid(
    store: Store, tmp_path: Path, clock: FakeClock
) -> None:
    seed_store(store, tmp_path, clock.now(), jobs=2, accounts={"acct-a": 2})
    parked_claim = _rendering(store, clock)
    assert store.park_job(parked_claim.token, ERR, clock.now())
    failed_claim = claim(store, clock)
    assert failed_claim and store.mark_submitting(failed_claim.token, "ct2", clock.now())
    assert store.record_submitted(failed_claim.token, "pj2", clock.now())
    assert store.mark_failed(failed_claim.token, JobError("permanent", "finished without file",
                                                          "no file"), clock.now())
    ids = [parked_claim.job.id, failed_claim.job.id]
    assert store.requeue_jobs(ids, clock.now()) == ids
    for job_id, render in zip(ids, ("pj", "pj2"), strict=True):
        job = store.get_job(job_id)
        assert job and job.state == JobState.QUEUED and job.attempts == 0
        assert job.provider_job_id == render and job.account == "acct-a" and job.client_token
    again = claim(store, clock)
    assert again and again.job.provider_job_id in ("pj", "pj2")
    assert not store.mark_submitting(again.token, "ct3", clock.now()), "read, never created"
    requeued = [e for e in store.ledger(ids[0]) if e.event == "requeued"]
    assert requeued[-1].detail["rereads"] == "pj" and requeued[-1].detail["from"] == "PARKED"


def test_retry_with_a_new_seed_or_of_a_dropped_render_creates_anew(
    store: Store, tmp_path: Path, clock: FakeClock
) -> None:
    seed_store(store, tmp_path, clock.now(), jobs=2)
    seeded = _rendering(store, clock)
    assert store.mark_failed(seeded.token, ERR, clock.now())
    dropped = _rendering(store, clock, render="pj-other")
    assert store.mark_failed(dropped.token, JobError("permanent", "content policy", "no"),
                             clock.now(), drop_render=True)
    assert store.get_job(dropped.job.id).provider_job_id is None  # type: ignore[union-attr]
    assert store.requeue_jobs([seeded.job.id], clock.now(), new_seed=3) == [seeded.job.id]
    assert store.requeue_jobs([dropped.job.id], clock.now()) == [dropped.job.id]
    for job_id in (seeded.job.id, dropped.job.id):
        job = store.get_job(job_id)
        assert job and job.provider_job_id is None and job.client_token is None
        assert job.account is None


def test_release_keeping_an_unresolved_submission(
    store: Store, tmp_path: Path, clock: FakeClock
) -> None:
    seed_store(store, tmp_path, clock.now(), jobs=1, accounts={"acct-a": 1, "acct-b": 1})
    c = claim(store, clock, "acct-a")
    assert c and store.mark_submitting(c.token, "ct-unresolved", clock.now())
    assert store.release_to_queue(c.token, JobError("account", "rate limited", "429"),
                                  clock.now(), keep_submission=True)
    job = store.get_job(c.job.id)
    assert job and job.state == JobState.QUEUED and job.attempts == 0
    assert job.client_token == "ct-unresolved" and job.account == "acct-a"
    assert claim(store, clock, "acct-b") is None, "asked for where it was sent"
    again = claim(store, clock, "acct-a")
    assert again and again.job.client_token == "ct-unresolved"


@pytest.mark.parametrize("lookup", [True, False])
def test_recovery_of_a_claim_holding_an_unresolved_submission(
    store: Store, tmp_path: Path, clock: FakeClock, lookup: bool
) -> None:
    """Claimed again with its earlier client token kept, then the process died before it
    asked: still inside the submit window, never requeued as if nothing had been sent."""
    seed_store(store, tmp_path, clock.now(), jobs=1, accounts={"acct-a": 1})
    c = claim(store, clock)
    assert c and store.mark_submitting(c.token, "ct-open", clock.now())
    assert store.set_retry_wait(c.token, ERR, clock.now(), clock.now(), keep_provider_job=True)
    again = claim(store, clock)
    assert again and again.job.state == JobState.CLAIMED and again.job.client_token == "ct-open"
    report = store.recover(RecoverParams("new", clock.now(), 60, False, no_file,
                                         lookup_accounts=frozenset({"acct-a"}) if lookup
                                         else frozenset()))
    job = store.get_job(c.job.id)
    assert job is not None
    if lookup:
        assert report.reconcile == [c.job.id]
        assert job.state == JobState.SUBMITTING and job.client_token == "ct-open"
    else:
        assert report.unknown_submissions == [c.job.id]
        assert job.state == JobState.PARKED and job.error_label == "submit outcome unknown"
        # never sent to a provider that keeps no token: the words name what it can show
        assert job.client_token == "ct-open" and "ct-open" not in (job.error_message or "")
        assert "on account acct-a" in (job.error_message or "")
        assert "submit_outcome_unknown" in [e.event for e in store.ledger(c.job.id)]


# -- priority and paused batches (issue 13) ------------------------------------------------
def _two_batches(store: Store, tmp_path: Path, clock: FakeClock,
                 capacity: int = 10) -> tuple[int, int]:
    first = store.create_batch(BatchSpec("first", "a.csv", str(tmp_path / "a")), clock.now())
    second = store.create_batch(BatchSpec("second", "b.csv", str(tmp_path / "b")), clock.now())
    store.add_jobs(first.id, make_specs(tmp_path / "a", 3), clock.now())
    store.add_jobs(second.id, [JobSpec(f"second-{i}", f"p{i}", "mock",
                                       str(tmp_path / "b" / f"{i}.mp4"))
                               for i in range(3)], clock.now())
    store.add_account(AccountSpec("acct-a", "mock", capacity), clock.now())
    return first.id, second.id


def _claim_all(store: Store, clock: FakeClock) -> list[str]:
    keys = []
    while (c := claim(store, clock)) is not None:
        keys.append(c.job.job_key)
    return keys


def test_claims_take_higher_priority_first_then_older(
    store: Store, tmp_path: Path, clock: FakeClock
) -> None:
    _first, _second = _two_batches(store, tmp_path, clock)
    ids = {j.job_key: j.id for j in store.list_jobs()}
    moved = store.prioritize_jobs([ids["second-2"]], clock.now())
    assert (moved.priority, moved.changed, moved.job_ids) == (1, 1, (ids["second-2"],))
    also = store.prioritize_jobs([ids["key-00001"], 99_999], clock.now(), priority=-2)
    assert also.job_ids == (ids["key-00001"],), "an unknown id changes nothing"
    assert _claim_all(store, clock) == ["second-2", "key-00000", "key-00002", "second-0",
                                        "second-1", "key-00001"]
    assert [e.detail["priority"] for e in store.ledger(ids["second-2"])
            if e.event == "prioritized"] == [1]


def test_a_batch_moved_to_the_front_goes_before_older_batches(
    store: Store, tmp_path: Path, clock: FakeClock
) -> None:
    first, second = _two_batches(store, tmp_path, clock)
    store.prioritize_jobs([store.list_jobs(first)[0].id], clock.now(), priority=5)
    result = store.prioritize_batch(second, clock.now())
    assert (result.priority, result.changed) == (6, 3), "one above the highest waiting"
    keys = _claim_all(store, clock)
    assert keys[:3] == ["second-0", "second-1", "second-2"]
    assert keys[3] == "key-00000"


def test_priority_leaves_finished_jobs_alone(
    store: Store, tmp_path: Path, clock: FakeClock
) -> None:
    first, _second = _two_batches(store, tmp_path, clock, capacity=1)
    c = claim(store, clock)
    assert c is not None
    run_to_completion(store, clock, c)
    result = store.prioritize_batch(first, clock.now(), priority=7)
    assert result.changed == 2
    done = store.get_job(c.job.id)
    assert done is not None and done.priority == 0 and done.state == JobState.COMPLETED
    assert store.prioritize_jobs([c.job.id], clock.now(), priority=3).changed == 0


def test_a_paused_batch_is_not_claimed_and_resumes(
    store: Store, tmp_path: Path, clock: FakeClock
) -> None:
    first, _second = _two_batches(store, tmp_path, clock)
    paused = store.set_batch_paused(first, True, clock.now())
    assert paused is not None and paused.settings.get("paused")
    store.prioritize_batch(first, clock.now())  # even at the front, a paused batch waits
    assert _claim_all(store, clock) == ["second-0", "second-1", "second-2"]
    assert claim(store, clock) is None
    resumed = store.set_batch_paused(first, False, clock.now())
    assert resumed is not None and not resumed.settings.get("paused")
    assert _claim_all(store, clock) == ["key-00000", "key-00001", "key-00002"]
    events = [e.event for e in store.ledger() if e.event.startswith("batch_")]
    assert events[-3:] == ["batch_paused", "batch_prioritized", "batch_resumed"]
    assert store.set_batch_paused(999, True, clock.now()) is None


def test_a_paused_batch_still_finishes_its_renders_in_flight(
    store: Store, tmp_path: Path, clock: FakeClock
) -> None:
    first, _second = _two_batches(store, tmp_path, clock)
    c = claim(store, clock)
    assert c is not None and c.job.batch_id == first
    assert store.mark_submitting(c.token, "ct-1", clock.now())
    assert store.record_submitted(c.token, "pj-1", clock.now())
    store.set_batch_paused(first, True, clock.now())
    # A poll failed: the render goes to RETRY_WAIT keeping its provider job id.
    assert store.set_retry_wait(c.token, ERR, clock.now() + 5, clock.now(),
                                keep_provider_job=True)
    clock.advance(6)
    keys = _claim_all(store, clock)
    assert keys[0] == c.job.job_key, "the paid render is read again despite the pause"
    assert not any(k.startswith("key-") for k in keys[1:]), "no new render of the batch"


def test_a_completion_records_the_machine_that_holds_the_file(
    store: Store, tmp_path: Path, clock: FakeClock
) -> None:
    """Issue 15: the journal says where each video is: the host name of the instance that
    wrote it (mark_completed) or found it finished on its disk (recovery); by default this
    machine's."""
    import socket

    assert getattr(store, "host") == socket.gethostname()  # noqa: B009 - not in Store
    seed_store(store, tmp_path, clock.now(), jobs=3, accounts={"acct-a": 3})
    written, found, waiting = claim(store, clock), claim(store, clock), claim(store, clock)
    assert written and found and waiting
    setattr(store, "host", "studio-pc")  # noqa: B010 - not in Store
    run_to_completion(store, clock, written)
    for c in (found, waiting):
        assert store.mark_submitting(c.token, "ct-" + c.token.token, clock.now())
        assert store.record_submitted(c.token, "pj-" + c.token.token, clock.now())
    assert store.mark_downloading(found.token, clock.now())
    assert store.record_download(found.token, size=10, sha256="cd" * 32, now=clock.now())
    setattr(store, "host", "render-box")  # noqa: B010

    def check(job: Job) -> FileCheck:
        return FileCheck(True, 10, "cd" * 32) if job.id == found.job.id else FileCheck(False)
    report = store.recover(RecoverParams("new", clock.now(), 60, False, check))
    assert report.completed_from_disk == [found.job.id]
    hosts = {j.id: (j.state, j.output_host) for j in store.list_jobs()}
    assert hosts == {written.job.id: (JobState.COMPLETED, "studio-pc"),
                     found.job.id: (JobState.COMPLETED, "render-box"),
                     waiting.job.id: (JobState.RENDERING, None)}


def test_the_newest_batch_id_is_the_highest_batch_id(
    store: Store, tmp_path: Path, clock: FakeClock
) -> None:
    """What the engine compares to read account views before a new batch's first claim."""
    assert store.newest_batch_id() is None, "no batch yet"
    first, second = _two_batches(store, tmp_path, clock)
    assert store.newest_batch_id() == max(first, second) == second
