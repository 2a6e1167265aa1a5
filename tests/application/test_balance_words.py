"""The balance in words (issue 32 item 4): what is left after the renders the balance does
not include yet, "credits low" with what the next render needs, "price unknown: set it",
and an unknown rest."""

from __future__ import annotations

import pytest

from reelqueue.application.balance_words import balance_in_words
from reelqueue.domain.models import Job
from reelqueue.domain.states import JobState
from reelqueue.store.balance import BalanceLeft

pytestmark = pytest.mark.unit


def _job(price: float | None) -> Job:
    return Job(id=7, batch_id=1, job_key="k", row_number=2, name="", prompt="p",
               provider="runway", params={}, pinned_account=None, priority=0,
               output_path="o.mp4", state=JobState.QUEUED, attempts=0, max_attempts=3,
               account=None, claim_token=None, lease_owner=None, lease_until=None,
               client_token=None, provider_job_id=None, sub_status=None, progress=None,
               run_after=0.0, output_size=None, output_sha256=None, cost=None,
               error_class=None, error_label=None, error_message=None, created_at=0.0,
               updated_at=0.0, started_at=None, finished_at=None,
               metadata={} if price is None else {"price": price})


def _left(pending: float | None) -> BalanceLeft:
    return BalanceLeft(100.0, "credits", pending, 0.01, 0.0)


def test_the_words_of_each_case() -> None:
    assert balance_in_words(_left(60.0), _job(0.6)).words == (
        "credits low: 40 left, this render needs 60")
    ok = balance_in_words(_left(0.0), _job(0.6))
    assert ok.words == "100 credits left after the renders not in the balance yet"
    assert not ok.data["low"] and ok.data["next_needs"] == pytest.approx(60.0)
    unknown = balance_in_words(_left(0.0), _job(None), "rw")
    assert unknown.words.startswith("price unknown: set it (job 7 has no price")
    assert unknown.data["price_unknown"] and unknown.data["low"]
    assert balance_in_words(_left(None), _job(0.6)).words == (
        "credits low: unknown left (a render in flight has no price)")
    assert not balance_in_words(_left(0.0), None).data["low"]
