"""Issue 32 in the window: an account's card shows its provider's figures in the words
``accounts list`` prints (application.account_figures): the balance "as of HH:MM", a
stale view said stale (it gates nothing), the limit in force, "credits low: ..."; its
"Update" reads the view again without freezing the window; an account that becomes
credits low or out of credits is said once in a banner, not once per read."""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from types import SimpleNamespace
from typing import cast

import pytest
from PySide6.QtWidgets import QApplication

from reelqueue.application import accounts
from reelqueue.application.account_figures import AccountFigures, card_figures
from reelqueue.application.account_views import describe_views
from reelqueue.application.accounts import AccountDraft
from reelqueue.application.balance_words import balance_in_words
from reelqueue.application.context import AppContext
from reelqueue.application.session import Session
from reelqueue.domain.account_view import AccountView, Balance, ModelLimit
from reelqueue.domain.models import Account, BatchSpec, Job, JobSpec
from reelqueue.domain.states import AccountStatus
from reelqueue.mockprovider import MockOptions, MockProviderServer
from reelqueue.store.balance import BalanceLeft
from reelqueue.store.sqlite import SqliteStore
from reelqueue.ui.accounts_view import AccountCard, AccountCardData
from tests.gui.conftest import WindowHarness, on_qloop, save_screenshot, until

NOW = time.time()
VIEW = {"balance": {"amount": 4200, "unit": "credits"},
        "models": {"mock-1": {"concurrency": 2, "daily": 50, "used_today": 12}}}
LOW = "credits low: 40 left, this render needs 60"


def _hhmm(when: float) -> str:
    return datetime.fromtimestamp(when).strftime("%H:%M")


def _figures(read_at: float, *, low: bool = False) -> AccountFigures:
    """Figures made by the application's own functions, as the window reads them."""
    account = cast(Account, SimpleNamespace(name="m1", provider="mock", capacity=5))
    view = AccountView("m1", Balance(4200.0, "credits"), (ModelLimit("mock-1", 2, 50),),
                       None, read_at)
    words = describe_views([account], [view], NOW, {"mock": "Built-in mock"},
                           lambda _account: True)["m1"]
    credits = None
    if low:
        job = cast(Job, SimpleNamespace(id=7, metadata={"price": 0.6}))
        credits = balance_in_words(BalanceLeft(40.0, "credits", 0.0, 0.01, read_at), job, "m1")
    return AccountFigures(words, credits)


def _card(figures: AccountFigures) -> AccountCard:
    card = AccountCard(AccountCardData(name="m1", provider_title="Built-in mock",
                                       status="ready", enabled=True, capacity=5, live=0,
                                       figures=card_figures(figures)))
    card.show()
    QApplication.processEvents()
    return card


def test_a_fresh_view_shows_its_balance_with_its_time_and_the_limit_in_force(
        themed_app: QApplication) -> None:
    card = _card(_figures(NOW - 60))
    try:
        assert card.balance_label.isVisible()
        assert card.balance_label.text() == f"Balance: 4,200 credits, as of {_hhmm(NOW - 60)}"
        assert card.view_limit_label.text() == "5 set · provider allows 2 for mock-1"
        assert "Mock-1: 2 at once, 50 a day" in card.balance_label.toolTip()
        assert not card.credits_label.isVisible()
        assert card.update_button.isVisible() and card.update_button.isEnabled()
    finally:
        card.close()


def test_a_stale_view_is_said_stale_and_its_limits_not_applied(
        themed_app: QApplication) -> None:
    old = NOW - 20 * 60
    card = _card(_figures(old))
    try:
        assert card.balance_label.text() == (
            f"Balance: 4,200 credits, as of {_hhmm(old)} (stale: 20 min old, gates nothing)")
        assert card.view_limit_label.text() == (
            "5 set · provider's limits not applied (stale): 2 for mock-1")
    finally:
        card.close()


def test_credits_low_is_said_on_the_card(themed_app: QApplication) -> None:
    card = _card(_figures(NOW - 60, low=True))
    try:
        assert card.credits_label.isVisible()
        assert card.credits_label.text() == "Credits low: 40 left, this render needs 60"
        save_screenshot(card, "card-account-view")
        card.set_compact(True)  # folded, the card still says why it starts nothing
        QApplication.processEvents()
        assert card.credits_label.isVisible()
    finally:
        card.close()


def test_no_view_published_shows_nothing_and_offers_no_update(
        themed_app: QApplication) -> None:
    card = _card(AccountFigures(None, None))
    try:
        assert not card.balance_label.isVisible()
    finally:
        card.close()


# -- in the window ----------------------------------------------------------------------
@pytest.fixture
def server() -> Iterator[MockProviderServer]:
    with MockProviderServer(MockOptions(seed=1, account_view=VIEW)) as running:
        yield running


async def _prepare(ctx: AppContext, server: MockProviderServer) -> None:
    """m1 (mock, its view read at connect, then forgotten: "not read yet") and rw (Runway,
    40 credits left, a job of 60 waiting)."""

    async def prepare() -> None:
        session = Session(ctx)
        await session.open_journal()
        try:
            await accounts.add_account(session, AccountDraft("m1", "mock", 5, None,
                                                             server.url))
            await accounts.add_account(session, AccountDraft(
                "rw", "runway", 2, "key_" + "0" * 64, None), check=False)
        finally:
            await session.stop()

    await prepare()
    store = SqliteStore.open(ctx.journal_path, now=time.time())
    try:
        batch = store.create_batch(BatchSpec("b", "s.csv", "b"), time.time())
        store.add_jobs(batch.id, [JobSpec(
            "k1", "a fox", "runway", "b/1.mp4", params={"model": "gen4.5", "duration": 5},
            metadata={"price": 0.6})], time.time())
        store.put_account_view(AccountView("rw", Balance(40.0, "credits"), (), None,
                                           time.time(), "elsewhere"))
    finally:
        store.close()
    with sqlite3.connect(ctx.journal_path) as db:
        db.execute("DELETE FROM account_views WHERE account = 'm1'")


def _credit_banners(window: object) -> list[str]:
    return [b.text for b in window.banners.banners()  # type: ignore[attr-defined]
            if b.key.startswith("credits:")]


@on_qloop
async def test_the_window_shows_the_figures_updates_them_and_says_credits_low_once(
        windows: WindowHarness, app_ctx: AppContext, server: MockProviderServer,
        tmp_path: Path) -> None:
    await _prepare(app_ctx, server)
    controller = await windows.open(app_ctx, start=False)
    cards = controller.window.accounts.cards
    await until(lambda: "m1" in cards and cards["m1"].balance_label.isVisible()
                and "rw" in cards and cards["rw"].credits_label.isVisible())
    m1, rw = cards["m1"], cards["rw"]
    assert m1.balance_label.text() == "Account figures: not read yet"
    assert rw.credits_label.text() == "Credits low: 40 left, this render needs 60"
    assert _credit_banners(controller.window) == [f"rw: {LOW}"]
    banner = controller.window.banners.get("credits:rw")

    # "Update": the view is read from the provider on a task; the window keeps running.
    m1.update_button.click()
    assert not m1.update_button.isEnabled() and m1.update_button.text() == "Updating…"
    await until(lambda: m1.balance_label.text().startswith("Balance: 4,200 credits, as of "))
    assert m1.update_button.isEnabled()
    assert m1.view_limit_label.text() == "5 set · provider allows 2 for mock-1"
    update = controller.window.banners.get("update:m1")
    assert update is not None and update.text.startswith("m1 updated: balance: 4,200 credits")

    # Read again and again: the notice is not said again.
    for _ in range(3):
        await controller.refresh_money()
        controller.refresh_cards()
    assert controller.window.banners.get("credits:rw") is banner
    assert _credit_banners(controller.window) == [f"rw: {LOW}"]

    # Out of credits is a new change: said once, in place of credits low.
    store = SqliteStore.open(app_ctx.journal_path, now=time.time())
    try:
        store.set_account_status("rw", AccountStatus.OUT_OF_CREDITS, time.time())
    finally:
        store.close()
    await controller.refresh_accounts()
    texts = _credit_banners(controller.window)
    assert len(texts) == 1 and texts[0].startswith("rw: out of credits. ")

    # A refusal is said, never a crash; the button comes back.
    controller.figures.update("nobody")
    await until(lambda: controller.window.banners.get("update:nobody") is not None)
    assert controller.window.banners.get("update:nobody").text.startswith(  # type: ignore[union-attr]
        "nobody not updated: ")
