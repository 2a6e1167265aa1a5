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


class RowValidator:
    """Validates rows of one sheet.

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
        errors: list[RowError] = []
        values = row.values

        def cell(field_name: str) -> object:
            column = self.columns.get(field_name)
            if column is None or column[0] >= len(values):
                return None
            value = values[column[0]]
            return None if is_blank(value) else value

        def attempt(field_name: str, parse: Callable[[object], Any], default: Any = None) -> Any:
            value = cell(field_name)
            if value is None:
                return default
            try:
                return parse(value)
            except FieldProblem as problem:
                header = self.columns[field_name][1]
                errors.append(RowError(row.row_number, header, problem.message, problem.accepted))
                return default

        provider = attempt("provider", lambda v: cell_text(v).lower(), self.defaults.provider)
        try:
            spec = self.spec_for(provider)
        except InputError as exc:
            column = self.columns.get("provider", (0, "provider"))[1]
            accepted = "one of " + ", ".join(self._catalog.kinds())
            return [RowError(row.row_number, column, str(exc).split(".")[0], accepted)]

        prompt = cell("prompt")
        try:
            prompt_text = parse_prompt(prompt, spec)
        except FieldProblem as problem:
            header = self.columns["prompt"][1]
            errors.append(RowError(row.row_number, header, problem.message, problem.accepted))
            prompt_text = ""

        params: dict[str, Any] = {}
        default_model = self.defaults.model if provider == self.defaults.provider else None
        params["model"] = attempt("model", lambda v: parse_model(v, spec)) or (
            default_model or (spec.models[0] if spec.models else None)
        )
        params["duration"] = attempt("duration", lambda v: parse_duration(v, spec)) or (
            self._default("duration", self.defaults.duration, row, spec, errors)
            or provider_default_duration(spec)
        )
        params["aspect_ratio"] = attempt(
            "aspect_ratio", lambda v: parse_aspect_ratio(v, spec)
        ) or self._default("aspect_ratio", self.defaults.aspect_ratio, row, spec, errors) or (
            spec.aspect_ratios[0] if spec.aspect_ratios else None
        )
        resolution = attempt("resolution", lambda v: parse_resolution(v, spec)) or self._default(
            "resolution", self.defaults.resolution, row, spec, errors
        ) or (spec.resolutions[0] if spec.resolutions else None)
        if resolution is not None:
            params["resolution"] = resolution
        seed = attempt("seed", lambda v: parse_seed(v, spec))
        if seed is not None:
            params["seed"] = seed
        negative = attempt("negative_prompt", lambda v: self._negative(v, spec))
        if negative:
            params["negative_prompt"] = negative
        image = attempt("image", lambda v: self._image(v, spec))
        if image:
            params["image"] = image
        params = {key: value for key, value in params.items() if value is not None}

        account = attempt("account", lambda v: parse_text(v, "account", 200)) or None
        name = attempt("name", lambda v: parse_text(v, "name", MAX_NAME_CHARS), "")
        repeat = attempt("repeat", parse_repeat, 1)
        priority = attempt("priority", parse_priority, 0)
        row_id = attempt("id", lambda v: parse_text(v, "id", MAX_ID_CHARS)) or None
        if errors:
            return errors
        return RowValues(
            row_number=row.row_number, prompt=prompt_text, provider=provider, params=params,
            account=account, name=name, repeat=repeat, priority=priority, row_id=row_id,
        )

    def _default(
        self, field_name: str, value: object, row: SheetRow, spec: ParamSpec,
        errors: list[RowError],
    ) -> Any:
        """A batch default, checked against this row's provider like a cell would be."""
        if value is None:
            return None
        parse = {"duration": parse_duration, "aspect_ratio": parse_aspect_ratio,
                 "resolution": parse_resolution}[field_name]
        try:
            return parse(value, spec)
        except FieldProblem as problem:
            column = f"(default {field_name.replace('_', ' ')})"
            errors.append(RowError(row.row_number, column, problem.message, problem.accepted))
            return None

    @staticmethod
    def _negative(value: object, spec: ParamSpec) -> str:
        if not spec.negative_prompt:
            raise FieldProblem("this provider does not take a negative prompt", "an empty cell")
        return parse_text(value, "negative prompt", spec.max_prompt_chars)

    def _image(self, value: object, spec: ParamSpec) -> str:
        if not spec.reference_image:
            raise FieldProblem("this provider does not take a reference image", "an empty cell")
        return self._images.check(value)
