"""Spend caps: what both stores decide at claim time (docs/design-notes.md "Spend caps").

A job's price is the price-table estimate stored at import (``jobs.metadata["price"]``).
Spent money is in the ledger (``spend`` entries: the price when the submission intent is
written, the difference when the provider reports the cost); a claimed job that will
create has its price reserved. The check and the claim are one write transaction.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal, TypeVar

SLACK = 1e-9
"""Rounding slack: a cap of exactly 5 x the price admits 5 renders."""

SPEND_EVENT = "spend"

_C = TypeVar("_C")


def local_day_start(now: float) -> float:
    """The machine's local midnight of ``now``: where an account's daily cap starts."""
    moment = datetime.fromtimestamp(now)
    return moment.replace(hour=0, minute=0, second=0, microsecond=0).timestamp()


def cap_of(settings: Mapping[str, Any], key: str) -> float | None:
    """A cap from batch or account settings (``max_spend``, ``daily_cap``); None: no cap."""
    value = settings.get(key)
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


def price_of(metadata: Mapping[str, Any]) -> float | None:
    value = metadata.get("price")
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


@dataclass(frozen=True)
class Refusal:
    """Why a candidate was not claimed. scope "batch": step over its batch; "account": the
    account takes only jobs that need no create."""

    scope: Literal["batch", "account"]
    reason: str


def refusal(
    *, needs_create: bool, price: float | None, batch_cap: float | None,
    batch_committed: Callable[[], float], account_cap: float | None,
    account_committed: Callable[[], float],
) -> Refusal | None:
    """None when the candidate may be claimed. A job holding a render (or an unresolved
    submission, whose intent already wrote its spend) costs nothing more."""
    if not needs_create or (batch_cap is None and account_cap is None):
        return None
    if price is None:
        return Refusal("batch", "price unknown")
    if account_cap is not None and account_committed() + price > account_cap + SLACK:
        return Refusal("account", "spend cap reached")
    if batch_cap is not None and batch_committed() + price > batch_cap + SLACK:
        return Refusal("batch", "spend cap reached")
    return None


def intent_spend(metadata: Mapping[str, Any], held_client_token: str | None,
                 client_token: str) -> dict[str, Any] | None:
    """The detail of the ``spend`` entry a submission intent writes with it: the job's
    price, or None (no price; or the same intent again, an unresolved submission
    re-entering SUBMITTING to be looked up: it sends no create, its spend was written with
    the first)."""
    price = price_of(metadata)
    if price is None or held_client_token == client_token:
        return None
    return {"usd": price}


def cost_correction(metadata: Mapping[str, Any], cost: float | None) -> dict[str, Any] | None:
    """The detail of the ``spend`` entry a completion writes: the provider's reported cost
    correcting the price its intent wrote (the difference), or None (no cost reported, or
    no difference)."""
    if cost is None:
        return None
    difference = float(cost) - (price_of(metadata) or 0.0)
    if abs(difference) <= SLACK:
        return None
    return {"usd": round(difference, 6), "reported_cost": cost}


def withdrawn_spend(metadata: Mapping[str, Any], held_client_token: str | None,
                    event: str) -> dict[str, Any] | None:
    """The detail of the ``spend`` entry that gives back an intent's price when its create
    was never sent (``intent_withdrawn``: an orderly stop before the create left), so the
    create the claim sends later counts once. None: no price, no intent held, or another
    event. A create reconciliation proved absent (``reconciled_absent``) keeps its spend:
    the proof is the provider's records read after a settle time, strong but not certain,
    and money fails closed (design notes, "Spend caps")."""
    price = price_of(metadata)
    if price is None or held_client_token is None or event != "intent_withdrawn":
        return None
    return refund(price, withdrawn_why(event))


def withdrawn_why(event: str) -> str:
    """Why :func:`withdrawn_spend` gives a price back (PostgreSQL's one-statement write
    takes these words as a parameter)."""
    return "the create was never sent" if event == "intent_withdrawn" else ""


def refund(price: float, why: str) -> dict[str, Any]:
    """The detail of the ``spend`` entry that gives back a price an intent charged, where
    nothing can have been billed (a create refused with a 4xx; a render of the built-in
    mock lost with the process): docs/design-notes.md, "Spend caps"."""
    return {"usd": -price, "refund": True, "why": why}


def first_unrefused(
    next_candidate: Callable[[bool, list[int]], _C | None],
    refused_of: Callable[[_C], Refusal | None],
    batch_of: Callable[[_C], int],
    count_batches: Callable[[], int],
) -> _C | None:
    """The claim's walk past the spend caps: the best candidate no cap refuses, or None.

    ``next_candidate(creates, skip_batches)`` is the best claimable job (only jobs that
    need no create when ``creates`` is False; none of the batches in ``skip_batches``).
    Each refusal steps over one more batch (or stops creates once): however many batches
    are at their caps, a later one that may spend is reached. The batches are counted only
    once a cap has refused (the bound of that walk)."""
    skip: list[int] = []
    creates = True
    tries, batches = 0, None
    while batches is None or tries < batches + 2:
        tries += 1
        candidate = next_candidate(creates, skip)
        if candidate is None:
            return None
        refused = refused_of(candidate)
        if refused is None:
            return candidate
        if batches is None:
            batches = count_batches()
        if refused.scope == "account":
            creates = False
        else:
            skip.append(batch_of(candidate))
    return None


@dataclass(frozen=True)
class BatchSpend:
    """A batch with a cap. spent: the ledger's spend; reserved: claimed jobs about to
    create; waiting: jobs that need a create the cap holds back (price unknown, or more
    than the room left)."""

    batch_id: int
    name: str
    spent: float
    reserved: float
    cap: float
    waiting: int

    @property
    def reached(self) -> bool:
        return self.waiting > 0

    @property
    def committed(self) -> float:
        """What counts against the cap: spent, and the renders being started."""
        return self.spent + self.reserved

    def describe(self) -> str:
        """"$0.20 of $0.20 ($0.05 for renders starting)": every front end's words."""
        return committed_words(self.committed, self.reserved, self.cap)


@dataclass(frozen=True)
class AccountSpend:
    """An account's spend since local midnight (``day_start``), its daily cap (None: none)
    and the jobs needing a create that the cap holds back. ``removed``: the account is no
    longer configured, but renders it sent were paid that day (issue 34: removing an
    account must not take its spend out of the totals); listed after the others."""

    account: str
    spent_today: float
    reserved: float
    cap: float | None
    waiting: int
    removed: bool = False

    @property
    def reached(self) -> bool:
        return self.cap is not None and self.waiting > 0

    @property
    def committed(self) -> float:
        """Today's figure, the one the daily cap checks: spent (a render's price is spent
        when its create is sent) and reserved (renders being started)."""
        return self.spent_today + self.reserved

    def describe(self) -> str:
        """"$0.93 of $0.50 ($0.45 for renders starting)": the window's card, ``status``,
        ``spend`` and the stall reason say today's spend in these words (issue 23: they
        disagreed)."""
        return committed_words(self.committed, self.reserved, self.cap)


def committed_words(committed: float, reserved: float, cap: float | None) -> str:
    of = f" of ${cap:.2f}" if cap is not None else ""
    starting = f" (${reserved:.2f} for renders starting)" if reserved >= 0.005 else ""
    # + 0.0: charges and their refunds sum to -1e-17 at times, never "$-0.00"
    return f"${round(committed, 6) + 0.0:.2f}{of}{starting}"


def to_go_words(usd: float, unpriced: int) -> str:
    """"est. $4.40 to go", "est. $4.40 to go, 2 without a price": the waiting jobs' figure
    in every front end's words (issue 23). A job without a price is counted, never $0."""
    text = f"est. ${usd:,.2f} to go"
    if unpriced:
        text += f", {unpriced} without a price"
    return text


@dataclass(frozen=True)
class ToGo:
    """What the waiting jobs of one provider (and of one account, or of any) will cost:
    the sum of their stored prices (``jobs.metadata["price"]``, :func:`price_of`) and how
    many have none. Waiting: queued or in retry wait, with no create sent yet (a job whose
    create was sent has its price in the spend entries already). Parked jobs are not
    counted: nothing renders them until the user retries them, and that retry's plan says
    its price. Jobs of a paused batch or held by a cap are counted: they still wait to be
    rendered.

    Attributes:
        provider: the provider kind. account: the one account that may take the jobs
            (pinned to it by the sheet, or bound to it: a claim only hands a job bound
            to an account to that account); None: any account of the provider may.
        usd: their stored prices' sum. priced, unpriced: how many have a price, and not.
    """

    provider: str
    account: str | None
    usd: float
    priced: int
    unpriced: int

    def describe(self) -> str:
        return to_go_words(self.usd, self.unpriced)


@dataclass(frozen=True)
class SpendSummary:
    batches: tuple[BatchSpend, ...] = ()
    accounts: tuple[AccountSpend, ...] = ()

    def as_dict(self) -> dict[str, Any]:
        return {
            "batches": [{"batch_id": b.batch_id, "name": b.name, "spent": round(b.spent, 4),
                         "reserved": round(b.reserved, 4), "cap": b.cap,
                         "waiting_for_cap": b.waiting}
                        for b in self.batches],
            "accounts": [{"account": a.account, "spent_today": round(a.spent_today, 4),
                          "reserved": round(a.reserved, 4), "daily_cap": a.cap,
                          "waiting_for_cap": a.waiting, "removed": a.removed}
                         for a in self.accounts],
        }
