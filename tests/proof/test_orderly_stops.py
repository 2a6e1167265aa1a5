"""Seven ordinary stops (SIGINT, as Ctrl+C sends) of ``reelqueue run`` during one 60 s
render: the job completes with exactly one create (issue 10, "Resumes never cost a render").

Before issue 10 every restart counted against ``max_resumes`` (5), so the 7th start failed
the job and a ``retry`` paid for a second render. An orderly stop now leaves a
``stopped_in_flight`` ledger entry and its resume is not counted. The mock provider is its
own process, so the render goes on while the runner is stopped.
"""

from __future__ import annotations

import signal
import time
from pathlib import Path

import pytest

from reelqueue.domain.states import JobState
from reelqueue.engine.config import EngineConfig
from tests.proof.harness import (
    MockProcess,
    Runner,
    add_account,
    check_batch,
    doctor_ok,
    journal,
    record_figures,
    wait_for,
    write_prompts,
)

pytestmark = [pytest.mark.slow, pytest.mark.integration]

STOPS = 7
RUN = ["--no-progress", "--retry-base", "0.1", "--retry-cap", "0.5"]


def test_seven_sigints_during_one_render_cost_one_create(tmp_path: Path) -> None:
    assert EngineConfig().max_resumes + 1 < STOPS, "the stops must pass the resume bound"
    data, videos, sheet = tmp_path / "data", tmp_path / "videos", tmp_path / "one.csv"
    write_prompts(sheet, ["one long render [[mock:render_seconds=60]]"])
    codes: list[int] = []
    owners: set[str] = set()
    started = time.monotonic()
    with MockProcess(tmp_path / "mock") as mock:
        add_account(data, "acct", mock.url, 1)
        for n in range(STOPS):
            runner = Runner(data, videos, [str(sheet), *RUN] if n == 0 else RUN,
                            tmp_path / f"run-{n}.log")
            try:
                with journal(data) as reader:
                    def rendering(runner: Runner = runner) -> bool:
                        assert runner.alive(), f"the runner exited early:\n{runner.output()}"
                        jobs = reader.list_jobs()
                        if not jobs:
                            return False  # not imported yet
                        job = jobs[0]
                        return (job.state == JobState.RENDERING and job.provider_job_id is not None
                                and job.lease_owner is not None and job.lease_owner not in owners)

                    wait_for(rendering, 60, f"run {n}: the render to be (re)attached",
                             interval=0.05)
                    job = reader.list_jobs()[0]
                    assert job.lease_owner is not None
                    owners.add(job.lease_owner)
                time.sleep(0.5)  # the worker is polling the render now
                runner.proc.send_signal(signal.SIGINT)
                codes.append(runner.wait(60))
                assert "reattached the next time" in runner.output(), runner.output()
            finally:
                runner.kill()
        stopped_at = time.monotonic() - started
        last = Runner(data, videos, RUN, tmp_path / "run-last.log")
        try:
            assert last.wait(180) == 0, last.output()
        finally:
            last.kill()
        creates = mock.creates_by_key()
    doctor_ok(data, videos)
    with journal(data) as store:
        check_batch(store, videos, creates, expect_jobs=1)
        job = store.list_jobs()[0]
        events = [e.event for e in store.ledger(job.id)]
    assert codes == [130] * STOPS, codes
    assert job.state == JobState.COMPLETED and job.attempts == 1, (job, events)
    assert creates[job.job_key] == 1, creates
    assert events.count("stopped_in_flight") == STOPS
    assert events.count("reattached") == STOPS
    assert "parked" not in events and "failed" not in events
    record_figures("orderly_stops", {"stops": STOPS, "creates": creates[job.job_key],
                                     "stopped_after_s": round(stopped_at, 1),
                                     "total_s": round(time.monotonic() - started, 1)})
