"""The providers' own row rules (``ProviderInfo.rules``) at import: row errors naming the
columns concerned and what would be accepted, through ``plan_import``."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from reelqueue.intake import ImportOptions, RegistryCatalog, StaticCatalog, plan_import
from reelqueue.providers.base import ParamProblem
from reelqueue.providers.builtin import builtin_registry

from .conftest import FIXED, FLEXIBLE, NOW, plan_text

PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 32


def plan_real(folder: Path, text: str, **options: Any):  # type: ignore[no-untyped-def]
    """Plan with the real provider registry and the adapters' own extra rules."""
    path = folder / "sheet.csv"
    path.write_text(text, encoding="utf-8")
    options.setdefault("output_root", folder / "videos")
    return plan_import(path, ImportOptions(**options), now=NOW)


def described(plan) -> list[tuple[int | None, tuple[str, ...], str, str]]:  # type: ignore[no-untyped-def]
    return [(e.row_number, e.columns, e.message, e.accepted) for e in plan.errors]


def test_veo_1080p_needs_8_seconds(tmp_path: Path) -> None:
    plan = plan_real(tmp_path, "prompt,resolution,duration\na,1080p,4\nb,1080p,8\nc,720p,4\n",
                     provider="veo")
    assert [job.row_number for job in plan.jobs] == [3, 4]
    assert plan.jobs[0].params["resolution"] == "1080p" and plan.jobs[0].params["duration"] == 8
    assert described(plan) == [(
        2, ("duration", "resolution"), "Veo renders 1080p only at 8 seconds",
        "duration 8 s; or resolution 720p",
    )]
    error = plan.errors[0]
    assert error.column == "duration, resolution"
    assert error.describe() == (
        "row 2, column 'duration, resolution': Veo renders 1080p only at 8 seconds "
        "(accepted: duration 8 s; or resolution 720p)")
    assert not plan.refused
    assert plan_real(tmp_path, "prompt,resolution,duration\na,1080p,4\nb,1080p,8\n",
                     provider="veo", partial=False).refused


def test_a_batch_default_in_the_combination_is_named_as_such(tmp_path: Path) -> None:
    plan = plan_real(tmp_path, "prompt,duration\na,4\nb,8\n", provider="veo", resolution="1080p")
    assert [job.row_number for job in plan.jobs] == [3]
    assert described(plan) == [(
        2, ("duration", "(default resolution)"), "Veo renders 1080p only at 8 seconds",
        "duration 8 s; or resolution 720p",
    )]


def test_each_problem_of_a_row_is_its_own_error(tmp_path: Path) -> None:
    # Runway's veo3.1 takes no seed and only 4, 6 or 8 seconds (the default is 5).
    plan = plan_real(tmp_path, "prompt,model,seed\na,veo3.1,5\n", provider="runway")
    assert not plan.jobs and plan.refused
    # The messages are the adapter's own, for the params the row would have been sent with.
    duration, seed = (problem.message for problem in builtin_registry().get("runway").rules({
        "model": "veo3.1", "duration": 5, "aspect_ratio": "16:9", "resolution": "720p",
        "seed": 5,
    }))
    assert sorted(described(plan)) == sorted([
        (2, ("model", "(default duration)"), duration,
         "model gen4.5; or duration 4 s or 6 s or 8 s"),
        (2, ("model", "seed"), seed, "model gen4.5; or no seed"),
    ])


def test_a_setting_to_leave_empty_and_a_link_instead_of_a_file(tmp_path: Path) -> None:
    (tmp_path / "first.png").write_bytes(PNG)
    minimax = plan_real(tmp_path, "prompt,aspect ratio\na,16:9\nb,\n", provider="minimax")
    assert [job.row_number for job in minimax.jobs] == [3]
    # MiniMax V1 (the default model) takes no ratio; the V2 model MiniMax-H3 does, so
    # switching the model is the other fix the row is offered.
    assert [(e.row_number, e.columns, e.accepted) for e in minimax.errors] == [
        (2, ("(default model)", "aspect ratio"), "model MiniMax-H3; or no aspect ratio")]
    veo = plan_real(tmp_path, "prompt,image,duration\na,https://example.com/a.png,8\n"
                    "b,first.png,8\nc,first.png,4\n", provider="veo")
    assert [job.row_number for job in veo.jobs] == [3]
    assert [(e.row_number, e.columns, e.accepted) for e in veo.errors] == [
        (2, ("image",), "no image"),
        (4, ("duration", "image"), "duration 8 s; or no image"),
    ]


def test_cell_errors_come_first_and_the_rules_see_only_valid_rows(tmp_path: Path) -> None:
    plan = plan_real(tmp_path, "prompt,resolution,duration\na,1080p,5\n", provider="veo")
    assert [(e.column, e.message) for e in plan.errors] == [
        ("duration", "5 seconds is not offered by this provider")]


def test_providers_without_rules_are_unaffected(tmp_path: Path) -> None:
    plan = plan_real(tmp_path, "prompt,duration\na,4\n")  # the mock provider
    assert plan.errors == [] and len(plan.jobs) == 1
    assert RegistryCatalog().rules("mock") is None
    assert RegistryCatalog().rules("veo") is builtin_registry().get("veo").rules


def test_rules_are_asked_once_per_row_and_say_what_they_accept(
    tmp_path: Path, catalog: StaticCatalog
) -> None:
    calls: list[Mapping[str, Any]] = []

    def long_needs_hd(params: Mapping[str, Any]) -> list[ParamProblem]:
        calls.append(dict(params))
        if params.get("duration", 0) > 10 and params.get("resolution") != "720p":
            return [ParamProblem.of("clips over 10 seconds need 720p",
                                    resolution=["720p"], duration=range(1, 11))]
        return []

    rules = StaticCatalog({"mock": FLEXIBLE, "fixed": FIXED}, {"mock": long_needs_hd})
    rows = "".join(f"shot {i},12,{i}\n" for i in range(500))
    plan = plan_text(tmp_path, "prompt,duration,seed\n" + rows + "fine,10,1\n", rules)
    assert [job.row_number for job in plan.jobs] == [502]
    assert len(plan.errors) == 500
    assert {(e.columns, e.accepted) for e in plan.errors} == {(
        ("duration", "(default resolution)"),
        "duration 1 s or 2 s or 3 s or 4 s (or another); or resolution 720p",
    )}
    # One call per row: the rules say the fields and fixes themselves (nothing is probed).
    assert len(calls) == 501
    assert plan.errors[0].message == "clips over 10 seconds need 720p"


def test_a_failing_rule_refuses_the_row_instead_of_the_import(
    tmp_path: Path, catalog: StaticCatalog
) -> None:
    def broken(params: Mapping[str, Any]) -> list[ParamProblem]:
        raise KeyError("model")

    rules = StaticCatalog({"mock": FLEXIBLE}, {"mock": broken})
    plan = plan_text(tmp_path, "prompt\na\n", rules)
    assert not plan.jobs
    (error,) = plan.errors
    assert error.column == "provider"
    assert error.message == "the mock adapter could not check this row (KeyError: 'model')"


def test_a_provider_minimum_prompt_length_is_a_row_error_at_import(tmp_path: Path) -> None:
    # Luma Dream Machine: "Prompt is too short, minimum length is 3 characters".
    plan = plan_real(tmp_path, "prompt\nab\n  ok \nabc\n", provider="luma-legacy")
    assert [job.row_number for job in plan.jobs] == [4]
    assert [(e.row_number, e.message) for e in plan.errors] == [
        (2, "the prompt is 2 characters; this provider needs at least 3"),
        (3, "the prompt is 2 characters; this provider needs at least 3"),
    ]
