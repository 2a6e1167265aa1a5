"""The store contract (SQLite, memory, PostgreSQL): every recovery update checks the state
its plan read (DESIGN.md invariant 14, issue 19).

Recovery reads the leftovers, plans what to do with each (``recovery_plan.py``), then
applies the plan. A row whose owner moved it on in between must be left alone: a job read
as CLAIMED is planned "requeue", and if its owner has meanwhile written SUBMITTING (the
create may be on its way to the provider) a requeue would have it created a second time
elsewhere. The plan's output check (``check_output``) runs between the read and the
updates in every store, so the owner's write is made from there.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from reelqueue.domain.clock import FakeClock
from reelqueue.domain.models import FileCheck, Job
from reelqueue.domain.states import JobState
from reelqueue.store.base import ClaimParams, RecoverParams, Store
from tests.conftest import seed_store

pytestmark = pytest.mark.unit

LEASE = 10.0


@pytest.mark.parametrize("only_expired", [True, False], ids=["takeover", "start-up"])
def test_a_job_that_moved_on_since_the_plan_read_it_is_left_alone(
    store: Store, tmp_path: Path, clock: FakeClock, only_expired: bool
) -> None:
    seed_store(store, tmp_path, clock.now(), jobs=2, accounts={"acct-a": 2})
    moving = store.claim_next_job(ClaimParams("acct-a", "owner", clock.now(), LEASE))
    still = store.claim_next_job(ClaimParams("acct-a", "owner", clock.now(), LEASE))
    assert moving is not None and still is not None
    clock.advance(LEASE + 1)  # the owner looked dead: its leases ran out
    moved: list[bool] = []

    def owner_writes_the_intent_meanwhile(job: Job) -> FileCheck:
        if job.id == moving.job.id and not moved:
            # The plan read CLAIMED; the owner (alive after all) writes its intent now.
            moved.append(store.mark_submitting(moving.token, "ct-late", clock.now()))
        return FileCheck(exists=False)

    report = store.recover(RecoverParams("taker", clock.now(), LEASE, only_expired,
                                         owner_writes_the_intent_meanwhile))
    assert moved == [True]
    job = store.get_job(moving.job.id)
    assert job is not None
    assert (job.state, job.claim_token, job.client_token, job.lease_owner) == (
        JobState.SUBMITTING, moving.token.token, "ct-late", "owner"), \
        "a row that moved on since the plan read it is left alone"
    assert report.requeued == [still.job.id], "the row that did not move is requeued"
    requeued = [e for e in store.ledger(moving.job.id) if e.event == "requeued"]
    assert not requeued
    # The owner goes on under its claim: its create is recorded, never made twice.
    assert store.record_submitted(moving.token, "pj-1", clock.now())


def test_a_job_completed_by_its_owner_meanwhile_is_not_reattached(
    store: Store, tmp_path: Path, clock: FakeClock
) -> None:
    seed_store(store, tmp_path, clock.now(), jobs=1, accounts={"acct-a": 1})
    c = store.claim_next_job(ClaimParams("acct-a", "owner", clock.now(), LEASE))
    assert c is not None
    assert store.mark_submitting(c.token, "ct", clock.now())
    assert store.record_submitted(c.token, "pj", clock.now())
    clock.advance(LEASE + 1)

    def owner_downloads_meanwhile(job: Job) -> FileCheck:
        # Read RENDERING (plan: reattach); the owner moves it to DOWNLOADING meanwhile.
        assert store.mark_downloading(c.token, clock.now())
        return FileCheck(exists=False)

    report = store.recover(RecoverParams("taker", clock.now(), LEASE, True,
                                         owner_downloads_meanwhile))
    assert report.touched == 0
    job = store.get_job(c.job.id)
    assert job is not None and job.state == JobState.DOWNLOADING
    assert job.claim_token == c.token.token
    assert store.mark_completed(c.token, size=1, sha256="ab" * 32, cost=None,
                                now=clock.now())


def test_a_takeover_of_a_job_whose_dead_owner_had_written_the_file_says_so(
    store: Store, tmp_path: Path, clock: FakeClock
) -> None:
    """Issue 21: a file is downloaded twice only after a takeover of a job whose dead
    machine had already written it (its download recorded, not yet completed), and the
    ledger says so: the takeover's ``reattached`` entry names the download it repeats and
    whose it was; the render is never created again."""
    seed_store(store, tmp_path, clock.now(), jobs=2, accounts={"acct-a": 2})
    written = store.claim_next_job(ClaimParams("acct-a", "machine-a", clock.now(), LEASE))
    rendering = store.claim_next_job(ClaimParams("acct-a", "machine-a", clock.now(), LEASE))
    assert written is not None and rendering is not None
    for claim in (written, rendering):
        assert store.mark_submitting(claim.token, f"ct-{claim.job.id}", clock.now())
        assert store.record_submitted(claim.token, f"pj-{claim.job.id}", clock.now())
        assert store.mark_downloading(claim.token, clock.now())
    assert store.record_download(written.token, size=1234, sha256="cd" * 32, now=clock.now())
    clock.advance(LEASE + 1)  # machine-a died with the file in its own folder
    report = store.recover(RecoverParams("machine-b", clock.now(), LEASE, True,
                                         lambda job: FileCheck(exists=False)))
    assert sorted(report.reattached) == sorted([written.job.id, rendering.job.id])
    again = [e for e in store.ledger(written.job.id) if e.event == "reattached"]
    assert len(again) == 1
    assert again[0].detail["downloaded_again"] == {"size": 1234, "sha256": "cd" * 32,
                                                   "by": "machine-a"}
    plain = [e for e in store.ledger(rendering.job.id) if e.event == "reattached"]
    assert len(plain) == 1 and "downloaded_again" not in plain[0].detail
    assert store.get_job(written.job.id).provider_job_id == "pj-1"  # type: ignore[union-attr]
