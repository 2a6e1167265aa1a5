"""One sheet row, checked field by field against the provider it will render on.

:class:`RowValidator` turns a :class:`SheetRow` into :class:`RowValues` (every parameter
normalised, defaults applied) or into a list of :class:`RowError`, one per bad cell, so
the user fixes a row in one go rather than one error per import.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from reelqueue.domain.errors import InputError
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
        column: the column's header, or "(default duration)" for a batch default.
        message: what is wrong.
        accepted: what would be accepted instead.
    """

    row_number: int | None
    column: str
    message: str
    accepted: str

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


@dataclass(frozen=True)
class RowValues:
    """A valid row, normalised. ``params`` is what the provider receives."""

    row_number: int
    prompt: str
    provider: str
    params: dict[str, Any]
    account: str | None
    name: str
    repeat: int
    priority: int
    row_id: str | None


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
        self._provider_defaults: dict[str, tuple[dict[str, Any], list[RefusedDefault]]] = {}
        parsers: dict[str, CellParser] = {
            "model": parse_model, "duration": parse_duration,
            "aspect_ratio": parse_aspect_ratio, "resolution": parse_resolution,
            "seed": parse_seed, "negative_prompt": _parse_negative, "image": self._image,
            "account": _parse_account, "name": _parse_name, "repeat": _parse_repeat,
            "priority": _parse_priority, "id": _parse_id,
        }
        self._mapped = [
            (field_name, *self.columns[field_name], parsers[field_name])
            for field_name in (*PARAM_FIELDS, *OTHER_FIELDS) if field_name in self.columns
        ]
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
        values = row.values
        width = len(values)
        provider = self.defaults.provider
        if self._provider_column is not None and self._provider_column[0] < width:
            chosen = values[self._provider_column[0]]
            if not is_blank(chosen):
                provider = cell_text(chosen).lower()
        try:
            spec = self.spec_for(provider)
        except InputError as exc:
            column = (self._provider_column or (0, "provider"))[1]
            accepted = "one of " + ", ".join(self._catalog.kinds())
            return [RowError(row.row_number, column, str(exc).split(".")[0], accepted)]

        errors: list[RowError] = []
        index, header = self._prompt_column
        try:
            prompt = parse_prompt(values[index] if 0 <= index < width else None, spec)
        except FieldProblem as problem:
            errors.append(RowError(row.row_number, header, problem.message, problem.accepted))
            prompt = ""
        parsed: dict[str, Any] = {}
        for field_name, index, header, parse in self._mapped:
            if index >= width:
                continue
            value = values[index]
            if is_blank(value):
                continue
            try:
                parsed[field_name] = parse(value, spec)
            except FieldProblem as problem:
                errors.append(
                    RowError(row.row_number, header, problem.message, problem.accepted)
                )
        defaults, refused_defaults = self._defaults_for(provider, spec)
        for field_name, column, refusal in refused_defaults:
            if field_name not in parsed:
                errors.append(RowError(row.row_number, column, refusal.message, refusal.accepted))
        if errors:
            return errors
        params = {
            name: parsed[name] if name in parsed else defaults.get(name)
            for name in PARAM_FIELDS if name in parsed or defaults.get(name) is not None
        }
        return RowValues(
            row_number=row.row_number, prompt=prompt, provider=provider, params=params,
            account=parsed.get("account") or None, name=parsed.get("name", ""),
            repeat=parsed.get("repeat", 1), priority=parsed.get("priority", 0),
            row_id=parsed.get("id") or None,
        )

    def _defaults_for(
        self, provider: str, spec: ParamSpec
    ) -> tuple[dict[str, Any], list[RefusedDefault]]:
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
            except FieldProblem as problem:
                problems.append((name, f"(default {name.replace('_', ' ')})", problem))
        self._provider_defaults[provider] = (chosen, problems)
        return chosen, problems

    def _image(self, value: object, spec: ParamSpec) -> str:
        if not spec.reference_image:
            raise FieldProblem("this provider does not take a reference image", "an empty cell")
        return self._images.check(value)
