"""Issue 22 on every store: the DOWNLOADING write records the output path chosen and the
temporary file; the hash is recorded before the rename; recovery completes a job from disk
only from the file whose sha256 its download recorded (``engine.outputs.recorded_output``
on real files), and reads the render again otherwise — never a new create."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from reelqueue.domain.clock import FakeClock
from reelqueue.domain.states import JobState
from reelqueue.engine.outputs import part_path, recorded_output
from reelqueue.store.base import ClaimParams, RecoverParams, Store
from tests.conftest import seed_store

pytestmark = pytest.mark.unit

VIDEO = b"\x00\x00\x00\x18ftypmp42" + bytes(range(256)) * 8
USERS = b"\x00\x00\x00\x18ftypisom" + b"the user's own cut" * 100


def downloading(store: Store, tmp_path: Path, clock: FakeClock, *,
                suffixed: bool = False):  # type: ignore[no-untyped-def]
    seed_store(store, tmp_path, clock.now(), jobs=1)
    c = store.claim_next_job(ClaimParams("acct-a", "inst-1", clock.now(), 60.0))
    assert c is not None
    assert store.mark_submitting(c.token, "ct-1", clock.now())
    assert store.record_submitted(c.token, "pj-1", clock.now())
    final = Path(c.job.output_path)
    if suffixed:  # the name the engine chooses when a file holds the planned one
        final = final.with_name(f"{final.stem} (2){final.suffix}")
    part = part_path(final, c.token.token)
    assert store.mark_downloading(c.token, clock.now(), output_path=str(final),
                                  part=part.name)
    return c, final, part


def recover(store: Store, clock: FakeClock):  # type: ignore[no-untyped-def]
    return store.recover(RecoverParams("inst-2", clock.now(), 60, False, recorded_output))


def test_the_downloading_write_records_the_name_chosen_and_the_temporary_file(
        store: Store, tmp_path: Path, clock: FakeClock) -> None:
    c, suffixed, part = downloading(store, tmp_path, clock, suffixed=True)
    assert suffixed.name.endswith(" (2).mp4") and str(suffixed) != c.job.output_path
    job = store.get_job(c.job.id)
    assert job is not None and job.state == JobState.DOWNLOADING
    assert (job.output_path, job.output_part) == (str(suffixed), part.name)
    assert job.output_sha256 is None, "no hash before the file is whole"
    entry = [e for e in store.ledger(c.job.id) if e.event == "downloading"][-1]
    assert entry.detail == {"output_path": str(suffixed), "part": part.name}
    assert store.record_download(c.token, size=len(VIDEO),
                                 sha256=hashlib.sha256(VIDEO).hexdigest(), now=clock.now())
    job = store.get_job(c.job.id)
    assert job is not None and job.state == JobState.DOWNLOADING
    assert job.output_sha256 == hashlib.sha256(VIDEO).hexdigest()
    assert job.output_size == len(VIDEO)
    assert store.mark_completed(c.token, size=len(VIDEO), sha256=job.output_sha256,
                                cost=None, now=clock.now())
    done = store.get_job(c.job.id)
    assert done is not None and done.output_path == str(suffixed), "kept at completion"


def test_record_download_is_fenced(store: Store, tmp_path: Path, clock: FakeClock) -> None:
    c, _, _ = downloading(store, tmp_path, clock)
    assert store.cancel_jobs([c.job.id], clock.now()) == [c.job.id]
    assert not store.record_download(c.token, size=1, sha256="ab" * 32, now=clock.now())
    job = store.get_job(c.job.id)
    assert job is not None and job.output_sha256 is None
    assert ("fenced_out", "record_download") in [
        (e.event, e.detail.get("write")) for e in store.ledger(c.job.id)]


def test_a_planted_file_at_the_output_path_is_not_taken_for_the_video(
        store: Store, tmp_path: Path, clock: FakeClock) -> None:
    """DOWNLOADING, no hash recorded: whatever is at the output path (here a valid video)
    is not the job's; the render is read again, with its provider job id kept."""
    c, final, _ = downloading(store, tmp_path, clock)
    final.parent.mkdir(parents=True, exist_ok=True)
    final.write_bytes(USERS)
    report = recover(store, clock)
    assert report.completed_from_disk == [] and report.reattached == [c.job.id]
    job = store.get_job(c.job.id)
    assert job is not None and job.state == JobState.RENDERING
    assert job.provider_job_id == "pj-1", "read again, never created again"
    assert final.read_bytes() == USERS, "the file is left untouched"


def test_a_file_with_another_hash_than_the_recorded_one_is_not_taken(
        store: Store, tmp_path: Path, clock: FakeClock) -> None:
    c, final, _ = downloading(store, tmp_path, clock)
    assert store.record_download(c.token, size=len(VIDEO),
                                 sha256=hashlib.sha256(VIDEO).hexdigest(), now=clock.now())
    final.parent.mkdir(parents=True, exist_ok=True)
    planted = USERS[: len(VIDEO)].ljust(len(VIDEO), b"!")  # the recorded size, other bytes
    final.write_bytes(planted)
    report = recover(store, clock)
    assert report.completed_from_disk == [] and report.reattached == [c.job.id]
    assert final.read_bytes() == planted


def test_the_recorded_file_completes_the_job_after_a_crash_before_completion(
        store: Store, tmp_path: Path, clock: FakeClock) -> None:
    """Killed between the rename and the completion: the file at the output path has the
    recorded hash, and recovery completes the job from it (no read, no create)."""
    c, final, _ = downloading(store, tmp_path, clock)
    digest = hashlib.sha256(VIDEO).hexdigest()
    assert store.record_download(c.token, size=len(VIDEO), sha256=digest, now=clock.now())
    final.parent.mkdir(parents=True, exist_ok=True)
    final.write_bytes(VIDEO)
    report = recover(store, clock)
    assert report.completed_from_disk == [c.job.id]
    job = store.get_job(c.job.id)
    assert job is not None and job.state == JobState.COMPLETED
    assert (job.output_sha256, job.output_size) == (digest, len(VIDEO))


def test_a_recorded_part_file_is_given_its_name_when_the_name_is_free(
        store: Store, tmp_path: Path, clock: FakeClock) -> None:
    """Killed between recording the hash and the rename: the recorded .part file with
    that hash becomes the video; with the name taken meanwhile (the user's file), nothing
    is replaced and the render is read again."""
    c, final, part = downloading(store, tmp_path, clock)
    digest = hashlib.sha256(VIDEO).hexdigest()
    assert store.record_download(c.token, size=len(VIDEO), sha256=digest, now=clock.now())
    final.parent.mkdir(parents=True, exist_ok=True)
    part.write_bytes(VIDEO)
    report = recover(store, clock)
    assert report.completed_from_disk == [c.job.id]
    assert final.read_bytes() == VIDEO and not part.exists()


def test_a_recorded_part_file_never_replaces_a_file_at_the_name(
        store: Store, tmp_path: Path, clock: FakeClock) -> None:
    c, final, part = downloading(store, tmp_path, clock)
    digest = hashlib.sha256(VIDEO).hexdigest()
    assert store.record_download(c.token, size=len(VIDEO), sha256=digest, now=clock.now())
    final.parent.mkdir(parents=True, exist_ok=True)
    part.write_bytes(VIDEO)
    final.write_bytes(USERS)
    report = recover(store, clock)
    assert report.completed_from_disk == [] and report.reattached == [c.job.id]
    assert final.read_bytes() == USERS
