"""Routed rows (issue 24): a row that may render on any of several providers.

A row routes when its provider cell names several providers (``veo|runway|luma``; ``,``
and ``;`` separate too), or when its provider cell is blank and the batch has a route
(``--route``). :class:`RowRouter` checks such a row once per candidate provider, by that
provider's own row rules (:meth:`RowValidator.validate` with the provider given), after
moving the row's parameters as far as the batch's tolerance allows:

- ``exact``: nothing moves; a candidate that refuses the row as written is left out;
- ``nearest-duration``: the duration goes to the nearest one the candidate accepts (its
  ``durations``, else clamped into its ``duration_range``);
- ``nearest``: the aspect ratio too (nearest by the ratio's logarithm, so 2:1 and 1:2 are
  as far from 1:1) and the resolution (nearest by pixel height: 4k is 2160).

Each move is kept in :attr:`Candidate.changed` (``{field: (as written, as sent)}``). A
candidate that still refuses the row is left out with the row error's words
(:attr:`Route.left_out`), never changed further; with no candidate left the row is
refused with each provider's reason. Each candidate is priced as the estimate prices it
and the candidates are ranked by the batch's policy (:func:`reelqueue.domain.routes.ranked`).

A routed row may not name an account (an account pins one provider), nor use a file name
template with ``{provider}`` or ``{model}`` (the provider is only known at claim).

The row's job key hashes the route as written (its providers, the policy, the tolerance)
and the row's cells as written, never the candidate that ranks first: re-importing the
sheet after prices changed adds nothing (intake/jobs.py).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from reelqueue.domain.errors import InputError
from reelqueue.domain.models import JobSpec
from reelqueue.domain.routes import (
    MAX_CANDIDATES,
    ROUTE_SEPARATORS,
    Candidate,
    Route,
    RoutePolicy,
    Tolerance,
    ranked,
    split_route,
)
from reelqueue.intake.catalog import ProviderCatalog
from reelqueue.intake.estimate import PriceQuote
from reelqueue.intake.fields import (
    RATIO,
    FieldProblem,
    cell_text,
    is_blank,
    parse_aspect_ratio,
    parse_duration,
    parse_number,
    parse_resolution,
    plain_number,
)
from reelqueue.intake.rows import PARAM_FIELDS, RowError, RowValidator, RowValues
from reelqueue.intake.sheet import SheetRow
from reelqueue.providers.base import ParamSpec

ANY_RATIO = ParamSpec()
"""A spec that takes any W:H: reads an aspect ratio as written, before any provider."""
ROUTE_TEMPLATE_FIELDS = ("provider", "model")
"""File name fields a routed job cannot fill at import: its provider is chosen at claim."""
MAX_REASON_CHARS = 500
FITTED = ("duration", "aspect_ratio", "resolution")
"""The fields a tolerance may move, in the order they are fitted."""
MAX_REMEMBERED = 4_096
MAX_REMEMBERED_CHARS = 1_000


@dataclass(frozen=True)
class RouteSettings:
    """A batch's route settings (from ImportOptions, checked).

    Attributes:
        providers: the batch route, for rows whose provider cell is blank (empty: none).
        policy: how every routed row's candidates are ranked.
        tolerance: how far a routed row's parameters may move to fit a candidate.
        on_policy: move on after a content-policy refusal too.
    """

    providers: tuple[str, ...] = ()
    policy: RoutePolicy = RoutePolicy.ORDER
    tolerance: Tolerance = Tolerance.EXACT
    on_policy: bool = False

    def as_dict(self) -> dict[str, Any]:
        """As the batch's settings keep them (``settings["intake"]``)."""
        return {"route": list(self.providers), "route_policy": self.policy.value,
                "tolerance": self.tolerance.value, "route_on_policy": self.on_policy}


def route_settings(route: Sequence[str] | str, policy: str, tolerance: str,
                   on_policy: bool, catalog: ProviderCatalog | None = None) -> RouteSettings:
    """The route settings checked; InputError naming what is wrong. ``route`` may be a
    list of providers or one text (``"veo,runway"``), empty for no batch route (the
    policy and tolerance still apply to rows naming several providers); with ``catalog``
    each provider must be one of its kinds."""
    try:
        chosen_policy = RoutePolicy(str(policy).strip().lower())
    except ValueError:
        raise InputError(f"Unknown route policy {policy!r}: use one of "
                         + ", ".join(p.value for p in RoutePolicy) + ".") from None
    try:
        chosen_tolerance = Tolerance(str(tolerance).strip().lower())
    except ValueError:
        raise InputError(f"Unknown tolerance {tolerance!r}: use one of "
                         + ", ".join(t.value for t in Tolerance) + ".") from None
    text = route if isinstance(route, str) else "|".join(route)
    if not text.strip():
        return RouteSettings((), chosen_policy, chosen_tolerance, bool(on_policy))
    names = bounded_split(text)
    if names is None:
        raise InputError(f"The route names more than {MAX_CANDIDATES} providers; a route "
                         f"takes at most {MAX_CANDIDATES}.")
    if not names:
        raise InputError(f"The route {text[:80]!r} names no provider: list two or more, "
                         "e.g. veo,runway,luma.")
    if len(names) == 1:
        raise InputError(f"The route names one provider ({names[0]}): a route lists two or "
                         f"more, e.g. {names[0]},runway (for one provider use --provider "
                         f"{names[0]}).")
    if catalog is not None:
        known = catalog.kinds()
        unknown = [name for name in names if name not in known]
        if unknown:
            raise InputError(f"The route names {', '.join(map(repr, unknown))}, which "
                             f"{'is not a provider' if len(unknown) == 1 else 'are not providers'}"
                             f". Providers: {', '.join(known)}.")
    return RouteSettings(tuple(names), chosen_policy, chosen_tolerance, bool(on_policy))


_SEPARATORS = re.compile("[" + re.escape(ROUTE_SEPARATORS) + "]")


def bounded_split(text: str) -> list[str] | None:
    """:func:`split_route` of ``text``, or None when it names more than
    :data:`MAX_CANDIDATES` distinct providers (counted in linear time first: a hostile
    cell may list ten thousand)."""
    distinct = {part.strip().lower() for part in _SEPARATORS.split(text)} - {""}
    if len(distinct) > MAX_CANDIDATES:
        return None
    return split_route(text)


def routes(cell: str) -> bool:
    """:func:`~reelqueue.domain.routes.is_route` in linear time (a hostile cell may list
    ten thousand names; ``split_route`` keeps each once by a list look-up)."""
    if not any(sep in cell for sep in ROUTE_SEPARATORS):
        return False
    return len({part.strip().lower() for part in _SEPARATORS.split(cell)} - {""}) > 1


def template_needs_provider(fields: Sequence[str]) -> list[str]:
    """The fields of a file name template a routed job cannot fill at import."""
    return [name for name in ROUTE_TEMPLATE_FIELDS if name in fields]


class RowRouter:
    """Routes the rows of one sheet.

    Attributes:
        validator: checks a row for one provider.
        settings: the batch's route settings.
    """

    def __init__(
        self, validator: RowValidator, settings: RouteSettings, catalog: ProviderCatalog,
        quote: Callable[[JobSpec], PriceQuote], *,
        written_defaults: Mapping[str, object] | None = None,
        template_fields: Sequence[str] = (),
        speeds: Mapping[str, float] | None = None,
    ) -> None:
        self.validator = validator
        self.settings = settings
        self._catalog = catalog
        self._kinds = frozenset(catalog.kinds())
        self._quote = quote
        self._written_defaults = {k: v for k, v in (written_defaults or {}).items()
                                  if v is not None}
        self._template_fields = template_needs_provider(template_fields)
        self._speeds = dict(speeds or {})
        self._param_columns = [
            (name, validator.columns[name][0]) for name in PARAM_FIELDS
            if name in validator.columns
        ]
        self._route_words = "|".join(settings.providers)
        # A sheet repeats a few routes and a few settings: each is worked out once.
        self._routes: dict[str, list[str] | RowError] = {}
        self._fits: dict[tuple[object, ...], tuple[dict[str, object],
                                                   dict[str, tuple[Any, Any]]]] = {}
        self._prices: dict[tuple[object, ...], float | None] = {}

    def providers_of(self, row: SheetRow) -> tuple[str | None, str | None]:
        """(the row's route as written, or None when it does not route; the provider
        cell): a cell naming several providers, else the batch route for a blank cell."""
        cell = self.validator.provider_cell(row)
        if cell is None:
            return (self._route_words or None), None
        return (cell if routes(cell) else None), cell

    def validate(self, row: SheetRow) -> RowValues | list[RowError]:
        """The row checked as it is: routed when it names several providers (or has none
        and the batch has a route), else exactly as :meth:`RowValidator.validate`."""
        written, _cell = self.providers_of(row)
        if written is None:
            return self.validator.validate(row)
        return self.route_row(row, written)

    def _names(self, written: str, column: str) -> list[str] | RowError:
        """The providers of a route as written, or what is wrong with it (row 0)."""
        cached = self._routes.get(written)
        if cached is not None:
            return cached
        names = bounded_split(written)
        answer: list[str] | RowError
        if names is None:
            answer = RowError(0, column, f"the cell names more than {MAX_CANDIDATES} providers",
                              f"at most {MAX_CANDIDATES} providers, e.g. veo|runway|luma")
        elif unknown := [name for name in names if name not in self._kinds]:
            shown = ", ".join(repr(name[:40]) for name in unknown[:3])
            answer = RowError(0, column, f"the route names {shown}, not "
                                         f"{'a provider' if len(unknown) == 1 else 'providers'}",
                              "providers from: " + ", ".join(sorted(self._kinds)))
        else:
            answer = names
        if len(self._routes) < MAX_REMEMBERED and len(written) <= MAX_REMEMBERED_CHARS:
            self._routes[written] = answer
        return answer

    def route_row(self, row: SheetRow, written: str) -> RowValues | list[RowError]:
        row_number, values = row
        column = self.validator.header_of("provider") or "provider"
        names = self._names(written, column)
        if isinstance(names, RowError):
            return [replace(names, row_number=row_number)]
        problems = self._refusals(row, column, names)
        if problems:
            return problems
        wanted = ([self._wanted(row, name) for name in FITTED]
                  if self.settings.tolerance != Tolerance.EXACT else [])
        moves = {name: self._fit(wanted, name) for name in names}
        checked: dict[str, RowValues] = {}
        candidates: list[Candidate] = []
        left_out: list[tuple[str, str]] = []
        refusals: list[list[RowError]] = []
        for name in names:
            overrides, changed = moves[name]
            outcome = self.validator.validate(row, name, overrides or None)
            if isinstance(outcome, list):
                left_out.append((name, _reason(outcome)))
                refusals.append(outcome)
                continue
            checked[name] = outcome
            candidates.append(Candidate(name, outcome.params, self._price(name, outcome),
                                        changed))
        if not candidates and all(errors == refusals[0] for errors in refusals):
            return refusals[0]  # the row's own fault (an empty prompt...): said once
        if not candidates:
            reasons = "; ".join(f"{name}: {why}" for name, why in left_out)
            wider = list(Tolerance)[list(Tolerance).index(self.settings.tolerance) + 1:]
            return [RowError(
                row_number, column,
                f"no provider of the route {'|'.join(names)} can take this row ({reasons})",
                "a row one of them accepts" + (
                    f", or a wider tolerance ({', '.join(t.value for t in wider)})"
                    if wider else ""),
            )]
        route = Route(self.settings.policy,
                      ranked(candidates, self.settings.policy, self._speeds),
                      tuple(left_out), self.settings.tolerance, self.settings.on_policy)
        best = checked[route.candidates[0].provider]
        content = (("route", tuple(names), self.settings.policy.value,
                    self.settings.tolerance.value), best.prompt, self._written(values),
                   best.name)
        return best._replace(route=route, route_content=content)

    def _refusals(self, row: SheetRow, column: str, names: list[str]) -> list[RowError]:
        """What a routed row may not have: an account, a template naming the provider."""
        row_number, values = row
        errors: list[RowError] = []
        account = self.validator.columns.get("account")
        if account is not None and account[0] < len(values) and not is_blank(
                values[account[0]]):
            errors.append(RowError(
                row_number, account[1],
                f"the row names an account and a route ({'|'.join(names)}); an account "
                "pins one provider",
                "an empty account cell (any account of the route's providers), or one "
                "provider in the provider cell"))
        if self._template_fields:
            shown = " and ".join("{" + name + "}" for name in self._template_fields)
            errors.append(RowError(
                row_number, column,
                f"the file name template uses {shown}, which a routed row does not know "
                "until an account takes it",
                "one provider in the cell, or a template without {provider} and {model}"))
        return errors

    def _written(self, values: Sequence[object]) -> tuple[object, ...]:
        """The row's parameter cells as written (blank: the batch default as given)."""
        width = len(values)
        written: list[object] = []
        for name, index in self._param_columns:
            cell = values[index] if index < width else None
            written.append((name, cell_text(cell)) if not is_blank(cell)
                           else (name, None))
        return (tuple(written), tuple(sorted(
            (name, str(value)) for name, value in self._written_defaults.items())))

    # -- the tolerance ------------------------------------------------------------------
    def _wanted(self, row: SheetRow, field_name: str) -> object | None:
        """The row's value for a field as written: its cell, else the batch default."""
        mapped = self.validator.columns.get(field_name)
        values = row[1]
        if mapped is not None and mapped[0] < len(values) and not is_blank(values[mapped[0]]):
            cell: object = values[mapped[0]]
            return cell
        default: object = self._written_defaults.get(field_name)
        return default

    def _price(self, provider: str, row: RowValues) -> float | None:
        """One render of the row on ``provider``, as the estimate prices it."""
        params = row.params
        key = (provider, params.get("model"), params.get("resolution"), params.get("audio"),
               params.get("duration"))
        try:
            if key in self._prices:
                return self._prices[key]
            remember = len(self._prices) < MAX_REMEMBERED
        except TypeError:  # a value that cannot be a key: priced on its own
            remember = False
        price = self._quote(JobSpec(job_key="", prompt=row.prompt, provider=provider,
                                    output_path="", params=params)).usd
        if remember:
            self._prices[key] = price
        return price

    def _fit(self, wanted: list[object | None], provider: str
             ) -> tuple[dict[str, object], dict[str, tuple[Any, Any]]]:
        """(field -> the value to send, field -> (as written, as sent)) for each field the
        tolerance moves to a value ``provider`` accepts; ``wanted``: the row's values of
        :data:`FITTED` as written."""
        if not wanted:
            return {}, {}
        key = (provider, *((type(value), value) for value in wanted))
        try:
            return self._fits[key]
        except KeyError:
            pass
        except TypeError:  # an unhashable cell: not from any reader, but never mind
            return self._fit_values(provider, wanted)
        fitted = self._fit_values(provider, wanted)
        if len(self._fits) < MAX_REMEMBERED:
            self._fits[key] = fitted
        return fitted

    def _fit_values(self, provider: str, wanted_values: list[object | None]
                    ) -> tuple[dict[str, object], dict[str, tuple[Any, Any]]]:
        tolerance = self.settings.tolerance
        spec = self.validator.spec_for(provider)
        overrides: dict[str, object] = {}
        changed: dict[str, tuple[Any, Any]] = {}
        fitters: list[tuple[str, Callable[[object, ParamSpec], tuple[Any, Any] | None]]] = [
            ("duration", _nearest_duration)]
        if tolerance == Tolerance.NEAREST:
            fitters += [("aspect_ratio", _nearest_ratio), ("resolution", _nearest_resolution)]
        for (field_name, fit), wanted in zip(fitters, wanted_values, strict=False):
            if wanted is None:
                continue
            moved = fit(wanted, spec)
            if moved is not None:
                overrides[field_name] = moved[1]
                changed[field_name] = moved
        return overrides, changed


def _reason(errors: list[RowError]) -> str:
    """A left-out candidate's reason: its row errors in the import's words."""
    text = "; ".join(f"column {e.column!r}: {e.message} (accepted: {e.accepted})"
                     for e in errors)
    return text if len(text) <= MAX_REASON_CHARS else text[:MAX_REASON_CHARS - 1] + "…"


def _nearest_duration(value: object, spec: ParamSpec) -> tuple[Any, Any] | None:
    """(as written, nearest accepted) when ``spec`` refuses the duration; None when it
    takes it, or when it is no positive number of seconds (the row error says so)."""
    try:
        parse_duration(value, spec)
        return None
    except FieldProblem:
        pass
    try:
        seconds = parse_number(value, "number of seconds", "")
    except FieldProblem:
        return None
    if not seconds > 0:
        return None
    if spec.durations:
        # On a tie the longer one: the row asked for at least that much video.
        nearest = min(spec.durations, key=lambda d: (abs(d - seconds), -d))
    else:
        low, high = spec.duration_range
        nearest = min(max(seconds, low), high)
    return plain_number(seconds), plain_number(nearest)


def _nearest_ratio(value: object, spec: ParamSpec) -> tuple[Any, Any] | None:
    try:
        parse_aspect_ratio(value, spec)
        return None
    except FieldProblem:
        pass
    try:
        written = parse_aspect_ratio(value, ANY_RATIO)
    except FieldProblem:
        return None
    wanted = _ratio(written)
    choices = [(abs(math.log(r / wanted)), -r, choice) for choice in spec.aspect_ratios
               if (r := _ratio(choice)) > 0]
    if wanted <= 0 or not choices:
        return None
    return written, min(choices)[2]


def _ratio(text: str) -> float:
    match = RATIO.match(text)
    if not match:
        return 0.0
    width, height = float(match.group(1)), float(match.group(2))
    return width / height if width > 0 and height > 0 else 0.0


_HEIGHT = re.compile(r"^\s*(?:\d+\s*[x×]\s*)?(\d{2,5})\s*p?\s*$", re.IGNORECASE)
_K = re.compile(r"^\s*([1-9])\s*k\s*$", re.IGNORECASE)
K_HEIGHTS = {1: 1080, 2: 1440, 4: 2160, 5: 2880, 8: 4320}


def pixel_height(text: str) -> int | None:
    """"720p" -> 720, "1920x1080" -> 1080, "4k" -> 2160, "2K" -> 1440; None: unreadable."""
    match = _HEIGHT.match(text)
    if match:
        return int(match.group(1))
    match = _K.match(text)
    return K_HEIGHTS.get(int(match.group(1))) if match else None


def _nearest_resolution(value: object, spec: ParamSpec) -> tuple[Any, Any] | None:
    try:
        parse_resolution(value, spec)
        return None
    except FieldProblem:
        pass
    written = cell_text(value)
    height = pixel_height(written)
    choices = [(abs(h - height), -h, choice) for choice in spec.resolutions
               if (h := pixel_height(choice)) is not None] if height else []
    if not choices:
        return None
    return written, min(choices)[2]


__all__ = ["ROUTE_TEMPLATE_FIELDS", "RouteSettings", "RowRouter", "bounded_split",
           "pixel_height", "route_settings", "routes", "template_needs_provider"]
