"""``GET /v1/events``: every ledger event of a 300-job batch exactly once across a
reconnect with ``Last-Event-ID``."""

from __future__ import annotations

import json
from pathlib import Path

import httpx2
import pytest

from tests.api.serve_harness import ServeProcess, make_token
from tests.proof.harness import MockProcess, add_account, journal

pytestmark = [pytest.mark.integration, pytest.mark.slow]

JOBS = 300


def read_events(client: httpx2.Client, last_id: str, stop: int | None,
                completed: set[int]) -> list[tuple[int, dict[str, object]]]:
    """Events after ``last_id`` until ``stop`` of them were read (None: until every job
    is completed); the connection is then dropped."""
    seen: list[tuple[int, dict[str, object]]] = []
    with client.stream("GET", "/v1/events", headers={"Last-Event-ID": last_id},
                       timeout=httpx2.Timeout(60.0)) as stream:
        assert stream.status_code == 200
        assert stream.headers["content-type"].startswith("text/event-stream")
        event_id: int | None = None
        for line in stream.iter_lines():
            if line.startswith("id: "):
                event_id = int(line[4:])
            elif line.startswith("data: ") and event_id is not None:
                data = json.loads(line[6:])
                seen.append((event_id, data))
                if data["event"] == "completed":
                    completed.add(int(str(data["job_id"])))
                event_id = None
                if stop is not None and len(seen) >= stop:
                    break
                if stop is None and len(completed) >= JOBS:
                    break
    return seen


def test_every_event_of_a_300_job_batch_exactly_once_across_a_reconnect(
        tmp_path: Path) -> None:
    data, videos = tmp_path / "data", tmp_path / "videos"
    token = make_token(data, "dashboard", "submit")
    with MockProcess(tmp_path / "mock", "--render-seconds-min", "0.05",
                     "--render-seconds-max", "0.3") as mock:
        add_account(data, "m1", mock.url, 16)
        with ServeProcess(data, videos) as server, server.client(token) as client:
            for i in range(JOBS):
                response = client.post("/v1/jobs", json={"prompt": f"event shot {i}",
                                                         "batch": "sse"},
                                       headers={"Idempotency-Key": f"e{i}"})
                assert response.status_code == 201, response.text
            completed: set[int] = set()
            first = read_events(client, "0", 400, completed)
            second = read_events(client, str(first[-1][0]), None, completed)
    ids = [event_id for event_id, _ in first + second]
    assert len(ids) == len(set(ids))  # nothing twice
    assert ids == sorted(ids)
    with journal(data) as store:
        expected = [e.seq for e in store.ledger()
                    if (e.job_id is not None or e.account is not None) and e.seq <= ids[-1]]
        jobs = store.list_jobs()
    assert ids == expected  # nothing missed
    assert len(jobs) == JOBS and completed == {job.id for job in jobs}
