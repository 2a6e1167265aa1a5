"""Journal rows become domain values field by field, whatever the column order."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from reelqueue.domain.routes import Candidate, Route, RoutePolicy
from reelqueue.domain.states import JobState
from reelqueue.store.rows import job_from_row
from reelqueue.store.sqlite import SqliteStore

pytestmark = pytest.mark.unit

ROUTE = Route(RoutePolicy.CHEAPEST, (
    Candidate("luma", {"duration": 5}, 0.4),
    Candidate("runway", {"duration": 5}, 0.5, refused="refused the duration")))


def test_every_job_column_lands_in_the_field_of_its_name(tmp_path: Path) -> None:
    store = SqliteStore.open(tmp_path / "j.sqlite3", now=1)
    db = store.raw_connection()
    db.execute("INSERT INTO batches (name, source_path, output_dir, created_at) "
               "VALUES ('b', 's', '/tmp', 1)")
    columns = [r[1] for r in db.execute("PRAGMA table_info(jobs)")]
    values = {name: f"v-{name}" for name in columns}
    values.update(
        id=7, batch_id=1, row_number=9, params='{"seed": 3}', metadata='{"note": "n"}',
        priority=2, state="RENDERING", attempts=1, max_attempts=3, lease_until=50.5,
        progress=0.25, run_after=4.0, output_size=123, cost=0.5, error_class="retryable",
        created_at=1.0, updated_at=2.0, started_at=3.0, finished_at=None,
        route=ROUTE.to_json(), decision="reject", rating=4, decided_at=8.5,
        decision_version=2)
    marks = ", ".join(f":{name}" for name in columns)
    db.execute(f"INSERT INTO jobs ({', '.join(columns)}) VALUES ({marks})", values)
    job = job_from_row(db.execute("SELECT * FROM jobs").fetchone())
    store.close()
    expected = {**values, "params": {"seed": 3}, "metadata": {"note": "n"},
                "state": JobState.RENDERING, "route": dataclasses.asdict(ROUTE)}
    del expected["route_order"]  # the route's order_key, for the claim's filter: not a field
    # the review columns (v16, issue 35) are one field
    expected["review"] = {"decision": "reject", "rating": 4, "decided_at": 8.5,
                          "decided_by": "v-decided_by", "version": 2}
    for name in ("decision", "rating", "decided_at", "decided_by", "decision_version"):
        del expected[name]
    assert dataclasses.asdict(job) == expected


@pytest.mark.parametrize("stored", ["v-route", "[1, 2]", '{"candidates": []}',
                                    '{"candidates": [{"provider": 7}]}', "{" * 5000,
                                    '{"policy": "nope", "candidates": [{"provider": "a"}]}'])
def test_a_route_the_journal_cannot_read_is_no_route(tmp_path: Path, stored: str) -> None:
    """A hostile or damaged team database: the job stays with the provider it has."""
    store = SqliteStore.open(tmp_path / "j.sqlite3", now=1)
    db = store.raw_connection()
    db.execute("INSERT INTO batches (name, source_path, output_dir, created_at) "
               "VALUES ('b', 's', '/tmp', 1)")
    db.execute("INSERT INTO jobs (batch_id, job_key, prompt, provider, output_path, "
               "created_at, updated_at, route) VALUES (1, 'k', 'p', 'mock', 'b/x.mp4', 1, 1, ?)",
               (stored,))
    job = job_from_row(db.execute("SELECT * FROM jobs").fetchone())
    store.close()
    assert job.route is None and job.provider == "mock"
