"""The pure comparison of cost reconciliation (domain/spend_reconcile.py): each difference
named, and the evidence for an unknown create only where the counts can tell."""

from __future__ import annotations

import math
from datetime import date

import pytest

from reelqueue.domain.spend_reconcile import (
    JournalDay,
    TableEntry,
    compare_day,
    evidence_of,
    whole_renders,
)

DAY = date(2026, 12, 6)
TABLE = TableEntry("gen4.5", 12.0, "docs.dev.runwayml.com/guides/pricing, read 2026-12-01")


def journal(creates: int, unpriced: int = 0) -> JournalDay:
    return JournalDay("rw", "gen4.5", DAY, creates, creates * 0.60, unpriced, creates * 5.0,
                      tuple(range(1, creates + 1)))


@pytest.mark.parametrize(("creates", "usage", "kind", "renders", "matching"), [
    (3, 180, "matches", None, None),
    (3, 181, "matches", None, None),           # within 1 %: providers round per render
    (3, 216, "price_drift", None, 14.4),       # +20 %, not a whole render
    (3, 150, "price_drift", None, 10.0),       # charged less, not a whole render
    (2, 180, "unknown_renders", 1, 18.0),      # one more render, or a +50 % drift
    (0, 60, "unknown_renders", None, None),    # nothing started, usage anyway
    (3, 120, "refund", 1, None),               # one render's worth less
    (0, -30, "refund", None, None),            # net negative: refunds exceeded charges
])
def test_each_difference_is_named(creates: int, usage: float, kind: str,
                                  renders: int | None, matching: float | None) -> None:
    line = compare_day(journal(creates), usage, "credits", 0.01, TABLE)
    assert line.kind == kind
    assert line.renders == renders
    assert line.matching_per_second == (None if matching is None else pytest.approx(matching))
    assert line.journal_units == pytest.approx(creates * 60)
    assert line.drift_also_fits == (kind == "unknown_renders" and creates > 0)


@pytest.mark.parametrize("usage", [None, math.nan, math.inf, 1e12])
def test_an_unusable_figure_is_unavailable(usage: float | None) -> None:
    line = compare_day(journal(2), usage, "credits", 0.01, TABLE, "the answer was odd")
    assert line.kind == "unavailable" and line.provider_units is None and line.why


def test_unpriced_creates_or_an_unconvertible_unit_are_unavailable_not_a_guess() -> None:
    assert compare_day(journal(2, unpriced=1), 120, "credits", 0.01, TABLE).kind == \
        "unavailable"
    line = compare_day(journal(2), 120, "credits", None, TABLE)
    assert line.kind == "unavailable" and "cannot be converted" in line.why


def test_whole_renders_needs_a_whole_number() -> None:
    assert whole_renders(120, 60) == 2 and whole_renders(61, 60) == 1
    assert whole_renders(90, 60) is None and whole_renders(10, 0) is None


@pytest.mark.parametrize(("creates", "usage", "verdict"), [
    (1, 60, "billed"), (1, 0, "not_counted"), (1, 45, "not_provable"),
    (2, 60, "not_provable"), (3, 0, "not_provable"), (1, None, "unavailable"),
    (1, math.nan, "unavailable"),
])
def test_the_evidence_for_an_unknown_create(creates: int, usage: float | None,
                                            verdict: str) -> None:
    evidence = evidence_of(DAY, creates, usage, "credits", 60.0, "the answer was odd")
    assert evidence.verdict == verdict
    if verdict == "not_provable" and creates != 1:
        assert evidence.why == f"{creates} creates in the window"
