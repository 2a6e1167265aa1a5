"""The success checklist of seeds/001, one test each (issue 3, item 3).

Real processes wherever the item is about a process dying: the runner is the real
``reelqueue run`` (SIGKILLed), the mock provider its own process. Where a window is too
small to hit by chance (a kill after the video is saved but before its completion is
recorded; a job that crashes its worker every time), the runner is started through
``_hooked_runner.py``, which installs one fault hook and then runs the real command line.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import random
import re
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import AsyncIterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import httpx2
import pytest

from reelqueue.domain.backoff import BackoffPolicy
from reelqueue.domain.clock import FakeClock
from reelqueue.domain.models import AccountSpec, BatchSpec, JobSpec
from reelqueue.domain.states import FINAL, IN_FLIGHT, JobState
from reelqueue.engine.config import EngineConfig
from reelqueue.engine.engine import Engine
from reelqueue.engine.outputs import check_output
from reelqueue.mockprovider.options import MockOptions
from reelqueue.mockprovider.server import MockProviderServer
from reelqueue.providers.base import RemoteStatus
from reelqueue.providers.builtin import builtin_registry
from reelqueue.providers.httpx_session import httpx_client_of
from reelqueue.providers.mock import MockProvider
from reelqueue.store.base import ClaimParams, RecoverParams
from reelqueue.store.sqlite import SqliteStore
from tests.engine import user_commands
from tests.proof.harness import (
    PROOF_DIR,
    MockProcess,
    Runner,
    add_account,
    check_batch,
    child_env,
    cli,
    doctor_ok,
    events_by_job,
    integrity_ok,
    journal,
    kill_process,
    record_figures,
    wait_for,
    write_prompts,
)

pytestmark = pytest.mark.integration

RUN = ["--no-progress", "--retry-base", "0.1", "--retry-cap", "0.5"]


def _setup(tmp_path: Path, url: str, prompts: list[str],
           accounts: dict[str, int] | None = None) -> tuple[Path, Path, Path]:
    data, videos, sheet = tmp_path / "data", tmp_path / "videos", tmp_path / "sheet.csv"
    write_prompts(sheet, prompts)
    for name, capacity in (accounts or {"acct": 4}).items():
        add_account(data, name, url, capacity)
    return data, videos, sheet


def _finish(data: Path, videos: Path, args: list[str], log: Path) -> str:
    """Run ``reelqueue run`` to its end; returns its output (exit code 0 asserted)."""
    runner = Runner(data, videos, args, log)
    try:
        code = runner.wait()
    finally:
        runner.kill()
    out = runner.output()
    assert code == 0, out
    return out


# -- 1. kill a worker mid-job ----------------------------------------------------------------
@pytest.mark.parametrize("phase", [JobState.RENDERING, JobState.DOWNLOADING])
def test_kill_a_worker_mid_job(tmp_path: Path, phase: JobState) -> None:
    """SIGKILL while renders run (or while videos stream to disk): after a restart every
    job ends completed or failed, each with one whole file and one create."""
    if phase == JobState.RENDERING:
        prompts = [f"mid-render {i} [[mock:render_seconds=2.0]]" for i in range(6)]
    else:  # six 1 KiB chunks, 0.4 s apart: a two-second download window
        prompts = [f"mid-download {i} [[mock:render_seconds=0.2,slow_download=0.4]]"
                   for i in range(4)]
    with MockProcess(tmp_path / "mock") as mock:
        data, videos, sheet = _setup(tmp_path, mock.url, prompts)
        first = Runner(data, videos, [str(sheet), *RUN], tmp_path / "run-1.log")
        try:
            with journal(data) as reader:
                def caught() -> list[int]:
                    assert first.alive(), first.output()
                    hit = [j.id for j in reader.list_jobs()
                           if j.state == phase and j.provider_job_id]
                    if phase == JobState.DOWNLOADING and not list(videos.rglob("*.part")):
                        return []
                    return hit

                wait_for(caught, 60, f"a job in {phase}")
                first.kill()
                at_kill = {j.id: j for j in reader.list_jobs()}
        finally:
            first.kill()
        victims = {i for i, j in at_kill.items() if j.state == phase}
        parts_at_kill = list(videos.rglob("*.part"))
        if phase == JobState.DOWNLOADING:
            assert parts_at_kill, "the dead download left its partial file"
        out = _finish(data, videos, [str(sheet), *RUN], tmp_path / "run-2.log")
        assert re.search(r"Recovery: .*\d+ renders? reattached", out), out
        creates = mock.creates_by_key()
    with journal(data) as store:
        figures = check_batch(store, videos, creates, expect_jobs=len(prompts),
                              allow_failed=True)
        per_job = events_by_job(store.ledger())
        jobs = {j.id: j for j in store.list_jobs()}
    assert not any(p.exists() for p in parts_at_kill)
    for job_id in victims:
        assert jobs[job_id].state in (JobState.COMPLETED, JobState.FAILED)
        assert "reattached" in [e.event for e in per_job[job_id]]
        assert creates[jobs[job_id].job_key] == 1
    assert figures.by_state == {"COMPLETED": len(prompts)}
    doctor_ok(data, videos)


# -- 2. kill after the result is saved, before the coordinator is told ------------------------
def test_kill_after_the_video_is_saved_before_completion_is_recorded(tmp_path: Path) -> None:
    prompts = [f"saved {i} [[mock:render_seconds=0.3]]" for i in range(3)]
    with MockProcess(tmp_path / "mock") as mock:
        data, videos, sheet = _setup(tmp_path, mock.url, prompts, {"acct": 1})
        hooked = Runner(data, videos, [str(sheet), *RUN], tmp_path / "run-1.log",
                        hook="kill-after-save")
        try:
            code = hooked.wait(120)
        finally:
            hooked.kill()
        assert code == -signal.SIGKILL, hooked.output()
        assert "hook: saved" in hooked.output()
        with journal(data) as reader:
            saved = [j for j in reader.list_jobs() if j.state == JobState.DOWNLOADING]
        assert len(saved) == 1
        job = saved[0]
        video = videos / job.output_path  # relative to the videos folder (issue 23)
        # On disk under the name its download recorded, with the hash recorded before the
        # rename (issue 22), not completed.
        assert video.is_file() and job.output_part is not None
        assert job.output_sha256 == hashlib.sha256(video.read_bytes()).hexdigest()
        inode = video.stat().st_ino, video.stat().st_mtime_ns
        out = _finish(data, videos, [str(sheet), *RUN], tmp_path / "run-2.log")
        assert re.search(r"Recovery: 1 finished videos? found on disk", out), out
        counters = mock.counters()
    creates = Counter(counters["creates_by_job_key"])
    with journal(data) as store:
        check_batch(store, videos, creates, expect_jobs=len(prompts))
        after = store.get_job(job.id)
        completions = [e for e in store.ledger(job.id) if e.event == "completed"]
    assert after is not None and after.state == JobState.COMPLETED
    assert len(completions) == 1 and completions[0].detail["source"] == "recovery"
    assert creates[job.job_key] == 1  # the retry did not render it again...
    assert counters["renders_total"] == len(prompts)
    assert (video.stat().st_ino, video.stat().st_mtime_ns) == inode  # ...nor download it
    doctor_ok(data, videos)


# -- 3. slow worker: finishes after its lease was taken over ---------------------------------
FAST = dict(retry_backoff=BackoffPolicy(0.05, 0.2), poll_backoff=BackoffPolicy(0.05, 0.2),
            poll_min_seconds=0.01, http_timeout_seconds=10.0)


async def _until(predicate: Any, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        await asyncio.sleep(0.02)


@pytest.mark.timeout(120)
async def test_slow_worker_finishes_after_its_lease_was_taken_over(
    tmp_path: Path,
) -> None:
    """Two engines (two instances) on one journal file, shared-store mode. Instance A
    stalls mid-download and stops heartbeating; its 1 s lease runs out; instance B takes
    the job over, reattaches the render and completes it. Then A wakes up and finishes:
    its completion is refused (``fenced_out``), and there is still one result."""
    journal_path = tmp_path / "journal.sqlite3"
    out = tmp_path / "out"
    gate, a_downloading = asyncio.Event(), asyncio.Event()
    with MockProviderServer(MockOptions(render_seconds_min=0.2, render_seconds_max=0.2)
                            ) as server:
        store_a = SqliteStore.open(journal_path, now=time.time())
        batch = store_a.create_batch(BatchSpec("slow", "slow.csv", str(out)), time.time())
        store_a.add_jobs(batch.id, [JobSpec("slow-1", "slow worker [[mock:render_seconds=0.2]]",
                                            "mock", str(out / "slow.mp4"))], time.time())
        store_a.add_account(AccountSpec("acct", "mock", 1, server.url), time.time())
        store_b = SqliteStore.open(journal_path, now=time.time())
        client_a = httpx2.AsyncClient(timeout=10)

        class Stalled(MockProvider):
            async def download(self, provider_job_id: str, status: RemoteStatus
                               ) -> AsyncIterator[bytes]:
                a_downloading.set()
                await gate.wait()  # a long GC pause, a laptop lid closed...
                async for chunk in super().download(provider_job_id, status):
                    yield chunk

        info = builtin_registry().get("mock")
        providers = builtin_registry().with_provider(replace(
            info, factory=lambda session, config: (
                Stalled if httpx_client_of(session) is client_a
                else MockProvider)(httpx_client_of(session), config)))
        engine_b = Engine(store_b, instance_id="instance-b", providers=providers,
                          config=EngineConfig(
            shared_store=True, lease_seconds=10.0, heartbeat_seconds=0.1, **FAST))
        engine_a = Engine(store_a, instance_id="instance-a", http_client=client_a,
                          providers=providers,
                          config=EngineConfig(shared_store=True, lease_seconds=1.0,
                                              heartbeat_seconds=0.2, **FAST))
        try:
            await engine_b.start(paused=True)  # B claims nothing new: it only takes over
            await engine_a.start()
            await asyncio.wait_for(a_downloading.wait(), 30)
            # A freezes: its heartbeat stops with its worker (the worker is parked at the
            # gate); its 1 s lease runs out.
            heartbeat = engine_a._heartbeat_task
            assert heartbeat is not None
            heartbeat.cancel()
            token_a = store_a.get_job(1).claim_token  # type: ignore[union-attr]
            await _until(lambda: store_b.get_job(1).state == JobState.COMPLETED,  # type: ignore[union-attr]
                         30, "instance B to take over and complete the job")
            gate.set()  # A wakes up and finishes its download
            await _until(lambda: engine_a.active_workers == 0, 30, "A's worker to end")
        finally:
            gate.set()
            await engine_a.stop()
            await engine_b.stop()
            await client_a.aclose()
            engine_a.close_store()
            engine_b.close_store()
        creates = server.counters()["creates_by_job_key"]
    job = store_a.get_job(1)
    ledger = store_a.ledger(1)
    store_a.close()
    store_b.close()
    assert job is not None and job.state == JobState.COMPLETED
    assert [e.event for e in ledger].count("completed") == 1
    fenced = [e for e in ledger if e.event == "fenced_out"]
    # A's first write after it wakes, the hash of its download (issue 22), is refused: it
    # never gives its file the output name, and never gets to its completion.
    assert any(e.claim_token == token_a and e.detail["write"] == "record_download"
               for e in fenced), [(e.event, e.claim_token, e.detail) for e in ledger]
    assert not any(e.claim_token == token_a and e.event in ("downloaded", "completed")
                   for e in ledger)
    taken = [e for e in ledger if e.event == "reattached"]
    assert len(taken) == 1 and taken[0].claim_token != token_a
    assert creates == {"slow-1": 1}
    check = check_output(job)
    assert check.size == job.output_size and check.sha256 == job.output_sha256
    assert sorted(p.name for p in out.iterdir()) == ["slow.mp4"]  # one result, no .part


def test_stale_writes_after_a_takeover_are_refused_store_level(tmp_path: Path) -> None:
    """The same rule through the store API alone, on a fake clock (no waiting)."""
    clock = FakeClock()
    path = tmp_path / "journal.sqlite3"
    store_a = SqliteStore.open(path, now=clock.now())
    store_b = SqliteStore.open(path, now=clock.now())
    batch = store_a.create_batch(BatchSpec("b", "s.csv", str(tmp_path)), clock.now())
    store_a.add_jobs(batch.id, [JobSpec("k", "p", "mock", str(tmp_path / "k.mp4"))],
                     clock.now())
    store_a.add_account(AccountSpec("acct", "mock", 1), clock.now())
    claim = store_a.claim_next_job(ClaimParams("acct", "a", clock.now(), 30.0))
    assert claim is not None
    assert store_a.mark_submitting(claim.token, "tok", clock.now())
    assert store_a.record_submitted(claim.token, "render-1", clock.now())
    clock.advance(31.0)  # A is stuck and sent no heartbeat: its lease has run out
    report = store_b.recover(RecoverParams("b", clock.now(), 30.0, only_expired=True,
                                           check_output=check_output))
    assert report.reattached == [claim.job.id]
    taken = store_b.get_job(claim.job.id)
    assert taken is not None and taken.lease_owner == "b"
    token_b = replace(claim.token, token=taken.claim_token)
    assert store_b.mark_downloading(token_b, clock.now())
    assert store_b.mark_completed(token_b, size=3, sha256="b" * 64, cost=None, now=clock.now())
    # A wakes up: every write it tries is refused and logged.
    assert not store_a.renew_leases("a", clock.now(), 30.0)
    assert not store_a.mark_downloading(claim.token, clock.now())
    assert not store_a.mark_completed(claim.token, size=3, sha256="a" * 64, cost=None,
                                      now=clock.now())
    job = store_a.get_job(claim.job.id)
    assert job is not None and job.output_sha256 == "b" * 64
    events = [(e.event, e.detail.get("write")) for e in store_a.ledger(claim.job.id)]
    assert events.count(("completed", None)) == 1
    assert ("fenced_out", "mark_downloading") in events
    assert ("fenced_out", "mark_completed") in events
    store_a.close()
    store_b.close()


# -- 4. kill and restart the coordinator: all states correct ---------------------------------
@pytest.mark.slow
def test_kill_and_restart_mid_batch_keeps_every_state_correct(tmp_path: Path) -> None:
    rng = random.Random(4)
    kinds = (["plain"] * 14 + ["policy"] * 3 + ["fails-once"] * 2 + ["always-500"] * 2)
    directive = {"plain": "", "policy": ",content_policy", "fails-once": ",render_fail*1",
                 "always-500": ",server_error"}
    prompts = [f"{kind} {i} [[mock:render_seconds={rng.uniform(0.5, 1.5):.2f}"
               f"{directive[kind]}]]" for i, kind in enumerate(kinds)]
    with MockProcess(tmp_path / "mock") as mock:
        data, videos, sheet = _setup(tmp_path, mock.url, prompts, {"a": 2, "b": 2})
        first = Runner(data, videos, [str(sheet), *RUN], tmp_path / "run-1.log")
        try:
            with journal(data) as reader:
                def mid_batch() -> bool:
                    assert first.alive(), first.output()
                    by = reader.counts().by_state
                    return (sum(by.get(s.value, 0) for s in FINAL) >= 6
                            and sum(by.get(s.value, 0) for s in IN_FLIGHT) >= 2)

                wait_for(mid_batch, 120, "a batch half done")
                first.kill()
                at_kill = {j.id: j for j in reader.list_jobs()}
                seq_at_kill = max(e.seq for e in reader.ledger())
        finally:
            first.kill()
        # While nothing runs, `status` shows exactly what the journal holds.
        status = cli(data, "status", "--json")
        assert status.returncode == 0, status.stderr
        shown = {j["id"]: j["state"] for j in json.loads(status.stdout)["jobs"]}
        assert shown == {i: j.state.value for i, j in at_kill.items()}
        # The user cancels one waiting job while the runner is down.
        waiting = sorted(i for i, j in at_kill.items()
                         if j.state in (JobState.QUEUED, JobState.RETRY_WAIT))
        assert waiting, "the kill should leave jobs waiting"
        cancelled = waiting[-1]
        done = cli(data, "cancel", str(cancelled))
        assert done.returncode == 0 and re.search(r"\b1 jobs? cancelled", done.stdout)
        _finish(data, videos, [str(sheet), *RUN], tmp_path / "run-2.log")
        creates = mock.creates_by_key()
    doctor_ok(data, videos)
    with journal(data) as store:
        jobs = {j.id: j for j in store.list_jobs()}
        ledger = store.ledger()
        assert store.counts().live_by_account == {}
    kind_of = {j.id: kinds[j.row_number - 2] for j in jobs.values()}  # type: ignore[operator]
    for job_id, job in jobs.items():
        kind = kind_of[job_id]
        if job_id == cancelled:
            assert job.state == JobState.CANCELLED
        elif kind in ("plain", "fails-once"):
            assert job.state == JobState.COMPLETED, job
        elif kind == "policy":
            assert (job.state, job.error_label) == (JobState.FAILED, "content policy"), job
        else:
            assert (job.state, job.error_label, job.attempts) == (
                JobState.FAILED, "provider error", 3), job
    # Final at the kill means final for good: not touched by the restart.
    for job_id, before in at_kill.items():
        if before.state in FINAL:
            after = jobs[job_id]
            assert (after.state, after.finished_at, after.output_sha256, after.attempts) == (
                before.state, before.finished_at, before.output_sha256, before.attempts)
            assert not [e for e in ledger if e.job_id == job_id and e.seq > seq_at_kill]
    completed = Counter(e.job_id for e in ledger if e.event == "completed")
    assert all(n == 1 for n in completed.values())
    assert set(completed) == {i for i, j in jobs.items() if j.state == JobState.COMPLETED}
    for job in jobs.values():
        if kind_of[job.id] == "plain":
            assert creates[job.job_key] == 1


# -- 5. the same job key submitted twice -------------------------------------------------------
def test_the_same_job_key_twice_gives_one_job(tmp_path: Path) -> None:
    data, videos, sheet = tmp_path / "data", tmp_path / "videos", tmp_path / "keys.csv"
    write_prompts(sheet, [f"keyed {i}" for i in range(5)] + ["keyed 0"])  # a repeated row
    first = cli(data, "import", str(sheet), videos=videos)
    assert first.returncode == 0, first.stderr
    assert ": 6 new jobs, 0 already there" in first.stdout
    second = cli(data, "import", str(sheet), videos=videos)
    assert second.returncode == 0, second.stderr
    assert "Already imported: 6 jobs" in second.stdout
    assert ": 0 new jobs, 6 already there" in second.stdout
    with journal(data) as store:
        jobs = store.list_jobs()
        assert len(jobs) == 6 and len({j.job_key for j in jobs}) == 6
        assert len(store.list_batches()) == 1
        # The store itself refuses a key twice, within one call and across calls.
        specs = [JobSpec(j.job_key, j.prompt, j.provider, j.output_path) for j in jobs]
        again = store.add_jobs(jobs[0].batch_id, specs + specs[:2], time.time())
        assert (again.added, again.already_present) == (0, 8)
        assert len(store.list_jobs()) == 6


def test_backpressure_refuses_an_import_that_overfills_the_queue(tmp_path: Path) -> None:
    """The seed's "send jobs faster than workers finish: the API answers 429": here the
    import is refused whole (exit 2) when the waiting queue would pass its limit."""
    data, videos = tmp_path / "data", tmp_path / "videos"
    write_prompts(tmp_path / "a.csv", [f"first {i}" for i in range(8)])
    write_prompts(tmp_path / "b.csv", [f"second {i}" for i in range(5)])
    ok = cli(data, "import", str(tmp_path / "a.csv"), "--max-waiting", "10", videos=videos)
    assert ok.returncode == 0, ok.stderr
    refused = cli(data, "import", str(tmp_path / "b.csv"), "--max-waiting", "10",
                  videos=videos)
    assert refused.returncode == 2
    assert "limit is 10" in refused.stderr and "Nothing was imported" in refused.stderr
    with journal(data) as store:
        assert len(store.list_jobs()) == 8


# -- 6. a job that always crashes its worker ---------------------------------------------------
@pytest.mark.slow
@pytest.mark.parametrize("hook", ["raise-in-submit", "kill-in-submit", "kill-in-poll"])
def test_a_job_that_always_crashes_its_worker_ends_failed(tmp_path: Path, hook: str) -> None:
    """``raise-in-submit``: an exception inside the worker (a bug of ours) every time.
    ``kill-in-submit`` / ``kill-in-poll``: the job SIGKILLs the whole runner every time it
    is submitted / every time its render is polled, and the user keeps restarting it.
    The job ends FAILED after the attempt ceiling (3) for a bug of ours; a job whose
    resumes keep killing the runner is PARKED after ``max_resumes`` (its create unknown:
    ``kill-in-submit``; its render kept: ``kill-in-poll``, and ``retry`` then downloads
    that render without a second create, issue 10) -- and the others complete."""
    prompts = [f"healthy {i} [[mock:render_seconds=0.3]]" for i in range(3)]
    prompts.append("POISON [[mock:render_seconds=0.3]]")
    runs: list[int] = []
    with MockProcess(tmp_path / "mock") as mock:
        data, videos, sheet = _setup(tmp_path, mock.url, prompts, {"acct": 1})
        imported = cli(data, "import", str(sheet), videos=videos)
        assert imported.returncode == 0, imported.stderr
        with journal(data) as reader:
            poison = next(j for j in reader.list_jobs() if "POISON" in j.prompt)
        arg = poison.job_key if hook == "kill-in-poll" else "POISON"
        for n in range(3 * poison.max_attempts + EngineConfig().max_resumes):
            runner = Runner(data, videos, RUN, tmp_path / f"run-{n}.log", hook=f"{hook}:{arg}")
            try:
                code = runner.wait(120)
            finally:
                runner.kill()
            runs.append(code)
            if code == 0:
                break
            assert code == -signal.SIGKILL, runner.output()
        creates = mock.creates_by_key()
        last_run = runner.output()
        if hook == "kill-in-poll":
            # The run that parked it says so, and what to run; the user's retry of the
            # parked job (the crash is fixed: no hook) reads its render again and
            # downloads it; it is never created again.
            assert "Finished: 3 completed, 0 failed, 0 cancelled, 1 parked." in last_run
            assert "Needs attention: 1 parked: its render exists; run 'reelqueue retry " \
                "--parked'" in last_run, last_run
            status = cli(data, "status", "--json")
            parked_count = json.loads(status.stdout)["needs_attention"]["parked"]
            retried = cli(data, "retry", "--parked", "--yes")
            assert retried.returncode == 0, retried.stderr
            _finish(data, videos, RUN, tmp_path / "after-retry.log")
            after_retry = mock.creates_by_key()
    assert runs[-1] == 0, f"still crashing after {len(runs)} runs: {runs}"
    with journal(data) as store:
        check_batch(store, videos, creates, expect_jobs=len(prompts), allow_failed=True)
        job = store.get_job(poison.id)
        events = [e.event for e in store.ledger(poison.id)]
        others = [j for j in store.list_jobs() if j.id != poison.id]
    # kill-in-poll: parked (counted below), then completed by the user's retry
    expected = {"kill-in-poll": JobState.COMPLETED, "kill-in-submit": JobState.PARKED}.get(
        hook, JobState.FAILED)
    assert job is not None and job.state == expected, (job, events)
    assert job.max_attempts == 3
    assert all(j.state == JobState.COMPLETED for j in others)
    assert events.count("failed") == (1 if hook == "raise-in-submit" else 0)
    if hook == "raise-in-submit":
        assert events.count("claimed") == job.attempts == 3
        assert events.count("retry_wait") == 2 and job.error_label == "internal error"
        assert creates[poison.job_key] == 0 and runs == [0]
    elif hook == "kill-in-submit":
        # One claim, killed before the request went out; each restart asks the provider
        # (reconcile), finds nothing and sends it on the same claim (no attempt spent: a
        # crash is not the provider's fault), and is killed again; after max_resumes such
        # resumes it is parked as unknown (issue 19), never failed, never sent.
        max_resumes = EngineConfig().max_resumes
        assert events.count("claimed") == job.attempts == 1
        assert events.count("reconcile") == max_resumes + 1
        assert events.count("reconciled_absent") == max_resumes
        assert job.error_label == "submit outcome unknown" and job.error_class == "unknown"
        assert creates[poison.job_key] == 0
        assert runs.count(-signal.SIGKILL) == max_resumes + 1
    else:
        # One claim and one create; the render is resumed after each kill, never created
        # again; after max_resumes resumes that died it is parked, keeping its render.
        max_resumes = EngineConfig().max_resumes
        # one claim before it was parked, one after the user's retry (attempts reset)
        assert events.count("claimed") == 2 and job.attempts == 1
        assert events.count("reattached") == max_resumes + 1
        assert creates[poison.job_key] == 1
        assert runs.count(-signal.SIGKILL) == max_resumes + 1
        assert events.count("parked") == 1 and parked_count == 1
        assert "1 will be re-read from the provider (no charge" in retried.stdout
        assert "deliberate_rerender" not in events
        assert after_retry[poison.job_key] == 1, after_retry
    record_figures(f"always_crashing[{hook}]", {
        "runs": len(runs), "kills": runs.count(-signal.SIGKILL), "events": events,
        "creates": creates[poison.job_key]})


@pytest.mark.timeout(120)
async def test_a_render_that_crashes_every_resume_is_parked_and_retry_reads_it(
    tmp_path: Path,
) -> None:
    """The in-process minimal form of ``kill-in-poll``: the process dies (here: the engine
    is dropped with its worker mid-poll and no orderly-stop record, exactly what a kill
    leaves in the journal) every time the render is resumed. Attempts are counted at
    claims only, so without a bound on resumes the job would be reattached forever; at the
    bound it is parked (its paid render kept), not failed, and the user's retry reads the
    render again and downloads it: no second create (issue 10)."""
    out = tmp_path / "out"
    store = SqliteStore.open(tmp_path / "journal.sqlite3", now=time.time())
    batch = store.create_batch(BatchSpec("b", "s.csv", str(out)), time.time())
    store.add_jobs(batch.id, [JobSpec("poison", "poison", "mock", str(out / "p.mp4"))],
                   time.time())
    with MockProviderServer(MockOptions(render_seconds_min=2, render_seconds_max=2)) as server:
        store.add_account(AccountSpec("acct", "mock", 1, server.url), time.time())
        polled = asyncio.Event()

        class Hangs(MockProvider):
            async def poll(self, provider_job_id: str) -> RemoteStatus:
                polled.set()
                await asyncio.Event().wait()  # the process "dies" here
                raise AssertionError("unreachable")

        info = builtin_registry().get("mock")
        hangs = builtin_registry().with_provider(replace(info, factory=Hangs))
        lives = 0
        for _ in range(12):
            lives += 1
            polled.clear()
            engine = Engine(store, config=EngineConfig(**FAST), providers=hangs)
            await engine.start()
            await _until(lambda: polled.is_set() or store.get_job(1).state  # type: ignore[union-attr]
                         in FINAL | {JobState.PARKED},
                         30, "the render to be polled or the job to settle")
            await engine.stop(orderly=False)  # a kill: the row stays in flight, no record
            engine.close_store()
            if not polled.is_set():
                break  # not resumed again: the job is parked
        job = store.get_job(1)
        events = [e.event for e in store.ledger(1)]
        assert job is not None and job.state == JobState.PARKED, (lives, events)
        max_resumes = EngineConfig(**FAST).max_resumes
        assert job.attempts == 1 and events.count("reattached") == max_resumes + 1
        # one claim and max_resumes resumes ran and died; the next resume parked the job
        assert lives == max_resumes + 2
        assert job.provider_job_id and job.error_label == "parked"
        assert server.counters()["creates_by_job_key"] == {"poison": 1}
        # The user's retry: the render is read again and downloaded, never created again.
        engine = Engine(store, config=EngineConfig(**FAST))  # the real mock adapter again
        await engine.start()
        assert await user_commands.retry(engine, [1]) == [1]
        result = await engine.run_until_drained(budget_seconds=60)
        await engine.stop()
        engine.close_store()
        job = store.get_job(1)
        creates = server.counters()["creates_by_job_key"]
    store.close()
    assert result.outcome == "drained", result
    assert job is not None and job.state == JobState.COMPLETED, job
    assert creates == {"poison": 1}, creates
    assert (out / "p.mp4").exists()


# -- 7. two processes on one database never exceed an account's limit --------------------------
LIMITS = {"two": 2, "three": 3, "four": 4}


@pytest.mark.slow
def test_two_processes_on_one_journal_never_exceed_a_limit(tmp_path: Path) -> None:
    path = tmp_path / "journal.sqlite3"
    store = SqliteStore.open(path, now=time.time())
    batch = store.create_batch(BatchSpec("b", "s.csv", str(tmp_path)), time.time())
    jobs = 900
    store.add_jobs(batch.id, [JobSpec(f"k{i}", f"p{i}", "mock", str(tmp_path / f"{i}.mp4"))
                              for i in range(jobs)], time.time())
    for name, capacity in LIMITS.items():
        store.add_account(AccountSpec(name, "mock", capacity), time.time())
    store.close()
    peak: Counter[str] = Counter()
    at_limit: Counter[str] = Counter()
    samples = 0
    stop = threading.Event()

    def sample() -> None:
        nonlocal samples
        db = sqlite3.connect(str(path), timeout=30)
        db.execute("PRAGMA query_only = 1")
        try:
            while not stop.is_set():
                rows = db.execute(
                    "SELECT account, COUNT(*) FROM jobs WHERE state IN "
                    "('CLAIMED', 'SUBMITTING', 'RENDERING', 'DOWNLOADING') GROUP BY account"
                ).fetchall()
                samples += 1
                for account, live in rows:
                    peak[account] = max(peak[account], live)
                    at_limit[account] += live == LIMITS[account]
                time.sleep(0.002)
        finally:
            db.close()

    sampler = threading.Thread(target=sample, daemon=True)
    logs = [(tmp_path / f"worker-{n}.log").open("wb") for n in range(2)]
    workers: list[subprocess.Popen[bytes]] = []
    started = time.monotonic()
    try:
        sampler.start()
        for n in range(2):
            workers.append(subprocess.Popen(
                [sys.executable, str(PROOF_DIR / "_claim_worker.py"), str(path),
                 f"process-{n}"], stdin=subprocess.DEVNULL, stdout=logs[n],
                stderr=subprocess.STDOUT, env=child_env(), start_new_session=True))
        codes = [w.wait(timeout=240) for w in workers]
    finally:
        stop.set()
        for worker in workers:
            kill_process(worker)
        for log in logs:
            log.close()
        sampler.join(30)
    elapsed = time.monotonic() - started
    outputs = [(tmp_path / f"worker-{n}.log").read_text() for n in range(2)]
    assert codes == [0, 0], outputs
    figures = [json.loads(out.strip().splitlines()[-1]) for out in outputs]
    assert all(f["claims"] > 0 for f in figures), figures  # both really worked
    assert sum(f["completed"] for f in figures) == jobs
    for account, capacity in LIMITS.items():
        assert peak[account] <= capacity, (account, peak[account], capacity)
        assert at_limit[account] > 0, f"{account} was never full: no pressure was applied"
    with journal(tmp_path) as store:
        assert store.counts().by_state == {"COMPLETED": jobs}
        ledger = store.ledger()
        assert not store.doctor_queries(instance_alive=False)["over_capacity"]
    claimed = Counter(e.job_id for e in ledger if e.event == "claimed")
    assert len(claimed) == jobs and set(claimed.values()) == {1}
    owners = Counter(e.detail["owner"] for e in ledger if e.event == "claimed")
    assert set(owners) == {"process-0", "process-1"}
    integrity_ok(path)
    record_figures("two_processes", {
        "jobs": jobs, "limits": LIMITS, "peak": dict(peak), "samples": samples,
        "samples_at_limit": dict(at_limit), "claims_by_process": dict(owners),
        "seconds": round(elapsed, 1)})


def test_a_second_runner_on_the_same_data_folder_is_refused(tmp_path: Path) -> None:
    prompts = [f"locked {i} [[mock:render_seconds=1.5]]" for i in range(6)]
    with MockProcess(tmp_path / "mock") as mock:
        data, videos, sheet = _setup(tmp_path, mock.url, prompts, {"acct": 3})
        first = Runner(data, videos, [str(sheet), *RUN], tmp_path / "run-1.log")
        try:
            with journal(data) as reader:
                wait_for(lambda: reader.counts().live_by_account, 60, "the first runner")
            second = cli(data, "run", str(sheet), *RUN, videos=videos)
            assert second.returncode == 2, second.stdout + second.stderr
            assert "Another ReelQueue" in second.stderr
            assert str(first.proc.pid) in second.stderr
            assert first.alive()
            code = first.wait()
        finally:
            first.kill()
        assert code == 0, first.output()
        creates = mock.creates_by_key()
    integrity_ok(data / "journal.sqlite3")
    with journal(data) as store:
        check_batch(store, videos, creates, expect_jobs=len(prompts))
        assert [e.event for e in store.ledger()].count("imported") == 1
    doctor_ok(data, videos)
