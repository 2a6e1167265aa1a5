"""One sheet row, checked field by field against the provider it will render on.

:class:`RowValidator` turns a :class:`SheetRow` into :class:`RowValues` (every parameter
normalised, defaults applied) or into a list of :class:`RowError`, one per bad cell, so
the user fixes a row in one go rather than one error per import.

A row whose cells are each fine is then checked as a whole by the provider's rules (its
:attr:`ProviderInfo.rules`: what a :class:`ParamSpec` cannot say, such as Veo's 1080p
needing 8 seconds). Each :class:`ParamProblem` they report names its fields and what they
would accept; :class:`ProviderRules` turns it into a :class:`RowError` on those columns.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

from reelqueue.domain.errors import InputError
from reelqueue.domain.routes import Route
from reelqueue.intake.catalog import ProviderCatalog
from reelqueue.intake.fields import (
    FieldProblem,
    cell_text,
    is_blank,
    parse_aspect_ratio,
    parse_duration,
    parse_model,
    parse_priority,
    parse_prompt,
    parse_repeat,
    parse_resolution,
    parse_seed,
    parse_text,
    plain_number,
)
from reelqueue.intake.images import ImageChecker
from reelqueue.intake.sheet import SheetRow
from reelqueue.providers.base import ParamProblem, ParamSpec
from reelqueue.providers.registry import ParamRules

DEFAULT_DURATION = 5.0
MAX_NAME_CHARS = 500
MAX_ID_CHARS = 200


@dataclass(frozen=True)
class RowError:
    """What is wrong with one cell (or one row), in words the user can act on.

    Attributes:
        row_number: the row as the user sees it; None for a problem with the batch defaults.
        column: the column's header, or "(default duration)" for a batch default; for a
            problem with a combination of cells, the columns joined by ", ".
        message: what is wrong.
        accepted: what would be accepted instead.
        columns: each column concerned (just ``column`` for a problem with one cell).
    """

    row_number: int | None
    column: str
    message: str
    accepted: str
    columns: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if not self.columns:
            object.__setattr__(self, "columns", (self.column,))

    def describe(self) -> str:
        where = f"row {self.row_number}" if self.row_number is not None else "defaults"
        return f"{where}, column {self.column!r}: {self.message} (accepted: {self.accepted})"


@dataclass(frozen=True)
class BatchDefaults:
    """The values a row gets when its cell is empty (None: the provider's default)."""

    provider: str
    model: str | None = None
    duration: float | None = None
    aspect_ratio: str | None = None
    resolution: str | None = None
    #: takes of a row whose ``repeat`` cell is empty (``--takes N``, the import dialog)
    repeat: int = 1


class RowValues(NamedTuple):
    """A valid row, normalised. ``params`` is what the provider receives; ``cells`` are the
    row's cells as read (kept as metadata). A named tuple: one is made per row."""

    row_number: int
    prompt: str
    provider: str
    params: dict[str, Any]
    account: str | None
    name: str
    repeat: int
    priority: int
    row_id: str | None
    cells: Sequence[object] = ()
    route: Route | None = None
    """Where the row may render when it names several providers (intake/routes.py);
    ``provider`` and ``params`` are then its best-ranked candidate's."""
    route_content: tuple[object, ...] = ()
    """What a routed row's key hashes instead of its provider and params (the route as
    written and the row's cells as written): the same whichever candidate ranks first."""


def provider_default_duration(spec: ParamSpec) -> int | float:
    if spec.durations:
        chosen = DEFAULT_DURATION if DEFAULT_DURATION in spec.durations else spec.durations[0]
    else:
        low, high = spec.duration_range
        chosen = min(max(DEFAULT_DURATION, low), high)
    return int(chosen) if float(chosen).is_integer() else chosen


PARAM_FIELDS = ("model", "duration", "aspect_ratio", "resolution", "seed", "negative_prompt",
                "image")
"""The fields that become provider parameters, in the order params are written."""
OTHER_FIELDS = ("account", "name", "repeat", "priority", "id")
CellParser = Callable[[object, ParamSpec], Any]
RefusedDefault = tuple[str, str, FieldProblem]
"""(field, column label, problem) for a batch default a provider does not accept."""


def _parse_account(value: object, spec: ParamSpec) -> str:
    return parse_text(value, "account", 200)


def _parse_name(value: object, spec: ParamSpec) -> str:
    return parse_text(value, "name", MAX_NAME_CHARS)


def _parse_id(value: object, spec: ParamSpec) -> str:
    return parse_text(value, "id", MAX_ID_CHARS)


def _parse_repeat(value: object, spec: ParamSpec) -> int:
    return parse_repeat(value)


def _parse_priority(value: object, spec: ParamSpec) -> int:
    return parse_priority(value)


def _parse_negative(value: object, spec: ParamSpec) -> str:
    if not spec.negative_prompt:
        raise FieldProblem("this provider does not take a negative prompt", "an empty cell")
    return parse_text(value, "negative prompt", spec.max_prompt_chars)


class RowValidator:
    """Validates rows of one sheet. Per-field work is looked up once, not per row, since
    a sheet may have a hundred thousand rows.

    Attributes:
        columns: field name -> (column index, header) for the mapped fields.
        defaults: the batch defaults.
    """

    def __init__(
        self,
        columns: Mapping[str, tuple[int, str]],
        defaults: BatchDefaults,
        catalog: ProviderCatalog,
        images: ImageChecker,
    ) -> None:
        self.columns = dict(columns)
        self.defaults = defaults
        self._catalog = catalog
        self._images = images
        self._specs: dict[str, ParamSpec | InputError] = {}
        self._provider_defaults: dict[str, _ProviderDefaults] = {}
        self._contexts: dict[str, _Context] = {}
        parsers: dict[str, CellParser] = {
            "model": parse_model, "duration": parse_duration,
            "aspect_ratio": parse_aspect_ratio, "resolution": parse_resolution,
            "seed": parse_seed, "negative_prompt": _parse_negative, "image": self._image,
            "account": _parse_account, "name": _parse_name, "repeat": _parse_repeat,
            "priority": _parse_priority, "id": _parse_id,
        }
        self._parsers = parsers
        self._mapped = [
            (field_name, *self.columns[field_name], parsers[field_name],
             field_name in PARAM_FIELDS)
            for field_name in (*PARAM_FIELDS, *OTHER_FIELDS) if field_name in self.columns
        ]
        """(field, column index, header, parser, is a parameter), in PARAM_FIELDS order."""
        self._prompt_column = self.columns.get("prompt", (-1, "prompt"))
        self._provider_column = self.columns.get("provider")

    def spec_for(self, provider: str) -> ParamSpec:
        cached = self._specs.get(provider)
        if cached is None:
            try:
                cached = self._catalog.params(provider)
            except InputError as exc:
                cached = exc
            self._specs[provider] = cached
        if isinstance(cached, InputError):
            raise cached
        return cached

    def provider_cell(self, row: SheetRow) -> str | None:
        """The row's provider cell as text (None: no such column, or blank)."""
        if self._provider_column is None or self._provider_column[0] >= len(row[1]):
            return None
        chosen = row[1][self._provider_column[0]]
        return None if is_blank(chosen) else cell_text(chosen)

    def header_of(self, field_name: str) -> str | None:
        """The header of the column mapped to ``field_name`` (None: not in the sheet)."""
        mapped = self.columns.get(field_name)
        return None if mapped is None else mapped[1]

    def validate(
        self, row: SheetRow, provider: str | None = None,
        overrides: Mapping[str, object] | None = None,
    ) -> RowValues | list[RowError]:
        """The row checked for its provider (its provider cell, else the batch's), or for
        ``provider`` when given (a routed row, once per candidate: intake/routes.py).
        ``overrides``: field -> the value to check instead of the row's cell (or the
        batch default), e.g. a duration moved to what the candidate accepts."""
        row_number, values = row
        width = len(values)
        if provider is None:
            provider = self.defaults.provider
            if self._provider_column is not None and self._provider_column[0] < width:
                chosen = values[self._provider_column[0]]
                if not is_blank(chosen):
                    provider = cell_text(chosen).lower()
        context = self._contexts.get(provider)
        if context is None:
            try:
                context = self._context(provider)
            except InputError as exc:
                column = (self._provider_column or (0, "provider"))[1]
                accepted = "one of " + ", ".join(self._catalog.kinds())
                return [RowError(row_number, column, str(exc).split(".")[0], accepted)]
        spec, defaults, rules, mapped = context
        if overrides:
            mapped = [item for item in mapped if item[0] not in overrides]

        errors: list[RowError] = []
        index, header = self._prompt_column
        try:
            prompt = parse_prompt(values[index] if 0 <= index < width else None, spec)
        except FieldProblem as problem:
            errors.append(RowError(row_number, header, problem.message, problem.accepted))
            prompt = ""
        cell_params: dict[str, Any] = {}
        other: dict[str, Any] = {}
        for field_name, index, header, parse, is_param in mapped:
            if index >= width:
                continue
            value = values[index]
            if value is None or (type(value) is str and (not value or value.isspace())):
                continue  # blank: the default applies
            try:
                parsed = parse(value, spec)
            except FieldProblem as problem:
                errors.append(RowError(row_number, header, problem.message, problem.accepted))
                continue
            if is_param:
                cell_params[field_name] = parsed
            else:
                other[field_name] = parsed
        if overrides:
            self._override(row_number, overrides, spec, cell_params, errors)
        for field_name, column, refusal in defaults.refused:
            if field_name not in cell_params:
                errors.append(RowError(row_number, column, refusal.message, refusal.accepted))
        if errors:
            return errors
        params = defaults.merged(cell_params)
        if rules is not None:
            problems = rules.check(row_number, params, cell_params, defaults.batch_fields)
            if problems:
                return problems
        if not other:
            return RowValues(row_number, prompt, provider, params, None, "",
                             self.defaults.repeat, 0, None, values)
        return RowValues(
            row_number, prompt, provider, params, other.get("account") or None,
            other.get("name", ""), other.get("repeat", self.defaults.repeat),
            other.get("priority", 0),
            other.get("id") or None, values,
        )

    def _override(self, row_number: int, overrides: Mapping[str, object], spec: ParamSpec,
                  cell_params: dict[str, Any], errors: list[RowError]) -> None:
        """Check each overriding value as the field's cell (a parameter field only)."""
        for field_name, value in overrides.items():
            if field_name not in PARAM_POSITION:
                continue
            header = self.header_of(field_name) or (
                f"(default {FIELD_WORDS[field_name]})")
            try:
                cell_params[field_name] = self._parsers[field_name](value, spec)
            except FieldProblem as problem:
                errors.append(RowError(row_number, header, problem.message, problem.accepted))

    def _context(self, provider: str) -> _Context:
        """What validating a row for ``provider`` needs, looked up once per provider;
        InputError for an unknown provider."""
        spec = self.spec_for(provider)
        defaults = self._defaults_for(provider, spec)
        provider_rules = self._catalog.rules(provider)
        rules = None if provider_rules is None else ProviderRules(
            provider, provider_rules, self.columns)
        mapped = [
            (name, index, header, _Remembered(parse) if name in FEW_VALUES else parse, is_param)
            for name, index, header, parse, is_param in self._mapped
        ]
        context = self._contexts[provider] = (spec, defaults, rules, mapped)
        return context

    def _defaults_for(self, provider: str, spec: ParamSpec) -> _ProviderDefaults:
        """The values empty cells get on this provider, and the batch defaults it refuses
        (reported on the rows that would use them)."""
        cached = self._provider_defaults.get(provider)
        if cached is not None:
            return cached
        chosen: dict[str, Any] = {
            "model": (self.defaults.model if provider == self.defaults.provider else None)
            or (spec.models[0] if spec.models else None),
            "duration": provider_default_duration(spec),
            "aspect_ratio": spec.aspect_ratios[0] if spec.aspect_ratios else None,
            "resolution": spec.resolutions[0] if spec.resolutions else None,
        }
        batch_fields: set[str] = set()
        if provider == self.defaults.provider and self.defaults.model is not None:
            batch_fields.add("model")
        problems: list[RefusedDefault] = []
        batch: list[tuple[str, object, CellParser]] = [
            ("duration", self.defaults.duration, parse_duration),
            ("aspect_ratio", self.defaults.aspect_ratio, parse_aspect_ratio),
            ("resolution", self.defaults.resolution, parse_resolution),
        ]
        for name, value, parse in batch:
            if value is None:
                continue
            try:
                chosen[name] = parse(value, spec)
                batch_fields.add(name)
            except FieldProblem as problem:
                problems.append((name, f"(default {name.replace('_', ' ')})", problem))
        cached = _ProviderDefaults(chosen, problems, frozenset(batch_fields))
        self._provider_defaults[provider] = cached
        return cached

    def _image(self, value: object, spec: ParamSpec) -> str:
        if not spec.reference_image:
            raise FieldProblem("this provider does not take a reference image", "an empty cell")
        return self._images.check(value)


PARAM_POSITION = {name: position for position, name in enumerate(PARAM_FIELDS)}
FEW_VALUES = frozenset({"model", "duration", "aspect_ratio", "resolution", "repeat", "priority"})
"""Fields whose cells take a handful of distinct values in a sheet: parsed once per value."""
MAX_REMEMBERED = 4_096
_Mapped = list[tuple[str, int, str, CellParser, bool]]
_Context = tuple[ParamSpec, "_ProviderDefaults", "ProviderRules | None", _Mapped]


class _Remembered:
    """A cell parser for one provider that parses each distinct cell value once.

    Keyed by the value and, for anything but text, its type (True, 1 and 1.0 are equal
    in Python but not the same cell). A refusal is remembered as its message and raised
    afresh each time. At most :data:`MAX_REMEMBERED` values are kept.
    """

    __slots__ = ("_answers", "_parse")

    def __init__(self, parse: CellParser) -> None:
        self._parse = parse
        self._answers: dict[object, Any] = {}

    def __call__(self, value: object, spec: ParamSpec) -> Any:
        key = value if type(value) is str else (type(value), value)
        try:
            answer = self._answers[key]
        except KeyError:
            try:
                answer = self._parse(value, spec)
            except FieldProblem as problem:
                answer = _Refusal(problem.message, problem.accepted)
            if len(self._answers) < MAX_REMEMBERED:
                self._answers[key] = answer
        except TypeError:  # an unhashable cell: not from any reader, but never mind
            return self._parse(value, spec)
        if type(answer) is _Refusal:
            raise FieldProblem(answer.message, answer.accepted)
        return answer


class _Refusal(NamedTuple):
    message: str
    accepted: str


class _ProviderDefaults:
    """What empty cells get on one provider, and how to merge a row's cells over it.

    ``params`` are always built in :data:`PARAM_FIELDS` order, because a row's key hashes
    their ``repr``: the same row must give the same key in every version.
    """

    def __init__(
        self, chosen: dict[str, Any], refused: list[RefusedDefault], batch_fields: frozenset[str]
    ) -> None:
        self.chosen = chosen
        self.refused = refused
        self.batch_fields = batch_fields
        self.base = {name: chosen[name] for name in PARAM_FIELDS if chosen.get(name) is not None}
        last = max((PARAM_POSITION[name] for name in self.base), default=-1)
        # Fields without a default that sort before one with a default: a row setting one
        # of them needs the ordered merge ({**base, **cells} would put it last).
        self.gaps = frozenset(
            name for name in PARAM_FIELDS if name not in self.base and PARAM_POSITION[name] < last
        )

    def merged(self, cells: dict[str, Any]) -> dict[str, Any]:
        """The row's params: its cells over the defaults, in PARAM_FIELDS order."""
        if not cells:
            return self.base.copy()
        if not self.gaps or self.gaps.isdisjoint(cells):
            return {**self.base, **cells}
        base = self.base
        return {
            name: cells[name] if name in cells else base[name]
            for name in PARAM_FIELDS if name in cells or name in base
        }


FIELD_WORDS = {
    "model": "model", "duration": "duration", "aspect_ratio": "aspect ratio",
    "resolution": "resolution", "seed": "seed", "negative_prompt": "negative prompt",
    "image": "image",
}
MAX_LISTED = 4


class ProviderRules:
    """A provider's rules (:attr:`ProviderInfo.rules`) turned into row errors.

    Each :class:`ParamProblem` names the fields concerned and the values that would fix
    it; the error names their columns (or "(default duration)" for a batch default) and
    says what would be accepted ("duration 8 s; or resolution 720p").

    Attributes:
        provider: the provider kind.
        rules: ``params -> problems`` (empty when the row is fine).
    """

    def __init__(
        self, provider: str, rules: ParamRules, columns: Mapping[str, tuple[int, str]],
    ) -> None:
        self.provider = provider
        self.rules = rules
        self._headers = {name: header for name, (_index, header) in columns.items()}

    def check(
        self, row_number: int, params: Mapping[str, Any], cells: Mapping[str, Any],
        batch_fields: frozenset[str],
    ) -> list[RowError]:
        """The row's problems under the provider's rules; [] when it is fine."""
        try:
            problems = list(self.rules(params))
        except Exception as exc:  # a bug in an adapter must not take the import down
            return [RowError(
                row_number, self._headers.get("provider", "provider"),
                f"the {self.provider} adapter could not check this row "
                f"({type(exc).__name__}: {exc})",
                "a row the adapter can check; please report this as a bug",
            )]
        errors: list[RowError] = []
        for problem in problems:
            fields = sorted((name for name in problem.fields if name in PARAM_POSITION),
                            key=PARAM_POSITION.__getitem__)
            # The columns are those a change of which fixes the row; only when none can
            # (an image to add cannot be offered), every field the problem concerns.
            fields = [name for name in fields if problem.accepted.get(name)] or fields
            columns = tuple(self._column(name, params, cells, batch_fields) for name in fields)
            errors.append(RowError(
                row_number, ", ".join(columns) or self._headers.get("provider", "provider"),
                problem.message, self._accepted(problem, fields), columns,
            ))
        return errors

    def _column(
        self, name: str, params: Mapping[str, Any], cells: Mapping[str, Any],
        batch_fields: frozenset[str],
    ) -> str:
        """The header of the field's column; "(default duration)" when the value is a
        default and the sheet has no such column (or the batch default filled the cell);
        the field's name when neither the sheet nor the defaults set it."""
        header = self._headers.get(name)
        if header is not None and (name in cells or name not in batch_fields):
            return header  # the cell holds the value, or is where the user would put it
        words = FIELD_WORDS[name]
        return f"(default {words})" if name in batch_fields or name in params else words

    def _accepted(self, problem: ParamProblem, fields: Sequence[str]) -> str:
        choices = [_describe(name, problem.accepted[name]) for name in fields
                   if problem.accepted.get(name)]
        return "; or ".join(choices) if choices else (
            f"settings {self.provider} accepts together (the message says which)"
        )


def _describe(name: str, values: Sequence[Any]) -> str:
    """ "duration 4 s or 8 s", "resolution 720p", "no seed" (None: the field left out)."""
    words = FIELD_WORDS[name]
    given = [value for value in values if value is not None]
    shown = given[:MAX_LISTED]
    listed = " or ".join(
        f"{plain_number(float(value))} s" if name == "duration" else str(value)
        for value in shown
    )
    if len(given) > MAX_LISTED:
        listed += " (or another)"
    choices = [f"{words} {listed}"] if shown else []
    if None in values:
        choices.append(f"no {words}")
    return " or ".join(choices)
