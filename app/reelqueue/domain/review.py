"""A take's review decision (issue 35 item 2): pick, reject or none, a rating, when and by
whom, kept on the job's row; and the take group a job belongs to.

A change names the decision version the reviewer saw (:attr:`ReviewChange.seen_version`):
the store writes it only if the row still has that version (compare-and-set), so two
reviewers on one team database get :class:`ReviewConflict` ("changed by X meanwhile"),
never a silent overwrite. A pick moves: one pick per take group, in the same
transaction. Failed and cancelled takes take no decision (:class:`ReviewRefused`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import StrEnum

from reelqueue.domain.errors import InputError
from reelqueue.domain.states import JobState


class Decision(StrEnum):
    """A take's decision, as the journal spells it (``jobs.decision``)."""

    NONE = "none"
    PICK = "pick"
    REJECT = "reject"


MAX_REVIEWER_CHARS = 200
"""A reviewer's name is cut to this (``jobs.decided_by`` has the same CHECK)."""

REFUSED_STATES = frozenset({JobState.FAILED, JobState.CANCELLED})
"""Takes that take no decision: nothing was made to judge."""

CLEAR_RATING = 0
"""``ReviewChange.rating`` that removes the rating (None keeps it)."""


@dataclass(frozen=True)
class Review:
    """A job's review as the journal has it.

    Attributes:
        decision: pick, reject or none. rating: 1-5, or None.
        decided_at, decided_by: the last change's time and reviewer (None: never).
        version: how many changes were written; a change names the one it saw.
    """

    decision: Decision = Decision.NONE
    rating: int | None = None
    decided_at: float | None = None
    decided_by: str | None = None
    version: int = 0

    def as_dict(self) -> dict[str, object]:
        return {"decision": str(self.decision), "rating": self.rating,
                "decided_at": self.decided_at, "decided_by": self.decided_by,
                "version": self.version}


NO_REVIEW = Review()


@dataclass(frozen=True)
class ReviewChange:
    """One reviewer's change to one take.

    Attributes:
        job_id: the take. decision: the new one, or None to keep it.
        rating: 1-5; :data:`CLEAR_RATING` removes it; None keeps it.
        seen_version: the :attr:`Review.version` the reviewer saw (compare-and-set).
        by: the reviewer (cut to :data:`MAX_REVIEWER_CHARS`). now: the change's time.
    """

    job_id: int
    decision: Decision | None
    rating: int | None
    seen_version: int
    by: str
    now: float

    def __post_init__(self) -> None:
        if self.rating is not None and self.rating != CLEAR_RATING and not (
                1 <= self.rating <= 5):
            raise InputError("A rating is 1 to 5 (or 0 to clear it).")
        if self.seen_version < 0:
            raise InputError("A review version is 0 or more.")

    @property
    def reviewer(self) -> str:
        return reviewer_name(self.by)

    def applied_to(self, review: Review) -> Review:
        """The review after this change (the store writes these values)."""
        rating = review.rating if self.rating is None else (
            None if self.rating == CLEAR_RATING else self.rating)
        return Review(self.decision if self.decision is not None else review.decision,
                      rating, self.now, self.reviewer, review.version + 1)


def reviewer_name(by: str) -> str:
    """A reviewer's name as stored: printable, bounded, never empty."""
    plain = "".join(c for c in by if c.isprintable()).strip()[:MAX_REVIEWER_CHARS]
    return plain or "someone"


@dataclass(frozen=True)
class ReviewWritten:
    """A change the store wrote.

    Attributes:
        job_id: the take. review: its review now. before: what it replaced.
        moved_from: the takes of its group whose pick this pick took (now undecided).
    """

    job_id: int
    review: Review
    before: Review
    moved_from: tuple[int, ...] = ()

    def as_dict(self) -> dict[str, object]:
        return {"job_id": self.job_id, "review": self.review.as_dict(),
                "before": self.before.as_dict(), "moved_from": list(self.moved_from)}


def review_detail(change: ReviewChange, before: Review, after: Review,
                  moved_to: int | None = None) -> dict[str, object]:
    """The detail of the ``reviewed`` ledger entry a change writes (each store alike)."""
    detail: dict[str, object] = {
        "from": str(before.decision), "to": str(after.decision), "rating": after.rating,
        "by": after.decided_by, "version": after.version}
    if before.rating != after.rating:
        detail["rating_from"] = before.rating
    if moved_to is not None:
        detail["moved_to"] = moved_to
    return detail


REVIEWED_EVENT = "reviewed"


class ReviewRefused(InputError):
    """A failed or cancelled take: there is nothing to pick or reject."""

    def __init__(self, message: str | None = None) -> None:
        super().__init__(message or "This take failed or was cancelled: there is nothing to "
                         "pick or reject; re-roll the row for a new take.")


class ReviewConflict(InputError):
    """This take was changed by another reviewer meanwhile.
    Look at it again, then decide."""

    def __init__(self, job_id: int, current: Review) -> None:
        who = current.decided_by or "someone"
        super().__init__(
            f"Take {job_id} was changed by {who} meanwhile (now: {current.decision}"
            f"{'' if current.rating is None else f', rated {current.rating}'}); "
            "look at it again, then decide.")
        self.job_id = job_id
        self.current = current


_VARIANT = re.compile(r"~seed.*$", re.DOTALL)
_REPEAT = re.compile(r"#[0-9]+$")


def take_group(job_key: str) -> str:
    """The row a take belongs to: ``K``, ``K#n`` (the sheet's repeats) and ``K~seed...``
    (variants and re-rolls, engine/retry_plan.py ``VARIANT_KEY``) are all row ``K``."""
    return _REPEAT.sub("", _VARIANT.sub("", job_key))


__all__ = [
    "CLEAR_RATING",
    "MAX_REVIEWER_CHARS",
    "NO_REVIEW",
    "REFUSED_STATES",
    "REVIEWED_EVENT",
    "Decision",
    "Review",
    "ReviewChange",
    "ReviewConflict",
    "ReviewRefused",
    "ReviewWritten",
    "review_detail",
    "reviewer_name",
    "take_group",
]
