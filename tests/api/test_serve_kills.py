"""Kill -9 of ``reelqueue serve``: submits retried with their idempotency keys across
SIGKILLs make exactly one job each; renders in flight at the kill are reattached."""

from __future__ import annotations

import random
import threading
import time
from collections import Counter
from pathlib import Path

import pytest

from reelqueue.application.submit import job_key_for
from reelqueue.domain.states import JobState
from tests.api.serve_harness import ServeProcess, make_token, submit_until_answered
from tests.proof.harness import MockProcess, add_account, check_batch, journal, wait_for

pytestmark = [pytest.mark.integration, pytest.mark.slow]

SUBMITS = 1_000
KILLS = 12


def test_a_retrying_client_makes_exactly_one_job_per_key_across_kills(
        tmp_path: Path) -> None:
    data, videos = tmp_path / "data", tmp_path / "videos"
    token = make_token(data, "script", "submit")
    server = ServeProcess(data, videos, "--paused").start()
    answered = 0
    kills = 0
    done = threading.Event()
    problems: list[BaseException] = []
    rng = random.Random(14)

    def killer() -> None:
        nonlocal kills
        try:
            while kills < KILLS and not done.is_set():
                threshold = (kills + 1) * SUBMITS // (KILLS + 2)
                while answered < threshold and not done.is_set():
                    time.sleep(0.001)
                time.sleep(rng.uniform(0, 0.02))  # lands inside a request or between two
                server.kill()
                kills += 1
                server.start()
        except BaseException as exc:  # reported by the main thread
            problems.append(exc)

    thread = threading.Thread(target=killer, daemon=True)
    statuses: Counter[int] = Counter()
    ids: dict[str, int] = {}
    try:
        thread.start()
        with server.client(token, timeout=10.0) as client:
            for i in range(SUBMITS):
                key = f"key-{i}"
                response = submit_until_answered(client, {"prompt": f"shot {i}"}, key)
                statuses[response.status_code] += 1
                assert response.status_code in (200, 201), response.text
                ids[key] = response.json()["id"]
                answered += 1
        done.set()
        thread.join(timeout=120)
        assert not problems, problems
    finally:
        done.set()
        server.stop()
    assert kills >= 10
    with journal(data) as store:
        jobs = store.list_jobs()
    assert len(jobs) == SUBMITS  # 0 lost, 0 duplicates
    by_key = {job.job_key: job.id for job in jobs}
    assert by_key == {job_key_for("script", key): job_id for key, job_id in ids.items()}
    assert len(set(ids.values())) == SUBMITS
    print(f"\n{SUBMITS} submits, {kills} SIGKILLs, answers {dict(statuses)}")


def test_kill_9_mid_batch_reattaches_renders_and_every_state_is_right(
        tmp_path: Path) -> None:
    data, videos = tmp_path / "data", tmp_path / "videos"
    token = make_token(data, "script", "submit")
    with MockProcess(tmp_path / "mock", "--render-seconds-min", "1",
                     "--render-seconds-max", "2") as mock:
        add_account(data, "m1", mock.url, 4)
        server = ServeProcess(data, videos).start()
        try:
            with server.client(token) as client:
                for i in range(12):
                    response = client.post("/v1/jobs", json={
                        "prompt": f"kill shot {i} [[mock:render_seconds=2]]"},
                        headers={"Idempotency-Key": f"k{i}"})
                    assert response.status_code == 201, response.text
                wait_for(lambda: client.get("/v1/jobs?state=RENDERING").json()["jobs"],
                         60, "a render in flight")
            server.kill()
            server.start()
            with server.client(token) as client:
                def all_done() -> bool:
                    jobs = client.get("/v1/jobs").json()["jobs"]
                    return all(j["state"] == JobState.COMPLETED.value for j in jobs)

                wait_for(all_done, 180, "every job to complete", interval=0.5)
                video = client.get("/v1/jobs/1/video")
                assert video.status_code == 200 and video.content
        finally:
            server.stop()
        creates = mock.creates_by_key()
    with journal(data) as store:
        check_batch(store, videos, creates, expect_jobs=12)
        reattached = [e for e in store.ledger() if e.event == "reattached"]
    assert reattached  # the renders in flight at the kill were read again, not re-created
