"""A claim's work must not grow with the jobs it cannot take.

Counted in SQLite virtual-machine steps (a progress handler), not in seconds, so the test
is exact on any machine. ``benchmarks/bench_claim_scaling.py`` has the timings.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from reelqueue.domain.models import AccountSpec, BatchSpec, JobSpec
from reelqueue.store.base import ClaimParams
from reelqueue.store.sqlite import SqliteStore

pytestmark = pytest.mark.unit

NOW = 1_800_000_000.0


def claim_steps(tmp_path: Path, blocked: int) -> int:
    """VM steps of one claim that has ``blocked`` jobs pinned to another account and
    ``blocked`` jobs waiting out a retry ahead of the one job it can take."""
    store = SqliteStore.open(tmp_path / f"j{blocked}.sqlite3", now=NOW)
    batch = store.create_batch(BatchSpec("b", "s.csv", str(tmp_path)), NOW)

    def spec(key: str, pinned: str | None = None) -> JobSpec:
        return JobSpec(key, "p", "mock", str(tmp_path / f"{key}.mp4"), pinned_account=pinned)

    store.add_jobs(batch.id, [spec(f"pinned-{i}", "other") for i in range(blocked)]
                   + [spec(f"retry-{i}") for i in range(blocked)] + [spec("free")], NOW)
    store.add_account(AccountSpec("mine", "mock", 1), NOW)
    store.add_account(AccountSpec("other", "mock", 1), NOW)
    db = store.raw_connection()
    db.execute("UPDATE jobs SET state = 'RETRY_WAIT', run_after = ?, attempts = 1 "
               "WHERE job_key LIKE 'retry-%'", (NOW + 600,))
    steps = 0

    def count() -> int:
        nonlocal steps
        steps += 1
        return 0

    db.set_progress_handler(count, 1)
    claim = store.claim_next_job(ClaimParams("mine", "me", NOW, 60))
    db.set_progress_handler(None, 1)
    assert claim is not None and claim.job.job_key == "free"
    store.close()
    return steps


def test_a_claim_seeks_past_pinned_and_waiting_jobs(tmp_path: Path) -> None:
    few, many = claim_steps(tmp_path, 5), claim_steps(tmp_path, 3000)
    # The B-trees get a level deeper with 6000 rows more; a walk would cost ~600x.
    assert many < few * 1.3, f"{few} steps with 10 blocked jobs, {many} with 6000"
