"""Limits from the provider (issue 32 item 3): what every store decides at claim time.

The account's own limit (``accounts.capacity``, the user's setting) is kept; beside it,
the claim reads the account's view (``account_views``, the journal's copy of what the
provider published) in its own transaction and refuses a new render of a model the
provider allows no more of now:

- *at once*: the renders of that model on the account in flight (CLAIMED to DOWNLOADING)
  reached the published ``concurrency``;
- *a day*: the provider's ``used_today`` at the read, plus the creates of that model on
  the account written since the read (their ``submitting`` entries), plus the claimed
  jobs of that model that will create, reached the published ``daily``.

A view older than :data:`VIEW_FRESH_SECONDS` gates nothing (the figures may be gone
stale; the user's setting alone holds). A published 0 is "unknown", never "0 allowed":
no provider ReelQueue reads documents what a 0 means (docs/design-notes.md). A job
holding a render (a provider job id) is never refused: it is open at the provider
already.
"""

from __future__ import annotations

import math
from collections.abc import Callable

from reelqueue.domain.account_view import AccountView, ModelLimit

__all__ = ["VIEW_FRESH_SECONDS", "allowed_at_once", "gated_models", "job_model",
           "view_is_fresh"]

VIEW_FRESH_SECONDS = 15 * 60.0
"""A view older than this gates nothing (the issue's 15 minutes; the words call it
"stale" from the same age, application/account_views.py)."""


def view_is_fresh(view: AccountView | None, now: float) -> bool:
    """Whether ``view`` may gate a claim at ``now``: read at most
    :data:`VIEW_FRESH_SECONDS` ago. A read time ahead of ``now`` (another machine's clock)
    counts as fresh up to as far ahead; further, or not a number (a hostile row), it
    gates nothing."""
    return (view is not None and math.isfinite(view.read_at)
            and abs(now - view.read_at) <= VIEW_FRESH_SECONDS)


def allowed_at_once(limit: ModelLimit) -> int | None:
    """The renders at once the provider allows for ``limit``'s model, or None (not
    published, or 0: unknown)."""
    return limit.concurrency if limit.concurrency else None


def allowed_a_day(limit: ModelLimit) -> int | None:
    """The renders a day the provider allows, or None (not published, or 0: unknown)."""
    return limit.daily if limit.daily else None


def job_model(params_model: object, default_model: str | None) -> str:
    """A job's model as the claim compares it: its own, else the provider's (or the
    account's) default, else "" (matches no published limit)."""
    if isinstance(params_model, str) and params_model:
        return params_model
    return default_model or ""


def gated_models(
    view: AccountView | None, now: float, *,
    live_of: Callable[[str], int], created_since: Callable[[str, float], int],
) -> list[str]:
    """The models the account may start no new render of now, by its fresh ``view``.

    ``live_of(model)``: the account's renders of ``model`` in flight; ``created_since(model,
    read_at)``: its creates of ``model`` written since the read plus its claimed jobs of
    ``model`` that will create. Both are read in the claim's transaction; each is asked
    only for a model that publishes the figure it needs."""
    if view is None or not view_is_fresh(view, now):
        return []
    gated: list[str] = []
    for limit in view.limits:  # a model listed twice (a hostile row): either entry gates
        if not limit.model or limit.model in gated:
            continue
        at_once = allowed_at_once(limit)
        if at_once is not None and live_of(limit.model) >= at_once:
            gated.append(limit.model)
            continue
        daily = allowed_a_day(limit)
        if (daily is not None and limit.used_today is not None
                and limit.used_today + created_since(limit.model, view.read_at) >= daily):
            gated.append(limit.model)
    return gated

