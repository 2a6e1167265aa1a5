"""The limit in force in words (issue 32 item 3): the user's setting always, the
provider's lower limit per model where its view is fresh, a 0 shown and not applied, a
stale view not applied, a model at its daily limit waiting."""

from __future__ import annotations

import pytest

from reelqueue.application.limit_words import limit_in_force
from reelqueue.domain.account_view import AccountView, ModelLimit

pytestmark = pytest.mark.unit

NOW = 1_800_000_000.0


def _view(*limits: ModelLimit, age: float = 60.0) -> AccountView:
    return AccountView("a", None, limits, None, NOW - age)


def test_the_setting_and_the_lower_provider_limit() -> None:
    assert limit_in_force(5, None, NOW).words == "5 set"
    words = limit_in_force(5, _view(ModelLimit("gen4.5", 2, None)), NOW)
    assert words.words == "5 set · provider allows 2 for gen4.5"
    assert words.data["models"] == [{"model": "gen4.5", "provider_allows": 2, "in_force": 2,
                                     "daily": None, "used_today": None, "applied": True}]
    two = limit_in_force(5, _view(ModelLimit("gen4.5", 2, None),
                                  ModelLimit("gen4_turbo", 8, None)), NOW)
    assert two.words == "5 set · provider allows 2 for gen4.5", "8 is above the setting"
    assert [m["in_force"] for m in two.data["models"]] == [2, 5]


def test_a_zero_is_shown_never_applied() -> None:
    words = limit_in_force(3, _view(ModelLimit("gen4.5", 0, 0, "rolling_24h", 0)), NOW)
    assert words.words == ("3 set · provider shows 0 for gen4.5 (not applied: what 0 "
                           "means is not documented)")
    assert words.data["models"][0]["in_force"] == 3
    assert not words.data["models"][0]["applied"]


def test_a_stale_view_is_not_applied_and_a_full_day_waits() -> None:
    stale = limit_in_force(5, _view(ModelLimit("gen4.5", 2, None), age=16 * 60), NOW)
    assert stale.words == "5 set · provider's limits not applied (stale): 2 for gen4.5"
    assert not stale.data["applied"] and stale.data["models"][0]["in_force"] == 5
    full = limit_in_force(5, _view(ModelLimit("gen4.5", 4, 50, "rolling_24h", 50)), NOW)
    assert full.words == "5 set · provider allows 4 for gen4.5 · gen4.5: 50 of 50 today, waits"
