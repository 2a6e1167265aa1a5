"""Rows pinned to an account this machine does not have (issue 34, N1).

A sheet's ``account`` cell pins a row to one account. When no account of that name is
configured here, the job is imported all the same (on a team database another machine may
have it, and an account may be added later) but it waits until one takes it: the import
says so, naming the account and the rows, and the engine, ``status`` and the window say
why it waits, in :func:`not_configured_words`.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable
from dataclasses import dataclass

from reelqueue.domain.models import JobSpec

__all__ = ["PinnedElsewhere", "not_configured_words", "pinned_elsewhere"]


def not_configured_words(account: str) -> str:
    """What every front end says of jobs waiting for an account this machine lacks."""
    return f"pinned to account {account}, which is not configured here"


@dataclass(frozen=True)
class PinnedElsewhere:
    """Rows of a sheet pinned to an account not configured here.

    Attributes:
        account: the account the rows name.
        rows: their row numbers in the sheet (None: a row without one).
        team: the journal is a team database (another machine may render them).
    """

    account: str
    rows: tuple[int | None, ...]
    team: bool = False

    def describe(self) -> str:
        """"Rows 3, 7: pinned to account studio-b, which is not configured here; …"."""
        numbers = [str(r) for r in self.rows if r is not None]
        shown = ", ".join(numbers[:10]) + (f" and {len(numbers) - 10} more"
                                           if len(numbers) > 10 else "")
        which = (f"Row {shown}" if len(self.rows) == 1 and numbers
                 else f"Rows {shown}" if numbers else f"{len(self.rows)} rows")
        then = ("they are imported and wait for a machine of the team that has it, or until "
                f"it is added here (reelqueue accounts add {self.account} --provider …)"
                if self.team else
                "they are imported and wait until it is added (reelqueue accounts add "
                f"{self.account} --provider …, or Connect an account… in the window)")
        return f"{which}: {not_configured_words(self.account)}; {then}."


def pinned_elsewhere(jobs: Iterable[JobSpec], configured: Collection[str], *,
                     team: bool = False) -> tuple[PinnedElsewhere, ...]:
    """The jobs pinned to an account not in ``configured``, grouped by account (sorted)."""
    rows: dict[str, list[int | None]] = {}
    for job in jobs:
        if job.pinned_account is not None and job.pinned_account not in configured:
            rows.setdefault(job.pinned_account, []).append(job.row_number)
    return tuple(PinnedElsewhere(name, tuple(found), team)
                 for name, found in sorted(rows.items()))
