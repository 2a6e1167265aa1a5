"""Never run an account dry (issue 32 item 4): what every store decides at claim time.

Where the provider publishes the account's balance (the journal's view, fresh: read at
most 15 min ago, store/provider_limits.py) in a unit its adapter can convert
(``Charging``: Runway's credits are $0.01 each), the claim subtracts from it the renders
the balance cannot include yet, and does not start a create the rest cannot pay for:

- charged at ``create``: the creates written on the account since the read (each
  ``submitting`` entry, so a create sent twice counts twice) and its claimed jobs that
  will create;
- charged at ``finish`` or ``unknown``: those, and every other render in flight on the
  account (created before the read, not yet charged perhaps).

Each render's price is the job's stamped USD price (``metadata.price``, the spend caps'
price) over the unit's worth. A create without a price does not start on such an account
("price unknown: set it"); a render in flight without one makes the rest unknown, so no
create starts until the next read. A balance whose unit the adapter cannot convert is
shown and gates nothing. Everything is read in the claim's transaction.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from reelqueue.domain.account_view import AccountView, Charging
from reelqueue.store.provider_limits import view_is_fresh
from reelqueue.store.spend import Refusal

__all__ = ["CREDITS_LOW", "PRICE_UNKNOWN", "UNIT_SLACK", "BalanceLeft", "balance_left",
           "balance_refusal", "counts_every_render_in_flight", "dry", "in_units"]

CREDITS_LOW = "credits low"
PRICE_UNKNOWN = "price unknown: set it"


@dataclass(frozen=True)
class BalanceLeft:
    """The balance a claim may still spend.

    Attributes:
        amount: the balance the provider published, in ``unit``.
        unit: its unit ("credits").
        pending: what the renders it cannot include yet cost, in ``unit``; None when one
            of them has no price (the rest is unknown).
        usd_per_unit: what a unit is worth in USD.
        read_at: when the balance was read.
    """

    amount: float
    unit: str
    pending: float | None
    usd_per_unit: float
    read_at: float

    @property
    def left(self) -> float | None:
        return None if self.pending is None else self.amount - self.pending


def counts_every_render_in_flight(charging: Charging) -> bool:
    """Whether a render in flight may not be charged yet (``finish``, ``unknown``)."""
    return charging.charged_at != "create"


def balance_left(
    view: AccountView | None, now: float, charging: Charging | None,
    pending_usd: Callable[[float, bool], tuple[float, int]],
) -> BalanceLeft | None:
    """The account's balance less what it cannot include yet, or None when no balance
    gates (no fresh view, no balance, or a unit the adapter cannot convert).

    ``pending_usd(since, every_live)``: the USD price of the creates written since
    ``since`` and of the claimed jobs that will create, plus (``every_live``) every other
    render in flight, with how many of those have no price."""
    if view is None or view.balance is None or not view_is_fresh(view, now):
        return None
    if (charging is None or charging.usd_per_unit is None or charging.usd_per_unit <= 0
            or charging.unit is None or charging.unit != view.balance.unit):
        return None
    usd, unpriced = pending_usd(view.read_at, counts_every_render_in_flight(charging))
    pending = None if unpriced else usd / charging.usd_per_unit
    return BalanceLeft(view.balance.amount, view.balance.unit, pending,
                       charging.usd_per_unit, view.read_at)


def in_units(price_usd: float, left: BalanceLeft) -> float:
    return price_usd / left.usd_per_unit


def dry(left: BalanceLeft | None) -> bool:
    """Whether a gating balance can pay for no create at all (nothing, or an unknown
    amount, left): routing does not count the account as one that may take a job."""
    if left is None:
        return False
    rest = left.left
    return rest is None or rest <= UNIT_SLACK


UNIT_SLACK = 1e-6
"""Rounding slack in the balance's unit: USD prices over $0.01 are not exact in binary, and
a balance of exactly 5 renders' credits must start 5."""


def balance_refusal(left: BalanceLeft | None, *, needs_create: bool,
                    price: float | None) -> Refusal | None:
    """None when the balance lets the candidate start; else why not. A job holding a
    render needs no create and is never refused; a price unknown steps over its batch
    (another batch's priced jobs may still start); credits low stop the account's creates
    (only renders it holds are taken) until a read shows more. The words are the
    application's (application/balance_words.py)."""
    if left is None or not needs_create:
        return None
    if price is None:
        return Refusal("batch", PRICE_UNKNOWN)
    rest = left.left
    if rest is None or in_units(price, left) > rest + UNIT_SLACK:
        return Refusal("account", CREDITS_LOW)
    return None
