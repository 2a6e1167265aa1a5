"""The account view's words (issue 32 item 2), made in one place for every front end:
balance with its unit and "as of HH:MM", stale after 15 minutes, per-model limits with a
0 shown as it is, one balance for accounts of one organization, and what is missing."""

from __future__ import annotations

import math
from datetime import datetime

import pytest

from reelqueue.application.account_views import STALE_SECONDS, describe_views, limit_words
from reelqueue.domain.account_view import AccountView, Balance, ModelLimit, unavailable_view
from reelqueue.domain.models import Account
from reelqueue.domain.states import AccountStatus

pytestmark = pytest.mark.unit

NOW = 1_800_000_000.0
TITLES = {"runway": "Runway", "veo": "Google Veo", "luma-legacy": "Luma"}


def _account(name: str, provider: str = "runway", position: int = 1) -> Account:
    return Account(name=name, provider=provider, capacity=2, position=position, enabled=True,
                   base_url=None, key_ref=None, status=AccountStatus.READY,
                   status_detail=None, cooldown_until=None, settings={}, created_at=0.0)


def _hhmm(when: float) -> str:
    return datetime.fromtimestamp(when).strftime("%H:%M")


def test_limits_say_each_figure_and_never_hide_a_zero() -> None:
    assert limit_words(ModelLimit("gen4.5", 2, 50, "unknown", 12)) == (
        "gen4.5: 2 at once, 50 a day (12 used)")
    assert limit_words(ModelLimit("gen4.5", 0, 0, "rolling_24h", 0)) == (
        "gen4.5: 0 at once, 0 a day (0 used, rolling 24 h)")
    assert limit_words(ModelLimit("veo3.1", None, None, "utc_day", None)) == (
        "veo3.1: renders at once unavailable, daily count unavailable "
        "(used today unavailable, UTC day)")


def test_each_kind_of_view_in_words() -> None:
    accounts = [_account("a", position=1), _account("b", position=2),
                _account("v", "veo", 3), _account("l", "luma-legacy", 4),
                _account("x", position=5), _account("s", position=6)]
    fresh = NOW - 60
    views = [
        AccountView("a", Balance(4200.0, "credits"), (ModelLimit("gen4.5", 2, 50),), "org",
                    fresh),
        AccountView("b", Balance(4200.0, "credits"), (), "org", fresh),
        AccountView("l", Balance(12.5, "USD"), (), None, NOW - STALE_SECONDS - 120),
        unavailable_view("x", "Runway: HTTP 503", fresh),
        AccountView("s", None, (ModelLimit("gen4.5", 1, 5),), None, math.inf),
    ]
    words = describe_views(accounts, views, NOW, TITLES,
                           lambda account: account.provider != "veo")
    assert words["a"].lines == (f"balance: 4,200 credits, as of {_hhmm(fresh)}",
                                "gen4.5: 2 at once, 50 a day (used today unavailable)")
    assert words["b"].lines[0] == (
        f"balance: shared with a (organization org), as of {_hhmm(fresh)}")
    assert words["b"].data["balance"] is None and words["b"].data["balance_shared_with"] == "a"
    assert words["v"].lines == ("account figures: not published by Google Veo",)
    assert words["v"].data["published"] is False
    assert words["l"].lines == (
        f"balance: $12.50, as of {_hhmm(NOW - STALE_SECONDS - 120)} "
        "(stale: 17 min old, gates nothing)",)
    assert words["l"].data["stale"] is True
    assert words["x"].lines == (
        f"account figures: provider's figures unavailable (Runway: HTTP 503), as of "
        f"{_hhmm(fresh)}",)
    assert words["s"].lines[0] == (
        "balance: not published by Runway, as of an unreadable time "
        "(stale: of unknown age, gates nothing)")
    assert words["s"].data["age_seconds"] is None and words["s"].data["stale"] is True


def test_an_account_never_read_says_how_to_read_it() -> None:
    words = describe_views([_account("a")], [], NOW, TITLES, lambda account: True)
    assert words["a"].lines == (
        "account figures: not read yet (reelqueue accounts refresh a)",)
