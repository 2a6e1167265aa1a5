"""A keyboard pass over a batch's takes (issue 35 item 2), Qt-free: which take is current,
moving by take and by row, "show only unreviewed", what each key asks for, and undo.

The window's review page (ui/review_view.py) owns one :class:`ReviewPass`, turns keys into
its calls and sends the :class:`Ask` it returns to :func:`~reelqueue.application.review.
set_decision`; a change written comes back through :meth:`ReviewPass.written` (kept for
undo). Undo asks for the review the take had before, compared with the version the change
wrote: a take someone else changed since is not overwritten (ReviewConflict).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from reelqueue.application.review import TakeGroup
from reelqueue.domain.models import Job
from reelqueue.domain.review import CLEAR_RATING, Decision, Review, ReviewWritten

__all__ = ["KEYS", "Ask", "ReviewPass"]

KEYS: tuple[tuple[str, str], ...] = (
    ("P", "pick this take (one pick per row: picking another take moves it)"),
    ("Shift+P", "pick this take and go to the next row"),
    ("X", "reject this take"),
    ("U", "clear this take's decision"),
    ("1 to 5", "rate this take (0 removes the rating)"),
    ("Right / Left", "next / previous take of the row"),
    ("Down / Up", "next / previous row"),
    ("Ctrl+Z", "undo the last change made here"),
    ("Space", "play this take beside the next one of its row, from one clock (again: stop)"),
    ("Enter", "play the take in the system's player, full size"),
)
"""The review page's keys, as its help line and docs/review.md say them."""


@dataclass(frozen=True)
class Ask:
    """A change to ask the journal for.

    Attributes:
        job_id: the take. decision: the new one (None: kept). rating: 1-5,
            ``CLEAR_RATING`` or None (kept). seen_version: the version shown.
        undo: this asks to undo an earlier change (not kept for undo itself).
    """

    job_id: int
    decision: Decision | None
    rating: int | None
    seen_version: int
    undo: bool = False


@dataclass(frozen=True)
class _Done:
    job_id: int
    before: Review
    version_after: int


class ReviewPass:
    """Attributes:
        groups: the batch's rows (application.review.TakeGroup), in sheet order.
        only_unreviewed: show only rows with a finished take to review (the current row
            stays shown until the pass moves off it).
        row, take: the current row (of :attr:`visible`) and take (of its takes).
    """

    def __init__(self) -> None:
        self.groups: list[TakeGroup] = []
        self.only_unreviewed = False
        self.row = 0
        self.take = 0
        self._sticky: str | None = None
        self._undo: list[_Done] = []

    # -- what is shown -------------------------------------------------------------------
    @property
    def visible(self) -> list[TakeGroup]:
        if not self.only_unreviewed:
            return self.groups
        return [g for g in self.groups if g.unreviewed or g.key == self._sticky]

    @property
    def current_group(self) -> TakeGroup | None:
        shown = self.visible
        return shown[self.row] if 0 <= self.row < len(shown) else None

    @property
    def current(self) -> Job | None:
        group = self.current_group
        if group is None or not group.takes:
            return None
        return group.takes[min(self.take, len(group.takes) - 1)]

    def set_groups(self, groups: list[TakeGroup]) -> None:
        """New rows read from the journal; the current take stays current if it is there."""
        keep = self.current
        self.groups = list(groups)
        if keep is not None:
            self._sticky = self._group_key(keep.id)
            self._select(keep.id)
        self._clamp()

    def set_only_unreviewed(self, only: bool) -> None:
        keep = self.current
        self.only_unreviewed = only
        self._sticky = None if keep is None else self._group_key(keep.id)
        if keep is not None and not self._select(keep.id):
            self.row, self.take = 0, 0
        self._clamp()

    def _group_key(self, job_id: int) -> str | None:
        return next((g.key for g in self.groups if any(t.id == job_id for t in g.takes)),
                    None)

    def _select(self, job_id: int) -> bool:
        for r, group in enumerate(self.visible):
            for t, take in enumerate(group.takes):
                if take.id == job_id:
                    self.row, self.take = r, t
                    return True
        return False

    def _clamp(self) -> None:
        shown = self.visible
        self.row = max(0, min(self.row, len(shown) - 1)) if shown else 0
        group = self.current_group
        self.take = 0 if group is None else max(0, min(self.take, len(group.takes) - 1))

    # -- moving --------------------------------------------------------------------------
    def move_take(self, step: int) -> None:
        group = self.current_group
        if group is not None:
            self.take = max(0, min(self.take + step, len(group.takes) - 1))

    def move_row(self, step: int) -> None:
        before = self.current_group
        self.row += step
        self._sticky = None
        self._clamp()
        # leaving a row that the filter hides now: the one after it is at the same place
        if before is not None and self.only_unreviewed and before not in self.visible:
            self.row = max(0, self.row - (1 if step > 0 else 0))
            self._clamp()
        self.take = 0 if self.current_group is None else self._first_open()
        current = self.current
        self._sticky = None if current is None else self._group_key(current.id)

    def _first_open(self) -> int:
        group = self.current_group
        if group is None:
            return 0
        return next((i for i, t in enumerate(group.takes) if t in group.unreviewed), 0)

    # -- asking --------------------------------------------------------------------------
    def ask(self, decision: Decision | None, rating: int | None = None) -> Ask | None:
        """The change for the current take (None: no take, or one of a failed or
        cancelled job: there is nothing to decide on)."""
        take = self.current
        if take is None:
            return None
        return Ask(take.id, decision, rating, take.review.version)

    def written(self, done: ReviewWritten, *, undo: bool = False) -> None:
        """A change the journal wrote: shown at once (the next read confirms it) and kept
        for undo (an undo's own change is not)."""
        if not undo:
            self._undo.append(_Done(done.job_id, done.before, done.review.version))
        self._apply(done.job_id, done.review)
        for moved in done.moved_from:
            job = self._job(moved)
            if job is not None:
                self._apply(moved, replace(job.review, decision=Decision.NONE,
                                           version=job.review.version + 1))

    def undo(self) -> Ask | None:
        """The change that puts back the take changed last (None: nothing to undo)."""
        if not self._undo:
            return None
        done = self._undo.pop()
        self._select(done.job_id)
        rating = CLEAR_RATING if done.before.rating is None else done.before.rating
        return Ask(done.job_id, done.before.decision, rating, done.version_after, undo=True)

    @property
    def can_undo(self) -> bool:
        return bool(self._undo)

    def version_of(self, job_id: int) -> int | None:
        """The version of the take's review as this pass knows it (its own changes
        included): an ask sent after an earlier one of the same take names this."""
        job = self._job(job_id)
        return None if job is None else job.review.version

    def _job(self, job_id: int) -> Job | None:
        return next((t for g in self.groups for t in g.takes if t.id == job_id), None)

    def _apply(self, job_id: int, review: Review) -> None:
        self.groups = [TakeGroup(g.key, tuple(replace(t, review=review) if t.id == job_id
                                              else t for t in g.takes))
                       for g in self.groups]

    # -- counts --------------------------------------------------------------------------
    @property
    def reviewed(self) -> int:
        return sum(len(g.finished) - len(g.unreviewed) for g in self.groups)

    @property
    def total(self) -> int:
        return sum(len(g.finished) for g in self.groups)
