"""``reelqueue prioritize`` and ``reelqueue batch pause|resume|list`` (issue 13): what the
commands say, and the order in which the journal then hands the jobs out."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from reelqueue.domain.models import AccountSpec, BatchSpec, JobSpec
from reelqueue.store.base import ClaimParams
from reelqueue.store.lockfile import make_private_dir
from reelqueue.store.sqlite import SqliteStore
from tests.cli.test_cli_e2e import rq

pytestmark = pytest.mark.integration


def _journal(data: Path, names: tuple[str, ...] = ("first", "second")) -> None:
    make_private_dir(data)
    store = SqliteStore.open(data / "journal.sqlite3", now=time.time())
    for name in names:
        batch = store.create_batch(BatchSpec(name, f"{name}.csv", str(data / name)),
                                   time.time())
        store.add_jobs(batch.id, [JobSpec(f"{name}-{i}", f"{name} {i}", "mock",
                                          str(data / name / f"{i}.mp4")) for i in range(3)],
                       time.time())
    store.add_account(AccountSpec("acct", "mock", 20, "http://127.0.0.1:9"), time.time())
    store.close()


def _claim_order(data: Path) -> list[str]:
    """The job keys in the order claims take them now (the claims stay: a later call
    sees only the jobs still waiting)."""
    store = SqliteStore.open(data / "journal.sqlite3", now=time.time())
    try:
        keys = []
        while (c := store.claim_next_job(ClaimParams("acct", "t", time.time(), 60))):
            keys.append(c.job.job_key)
        return keys
    finally:
        store.close()


def test_a_batch_moved_to_the_front_is_claimed_first(tmp_path: Path) -> None:
    data = tmp_path / "data"
    _journal(data)
    done = rq(data, "prioritize", "--batch", "second")
    assert done.returncode == 0, done.stderr
    assert "Batch 2 (second): 3 unfinished jobs moved to the front (priority 1)." in done.stdout
    moved = rq(data, "prioritize", "1", "999", "--priority", "5")
    assert moved.returncode == 0, moved.stderr
    assert "1 job given priority 5. 1 job already finished or unknown" in moved.stdout
    assert _claim_order(data) == ["first-0", "second-0", "second-1", "second-2", "first-1",
                                  "first-2"]


def test_a_paused_batch_waits_until_it_is_resumed(tmp_path: Path) -> None:
    data = tmp_path / "data"
    _journal(data)
    paused = rq(data, "batch", "pause", "FIRST")
    assert paused.returncode == 0, paused.stderr
    assert "Batch 1 (first) paused" in paused.stdout
    listing = rq(data, "batch", "list")
    assert "first  3 jobs, 3 unfinished · paused" in listing.stdout
    assert "second  3 jobs, 3 unfinished\n" in listing.stdout
    assert _claim_order(data) == ["second-0", "second-1", "second-2"]
    resumed = rq(data, "batch", "resume", "1")
    assert resumed.returncode == 0 and "Batch 1 (first) resumed." in resumed.stdout
    assert _claim_order(data) == ["first-0", "first-1", "first-2"]


def test_an_unknown_or_ambiguous_batch_is_refused(tmp_path: Path) -> None:
    data = tmp_path / "data"
    _journal(data, ("same", "same"))
    ambiguous = rq(data, "batch", "pause", "same")
    assert ambiguous.returncode == 2
    assert "2 batches are named 'same' (numbers 1, 2): give the number." in ambiguous.stderr
    unknown = rq(data, "prioritize", "--batch", "nope")
    assert unknown.returncode == 2 and "There is no batch 'nope'" in unknown.stderr
    nothing = rq(data, "prioritize")
    assert nothing.returncode == 2 and "Name the jobs to move" in nothing.stderr
