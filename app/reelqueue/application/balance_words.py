"""The words of an account's balance as the claim reckons it (issue 32 item 4), made once
for every front end: "credits low: 40 left, this render needs 60", "price unknown: set
it", "240 credits left after the renders not in the balance yet".

The rule is the claim's (store/balance.py, in its transaction); these are its words, from
the same reckoning (``Store.balance_left``) and the next job that would create on the
account. A balance in a unit the adapter cannot convert gates nothing and has no words
here (the view's own words show it, application/account_views.py).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from reelqueue.application.session import Session
from reelqueue.domain.errors import KnownError
from reelqueue.domain.models import Account, Job
from reelqueue.domain.states import WAITING
from reelqueue.store.balance import UNIT_SLACK, BalanceLeft, in_units
from reelqueue.store.spend import price_of

__all__ = ["BalanceWords", "account_balance_words", "balance_in_words", "next_create"]

NEXT_LOOK = 500
"""How many waiting jobs are looked at for an account's next create (a listing, not the
claim: the claim itself takes the best one)."""


@dataclass(frozen=True)
class BalanceWords:
    """What the front ends show of an account's balance as the claim reckons it.

    Attributes:
        words: one line.
        data: the same for ``--json``: ``balance``, ``unit``, ``not_included`` (the
            renders the balance does not include yet, in ``unit``; None: unknown),
            ``left`` (None: unknown), ``next_needs`` (the next render's price in ``unit``),
            ``low`` (the next create waits), ``price_unknown``, ``words``.
    """

    words: str
    data: dict[str, Any]


def _figure(amount: float) -> str:
    rounded = round(amount, 2)
    return f"{rounded:,.0f}" if float(rounded).is_integer() else f"{rounded:,.2f}"


def balance_in_words(left: BalanceLeft, next_job: Job | None,
                     account: str = "NAME") -> BalanceWords:
    """``left`` in words, with the next job that would create on ``account`` (None:
    none waits)."""
    rest = left.left
    price = None if next_job is None else price_of(next_job.metadata)
    need = None if price is None else in_units(price, left)
    price_unknown = next_job is not None and price is None
    low = price_unknown or (next_job is not None and (
        rest is None or (need is not None and need > rest + UNIT_SLACK)))
    unit = left.unit
    if price_unknown:
        words = (f"price unknown: set it (job {next_job.id if next_job else '?'} has no "
                 "price and this account's balance is known: reelqueue accounts set "
                 f"{account} --price-per-second USD)")
    elif rest is None:
        words = "credits low: unknown left (a render in flight has no price)"
    elif low and need is not None:
        words = f"credits low: {_figure(max(rest, 0.0))} left, this render needs {_figure(need)}"
    else:
        words = f"{_figure(rest)} {unit} left after the renders not in the balance yet"
    return BalanceWords(words, {
        "balance": left.amount, "unit": unit, "not_included": left.pending, "left": rest,
        "next_needs": need, "low": low, "price_unknown": price_unknown, "words": words})


def next_create(account: Account, waiting: Iterable[Job]) -> Job | None:
    """The best waiting job that would create on ``account`` (its provider; bound to no
    other account), as the claim orders them (priority, then id)."""
    mine = [j for j in waiting
            if j.provider == account.provider and j.provider_job_id is None
            and j.client_token is None and j.pinned_account in (None, account.name)
            and j.account in (None, account.name)]
    return min(mine, key=lambda j: (-j.priority, j.id)) if mine else None


async def account_balance_words(session: Session, accounts: Sequence[Account] | None = None
                                ) -> dict[str, BalanceWords]:
    """Each account whose published balance gates its claims, in words (from the
    journal; the provider's declared charging from this machine's registry)."""
    journal = session.journal
    if accounts is None:
        accounts = await journal.list_accounts()
    now = session.clock.now()
    waiting: list[Job] | None = None
    out: dict[str, BalanceWords] = {}
    for account in accounts:
        try:
            charging = session.providers.get(account.provider).params.charging
        except KnownError:
            continue
        left = await journal.balance_left(account.name, now, charging)
        if left is None:
            continue
        if waiting is None:
            waiting = await journal.list_jobs(None, list(WAITING), NEXT_LOOK)
        out[account.name] = balance_in_words(left, next_create(account, waiting),
                                             account.name)
    return out
