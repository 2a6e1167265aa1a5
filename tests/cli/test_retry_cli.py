"""``reelqueue retry`` says what it will do and cost before it does it (issue 10)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from reelqueue.domain.models import AccountSpec, BatchSpec, JobSpec
from reelqueue.domain.states import JobState
from reelqueue.store.base import ClaimParams, JobError
from reelqueue.store.lockfile import make_private_dir
from reelqueue.store.sqlite import SqliteStore
from tests.cli.test_cli_e2e import CLI, rq

pytestmark = pytest.mark.integration

PRICED = {"model": "mock-1", "duration": 5}  # mock-1: $0.01 a second


def _journal(data: Path) -> dict[str, int]:
    """Four failed-ish jobs: a finished render without its file (kept), a retryable
    failure without a render, a content-policy refusal, and a parked render."""
    make_private_dir(data)
    store = SqliteStore.open(data / "journal.sqlite3", now=time.time())
    batch = store.create_batch(BatchSpec("b", "s.csv", str(data / "videos")), time.time())
    names = ["no_file", "retryable", "policy", "parked"]
    store.add_jobs(batch.id, [JobSpec(n, n, "mock", str(data / "videos" / f"{n}.mp4"),
                                      params=dict(PRICED)) for n in names], time.time())
    store.add_account(AccountSpec("acct", "mock", 4, "http://127.0.0.1:9"), time.time())
    ids = {}
    for _ in names:
        claim = store.claim_next_job(ClaimParams("acct", "i", time.time(), 60))
        assert claim is not None
        ids[claim.job.prompt] = claim.job.id
        token, now = claim.token, time.time()
        if claim.job.prompt in ("no_file", "parked"):
            assert store.mark_submitting(token, "ct", now)
            assert store.record_submitted(token, f"pj-{claim.job.prompt}", now)
        if claim.job.prompt == "no_file":
            store.mark_failed(token, JobError("permanent", "finished without file", "x"), now)
        elif claim.job.prompt == "retryable":
            store.mark_failed(token, JobError("retryable", "provider error", "500"), now)
        elif claim.job.prompt == "policy":
            store.mark_failed(token, JobError("permanent", "content policy", "no"), now,
                              drop_render=True)
        else:
            store.park_job(token, JobError("retryable", "parked", "crashes"), now)
    store.close()
    return ids


def test_retry_failed_says_what_it_re_reads_and_what_it_pays(tmp_path: Path) -> None:
    data = tmp_path / "data"
    ids = _journal(data)
    done = rq(data, "retry", "--failed")
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "3 jobs: 2 will be re-read from the provider (no charge" in out, out
    assert "1 will be rendered again (est. $0.05)" in out, out
    assert "1 permanent failure (content policy" in out and "--include-permanent" in out, out
    assert "3 jobs queued again." in out
    store = SqliteStore.open(data / "journal.sqlite3", now=time.time())
    jobs = {j.prompt: j for j in store.list_jobs()}
    store.close()
    assert jobs["policy"].state == JobState.FAILED, "permanent failures are left out"
    assert jobs["no_file"].state == JobState.QUEUED
    assert jobs["no_file"].provider_job_id == "pj-no_file", "kept: read before paying"
    assert jobs["parked"].provider_job_id == "pj-parked"
    assert jobs["retryable"].state == JobState.QUEUED and jobs["retryable"].provider_job_id is None
    assert set(ids) == set(jobs)


def test_include_permanent_and_named_jobs(tmp_path: Path) -> None:
    data = tmp_path / "data"
    ids = _journal(data)
    done = rq(data, "retry", "--failed", "--include-permanent", "--yes")
    assert done.returncode == 0, done.stderr
    assert "4 jobs: 2 will be re-read" in done.stdout
    assert "2 will be rendered again (est. $0.10)" in done.stdout
    again = rq(data, "retry", str(ids["no_file"]))
    assert "not failed, cancelled or parked" in again.stdout, again.stdout


@pytest.mark.skipif(sys.platform == "win32", reason="needs a POSIX terminal")
@pytest.mark.parametrize(("answer", "changed"), [("n", False), ("y", True)])
def test_on_a_terminal_retry_asks_before_it_pays(tmp_path: Path, answer: str,
                                                 changed: bool) -> None:
    import pty  # POSIX only

    data = tmp_path / "data"
    ids = _journal(data)
    leader, follower = pty.openpty()
    try:
        proc = subprocess.Popen(
            [*CLI, "--data-dir", str(data), "--videos-dir", str(data / "videos"), "retry",
             str(ids["retryable"])], stdin=follower, stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, text=True)
        os.write(leader, f"{answer}\n".encode())
        out, err = proc.communicate(timeout=60)
    finally:
        os.close(leader)
        os.close(follower)
    assert "1 will be rendered again (est. $0.05)" in out and "Go ahead? [y/N]" in out, err
    assert proc.returncode == (0 if changed else 1), (out, err)
    store = SqliteStore.open(data / "journal.sqlite3", now=time.time())
    job = store.get_job(ids["retryable"])
    store.close()
    assert job is not None
    assert job.state == (JobState.QUEUED if changed else JobState.FAILED)


def test_status_names_what_needs_attention_and_retry_parked_reads_it(tmp_path: Path) -> None:
    data = tmp_path / "data"
    ids = _journal(data)
    store = SqliteStore.open(data / "journal.sqlite3", now=time.time())
    batch = store.list_batches()[0]
    store.add_jobs(batch.id, [JobSpec("lost", "lost", "mock", str(data / "videos" / "l.mp4"),
                                      params=dict(PRICED))], time.time())
    claim = store.claim_next_job(ClaimParams("acct", "i", time.time(), 60))
    assert claim is not None and store.mark_submitting(claim.token, "ct-lost", time.time())
    assert store.mark_failed(claim.token, JobError(
        "permanent", "submit outcome unknown", "Submit outcome unknown: ... ct-lost"),
        time.time())
    store.close()
    status = rq(data, "status")
    assert status.returncode == 0, status.stderr
    out = status.stdout
    assert "needs attention: 1 parked: its render exists; run 'reelqueue retry --parked'" \
        in out, out
    assert f"1 outcome unknown (#{claim.job.id})" in out, out
    assert "ct-lost" in out, "the client token to look for is shown"
    done = rq(data, "retry", "--parked")
    assert done.returncode == 0, done.stderr
    assert "1 job: 1 will be re-read from the provider (no charge" in done.stdout, done.stdout
    store = SqliteStore.open(data / "journal.sqlite3", now=time.time())
    jobs = {j.prompt: j for j in store.list_jobs()}
    store.close()
    assert jobs["parked"].state == JobState.QUEUED
    assert jobs["parked"].provider_job_id == "pj-parked"
    assert {jobs[n].state for n in ("no_file", "retryable", "policy", "lost")} == {
        JobState.FAILED}, "--parked touches parked jobs only"
    assert set(ids) < set(jobs)


def test_retry_new_seed_of_a_finished_job_adds_a_new_job_and_keeps_the_video(
        tmp_path: Path) -> None:
    from reelqueue.application.context import AppContext
    from tests.application.test_seed_variants import finished

    data = tmp_path / "data"
    original = finished(AppContext(data_dir=data, videos_dir=tmp_path / "videos"))
    done = rq(data, "retry", str(original.id), "--new-seed", "42", "--yes")
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.splitlines() == [
        "Retry: 1 job: 1 finished video is kept and rendered again as a new job with the "
        "new seed (est. $0.05).",
        f"New job {original.id + 1}: job {original.id} again with seed 42, into "
        f"shots/lighthouse-seed42.mp4 (job {original.id} and its video are kept).",
    ], done.stdout
    store = SqliteStore.open(data / "journal.sqlite3", now=time.time())
    try:
        kept, new = store.list_jobs()
    finally:
        store.close()
    assert kept == original
    assert (new.state, new.params["seed"], new.output_path) == (
        JobState.QUEUED, 42, "shots/lighthouse-seed42.mp4")
    # Asked again: that seed's video is already there (queued), nothing is added.
    again = rq(data, "retry", str(original.id), "--new-seed", "42", "--yes")
    assert again.returncode == 0 and "New job" not in again.stdout, again.stdout
    assert ("1 finished job already had a job for seed 42: nothing was added for it."
            in again.stdout), again.stdout
    # Without --new-seed a finished job is left alone, as before.
    plain = rq(data, "retry", str(original.id), "--yes")
    assert "1 is not failed, cancelled or parked and is left alone" in plain.stdout
