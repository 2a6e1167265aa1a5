"""The window's "Costs" view (issue 32 item 5): the toolbar's Costs opens the cost
reconciliation read from the providers as a task of the session, in the application's
words (the same as ``reelqueue spend --reconcile``), and "Read again" reads it anew."""

from __future__ import annotations

import pytest

from reelqueue.cli.context import CliContext
from reelqueue.domain.models import AccountSpec
from reelqueue.store.sqlite import SqliteStore
from reelqueue.ui.costs import CostsDialog
from tests.gui.conftest import OFFSCREEN_NOISE, WindowHarness, on_qloop, save_screenshot, until

pytestmark = [pytest.mark.gui]


# The offscreen platform cannot raise a window: a second Costs asks it to.
@pytest.mark.qt_log_ignore("This plugin does not support raise", OFFSCREEN_NOISE)
@on_qloop
async def test_costs_shows_the_reconciliation_in_the_applications_words(
        windows: WindowHarness, app_ctx: CliContext) -> None:
    app_ctx.data_dir.mkdir(parents=True)
    store = SqliteStore.open(app_ctx.journal_path, now=1.0)
    store.add_account(AccountSpec("m1", "mock", 2), 1.0)
    store.close()
    ctl = await windows.open(app_ctx, start=False)
    ctl.window.costs_action.trigger()
    dialog = ctl.keeper.costs
    assert isinstance(dialog, CostsDialog)
    await until(lambda: dialog.summary.text().startswith("Cost reconciliation, UTC days"))
    shown = dialog.text.toPlainText()
    # the journal's accounts, each with what its provider publishes of its usage
    assert shown.startswith("Account m1 (Mock provider") and "usage not published by" in \
        shown, shown
    assert dialog.again.isEnabled()
    save_screenshot(dialog, "costs-light")
    dialog.again.click()
    await until(lambda: dialog.again.isEnabled()
                and dialog.summary.text().startswith("Cost reconciliation"))
    ctl.window.costs_action.trigger()  # a second Costs raises the open one
    assert ctl.keeper.costs is dialog
    dialog.reject()
    await until(lambda: ctl.keeper.costs is None)
