"""An account's daily spend cap set on its card (docs/design-notes.md "Spend caps")."""

from __future__ import annotations

import pytest

from tests.gui.conftest import WindowHarness, on_qloop, until

pytestmark = pytest.mark.gui


@on_qloop
async def test_a_daily_cap_is_set_and_removed_on_the_card(windows: WindowHarness,
                                                          app_ctx) -> None:
    from reelqueue.domain.models import AccountSpec
    from reelqueue.store.sqlite import SqliteStore

    app_ctx.data_dir.mkdir(parents=True)
    store = SqliteStore.open(app_ctx.journal_path, now=1.0)
    store.add_account(AccountSpec("m1", "mock", 2), 1.0)
    store.close()
    controller = await windows.open(app_ctx, start=False)

    def card():  # type: ignore[no-untyped-def]
        return controller.window.accounts.cards["m1"]

    def cap() -> object:
        return controller.summaries[0].account.settings.get("daily_cap")

    assert card().cap_button.isHidden() == card().compact  # folded cards hide it
    assert "today" not in card().spend.text()
    problem = card().apply_daily_cap_text("twenty")
    assert problem is not None and "not an amount" in problem
    assert card().apply_daily_cap_text("-5") is not None
    assert card().apply_daily_cap_text("$20") is None
    await until(lambda: cap() == 20.0, 5)
    await until(lambda: "Practice today $0.00 of $20.00" in card().spend.text(), 5)
    assert cap() == 20.0, "the refused entries changed nothing"
    assert card().apply_daily_cap_text("") is None  # empty: no cap
    await until(lambda: cap() is None, 5)
    await until(lambda: "today" not in card().spend.text(), 5)


@on_qloop
async def test_after_a_restart_while_paused_the_card_says_what_status_says(
        windows: WindowHarness, app_ctx) -> None:
    """Issue 23: after a restart while paused the card said "Spent today $0.00 of $0.50"
    (it waited for the engine's first account event) while ``reelqueue status`` said
    "$0.93 of $0.50"; the card's "Spent" was the window's own tally. Both now come from
    the journal's spend entries (application.status.money), in the same words."""
    import time

    from reelqueue.application import status
    from reelqueue.cli.cmd_spend import describe
    from reelqueue.domain.models import AccountSpec
    from reelqueue.store.spend import SPEND_EVENT
    from reelqueue.store.sqlite import SqliteStore

    app_ctx.data_dir.mkdir(parents=True)
    now = time.time()
    store = SqliteStore.open(app_ctx.journal_path, now=now)
    store.add_account(AccountSpec("m1", "mock", 2, settings={"daily_cap": 0.5}), now)
    for usd, at in ((0.48, now - 60), (0.45, now - 30), (1.10, now - 3 * 86_400)):
        store.note(SPEND_EVENT, at, account="m1", detail={"usd": usd})
    store.close()
    controller = await windows.open(app_ctx, start=False)
    card = controller.window.accounts.cards["m1"]
    await until(lambda: "Practice today $0.93 of $0.50" in card.spend.text(), 10)
    assert card.spend.text().startswith("Practice spend $2.03"), card.spend.text()  # all days
    money = await status.money(controller.session.app)
    lines = describe(money.today)  # what ``reelqueue status`` prints
    assert "Account m1: spent today $0.93 of $0.50" in lines, lines
