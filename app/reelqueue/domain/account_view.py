"""An account as its provider describes it (issue 32 item 2, "the account view"): the
balance, the per-model limits, the usage so far and the organization, with when they
were read and by which instance.

These values cross layers (an adapter reads them, the journal keeps them as rows that every
process and machine of a team sees, the application layer words them), so they live here,
stdlib only; ``providers.base`` re-exports them beside the adapters' capability.

A figure that cannot be trusted is never guessed: it is None, and ``problem`` says why
("provider's figures unavailable"). Nothing here starts or stops a render: the claim
reads the journal's copy in its transaction (store/provider_limits.py, store/balance.py).
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Literal

__all__ = [
    "CHARGED_AT",
    "DAILY_WINDOWS",
    "MAX_AMOUNT",
    "MAX_COUNT",
    "MAX_LIMITS",
    "MAX_LIMITS_JSON",
    "MAX_MODEL_CHARS",
    "MAX_PROBLEM_CHARS",
    "AccountView",
    "Balance",
    "ChargedAt",
    "Charging",
    "DailyWindow",
    "ModelLimit",
    "kept_view",
    "limits_from_json",
    "limits_to_json",
    "plain",
    "unavailable_view",
    "usable_amount",
]

ChargedAt = Literal["create", "finish", "unknown"]
CHARGED_AT: tuple[ChargedAt, ...] = ("create", "finish", "unknown")
"""When a provider takes a render's price from the balance, as it documents it: when the
create is accepted, when the render finishes, or not documented."""


@dataclass(frozen=True)
class Charging:
    """How a provider's balance pays for a render (issue 32 item 4), as its adapter
    declares it (``providers.base.ParamSpec``).

    Attributes:
        charged_at: when the price leaves the balance (:data:`CHARGED_AT`).
        unit: the unit its balance and its published prices count ("credits"), None when
            it publishes none.
        usd_per_unit: what one unit is worth in USD where the provider publishes it (Runway:
            0.01), None when it cannot be converted (the balance then gates nothing).
    """

    charged_at: ChargedAt = "unknown"
    unit: str | None = None
    usd_per_unit: float | None = None


DailyWindow = Literal["rolling_24h", "utc_day", "unknown"]
DAILY_WINDOWS: tuple[DailyWindow, ...] = ("rolling_24h", "utc_day", "unknown")
"""How a daily count is reckoned, as the provider documents it: the last 24 hours, a
calendar day in UTC, or not documented."""

MAX_AMOUNT = 1e12
"""A balance above this is absurd (no account holds a trillion credits or dollars)."""
MAX_COUNT = 1_000_000
"""A concurrency, daily count or usage above this is absurd."""
MAX_LIMITS = 64
"""At most this many models' limits are kept per account (a journal row stays small)."""
MAX_MODEL_CHARS = 80
"""A model id longer than this is not a model id."""
MAX_PROBLEM_CHARS = 500
"""The problem text kept in the journal is cut to this length."""
MAX_LIMITS_JSON = 16_384
"""The limits' JSON in a journal row never exceeds this many characters (a CHECK too)."""


@dataclass(frozen=True)
class Balance:
    """What the account can still spend.

    Attributes:
        amount: the figure, finite and not negative.
        unit: what it counts: "credits" (Runway), "USD" (Luma: its cents converted)...
    """

    amount: float
    unit: str


@dataclass(frozen=True)
class ModelLimit:
    """One model's limits on the account, and its use so far.

    Attributes:
        model: the provider's model id, one ReelQueue renders.
        concurrency: renders at once the provider allows (0 is shown, never divided by);
            None: not published or unusable.
        daily: renders a day the provider allows; None: not published or unusable.
        daily_window: how the day is reckoned (:data:`DAILY_WINDOWS`).
        used_today: renders counted against ``daily`` so far; None: unknown.
    """

    model: str
    concurrency: int | None = None
    daily: int | None = None
    daily_window: DailyWindow = "unknown"
    used_today: int | None = None


@dataclass(frozen=True)
class AccountView:
    """An account as its provider last described it.

    Attributes:
        account: the account's name.
        balance: the balance, or None (not published, or unusable: see ``problem``).
        limits: per-model limits, at most :data:`MAX_LIMITS`.
        organization_id: the provider's organization (accounts naming the same one share
            a balance), None where not published.
        read_at: when it was read, Unix seconds: the provider's Date header when it sent
            a believable one, else the reader's clock.
        read_by: the instance that read it ("" until the engine or a command sets it).
        problem: why some or all figures are unavailable, in the user's words; None when
            every published figure was usable.
    """

    account: str
    balance: Balance | None
    limits: tuple[ModelLimit, ...]
    organization_id: str | None
    read_at: float
    read_by: str = ""
    problem: str | None = None

    @property
    def has_figures(self) -> bool:
        return self.balance is not None or bool(self.limits)


def unavailable_view(account: str, why: str, read_at: float, read_by: str = "") -> AccountView:
    """A view that holds no figure, only why (the read failed, the answer was unusable)."""
    return AccountView(account, None, (), None, read_at, read_by, why[:MAX_PROBLEM_CHARS])


def limits_to_json(limits: Iterable[ModelLimit]) -> str:
    """The limits as a journal row keeps them: a JSON list, bounded by
    :data:`MAX_LIMITS` entries and :data:`MAX_LIMITS_JSON` characters (entries past the
    bound are dropped, never cut in the middle)."""
    out: list[dict[str, Any]] = []
    size = 2
    for limit in list(limits)[:MAX_LIMITS]:
        entry = {"model": limit.model[:MAX_MODEL_CHARS], "concurrency": limit.concurrency,
                 "daily": limit.daily, "daily_window": limit.daily_window,
                 "used_today": limit.used_today}
        size += len(json.dumps(entry)) + 2
        if size > MAX_LIMITS_JSON:
            break
        out.append(entry)
    return json.dumps(out)


def plain(text: str, limit: int) -> str:
    """``text`` cut to ``limit`` characters with every control or format character (ANSI
    escapes, bidi overrides, newlines) shown as "?": a view's text comes from a provider or
    from a team database, and front ends print it (DESIGN.md invariant 15)."""
    return "".join(ch if ch.isprintable() else "?" for ch in text[:limit])


def kept_view(view: AccountView) -> AccountView:
    """``view`` as a journal keeps and gives it back: its limits bounded
    (:func:`limits_to_json`) and its text plain (:func:`plain`), as the journals give it
    back when they read a row."""
    balance = view.balance
    if balance is not None:
        amount = usable_amount(balance.amount)
        balance = None if amount is None else Balance(amount, plain(balance.unit, 20))
    return AccountView(
        view.account, balance, limits_from_json(limits_to_json(view.limits)),
        None if view.organization_id is None else plain(view.organization_id, 200),
        view.read_at, plain(view.read_by, 200),
        None if view.problem is None else plain(view.problem, MAX_PROBLEM_CHARS))


def _count(value: Any) -> int | None:
    if isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= MAX_COUNT:
        return value
    return None


def limits_from_json(value: Any) -> tuple[ModelLimit, ...]:
    """The limits of a journal row (a JSON text or an already decoded list; the team
    database is untrusted input: anything unreadable is left out)."""
    if isinstance(value, str | bytes):
        try:
            value = json.loads(value)
        except (ValueError, RecursionError):
            return ()
    if not isinstance(value, list):
        return ()
    out: list[ModelLimit] = []
    for entry in value[:MAX_LIMITS]:
        if not isinstance(entry, dict) or not isinstance(entry.get("model"), str):
            continue
        window = entry.get("daily_window")
        out.append(ModelLimit(
            plain(entry["model"], MAX_MODEL_CHARS), _count(entry.get("concurrency")),
            _count(entry.get("daily")),
            window if window in DAILY_WINDOWS else "unknown",
            _count(entry.get("used_today"))))
    return tuple(out)


def usable_amount(value: Any) -> float | None:
    """A stored balance figure, or None when it is not a finite, sane, non-negative number."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        number = float(value)
        if math.isfinite(number) and 0 <= number <= MAX_AMOUNT:
            return number
    return None
