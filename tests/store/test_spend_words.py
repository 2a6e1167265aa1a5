"""Today's spend in one set of words for the window's card, ``status``, ``spend`` and the
stall reason (issue 23: the card said "$0.00 of $0.50" and ``status`` "$0.93 of $0.50")."""

from __future__ import annotations

import pytest

from reelqueue.engine.events import spend_cap_reasons
from reelqueue.store.spend import AccountSpend, BatchSpend, SpendSummary

pytestmark = pytest.mark.unit


def test_today_counts_the_renders_being_started_and_says_so() -> None:
    capped = AccountSpend("m1", spent_today=0.48, reserved=0.45, cap=0.5, waiting=3)
    assert capped.committed == pytest.approx(0.93)
    assert capped.describe() == "$0.93 of $0.50 ($0.45 for renders starting)"
    plain = AccountSpend("m2", spent_today=1.2, reserved=0.0, cap=None, waiting=0)
    assert plain.describe() == "$1.20"
    batch = BatchSpend(1, "shots", spent=0.2, reserved=0.0, cap=0.2, waiting=3)
    assert batch.describe() == "$0.20 of $0.20"
    (account_reason, batch_reason) = spend_cap_reasons(SpendSummary((batch,), (capped,)))
    assert account_reason.detail == ("spend cap reached: $0.93 of $0.50 ($0.45 for renders "
                                     "starting) today, 3 waiting")
    assert batch_reason.detail == "spend cap reached: $0.20 of $0.20, 3 waiting"


def test_a_spend_refunded_to_zero_reads_zero() -> None:
    """Charges and their refunds (a lost mock render) can sum to -1e-17."""
    refunded = AccountSpend("m", spent_today=0.05 + 0.07 - 0.07 - 0.05 - 1e-17,
                            reserved=0.0, cap=0.5, waiting=0)
    assert refunded.describe() == "$0.00 of $0.50"
