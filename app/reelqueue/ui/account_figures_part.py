"""The controller's part for the provider's figures on the account cards (issue 32): reads
each account's view, limit in force and balance gate from the journal
(:func:`~reelqueue.application.account_figures.read_account_figures`, paced with the
money figures), runs a card's "Update"
(:func:`~reelqueue.application.account_views.refresh_account_view`) as a task of the
session so the window never waits on the provider, and says in a banner when an account
becomes "credits low" or "out of credits": once per change, not once per read.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol

from PySide6.QtCore import QObject

from reelqueue.application.account_figures import (
    AccountFigures,
    money_notice,
    read_account_figures,
)
from reelqueue.application.account_views import refresh_account_view
from reelqueue.domain.errors import KnownError, ProviderError

if TYPE_CHECKING:
    from reelqueue.application.views import AccountSummary
    from reelqueue.ui.accounts_view import AccountCard, AccountCardData
    from reelqueue.ui.main_window import MainWindow
    from reelqueue.ui.session import Spawn, WindowSession

log = logging.getLogger(__name__)

NOTICE_KEY = "credits:"
"""The banners' key prefix: one banner per account, replaced when its notice changes."""


class CardList(Protocol):
    """The window's accounts and their cards (the controller)."""

    @property
    def summaries(self) -> Sequence[AccountSummary]: ...

    def refresh_cards(self, now: float | None = None) -> None: ...


class AccountFiguresPart(QObject):
    """Attributes:
        figures: each account's figures by name, as last read (kept when a read fails).
        notices: the notice code each account was last said to have (None: none).
        updating: the accounts whose "Update" is running.
    """

    def __init__(self, session: WindowSession, window: MainWindow, spawn: Spawn,
                 cards: CardList, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.session = session
        self.window = window
        self.spawn = spawn
        self.cards = cards
        self.figures: dict[str, AccountFigures] = {}
        self.notices: dict[str, str | None] = {}
        self.updating: set[str] = set()

    def connect_card(self, card: AccountCard) -> None:
        card.updateRequested.connect(self.update)
        card.set_updating(card.name in self.updating)

    async def refresh(self) -> None:
        """Read every account's figures from the journal (no provider is asked)."""
        if self.session.closed:
            return
        accounts = [s.account for s in self.cards.summaries]
        try:
            self.figures = await read_account_figures(self.session.app, accounts)
        except KnownError as exc:  # the journal is away: the last figures stand
            log.info("account figures not read: %s", exc)

    def update(self, name: str) -> None:
        """A card's "Update": read the account's view from its provider now."""
        if name in self.updating:
            return
        self.updating.add(name)
        self._set_updating(name, True)
        self.spawn(self._update(name), "account-update")

    async def _update(self, name: str) -> None:
        banners = self.window.banners
        try:
            words = await refresh_account_view(self.session.app, name)
        except (KnownError, ProviderError) as exc:  # a refusal: said, nothing changed
            banners.show_banner("warning", f"{name} not updated: {exc}", key=f"update:{name}")
        else:
            line = words.lines[0] if words.lines else "read"
            banners.show_banner("info", f"{name} updated: {line}", key=f"update:{name}")
        finally:
            self.updating.discard(name)
            self._set_updating(name, False)
        await self.refresh()
        self.cards.refresh_cards()

    def _set_updating(self, name: str, updating: bool) -> None:
        card = self.window.accounts.cards.get(name)
        if card is not None:
            card.set_updating(updating)

    def notify(self, cards: Sequence[AccountCardData]) -> None:
        """A banner when an account's money becomes a reason it starts nothing (credits
        low, out of credits), once per change; it goes when that is no longer true."""
        banners = self.window.banners
        shown = {card.name for card in cards}
        for name in [n for n in self.notices if n not in shown]:
            del self.notices[name]
            banners.remove(NOTICE_KEY + name)
        for card in cards:
            notice = money_notice(card.name, card.words().code, self.figures.get(card.name))
            code = notice.code if notice is not None else None
            if self.notices.get(card.name) == code:
                continue
            self.notices[card.name] = code
            if notice is None:
                banners.remove(NOTICE_KEY + card.name)
            else:
                banners.show_banner("warning", notice.words, key=NOTICE_KEY + card.name)
