"""An account's figures for every front end at once (issue 32): its provider's view
(application/account_views.py), the limit in force (application/limit_words.py) and the
balance as the claim reckons it (application/balance_words.py), read together and given
under the same field names by ``accounts list --json``, ``status --json``,
``GET /v1/accounts`` and the window's card.

One figure, one word: nothing here words anything anew; it picks, from the words those
modules made, the lines a card has room for, and says when an account's money became a
notice (credits low, out of credits) for the window's notifications.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from reelqueue.application.account_views import AccountViewWords, account_view_words
from reelqueue.application.balance_words import BalanceWords, account_balance_words
from reelqueue.application.session import Session
from reelqueue.application.words import Condition, condition_words
from reelqueue.domain.models import Account

__all__ = ["AccountFigures", "CardFigures", "MoneyNotice", "card_figures", "figures_fields",
           "money_notice", "read_account_figures"]


@dataclass(frozen=True)
class AccountFigures:
    """One account's figures.

    Attributes:
        view: its view in words ("not read yet" and "not published by" included);
            None only for an account the read did not cover.
        credits: its balance as the claim reckons it, None when no balance gates it (no
            fresh view, no balance, a unit that cannot be converted).
    """

    view: AccountViewWords | None
    credits: BalanceWords | None

    def fields(self) -> dict[str, Any]:
        """The JSON fields, the same names in every front end."""
        return figures_fields(self.view, self.credits)


def figures_fields(view: AccountViewWords | None,
                   credits: BalanceWords | None) -> dict[str, Any]:
    """``view`` (the view's figures and words), ``limit_in_force`` (the user's setting
    beside the provider's lower limit per model, issue 32 item 3) and ``credits`` (the
    balance as the claim reckons it, issue 32 item 4: "credits low: ...")."""
    return {"view": view.data if view is not None else None,
            "limit_in_force": view.data.get("limit_in_force") if view is not None else None,
            "credits": credits.data if credits is not None else None}


async def read_account_figures(session: Session, accounts: Sequence[Account] | None = None
                               ) -> dict[str, AccountFigures]:
    """Every account's figures from the journal (its views in one read, then each gated
    balance), by name."""
    if accounts is None:
        accounts = await session.journal.list_accounts()
    views = await account_view_words(session, accounts)
    credits = await account_balance_words(session, accounts)
    return {a.name: AccountFigures(views.get(a.name), credits.get(a.name)) for a in accounts}


@dataclass(frozen=True)
class CardFigures:
    """What an account's card shows of its figures (each line made by the modules above).

    Attributes:
        balance: the view's first line ("balance: 4,200 credits, as of 10:24", stale or
            unavailable said so), "" when the provider publishes no view.
        details: every line of the view (each model's limits...), for the tooltip.
        limit: the limit in force when the provider's view changes it ("5 set · provider
            allows 2 for gen4.5"), else "".
        credits: the balance gate's words when it holds the account ("credits low: 40
            left, this render needs 60", "price unknown: set it ..."), else "".
        stale: the view is older than 15 min (it gates nothing).
        can_update: the provider publishes a view this machine may ask for ("Update").
    """

    balance: str = ""
    details: tuple[str, ...] = ()
    limit: str = ""
    credits: str = ""
    stale: bool = False
    can_update: bool = False


def card_figures(figures: AccountFigures | None) -> CardFigures:
    """The card's lines of ``figures`` (None: not read yet)."""
    if figures is None or figures.view is None:
        return CardFigures()
    data = figures.view.data
    published = bool(data.get("published"))
    if not published and data.get("read_at") is None:
        return CardFigures()  # nothing to show and nothing to ask for
    lines = figures.view.lines
    first = lines[0] if lines else ""
    if data.get("read_at") is None and published:
        first = "account figures: not read yet"  # the CLI's hint is a command; the card has Update
    in_force = data.get("limit_in_force") or {}
    limit = str(in_force.get("words", ""))
    if limit == f"{in_force.get('set')} set":
        limit = ""  # the provider changes nothing: the limit box says it
    credits = figures.credits
    return CardFigures(
        balance=first, details=tuple(lines), limit=limit,
        credits=credits.words if credits is not None and credits.data.get("low") else "",
        stale=bool(data.get("stale")), can_update=published)


@dataclass(frozen=True)
class MoneyNotice:
    """An account's money became a reason it starts nothing.

    Attributes:
        code: "credits_low" or :data:`Condition.OUT_OF_CREDITS`: a new code is a new
            notice, the same code again is not.
        words: "studio-a: credits low: 40 left, this render needs 60".
    """

    code: str
    words: str


def money_notice(account: str, condition: str, figures: AccountFigures | None
                 ) -> MoneyNotice | None:
    """The notice an account's money gives now (None: none): out of credits (the
    provider refused a render for it, its condition ``condition``), else credits low
    (the balance gate holds its next render)."""
    if condition == Condition.OUT_OF_CREDITS:
        words = condition_words(Condition.OUT_OF_CREDITS)
        return MoneyNotice(Condition.OUT_OF_CREDITS, f"{account}: {words.name}. {words.hint}")
    credits = figures.credits if figures is not None else None
    if credits is not None and credits.data.get("low") and not credits.data.get(
            "price_unknown"):
        return MoneyNotice("credits_low", f"{account}: {credits.words}")
    return None
