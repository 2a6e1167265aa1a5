"""The kill test of seeds/002, through the real command line (issue 3, item 1).

200 jobs whose mock renders take a random 0.2-2.0 s; the runner (``reelqueue run``) is
SIGKILLed after about 20 completions (no cleanup code can run), restarted on the same data
folder (a new process, so a new instance id) and left to drain. The mock provider is its
own process, so renders go on while the runner is dead.
"""

from __future__ import annotations

import re
import time
from pathlib import Path

import pytest

from reelqueue.domain.states import JobState
from tests.proof.harness import (
    DRAIN_TIMEOUT,
    MockProcess,
    Runner,
    add_account,
    check_batch,
    doctor_ok,
    in_flight_by_state,
    integrity_ok,
    journal,
    record_figures,
    wait_for,
    write_sheet,
)

pytestmark = [pytest.mark.slow, pytest.mark.integration]

JOBS = 200
KILL_AFTER = 20
SEED = 2002
RUN_ARGS = ["--no-progress", "--retry-base", "0.2", "--retry-cap", "2"]


def test_kill_after_twenty_completions_then_drain(tmp_path: Path) -> None:
    data, videos = tmp_path / "data", tmp_path / "videos"
    sheet = tmp_path / "kill.csv"
    write_sheet(sheet, JOBS, SEED)
    started = time.monotonic()
    with MockProcess(tmp_path / "mock") as mock:
        for name, capacity in (("acct-a", 4), ("acct-b", 4)):
            add_account(data, name, mock.url, capacity)
        first = Runner(data, videos, [str(sheet), *RUN_ARGS], tmp_path / "run-1.log")
        second: Runner | None = None
        try:
            with journal(data) as reader:
                def done() -> int:
                    assert first.alive(), f"the runner exited early:\n{first.output()}"
                    return reader.counts().by_state.get("COMPLETED", 0) >= KILL_AFTER

                wait_for(done, DRAIN_TIMEOUT, f"{KILL_AFTER} completions", interval=0.01)
                first.kill()  # SIGKILL: no cleanup code runs
                killed_at = time.monotonic() - started
                at_kill = reader.list_jobs()
                seq_at_kill = max(e.seq for e in reader.ledger())
            creates_at_kill = mock.creates_by_key()
            completed_before = {j.id: j for j in at_kill if j.state == JobState.COMPLETED}
            with_render = {j.id for j in at_kill
                           if j.provider_job_id and j.state != JobState.COMPLETED}
            owners_before = {j.lease_owner for j in at_kill if j.lease_owner}
            assert len(at_kill) == JOBS
            assert with_render, "the kill should land while renders are in flight"

            second = Runner(data, videos, [str(sheet), *RUN_ARGS], tmp_path / "run-2.log")
            code = second.wait()
            out = second.output()
            assert code == 0, out
            assert f": 0 new jobs, {JOBS} already there" in out
            assert re.search(r"Recovery: .*\d+ renders? reattached", out), out
            assert f"Finished: {JOBS} completed, 0 failed" in out, out
        finally:
            for runner in (first, second):
                if runner is not None:
                    runner.kill()
        creates = mock.creates_by_key()
    drained_at = time.monotonic() - started

    doctor_ok(data, videos)
    integrity_ok(data / "journal.sqlite3")
    with journal(data) as store:
        figures = check_batch(store, videos, creates, expect_jobs=JOBS)
        after = {j.id: j for j in store.list_jobs()}
        ledger = store.ledger()
    assert figures.by_state == {"COMPLETED": JOBS}
    # A new instance took over: recovery names a new instance, different from every
    # owner of a claim before the kill.
    recoveries = [e for e in ledger if e.event == "recovery" and e.seq > seq_at_kill]
    assert len(recoveries) == 1
    assert recoveries[0].detail["instance"] not in owners_before
    # Jobs that had a render at the kill were reattached (or completed from disk),
    # never created again.
    resumed = {e.job_id for e in ledger if e.seq > seq_at_kill and (
        e.event == "reattached" or (e.event == "completed"
                                    and e.detail.get("source") == "recovery"))}
    assert with_render <= resumed
    key_of = {j.id: j.job_key for j in after.values()}
    for job_id in with_render:
        assert creates[key_of[job_id]] == creates_at_kill[key_of[job_id]] == 1
    # What was finished before the kill was not touched after it.
    for job_id, before in completed_before.items():
        assert after[job_id].output_sha256 == before.output_sha256
        assert after[job_id].finished_at == before.finished_at
    record_figures("kill_seed", {
        "jobs": JOBS, "completed_at_kill": len(completed_before),
        "in_flight_at_kill": in_flight_by_state(at_kill),
        "with_render_at_kill": len(with_render), "recovery": recoveries[0].detail,
        "extra_creates": figures.extra_creates, "killed_after_s": round(killed_at, 1),
        "total_s": round(drained_at, 1),
    })
