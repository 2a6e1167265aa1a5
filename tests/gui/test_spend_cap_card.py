"""The account card's spend-cap line (docs/design-notes.md "Spend caps")."""

from __future__ import annotations

from dataclasses import replace

import pytest

from reelqueue.domain.states import AccountStatus
from reelqueue.engine.events import AccountEvent
from reelqueue.ui.accounts_view import AccountCard, AccountCardData, AccountStrip

pytestmark = pytest.mark.gui


def card_text(data: AccountCardData) -> str:
    card = AccountCard(data)
    try:
        return card.spend.text()
    finally:
        card.stop_timers()
        card.deleteLater()


def test_a_card_says_what_was_spent_today_of_its_cap_and_what_waits(qapp: object) -> None:
    base = AccountCardData(name="studio", provider_title="Runway", status="ready",
                           enabled=True, capacity=2, live=0, spend=12.5)
    assert "Spent today" not in card_text(base)
    capped = AccountCardData(**{**base.__dict__, "spent_today": 20.0, "daily_cap": 20.0,
                                "cap_waiting": 7})
    text = card_text(capped)
    assert "Spent today $20.00 of $20.00" in text
    assert "cap reached: 7\u00a0waiting" in text
    under = AccountCardData(**{**base.__dict__, "spent_today": 3.0, "daily_cap": 20.0})
    assert "cap reached" not in card_text(under)


def test_the_engine_event_says_when_the_cap_holds_jobs() -> None:
    event = AccountEvent("a", AccountStatus.READY, 0, 2, 0.0, spent_today=20.0, daily_cap=20.0,
                         cap_waiting=3)
    assert event.spend_capped
    assert not AccountEvent("a", AccountStatus.READY, 0, 2, 0.0).spend_capped


def test_a_card_whose_daily_cap_is_reached_never_says_ready(themed_app) -> None:  # type: ignore[no-untyped-def]
    """N6: the card said "ready" while its daily cap held its jobs back."""
    base = AccountCardData(name="studio", provider_title="Built-in mock", status="ready",
                           enabled=True, capacity=2, live=0, daily_cap=0.5)
    assert base.chip() == ("ready", "success")  # a cap with room left
    held = replace(base, spent_today=0.45, cap_waiting=3)  # the next render would pass it
    spent = replace(base, spent_today=0.5)
    finishing = replace(held, live=1)
    assert held.chip() == ("daily cap reached", "warning")
    assert spent.chip() == ("daily cap reached", "warning")
    assert finishing.chip() == ("daily cap reached · finishing", "warning")
    strip = AccountStrip()
    try:
        strip.set_accounts([held])
        assert strip.cards["studio"].chip.text() == "daily cap reached"
    finally:
        strip.deleteLater()


def test_an_unfolded_card_shows_a_render_s_time_left_whole(themed_app) -> None:  # type: ignore[no-untyped-def]
    """N8: the unfolded card's render lines cut "about 5 s left" (a fixed 68 px)."""
    from reelqueue.ui.accounts_view import RenderLine

    words = ["about 5 s left", "longer than most", "waiting for the provider's answer"]
    card = AccountCard(AccountCardData(
        name="studio", provider_title="Built-in mock", status="ready", enabled=True,
        capacity=3, live=3, renders=tuple(RenderLine(f"Row {i}", 0.5, text)
                                          for i, text in enumerate(words))))
    try:
        card.set_compact(False)
        card.show()
        bars = card.renders
        metrics = bars.fontMetrics()
        name_w, bar_x, bar_w, text_w = bars.columns(bars.width())
        assert bars.width() > 200
        for text in words[:2]:  # short words whole
            assert metrics.horizontalAdvance(text) <= text_w, text
        assert text_w <= bars.width() // 2  # the longest is elided, the bar stays
        assert bar_w >= 40 and name_w > 40 and bar_x + bar_w + text_w <= bars.width()
    finally:
        card.deleteLater()
