"""Every provider's row rules say which fields a problem concerns and what would fix it
(``ParamProblem``); the intake shows that as the row error. Checked here against the
rules themselves: each value a problem offers makes that problem go away (the intake no
longer probes to find out). A fix may still meet another rule of the row, which then
says so itself."""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Mapping
from typing import Any

import pytest

from reelqueue.intake.rows import PARAM_FIELDS
from reelqueue.providers.builtin import builtin_registry
from reelqueue.providers.registry import no_rules

KINDS = [info.kind for info in builtin_registry() if info.rules is not no_rules]
IMAGES = (None, "https://img.example.test/a.png", "/tmp/first.png")


def rows(kind: str) -> Iterator[dict[str, Any]]:
    """A grid of rows over the provider's declared settings (and some it refuses)."""
    spec = builtin_registry().get(kind).params
    durations = [int(d) for d in spec.durations or ()] or [2, 5, 10, 15]
    for model, duration, ratio, resolution, image, seed in itertools.product(
        (*spec.models, None), (*durations[:6], 7, 6.5, None),
        (*spec.aspect_ratios[:3], None), (*spec.resolutions, None), IMAGES, (None, 5),
    ):
        row = {"model": model, "duration": duration, "aspect_ratio": ratio,
               "resolution": resolution, "image": image, "seed": seed}
        yield {name: value for name, value in row.items() if value is not None}


def messages(kind: str, params: Mapping[str, Any]) -> set[str]:
    return {problem.message for problem in builtin_registry().get(kind).rules(params)}


@pytest.mark.parametrize("kind", KINDS)
def test_every_offered_fix_fixes_its_problem(kind: str) -> None:
    rules = builtin_registry().get(kind).rules
    checked = 0
    wrong: list[tuple[dict[str, Any], str, str, Any]] = []
    for params in rows(kind):
        problems = rules(params)
        for problem in problems:
            assert problem.fields, problem
            assert set(problem.fields) <= set(PARAM_FIELDS), problem
            assert set(problem.accepted) <= set(problem.fields), problem
            for name, values in problem.accepted.items():
                for value in values:
                    trial = dict(params)
                    if value is None:
                        trial.pop(name, None)
                    else:
                        trial[name] = value
                    after = messages(kind, trial)
                    checked += 1
                    if problem.message in after:
                        wrong.append((params, problem.message, name, value))
    assert checked > 0
    assert wrong == [], wrong[:5]
