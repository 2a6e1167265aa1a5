"""ui/format.py: plurals, locale grouping, money and the plain job-history wording."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from reelqueue.ui import format as fmt


@pytest.fixture
def german_separators() -> Iterator[None]:
    fmt.use_locale(".", ",")
    yield
    fmt.use_locale(",", ".")


@pytest.mark.parametrize(("n", "word", "expected"), [
    (0, "render", "0 renders"), (1, "render", "1 render"), (2, "render", "2 renders"),
    (5000, "render", "5,000 renders"), (1, "new job", "1 new job"),
    (12345, "new job", "12,345 new jobs"), (2, "batch", "2 batches"),
])
def test_count_pluralises_and_groups(n: int, word: str, expected: str) -> None:
    assert fmt.count(n, word) == expected


def test_count_takes_an_explicit_plural_for_phrases() -> None:
    assert fmt.count(1, "row refused", "rows refused") == "1 row refused"
    assert fmt.count(3, "row refused", "rows refused") == "3 rows refused"


def test_money_groups_thousands_and_keeps_cents() -> None:
    assert fmt.money(12345.67) == "$12,345.67"
    assert fmt.money(0.004) == "$0.004"
    assert fmt.money(None) == "—"


def test_numbers_follow_the_locale_separators(german_separators: None) -> None:
    assert fmt.number(5000) == "5.000"
    assert fmt.money(12345.67) == "$12.345,67"
    assert fmt.count(5000, "render") == "5.000 renders"


def test_job_title_prefers_name_then_row() -> None:
    assert fmt.job_title("intro", 3, 2) == "intro"
    assert fmt.job_title(None, 3, 2) == "Row 3"  # not "Job 2": the sheet's row is 3
    assert fmt.job_title("", None, 2) == "Job 2"


def test_attempts_shown_only_while_they_still_mean_something() -> None:
    assert fmt.attempts("RENDERING", 1, 3) == "attempt 1 of 3"
    assert fmt.attempts("COMPLETED", 1, 3) == ""
    assert fmt.attempts("CANCELLED", 0, 3) == ""
    assert fmt.attempts("FAILED", 3, 3) == "3 attempts"


def test_history_detail_has_no_tokens_owner_or_resume_false() -> None:
    claim = {"owner": "inst-4f2a9c", "resume": False, "client_token": "rq-7-1a2b",
             "claim_token": 17}
    assert fmt.history_detail("claimed", claim) == ""
    text = fmt.history_detail("claimed", {"owner": "x", "resume": True})
    assert text == "picks up the render already submitted"
    submitted = fmt.history_detail("submitted", {"client_token": "rq-1", "provider_job_id":
                                                 "vid_123", "cost": 1234.5})
    assert submitted == "provider job id: vid_123, cost: $1,234.50"
    assert "False" not in fmt.history_detail("requeued", {"from": "RENDERING",
                                                          "found": False})


def test_a_routed_jobs_move_reads_as_where_from_where_to_and_why() -> None:
    """Issue 24: the job's history shows its route in words, not a dict of params."""
    taken = {"at": "claim", "from": "runway", "to": "luma", "price": 0.4,
             "params": {"duration": 5}, "why": "taken over: runway had no free slot"}
    assert fmt.history_detail("handed_over", taken) == (
        "runway → luma at $0.40 · runway had no free slot")
    refused = {"at": "refusal", "error_class": "permanent", "label": "invalid input",
               "message": "duration 7 is not accepted", "from": "runway", "to": "veo",
               "price": None, "params": {"duration": 8}}
    assert fmt.history_detail("handed_over", refused) == (
        "runway refused it (duration 7 is not accepted) → veo, price unknown")
