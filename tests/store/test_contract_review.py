"""Store contract for review decisions (issue 35 item 2): every store alike."""

from __future__ import annotations

from pathlib import Path

import pytest

from reelqueue.domain.clock import FakeClock
from reelqueue.domain.errors import InputError
from reelqueue.domain.models import BatchSpec, JobSpec
from reelqueue.domain.review import (
    CLEAR_RATING,
    Decision,
    ReviewChange,
    ReviewConflict,
    ReviewRefused,
    take_group,
)
from reelqueue.store.base import Store

pytestmark = pytest.mark.unit


def takes(store: Store, tmp_path: Path, clock: FakeClock, keys: list[str],
          settings: dict[str, object] | None = None) -> list[int]:
    batch = store.create_batch(BatchSpec("b", "s.csv", "b"), clock.now())
    if settings:
        store.update_batch_settings(batch.id, settings, clock.now())
    added = store.add_jobs(batch.id, [
        JobSpec(job_key=k, prompt="p", provider="mock", output_path=f"b/{i}.mp4",
                row_number=2) for i, k in enumerate(keys)], clock.now())
    return list(added.job_ids)


def change(job_id: int, decision: Decision | None, seen: int, *, by: str = "ana",
           rating: int | None = None, now: float = 10.0) -> ReviewChange:
    return ReviewChange(job_id, decision, rating, seen, by, now)


def decisions(store: Store, ids: list[int]) -> list[str]:
    found = [store.get_job(i) for i in ids]
    return [str(j.review.decision) for j in found if j is not None]


def test_take_groups_of_keys() -> None:
    assert {take_group(k) for k in ("r1", "r1#2", "r1~seed42", "r1#3~seed7")} == {"r1"}
    assert take_group("r1#x") == "r1#x"


def test_a_decision_is_on_the_row_with_its_ledger_entry(
    store: Store, tmp_path: Path, clock: FakeClock,
) -> None:
    (job,) = takes(store, tmp_path, clock, ["r1"])
    fresh = store.get_job(job)
    assert fresh is not None and fresh.review.version == 0
    assert str(fresh.review.decision) == "none" and fresh.review.decided_by is None
    written = store.set_review(change(job, Decision.REJECT, 0, rating=2))
    assert written.review.version == 1 and written.moved_from == ()
    got = store.get_job(job)
    assert got is not None
    assert (got.review.decision, got.review.rating, got.review.decided_at,
            got.review.decided_by, got.review.version) == (Decision.REJECT, 2, 10.0, "ana", 1)
    # a rating alone keeps the decision; CLEAR_RATING removes it
    store.set_review(change(job, None, 1, rating=5, now=11.0))
    store.set_review(change(job, None, 2, rating=CLEAR_RATING, now=12.0))
    got = store.get_job(job)
    assert got is not None and got.review.decision is Decision.REJECT
    assert got.review.rating is None and got.review.version == 3
    entries = [e for e in store.ledger(job_id=job) if e.event == "reviewed"]
    assert [(e.detail["from"], e.detail["to"], e.detail["rating"]) for e in entries] == [
        ("none", "reject", 2), ("reject", "reject", 5), ("reject", "reject", None)]
    assert all(e.detail["by"] == "ana" for e in entries)


def test_a_change_on_a_version_not_seen_is_refused_with_who_changed_it(
    store: Store, tmp_path: Path, clock: FakeClock,
) -> None:
    (job,) = takes(store, tmp_path, clock, ["r1"])
    store.set_review(change(job, Decision.PICK, 0, by="bo"))
    with pytest.raises(ReviewConflict, match="changed by bo meanwhile") as raised:
        store.set_review(change(job, Decision.REJECT, 0, by="ana"))
    assert raised.value.current.decision is Decision.PICK
    assert decisions(store, [job]) == ["pick"], "never a silent overwrite"
    assert len([e for e in store.ledger(job_id=job) if e.event == "reviewed"]) == 1


def test_one_pick_per_row_moves_in_the_same_change(
    store: Store, tmp_path: Path, clock: FakeClock,
) -> None:
    ids = takes(store, tmp_path, clock, ["r1", "r1#2", "r1#3", "r2", "r2#2"])
    store.set_review(change(ids[0], Decision.PICK, 0, rating=4))
    store.set_review(change(ids[3], Decision.PICK, 0))
    written = store.set_review(change(ids[1], Decision.PICK, 0, by="bo"))
    assert written.moved_from == (ids[0],)
    assert decisions(store, ids) == ["none", "pick", "none", "pick", "none"]
    moved = store.get_job(ids[0])
    assert moved is not None and moved.review.rating == 4 and moved.review.version == 2
    entry = [e for e in store.ledger(job_id=ids[0]) if e.event == "reviewed"][-1]
    assert entry.detail["moved_to"] == ids[1] and entry.detail["by"] == "bo"
    # a reject never moves a pick
    store.set_review(change(ids[2], Decision.REJECT, 0))
    assert decisions(store, ids) == ["none", "pick", "reject", "pick", "none"]


def test_a_reroll_batch_shares_its_rows_picks(
    store: Store, tmp_path: Path, clock: FakeClock,
) -> None:
    first = takes(store, tmp_path, clock, ["r1", "r1#2"])
    job = store.get_job(first[0])
    assert job is not None
    again = takes(store, tmp_path, clock, ["r1~seed9"], {"reroll_of": job.batch_id})
    store.set_review(change(first[1], Decision.PICK, 0))
    written = store.set_review(change(again[0], Decision.PICK, 0))
    assert written.moved_from == (first[1],)
    assert decisions(store, first + again) == ["none", "none", "pick"]


def test_failed_or_cancelled_takes_take_no_decision(
    store: Store, tmp_path: Path, clock: FakeClock,
) -> None:
    ids = takes(store, tmp_path, clock, ["r1", "r1#2"])
    assert store.cancel_jobs([ids[0]], clock.now()) == [ids[0]]
    with pytest.raises(ReviewRefused):
        store.set_review(change(ids[0], Decision.PICK, 0))
    assert decisions(store, ids) == ["none", "none"]
    assert not [e for e in store.ledger() if e.event == "reviewed"]
    with pytest.raises(InputError, match="no job"):
        store.set_review(change(9999, Decision.PICK, 0))
    with pytest.raises(InputError, match="rating"):
        change(ids[1], None, 0, rating=6)
