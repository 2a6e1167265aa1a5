"""Planning: validation with row errors, defaults, keys, repeats, images, estimates."""

from __future__ import annotations

from pathlib import Path

import pytest

from reelqueue.domain.errors import InputError
from reelqueue.intake import ImportOptions, StaticCatalog, plan_import

from .conftest import NOW, plan_text

SHEETS = Path(__file__).resolve().parents[1] / "fixtures" / "sheets"
PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 32


def test_a_plain_sheet_becomes_jobs_with_defaults(tmp_path: Path, catalog: StaticCatalog) -> None:
    plan = plan_text(tmp_path, "Prompt,Notes\na cat,keep me\n", catalog)
    (job,) = plan.jobs
    assert job.prompt == "a cat"
    assert job.provider == "mock"
    assert job.params == {"model": "mock-1", "duration": 5, "aspect_ratio": "16:9",
                          "resolution": "480p"}
    assert job.row_number == 2
    # Relative to the videos folder (issue 23): each machine resolves it under its own.
    assert job.output_path == "sheet/002_a cat.mp4"
    assert plan.batch.output_dir == "sheet"
    # the price of one render (0.01 $/s x 5 s) is kept for the spend caps
    assert job.metadata == {"columns": {"Prompt": "a cat", "Notes": "keep me"}, "price": 0.05}
    assert plan.unmapped == ["Notes"]
    assert plan.batch.name == "sheet"
    assert plan.batch.settings["intake"]["columns"] == ["Prompt", "Notes"]
    assert not plan.errors and not plan.refused


def test_batch_defaults_apply_and_are_checked(tmp_path: Path, catalog: StaticCatalog) -> None:
    plan = plan_text(tmp_path, "prompt,duration\na,\nb,3\n", catalog, model="mock-2",
                     duration=8.0, aspect_ratio="9x16", resolution="720")
    assert [job.params["duration"] for job in plan.jobs] == [8, 3]
    assert plan.jobs[0].params["model"] == "mock-2"
    assert plan.jobs[0].params["aspect_ratio"] == "9:16"
    assert plan.jobs[0].params["resolution"] == "720p"
    with pytest.raises(InputError, match=r"default duration for mock: the duration -1 is neg"):
        plan_text(tmp_path, "prompt\na\n", catalog, duration=-1.0)
    with pytest.raises(InputError, match="Unknown provider 'nope'"):
        plan_text(tmp_path, "prompt\na\n", catalog, provider="nope")


def test_every_bad_cell_gets_a_row_error(tmp_path: Path, catalog: StaticCatalog) -> None:
    text = (
        "prompt,duration,seed,aspect ratio,model,provider\n"
        "good,5,42.0,16:9,mock-2,\n"
        ",-5,1e300,4:3,gpt,\n"
        "strict,7,3,16:9,,fixed\n"
        "lost,5,,,,runway\n"
    )
    plan = plan_text(tmp_path, text, catalog)
    assert [job.row_number for job in plan.jobs] == [2]
    assert plan.jobs[0].params["seed"] == 42
    described = [(e.row_number, e.column, e.message) for e in plan.errors]
    assert described == [
        (3, "aspect ratio", "4:3 is not offered by this provider"),
        (3, "duration", "the duration -5 is negative"),
        (3, "model", "'gpt' is not a model of this provider"),
        (3, "prompt", "the prompt is empty"),
        (3, "seed", "1e300 is beyond 2^53"),
        (4, "duration", "7 seconds is not offered by this provider"),
        (4, "seed", "this provider does not take a seed"),
        (5, "provider", "Unknown provider 'runway'"),
    ]
    assert plan.errors[-1].accepted == "one of fixed, mock"
    assert plan.errors[1].describe() == (
        "row 3, column 'duration': the duration -5 is negative "
        "(accepted: a number of seconds from 1 to 20)")
    assert not plan.refused
    strict = plan_text(tmp_path, text, catalog, partial=False)
    assert strict.refused


def test_a_megabyte_prompt_is_a_row_error(tmp_path: Path, catalog: StaticCatalog) -> None:
    plan = plan_text(tmp_path, "prompt\nfine\n" + "z" * 1_048_576 + "\n", catalog)
    assert len(plan.jobs) == 1
    assert plan.errors[0].message == "the prompt is 1,048,576 characters long"


def test_no_valid_row_is_refused(tmp_path: Path, catalog: StaticCatalog) -> None:
    plan = plan_text(tmp_path, "prompt,duration\na,-1\n", catalog)
    assert plan.refused and not plan.jobs


def test_no_header_and_no_prompt_column(tmp_path: Path, catalog: StaticCatalog) -> None:
    with pytest.raises(InputError, match="no header row that ReelQueue recognises: row 1"):
        plan_text(tmp_path, "a cat on a mat,5\na dog,6\n", catalog)
    with pytest.raises(InputError, match=r"has no prompt column\. Its columns are: 'title'"):
        plan_text(tmp_path, "title,duration\nx,5\n", catalog)
    plan = plan_text(tmp_path, "a cat on a mat,5\na dog,6\n", catalog,
                     column_overrides=(("A", "prompt"), ("B", "duration")))
    assert [(job.prompt, job.params["duration"]) for job in plan.jobs] == [("a dog", 6)]


def test_a_header_without_rows_is_refused(tmp_path: Path, catalog: StaticCatalog) -> None:
    with pytest.raises(InputError, match=r"has a header \(row 1\) but no rows"):
        plan_text(tmp_path, "prompt,seed\n,\n", catalog)


def test_keys_are_stable_and_survive_row_moves(tmp_path: Path, catalog: StaticCatalog) -> None:
    keys = [j.job_key for j in plan_text(tmp_path, "prompt\na\nb\na\n", catalog).jobs]
    assert len(set(keys)) == 3  # two identical rows are two jobs
    again = [j.job_key for j in plan_text(tmp_path, "prompt\na\nb\na\n", catalog).jobs]
    assert again == keys
    inserted = [j.job_key for j in plan_text(tmp_path, "prompt\nnew\na\nb\na\n", catalog).jobs]
    assert inserted[1:] == keys  # rows below an inserted row are not "new"
    edited = [j.job_key for j in plan_text(tmp_path, "prompt\na\nB!\na\n", catalog).jobs]
    assert edited[0] == keys[0] and edited[2] == keys[2] and edited[1] not in keys
    longer = [j.job_key for j in plan_text(tmp_path, "prompt\na\nb\na\n", catalog,
                                           duration=6.0).jobs]
    assert not set(longer) & set(keys)  # another default duration renders other videos
    other_batch = [j.job_key for j in plan_text(tmp_path, "prompt\na\nb\na\n", catalog,
                                                batch_name="second").jobs]
    assert not set(other_batch) & set(keys)


def test_id_column_keys_and_duplicate_ids(tmp_path: Path, catalog: StaticCatalog) -> None:
    plan = plan_text(tmp_path, "id,prompt\n7,a\n8,b\n7,c\n", catalog)
    assert [j.row_number for j in plan.jobs] == [2, 3]
    assert plan.jobs[0].job_key.startswith("id:")
    assert [(e.row_number, e.column, e.message) for e in plan.errors] == [
        (4, "id", "the id '7' is also used by row 2")]
    renamed = plan_text(tmp_path, "id,prompt\n7,a edited\n", catalog)
    assert renamed.jobs[0].job_key == plan.jobs[0].job_key


def test_repeat_expands_with_distinct_keys_seeds_and_files(
    tmp_path: Path, catalog: StaticCatalog
) -> None:
    plan = plan_text(tmp_path, "name,prompt,seed,repeat\nfox,a fox,10,3\n", catalog)
    keys = [job.job_key for job in plan.jobs]
    assert keys[1:] == [f"{keys[0]}#2", f"{keys[0]}#3"]
    assert [job.params["seed"] for job in plan.jobs] == [10, 11, 12]
    assert [Path(job.output_path).name for job in plan.jobs] == [
        "002_fox_1.mp4", "002_fox_2.mp4", "002_fox_3.mp4"]
    # A row without a seed: each take gets one drawn (issue 35 item 1), in its params and
    # so in its file name.
    templated = plan_text(tmp_path, "name,prompt,repeat\nfox,a fox,2\n", catalog,
                          filename_template="{name}-v{n:02}-{seed}")
    seeds = [job.params["seed"] for job in templated.jobs]
    assert len(set(seeds)) == 2
    assert [Path(job.output_path).name for job in templated.jobs] == [
        f"fox-v01-{seeds[0]}.mp4", f"fox-v02-{seeds[1]}.mp4"]


def test_file_names_are_sanitised_and_collisions_resolved(
    tmp_path: Path, catalog: StaticCatalog
) -> None:
    plan = plan_text(tmp_path, "name,prompt\nCON,a\n../../x,b\nsame,c\nSAME,d\n", catalog,
                     filename_template="{name}", batch_name="../escape")
    names = [Path(job.output_path).name for job in plan.jobs]
    assert names == ["CON_.mp4", "x.mp4", "same.mp4", "SAME_2.mp4"]
    assert all(job.output_path.startswith("escape/") for job in plan.jobs)


def test_template_with_date_model_provider(tmp_path: Path, catalog: StaticCatalog) -> None:
    plan = plan_text(tmp_path, "prompt,seed\na,5\n", catalog,
                     filename_template="{date}_{provider}_{model}_{seed}_{row}_{batch}")
    name = Path(plan.jobs[0].output_path).name
    assert name.endswith("_mock_mock-1_5_2_sheet.mp4") and name[:4].isdigit()
    with pytest.raises(InputError, match="uses"):
        plan_text(tmp_path, "prompt\na\n", catalog, filename_template="{secret}")


def test_reference_images(tmp_path: Path, catalog: StaticCatalog) -> None:
    (tmp_path / "first.png").write_bytes(PNG)
    (tmp_path / "notes.png").write_text("not an image")
    (tmp_path / "frames").mkdir()
    text = (
        "prompt,image,provider\n"
        "ok,first.png,\n"
        "url,https://example.com/a.jpg,\n"
        "plain,http://example.com/a.jpg,\n"
        "gone,missing.png,\n"
        "fake,notes.png,\n"
        "folder,frames,\n"
        "strict,first.png,fixed\n"
    )
    plan = plan_text(tmp_path, text, catalog)
    assert plan.jobs[0].params["image"] == str((tmp_path / "first.png").resolve())
    assert plan.jobs[1].params["image"] == "https://example.com/a.jpg"
    assert [(e.row_number, e.message) for e in plan.errors] == [
        (4, "the image URL 'http://example.com/a.jpg' does not use https"),
        (5, "the image 'missing.png' does not exist"),
        (6, "'notes.png' is not a PNG, JPEG or WebP image"),
        (7, "the image 'frames' is a folder"),
        (8, "this provider does not take a reference image"),
    ]


def test_already_present_and_estimate(tmp_path: Path, catalog: StaticCatalog) -> None:
    first = plan_text(tmp_path, "prompt,duration,model,account\na,10,mock-2,\nb,5,,acct\n", catalog)
    assert first.estimate.total_usd == pytest.approx(0.25)
    assert [(line.label, line.jobs, line.usd) for line in first.estimate.lines] == [
        ("mock", 1, 0.2), ("mock (account acct)", 1, 0.05)]
    present = {first.jobs[0].job_key}
    second = plan_text(tmp_path, "prompt,duration,model,account\na,10,mock-2,\nb,5,,acct\n",
                       catalog, existing=present)
    assert second.already_present == 1
    assert second.new_jobs == [second.jobs[1]]
    assert second.estimate.total_usd == pytest.approx(0.05)
    assert [row.already_present for row in second.preview()] == [True, False]
    unpriced = plan_text(tmp_path, "prompt\na\n", catalog, provider="fixed")
    assert unpriced.estimate.unpriced_jobs == 1 and unpriced.estimate.lines[0].usd is None


def test_a_thousand_columns_become_metadata(tmp_path: Path, catalog: StaticCatalog) -> None:
    header = ",".join(["prompt"] + [f"c{i}" for i in range(999)])
    row = ",".join(["hello"] + [str(i) for i in range(999)])
    plan = plan_text(tmp_path, f"{header}\n{row}\n", catalog)
    assert len(plan.jobs[0].metadata["columns"]) == 1000
    assert len(plan.unmapped) == 999


def test_nul_bytes_refuse_the_file(tmp_path: Path, catalog: StaticCatalog) -> None:
    with pytest.raises(InputError, match="NUL"):
        plan_text(tmp_path, "prompt\na\x00b\n", catalog)


@pytest.mark.parametrize("name", ["libreoffice_offset.xlsx", "libreoffice_offset.ods",
                                  "libreoffice_offset.xls", "openpyxl_offset.xlsx",
                                  "comma_utf8_bom.csv", "semicolon_cp1252.csv",
                                  "tab_utf16.tsv", "prompts.txt"])
def test_every_sample_sheet_plans_cleanly(
    tmp_path: Path, catalog: StaticCatalog, name: str
) -> None:
    plan = plan_import(SHEETS / name, ImportOptions(output_root=tmp_path), catalog=catalog,
                       now=NOW)
    assert plan.errors == []
    assert len(plan.jobs) in (3, 4)
    seeds = [job.params.get("seed") for job in plan.jobs]
    assert all(s is None or isinstance(s, int) for s in seeds)
    # Every sheet but the plain-text one (no columns, so no seed) carries seed 42.
    assert (42 in seeds) == (name != "prompts.txt"), seeds


def test_sample_prompts_resource_is_valid_for_the_real_mock_provider(tmp_path: Path) -> None:
    sample = Path(__file__).resolve().parents[2] / "resources" / "sample_prompts.csv"
    plan = plan_import(sample, ImportOptions(output_root=tmp_path), now=NOW)
    assert plan.errors == [] and len(plan.jobs) == 12
