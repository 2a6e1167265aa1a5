"""Kill routing at many points (issue 24): routed jobs move between providers, and no kill
loses one, strands one, or makes a render twice.

A SQLite journal holds 200 routed jobs over three provider kinds (``order``, ``cheapest``
and ``spread`` routes of two or three candidates, each priced) and a few unrouted ones,
with five accounts of limits 1-3. Two worker processes (``_route_worker.py``) claim
greedily on every account -- the claim takes a routed job over to its account's provider
in the claim's own transaction -- and play each claim against a simulated provider that
refuses some jobs' parameters (the job is handed to its route's next candidate, or fails
when none is left), sometimes puts an account in trouble (the job goes back and another
provider may take it), and otherwise renders. Every create is appended, fsynced, to the
worker's creates file before the journal records it.

Both workers are SIGKILLed at least 20 times at random moments, each aimed by the
journal's progress (a random share of the open jobs settling), some while a create's
intent is in the journal, some during start-up. After each kill the journal is
recovered as a starting instance recovers a dead one on one machine (``Store.recover``,
every in-flight row a leftover; the provider can be asked by client token, so a create
whose answer died with its process is reconciled by the next instance: found in the
creates files and recorded, or proven absent and the claim goes on), the "user" fixes
some of the accounts in trouble, and two workers start again with new instance ids.
One kill in five takes only the first worker (its claims have short leases): once they
expired, its leftovers are taken over (``only_expired``, as on a shared store) while the
second worker goes on claiming, and the takeover must touch none of the second's jobs.
Then they drain the batch.

Checked over the whole history (the ledger and the creates files): every job ended
COMPLETED, or FAILED with every candidate of its route having refused it; a job's render
was created at most once and recorded once, and a completed job completed from that one
render on the provider and account that created it; every take-over at claim is the
ledger row just before that job's ``claimed`` row on the same account; a claim is always
on the job's provider of the moment; no job moved once a create of it existed (a
refusal's intent made nothing; a take-over found no client token and no render); no
account ever ran more than its limit (read at every kill and all along); every intent
spent the price of the provider it was sent to; ``doctor``'s queries find nothing.

The spend entries of intents that a provider refused, or that reconciliation proved
absent, stay (design-notes: reservation without refunds): the figures show spent beside
rendered USD.
"""

from __future__ import annotations

import functools
import random
import subprocess
import sys
import time
import uuid
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any

import pytest

from reelqueue.domain.models import AccountSpec, BatchSpec, FileCheck, Job, JobSpec
from reelqueue.domain.routes import Candidate, Route, RoutePolicy, ranked
from reelqueue.domain.states import AccountStatus, JobState
from reelqueue.store.base import RecoverParams
from reelqueue.store.spend import price_of
from reelqueue.store.sqlite import SqliteStore
from tests.proof._route_worker import read_creates, refuses
from tests.proof.harness import (
    PROOF_DIR,
    child_env,
    integrity_ok,
    kill_process,
    record_figures,
    wait_for,
)

pytestmark = [pytest.mark.slow, pytest.mark.integration]

ROUTED = 200
PLAIN = 10
KILLS = 32  # at least 20 must land; a few spare in case the batch drains early
MIN_KILLS = 20
RESERVE = 120
"""Until MIN_KILLS kills have landed, the batch is topped up with this many routed jobs
whenever fewer are open (a user adding rows to a running batch): a kill is aimed by
progress, but the waits between kills (a worker's start, leases running out while the
other worker goes on) let the workers settle as many jobs as the machine is fast, and on
a fast one the first 210 drained after 18 kills."""
WORKERS = 2
TROUBLE = 0.04  # per claim played: the account is in trouble
ACCOUNTS = {"pa-1": ("pa", 1), "pa-2": ("pa", 3), "pb-1": ("pb", 2), "pb-2": ("pb", 1),
            "pc-1": ("pc", 2)}
KIND_OF = {name: kind for name, (kind, _) in ACCOUNTS.items()}
CAPACITY = {name: capacity for name, (_, capacity) in ACCOUNTS.items()}
KINDS = ("pa", "pb", "pc")
PRICE = {"pa": 0.3, "pb": 0.5, "pc": 0.8}
SHORT_LEASE = 0.25  # slot 0's claims: taken over 0.25 s after it is killed alone
LONG_LEASE = 600.0
FIX_AFTER = 0.3  # seconds an account stays in trouble before the "user" fixes it
WAIT = 60.0  # for one kill's progress: generous, on a loaded 2-core machine


def _specs(rng: random.Random, first: int = 0, routed: int = ROUTED,
           plain: int = PLAIN) -> list[JobSpec]:
    specs: list[JobSpec] = []
    policies = (RoutePolicy.ORDER, RoutePolicy.CHEAPEST, RoutePolicy.ORDER,
                RoutePolicy.CHEAPEST, RoutePolicy.SPREAD)
    for i in range(first, first + routed):
        kinds = rng.sample(KINDS, rng.choice((2, 3, 3)))
        if "pa" in kinds and rng.random() < 0.6:  # most prefer pa: the others take over
            kinds.remove("pa")
            kinds.insert(0, "pa")
        given = [Candidate(k, {"model": f"{k}-model", "duration": 5},
                           round(PRICE[k] + rng.uniform(-0.15, 0.15), 2)) for k in kinds]
        policy = policies[i % len(policies)]
        route = Route(policy, ranked(given, policy))
        best = route.best()
        assert best is not None
        specs.append(JobSpec(job_key=f"r-{i}", prompt=f"routed {i}", provider=best.provider,
                             output_path=f"out/r{i}.mp4", params=dict(best.params),
                             row_number=i + 2, name=f"r{i}",
                             metadata={"price": best.price}, route=route))
    for i in range(plain):
        kind = KINDS[i % len(KINDS)]
        specs.append(JobSpec(job_key=f"p-{i}", prompt=f"plain {i}", provider=kind,
                             output_path=f"out/p{i}.mp4",
                             params={"model": f"{kind}-model", "duration": 5},
                             row_number=ROUTED + i + 2, name=f"p{i}",
                             metadata={"price": PRICE[kind]}))
    return specs


class Workers:
    """The worker processes, one per slot, each with its log file; killed by pid.

    Slot 0 claims with a short lease (:data:`SHORT_LEASE`): a kill of it alone is
    followed by a takeover of its expired leases while slot 1 (long leases) goes on."""

    def __init__(self, folder: Path, journal: Path) -> None:
        self.folder, self.journal = folder, journal
        self.procs: list[subprocess.Popen[bytes] | None] = [None] * WORKERS
        self.logs: list[tuple[Path, IO[bytes]]] = []
        self.ids: list[str] = [""] * WORKERS

    def start(self, slot: int, instance: str, seed: int, trouble: float) -> None:
        path = self.folder / f"worker-{instance}.log"
        log = path.open("wb")
        self.logs.append((path, log))
        self.ids[slot] = instance
        lease = SHORT_LEASE if slot == 0 else LONG_LEASE
        self.procs[slot] = subprocess.Popen(
            [sys.executable, str(PROOF_DIR / "_route_worker.py"), str(self.journal), instance,
             str(self.folder / "creates"), str(seed), str(trouble), str(lease)],
            stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
            env=child_env(), start_new_session=True)

    def output(self) -> str:
        return "\n".join(path.read_text(errors="replace")[-3000:]
                         for path, _ in self.logs[-2 * WORKERS:])

    def check(self) -> bool:
        """Whether any is still running; a worker that ended must have ended well."""
        codes = [p.poll() for p in self.procs if p is not None]
        for code in codes:
            assert code in (None, 0), f"a worker failed:\n{self.output()}"
        return any(code is None for code in codes)

    def kill(self, slot: int | None = None) -> None:
        for n, proc in enumerate(self.procs):
            if slot is None or n == slot:
                kill_process(proc)
                self.procs[n] = None

    def close(self) -> None:
        self.kill()
        for _, log in self.logs:
            log.close()


class Watch:
    """The test's own connection: reads progress and live counts while workers run, and
    plays the user who fixes an account in trouble after a while."""

    def __init__(self, store: SqliteStore) -> None:
        self.store = store
        self.troubled: dict[str, float] = {}
        self.peak: Counter[str] = Counter()
        self.fixed = 0

    def live_ok(self) -> None:
        live = self.store.counts().live_by_account
        for name, n in live.items():
            self.peak[name] = max(self.peak[name], n)
            assert n <= CAPACITY[name], f"{name} runs {n} renders, limit {CAPACITY[name]}"

    def fix_accounts(self, older_than: float) -> None:
        now = time.monotonic()
        for account in self.store.list_accounts():
            if account.status == AccountStatus.READY:
                self.troubled.pop(account.name, None)
                continue
            since = self.troubled.setdefault(account.name, now)
            if now - since >= older_than:
                self.store.set_account_status(account.name, AccountStatus.READY, time.time(),
                                              detail="fixed by the user (proof)")
                self.troubled.pop(account.name, None)
                self.fixed += 1

    def seq(self) -> int:
        last = self.store.ledger(limit=1)
        return last[-1].seq if last else 0

    def settled(self) -> int:
        by_state = self.store.counts().by_state
        return by_state.get(JobState.COMPLETED.value, 0) + by_state.get(
            JobState.FAILED.value, 0)

    def open_jobs(self) -> int:
        by_state = self.store.counts().by_state
        return sum(n for state, n in by_state.items()
                   if state not in (JobState.COMPLETED.value, JobState.FAILED.value))

    def until(self, reached: Callable[[], Any], workers: Workers, what: str,
              interval: float = 0.005) -> Any:
        """Poll ``reached`` (checking the limits and fixing accounts as it goes) until it
        answers something truthy (returned), or the workers ended (None)."""
        def step() -> Any:
            self.live_ok()
            self.fix_accounts(FIX_AFTER)
            return reached() or (not workers.check() and "ended")

        got = wait_for(step, WAIT, what, interval=interval)
        return None if got == "ended" else got


def _kill_moment(watch: Watch, workers: Workers, rng: random.Random, n: int) -> str:
    """Wait for a random moment; returns where it was aimed. Every fifth kill lands in
    start-up (interpreter start, the recovered jobs' reconciliation: a random fraction of a
    second, cut short once three jobs settle); the others wait for
    a random share of the open jobs to settle (spreading the kills over the batch), then
    two in five wait for a create's intent to be in the journal and kill at once (given
    up after a few more settle), the others a random few milliseconds more."""
    if n % 5 == 4:
        end, start = time.monotonic() + rng.uniform(0.05, 0.8), watch.settled()
        watch.until(lambda: time.monotonic() >= end or watch.settled() > start + 2,
                    workers, "start-up")
        return "start-up"
    share = watch.open_jobs() / (KILLS - n + 6)
    target = watch.settled() + rng.randint(1, max(1, round(2 * share)))
    watch.until(lambda: watch.settled() >= target, workers, f"{target} jobs settled")
    if n % 5 in (1, 3):
        def intent() -> str | None:
            if watch.store.counts().by_state.get(JobState.SUBMITTING.value, 0):
                return "submitting"
            return "submitting (missed)" if watch.settled() >= target + 3 else None

        return str(watch.until(intent, workers, "a create's intent", interval=0.001))
    time.sleep(rng.uniform(0.0, 0.03))
    return "running"


def _recover(store: SqliteStore, instance: str, *, only_expired: bool = False,
             held: set[int] | None = None) -> dict[str, int]:
    """What an instance does with a dead one's leftovers. On one machine (the data-folder
    lock: every in-flight row is a leftover) at start-up; with ``only_expired`` as a
    takeover of expired leases while another instance runs (``held``: the dead one's
    jobs, the only ones it may touch). The simulated provider can be asked by client
    token. ``max_crashes`` is high: every crash here is the test's."""
    names = frozenset(ACCOUNTS)
    report = store.recover(RecoverParams(
        instance_id=instance, now=time.time(), lease_seconds=SHORT_LEASE,  # slot 0's
        only_expired=only_expired, check_output=lambda job: FileCheck(False),
        lookup_accounts=names, token_accounts=names, max_crashes=10_000))
    assert not report.unknown_submissions and not report.failed, report
    touched = set(report.requeued) | set(report.reattached) | set(report.reconcile)
    if held is not None:
        assert touched <= held, f"took over live leases: {touched - held}"
    return {"requeued": len(report.requeued), "reattached": len(report.reattached),
            "reconcile": len(report.reconcile),
            "taken_over_expired": len(touched) if only_expired else 0}


def _past(moment: float) -> bool:
    return time.time() >= moment


def _new_ids() -> list[str]:
    return [f"w{uuid.uuid4().hex[:10]}" for _ in range(WORKERS)]


def test_kill_routing_many_times_then_drain(tmp_path: Path) -> None:
    seed = 2400
    rng = random.Random(seed)
    path = tmp_path / "journal.sqlite3"
    (tmp_path / "creates").mkdir()
    started = time.monotonic()
    setup = SqliteStore.open(path, now=time.time())
    try:
        batch = setup.create_batch(BatchSpec("routes", "routes.csv", "out"), time.time())
        specs = _specs(rng)
        setup.add_jobs(batch.id, specs, time.time())
        for name, (kind, capacity) in ACCOUNTS.items():
            setup.add_account(AccountSpec(name, kind, capacity), time.time())
    finally:
        setup.close()
    kills: list[dict[str, Any]] = []
    recovered: Counter[str] = Counter()
    workers = Workers(tmp_path, path)
    store = SqliteStore.open(path, now=time.time())
    try:
        watch = Watch(store)
        for slot, instance in enumerate(_new_ids()):
            workers.start(slot, instance, slot, TROUBLE)
        for n in range(KILLS):
            if len(kills) < MIN_KILLS and watch.open_jobs() < RESERVE:
                more = _specs(rng, first=len(specs), routed=RESERVE, plain=0)
                store.add_jobs(batch.id, more, time.time())
                specs.extend(more)
            aimed = _kill_moment(watch, workers, rng, n)
            if not workers.check():
                break  # drained before the kill
            alone = n % 5 == 2  # slot 0 alone; its expired leases are taken over
            workers.kill(0 if alone else None)
            jobs = store.list_jobs()
            watch.live_ok()
            in_flight = Counter(j.state.value for j in jobs
                                if j.state in (JobState.CLAIMED, JobState.SUBMITTING,
                                               JobState.RENDERING, JobState.DOWNLOADING))
            ids = _new_ids()
            if alone:
                dead = workers.ids[0]
                held = {j.id for j in jobs if j.lease_owner == dead}
                expired = time.time() + SHORT_LEASE + 0.05
                watch.until(functools.partial(_past, expired), workers, "the leases to expire")
                recovered.update(_recover(store, ids[0], only_expired=True, held=held))
                aimed += " (one worker)"
            else:
                recovered.update(_recover(store, ids[0]))
            watch.fix_accounts(0.0 if rng.random() < 0.5 else FIX_AFTER)
            kills.append({"aimed": aimed, "in_flight": dict(in_flight),
                          "settled": sum(j.state in (JobState.COMPLETED, JobState.FAILED)
                                         for j in jobs)})
            for slot, instance in enumerate(ids):
                if slot == 0 or not alone:
                    workers.start(slot, instance, 10 * (n + 1) + slot, TROUBLE)
        assert len(kills) >= MIN_KILLS, (
            f"only {len(kills)} kills landed before the drain: {[k['settled'] for k in kills]}")
        # The drain: the user fixed every account; no more trouble.
        workers.kill()
        recovered.update(_recover(store, "drain-0"))
        watch.fix_accounts(0.0)
        for slot, instance in enumerate(["drain-0", "drain-1"]):
            workers.start(slot, instance, 990 + slot, 0.0)
        deadline = time.monotonic() + 120
        while workers.check():
            assert time.monotonic() < deadline, f"no drain:\n{workers.output()}"
            watch.live_ok()
            time.sleep(0.01)
        total = time.monotonic() - started
        figures = _check_history(store, specs, tmp_path / "creates")
        problems = {k: v for k, v in store.doctor_queries(instance_alive=False).items() if v}
        assert not problems, problems
    finally:
        workers.close()
        store.close()
    integrity_ok(path)
    phases: Counter[str] = Counter()
    for kill in kills:
        phases.update(kill["in_flight"])
    record_figures("kill_routing", {
        "seed": seed, "jobs": len(specs), "kills": len(kills),
        "kills_aimed": dict(Counter(k["aimed"] for k in kills)),
        "in_flight_at_kills_by_state": dict(phases),
        "settled_at_each_kill": [k["settled"] for k in kills],
        "recovery": dict(recovered), "accounts_fixed": watch.fixed,
        "peak_live": dict(watch.peak), **figures, "total_s": round(total, 1)})
    assert phases["SUBMITTING"] > 0, "no kill landed inside a submit window"
    assert figures["moves_at_claim"] > 0 and figures["hand_overs_at_refusal"] > 0
    assert recovered["reconcile"] > 0



def _check_history(store: SqliteStore, specs: list[JobSpec], creates_dir: Path,
                   ) -> dict[str, Any]:
    """The invariants over the whole ledger and the creates files (module docstring).

    The ledger is walked in order, keeping per job what the journal's row held: its
    provider of the moment, the client token of a pending intent and its render."""
    jobs: dict[int, Job] = {j.id: j for j in store.list_jobs()}
    assert len(jobs) == len(specs)
    spec_of = {s.job_key: s for s in specs}
    creates = read_creates(creates_dir)
    created_tokens = {c["client_token"] for c in creates}
    creates_of: dict[int, list[dict[str, Any]]] = {}
    for c in creates:
        creates_of.setdefault(int(c["job"]), []).append(c)
    provider = {j.id: spec_of[j.job_key].provider for j in jobs.values()}
    price = {j.id: spec_of[j.job_key].metadata["price"] for j in jobs.values()}
    spent = 0.0
    pending: dict[int, str | None] = dict.fromkeys(jobs)
    render: dict[int, str | None] = dict.fromkeys(jobs)
    submitted: Counter[int] = Counter()
    refusals: Counter[int] = Counter()
    moves: Counter[int] = Counter()
    found = 0
    ledger = store.ledger()
    events = Counter(e.event for e in ledger)
    for i, e in enumerate(ledger):
        if e.job_id is None:
            continue
        j = e.job_id
        where = f"ledger #{e.seq} {e.event} job {j} {e.detail}"
        if e.event == "claimed":
            assert e.account is not None and KIND_OF[e.account] == provider[j], (
                f"{where}: claimed on {e.account} while the job was on {provider[j]}")
        elif e.event == "handed_over":
            assert render[j] is None, f"{where}: moved with a render {render[j]}"
            assert e.detail["from"] == provider[j], where
            if e.detail["at"] == "claim":
                after = ledger[i + 1] if i + 1 < len(ledger) else None
                assert (after is not None and after.seq == e.seq + 1
                        and after.event == "claimed" and after.job_id == j
                        and after.account == e.account), (
                    f"{where}: the take-over is not followed by its claim: {after}")
                assert pending[j] is None, f"{where}: taken over with intent {pending[j]}"
                assert e.account is not None and KIND_OF[e.account] == e.detail["to"], where
                moves[j] += 1
            else:
                assert e.detail["at"] == "refusal", where
                assert pending[j] is not None, f"{where}: a refusal without its intent"
                assert pending[j] not in created_tokens, (
                    f"{where}: handed over although its create {pending[j]} was made")
                assert refuses(jobs[j].job_key, provider[j]), where
                refusals[j] += 1
                pending[j] = None
            provider[j] = str(e.detail["to"])
            price[j] = e.detail["price"]
        elif e.event == "submitting":
            assert render[j] is None, f"{where}: a second intent after render {render[j]}"
            pending[j] = str(e.detail["client_token"])
        elif e.event == "submitted":
            submitted[j] += 1
            assert render[j] is None and submitted[j] == 1, f"{where}: a second render"
            (made,) = [c for c in creates_of.get(j, []) if c["render"]
                       == e.detail["provider_job_id"]]
            assert made["client_token"] == pending[j] and made["kind"] == provider[j], (
                where, made)
            assert made["account"] == e.account, (where, made)
            render[j] = str(e.detail["provider_job_id"])
            found += made["claim"] != e.claim_token  # recorded by a later instance
        elif e.event == "reconciled_absent":
            assert pending[j] is not None and pending[j] not in created_tokens, where
            pending[j] = None
        elif e.event in ("released", "failed"):
            if render[j] is None:
                pending[j] = None
        elif e.event == "requeued":
            assert pending[j] is None and render[j] is None, (
                f"{where}: requeued by recovery with intent {pending[j]} render {render[j]}")
        elif e.event == "spend":
            before = ledger[i - 1]
            assert before.event == "submitting" and before.job_id == j, where
            # The intent spends the price of the provider it is sent to (after moves).
            assert e.detail["usd"] == pytest.approx(price[j]), (where, price[j])
            spent += float(e.detail["usd"])
        elif e.event == "completed":
            assert render[j] is not None, f"{where}: completed without a render"
        elif e.event == "parked":
            raise AssertionError(f"{where}: parked")
    completed = failed = 0
    for j, job in jobs.items():
        spec = spec_of[job.job_key]
        listed = spec.route.providers() if spec.route else [spec.provider]
        all_refuse = all(refuses(job.job_key, k) for k in listed)
        mine = creates_of.get(j, [])
        assert len(mine) <= 1, f"job {j} was created {len(mine)} times: {mine}"
        assert job.provider == provider[j], (job, provider[j])
        if job.state == JobState.COMPLETED:
            completed += 1
            assert not all_refuse and not refuses(job.job_key, job.provider), job
            (made,) = mine
            assert submitted[j] == 1 and made["render"] == job.provider_job_id, (job, made)
            assert made["kind"] == job.provider and made["account"] == job.account, job
        else:
            assert job.state == JobState.FAILED, f"job {j} ended {job.state}"
            failed += 1
            assert all_refuse and not mine and submitted[j] == 0, job
            assert job.error_label == "invalid input", job
            assert refusals[j] == len(listed) - 1, (job, refusals[j], listed)
            if job.route is not None:
                assert [c.provider for c in job.route.usable()] == [job.provider], job
    assert len(creates) == completed, "a render was created that no job completed from"
    rendered = sum(price_of(j.metadata) or 0.0 for j in jobs.values()
                   if j.state == JobState.COMPLETED)
    return {"spent_usd": round(spent, 2), "rendered_usd": round(rendered, 2),
            "completed": completed, "failed_no_candidate_left": failed,
            "creates": len(creates),
            "moves_at_claim": sum(moves.values()), "jobs_moved_at_claim": len(moves),
            "hand_overs_at_refusal": sum(refusals.values()),
            "jobs_handed_over": len(refusals),
            "reconciled_found": found,
            "reconciled_absent": events["reconciled_absent"],
            "reconcile_marked": events["reconcile"], "reattached": events["reattached"],
            "released": events["released"], "requeued_by_recovery": events["requeued"],
            "fenced_out": events["fenced_out"], "claims": events["claimed"],
            "account_troubles": sum(1 for e in ledger if e.event == "account_status"
                                    and e.detail.get("status") != "ready")}
