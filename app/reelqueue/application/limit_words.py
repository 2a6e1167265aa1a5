"""The words of the limit in force (issue 32 item 3), made once for every front end.

An account's limit is the user's setting (``accounts.capacity``, kept and always shown);
where the provider's fresh view publishes a smaller one for a model, that one is in
force for that model: "5 set · provider allows 2 for gen4.5". The rule itself is the
claim's (store/provider_limits.py: counted in its transaction); these are its words, from
the same view and the same age limit.

- A published 0 is shown and applies nothing: "provider shows 0 for gen4.5 (not applied:
  what 0 means is not documented)" (docs/design-notes.md).
- A stale view applies nothing: "provider's limits not applied (stale)".
- A model at its daily limit at the read: "gen4.5: 50 of 50 today, waits".
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from reelqueue.domain.account_view import AccountView
from reelqueue.store.provider_limits import allowed_a_day, allowed_at_once, view_is_fresh

__all__ = ["LimitWords", "limit_in_force"]

SEP = " · "


@dataclass(frozen=True)
class LimitWords:
    """The limit in force on one account.

    Attributes:
        words: one line: "5 set · provider allows 2 for gen4.5".
        data: the same for ``--json``: ``set`` (the user's setting), ``models`` (per model
            the provider publishes a limit for: ``provider_allows``, ``in_force``, ``daily``,
            ``used_today``, ``applied``), ``applied`` (the view is fresh), ``words``.
    """

    words: str
    data: dict[str, Any]


def limit_in_force(capacity: int, view: AccountView | None, now: float) -> LimitWords:
    """The limit in force on an account of ``capacity`` by its ``view`` at ``now``."""
    parts = [f"{capacity} set"]
    models: list[dict[str, Any]] = []
    fresh = view_is_fresh(view, now)
    if view is not None:
        allows: list[str] = []
        zeros: list[str] = []
        full: list[str] = []
        for limit in view.limits:
            at_once, daily = allowed_at_once(limit), allowed_a_day(limit)
            if limit.concurrency is None and limit.daily is None:
                continue
            in_force = capacity if at_once is None or not fresh else min(capacity, at_once)
            models.append({"model": limit.model, "provider_allows": limit.concurrency,
                           "in_force": in_force, "daily": limit.daily,
                           "used_today": limit.used_today,
                           "applied": fresh and (at_once is not None or daily is not None)})
            if limit.concurrency == 0 or limit.daily == 0:
                zeros.append(limit.model)
            if at_once is not None and at_once < capacity:
                allows.append(f"{at_once} for {limit.model}")
            if (daily is not None and limit.used_today is not None
                    and limit.used_today >= daily):
                full.append(f"{limit.model}: {limit.used_today} of {daily} today, waits")
        if allows:
            parts.append(("provider allows " if fresh else "provider's limits not applied "
                          "(stale): ") + ", ".join(allows))
        for model in zeros:
            parts.append(f"provider shows 0 for {model} (not applied: what 0 means is not "
                         "documented)")
        if fresh:
            parts.extend(full)
    words = SEP.join(parts)
    return LimitWords(words, {"set": capacity, "applied": fresh, "models": models,
                              "words": words})
