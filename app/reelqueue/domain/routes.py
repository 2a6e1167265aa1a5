"""Routes across providers (issue 24): where one job may render, ranked, and what moves it.

A row may name several providers (``veo|runway|luma``) or its batch a route; the job then
carries a :class:`Route`: its candidates in rank order, each with the parameters mapped to
that provider's accepted values and its price. The job's ``provider``, ``params`` and
price are always those of the candidate it is with now; a hand-over (a named, fenced
transition with its ledger row) moves it to another candidate.

Ranking, fixed at import and kept in the journal so every machine of a team routes alike:

- ``order``: as the user listed them (the default);
- ``cheapest``: by price, cheapest first (a candidate without a price last);
- ``fastest``: by the journal's render times (domain/render_times.py: the middle of the
  p25–p75 range once a kind has :data:`~reelqueue.domain.render_times.MIN_SAMPLES`
  finished renders), candidates without enough of them after, in the given order;
- ``spread``: unranked: any candidate's account with a free slot takes the job.

The scheduling rule (docs/routing.md): an account takes a routed job whose route includes
its provider when no better-ranked candidate of that job has an account with a free slot
now. A job only moves while no create of it may exist (no client token, no provider job
id); a candidate the provider definitely refused (its parameters, or with ``on_policy`` a
content-policy refusal) is marked ``refused`` and never tried again.

The route is stored as JSON (the journal's ``route`` column). :meth:`Route.parse` reads
it back defensively: a team database is not trusted, so anything malformed reads as "no
route" (the job stays with the provider it has), never as an error.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from enum import StrEnum
from typing import Any

from reelqueue.domain.render_times import MIN_SAMPLES, RenderTimes, render_kind


class RoutePolicy(StrEnum):
    ORDER = "order"
    CHEAPEST = "cheapest"
    FASTEST = "fastest"
    SPREAD = "spread"


class Tolerance(StrEnum):
    """How far a row's parameters may be changed to fit a candidate."""

    EXACT = "exact"  # a candidate that does not take the row as written is left out
    NEAREST_DURATION = "nearest-duration"  # the nearest accepted duration, nothing else
    NEAREST = "nearest"  # the nearest accepted duration, aspect ratio and resolution


ROUTE_SEPARATORS = "|,;>"
"""What separates providers in a ``providers`` cell or ``--route`` (``veo|runway``)."""
MAX_CANDIDATES = 12
"""The most providers one route may list (a hostile route is cut here when read)."""
MAX_ROUTE_CHARS = 64_000
"""A stored route longer than this is not read (hostile database)."""


def split_route(text: str) -> list[str]:
    """``"Veo | runway, luma"`` -> ``["veo", "runway", "luma"]``: lower case, each once,
    in the order given."""
    names: list[str] = []
    for part in text.translate({ord(c): "|" for c in ROUTE_SEPARATORS}).split("|"):
        name = part.strip().lower()
        if name and name not in names:
            names.append(name)
    return names


def is_route(text: str) -> bool:
    """Whether a provider cell names more than one provider."""
    return any(sep in text for sep in ROUTE_SEPARATORS) and len(split_route(text)) > 1


@dataclass(frozen=True)
class Candidate:
    """One provider a routed job may render on.

    Attributes:
        provider: the provider kind.
        params: the row's parameters as this provider takes them.
        price: USD for one render here (None: unknown).
        changed: field -> [as written, as sent] for each parameter moved to the nearest
            value this provider accepts (the tolerance allowed it).
        refused: why this provider will not be tried again (its definite refusal), or None.
    """

    provider: str
    params: Mapping[str, Any] = field(default_factory=dict)
    price: float | None = None
    changed: Mapping[str, tuple[Any, Any]] = field(default_factory=dict)
    refused: str | None = None

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"provider": self.provider, "params": dict(self.params),
                               "price": self.price}
        if self.changed:
            out["changed"] = {k: list(v) for k, v in self.changed.items()}
        if self.refused is not None:
            out["refused"] = self.refused
        return out


@dataclass(frozen=True)
class Route:
    """Where a job may render, best first.

    Attributes:
        policy: how the candidates were ranked (and, for ``spread``, that rank is unused).
        candidates: in rank order; refused ones stay, marked, for the job's history.
        left_out: (provider, why) for each provider of the route the row could not go to
            (its parameters beyond the tolerance, no price under a cap...), from import.
        tolerance: how far parameters were allowed to move (:class:`Tolerance`).
        on_policy: move on after a content-policy refusal too (opt-in per batch).
    """

    policy: RoutePolicy
    candidates: tuple[Candidate, ...]
    left_out: tuple[tuple[str, str], ...] = ()
    tolerance: Tolerance = Tolerance.EXACT
    on_policy: bool = False

    # -- reading -----------------------------------------------------------------------
    def providers(self) -> list[str]:
        """Every candidate's provider, in rank order (refused ones included)."""
        return [c.provider for c in self.candidates]

    def usable(self) -> list[Candidate]:
        """The candidates not refused, in rank order."""
        return [c for c in self.candidates if c.refused is None]

    def best(self) -> Candidate | None:
        usable = self.usable()
        return usable[0] if usable else None

    def candidate(self, provider: str) -> Candidate | None:
        """The usable candidate on ``provider``, or None."""
        for c in self.candidates:
            if c.provider == provider and c.refused is None:
                return c
        return None

    def better_than(self, provider: str) -> list[Candidate]:
        """The usable candidates that rank above ``provider`` (none under ``spread``):
        while one of them has an account with a free slot, ``provider`` waits its turn."""
        if self.policy == RoutePolicy.SPREAD:
            return []
        better: list[Candidate] = []
        for c in self.candidates:
            if c.provider == provider:
                return better
            if c.refused is None:
                better.append(c)
        return better

    def order_key(self) -> str:
        """The usable candidates' providers in rank order as the journal's ``route_order``
        column keeps them for the claim's filter: ``|veo|runway|`` (``~|veo|runway|`` under
        ``spread``, where no rank holds a job back)."""
        key = "|" + "|".join(c.provider for c in self.usable()) + "|"
        return ("~" + key) if self.policy == RoutePolicy.SPREAD else key

    def worst_price(self) -> float | None:
        """The dearest usable candidate's price (None when any is unknown)."""
        prices = [c.price for c in self.usable()]
        if not prices or any(p is None for p in prices):
            return None
        return max(p for p in prices if p is not None)

    def moves_on_after(self, label: str) -> bool:
        """Whether a definite refusal with this error label hands the job over: the
        provider refused the row's parameters ("invalid input"), or its content policy
        refused it and the batch opted in."""
        return label == "invalid input" or (self.on_policy and label == "content policy")

    # -- changing ----------------------------------------------------------------------
    def refuse(self, provider: str, why: str) -> Route:
        """This route with ``provider`` marked refused (``why``)."""
        return replace(self, candidates=tuple(
            replace(c, refused=why[:500]) if c.provider == provider and c.refused is None
            else c for c in self.candidates))

    # -- storing -----------------------------------------------------------------------
    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"policy": self.policy.value, "tolerance": self.tolerance.value,
                               "candidates": [c.as_dict() for c in self.candidates]}
        if self.left_out:
            out["left_out"] = [list(pair) for pair in self.left_out]
        if self.on_policy:
            out["on_policy"] = True
        return out

    def to_json(self) -> str:
        return json.dumps(self.as_dict(), separators=(",", ":"), sort_keys=True,
                          allow_nan=False, default=str)

    @classmethod
    def parse(cls, stored: object) -> Route | None:
        """A stored route (JSON text, an already decoded dict, or a Route), or None when it is
        missing or malformed in any way (never an exception)."""
        try:
            if stored is None or isinstance(stored, Route):
                return stored
            if isinstance(stored, bytes | bytearray | memoryview):
                stored = bytes(stored).decode("utf-8")
            if isinstance(stored, str):
                if len(stored) > MAX_ROUTE_CHARS:
                    return None
                stored = json.loads(stored)
            return cls.from_dict(stored)
        except (ValueError, TypeError, RecursionError, UnicodeDecodeError):
            return None

    @classmethod
    def from_dict(cls, doc: object) -> Route | None:
        if not isinstance(doc, dict):
            return None
        raw = doc.get("candidates")
        if not isinstance(raw, list) or not raw:
            return None
        candidates: list[Candidate] = []
        seen: set[str] = set()
        for item in raw[:MAX_CANDIDATES]:
            candidate = _candidate(item)
            if candidate is None or candidate.provider in seen:
                return None
            seen.add(candidate.provider)
            candidates.append(candidate)
        try:
            policy = RoutePolicy(doc.get("policy", "order"))
            tolerance = Tolerance(doc.get("tolerance", "exact"))
        except ValueError:
            return None
        left_out: list[tuple[str, str]] = []
        for pair in doc.get("left_out") or ():
            if (isinstance(pair, list) and len(pair) == 2
                    and all(isinstance(v, str) for v in pair)):
                left_out.append((pair[0], pair[1]))
        return cls(policy, tuple(candidates), tuple(left_out[:MAX_CANDIDATES]), tolerance,
                   doc.get("on_policy") is True)


def _candidate(item: object) -> Candidate | None:
    if not isinstance(item, dict):
        return None
    provider, params = item.get("provider"), item.get("params", {})
    if not isinstance(provider, str) or not provider or len(provider) > 64:
        return None
    if not isinstance(params, dict):
        return None
    price = item.get("price")
    if isinstance(price, bool) or not (price is None or isinstance(price, int | float)):
        return None
    if price is not None and (not math.isfinite(price) or price < 0):
        return None
    refused = item.get("refused")
    if refused is not None and not isinstance(refused, str):
        return None
    changed: dict[str, tuple[Any, Any]] = {}
    for name, pair in (item.get("changed") or {}).items():
        if isinstance(pair, list) and len(pair) == 2:
            changed[str(name)] = (pair[0], pair[1])
    return Candidate(provider, params, None if price is None else float(price), changed,
                     refused)


def ranked(candidates: Iterable[Candidate], policy: RoutePolicy,
           speeds: Mapping[str, float] | None = None) -> tuple[Candidate, ...]:
    """``candidates`` (in the order given) ranked by ``policy``. ``speeds``: render kind
    (``provider/model/duration``, domain/render_times.py) or provider -> a typical render
    time in seconds from the journal (:func:`typical_speeds`), for ``fastest``."""
    given = list(candidates)
    if policy == RoutePolicy.CHEAPEST:
        return tuple(sorted(given, key=lambda c: (c.price is None, c.price or 0.0)))
    if policy == RoutePolicy.FASTEST:
        known = speeds or {}

        def speed(c: Candidate) -> float | None:
            kind = render_kind(c.provider, c.params)
            return known.get(kind, known.get(c.provider))

        return tuple(sorted(given, key=lambda c: (speed(c) is None, speed(c) or 0.0)))
    return tuple(given)


def typical_speeds(times: Iterable[tuple[str, float]]) -> dict[str, float]:
    """(render kind, seconds) of finished renders -> kind -> the middle of its p25–p75
    range, only for kinds with :data:`MIN_SAMPLES` renders or more (fewer: no figure, and
    ``fastest`` keeps the given order for them)."""
    times_of = RenderTimes()
    kinds: set[str] = set()
    for kind, seconds in times:
        times_of.add(kind, seconds)
        kinds.add(kind)
    speeds: dict[str, float] = {}
    for kind in kinds:
        typical = times_of.range(kind)
        if typical is not None and typical.samples >= MIN_SAMPLES:
            speeds[kind] = (typical.low + typical.high) / 2
    return speeds


__all__ = ["MAX_CANDIDATES", "ROUTE_SEPARATORS", "Candidate", "Route", "RoutePolicy",
           "Tolerance", "is_route", "ranked", "split_route", "typical_speeds"]
