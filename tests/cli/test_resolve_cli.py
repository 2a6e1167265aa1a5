"""``reelqueue resolve``: a create whose answer was lost and that the provider's records
could not settle waits for the user, who picks its render or renders again (issue 19)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from reelqueue.domain.states import JobState
from reelqueue.store.sqlite import SqliteStore
from tests.cli.test_cli_e2e import rq

pytestmark = pytest.mark.integration

# The mock holds the create's answer 3 s (the client gives up after its 1 s timeout) and
# plants a render of the same prompt by "another client" 1 s earlier: the search finds two
# candidates for one job and never guesses.
TWIN = "[[mock:create_timeout=3*1,foreign_twin=1*1]]"


def _jobs(data: Path) -> dict[str, object]:
    store = SqliteStore.open(data / "journal.sqlite3", now=time.time())
    try:
        return {j.name: j for j in store.list_jobs()}
    finally:
        store.close()


def test_two_candidates_wait_for_the_user_who_picks_one_or_renders_again(
        tmp_path: Path) -> None:
    data = tmp_path / "data"
    sheet = tmp_path / "s.csv"
    sheet.write_text(f'name,prompt\nfox,"A red fox {TWIN}"\nhen,"A hen {TWIN}"\n'
                     "owl,An owl at dusk\n", "utf-8")
    added = rq(data, "accounts", "add", "studio", "--provider", "mock", "--reconcile",
               "search", "--settle-seconds", "0.5")
    assert added.returncode == 0, added.stderr
    run = rq(data, "run", str(sheet), "--http-timeout", "1", "--no-progress")
    assert run.returncode == 0, run.stderr
    # the two are creates of unknown outcome: named so, never "parked" (issue 34)
    assert "2 outcome unknown." in run.stdout and "2 outcome unknown (#" in run.stdout
    assert "parked" not in run.stdout
    jobs = _jobs(data)
    fox, hen, owl = jobs["fox"], jobs["hen"], jobs["owl"]
    assert owl.state == JobState.COMPLETED  # type: ignore[attr-defined]
    for job in (fox, hen):
        assert job.state == JobState.PARKED and job.error_class == "unknown"  # type: ignore[attr-defined]

    listed = rq(data, "resolve", str(fox.id))  # type: ignore[attr-defined]
    assert listed.returncode == 0, listed.stderr
    candidates = [line.split()[0] for line in listed.stdout.splitlines()
                  if line.startswith("  ")]
    assert len(candidates) == 2, listed.stdout
    picked = rq(data, "resolve", str(fox.id), "--render", candidates[0])  # type: ignore[attr-defined]
    assert picked.returncode == 0 and "no new render" in picked.stdout, picked.stderr
    again = rq(data, "resolve", str(hen.id), "--render", candidates[0])  # type: ignore[attr-defined]
    assert again.returncode != 0 and "already recorded for job" in again.stderr
    assert rq(data, "resolve", str(owl.id)).returncode != 0  # type: ignore[attr-defined]

    paid = rq(data, "resolve", str(hen.id), "--create-again", "--yes")  # type: ignore[attr-defined]
    assert paid.returncode == 0, paid.stderr
    assert "first create may already be charged" in paid.stdout, paid.stdout
    jobs = _jobs(data)
    assert jobs["fox"].provider_job_id == candidates[0]  # type: ignore[attr-defined]
    assert jobs["fox"].state == jobs["hen"].state == JobState.QUEUED  # type: ignore[attr-defined]
    assert jobs["hen"].client_token is None  # type: ignore[attr-defined]
    store = SqliteStore.open(data / "journal.sqlite3", now=time.time())
    try:
        events = [e.event for e in store.ledger(fox.id)]  # type: ignore[attr-defined]
        requeued = [e for e in store.ledger(hen.id) if e.event == "requeued"]  # type: ignore[attr-defined]
    finally:
        store.close()
    assert "resolved_by_user" in events and "reconcile_unresolved" in events
    assert requeued[-1].detail["reconcile"] is False
    assert requeued[-1].detail["unresolved_client_token"]
