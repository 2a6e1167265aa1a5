"""Reading a row's parameters as spreadsheets send them (8.0, "8", "yes"), and what a
:class:`ParamSpec` alone says is wrong with a row."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from reelqueue.providers.adapters._images import image_kind
from reelqueue.providers.base import ParamProblem, ParamSpec


def param_int(params: Mapping[str, Any], name: str) -> int | None:
    """An integer parameter; spreadsheets send 8.0 or "8". None when absent."""
    value = params.get(name)
    if value is None or value == "":
        return None
    if isinstance(value, bool):
        raise ValueError(f"{name} must be a number")
    number = float(value)
    if not number.is_integer():
        raise ValueError(f"{name} must be a whole number, not {value!r}")
    return int(number)


def param_str(params: Mapping[str, Any], name: str) -> str | None:
    value = params.get(name)
    if value is None:
        return None
    text = str(value).strip()
    return text or None


def param_bool(params: Mapping[str, Any], name: str) -> bool | None:
    value = params.get(name)
    if value is None or value == "":
        return None
    if isinstance(value, bool):
        return value
    if isinstance(value, int | float):
        return bool(value)
    return str(value).strip().lower() in ("1", "true", "yes", "y", "on")


def duration_problem(params: Mapping[str, Any], allowed: Iterable[int] | None = None,
                     lo: int | None = None, hi: int | None = None,
                     **also: Iterable[Any]) -> list[ParamProblem]:
    """Problems with ``params['duration']`` against a set or an integer range; ``also``:
    other fields whose values would fix it (e.g. a model that takes this duration)."""
    choices = tuple(allowed) if allowed is not None else tuple(range(lo or 1, (hi or 0) + 1))
    try:
        seconds = param_int(params, "duration")
    except ValueError as exc:
        return [ParamProblem.of(str(exc), duration=choices)]
    if seconds is None:
        return []
    if allowed is not None and seconds not in choices:
        return [ParamProblem.of(
            f"duration must be one of {', '.join(map(str, choices))} seconds",
            **also, duration=choices)]
    if lo is not None and hi is not None and not lo <= seconds <= hi:
        return [ParamProblem.of(f"duration must be {lo}-{hi} seconds", **also,
                                duration=choices)]
    return []


def spec_problems(spec: ParamSpec, params: Mapping[str, Any], prompt: str) -> list[str]:
    """What ``spec`` alone says is wrong with a row; ``submit`` checks it before sending.

    The intake checks the same earlier (with the row number); this is the adapter's own
    guard so a row that skipped the intake cannot burn an attempt on a certain 400.
    """
    problems: list[str] = []
    model = param_str(params, "model")
    if model and spec.models and model not in spec.models:
        problems.append(f"unknown model {model!r} (known: {', '.join(spec.models)})")
    raw = params.get("duration")
    if raw not in (None, ""):
        try:
            if isinstance(raw, bool):
                raise TypeError
            seconds = float(raw)
        except (TypeError, ValueError):
            problems.append(f"duration must be a number, not {raw!r}")
        else:
            if spec.durations is not None:
                if seconds not in spec.durations:
                    allowed = ", ".join(f"{d:g}" for d in spec.durations)
                    problems.append(f"duration must be one of {allowed} seconds")
            elif not spec.duration_range[0] <= seconds <= spec.duration_range[1]:
                lo, hi = spec.duration_range
                problems.append(f"duration must be {lo:g}-{hi:g} seconds")
    ratio = param_str(params, "aspect_ratio")
    if ratio and spec.aspect_ratios and ratio not in spec.aspect_ratios:
        problems.append(f"aspect ratio must be one of {', '.join(spec.aspect_ratios)}")
    resolution = param_str(params, "resolution")
    if resolution and resolution not in spec.resolutions:
        if spec.resolutions:
            problems.append(f"resolution must be one of {', '.join(spec.resolutions)}")
        else:
            problems.append("this provider does not take a resolution")
    if params.get("seed") not in (None, "") and not spec.seed:
        problems.append("this provider takes no seed")
    if param_str(params, "negative_prompt") and not spec.negative_prompt:
        problems.append("this provider takes no negative prompt")
    if image_kind(params.get("image")) and not spec.reference_image:
        problems.append("this provider takes no reference image")
    if len(prompt) > spec.max_prompt_chars:
        problems.append(f"the prompt is {len(prompt)} characters; the limit is "
                        f"{spec.max_prompt_chars}")
    if not prompt.strip():
        problems.append("the prompt is empty")
    elif len(prompt.strip()) < spec.min_prompt_chars:
        problems.append(f"the prompt is {len(prompt.strip())} characters; the minimum is "
                        f"{spec.min_prompt_chars}")
    return problems
