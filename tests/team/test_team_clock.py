"""One clock decides (issue 19, DESIGN.md invariant 14): three ``reelqueue worker``
processes whose clocks disagree (A 30 s fast, B 30 s slow, C right, set through the tests'
``REELQUEUE_TEST_CLOCK_SKEW``), A and B SIGKILLed at random moments and restarted at once,
one mock provider process counting the peak renders per account key; 60 jobs on limits
2, 3 and 4 with 4 s leases.

Measured before the server's clock decided (each worker's leases from its own clock): B's
leases were expired for everyone the moment it wrote them and A took B's live renders over,
so renders were created twice with no flag and 6 ran at once on an account capped at 4.

Checked: every job completed once with its file (tests/proof's ``check_batch``), no create
beyond one per job without a ``possible_duplicate_charge`` entry, the provider's own peak
per key never above the limit, no lease taken over from an instance still alive (each
takeover in the ledger names a job whose owner had been killed by then), the workers
measured and reported their offsets (printed, warned past 5 s, in the instances
registry), and ``doctor`` passes on the team database. Waits are bounded by progress (a
stall), never by the run's length.
"""

from __future__ import annotations

import hashlib
import random
import time
from collections import Counter
from pathlib import Path

import pytest

from reelqueue.application.team import TEST_CLOCK_SKEW_ENV
from reelqueue.domain.models import LedgerEntry
from reelqueue.store.postgres import Instance, PostgresStore
from tests.proof.harness import MockProcess, check_batch, record_figures, wait_for, write_sheet
from tests.team.file_keyring import write_keys
from tests.team.harness import Worker, bound_keys, read, team_cli

pytestmark = [pytest.mark.slow, pytest.mark.integration]

JOBS = 60
LIMITS = {"acct-2": 2, "acct-3": 3, "acct-4": 4}
KEYS = {name: f"sk-team-clock-{name}-{n}x7" for n, name in enumerate(LIMITS)}
SKEWS = {"A": 30.0, "B": -30.0, "C": 0.0}
KILLS = 6
LEASE = 4.0
STALL = 90.0  # seconds without one more completion: the queue is stuck
WORKER_ARGS = ["--no-progress", "--lease-seconds", str(LEASE), "--retry-base", "0.2",
               "--retry-cap", "2"]


def key_id(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()[:12]


def takeovers_from_the_living(ledger: list[LedgerEntry], instances: list[Instance],
                               deaths: dict[int, float]) -> list[str]:
    """Every takeover (``reattached``, ``reconcile``, ``requeued`` by recovery) of a job
    whose owner was not dead at that moment. ``deaths``: pid -> when it was SIGKILLed (the
    test's clock and the server's are this machine's). The ledger names the owner of a claim
    (``claimed``: detail owner; a takeover's transaction ends with a ``recovery`` row naming
    the instance that took the jobs)."""
    pid_of = {i.id: i.pid for i in instances}
    owner: dict[int, str | None] = {}
    pending: list[LedgerEntry] = []  # a takeover transaction's job entries, until its row
    wrong: list[str] = []
    for entry in ledger:
        if entry.event == "claimed" and entry.job_id is not None:
            owner[entry.job_id] = entry.detail.get("owner")
        elif entry.event in ("reattached", "reconcile") or (
                entry.event == "requeued" and entry.detail.get("by") == "recovery"):
            pending.append(entry)
        elif entry.event == "recovery":
            # Its own jobs (two takeovers' entries may interleave in the ledger).
            taker = entry.detail.get("instance")
            mine = {job_id for kind in ("reattached", "reconcile", "requeued")
                    for job_id in entry.detail.get(kind, [])}
            for taken in [p for p in pending if p.job_id in mine]:
                assert taken.job_id is not None
                was = owner.get(taken.job_id)
                died = deaths.get(pid_of.get(was, -1)) if was else None
                if was is not None and (died is None or died > taken.at + 0.5):
                    wrong.append(f"job {taken.job_id} {taken.event} by {taker} from {was} "
                                 f"(alive at {taken.at:.1f}, died {died})")
                owner[taken.job_id] = taker if taken.event != "requeued" else None
            pending = [p for p in pending if p.job_id not in mine]
    return wrong


def completed(url: str) -> int:
    return int(read(url, "SELECT COUNT(*) FROM jobs WHERE state = 'COMPLETED'")[0][0])


# By client token (the mock's lookup), or by a search of the account's list (no lookup: a
# new render is listed only after up to 0.5 s, and every create's answer is held back
# 0.1-0.8 s, so kills land between a create and its answer): issue 19's team run.
RECONCILE: dict[str, tuple[list[str], list[str]]] = {
    "key": ([], []),
    "search": (["--reconcile", "search", "--settle-seconds", "1"],
               ["--no-lookup", "--list-delay", "0", "0.5", "--hold-create-answer", "0.45"]),
}


@pytest.mark.parametrize("reconcile", list(RECONCILE))
def test_workers_with_wrong_clocks_never_pass_a_limit_or_create_twice(
        tmp_path: Path, team_url: str, reconcile: str) -> None:
    account_options, mock_options = RECONCILE[reconcile]
    rng = random.Random(1919)
    admin = tmp_path / "admin"
    admin.mkdir()
    sheet = tmp_path / "team.csv"
    write_sheet(sheet, JOBS, seed=1919, low=0.2, high=1.2)
    videos = tmp_path / "videos"
    started = time.monotonic()
    kills: list[str] = []
    deaths: dict[int, float] = {}  # pid -> when it was killed
    with MockProcess(tmp_path / "mock", "--seed", "19", *mock_options) as mock:
        for name, capacity in LIMITS.items():
            done = team_cli(admin, team_url, "accounts", "add", name, "--provider", "mock",
                            "--capacity", str(capacity), "--base-url", mock.url,
                            "--no-check", *account_options,
                            keyring_file=admin / "keyring.json",
                            stdin=KEYS[name] + "\n")
            assert done.returncode == 0, done.stdout + done.stderr
        done = team_cli(admin, team_url, "import", str(sheet), "--output-dir", str(videos),
                        "--max-attempts", "10", keyring_file=admin / "keyring.json")
        assert done.returncode == 0, done.stdout + done.stderr
        workers = {name: Worker(name, tmp_path, team_url, *WORKER_ARGS,
                                env={TEST_CLOCK_SKEW_ENV: str(skew)}, videos=videos)
                   for name, skew in SKEWS.items()}
        for worker in workers.values():
            write_keys(worker.keyring_file, bound_keys(team_url, KEYS))
        try:
            for worker in workers.values():
                worker.start()
            for worker in workers.values():
                worker.wait_running()
            last, last_progress = 0, time.monotonic()
            while (done_now := completed(team_url)) < JOBS:
                if done_now > last:
                    last, last_progress = done_now, time.monotonic()
                assert time.monotonic() - last_progress < STALL, (
                    f"no completion for {STALL:.0f} s at {done_now}; kills: {kills}")
                time.sleep(rng.uniform(0.5, 2.5))
                if len(kills) < KILLS:
                    victim = workers[rng.choice("AB")]
                    if victim.alive():
                        assert victim.proc is not None
                        deaths[victim.proc.pid] = time.time()
                        victim.kill()
                        kills.append(f"{victim.name} at {completed(team_url)}")
                        victim.start()
            wait_for(lambda: not read(team_url, "SELECT 1 FROM jobs WHERE state IN "
                                      "('CLAIMED','SUBMITTING','RENDERING','DOWNLOADING') "
                                      "LIMIT 1"), STALL, "no job in flight")
            for worker in workers.values():
                worker.wait_running()  # one may have just been restarted
                assert worker.terminate() == 0, worker.output()[-2000:]
        finally:
            for worker in workers.values():
                worker.stop_quietly()
        counters = mock.counters()
    creates = Counter(counters["creates_by_job_key"])
    peaks = counters["peak_renders_by_key"]
    store = PostgresStore.open(team_url, now=time.time())
    try:
        figures = check_batch(store, videos, creates,  # type: ignore[arg-type]
                              expect_jobs=JOBS, expect_one_create=False)
        ledger = store.ledger()
        instances = store.list_instances()
    finally:
        store.close()
    assert len(kills) == KILLS, f"only {len(kills)} kills before the end: {kills}"
    # The limits, counted by the provider itself, with clocks 60 s apart.
    for name, capacity in LIMITS.items():
        assert 1 <= peaks.get(key_id(KEYS[name]), 0) <= capacity, (name, peaks)
    # Each worker measured its offset and said so; the registry holds it.
    offsets: dict[str, list[float]] = {name: [] for name in SKEWS}
    for name, worker in workers.items():
        out = worker.all_output()
        assert "Clock: this machine's clock is" in out, out[-2000:]
        warned = "warning: that is more than 5 s" in out
        assert warned == (abs(SKEWS[name]) > 5), (name, out[-2000:])
        ids = {line.split()[1] for line in out.splitlines()
               if line.startswith("Worker ") and " running" in line}
        offsets[name] = [i.clock_offset for i in instances
                         if i.id in ids and i.clock_offset is not None]
    for name, skew in SKEWS.items():
        assert offsets[name], f"worker {name}'s offset is not in the registry"
        assert all(abs(o - skew) < 2.0 for o in offsets[name]), (name, offsets[name])
    # No live lease was taken over: every takeover took a killed instance's jobs.
    wrong = takeovers_from_the_living(ledger, instances, deaths)
    assert not wrong, wrong
    by_event = Counter(entry.event for entry in ledger)
    # Nothing paid was thrown away on a takeover: every job completed (check_batch: no
    # FAILED, no PARKED) and no create stayed unknown; an extra create is always flagged.
    assert by_event["reconcile_unresolved"] == 0, by_event
    doctor = team_cli(admin, team_url, "doctor", keyring_file=admin / "keyring.json",
                      videos=videos)
    assert doctor.returncode == 0 and "FAIL" not in doctor.stdout, doctor.stdout
    record_figures(f"team_clock[{reconcile}]", {
        **figures.as_dict(), "kills": kills, "skews": SKEWS,
        "peaks": {n: peaks.get(key_id(k)) for n, k in KEYS.items()},
        "ledger": {k: by_event[k] for k in ("claimed", "reattached", "reconcile", "requeued",
                                            "fenced_out", "possible_duplicate_charge",
                                            "reconciled", "reconciled_absent",
                                            "orphan_render")},
        "short_lease_refusals": sum(1 for e in ledger if e.event == "fenced_out"
                                    and e.detail.get("why")),
        "seconds": round(time.monotonic() - started, 1)})
