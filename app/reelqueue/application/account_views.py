"""The account view (issue 32 item 2) for the front ends: ``accounts refresh NAME`` (the
user's "Update"), and the one place its words are made, for ``accounts list``,
``status`` and, later, the window's card.

A view is what the provider last said of an account's balance, per-model limits and usage
(``domain.account_view``), kept in the journal so every process and machine of a team sees
the same one. A view older than :data:`STALE_SECONDS` is marked stale and gates nothing;
what a fresh one gates is the claim's (store/provider_limits.py, store/balance.py), and
its words are application/limit_words.py's and application/balance_words.py's.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import httpx2

from reelqueue.application.accounts import get_account, keep_view, key_answer, view_reader
from reelqueue.application.builtin_mock import on_builtin_mock
from reelqueue.application.limit_words import limit_in_force
from reelqueue.application.session import Session
from reelqueue.domain.account_view import AccountView, Balance, ModelLimit
from reelqueue.domain.errors import InputError, KnownError
from reelqueue.domain.models import Account
from reelqueue.engine.account_keys import CONFIRM
from reelqueue.engine.account_views import read_view
from reelqueue.engine.lost_creates import planning_adapter
from reelqueue.providers.base import account_view_of
from reelqueue.providers.httpx_session import session_of
from reelqueue.providers.registry import ProviderRegistry, build_provider
from reelqueue.store.provider_limits import VIEW_FRESH_SECONDS

__all__ = ["STALE_SECONDS", "AccountViewWords", "account_view_words", "describe_views",
           "publishes_view", "refresh_account_view"]

STALE_SECONDS = VIEW_FRESH_SECONDS
"""A view older than this gates nothing and is shown as stale (the issue's 15 min)."""

UNAVAILABLE = "provider's figures unavailable"


@dataclass(frozen=True)
class AccountViewWords:
    """What the front ends show of one account's view.

    Attributes:
        account: the account's name.
        lines: the text, one line each (balance, each model's limits, what is missing).
        data: the same for ``--json``: published, read_at, as_of, age_seconds, stale,
            read_by, organization_id, balance, balance_shared_with, limits, problem, words.
    """

    account: str
    lines: tuple[str, ...]
    data: dict[str, Any]


def publishes_view(account: Account, providers: ProviderRegistry) -> bool:
    """Whether the adapter the engine would build for ``account`` offers the view."""
    return account_view_of(planning_adapter(account, providers)) is not None


def _clock_words(read_at: float) -> str:
    try:
        return datetime.fromtimestamp(read_at).strftime("%H:%M")
    except (OverflowError, OSError, ValueError):
        return "an unreadable time"


def _number(amount: float) -> str:
    return f"{amount:,.0f}" if float(amount).is_integer() else f"{amount:,.2f}"


def _balance_words(balance: Balance) -> str:
    if balance.unit == "USD":
        return f"${balance.amount:,.2f}"
    return f"{_number(balance.amount)} {balance.unit}"


_WINDOWS = {"rolling_24h": "rolling 24 h", "utc_day": "UTC day", "unknown": ""}


def limit_words(limit: ModelLimit) -> str:
    """"gen4.5: 2 at once, 50 a day (12 used, rolling 24 h)"; a figure the provider did
    not give, or gave unusable, says so; a limit of 0 is shown as it is."""
    at_once = (f"{limit.concurrency} at once" if limit.concurrency is not None
               else "renders at once unavailable")
    daily = f"{limit.daily} a day" if limit.daily is not None else "daily count unavailable"
    notes = [f"{limit.used_today} used" if limit.used_today is not None
             else "used today unavailable"]
    if window := _WINDOWS.get(limit.daily_window, ""):
        notes.append(window)
    return f"{limit.model}: {at_once}, {daily} ({', '.join(notes)})"


def _limit_data(limit: ModelLimit) -> dict[str, Any]:
    return {"model": limit.model, "concurrency": limit.concurrency, "daily": limit.daily,
            "daily_window": limit.daily_window, "used_today": limit.used_today,
            "words": limit_words(limit)}


def _sharers(accounts: Sequence[Account], views: Mapping[str, AccountView]) -> dict[str, str]:
    """account -> the account (first in the pump's order) whose balance it shares: the
    same organization id, both with a balance."""
    first: dict[str, str] = {}
    shared: dict[str, str] = {}
    for account in accounts:
        view = views.get(account.name)
        if view is None or view.organization_id is None or view.balance is None:
            continue
        holder = first.setdefault(view.organization_id, account.name)
        if holder != account.name:
            shared[account.name] = holder
    return shared


def describe_views(accounts: Sequence[Account], views: Iterable[AccountView], now: float,
                   titles: Mapping[str, str],
                   publishes: Callable[[Account], bool]) -> dict[str, AccountViewWords]:
    """Each account's view in words, the accounts in the pump's order (``now``: the
    reader's clock, for the view's age)."""
    by_name = {view.account: view for view in views}
    shared = _sharers(accounts, by_name)
    out: dict[str, AccountViewWords] = {}
    for account in accounts:
        title = titles.get(account.provider, account.provider)
        view = by_name.get(account.name)
        published = publishes(account)
        if view is None:
            line = (f"account figures: not read yet (reelqueue accounts refresh "
                    f"{account.name})" if published
                    else f"account figures: not published by {title}")
            out[account.name] = AccountViewWords(account.name, (line,), {
                "published": published, "read_at": None, "as_of": None,
                "age_seconds": None, "stale": None, "read_by": None,
                "organization_id": None, "balance": None, "balance_shared_with": None,
                "limits": [], "problem": None, "words": [line],
                "limit_in_force": limit_in_force(account.capacity, None, now).data})
            continue
        words = _view_words(account.name, view, now, title, shared.get(account.name),
                            published)
        # The limit in force (issue 32 item 3), where the provider's view has a word on it.
        in_force = limit_in_force(account.capacity, view, now)
        lines = words.lines
        if in_force.words != f"{account.capacity} set":
            lines = (*lines, f"limit: {in_force.words}")
        out[account.name] = AccountViewWords(account.name, lines, {
            **words.data, "limit_in_force": in_force.data, "words": list(lines)})
    return out


def _view_words(name: str, view: AccountView, now: float, title: str,
                shared_with: str | None, published: bool) -> AccountViewWords:
    age = now - view.read_at if math.isfinite(view.read_at) else math.inf
    stale = not age <= STALE_SECONDS
    as_of = f"as of {_clock_words(view.read_at)}"
    if stale:
        minutes = f"{age / 60:.0f} min old" if math.isfinite(age) else "of unknown age"
        as_of += f" (stale: {minutes}, gates nothing)"
    lines: list[str] = []
    if not view.has_figures:
        why = f" ({view.problem})" if view.problem else ""
        lines.append(f"account figures: {UNAVAILABLE}{why}, {as_of}")
    else:
        if shared_with is not None:
            lines.append(f"balance: shared with {shared_with} (organization "
                         f"{view.organization_id}), {as_of}")
        elif view.balance is not None:
            lines.append(f"balance: {_balance_words(view.balance)}, {as_of}")
        else:
            lines.append(f"balance: {UNAVAILABLE if view.problem else 'not published by ' + title}"
                         f", {as_of}")
        lines.extend(limit_words(limit) for limit in view.limits)
        if view.problem:
            lines.append(f"some of the {UNAVAILABLE} ({view.problem})")
    balance = (None if view.balance is None or shared_with is not None else
               {"amount": view.balance.amount, "unit": view.balance.unit})
    return AccountViewWords(name, tuple(lines), {
        "published": published, "read_at": view.read_at,
        "as_of": _clock_words(view.read_at),
        "age_seconds": round(age, 1) if math.isfinite(age) else None, "stale": stale,
        "read_by": view.read_by, "organization_id": view.organization_id,
        "balance": balance, "balance_shared_with": shared_with,
        "limits": [_limit_data(limit) for limit in view.limits],
        "problem": view.problem, "words": lines})


async def account_view_words(session: Session, accounts: Sequence[Account] | None = None
                             ) -> dict[str, AccountViewWords]:
    """Every account's view in words, from the journal (one read)."""
    journal = session.journal
    if accounts is None:
        accounts = await journal.list_accounts()
    views = await journal.account_views()
    titles = {kind: session.providers.get(kind).title for kind in session.providers.kinds()}
    return describe_views(accounts, views, session.clock.now(), titles,
                          lambda account: publishes_view(account, session.providers))


async def refresh_account_view(session: Session, name: str) -> AccountViewWords:
    """``accounts refresh NAME`` (the card's "Update"): read the account's view now, from
    this machine (which must hold its key), keep it in the journal, and say it. A read
    that fails is kept as a view with no figure and why; it never raises for that."""
    account = await get_account(session, name)
    try:
        info = session.providers.get(account.provider)
    except KnownError as exc:
        raise InputError(f"Account {name}: {exc}") from None
    if not publishes_view(account, session.providers):
        raise InputError(f"Account {name}: {info.title} publishes no account figures "
                         "ReelQueue can read; nothing to refresh.")
    answer = await key_answer(session, account)
    if answer.problem == CONFIRM:
        raise InputError(f"Account {name}: {answer.detail}; nothing was sent.")
    if answer.key is None and (info.requires_key or account.key_ref):
        raise InputError(
            f"Account {name}: key not on this machine; the figures are read where the key "
            "is (a machine of the team that renders for it), or keep the key here first: "
            f"reelqueue team-key {name}")
    base_url = account.base_url
    if on_builtin_mock(account.provider, base_url):
        base_url = await session.ensure_mock()
    async with httpx2.AsyncClient(timeout=30.0, follow_redirects=False) as client:
        try:
            adapter = build_provider(info, session_of(client), account=name, base_url=base_url,
                                     api_key=answer.key, settings=account.settings)
        except ValueError as exc:
            raise InputError(f"Account {name}: its address cannot be used ({exc}).") from None
        viewer = account_view_of(adapter)
        assert viewer is not None  # publishes_view said so
        view, _ = await read_view(name, viewer, session.clock.now(), view_reader(session))
    await keep_view(session, view)
    await session.changed(accounts=[name])
    return (await account_view_words(session, [account]))[name]
