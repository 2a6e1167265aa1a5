"""The keyboard pass without a window (application/review_pass.py): moving, the filter
keeping the current row, asks naming the version shown, undo naming the version its change
wrote, a moved pick shown at once."""

from __future__ import annotations

from dataclasses import replace

import pytest

from reelqueue.application.review import group_takes
from reelqueue.application.review_pass import ReviewPass
from reelqueue.domain.models import BatchSpec, JobSpec
from reelqueue.domain.review import CLEAR_RATING, Decision, ReviewChange
from reelqueue.domain.states import JobState
from reelqueue.store.memory import MemoryStore

pytestmark = pytest.mark.unit


def store_of_rows(rows: int = 3, takes: int = 2) -> tuple[MemoryStore, list[int]]:
    store = MemoryStore()
    batch = store.create_batch(BatchSpec("b", "s.csv", "b"), 1.0)
    ids = list(store.add_jobs(batch.id, [
        JobSpec(f"r{r}" if n == 1 else f"r{r}#{n}", "p", "mock", f"b/{r}{n}.mp4",
                row_number=r + 2) for r in range(rows) for n in range(1, takes + 1)],
        1.0).job_ids)
    return store, ids


def test_moves_asks_and_undo() -> None:
    store, ids = store_of_rows()
    review = ReviewPass()
    review.set_groups(group_takes(store.list_jobs()))
    assert review.current is not None and review.current.id == ids[0]
    review.move_take(1)
    ask = review.ask(Decision.PICK)
    assert ask is not None and (ask.job_id, ask.seen_version) == (ids[1], 0)
    done = store.set_review(ReviewChange(ask.job_id, ask.decision, ask.rating,
                                         ask.seen_version, "t", 2.0))
    review.written(done)
    assert review.version_of(ids[1]) == 1 and review.can_undo
    # another pick of the row moves it: shown at once on both takes
    review.move_take(-1)
    ask = review.ask(Decision.PICK, 3)
    assert ask is not None
    done = store.set_review(ReviewChange(ask.job_id, ask.decision, ask.rating,
                                         ask.seen_version, "t", 3.0))
    review.written(done)
    shown = {t.id: str(t.review.decision) for t in review.groups[0].takes}
    assert shown == {ids[0]: "pick", ids[1]: "none"}
    undo = review.undo()
    assert undo is not None and undo.undo
    assert (undo.job_id, undo.decision, undo.rating, undo.seen_version) == (
        ids[0], Decision.NONE, CLEAR_RATING, 1)
    assert review.current is not None and review.current.id == ids[0]
    review.written(store.set_review(ReviewChange(
        undo.job_id, undo.decision, undo.rating, undo.seen_version, "t", 4.0)), undo=True)
    assert review.undo() is not None, "the first change is still there to undo"
    assert review.undo() is None


def test_show_only_unreviewed_keeps_the_current_row_until_the_pass_moves_off() -> None:
    store, ids = store_of_rows()
    for job_id in ids[:2]:
        store.set_review(ReviewChange(job_id, Decision.REJECT, None, 0, "t", 2.0))
    # only finished takes are "to review": the takes as read once rendered
    finished = [replace(j, state=JobState.COMPLETED, finished_at=1.0)
                for j in store.list_jobs()]
    review = ReviewPass()
    review.set_groups(group_takes(finished))
    review.set_only_unreviewed(True)
    assert [g.key for g in review.visible] == ["r0", "r1", "r2"], "row r0 is current: kept"
    review.move_row(1)
    assert [g.key for g in review.visible] == ["r1", "r2"]
    assert review.current is not None and review.current.id == ids[2]
