"""Reading a provider's usage per model and UTC day defensively (issue 32 item 5), for the
adapters that offer :class:`~reelqueue.providers.base.UsageProvider` (Runway's
``POST /v1/organization/usage``).

The answer is untrusted input. Unlike an account view, a usage report is all or nothing:
a day or model left out reads as "nothing used", so one unusable figure (missing, a
string, NaN, absurd, a day outside the range asked or in the future, another unit, a
model named twice on one day) makes the whole report "provider's figures unavailable",
with why; nothing here raises for it.
"""

from __future__ import annotations

import math
from datetime import UTC, date, datetime
from typing import Any

import httpx2

from reelqueue.domain.account_view import MAX_MODEL_CHARS, MAX_PROBLEM_CHARS, plain
from reelqueue.domain.spend_reconcile import ABSURD_UNITS, UsageDay, UsageReport
from reelqueue.providers.adapters._account import answer_json, mapping, read_at_of

__all__ = ["MAX_USAGE_ROWS", "runway_usage_report"]

MAX_USAGE_ROWS = 10_000
"""At most this many (day, model) figures are read (90 days of fifty models is 4,500)."""


class _Unusable(Exception):
    """The report's figures cannot be used (the message says why)."""


def _day(value: Any, what: str) -> date:
    if not isinstance(value, str) or len(value) != 10:
        raise _Unusable(f"{what} is not a day")
    try:
        return date.fromisoformat(value)
    except ValueError:
        raise _Unusable(f"{what} is not a day") from None


def _amount(value: Any, what: str) -> float:
    if value is None:
        raise _Unusable(f"{what} missing")
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise _Unusable(f"{what} is not a number")
    number = float(value)
    if not math.isfinite(number):
        raise _Unusable(f"{what} is not a number")
    if abs(number) > ABSURD_UNITS:
        raise _Unusable(f"{what} is absurdly large")
    return number  # negative is documented: "net ... negative if refunds exceeded charges"


def runway_usage_report(response: httpx2.Response, cut: bool, start: date, end: date,
                        models: tuple[str, ...]) -> UsageReport:
    """The report of a ``POST /v1/organization/usage`` answer (runwayml/sdk-python
    ``types/organization_retrieve_usage_response.py``: ``results[]`` of ``date``
    (YYYY-MM-DD, UTC) and ``usedCredits[]`` of ``{amount, model}``, the net credits
    spent on the model). Models ReelQueue does not render here (image, audio) are left
    out; they are not its renders."""
    read_at = read_at_of(response)
    body, problem = answer_json(response, cut)
    if body is None:
        return UsageReport("credits", start, end, (), read_at, problem or "unreadable answer")
    try:
        days = _read(body, start, end, models, read_at)
    except _Unusable as exc:
        return UsageReport("credits", start, end, (), read_at,
                           plain(str(exc), MAX_PROBLEM_CHARS))
    return UsageReport("credits", start, end, days, read_at)


def _read(body: dict[str, Any], start: date, end: date, models: tuple[str, ...],
          read_at: float) -> tuple[UsageDay, ...]:
    unit = body.get("unit", body.get("currency"))
    if unit is not None and unit != "credits":
        shown = plain(unit, 20) if isinstance(unit, str) else "an unreadable one"
        raise _Unusable(f"usage is in another unit ({shown})")
    results = body.get("results")
    if not isinstance(results, list):
        raise _Unusable("usage results missing")
    today = datetime.fromtimestamp(read_at, UTC).date()
    seen: dict[tuple[str, date], float] = {}
    rows = 0
    for result in results:
        result = mapping(result)
        day = _day(result.get("date"), "a usage date")
        if day > today:
            raise _Unusable(f"usage for a future day ({day.isoformat()})")
        if not start <= day < end:
            raise _Unusable(f"usage for a day not asked for ({day.isoformat()})")
        used = result.get("usedCredits")
        if not isinstance(used, list):
            raise _Unusable(f"usage of {day.isoformat()} missing")
        for entry in used:
            rows += 1
            if rows > MAX_USAGE_ROWS:
                raise _Unusable(f"more than {MAX_USAGE_ROWS} usage figures")
            entry = mapping(entry)
            model = entry.get("model")
            if not isinstance(model, str) or not 0 < len(model) <= MAX_MODEL_CHARS:
                raise _Unusable(f"a model of {day.isoformat()} is unreadable")
            amount = _amount(entry.get("amount"), f"usage of {plain(model, 40)} on "
                                                  f"{day.isoformat()}")
            if model not in models:
                continue
            if (model, day) in seen:
                raise _Unusable(f"usage of {model} on {day.isoformat()} is given twice")
            seen[(model, day)] = amount
    return tuple(UsageDay(model, day, amount)
                 for (model, day), amount in sorted(seen.items(), key=lambda kv: (kv[0][1],
                                                                                 kv[0][0])))
