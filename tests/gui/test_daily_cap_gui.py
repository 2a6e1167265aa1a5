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
    assert "Spent today" not in card().spend.text()
    problem = card().apply_daily_cap_text("twenty")
    assert problem is not None and "not an amount" in problem
    assert card().apply_daily_cap_text("-5") is not None
    assert card().apply_daily_cap_text("$20") is None
    await until(lambda: cap() == 20.0, 5)
    await until(lambda: "Spent today $0.00 of $20.00" in card().spend.text(), 5)
    assert cap() == 20.0, "the refused entries changed nothing"
    assert card().apply_daily_cap_text("") is None  # empty: no cap
    await until(lambda: cap() is None, 5)
    await until(lambda: "Spent today" not in card().spend.text(), 5)
