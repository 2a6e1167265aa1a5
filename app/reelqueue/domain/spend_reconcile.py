"""Cost reconciliation (issue 32 items 5 and 6), the pure comparison: what the journal
started and priced on one account, model and UTC day, against what the provider reports
it used, and the name of each difference.

Stdlib only: the provider's usage is read by an adapter (``providers.base.UsageProvider``),
the journal's figures are gathered by ``application.spend_reconcile``, which also words
the result. Nothing here starts, stops or creates anything.

The names (``DayKind``):

- ``matches``: the provider used what the journal priced (within :data:`TOLERANCE`).
- ``unknown_renders``: the provider used more, a whole number of the day's renders more:
  renders the journal does not know (another tool on the key, or a lost create that was
  billed). Where the journal started renders that day, a price drift could explain the
  same figure; the alternative is kept (``drift``) and said.
- ``price_drift``: the provider used more or less than the table by a share that is not a
  whole number of renders: the table's entry and the price that would match are given.
- ``refund``: the provider used less, a whole number of renders less (failed renders it
  did not charge, or gave back), or a net figure below zero (Runway: "negative if refunds
  exceeded charges").
- ``unavailable``: the provider's figures for that day and model could not be used.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import date
from typing import Literal

__all__ = ["ABSURD_UNITS", "MAX_USAGE_DAYS", "TOLERANCE", "DayKind", "DayLine", "Evidence",
           "JournalDay", "TableEntry", "UsageDay", "UsageReport", "Verdict", "compare_day",
           "evidence_of", "whole_renders"]

DayKind = Literal["matches", "unknown_renders", "price_drift", "refund", "unavailable"]

TOLERANCE = 0.01
"""A day matches when the provider's figure is within 1 % (and half a unit) of the
journal's: providers round per render."""
WHOLE = 0.02
"""A difference within 2 % of a whole number of the day's renders counts as renders."""
ABSURD_UNITS = 1e9
"""A day's usage above this is absurd (no account spends a billion credits a day)."""


@dataclass(frozen=True)
class JournalDay:
    """What the journal started on one account, model and UTC day.

    Attributes:
        account: the account. model: the provider's model id. day: the UTC day.
        creates: creates started (a submission intent written: its create may have left).
        priced_usd: their prices, net of prices given back (the spend ledger).
        unpriced: creates started without a price.
        seconds: the clip seconds of those creates.
        job_ids: the jobs, in order.
    """

    account: str
    model: str
    day: date
    creates: int = 0
    priced_usd: float = 0.0
    unpriced: int = 0
    seconds: float = 0.0
    job_ids: tuple[int, ...] = ()


@dataclass(frozen=True)
class UsageDay:
    """What the provider reports it used on one model and UTC day, in its unit (net:
    negative when refunds exceeded charges)."""

    model: str
    day: date
    amount: float


MAX_USAGE_DAYS = 90
"""At most this many days are asked for at once (Runway's own bound on a usage query)."""


@dataclass(frozen=True)
class UsageReport:
    """A provider's usage per model and UTC day, as one read gave it.

    Attributes:
        unit: what ``amount`` counts ("credits").
        start: the first day asked for. end: the day after the last (not included).
        days: each model's usage on each day it used any; a day or model not listed used
            nothing (when ``problem`` is None).
        read_at: when it was read (Unix seconds).
        problem: why the figures are unavailable, in the user's words; None when usable.
            A report with a problem holds no figure: a partial one would be read as
            "nothing used".
    """

    unit: str
    start: date
    end: date
    days: tuple[UsageDay, ...]
    read_at: float
    problem: str | None = None


@dataclass(frozen=True)
class TableEntry:
    """The price-table entry a model's creates were priced from.

    Attributes:
        model: the model. unit_per_second: its price in the provider's unit, None when
            not published in that unit. source: where the price comes from and when it
            was read (the adapter's ``price_source``).
    """

    model: str
    unit_per_second: float | None
    source: str


@dataclass(frozen=True)
class DayLine:
    """One account, model and day reconciled.

    Attributes:
        journal: what the journal started (creates 0 when it knows none).
        provider_units: what the provider used, in ``unit``; None: unavailable.
        journal_units: the journal's prices in ``unit``; None: not convertible.
        kind: the difference's name (module docstring).
        renders: for ``unknown_renders`` and ``refund``, how many renders' worth.
        matching_per_second: for ``price_drift`` (and the drift alternative of
            ``unknown_renders``), the price per second in ``unit`` that would match.
        drift_also_fits: ``unknown_renders`` on a day the journal started renders: a price
            drift of ``matching_per_second`` would give the same figure.
        why: for ``unavailable``, why.
    """

    journal: JournalDay
    unit: str
    provider_units: float | None
    journal_units: float | None
    kind: DayKind
    table: TableEntry | None = None
    renders: int | None = None
    matching_per_second: float | None = None
    drift_also_fits: bool = False
    why: str = ""

    @property
    def difference(self) -> float | None:
        if self.provider_units is None or self.journal_units is None:
            return None
        return self.provider_units - self.journal_units


def whole_renders(difference: float, per_render: float) -> int | None:
    """``difference`` as a whole number of renders of ``per_render`` (None: not whole)."""
    if not per_render > 0:
        return None
    count = abs(difference) / per_render
    nearest = round(count)
    if nearest >= 1 and abs(count - nearest) <= WHOLE * max(1, nearest):
        return nearest
    return None


def compare_day(journal: JournalDay, usage: float | None, unit: str,
                usd_per_unit: float | None, table: TableEntry | None,
                why_unavailable: str = "") -> DayLine:
    """The name of the difference between ``journal`` and the provider's ``usage``
    (None: unavailable, ``why_unavailable`` says why)."""
    if usage is None or not math.isfinite(usage) or abs(usage) > ABSURD_UNITS:
        return DayLine(journal, unit, None, None, "unavailable", table,
                       why=why_unavailable or "the provider's figure is unusable")
    if usd_per_unit is None or not usd_per_unit > 0:
        return DayLine(journal, unit, usage, None, "unavailable", table,
                       why=f"the table's USD prices cannot be converted to {unit}")
    mine = round(journal.priced_usd / usd_per_unit, 6)  # $1.80 / 0.01 is 179.999...
    if journal.unpriced:
        return DayLine(journal, unit, usage, mine, "unavailable", table,
                       why=f"{journal.unpriced} of the journal's creates have no price")
    difference = usage - mine
    if abs(difference) <= max(0.5, TOLERANCE * abs(mine)):
        return DayLine(journal, unit, usage, mine, "matches", table)
    per_render = mine / journal.creates if journal.creates else 0.0
    matching = _matching(usage, journal, table)
    if difference > 0:
        if journal.creates == 0:
            return DayLine(journal, unit, usage, mine, "unknown_renders", table)
        renders = whole_renders(difference, per_render)
        if renders is not None:
            return DayLine(journal, unit, usage, mine, "unknown_renders", table, renders,
                           matching, drift_also_fits=matching is not None)
        return DayLine(journal, unit, usage, mine, "price_drift", table,
                       matching_per_second=matching)
    renders = whole_renders(difference, per_render)
    if usage < 0 or renders is not None:
        return DayLine(journal, unit, usage, mine, "refund", table, renders)
    return DayLine(journal, unit, usage, mine, "price_drift", table,
                   matching_per_second=matching)


def _matching(usage: float, journal: JournalDay, table: TableEntry | None) -> float | None:
    """The price per second that would make the journal's creates cost ``usage``."""
    if journal.seconds > 0 and usage >= 0:
        return round(usage / journal.seconds, 4)
    return None


Verdict = Literal["billed", "not_counted", "not_provable", "unavailable"]


@dataclass(frozen=True)
class Evidence:
    """What the provider's counts say of one unknown create (issue 32 item 6): never a
    reason to create anything (DESIGN.md invariant 11); the user decides.

    Attributes:
        verdict: "billed" (the provider counted it), "not_counted", "not_provable" (other
            creates share the counting window, or the figure fits neither), "unavailable".
        day: the UTC day (the counting window) of the create.
        creates_in_window: the journal's creates on that account, model and day.
        provider_units: the provider's usage that day for the model, in ``unit``.
        price_units: the create's price in ``unit``.
        why: for "unavailable" and "not_provable", why.
    """

    verdict: Verdict
    day: date
    unit: str = ""
    creates_in_window: int = 0
    provider_units: float | None = None
    price_units: float | None = None
    why: str = ""


def evidence_of(day: date, creates_in_window: int, usage: float | None, unit: str,
                price_units: float | None, why_unavailable: str = "") -> Evidence:
    """The provider's counts on the day of a lost create: they prove something only when
    that create is the only one the journal started on the account and model that day."""
    if usage is None or not math.isfinite(usage) or abs(usage) > ABSURD_UNITS:
        return Evidence("unavailable", day, unit, creates_in_window,
                        why=why_unavailable or "the provider's figure is unusable")
    if creates_in_window != 1:
        return Evidence("not_provable", day, unit, creates_in_window, usage, price_units,
                        why=f"{creates_in_window} creates in the window")
    if abs(usage) <= 0.5:
        return Evidence("not_counted", day, unit, 1, usage, price_units)
    if price_units is not None and price_units > 0 and abs(usage - price_units) <= max(
            0.5, TOLERANCE * price_units):
        return Evidence("billed", day, unit, 1, usage, price_units)
    return Evidence("not_provable", day, unit, 1, usage, price_units,
                    why="the provider's figure is not this create's price (another tool "
                        "on the key, or a price drift)")
