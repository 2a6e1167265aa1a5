"""One sheet row, checked field by field against the provider it will render on.

:class:`RowValidator` turns a :class:`SheetRow` into :class:`RowValues` (every parameter
normalised, defaults applied) or into a list of :class:`RowError`, one per bad cell, so
the user fixes a row in one go rather than one error per import.

A row whose cells are each fine is then checked as a whole by the provider's extra rules
(``EXTRA_VALIDATORS`` of the adapters: what a :class:`ParamSpec` cannot say, such as Veo's
1080p needing 8 seconds). Each problem they report becomes a :class:`RowError` naming the
columns involved and what would be accepted, both found by asking the same rules about the
row with one setting changed (see :class:`ExtraRules`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

from reelqueue.domain.errors import InputError
from reelqueue.intake.catalog import ExtraValidator, ProviderCatalog
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
from reelqueue.providers.base import ParamSpec

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

    def validate(self, row: SheetRow) -> RowValues | list[RowError]:
        row_number, values = row
        width = len(values)
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
            return RowValues(row_number, prompt, provider, params, None, "", 1, 0, None, values)
        return RowValues(
            row_number, prompt, provider, params, other.get("account") or None,
            other.get("name", ""), other.get("repeat", 1), other.get("priority", 0),
            other.get("id") or None, values,
        )

    def _context(self, provider: str) -> _Context:
        """What validating a row for ``provider`` needs, looked up once per provider;
        InputError for an unknown provider."""
        spec = self.spec_for(provider)
        defaults = self._defaults_for(provider, spec)
        finder = getattr(self._catalog, "extra_validator", None)
        validator = finder(provider) if finder is not None else None
        rules = None if validator is None else ExtraRules(
            provider, spec, validator, self.columns, frozenset(defaults.base)
        )
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
_Context = tuple[ParamSpec, "_ProviderDefaults", "ExtraRules | None", _Mapped]


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
MESSAGE_WORDS: dict[str, tuple[str, ...]] = {
    "model": ("model",),
    "duration": ("duration", "second"),
    "aspect_ratio": ("aspect ratio", "ratio"),
    "resolution": ("resolution",),
    "seed": ("seed",),
    "negative_prompt": ("negative prompt",),
    "image": ("image", "first frame", "keyframe"),
}
"""Words that name a field in an adapter's message, for fields probing cannot vary (a
missing image cannot be tried)."""
MAX_PROBED_DURATIONS = 60
MAX_LISTED = 4


class ExtraRules:
    """A provider's extra rules (``EXTRA_VALIDATORS[kind]``) turned into row errors.

    The adapter says what is wrong in words ("Veo renders 1080p only at 8 seconds") but not
    which cells are involved nor what would pass. Both are found by asking the adapter
    again about the row with one setting changed, to each value the provider declares
    (or left out, for settings an empty cell leaves out): a change that makes the problem
    go away without bringing a new one is a fix; its field is concerned and its value
    accepted. When nothing that can be tried fixes it (a missing image cannot be tried),
    the concerned fields are the ones the message names. The answer is cached per
    problem and settings (not seeds, prompts or image paths), so a sheet with a thousand
    such rows asks a few dozen extra questions, not thousands.

    Attributes:
        provider: the provider kind.
        validator: ``params -> list of problems`` (empty when the row is fine).
    """

    def __init__(
        self, provider: str, spec: ParamSpec, validator: ExtraValidator,
        columns: Mapping[str, tuple[int, str]], defaulted: frozenset[str] = frozenset(),
    ) -> None:
        self.provider = provider
        self.spec = spec
        self.validator = validator
        self._defaulted = defaulted  # fields an empty cell does not leave out
        self._headers = {name: header for name, (_index, header) in columns.items()}
        self._explained: dict[tuple[object, ...], tuple[tuple[str, ...], str]] = {}

    def check(
        self, row_number: int, params: Mapping[str, Any], cells: Mapping[str, Any],
        batch_fields: frozenset[str],
    ) -> list[RowError]:
        """The row's problems under the provider's extra rules; [] when it is fine."""
        try:
            problems = list(self.validator(params))
        except Exception as exc:  # a bug in an adapter must not take the import down
            return [RowError(
                row_number, self._headers.get("provider", "provider"),
                f"the {self.provider} adapter could not check this row "
                f"({type(exc).__name__}: {exc})",
                "a row the adapter can check; please report this as a bug",
            )]
        errors: list[RowError] = []
        for message in problems:
            fields, accepted = self._explain(str(message), params)
            columns = tuple(
                self._column(name, params, cells, batch_fields) for name in fields
            )
            errors.append(RowError(
                row_number, ", ".join(columns) or self._headers.get("provider", "provider"),
                str(message), accepted, columns,
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

    def _explain(self, message: str, params: Mapping[str, Any]) -> tuple[tuple[str, ...], str]:
        key = (message, *sorted(
            (name, _shape(name, value)) for name, value in params.items()
        ))
        cached = self._explained.get(key)
        if cached is None:
            cached = self._explained[key] = self._probe(message, params)
        return cached

    def _probe(self, message: str, params: Mapping[str, Any]) -> tuple[tuple[str, ...], str]:
        try:
            before = {str(problem) for problem in self.validator(params)}
        except Exception:
            before = {message}
        others = before - {message}
        fixes: dict[str, list[Any]] = {}
        for name in PARAM_FIELDS:
            for candidate in self._candidates(name, params):
                trial = dict(params)
                if candidate is None:
                    trial.pop(name, None)
                else:
                    trial[name] = candidate
                try:
                    after = {str(problem) for problem in self.validator(trial)}
                except Exception:
                    continue
                # A fix makes this problem go away without bringing a new one (changing
                # a field may only hide it behind another, which is no fix).
                if message not in after and after <= others:
                    fixes.setdefault(name, []).append(candidate)
        fields = tuple(name for name in PARAM_FIELDS if name in fixes)
        if not fields:
            # Nothing that can be tried fixes it (a missing image cannot be tried): the
            # fields the message names.
            lowered = message.lower()
            fields = tuple(
                name for name in PARAM_FIELDS
                if any(word in lowered for word in MESSAGE_WORDS[name])
            )
        choices = [_describe(name, fixes[name]) for name in fields if name in fixes]
        text = "; or ".join(choices) if choices else (
            f"settings {self.provider} accepts together (the message says which)"
        )
        return fields, text

    def _candidates(self, name: str, params: Mapping[str, Any]) -> list[Any]:
        """The values worth trying for one field: the declared ones, or leaving it out."""
        spec = self.spec
        current = params.get(name)
        values: list[Any]
        if name == "model":
            values = list(spec.models)
        elif name == "duration":
            if spec.durations is not None:
                values = [plain_number(seconds) for seconds in spec.durations]
            else:
                low, high = spec.duration_range
                values = list(range(max(1, math.ceil(low)), math.floor(high) + 1))
                values = values[:MAX_PROBED_DURATIONS]
        elif name == "aspect_ratio":
            values = list(spec.aspect_ratios)
        elif name == "resolution":
            values = list(spec.resolutions)
        else:
            values = []
        candidates = [value for value in values if value != current]
        if current is not None and name not in self._defaulted:
            candidates.append(None)  # an empty cell leaves this setting out
        return candidates


def _shape(name: str, value: object) -> object:
    """What of a parameter the explanation depends on: the value of the declared settings;
    for free-form ones (seed, negative prompt, image) only whether and how they are set."""
    if name in ("seed", "negative_prompt"):
        return True
    if name == "image":
        text = str(value)
        return "https" if text.startswith("https://") else "data" if text.startswith(
            "data:") else "file"
    return value


def _describe(name: str, values: Sequence[Any]) -> str:
    """ "duration 4 s or 8 s", "resolution 720p", "no seed" (None: the field left out)."""
    words = FIELD_WORDS[name]
    shown = [value for value in values if value is not None][:MAX_LISTED]
    listed = " or ".join(
        f"{plain_number(float(value))} s" if name == "duration" else str(value)
        for value in shown
    )
    if len([value for value in values if value is not None]) > MAX_LISTED:
        listed += " (or another)"
    choices = [f"{words} {listed}"] if shown else []
    if None in values:
        choices.append(f"no {words}")
    return " or ".join(choices)
