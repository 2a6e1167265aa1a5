"""Routed rows (issue 24, intake/routes.py): a row naming several providers, or a batch
route, checked per candidate by the built-in providers' real ParamSpecs and rules, with the
tolerance's moves, prices, ranking, keys, the worst case and the refusals."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import openpyxl
import pytest

from reelqueue.domain.errors import InputError
from reelqueue.domain.models import AccountSpec
from reelqueue.domain.routes import Route, RoutePolicy, Tolerance, is_route
from reelqueue.intake import AccountPrices, ImportOptions, ImportPlan, RegistryCatalog, plan_import
from reelqueue.intake.jobs import key_digest
from reelqueue.intake.routes import bounded_split, pixel_height, route_settings, routes

from .conftest import NOW

pytestmark = pytest.mark.unit

CATALOG = RegistryCatalog()


def csv_sheet(folder: Path, text: str, name: str = "shots.csv") -> Path:
    path = folder / name
    path.write_text(text, encoding="utf-8")
    return path


def xlsx_sheet(folder: Path, rows: list[list[Any]], name: str = "shots.xlsx") -> Path:
    book = openpyxl.Workbook()
    sheet = book.active
    assert sheet is not None
    for row in rows:
        sheet.append(row)
    path = folder / name
    book.save(path)
    return path


def plan(path: Path, accounts: AccountPrices | None = None,
         speeds: dict[str, float] | None = None, **options: Any) -> ImportPlan:
    options.setdefault("output_root", path.parent / "videos")
    return plan_import(path, ImportOptions(**options), catalog=CATALOG, now=NOW,
                       accounts=accounts or AccountPrices(), speeds=speeds)


def route_of(plan_: ImportPlan, index: int = 0) -> Route:
    route = plan_.jobs[index].route
    assert route is not None
    return route


SEVEN = "prompt,providers,duration\na cat on a boat,veo|runway|luma,7\n"


def test_exact_leaves_out_the_candidates_that_refuse_the_duration(tmp_path: Path) -> None:
    result = plan(csv_sheet(tmp_path, SEVEN))
    (job,) = result.jobs
    route = route_of(result)
    assert route.providers() == ["runway"]
    assert [name for name, _why in route.left_out] == ["veo", "luma"]
    assert route.left_out[0][1] == ("column 'duration': 7 seconds is not offered by this "
                                    "provider (accepted: one of 4, 6, 8 seconds)")
    assert route.tolerance == Tolerance.EXACT and route.policy == RoutePolicy.ORDER
    # The job is its best candidate's: provider, params and price.
    assert job.provider == "runway"
    assert job.params == dict(route.candidates[0].params) == {
        "model": "gen4.5", "duration": 7, "aspect_ratio": "16:9", "resolution": "720p"}
    assert job.metadata["price"] == route.candidates[0].price == pytest.approx(0.84)
    assert job.job_key.startswith("route:")
    assert not result.errors


def test_nearest_duration_maps_each_candidate_and_records_the_move(tmp_path: Path) -> None:
    path = xlsx_sheet(tmp_path, [["Prompt", "Route", "Seconds"],
                                 ["a cat on a boat", "Veo | Runway ; luma", 7]])
    result = plan(path, tolerance="nearest-duration")
    route = route_of(result)
    assert route.providers() == ["veo", "runway", "luma"]  # order: as written
    assert not route.left_out
    veo, runway, luma = route.candidates
    assert dict(veo.changed) == {"duration": (7, 8)} and veo.params["duration"] == 8
    assert dict(runway.changed) == {} and runway.params["duration"] == 7
    assert dict(luma.changed) == {"duration": (7, 5)} and luma.params["duration"] == 5
    assert (veo.price, runway.price, luma.price) == pytest.approx((3.2, 0.84, 0.3))
    assert result.jobs[0].provider == "veo" and result.jobs[0].metadata["price"] == 3.2
    # The expected cost counts the best candidate; the worst case the dearest one.
    assert result.estimate.total_usd == pytest.approx(3.2)
    assert result.worst_case.usd == pytest.approx(3.2)
    assert result.worst_case.routed_jobs == 1


def test_a_duration_out_of_a_range_is_clamped(tmp_path: Path) -> None:
    text = "prompt,providers,duration\na cat,runway|kling,30\n"
    route = route_of(plan(csv_sheet(tmp_path, text), tolerance="nearest-duration"))
    assert {c.provider: dict(c.changed) for c in route.candidates} == {
        "runway": {"duration": (30, 10)}, "kling": {"duration": (30, 15)}}


def test_cheapest_ranks_by_price_and_fastest_by_speed(tmp_path: Path) -> None:
    path = csv_sheet(tmp_path, SEVEN)
    cheapest = plan(path, tolerance="nearest-duration", route_policy="cheapest")
    route = route_of(cheapest)
    assert route.providers() == ["luma", "runway", "veo"]
    assert [c.price for c in route.candidates] == sorted(c.price or 0 for c in route.candidates)
    job = cheapest.jobs[0]
    assert job.provider == "luma" and job.params["duration"] == 5
    assert job.metadata["price"] == pytest.approx(0.3)
    assert cheapest.estimate.total_usd == pytest.approx(0.3)
    assert cheapest.worst_case.usd == pytest.approx(3.2)  # veo, the dearest usable one

    fastest = plan(path, tolerance="nearest-duration", route_policy="fastest",
                   speeds={"luma": 90.0, "runway": 40.0})
    assert route_of(fastest).providers() == ["runway", "luma", "veo"]  # veo: no figures
    assert route_of(plan(path, tolerance="nearest-duration", route_policy="fastest")
                    ).providers() == ["veo", "runway", "luma"]  # no figures: given order
    spread = route_of(plan(path, tolerance="nearest-duration", route_policy="spread"))
    assert spread.policy == RoutePolicy.SPREAD and spread.better_than("luma") == []


def test_nearest_moves_aspect_ratio_and_resolution_too(tmp_path: Path) -> None:
    text = "prompt,providers,duration,aspect ratio,resolution\na cat,veo|luma,7,4:3,4k\n"
    path = csv_sheet(tmp_path, text)
    # Beyond nearest-duration: veo refuses 4:3, luma 4k; the row is refused.
    (error,) = plan(path, tolerance="nearest-duration").errors
    assert "veo: column 'aspect ratio': 4:3 is not offered" in error.message
    assert "luma: column 'resolution': '4k' is not offered" in error.message
    route = route_of(plan(path, tolerance="nearest"))
    veo, luma = route.candidates
    assert dict(veo.changed) == {"duration": (7, 8), "aspect_ratio": ("4:3", "16:9")}
    assert veo.params["resolution"] == "4k"  # veo takes 4k as written
    assert dict(luma.changed) == {"duration": (7, 5), "resolution": ("4k", "1080p")}
    assert luma.params["aspect_ratio"] == "4:3"


def test_a_provider_rule_beyond_the_tolerance_leaves_the_candidate_out(
        tmp_path: Path) -> None:
    # Veo's 1080p needs 8 seconds (its rules): exact leaves it out, runway takes the row.
    text = "prompt,providers,duration,resolution\na cat,veo|kling,6,1080p\n"
    route = route_of(plan(csv_sheet(tmp_path, text), tolerance="nearest"))
    assert route.providers() == ["kling"]
    assert dict(route.left_out)["veo"] == (
        "column 'duration, resolution': Veo renders 1080p only at 8 seconds (accepted: "
        "duration 8 s; or resolution 720p)")


def test_no_candidate_left_refuses_the_row_with_every_reason(tmp_path: Path) -> None:
    text = "prompt,providers,duration\nfine,runway,5\ntoo long,veo|luma,7\n"
    result = plan(csv_sheet(tmp_path, text))
    assert [job.row_number for job in result.jobs] == [2]
    (error,) = result.errors
    assert error.row_number == 3 and error.column == "providers"
    assert error.message.startswith("no provider of the route veo|luma can take this row")
    assert "veo: column 'duration': 7 seconds" in error.message
    assert "luma: column 'duration': 7 seconds" in error.message
    assert "nearest-duration" in error.accepted


def test_a_fault_every_candidate_sees_is_said_once(tmp_path: Path) -> None:
    result = plan(csv_sheet(tmp_path, "prompt,providers,repeat\n,veo|runway,0\n"))
    assert [(e.column, e.message) for e in result.errors] == [
        ("prompt", "the prompt is empty"), ("repeat", "the repeat count 0 is out of range")]


def test_a_single_provider_behaves_as_before(tmp_path: Path) -> None:
    text = "prompt,provider,duration\na dog,runway,5\nodd,veo|,6\n"
    result = plan(csv_sheet(tmp_path, text), route_policy="cheapest",
                  tolerance="nearest")
    job = result.jobs[0]
    assert job.route is None and job.provider == "runway"
    # The key of an unrouted row is what it always was.
    assert job.job_key == "row:" + key_digest("shots", "a dog", "runway", job.params, None, "")
    assert [(e.row_number, e.message) for e in result.errors] == [
        (3, "Unknown provider 'veo|'")]
    assert result.worst_case.routed_jobs == 0
    assert result.worst_case.usd == result.estimate.total_usd


def test_the_key_hashes_the_route_not_the_provider_chosen(tmp_path: Path) -> None:
    path = csv_sheet(tmp_path, SEVEN + "a dog,runway,5\n")
    first = plan(path, tolerance="nearest-duration", route_policy="cheapest")
    # Prices change: luma's accounts now charge more, so runway ranks first.
    dear_luma = AccountPrices.of([AccountSpec("l1", "luma", 1,
                                              settings={"price_per_second": 1.0})])
    second = plan(path, dear_luma, tolerance="nearest-duration", route_policy="cheapest")
    assert first.jobs[0].provider == "luma" and second.jobs[0].provider == "runway"
    assert [j.job_key for j in first.jobs] == [j.job_key for j in second.jobs]
    # A re-import of the same sheet after the price change adds nothing.
    existing = {job.job_key for job in first.jobs}
    again = plan_import(path, ImportOptions(output_root=tmp_path / "videos",
                                            tolerance="nearest-duration",
                                            route_policy="cheapest"),
                        catalog=CATALOG, now=NOW, accounts=dear_luma,
                        existing_keys=lambda keys: set(keys) & existing)
    assert again.new_jobs == [] and again.already_present == 2
    # Speeds do not change a key either; the route's policy, tolerance and providers do.
    fastest = plan(path, speeds={"runway": 1.0}, tolerance="nearest-duration",
                   route_policy="fastest")
    keys = {first.jobs[0].job_key, fastest.jobs[0].job_key,
            plan(path, tolerance="nearest-duration").jobs[0].job_key,
            plan(path, tolerance="nearest", route_policy="cheapest").jobs[0].job_key}
    assert len(keys) == 4
    reordered = plan(csv_sheet(tmp_path, SEVEN.replace("veo|runway|luma", "luma|runway|veo"),
                               "reordered.csv"), batch_name="shots",
                     tolerance="nearest-duration", route_policy="cheapest")
    assert reordered.jobs[0].job_key != first.jobs[0].job_key
    # The unrouted row keeps its key whatever the route settings.
    assert {first.jobs[1].job_key, fastest.jobs[1].job_key} == {
        plan(path).jobs[1].job_key}
    # Case and spacing of the providers as written do not matter.
    spaced = plan(csv_sheet(tmp_path, SEVEN.replace("veo|runway|luma", "VEO | Runway|luma"),
                            "spaced.csv"), batch_name="shots",
                  tolerance="nearest-duration", route_policy="cheapest")
    assert spaced.jobs[0].job_key == first.jobs[0].job_key


def test_two_identical_routed_rows_are_two_jobs(tmp_path: Path) -> None:
    result = plan(csv_sheet(tmp_path, SEVEN + "a cat on a boat,veo|runway|luma,7\n"))
    first, second = (job.job_key for job in result.jobs)
    assert second == first + "~2"


def test_a_routed_row_naming_an_account_is_refused(tmp_path: Path) -> None:
    text = "prompt,providers,account\na cat,veo|runway,studio-veo\na dog,veo,studio-veo\n"
    result = plan(csv_sheet(tmp_path, text))
    assert [job.row_number for job in result.jobs] == [3]  # one provider: pinned as before
    assert result.jobs[0].pinned_account == "studio-veo"
    (error,) = result.errors
    assert (error.row_number, error.column) == (2, "account")
    assert "an account pins one provider" in error.message


def test_a_template_naming_the_provider_is_refused(tmp_path: Path) -> None:
    text = "prompt,providers\na cat,veo|runway\na dog,runway\n"
    path = csv_sheet(tmp_path, text)
    # Only some rows route: those rows are refused, the others keep the template.
    result = plan(path, filename_template="{provider}_{row}")
    assert [job.output_path for job in result.jobs] == ["shots/runway_3.mp4"]
    (error,) = result.errors
    assert error.row_number == 2 and "{provider}" in error.message
    # A batch route with such a template: refused before anything is read.
    with pytest.raises(InputError, match=r"uses \{model\}.*routes \(veo\|runway\)"):
        plan(path, filename_template="{model}_{row}", route=("veo", "runway"))


def test_a_batch_route_serves_rows_without_a_provider(tmp_path: Path) -> None:
    text = "prompt,provider,seed\na cat,,\na dog,runway,7\n"
    result = plan(csv_sheet(tmp_path, text), route=("luma", "runway"), duration=5.0,
                  route_policy="cheapest", route_on_policy=True)
    routed, single = result.jobs
    route = route_of(result)
    assert route.providers() == ["luma", "runway"] and route.on_policy
    assert routed.provider == "luma" and routed.params["duration"] == 5
    assert single.route is None and single.params["seed"] == 7
    intake = result.batch.settings["intake"]
    assert {k: intake[k] for k in ("route", "route_policy", "tolerance", "route_on_policy")
            } == {"route": ["luma", "runway"], "route_policy": "cheapest",
                  "tolerance": "exact", "route_on_policy": True}
    # A re-import without route settings reuses the saved ones: the same keys.
    saved = {k: intake[k] for k in ("route", "route_policy", "tolerance", "route_on_policy")}
    again = plan(csv_sheet(tmp_path, text), duration=5.0, saved_route=saved)
    assert [j.job_key for j in again.jobs] == [j.job_key for j in result.jobs]
    assert again.batch.settings["intake"]["route"] == ["luma", "runway"]
    # Given settings win over the saved ones.
    given = plan(csv_sheet(tmp_path, text), duration=5.0, saved_route=saved,
                 route=("runway", "luma"))
    assert route_of(given).providers() == ["runway", "luma"]


def test_a_batch_default_beyond_a_candidate_is_moved_or_left_out(tmp_path: Path) -> None:
    path = csv_sheet(tmp_path, "prompt\na cat\n")
    exact = route_of(plan(path, route=("veo", "runway"), duration=7.0))
    assert exact.providers() == ["runway"]
    assert "(default duration)" in dict(exact.left_out)["veo"]
    moved = route_of(plan(path, route=("veo", "runway"), duration=7.0,
                          tolerance="nearest-duration"))
    assert dict(moved.candidates[0].changed) == {"duration": (7, 8)}


def test_a_seed_and_repeats_follow_each_candidate(tmp_path: Path) -> None:
    text = "prompt,providers,seed,repeat\na cat,runway|kling|replicate,40,2\n"
    result = plan(csv_sheet(tmp_path, text))
    # kling takes no seed: left out; runway and replicate take it.
    assert route_of(result).providers() == ["runway", "replicate"]
    assert "does not take a seed" in dict(route_of(result).left_out)["kling"]
    first, second = result.jobs
    assert [c.params["seed"] for c in route_of(result, 1).candidates] == [41, 41]
    assert second.params["seed"] == 41 and first.params["seed"] == 40
    assert second.job_key == first.job_key + "#2"


def test_an_unpriced_candidate_makes_the_worst_case_unknown(tmp_path: Path) -> None:
    # replicate's adapter has no price table: its candidate has no price.
    text = "prompt,providers,duration\na cat,veo|replicate,8\n"
    result = plan(csv_sheet(tmp_path, text), route_policy="cheapest")
    route = route_of(result)
    assert route.providers() == ["veo", "replicate"]  # the unpriced one ranks last
    assert route.candidates[1].price is None
    assert result.estimate.total_usd == pytest.approx(3.2)
    assert result.worst_case.usd is None and result.worst_case.unpriced_jobs == 1
    assert "price is unknown" in result.worst_case.describe()
    assert result.first_rows(0).worst_case.usd == 0.0


def test_the_preview_carries_the_route(tmp_path: Path) -> None:
    result = plan(csv_sheet(tmp_path, SEVEN), tolerance="nearest-duration")
    (row,) = result.preview()
    assert row.route is not None and row.route.providers() == ["veo", "runway", "luma"]
    assert row.provider == "veo" and row.price is not None and row.price.usd == 3.2


@pytest.mark.parametrize("cell", ["|||", " | ; , ", ">>"])
def test_separators_alone_are_a_row_error(tmp_path: Path, cell: str) -> None:
    result = plan(csv_sheet(tmp_path, f'prompt,providers\nfine,runway\nodd,"{cell}"\n'))
    assert [job.row_number for job in result.jobs] == [2]
    (error,) = result.errors
    assert error.row_number == 3 and error.column == "providers"


def test_hostile_route_cells_give_row_errors_quickly(tmp_path: Path) -> None:
    many = "|".join(f"p{i}" for i in range(10_000))
    text = (f"prompt,providers\nmany,{many}\nunknown,veo|nope|Rnway\n"
            f"dupes,{'|'.join(['veo'] * 5_000)}\n"
            + "".join(f"many {i},{many}|x{i}\n" for i in range(30)))
    started = time.perf_counter()
    result = plan(csv_sheet(tmp_path, text))
    assert time.perf_counter() - started < 5
    assert not result.jobs
    by_row = {e.row_number: e for e in result.errors}
    assert "more than 12 providers" in by_row[2].message
    assert by_row[3].message == "the route names 'nope', 'rnway', not providers"
    assert by_row[3].accepted.startswith("providers from: fal, kling")
    assert by_row[4].message.startswith("Unknown provider")  # one name, many times
    assert all("more than 12 providers" in by_row[n].message for n in range(5, 35))


def test_xlsx_and_csv_route_alike(tmp_path: Path) -> None:
    from_csv = plan(csv_sheet(tmp_path, "prompt,providers,duration\na cat,veo|luma,5\n"))
    from_xlsx = plan(xlsx_sheet(tmp_path, [["prompt", "providers", "duration"],
                                           ["a cat", "veo|luma", 5]]))
    assert route_of(from_csv).providers() == route_of(from_xlsx).providers() == ["luma"]
    assert route_of(from_csv).candidates == route_of(from_xlsx).candidates


def test_route_settings_are_checked() -> None:
    settings = route_settings("veo, runway", "Cheapest", "nearest", True, CATALOG)
    assert settings.providers == ("veo", "runway")
    assert settings.policy == RoutePolicy.CHEAPEST and settings.tolerance == Tolerance.NEAREST
    for bad, words in [
        (("veo,runway", "quickest", "exact"), "Unknown route policy 'quickest'"),
        (("veo,runway", "order", "loose"), "Unknown tolerance 'loose'"),
        (("veo,nope", "order", "exact"), "names 'nope', which is not a provider"),
        (("veo", "order", "exact"), "names one provider"),
        ((",|;", "order", "exact"), "names no provider"),
        (("|".join(f"p{i}" for i in range(13)), "order", "exact"), "at most 12"),
    ]:
        with pytest.raises(InputError, match=words):
            route_settings(bad[0], bad[1], bad[2], False, CATALOG)
    assert route_settings((), "spread", "exact", False).providers == ()


def test_routes_agrees_with_is_route() -> None:
    for cell in ("veo", "veo|runway", "veo|veo", "VEO | veo", "|||", "veo|", "a;b", "a>b",
                 " , ", "veo,Runway,luma"):
        assert routes(cell) == is_route(cell), cell


def test_helpers() -> None:
    assert bounded_split("a|b|a") == ["a", "b"]
    assert bounded_split("|".join(f"p{i}" for i in range(13))) is None
    assert [pixel_height(t) for t in ("720p", "1080", "1920x1080", "4k", "2K", "hd")] == [
        720, 1080, 1080, 2160, 1440, None]


def test_providers_and_route_headers_map_to_the_provider_field() -> None:
    from reelqueue.intake import suggest_mapping

    assert suggest_mapping(["Prompt", "Providers"]).header_for("provider") == "Providers"
    assert suggest_mapping(["prompt", "Route"]).header_for("provider") == "Route"
    assert suggest_mapping(["prompt", "provider", "route"]).header_for("provider") == "provider"
