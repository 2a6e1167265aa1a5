"""The window at 1,000 renders in flight (issue 33 item 6): a card words only the render
lines it shows (three) and counts the rest, whatever the number in flight. Every tick
used to word a line for each render of each account (1,000 a tick) and show three;
benchmarks/bench_gui.py --live 1000 --rate 1: GUI thread 10.8 % -> 7.4 % of one core."""

from __future__ import annotations

import pytest

from reelqueue.application.views import AccountSummary
from reelqueue.domain.models import Account
from reelqueue.domain.states import AccountStatus
from reelqueue.ui import dashboard
from reelqueue.ui.accounts_view import MAX_RENDERS_SHOWN, AccountCard
from tests.gui.test_eta_words import FAST, row, table_with

pytestmark = pytest.mark.gui

NOW = 2000.0


def test_a_card_words_three_lines_of_a_thousand_renders_and_counts_the_rest(
        qapp: object, monkeypatch: pytest.MonkeyPatch) -> None:
    table = table_with([row(i, FAST, "RENDERING", started=1000.0, progress=0.5)
                        for i in range(1, 1001)])
    assert len(table.live_rows("a")) == 1000
    worded: list[int] = []
    original = dashboard._render_line

    def counting(table_: object, job: object, now: float) -> object:
        worded.append(job.id)  # type: ignore[attr-defined]
        return original(table_, job, now)  # type: ignore[arg-type]

    monkeypatch.setattr(dashboard, "_render_line", counting)
    account = Account(name="a", provider="mock", capacity=1000, position=0, enabled=True,
                      base_url=None, key_ref=None, status=AccountStatus.READY,
                      status_detail=None, cooldown_until=None, settings={}, created_at=NOW)
    [card_data] = dashboard.compose_cards(table, [AccountSummary(account, 1000)], {}, NOW)
    assert len(worded) == MAX_RENDERS_SHOWN == 3
    assert [line.name for line in card_data.renders] == ["clip1", "clip2", "clip3"]
    assert card_data.more_renders == 997
    card = AccountCard(card_data)
    try:
        assert card.renders.lines == card_data.renders
        assert card.renders.more == 997  # painted as "clip3 (+997)"
    finally:
        card.stop_timers()
        card.deleteLater()
