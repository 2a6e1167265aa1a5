"""Turning one cell into one parameter value, or saying exactly what is wrong with it.

Each ``parse_*`` function takes the cell as the reader gave it (text for CSV, typed for
workbooks: 42 arrives as 42.0) and the provider's :class:`ParamSpec`, and returns the
normalised value or raises :class:`FieldProblem` with what is wrong and what would be
accepted. Nothing is guessed: 42.0 is the seed 42, but 42.5, -1 or 2**60 are errors.
"""

from __future__ import annotations

import datetime
import math
import re

from reelqueue.providers.base import ParamSpec

MAX_SEED = 2**53
"""Beyond this a seed cannot survive a spreadsheet's floats (or JSON) unchanged."""
MAX_REPEAT = 100
MAX_PRIORITY = 1_000_000
CONTROL_CHARS = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
NUMBER_WITH_UNIT = re.compile(
    r"^\s*([+-]?\d+(?:[.,]\d+)?)\s*(s|sec|secs|second|seconds)?\s*$", re.IGNORECASE
)
RATIO = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*[:x×/]\s*(\d+(?:\.\d+)?)\s*$", re.IGNORECASE)


class FieldProblem(Exception):
    """A cell that cannot be used.

    Attributes:
        message: what is wrong ("-5 is negative").
        accepted: what would be accepted ("a number of seconds from 1 to 20").
    """

    def __init__(self, message: str, accepted: str) -> None:
        super().__init__(message)
        self.message = message
        self.accepted = accepted


def is_blank(value: object) -> bool:
    return value is None or (isinstance(value, str) and (not value or value.isspace()))


def cell_text(value: object) -> str:
    """A cell as text: 42.0 -> "42", a date -> "2024-05-01", text stripped."""
    if type(value) is str:
        return value.strip()  # the common case, first
    if value is None:
        return ""
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    if isinstance(value, datetime.date | datetime.time):
        return value.isoformat()
    return str(value).strip()


def parse_text(value: object, what: str, max_chars: int) -> str:
    text = cell_text(value)
    if CONTROL_CHARS.search(text):
        raise FieldProblem(
            f"the {what} contains control characters (such as NUL)", "plain text"
        )
    if len(text) > max_chars:
        raise FieldProblem(
            f"the {what} is {len(text):,} characters long", f"at most {max_chars:,} characters"
        )
    return text


def parse_prompt(value: object, spec: ParamSpec) -> str:
    text = parse_text(value, "prompt", spec.max_prompt_chars)
    if not text:
        raise FieldProblem("the prompt is empty", "text describing the video")
    if len(text.strip()) < spec.min_prompt_chars:
        raise FieldProblem(
            f"the prompt is {len(text.strip())} characters; this provider needs at least "
            f"{spec.min_prompt_chars}",
            f"text of {spec.min_prompt_chars} to {spec.max_prompt_chars:,} characters")
    return text


def parse_number(value: object, what: str, accepted: str) -> float:
    if isinstance(value, bool):
        raise FieldProblem(f"{cell_text(value)} is not a {what}", accepted)
    if isinstance(value, int | float):
        number = float(value)
    elif isinstance(value, datetime.timedelta):
        number = value.total_seconds()
    else:
        match = NUMBER_WITH_UNIT.match(cell_text(value))
        if not match:
            raise FieldProblem(f"{cell_text(value)!r} is not a {what}", accepted)
        number = float(match.group(1).replace(",", "."))
    if not math.isfinite(number):
        raise FieldProblem(f"{cell_text(value)} is not a {what}", accepted)
    return number


def plain_number(number: float) -> int | float:
    """5.0 -> 5 (for messages, keys and JSON); 5.5 stays 5.5."""
    number = float(number)
    return int(number) if number.is_integer() else number


def describe_durations(spec: ParamSpec) -> str:
    if spec.durations is not None:
        listed = ", ".join(format(plain_number(d)) for d in spec.durations)
        return f"one of {listed} seconds"
    low, high = spec.duration_range
    return f"a number of seconds from {plain_number(low)} to {plain_number(high)}"


def parse_duration(value: object, spec: ParamSpec) -> int | float:
    if isinstance(value, int | float) and not isinstance(value, bool):
        seconds = float(value)  # the common cases, without building a message
    elif type(value) is str and value.isascii() and value.isdigit():
        seconds = float(value)
    else:
        seconds = parse_number(value, "number of seconds", describe_durations(spec))
    problem: str | None = None
    if not math.isfinite(seconds):
        problem = f"{cell_text(value)} is not a number of seconds"
    elif seconds < 0:
        problem = f"the duration {plain_number(seconds)} is negative"
    elif seconds == 0:
        problem = "the duration is zero"
    elif spec.durations is not None:
        if not any(math.isclose(seconds, allowed) for allowed in spec.durations):
            problem = f"{plain_number(seconds)} seconds is not offered by this provider"
    elif not spec.duration_range[0] <= seconds <= spec.duration_range[1]:
        problem = f"{plain_number(seconds)} seconds is out of range"
    if problem:
        raise FieldProblem(problem, describe_durations(spec))
    return plain_number(seconds)


def parse_aspect_ratio(value: object, spec: ParamSpec) -> str:
    if value in spec.aspect_ratios:
        return str(value)  # the common case: the cell is exactly an accepted ratio
    accepted = "one of " + ", ".join(spec.aspect_ratios) if spec.aspect_ratios else "W:H"
    if isinstance(value, datetime.time):
        # Excel turns a typed "16:9" into the time 16:09; read it back as the ratio.
        text = f"{value.hour}:{value.minute}"
    elif isinstance(value, datetime.timedelta):
        hours, minutes = divmod(round(value.total_seconds()) // 60, 60)
        text = f"{hours}:{minutes}"
    else:
        text = cell_text(value)
    match = RATIO.match(text)
    if not match:
        raise FieldProblem(f"{text!r} is not an aspect ratio", accepted)
    ratio = f"{plain_number(float(match.group(1)))}:{plain_number(float(match.group(2)))}"
    if spec.aspect_ratios and ratio not in spec.aspect_ratios:
        raise FieldProblem(f"{ratio} is not offered by this provider", accepted)
    return ratio


def parse_resolution(value: object, spec: ParamSpec) -> str:
    if value in spec.resolutions:
        return str(value)
    if not spec.resolutions:
        raise FieldProblem(
            "this provider has no resolution setting", "an empty cell (leave it out)"
        )
    accepted = "one of " + ", ".join(spec.resolutions)
    text = cell_text(value).lower().replace(" ", "")
    if text.isdigit():
        text += "p"
    for allowed in spec.resolutions:
        if allowed.lower() == text:
            return allowed
    raise FieldProblem(f"{cell_text(value)!r} is not offered by this provider", accepted)


def parse_seed(value: object, spec: ParamSpec) -> int:
    if not spec.seed:
        raise FieldProblem("this provider does not take a seed", "an empty cell")
    if type(value) is str and value.isascii() and value.isdigit() and len(value) < 16:
        return int(value)  # the common case; 15 digits are always below 2^53
    accepted = f"a whole number from 0 to 2^53 ({MAX_SEED:,})"
    if isinstance(value, bool):
        raise FieldProblem(f"{cell_text(value)} is not a seed", accepted)
    if isinstance(value, int):
        seed = value
    elif isinstance(value, float):
        if not math.isfinite(value) or not value.is_integer():
            raise FieldProblem(f"{value} is not a whole number", accepted)
        if abs(value) > MAX_SEED:
            raise FieldProblem(f"{value:.0f} is beyond 2^53 and was rounded", accepted)
        seed = int(value)
    else:
        text = cell_text(value).replace("_", "")
        try:
            seed = int(text)
        except ValueError:
            try:
                as_float = float(text)
            except ValueError:
                raise FieldProblem(f"{text!r} is not a whole number", accepted) from None
            if not math.isfinite(as_float) or not as_float.is_integer():
                raise FieldProblem(f"{text!r} is not a whole number", accepted) from None
            if abs(as_float) > MAX_SEED:
                raise FieldProblem(f"{text} is beyond 2^53", accepted) from None
            seed = int(as_float)
    if seed < 0:
        raise FieldProblem(f"the seed {seed} is negative", accepted)
    if seed > MAX_SEED:
        raise FieldProblem(f"the seed {seed} is beyond 2^53", accepted)
    return seed


def parse_model(value: object, spec: ParamSpec) -> str:
    if value in spec.models:
        return str(value)
    text = cell_text(value)
    if not spec.models:
        return text
    for model in spec.models:
        if model.casefold() == text.casefold():
            return model
    accepted = "one of " + ", ".join(spec.models)
    raise FieldProblem(f"{text!r} is not a model of this provider", accepted)


def parse_whole(value: object, what: str, low: int, high: int) -> int:
    accepted = f"a whole number from {low:,} to {high:,}"
    number = parse_number(value, "number", accepted)
    if not number.is_integer():
        raise FieldProblem(f"the {what} {number} is not a whole number", accepted)
    if not low <= number <= high:
        raise FieldProblem(f"the {what} {int(number):,} is out of range", accepted)
    return int(number)


def parse_repeat(value: object) -> int:
    return parse_whole(value, "repeat count", 1, MAX_REPEAT)


def parse_priority(value: object) -> int:
    return parse_whole(value, "priority", -MAX_PRIORITY, MAX_PRIORITY)
