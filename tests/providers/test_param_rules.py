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
IMAGE = "https://img.example.test/first.png"
# (kind, row, words of a problem the rules raise; "": some problem; None: no problem)
ROWS: list[tuple[str, dict[str, Any], str | None]] = [
    # was test_fal.py::test_extra_validation
    ("fal", {"model": "fal-ai/veo3.1"}, None),
    ("fal", {"model": "fal-ai/veo3.1", "image": "https://x.test/a.png"}, ""),
    ("fal", {"model": "fal-ai/veo3.1/image-to-video"}, ""),
    ("fal", {"model": "fal-ai/veo3.1/fast/image-to-video", "image": "/tmp/a.png"}, None),
    # was test_runway.py::test_extra_validation
    ("runway", {"model": "gen4.5", "duration": 10}, None),
    ("runway", {"model": "gen4.5", "duration": 8.5}, ""),
    ("runway", {"model": "gen4.5", "duration": 12}, ""),
    ("runway", {"model": "gen4.5", "aspect_ratio": "1:1"}, ""),
    ("runway", {"model": "gen4.5", "aspect_ratio": "1:1", "image": "https://x.test/a.png"}, None),
    ("runway", {"model": "gen4.5", "resolution": "1080p"}, ""),
    ("runway", {"model": "gen4_turbo"}, ""),
    ("runway", {"model": "veo3.1", "duration": 8, "resolution": "1080p"}, None),
    ("runway", {"model": "veo3.1", "duration": 5}, ""),
    ("runway", {"model": "veo3.1_fast", "seed": 3}, ""),
    ("runway", {"model": "veo3.1", "aspect_ratio": "1:1"}, ""),
    # was test_veo.py::test_extra_validation
    ("veo", {"resolution": "1080p", "duration": 8}, None),
    ("veo", {"resolution": "1080p", "duration": 6}, ""),
    ("veo", {"resolution": "4k", "duration": 4}, ""),
    ("veo", {"resolution": "4k", "model": "veo-3.1-lite-generate-preview"}, ""),
    ("veo", {"image": "frame.png", "duration": 6}, ""),
    ("veo", {"image": "frame.png", "duration": 8}, None),
    ("veo", {"image": "https://example.test/frame.png"}, ""),
    ("veo", {"duration": 4}, None),
    # was test_kling.py::test_rows_kling_would_refuse_are_caught_at_import
    ("kling", {"model": "kling-v1-5"}, "only animates an image"),
    ("kling", {"model": "kling-v2-6", "duration": 7}, "5 or 10 second"),
    ("kling", {"model": "kling-v2-5-turbo", "audio": True}, "makes no sound"),
    ("kling", {"image": "https://img.example/a.png", "aspect_ratio": "1:1"},
     "frame from the image"),
    ("kling", {"cfg_scale": 0.5}, "takes no cfg_scale"),
    ("kling", {"model": "kling-v1-6", "cfg_scale": 3}, "from 0 to 1"),
    ("kling", {"negative_prompt": "x" * 2501}, "limit is 2500"),
    # was test_kling.py::test_rows_kling_takes_pass
    ("kling", {}, None),
    ("kling", {"duration": 15}, None),
    ("kling", {"duration": 3, "audio": False}, None),
    ("kling", {"model": "kling-v2-5-turbo", "audio": False}, None),
    ("kling", {"model": "kling-v1-6", "duration": 10, "cfg_scale": 0.3}, None),
    ("kling", {"image": "https://img.example/a.png", "model": "kling-v1-5"}, None),
    # was test_openai_compat.py::test_extra_validation_and_registration
    ("openai-compat", {"image": "https://x.test/a.png"}, ""),
    ("openai-compat", {"image": "/tmp/a.png"}, None),
    # was test_minimax.py::test_extra_validation
    ("minimax", {"model": "MiniMax-Hailuo-02", "resolution": "512p", "image": IMAGE}, None),
    ("minimax", {"model": "MiniMax-Hailuo-02", "resolution": "512p"}, "512p"),
    ("minimax", {"model": "MiniMax-Hailuo-2.3", "resolution": "512p", "image": IMAGE}, "512p"),
    ("minimax", {"model": "MiniMax-Hailuo-2.3", "resolution": "1080p", "duration": 10}, "1080p"),
    ("minimax", {"model": "MiniMax-Hailuo-2.3", "resolution": "1080p", "duration": 6}, None),
    ("minimax", {"model": "MiniMax-Hailuo-2.3", "duration": 8}, "6 or 10"),
    ("minimax", {"model": "MiniMax-Hailuo-2.3", "resolution": "2K"}, "2K"),
    ("minimax", {"model": "MiniMax-Hailuo-2.3-Fast"}, "image-to-video only"),
    ("minimax", {"model": "MiniMax-Hailuo-2.3-Fast", "image": IMAGE}, None),
    ("minimax", {"aspect_ratio": "16:9"}, "aspect ratio"),
    ("minimax", {"duration": 6}, None),
    ("minimax", {"model": "MiniMax-H3", "resolution": "1080p"}, "768P or 2K"),
    ("minimax", {"model": "MiniMax-H3", "resolution": "512p"}, "768P or 2K"),
    ("minimax", {"model": "MiniMax-H3", "resolution": "2K", "duration": 15}, None),
    ("minimax", {"model": "MiniMax-H3", "aspect_ratio": "21:9"}, None),
    ("minimax", {"model": "MiniMax-H3", "aspect_ratio": "2:1"}, "aspect ratios"),
    ("minimax", {"model": "MiniMax-H3", "aspect_ratio": "16:9", "image": IMAGE}, "first frame"),
    ("minimax", {"model": "MiniMax-H3", "duration": 6.5}, "whole number"),
]


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


@pytest.mark.parametrize(("kind", "params", "words"), ROWS)
def test_each_provider_refuses_or_takes_its_documented_rows(
    kind: str, params: dict[str, Any], words: str | None
) -> None:
    """The rows of each provider's own reference, through its registered rules."""
    problems = messages(kind, params)
    if words is None:
        assert problems == set()
    else:
        assert any(words in problem for problem in problems), problems
