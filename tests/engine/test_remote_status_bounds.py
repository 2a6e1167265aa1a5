"""What an adapter reads from a poll answer reaches the engine as sane numbers, whatever
the answer said (a broken gateway, a hostile server, a plug-in that passes a field on as
it came): the engine sleeps on the hint and writes progress and cost to the journal."""

from __future__ import annotations

import math

import pytest

from reelqueue.domain.states import RemotePhase
from reelqueue.providers.base import MAX_POLL_AFTER_SECONDS, MAX_SUB_STATUS_CHARS, RemoteStatus

NAN, INF = math.nan, math.inf


@pytest.mark.parametrize(("given", "kept"), [
    (None, None), (0.5, 0.5), (1, 1.0), (1.7, 1.0), (-0.2, 0.0), (NAN, None), (INF, None),
    (True, None), ("0.5", None)])
def test_progress_is_a_fraction_or_none(given: object, kept: float | None) -> None:
    assert RemoteStatus(RemotePhase.RUNNING, progress=given).progress == kept  # type: ignore[arg-type]


@pytest.mark.parametrize(("given", "kept"), [
    (None, None), (5.0, 5.0), (0, 0.0), (-3.0, 0.0), (1e9, MAX_POLL_AFTER_SECONDS),
    (NAN, None), (INF, None), (-INF, None)])
def test_the_poll_hint_is_bounded(given: float | None, kept: float | None) -> None:
    """A NaN or infinite hint would reach asyncio.sleep; a year-long one would leave a
    finished render unseen: ten minutes at most."""
    assert RemoteStatus(RemotePhase.QUEUED, poll_after=given).poll_after == kept


@pytest.mark.parametrize(("given", "kept"), [
    (None, None), (0.0, 0.0), (0.35, 0.35), (-1.0, None), (NAN, None), (INF, None)])
def test_a_reported_cost_is_a_finite_amount_or_unknown(given: float | None,
                                                       kept: float | None) -> None:
    assert RemoteStatus(RemotePhase.SUCCEEDED, cost=given).cost == kept


@pytest.mark.parametrize(("given", "kept"), [
    ("RUNNING", "RUNNING"), ("", ""), (None, ""), ("a\nb\x1b[31m", "a b [31m"),
    ("x" * 5000, "x" * MAX_SUB_STATUS_CHARS + "…")])
def test_the_state_word_is_a_word(given: object, kept: str) -> None:
    """It is written to the journal at each change and shown in every front end: an
    unknown state passed on as it came is cut and cleaned, never a document."""
    assert RemoteStatus(RemotePhase.RUNNING, sub_status=given).sub_status == kept  # type: ignore[arg-type]
