"""Cell parsing (seeds, durations, ratios...) and header mapping."""

from __future__ import annotations

import dataclasses
import datetime

import pytest

from reelqueue.domain.errors import InputError
from reelqueue.intake import ColumnMapping, parse_map_options, suggest_mapping
from reelqueue.intake.fields import (
    FieldProblem,
    parse_aspect_ratio,
    parse_duration,
    parse_model,
    parse_prompt,
    parse_repeat,
    parse_resolution,
    parse_seed,
)
from reelqueue.intake.mapping import column_letter, display_headers, normalise_header

from .conftest import FIXED, FLEXIBLE


@pytest.mark.parametrize(("cell", "seed"), [
    (42, 42), (42.0, 42), ("42", 42), ("42.0", 42), (" 7 ", 7), (0, 0), (2**53, 2**53),
    ("1_000", 1000),
])
def test_seed_accepts_whole_numbers(cell: object, seed: int) -> None:
    assert parse_seed(cell, FLEXIBLE) == seed


@pytest.mark.parametrize(("cell", "message"), [
    (42.5, "not a whole number"), ("4.2e1x", "not a whole number"), (-1, "negative"),
    (2**53 + 1, "beyond 2\\^53"), (float(2**60), "beyond 2\\^53"),
    ("18446744073709551615", "beyond 2\\^53"), ("1e300", "beyond 2\\^53"), (True, "not a seed"),
    (float("nan"), "not a whole number"),
])
def test_seed_refuses_what_it_would_have_to_guess(cell: object, message: str) -> None:
    with pytest.raises(FieldProblem, match=message) as problem:
        parse_seed(cell, FLEXIBLE)
    assert "0 to 2^53" in problem.value.accepted


def test_seed_on_a_provider_without_seeds() -> None:
    with pytest.raises(FieldProblem, match="does not take a seed"):
        parse_seed(1, FIXED)


@pytest.mark.parametrize(("cell", "seconds"), [
    (5, 5), (5.0, 5), ("5", 5), ("5s", 5), ("5 sec", 5), ("7.5", 7.5), ("7,5", 7.5),
    (datetime.timedelta(seconds=6), 6), (20, 20), (1, 1),
])
def test_duration_forms(cell: object, seconds: float) -> None:
    assert parse_duration(cell, FLEXIBLE) == seconds


@pytest.mark.parametrize(("cell", "message", "accepted"), [
    (-5, "negative", "from 1 to 20"), (0, "zero", "from 1 to 20"),
    (21, "out of range", "from 1 to 20"), ("five", "not a number", "from 1 to 20"),
    (float("inf"), "not a number", "from 1 to 20"),
])
def test_duration_errors_say_what_is_accepted(cell: object, message: str, accepted: str) -> None:
    with pytest.raises(FieldProblem, match=message) as problem:
        parse_duration(cell, FLEXIBLE)
    assert accepted in problem.value.accepted


def test_discrete_durations() -> None:
    assert parse_duration("10", FIXED) == 10
    with pytest.raises(FieldProblem) as problem:
        parse_duration(7, FIXED)
    assert problem.value.accepted == "one of 5, 10 seconds"


@pytest.mark.parametrize(("cell", "ratio"), [
    ("16:9", "16:9"), (" 9 : 16 ", "9:16"), ("16x9", "16:9"), ("1/1", "1:1"),
    (datetime.time(16, 9), "16:9"),  # Excel turned the typed "16:9" into a time
    (datetime.time(9, 16), "9:16"), (datetime.timedelta(hours=1, minutes=1), "1:1"),
])
def test_aspect_ratio_forms(cell: object, ratio: str) -> None:
    assert parse_aspect_ratio(cell, FLEXIBLE) == ratio


def test_aspect_ratio_errors() -> None:
    with pytest.raises(FieldProblem, match="not offered") as problem:
        parse_aspect_ratio("4:3", FLEXIBLE)
    assert problem.value.accepted == "one of 16:9, 9:16, 1:1"
    with pytest.raises(FieldProblem, match="not an aspect ratio"):
        parse_aspect_ratio("wide", FLEXIBLE)


def test_resolution_model_prompt_repeat() -> None:
    assert parse_resolution("720", FLEXIBLE) == "720p"
    assert parse_resolution("720P", FLEXIBLE) == "720p"
    assert parse_resolution(480.0, FLEXIBLE) == "480p"
    with pytest.raises(FieldProblem, match="no resolution setting"):
        parse_resolution("720p", FIXED)
    assert parse_model("MOCK-2", FLEXIBLE) == "mock-2"
    with pytest.raises(FieldProblem, match="not a model"):
        parse_model("gpt", FLEXIBLE)
    assert parse_prompt("  a cat \n on a mat ", FLEXIBLE) == "a cat \n on a mat"
    with pytest.raises(FieldProblem, match="1,001 characters") as problem:
        parse_prompt("x" * 1001, FLEXIBLE)
    assert problem.value.accepted == "at most 1,000 characters"
    with pytest.raises(FieldProblem, match="control characters"):
        parse_prompt("a\x00b", FLEXIBLE)
    assert parse_repeat(3.0) == 3
    with pytest.raises(FieldProblem, match="out of range"):
        parse_repeat(0)
    with pytest.raises(FieldProblem, match="not a whole number"):
        parse_repeat(1.5)


@pytest.mark.parametrize(("header", "field"), [
    ("Prompt", "prompt"), ("TEXT", "text"), ("Description", "description"),
    ("Negative_Prompt", "negative prompt"), ("Duration (s)", "duration"),
    ("Aspect-Ratio", "aspect ratio"), ("Résolution", "resolution"), ("First frame", "first frame"),
])
def test_normalise_header(header: str, field: str) -> None:
    assert normalise_header(header) == field


def test_suggest_mapping_uses_aliases_and_first_match_wins() -> None:
    headers = ["Title", "Description", "Seconds", "Ratio", "Seed", "Reference Image", "Count",
               "Text", "Notes", "Model", "Provider", "Account", "Priority", "ID", "Negative"]
    mapping = suggest_mapping(headers)
    assert mapping.by_field == {
        "name": "Title", "prompt": "Description", "duration": "Seconds",
        "aspect_ratio": "Ratio", "seed": "Seed", "image": "Reference Image",
        "repeat": "Count", "model": "Model", "provider": "Provider", "account": "Account",
        "priority": "Priority", "id": "ID", "negative_prompt": "Negative",
    }


@pytest.mark.parametrize("header", ["Clip name", "Clip", "Clip title", "Video title", "Shot name"])
def test_a_clip_or_shot_name_column_is_the_name(header: str) -> None:
    """Issue 34 (N6-N13): a sheet whose column read "Clip name" imported with no names."""
    assert suggest_mapping(["Prompt", header]).by_field == {"prompt": "Prompt", "name": header}


def test_overrides_by_header_letter_number_and_ignore() -> None:
    headers = ["Text", "Blurb", "Seconds", "Notes"]
    mapping = suggest_mapping(headers).with_overrides(
        headers, {"B": "prompt", "3": "seed", "notes": "ignore"})
    assert mapping.by_field == {"prompt": "Blurb", "seed": "Seconds"}
    assert mapping.ignored == frozenset({"Notes"})
    with pytest.raises(InputError, match="No column 'Z'"):
        mapping.with_overrides(headers, {"Z": "prompt"})
    with pytest.raises(InputError, match="Unknown field 'colour'"):
        mapping.with_overrides(headers, {"A": "colour"})


def test_parse_map_options() -> None:
    assert parse_map_options(["Text=prompt", "a=b=seed"]) == {"Text": "prompt", "a=b": "seed"}
    with pytest.raises(InputError, match="COLUMN=FIELD"):
        parse_map_options(["prompt"])


def test_display_headers_are_unique_and_named() -> None:
    assert display_headers(["notes", "", "Notes", "x"]) == [
        "notes", "Column B", "Notes (2)", "x"]
    assert [column_letter(i) for i in (0, 25, 26, 701, 702)] == ["A", "Z", "AA", "ZZ", "AAA"]


def test_column_mapping_is_a_value() -> None:
    # Equal by content (not two identical constructions only: a different field, header
    # or ignored set is a different value), frozen, and overrides make a new one.
    mapping = ColumnMapping({"prompt": "A"})
    assert mapping == ColumnMapping({"prompt": "A"})
    assert mapping != ColumnMapping({"prompt": "B"})
    assert mapping != ColumnMapping({"seed": "A"})
    assert mapping != ColumnMapping({"prompt": "A"}, ignored=frozenset({"B"}))
    with pytest.raises(dataclasses.FrozenInstanceError):
        mapping.ignored = frozenset({"B"})  # type: ignore[misc]
    changed = mapping.with_overrides(["A", "B"], {"B": "seed"})
    assert changed == ColumnMapping({"prompt": "A", "seed": "B"})
    assert mapping == ColumnMapping({"prompt": "A"})
