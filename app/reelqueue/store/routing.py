"""Which routed job an account takes over (issue 24), decided once for every store.

The rule (docs/routing.md): an account takes a routed job whose route includes its provider
when no better-ranked candidate of that job has an account with a free slot now. The
claim applies it only after the account's own provider has nothing for it, inside the
claim's write transaction (SQLite: the one writer; PostgreSQL: the account's row lock and
the routed rows taken ``FOR UPDATE SKIP LOCKED``), so a slot is never counted twice.

"A free slot now" is read from the journal: an enabled account, ready (or rate limited
with its cool-down over), with fewer renders in flight than its limit, and no spend cap
refusing this job at that candidate's price. It is never a promise that the account will
claim: an account no running machine can use (its key is on no machine) counts as free
until it is disabled (docs/routing.md says so).

Nothing here moves a job that may have a create: the rows come from ``routed_waiting``
(no client token, no provider job id, bound to no account).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from reelqueue.domain.models import Account
from reelqueue.domain.routes import Candidate, Route
from reelqueue.store.base import account_usable

ROUTED_LOOK = 32
"""How many routed jobs one claim looks at, best first."""


@dataclass(frozen=True)
class RoutedRow:
    """A routed job the claim may take over: its id, batch, current provider, stored route,
    its batch's spend cap (None: none) and its seed as it is now (None: none)."""

    job_id: int
    batch_id: int
    provider: str
    route: object
    batch_cap: float | None
    seed: object = None


@dataclass(frozen=True)
class RoutedPick:
    """The job to take over: its id, the candidate it takes, where it was, the
    better-ranked providers passed over (none of them had a free slot now), and the
    parameters it takes with it (:func:`carried_params`)."""

    job_id: int
    candidate: Candidate
    came_from: str
    passed_over: tuple[str, ...]
    params: Mapping[str, Any] = field(default_factory=dict)

    def detail(self) -> dict[str, Any]:
        """The ledger detail of the ``handed_over`` entry."""
        return {"at": "claim", "from": self.came_from, "to": self.candidate.provider,
                "price": self.candidate.price, "params": dict(self.params),
                "why": "taken over: " + (
                    ", ".join(self.passed_over) + " had no free slot" if self.passed_over
                    else "the best-ranked candidate with a free slot")}


def needle(provider: str) -> str:
    """How ``provider`` appears in a ``route_order`` (domain/routes.py ``order_key``)."""
    return "|" + provider + "|"


def free_accounts(rows: Iterable[tuple[Account, int, bool]]) -> dict[str, list[Account]]:
    """(account, renders in flight, cooling) -> provider -> the accounts with a free slot."""
    free: dict[str, list[Account]] = {}
    for account, live, cooling in rows:
        if account_usable(account) and not cooling and live < account.capacity:
            free.setdefault(account.provider, []).append(account)
    return free


def surely_free(free: Mapping[str, Sequence[Account]],
                capped: Callable[[Account], bool]) -> list[str]:
    """The providers one of whose free accounts creates whatever the price: no daily cap
    reached (``capped``); batch caps aside. ``routed_waiting`` leaves out the jobs such a
    provider outranks; a batch cap that refuses the better candidate's price is caught by
    a second look without this filter (:func:`pick_routed`'s caller)."""
    return sorted(provider for provider, accounts in free.items()
                  if any(not capped(a) for a in accounts))


def pick_routed(
    provider: str,
    rows: Iterable[RoutedRow],
    free: Mapping[str, Sequence[Account]],
    may_create: Callable[[Account | None, RoutedRow, Candidate], bool],
) -> RoutedPick | None:
    """The first of ``rows`` an account of ``provider`` should take over, or None.

    ``free`` gives the accounts with a free slot now by provider; ``may_create(account,
    row, candidate)`` says whether the spend caps let that account (None: the claiming
    account) create the job at the candidate's price."""
    for row in rows:
        route = Route.parse(row.route)
        if route is None:
            continue  # unreadable: it stays with the provider it has
        candidate = route.candidate(provider)
        if candidate is None or row.provider == provider:
            continue
        better = route.better_than(provider)
        if any(may_create(account, row, c) for c in better
               for account in free.get(c.provider, ())):
            continue  # a better-ranked candidate can take it now
        if not may_create(None, row, candidate):
            continue
        return RoutedPick(row.job_id, candidate, row.provider,
                          tuple(c.provider for c in better),
                          carried_params(candidate, row.seed))
    return None


def carried_params(candidate: Candidate, seed: object) -> dict[str, Any]:
    """The candidate's parameters, with the job's seed as it is now where both take one:
    a user's retry with a new seed changes the job's params, not every candidate's, and
    the new seed must go with the job to whichever provider takes it."""
    params = dict(candidate.params)
    if "seed" in params and isinstance(seed, int) and not isinstance(seed, bool):
        params["seed"] = seed
    return params


def hand_over_target(route: Route, provider: str, why: str) -> tuple[Route, Candidate | None]:
    """After ``provider`` definitely refused the job: the route with that refusal marked,
    and the candidate it goes to next (None: none left, the job fails)."""
    changed = route.refuse(provider, why)
    return changed, changed.best()


__all__ = ["ROUTED_LOOK", "RoutedPick", "RoutedRow", "free_accounts", "hand_over_target",
           "needle", "pick_routed", "surely_free"]
