"""A batch's takes, grouped by the sheet row they repeat (issue 35 item 1).

A row's takes are its repeats: the row's key ``K`` (take 1), ``K#n`` (take n of ``repeat``)
and the new-seed renders of any of them, ``K~seedN`` or ``K#n~seedN``
(:data:`reelqueue.engine.retry_plan.VARIANT_KEY`). They are one *take group*, keyed ``K``.
There is no second mechanism: a take is a job, its seed is in its params.

Groups come in sheet order (the row number of their first take, then the key); the takes
of a group in take order (n, then new seeds in the order they were added). The review
(picking a take) and the cut (``reelqueue cut``, :mod:`reelqueue.application.cut`) both
read them from here.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from reelqueue.domain.models import Job
from reelqueue.domain.review import take_group
from reelqueue.engine.retry_plan import VARIANT_KEY

__all__ = ["TakeGroup", "take_group_key", "take_groups", "take_number"]

_TAKE = re.compile(r"#([0-9]+)$")


def _split(job_key: str) -> tuple[str, int, bool]:
    """(group key, take number, is a new-seed render) of ``job_key``."""
    base, variant, _seed = job_key.partition(VARIANT_KEY)
    match = _TAKE.search(base)
    if match is None:
        return base, 1, bool(variant)
    return base[:match.start()], int(match.group(1)), bool(variant)


def take_group_key(job_key: str) -> str:
    """The key of the row whose take ``job_key`` is: ``K#3~seed42`` -> ``K`` (the one rule,
    :func:`reelqueue.domain.review.take_group`: the store's one-pick rule reads it too)."""
    return take_group(job_key)


def take_number(job_key: str) -> int:
    """Which repeat of its row ``job_key`` is (1 for the row's own key)."""
    return _split(job_key)[1]


@dataclass(frozen=True)
class TakeGroup:
    """One sheet row and its takes.

    Attributes:
        key: the row's key (``K``).
        row_number: the sheet row (None: a job that came from no sheet row).
        name: the row's name (its first take's).
        takes: the row's jobs in take order.
    """

    key: str
    row_number: int | None
    name: str
    takes: tuple[Job, ...]

    def take(self, job_id_or_key: int | str) -> Job | None:
        """The take with this job id or job key (None: not one of this row's)."""
        for job in self.takes:
            if job.id == job_id_or_key or job.job_key == job_id_or_key:
                return job
        return None


def _take_order(job: Job) -> tuple[int, bool, int]:
    _key, n, variant = _split(job.job_key)
    return n, variant, job.id


def take_groups(jobs: Iterable[Job]) -> list[TakeGroup]:
    """``jobs`` (one batch's) grouped by row, in sheet order, takes in take order."""
    by_key: dict[str, list[Job]] = {}
    for job in jobs:
        by_key.setdefault(take_group_key(job.job_key), []).append(job)
    groups = []
    for key, members in by_key.items():
        members.sort(key=_take_order)
        rows = [job.row_number for job in members if job.row_number is not None]
        groups.append(TakeGroup(key, min(rows) if rows else None, members[0].name,
                                tuple(members)))
    # Rows without a number (none today: every job comes from a sheet row) go last.
    groups.sort(key=lambda g: (g.row_number is None, g.row_number or 0,
                               min(job.id for job in g.takes)))
    return groups
