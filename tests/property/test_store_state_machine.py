"""Random interleavings against the store contract (issue 3, item 4).

Hypothesis drives claims on several accounts by several instances, heartbeats, lease
expiry, the fenced lifecycle writes (submit, progress, download, complete), the three
error paths (retry wait keeping the render or not, release to the queue, fail), the
user's cancel and retry, instance crashes followed by local recovery (every in-flight
row is a leftover) or shared recovery (only expired leases), and late writes of workers
that lost their claim. The same program runs on :class:`SqliteStore` (and, in
:class:`TestStoreStateMachineOnPostgres`, on :class:`PostgresStore` as a second, on the
session's throwaway server), and a small model, independent of both, predicts every
answer. After each step every store must agree with the model and with the other (that
catches drift between the implementations), and DESIGN.md's invariants must hold in each.
(The memory store is the SQLite journal in memory since issue 36 item 4: not a third.)
"""

from __future__ import annotations

import dataclasses
import shutil
import tempfile
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
)

from reelqueue.domain.clock import FakeClock
from reelqueue.domain.models import AccountSpec, BatchSpec, ClaimToken, FileCheck, Job, JobSpec
from reelqueue.domain.states import FINAL, IN_FLIGHT, WAITING, AccountStatus, JobState
from reelqueue.store.base import ClaimParams, JobError, RecoverParams, Store
from reelqueue.store.sqlite import SqliteStore
from tests import pgserver

LEASE = 30.0
MAX_CRASHES = 2  # RecoverParams.max_crashes here, low so that the limit is reached
SIZE = 1234
SHA = "ab" * 32
RETRYABLE = JobError("retryable", "provider error", "500 from the provider")
ACCOUNT = JobError("account", "rate limited", "429 from the provider")
PERMANENT = JobError("permanent", "content policy", "refused")

ALLOWED: dict[str, frozenset[JobState]] = {
    "submitting": frozenset({JobState.CLAIMED}),
    "submitted": frozenset({JobState.SUBMITTING}),
    "rendering": frozenset({JobState.CLAIMED, JobState.SUBMITTING, JobState.RENDERING}),
    "progress": frozenset({JobState.RENDERING}),
    "downloading": frozenset({JobState.RENDERING}),
    "download_recorded": frozenset({JobState.DOWNLOADING}),
    "completed": frozenset({JobState.DOWNLOADING}),
    "retry_wait": IN_FLIGHT,
    "released": IN_FLIGHT,
    "failed": IN_FLIGHT,
    "parked": IN_FLIGHT,
}
"""Which states each fenced write accepts (besides naming the current claim)."""

ENDS_ATTEMPT = frozenset({"completed", "retry_wait", "released", "failed", "parked"})


@dataclass
class ModelJob:
    """What the model believes one job row holds.

    Attributes:
        claim: the logical id of the current claim (each store has its own token for it).
        file_on_disk: the finished video, whose hash the download recorded, was renamed
            into place (a worker may have died before recording the completion).
        foreign_file: another whole file is at the output name (the user's, or an
            earlier download's): recovery must never take it for the video.
        completions: how many times the model saw this job completed.
        had_render: the provider job id last recorded, until a new submission starts.
        render_dropped: that render was let go legitimately (remote failure, user retry).
    """

    id: int
    provider: str
    priority: int
    pinned: str | None
    max_attempts: int
    state: JobState = JobState.QUEUED
    attempts: int = 0
    account: str | None = None
    claim: int | None = None
    owner: str | None = None
    lease_until: float | None = None
    client_token: str | None = None
    provider_job_id: str | None = None
    run_after: float = 0.0
    file_on_disk: bool = False
    foreign_file: bool = False  # another file at the output name (never the video)
    completions: int = 0
    had_render: str | None = None
    render_dropped: bool = False
    #: parked by recovery as "submit outcome unknown": a user's retry keeps its client
    #: token and account, to be reconciled before anything is created (issue 19)
    unknown: bool = False
    #: recovery's requeues in a row (a crash gives the attempt back; past the limit the
    #: job fails); reset by a retry wait, a release or the user's retry
    crashes: int = 0

    def clear_claim(self) -> None:
        self.claim = self.owner = self.lease_until = None

    def drop_render(self) -> None:
        if self.provider_job_id is not None:
            self.render_dropped = True
        self.provider_job_id = None


@dataclass
class ModelAccount:
    capacity: int
    status: AccountStatus = AccountStatus.READY
    cooldown_until: float | None = None

    def eligible(self, now: float) -> bool:
        if self.cooldown_until is not None and self.cooldown_until > now:
            return False
        return self.status in (AccountStatus.READY, AccountStatus.RATE_LIMITED)


def _fenced_call(store: Store, op: str, token: ClaimToken, now: float,
                 args: dict[str, Any]) -> bool:
    if op == "submitting":
        return store.mark_submitting(token, args["client_token"], now)
    if op == "submitted":
        return store.record_submitted(token, args["provider_job_id"], now)
    if op == "rendering":
        return store.mark_rendering(token, now)
    if op == "progress":
        return store.record_progress(token, "running", args["progress"], now)
    if op == "downloading":
        return store.mark_downloading(token, now)
    if op == "download_recorded":
        return store.record_download(token, size=SIZE, sha256=SHA, now=now)
    if op == "completed":
        return store.mark_completed(token, size=SIZE, sha256=SHA, cost=0.5, now=now)
    if op == "retry_wait":
        return store.set_retry_wait(token, RETRYABLE, args["run_after"], now,
                                    keep_provider_job=args["keep"])
    if op == "released":
        return store.release_to_queue(token, ACCOUNT, now, run_after=args["run_after"])
    if op == "failed":
        return store.mark_failed(token, PERMANENT, now)
    if op == "parked":
        return store.park_job(token, RETRYABLE, now)
    raise AssertionError(f"unknown write {op}")


def _comparable(job: Job) -> dict[str, Any]:
    """A row without its claim token (each store draws its own)."""
    row = dataclasses.asdict(job)
    row["claim_token"] = job.claim_token is not None
    return row


class StoreMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.folder = Path(tempfile.mkdtemp(prefix="reelqueue-property-"))
        self.clock = FakeClock()
        self.stores: dict[str, Store] = {
            "sqlite": SqliteStore.open(self.folder / "journal.sqlite3", now=self.clock.now()),
        }
        self.jobs: dict[int, ModelJob] = {}
        self.accounts: dict[str, ModelAccount] = {}
        self.alive: list[str] = ["boot-0", "boot-1"]
        self.boots = len(self.alive)
        self.held: dict[str, set[int]] = {name: set() for name in self.alive}
        self.tokens: dict[int, dict[str, ClaimToken]] = {}
        self.claim_job: dict[int, int] = {}
        self.writes = 0

    def teardown(self) -> None:
        for store in self.stores.values():
            store.close()
        shutil.rmtree(self.folder, ignore_errors=True)

    # -- set-up ------------------------------------------------------------------------
    @initialize(data=st.data(), capacities=st.lists(st.integers(1, 3), min_size=1, max_size=3),
                max_attempts=st.sampled_from([3, 2, 1]), job_count=st.integers(1, 8))
    def seed(self, data: st.DataObject, capacities: list[int], max_attempts: int,
             job_count: int) -> None:
        names = [f"acct-{i}" for i in range(len(capacities))]
        specs = [
            JobSpec(job_key=f"job-{i}", prompt=f"prompt {i}", provider="mock",
                    output_path=str(self.folder / f"{i}.mp4"),
                    priority=data.draw(st.integers(0, 2), label=f"priority {i}"),
                    pinned_account=data.draw(st.none() | st.sampled_from(names),
                                             label=f"pinned {i}"))
            for i in range(job_count)
        ]
        # A job no account of ours can take: it must never be claimed.
        specs.append(JobSpec(job_key="other-provider", prompt="x", provider="runway",
                             output_path=str(self.folder / "other.mp4")))
        now = self.clock.now()
        ids: dict[str, tuple[int, ...]] = {}
        for name, store in self.stores.items():
            batch = store.create_batch(BatchSpec("b", "s.csv", str(self.folder),
                                                 max_attempts=max_attempts), now)
            ids[name] = store.add_jobs(batch.id, specs, now).job_ids
            for account, capacity in zip(names, capacities, strict=True):
                store.add_account(AccountSpec(account, "mock", capacity), now)
        assert all(found == ids["sqlite"] for found in ids.values()), ids
        for job_id, spec in zip(ids["sqlite"], specs, strict=True):
            self.jobs[job_id] = ModelJob(job_id, spec.provider, spec.priority,
                                         spec.pinned_account, max_attempts)
        self.accounts = {n: ModelAccount(c) for n, c in zip(names, capacities, strict=True)}

    # -- helpers -----------------------------------------------------------------------
    def _live(self, account: str) -> int:
        return sum(1 for j in self.jobs.values() if j.account == account and j.state in IN_FLIGHT)

    def _candidate(self, account: str, now: float) -> ModelJob | None:
        if not self.accounts[account].eligible(now):
            return None
        if self._live(account) >= self.accounts[account].capacity:
            return None
        candidates = [j for j in self.jobs.values()
                      if j.state in WAITING and j.provider == "mock" and j.run_after <= now
                      and j.pinned in (None, account) and j.account in (None, account)]
        return min(candidates, key=lambda j: (-j.priority, j.id), default=None)

    def _pick_held(self, data: st.DataObject) -> tuple[str, int]:
        instance = data.draw(st.sampled_from([i for i in self.alive if self.held[i]]),
                             label="instance")
        claim = data.draw(st.sampled_from(sorted(self.held[instance])), label="claim")
        return instance, claim

    def _write(self, instance: str | None, claim: int, op: str, **args: Any) -> bool:
        """One fenced write on both stores; the model says whether it must succeed."""
        job = self.jobs[self.claim_job[claim]]
        current = job.claim == claim
        expected = current and job.state in ALLOWED[op]
        if op == "submitting":
            expected = expected and job.provider_job_id is None
        if op == "rendering":
            expected = expected and job.provider_job_id is not None
        if op == "parked":  # a render, or an unknown create's client token
            expected = expected and job.client_token is not None
        now = self.clock.now()
        for name, store in self.stores.items():
            token = self.tokens[claim][name]
            ok = _fenced_call(store, op, token, now, args)
            assert ok is expected, (
                f"{name}: {op} by claim {claim} returned {ok}, expected {expected} ({job})")
            if not ok:
                last = store.ledger(job.id)[-1]
                assert last.event == "fenced_out" and last.claim_token == token.token, (
                    f"{name}: a refused {op} left no fenced_out entry")
        self.writes += 1
        if expected:
            self._apply(job, op, args)
        if instance is not None and (not expected or op in ENDS_ATTEMPT):
            self.held[instance].discard(claim)  # the worker stops: done or claim lost
        return expected

    def _apply(self, job: ModelJob, op: str, args: dict[str, Any]) -> None:
        if op == "submitting":
            # A job that had a render is submitted again only after it was let go
            # legitimately (remote failure, user retry) -- never after a crash.
            assert job.had_render is None or job.render_dropped, f"resubmitted {job}"
            job.had_render, job.render_dropped = None, False
            job.state, job.client_token = JobState.SUBMITTING, args["client_token"]
        elif op == "submitted":
            job.state = JobState.RENDERING
            job.provider_job_id = job.had_render = args["provider_job_id"]
        elif op == "rendering":
            job.state = JobState.RENDERING
        elif op == "downloading":
            job.state = JobState.DOWNLOADING
            # A new download: an earlier attempt's file is no longer the recorded one.
            job.foreign_file = job.foreign_file or job.file_on_disk
            job.file_on_disk = False
        elif op == "completed":
            job.state = JobState.COMPLETED
            job.completions += 1
            job.file_on_disk = True
            job.clear_claim()
        elif op == "retry_wait":
            job.crashes = 0
            job.state, job.run_after = JobState.RETRY_WAIT, args["run_after"]
            job.clear_claim()
            if not args["keep"]:
                job.account = job.client_token = None
                job.drop_render()
        elif op == "released":
            job.crashes = 0
            job.state = JobState.RETRY_WAIT if args["run_after"] else JobState.QUEUED
            job.run_after = args["run_after"] or 0.0
            job.attempts = max(job.attempts - 1, 0)
            job.clear_claim()
            if job.provider_job_id is None:
                job.account = job.client_token = None
        elif op == "failed":
            job.state = JobState.FAILED
            job.clear_claim()
        elif op == "parked":  # keeps its render (and account) for the user's retry
            job.state = JobState.PARKED
            job.clear_claim()

    def _check_output(self, job: Job) -> FileCheck:
        model = self.jobs[job.id]
        if model.file_on_disk:
            return FileCheck(True, SIZE, SHA)
        if model.foreign_file:  # a whole file, but not the one this job's download recorded
            return FileCheck(True, SIZE, "ff" * 32)
        return FileCheck(False)

    def _recover(self, instance: str, only_expired: bool, lookup: frozenset[str],
                 verify: bool) -> None:
        now = self.clock.now()
        leftovers = [j for _, j in sorted(self.jobs.items()) if j.state in IN_FLIGHT
                     and (not only_expired or (j.lease_until or 0) < now)]
        plan: dict[str, list[int]] = {k: [] for k in (
            "completed_from_disk", "reattached", "reconcile", "unknown_submissions",
            "requeued", "failed")}
        for job in leftovers:
            # a claimed job that kept an unresolved submission is in the window too
            in_window = job.state == JobState.SUBMITTING or (
                job.client_token is not None and job.provider_job_id is None)
            if job.file_on_disk:
                plan["completed_from_disk"].append(job.id)
            elif job.provider_job_id:
                plan["reattached"].append(job.id)
            elif in_window and job.account in lookup:
                plan["reconcile"].append(job.id)
            elif in_window:  # invariants 11, 13: parked as unknown, never created again
                plan["unknown_submissions"].append(job.id)
            elif job.crashes + 1 > MAX_CRASHES:
                plan["failed"].append(job.id)
            else:
                plan["requeued"].append(job.id)
        for name, store in self.stores.items():
            report = store.recover(RecoverParams(
                instance, now, LEASE, only_expired, self._check_output,
                lookup_accounts=lookup, verify_completed=verify, max_crashes=MAX_CRASHES))
            got = {k: sorted(v) for k, v in report.as_dict().items() if k in plan}
            assert got == plan, f"{name}: recovery did {got}, expected {plan}"
            assert report.missing_outputs == []
            for job_id in plan["unknown_submissions"]:
                row = store.get_job(job_id)
                assert row and row.state == JobState.PARKED, f"{name}: job {job_id}"
                assert row.error_label == "submit outcome unknown", f"{name}: job {job_id}"
                assert row.error_class == "unknown", f"{name}: job {job_id}"
                # no token_accounts here: the words name the account and time, not the
                # token this provider was never sent (issue 19)
                assert row.client_token and row.client_token not in (row.error_message or "")
                assert f"on account {row.account}" in (row.error_message or "")
                events = [e.event for e in store.ledger(job_id)]
                assert "submit_outcome_unknown" in events, f"{name}: job {job_id}"
                assert "possible_duplicate_charge" not in events, f"{name}: job {job_id}"
        for job_id in plan["completed_from_disk"]:
            job = self.jobs[job_id]
            job.state = JobState.COMPLETED
            job.completions += 1
            job.clear_claim()
        for kind, state in (("reattached", JobState.RENDERING),
                            ("reconcile", JobState.SUBMITTING)):
            for job_id in plan[kind]:
                job = self.jobs[job_id]
                claim = self._new_claim(job_id, instance)
                job.state, job.claim, job.owner = state, claim, instance
                job.lease_until = now + LEASE
        for job_id in plan["failed"]:
            self.jobs[job_id].state = JobState.FAILED
            self.jobs[job_id].clear_claim()
        for job_id in plan["unknown_submissions"]:
            self.jobs[job_id].state = JobState.PARKED
            self.jobs[job_id].unknown = True
            self.jobs[job_id].clear_claim()
        for job_id in plan["requeued"]:
            job = self.jobs[job_id]
            job.state, job.run_after = JobState.QUEUED, 0.0
            job.attempts = max(job.attempts - 1, 0)  # a crash spends no attempt
            job.crashes += 1
            job.account = job.client_token = job.provider_job_id = None
            job.clear_claim()

    def _new_claim(self, job_id: int, instance: str,
                   tokens: dict[str, ClaimToken] | None = None) -> int:
        claim = len(self.tokens)
        if tokens is None:
            tokens = {}
            for name, store in self.stores.items():
                row = store.get_job(job_id)
                assert row is not None and row.claim_token is not None
                tokens[name] = ClaimToken(job_id, row.claim_token)
        self.tokens[claim] = tokens
        self.claim_job[claim] = job_id
        self.held[instance].add(claim)
        return claim

    # -- rules: claims and the lifecycle -----------------------------------------------
    @precondition(lambda self: bool(self.jobs))
    @rule(data=st.data(), count=st.integers(1, 3), steps=st.integers(0, 4))
    def claim(self, data: st.DataObject, count: int, steps: int) -> None:
        """A pump pass: up to ``count`` claims on one account; each new worker then runs
        ``steps`` steps of its lifecycle."""
        account = data.draw(st.sampled_from(sorted(self.accounts)), label="account")
        instance = data.draw(st.sampled_from(self.alive), label="instance")
        for _ in range(count):
            claim = self._claim_one(account, instance)
            if claim is None:
                return
            self._run_worker(data, instance, claim, steps)

    def _claim_one(self, account: str, instance: str) -> int | None:
        now = self.clock.now()
        expected = self._candidate(account, now)
        tokens: dict[str, ClaimToken] = {}
        for name, store in self.stores.items():
            got = store.claim_next_job(ClaimParams(account, instance, now, LEASE))
            if expected is None:
                assert got is None, f"{name}: claimed {got} but nothing was claimable"
                continue
            assert got is not None, f"{name}: claimed nothing, expected job {expected.id}"
            assert got.job.id == expected.id and got.account == account, name
            assert got.resumed == (expected.provider_job_id is not None), name
            assert got.job.attempts == expected.attempts + 1, name
            tokens[name] = got.token
        if expected is None:
            return None
        expected.state, expected.account = JobState.CLAIMED, account
        expected.attempts += 1
        expected.owner, expected.lease_until = instance, now + LEASE
        expected.claim = self._new_claim(expected.id, instance, tokens)
        return expected.claim

    def _run_worker(self, data: st.DataObject, instance: str, claim: int, steps: int) -> None:
        """The next natural steps of a worker (a stale worker acts on what it last knew,
        and stops at its first refused write)."""
        for _ in range(steps):
            if claim not in self.held[instance]:
                return
            job = self.jobs[self.claim_job[claim]]
            if job.state == JobState.CLAIMED:
                op = "rendering" if job.provider_job_id else "submitting"
            elif job.state == JobState.SUBMITTING:
                op = "submitted"
            elif job.state == JobState.RENDERING:
                op = data.draw(st.sampled_from(["downloading", "progress"]), label="op")
            elif job.state == JobState.DOWNLOADING:
                op = "completed"
            else:
                op = data.draw(st.sampled_from(sorted(ALLOWED)), label="op")
            self._write(instance, claim, op, client_token=f"ct-{claim}-{self.writes}",
                        provider_job_id=f"pj-{claim}-{self.writes}",
                        progress=data.draw(st.none() | st.floats(0, 1), label="progress"),
                        run_after=self.clock.now(), keep=False)

    @precondition(lambda self: any(self.held.values()))
    @rule(data=st.data(), steps=st.integers(1, 6))
    def work(self, data: st.DataObject, steps: int) -> None:
        """A worker runs a few steps of its lifecycle."""
        instance, claim = self._pick_held(data)
        self._run_worker(data, instance, claim, steps)

    @precondition(lambda self: any(self.held.values()))
    @rule(data=st.data(), op=st.sampled_from(sorted(ALLOWED)), keep=st.booleans(),
          delay=st.none() | st.floats(0.5, 40))
    def any_write(self, data: st.DataObject, op: str, keep: bool, delay: float | None) -> None:
        """Any fenced write, in any state: the store must refuse what the state forbids."""
        instance, claim = self._pick_held(data)
        run_after = None if delay is None else self.clock.now() + delay
        if op == "retry_wait" and run_after is None:
            run_after = self.clock.now()
        job = self.jobs[self.claim_job[claim]]
        if op == "retry_wait" and job.attempts >= job.max_attempts:
            op = "failed"  # the engine never puts a job at its ceiling back in the queue
        self._write(instance, claim, op, client_token=f"ct-{claim}-{self.writes}",
                    provider_job_id=f"pj-{claim}-{self.writes}", progress=0.5,
                    run_after=run_after, keep=keep)

    @precondition(lambda self: any(self.held.values()))
    @rule(data=st.data(), keep=st.booleans(), delay=st.floats(0, 40))
    def retryable_error(self, data: st.DataObject, keep: bool, delay: float) -> None:
        """As the engine does it: retry wait while attempts are left, else fail."""
        instance, claim = self._pick_held(data)
        job = self.jobs[self.claim_job[claim]]
        if job.attempts >= job.max_attempts:
            self._write(instance, claim, "failed")
        else:
            self._write(instance, claim, "retry_wait", run_after=self.clock.now() + delay,
                        keep=keep)

    @precondition(lambda self: any(self.held.values()))
    @rule(data=st.data(), status=st.sampled_from([AccountStatus.RATE_LIMITED,
                                                  AccountStatus.KEY_REJECTED]),
          pause=st.floats(1, 40))
    def account_error(self, data: st.DataObject, status: AccountStatus, pause: float) -> None:
        """429 / bad key: the account pauses and the job goes back without an attempt."""
        instance, claim = self._pick_held(data)
        job = self.jobs[self.claim_job[claim]]
        account = job.account
        if account is not None and job.claim == claim:
            now = self.clock.now()
            until = now + pause if status == AccountStatus.RATE_LIMITED else None
            for store in self.stores.values():
                store.set_account_status(account, status, now, cooldown_until=until)
            self.accounts[account].status = status
            self.accounts[account].cooldown_until = until
        self._write(instance, claim, "released", run_after=None)

    @rule(data=st.data())
    def account_ready(self, data: st.DataObject) -> None:
        """The user fixed the key, or the cool-down is over."""
        if not self.accounts:
            return
        account = data.draw(st.sampled_from(sorted(self.accounts)), label="account")
        for store in self.stores.values():
            store.set_account_status(account, AccountStatus.READY, self.clock.now())
        self.accounts[account].status = AccountStatus.READY
        self.accounts[account].cooldown_until = None

    @precondition(lambda self: any(self.held.values()))
    @rule(data=st.data())
    def permanent_error(self, data: st.DataObject) -> None:
        instance, claim = self._pick_held(data)
        self._write(instance, claim, "failed")

    @precondition(lambda self: any(self.held.values()))
    @rule(data=st.data())
    def resume_keeps_crashing(self, data: st.DataObject) -> None:
        """The worker parks its job (refused when the job has no render)."""
        instance, claim = self._pick_held(data)
        self._write(instance, claim, "parked")

    @precondition(lambda self: any(self.held.values()))
    @rule(data=st.data())
    def video_saved(self, data: st.DataObject) -> None:
        """The worker records its download's hash (issue 22: before the rename), then
        renames the file into place; it may die before recording the completion. A worker
        whose claim was lost is refused at the record and never names the file."""
        instance, claim = self._pick_held(data)
        job = self.jobs[self.claim_job[claim]]
        if self._write(instance, claim, "download_recorded"):
            job.file_on_disk = True

    @precondition(lambda self: any(j.state == JobState.DOWNLOADING for j in self.jobs.values()))
    @rule(data=st.data())
    def users_file_at_the_output_name(self, data: st.DataObject) -> None:
        """Someone else's file at a downloading job's output name (no hash recorded for
        it): recovery must not take it for the video."""
        downloading = [j for j in self.jobs.values()
                       if j.state == JobState.DOWNLOADING and not j.file_on_disk]
        if downloading:
            data.draw(st.sampled_from(downloading), label="job").foreign_file = True

    # -- rules: time, heartbeat, user commands -----------------------------------------
    @rule(seconds=st.floats(0.5, 45))
    def time_passes(self, seconds: float) -> None:
        self.clock.advance(seconds)

    @rule(data=st.data())
    def heartbeat(self, data: st.DataObject) -> None:
        instance = data.draw(st.sampled_from(self.alive), label="instance")
        now = self.clock.now()
        owned = [j for j in self.jobs.values() if j.owner == instance and j.state in IN_FLIGHT]
        for name, store in self.stores.items():
            assert store.renew_leases(instance, now, LEASE) == len(owned), name
        for job in owned:
            job.lease_until = now + LEASE

    @precondition(lambda self: bool(self.jobs))
    @rule(data=st.data())
    def cancel(self, data: st.DataObject) -> None:
        ids = data.draw(st.lists(st.sampled_from(sorted(self.jobs)), max_size=3, unique=True),
                        label="cancel")
        expected = [i for i in ids if self.jobs[i].state not in FINAL]
        for name, store in self.stores.items():
            assert store.cancel_jobs(ids, self.clock.now()) == expected, name
        for job_id in expected:
            self.jobs[job_id].state = JobState.CANCELLED
            self.jobs[job_id].clear_claim()

    @precondition(lambda self: bool(self.jobs))
    @rule(data=st.data(), seed=st.none() | st.integers(0, 9))
    def user_retry(self, data: st.DataObject, seed: int | None) -> None:
        ids = data.draw(st.lists(st.sampled_from(sorted(self.jobs)), max_size=3, unique=True),
                        label="retry")
        expected = [i for i in ids if self.jobs[i].state in (
            JobState.FAILED, JobState.CANCELLED, JobState.PARKED)]
        for name, store in self.stores.items():
            assert store.requeue_jobs(ids, self.clock.now(), new_seed=seed) == expected, name
        for job_id in expected:
            job = self.jobs[job_id]
            job.state, job.attempts, job.run_after = JobState.QUEUED, 0, 0.0
            job.crashes = 0
            if seed is None and job.provider_job_id is not None:
                continue  # the render is kept: read again before anything is paid
            if seed is None and job.unknown:
                job.unknown = False  # its create is looked for before anything is paid
                continue
            job.account = job.client_token = None
            job.unknown = False
            job.drop_render()

    # -- rules: crashes, recovery, zombies ---------------------------------------------
    @rule(data=st.data(), local=st.booleans(), verify=st.booleans())
    def crash(self, data: st.DataObject, local: bool, verify: bool) -> None:
        """An instance dies (its workers and tokens are gone) and a new boot starts.

        ``local``: one machine behind the data-folder lock -- the new boot treats every
        in-flight row as a leftover. Otherwise a shared store: the rows wait for their
        leases to expire and another instance takes them over.
        """
        victim = data.draw(st.sampled_from(self.alive), label="victim")
        self.alive.remove(victim)
        del self.held[victim]
        boot = f"boot-{self.boots}"
        self.boots += 1
        self.alive.append(boot)
        self.held[boot] = set()
        if local and self.jobs:
            lookup = frozenset(data.draw(st.sets(st.sampled_from(sorted(self.accounts))),
                                         label="lookup"))
            self._recover(boot, only_expired=False, lookup=lookup, verify=verify)

    @precondition(lambda self: bool(self.jobs))
    @rule(data=st.data())
    def take_over_expired(self, data: st.DataObject) -> None:
        instance = data.draw(st.sampled_from(self.alive), label="instance")
        lookup = frozenset(data.draw(st.sets(st.sampled_from(sorted(self.accounts))),
                                     label="lookup"))
        self._recover(instance, only_expired=True, lookup=lookup, verify=False)

    @precondition(lambda self: any(self.jobs[self.claim_job[c]].claim != c
                                   for c in self.claim_job))
    @rule(data=st.data(), op=st.sampled_from(sorted(ALLOWED)), keep=st.booleans())
    def stale_write(self, data: st.DataObject, op: str, keep: bool) -> None:
        """A worker that lost its claim (crashed boot, lease taken over, job cancelled or
        finished) writes late: refused, changes nothing, and the ledger says so."""
        stale = sorted(c for c, job_id in self.claim_job.items()
                       if self.jobs[job_id].claim != c)
        claim = data.draw(st.sampled_from(stale), label="stale claim")
        before = {name: _comparable(s.get_job(self.claim_job[claim]))  # type: ignore[arg-type]
                  for name, s in self.stores.items()}
        ok = self._write(None, claim, op, client_token="late", provider_job_id="late",
                         progress=0.9, run_after=self.clock.now(), keep=keep)
        assert ok is False
        for name, store in self.stores.items():
            after = _comparable(store.get_job(self.claim_job[claim]))  # type: ignore[arg-type]
            assert after == before[name], f"{name}: a refused write changed the row"

    # -- invariants --------------------------------------------------------------------
    @invariant()
    def stores_agree_with_the_model_and_each_other(self) -> None:
        if not self.jobs:
            return
        rows: dict[str, dict[int, Job]] = {
            name: {j.id: j for j in store.list_jobs()} for name, store in self.stores.items()}
        for name, jobs in rows.items():
            assert sorted(jobs) == sorted(self.jobs), name
            for job_id, model in self.jobs.items():
                real = jobs[job_id]
                seen = (real.state, real.attempts, real.account, real.lease_owner,
                        real.lease_until, real.client_token, real.provider_job_id,
                        real.run_after)
                want = (model.state, model.attempts, model.account, model.owner,
                        model.lease_until, model.client_token, model.provider_job_id,
                        model.run_after)
                assert seen == want, f"{name}: job {job_id} is {seen}, model {want}"
                token = None if model.claim is None else self.tokens[model.claim][name].token
                assert real.claim_token == token, f"{name}: job {job_id} claim token"
        first = rows["sqlite"]
        for name, other in rows.items():
            for job_id in first:
                assert _comparable(first[job_id]) == _comparable(other[job_id]), (
                    f"{name} drifted apart from sqlite on job {job_id}")

    @invariant()
    def design_invariants_hold(self) -> None:
        if not self.jobs:
            return
        for name, store in self.stores.items():
            jobs = store.list_jobs()
            live: Counter[str] = Counter()
            for job in jobs:
                assert job.attempts <= job.max_attempts, f"{name}: {job.id} over its ceiling"
                if job.state in IN_FLIGHT:
                    live[job.account or "?"] += 1
                    assert job.claim_token and job.lease_owner and job.account, (
                        f"{name}: in-flight job {job.id} without an owner")
                    assert job.lease_until is not None
                else:
                    assert job.claim_token is None and job.lease_owner is None, (
                        f"{name}: job {job.id} in {job.state} still holds a claim")
                if job.state == JobState.COMPLETED:
                    assert job.output_size and job.output_sha256 and job.finished_at, (
                        f"{name}: completed job {job.id} without its file record")
                assert (job.finished_at is not None) == (job.state in FINAL), (
                    f"{name}: job {job.id} {job.state} finished_at={job.finished_at}")
                if job.provider_job_id is not None:
                    assert job.client_token is not None
                if job.provider != "mock":
                    assert job.attempts == 0 and job.account is None, (
                        f"{name}: job {job.id} was claimed by an account of another provider")
            counts = store.counts().live_by_account
            for account, limits in self.accounts.items():
                assert live[account] <= limits.capacity, f"{name}: {account} over its limit"
                assert store.live_count(account) == live[account] == counts.get(account, 0)
            completions = Counter(e.job_id for e in store.ledger() if e.event == "completed")
            for job_id, model in self.jobs.items():
                assert completions[job_id] == model.completions <= 1, (
                    f"{name}: job {job_id} completed {completions[job_id]} times")
            doctor = store.doctor_queries(instance_alive=True)
            assert doctor["completed_twice"] == [] and doctor["over_capacity"] == [], name
            assert doctor["integrity"] == [], name
        ledgers = [Counter((e.event, e.job_id) for e in s.ledger())
                   for s in self.stores.values()]
        assert all(ledger == ledgers[0] for ledger in ledgers[1:]), (
            "the ledgers tell different stories")


StoreMachine.TestCase.settings = settings(
    max_examples=60, stateful_step_count=40, deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
TestStoreStateMachine = StoreMachine.TestCase


class PostgresStoreMachine(StoreMachine):
    """The same program with :class:`PostgresStore` as a third store (one fresh schema per
    example on the session's server; ``dsn`` is set by the test class's fixture)."""

    dsn: str | None = None

    def __init__(self) -> None:
        super().__init__()
        from reelqueue.store.postgres import PostgresStore

        assert self.dsn is not None, "the pg_dsn fixture sets the server first"
        self.schema = pgserver.new_schema_name()
        self.stores["postgresql"] = PostgresStore.open(self.dsn, now=self.clock.now(),
                                                       schema=self.schema,
                                                       server_clock=self.clock)

    def teardown(self) -> None:
        super().teardown()
        assert self.dsn is not None
        pgserver.drop_schema(self.dsn, self.schema)


class TestStoreStateMachineOnPostgres(PostgresStoreMachine.TestCase):  # type: ignore[misc,valid-type]
    # The same budget as TestStoreStateMachine, on this class itself.
    settings = settings(
        max_examples=60, stateful_step_count=40, deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
    )

    @pytest.fixture(autouse=True)
    def _postgres(self, pg_dsn: str) -> None:
        """Skipped (failed when PostgreSQL is required) without a server."""
        PostgresStoreMachine.dsn = pg_dsn
