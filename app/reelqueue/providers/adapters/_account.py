"""Reading an account view's figures defensively (issue 32 item 2), for every adapter
that offers :class:`~reelqueue.providers.base.AccountViewProvider`.

A provider's answer is untrusted input: a figure that is missing, a string, NaN, negative,
absurdly large or in another currency becomes None with a reason, and the figures beside
it are kept. The answer is read bounded (:data:`MAX_VIEW_BYTES`); a longer one gives no
figure at all. Nothing here raises for a bad figure: an unusable view is "the provider's
figures unavailable", never a crash.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Callable, Mapping
from dataclasses import replace
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from typing import Any

import httpx2

from reelqueue.domain.account_view import (
    MAX_AMOUNT,
    MAX_COUNT,
    MAX_LIMITS,
    MAX_MODEL_CHARS,
    MAX_PROBLEM_CHARS,
    AccountView,
    Balance,
    ModelLimit,
    plain,
    unavailable_view,
)

__all__ = ["DATE_TRUST_SECONDS", "MAX_VIEW_BYTES", "REUSE_CHECK_SECONDS", "Figures",
           "KeyCheckAnswer",
           "another_organization", "answer_json", "mapping", "read_at_of", "scrubbed"]

MAX_VIEW_BYTES = 256 * 1024
"""The longest account answer read; a longer one is refused unread (Runway's lists about
fifty models in a few kilobytes)."""
DATE_TRUST_SECONDS = 86_400.0
"""A provider's Date header further than this from our clock is not believed."""
REUSE_CHECK_SECONDS = 60.0
"""The key check's answer stands for the view this long after it was read."""


class KeyCheckAnswer:
    """An adapter's read of the account endpoint its key check and its view share (Runway's
    ``/v1/organization``, Luma's ``/credits``): the key check's own answer stands for the
    view :data:`REUSE_CHECK_SECONDS` after it, so connecting reads the endpoint once.

    ``read`` raises what ``error`` makes of a refused answer; the answer is bounded
    (:data:`MAX_VIEW_BYTES`) and ``cut`` says whether it was longer."""

    def __init__(self, get_bounded: Callable[[str, int], Any], path: str,
                 error: Callable[[httpx2.Response], Exception]) -> None:
        self._get_bounded = get_bounded
        self._path = path
        self._error = error
        self._kept: tuple[httpx2.Response, bool, float] | None = None

    async def read(self, *, keep: bool = False) -> tuple[httpx2.Response, bool]:
        """A fresh read (the key check's, kept when ``keep``)."""
        self._kept = None
        response, cut = await self._get_bounded(self._path, MAX_VIEW_BYTES)
        if not response.is_success:
            raise self._error(response)
        if keep:
            self._kept = (response, cut, time.monotonic())
        return response, cut

    async def for_view(self) -> tuple[httpx2.Response, bool]:
        """The key check's answer if it is recent (used once), else a fresh read."""
        kept, self._kept = self._kept, None
        if kept is not None and time.monotonic() - kept[2] <= REUSE_CHECK_SECONDS:
            return kept[0], kept[1]
        return await self.read()


def read_at_of(response: httpx2.Response, now: float | None = None) -> float:
    """When the answer was made: its Date header (the provider's clock) when it is
    readable and within a day of ours, else our clock."""
    ours = time.time() if now is None else now
    text = response.headers.get("date")
    if not text:
        return ours
    try:
        when = parsedate_to_datetime(text).timestamp()
    except (TypeError, ValueError, IndexError, OverflowError):
        return ours
    return when if abs(when - ours) <= DATE_TRUST_SECONDS else ours


def answer_json(response: httpx2.Response, cut: bool) -> tuple[dict[str, Any] | None, str | None]:
    """The JSON object of a bounded account answer, or None and why not."""
    if cut:
        return None, f"the answer was longer than {MAX_VIEW_BYTES // 1024} KiB"
    try:
        data = json.loads(response.content)
    except (ValueError, UnicodeDecodeError, RecursionError):
        return None, "the answer was not readable JSON"
    if not isinstance(data, dict):
        return None, "the answer was not a JSON object"
    return data, None


class Figures:
    """Collects an answer's figures, each checked, and the reasons for those refused.

    Attributes:
        problems: why each refused figure was refused, in order.
    """

    def __init__(self) -> None:
        self.problems: list[str] = []

    def refuse(self, why: str) -> None:
        if why not in self.problems:
            self.problems.append(why)

    def amount(self, value: Any, what: str) -> float | None:
        """A balance: a finite number, 0 or more, below :data:`MAX_AMOUNT`."""
        if value is None:
            self.refuse(f"{what} missing")
            return None
        if isinstance(value, bool) or not isinstance(value, int | float):
            self.refuse(f"{what} is not a number")
            return None
        number = float(value)
        if not math.isfinite(number):
            self.refuse(f"{what} is not a number")
            return None
        if number < 0:
            self.refuse(f"{what} is negative")
            return None
        if number > MAX_AMOUNT:
            self.refuse(f"{what} is absurdly large")
            return None
        return number

    def count(self, value: Any, what: str, *, required: bool = True) -> int | None:
        """A whole count (0 is kept: it is shown, never divided by)."""
        if value is None:
            if required:
                self.refuse(f"{what} missing")
            return None
        if isinstance(value, bool) or not isinstance(value, int | float):
            self.refuse(f"{what} is not a number")
            return None
        if isinstance(value, float) and not (math.isfinite(value) and value.is_integer()):
            self.refuse(f"{what} is not a whole number")
            return None
        number = int(value)
        if number < 0:
            self.refuse(f"{what} is negative")
            return None
        if number > MAX_COUNT:
            self.refuse(f"{what} is absurdly large")
            return None
        return number

    def balance(self, value: Any, what: str, unit: str, *, scale: float = 1.0,
                currency: Any = None, expected_currency: str | None = None) -> Balance | None:
        """The balance ``value`` (times ``scale``) in ``unit``; refused when the answer
        names a ``currency`` other than ``expected_currency``."""
        if currency is not None and currency != expected_currency:
            shown = plain(currency, 20) if isinstance(currency, str) else "an unreadable one"
            self.refuse(f"{what} is in another currency ({shown})")
            return None
        amount = self.amount(value, what)
        return None if amount is None else Balance(amount * scale, unit)

    def model_id(self, value: Any, known: tuple[str, ...]) -> str | None:
        """A model ReelQueue renders on this provider; any other is left out, silently
        (a provider lists image, audio and voice models beside its video ones)."""
        if isinstance(value, str) and len(value) <= MAX_MODEL_CHARS and value in known:
            return value
        return None

    def used_on_day(self, used: int | None, day: Any, read_at: float, model: str) -> int | None:
        """``used`` when the usage's ``day`` (YYYY-MM-DD, UTC; None: the answer names
        none) is not after the day the answer was read; a future day's usage is refused."""
        if used is None or day is None:
            return used
        today = datetime.fromtimestamp(read_at, UTC).date()
        try:
            parsed = datetime.strptime(str(day)[:10], "%Y-%m-%d").date()
        except ValueError:
            self.refuse(f"usage of {model} names an unreadable day")
            return None
        if parsed > today:
            self.refuse(f"usage of {model} is for a future day ({parsed.isoformat()})")
            return None
        return used if parsed == today else 0  # an earlier day's count is not today's

    def organization(self, value: Any, expected: Any) -> tuple[str | None, bool]:
        """The organization id the answer names (None: none or unreadable), and whether
        it is another organization than the account's setting ``expected`` names."""
        org = (value if isinstance(value, str) and 0 < len(value) <= 200 and value.isprintable()
               else None)
        if value is not None and org is None:
            self.refuse("organization id unreadable")
        if isinstance(expected, str) and expected and org is not None and org != expected:
            return org, True
        return org, False

    def problem(self) -> str | None:
        return "; ".join(self.problems)[:MAX_PROBLEM_CHARS] or None

    def view(self, account: str, balance: Balance | None, limits: list[ModelLimit],
             organization_id: str | None, read_at: float) -> AccountView:
        return AccountView(account, balance, tuple(limits[:MAX_LIMITS]), organization_id,
                           read_at, "", self.problem())


def another_organization(account: str, org: str, expected: str, read_at: float) -> AccountView:
    """The view of an answer made for another organization: no figure of it is used."""
    return unavailable_view(
        account, f"the answer is for organization {org[:60]}, not this account's "
                 f"{expected[:60]}", read_at)


def scrubbed(view: AccountView, scrub: Callable[[str], str]) -> AccountView:
    """``view`` with the provider's own text in it (organization id, the words of a
    refused figure) scrubbed of the key (``ApiClient.scrub``): a view goes to the journal,
    which never holds a key (DESIGN.md invariant 8), whatever a hostile answer echoes."""
    return replace(
        view,
        organization_id=None if view.organization_id is None else scrub(view.organization_id),
        problem=None if view.problem is None else scrub(view.problem))


def mapping(value: Any) -> Mapping[str, Any]:
    """``value`` when it is a JSON object, else an empty one."""
    return value if isinstance(value, dict) else {}
