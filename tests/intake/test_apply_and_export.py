"""Applying a plan to both stores, the manifest, backpressure, and the export."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest
from python_calamine import CalamineWorkbook

from reelqueue.domain.errors import InputError, OutputNotWritable
from reelqueue.domain.models import AccountSpec
from reelqueue.intake import (
    ImportOptions,
    ImportPlan,
    StaticCatalog,
    apply_import,
    escape_formula,
    export_results,
    plan_import,
)
from reelqueue.store.base import ClaimParams, JobError, Store

from .conftest import NOW

SHEET = "name,prompt,seed,notes\nfox,a fox,1,=HYPERLINK(\"http://x\")\nowl,an owl,2,-5 degrees\n"


def plan_for(tmp_path: Path, catalog: StaticCatalog, store: Store, text: str = SHEET,
             **options: object) -> ImportPlan:
    path = tmp_path / "sheet.csv"
    path.write_text(text, encoding="utf-8")
    options.setdefault("output_root", tmp_path / "videos")
    return plan_import(path, ImportOptions(**options),  # type: ignore[arg-type]
                       existing_keys=store.existing_job_keys, catalog=catalog, now=NOW)


def snapshot(store: Store) -> tuple[int, int]:
    return len(store.list_batches()), len(store.list_jobs())


def test_apply_creates_the_batch_jobs_with_relative_paths(
    tmp_path: Path, catalog: StaticCatalog, store: Store
) -> None:
    result = apply_import(store, plan_for(tmp_path, catalog, store), NOW)
    assert (result.added, result.already_present, result.batch_created) == (2, 0, True)
    jobs = store.list_jobs(batch_id=result.batch_id)
    assert [Path(job.output_path).name for job in jobs] == ["002_fox.mp4", "003_owl.mp4"]
    assert jobs[0].params["seed"] == 1 and jobs[0].metadata["columns"]["notes"].startswith("=")
    # The journal keeps the batch's folder name and each file under it, relative to the
    # videos folder (issue 23); the folder is made on the importing machine.
    assert store.get_batch(result.batch_id).output_dir == "sheet"  # type: ignore[union-attr]
    assert [job.output_path for job in jobs] == ["sheet/002_fox.mp4", "sheet/003_owl.mp4"]
    assert Path(result.output_dir) == (tmp_path / "videos" / "sheet").resolve()
    assert Path(result.output_dir).is_dir()
    # The import writes no manifest: each machine's engine does (engine/manifest.py).
    assert not list(Path(result.output_dir).iterdir())


def test_reimport_adds_nothing_and_an_edited_row_is_new(
    tmp_path: Path, catalog: StaticCatalog, store: Store
) -> None:
    first = apply_import(store, plan_for(tmp_path, catalog, store), NOW)
    again_plan = plan_for(tmp_path, catalog, store)
    assert again_plan.already_present == 2 and again_plan.estimate.jobs == 0
    again = apply_import(store, again_plan, NOW)
    assert (again.added, again.already_present, again.batch_id) == (0, 2, first.batch_id)
    assert not again.batch_created
    edited_plan = plan_for(tmp_path, catalog, store, SHEET.replace("a fox", "a red fox"))
    edited = apply_import(store, edited_plan, NOW)
    assert (edited.added, edited.already_present, edited.batch_id) == (1, 1, first.batch_id)
    names = sorted(Path(job.output_path).name for job in store.list_jobs())
    # The edited row keeps its row and name, so its file name is taken: it gets "_2".
    assert names == ["002_fox.mp4", "002_fox_2.mp4", "003_owl.mp4"]


def test_files_already_in_the_folder_are_not_overwritten(
    tmp_path: Path, catalog: StaticCatalog, store: Store
) -> None:
    folder = tmp_path / "videos" / "sheet"
    folder.mkdir(parents=True)
    (folder / "002_FOX.mp4").write_bytes(b"someone's video")
    result = apply_import(store, plan_for(tmp_path, catalog, store), NOW)
    assert [Path(job.output_path).name for job in store.list_jobs(batch_id=result.batch_id)] == [
        "002_fox_2.mp4", "003_owl.mp4"]


def test_a_second_batch_never_shares_a_folder(
    tmp_path: Path, catalog: StaticCatalog, store: Store
) -> None:
    one = apply_import(store, plan_for(tmp_path, catalog, store, batch_name="a/b"), NOW)
    two = apply_import(store, plan_for(tmp_path, catalog, store, batch_name="a_b"), NOW)
    assert one.batch_id != two.batch_id
    assert Path(two.output_dir).name == "a_b_2"


def test_backpressure_refuses_whole_and_leaves_the_journal(
    tmp_path: Path, catalog: StaticCatalog, store: Store
) -> None:
    apply_import(store, plan_for(tmp_path, catalog, store, "prompt\na\nb\nc\n"), NOW)
    before = snapshot(store)
    plan = plan_for(tmp_path, catalog, store, max_waiting=4, batch_name="more")
    with pytest.raises(InputError, match="holds 3 waiting jobs and its limit is 4: only 1 of "
                       "these 2 new jobs fit"):
        apply_import(store, plan, NOW)
    assert snapshot(store) == before
    # Re-importing what is already there needs no room.
    apply_import(store, plan_for(tmp_path, catalog, store, "prompt\na\nb\nc\n", max_waiting=3),
                 NOW)
    assert snapshot(store) == before


def test_refused_plans_write_nothing(tmp_path: Path, catalog: StaticCatalog, store: Store) -> None:
    strict = plan_for(tmp_path, catalog, store, "prompt,seed\na,1\nb,-1\n", partial=False)
    with pytest.raises(InputError, match=r"1 row\(s\) have errors and the import is all-or-"):
        apply_import(store, strict, NOW)
    hopeless = plan_for(tmp_path, catalog, store, "prompt,seed\na,-1\n")
    with pytest.raises(InputError, match=r"No row of sheet\.csv is valid"):
        apply_import(store, hopeless, NOW)
    assert snapshot(store) == (0, 0)
    assert not (tmp_path / "videos").exists()


def test_partial_import_reports_the_errors(
    tmp_path: Path, catalog: StaticCatalog, store: Store
) -> None:
    plan = plan_for(tmp_path, catalog, store, "prompt,seed\na,1\nb,-1\n")
    result = apply_import(store, plan, NOW)
    assert result.added == 1
    assert [(e.row_number, e.column) for e in result.errors] == [(3, "seed")]


def test_unwritable_output_folder_writes_nothing(
    tmp_path: Path, catalog: StaticCatalog, store: Store
) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    plan = plan_for(tmp_path, catalog, store, output_root=blocker)
    with pytest.raises(OutputNotWritable, match="cannot be created"):
        apply_import(store, plan, NOW)
    assert snapshot(store) == (0, 0)


def finish_some(store: Store, batch_id: int) -> None:
    """Fail the first job through the store's own transitions; the rest stay queued."""
    store.add_account(AccountSpec("acct-a", "mock", 1), NOW)
    claim = store.claim_next_job(ClaimParams("acct-a", "instance-1", NOW, 60.0))
    assert claim is not None and claim.job.batch_id == batch_id
    assert store.mark_failed(
        claim.token, JobError("permanent", "content policy", "refused by the filter"), NOW)


def test_export_csv_round_trips_with_results_and_escaping(
    tmp_path: Path, catalog: StaticCatalog, store: Store
) -> None:
    result = apply_import(store, plan_for(tmp_path, catalog, store), NOW)
    finish_some(store, result.batch_id)
    target = tmp_path / "results.csv"
    assert export_results(store, result.batch_id, target, "csv") == 2
    raw = target.read_bytes()
    assert raw.startswith(b"\xef\xbb\xbf")
    rows = list(csv.reader(raw.decode("utf-8-sig").splitlines()))
    assert rows[0][:4] == ["name", "prompt", "seed", "notes"]
    assert rows[0][4:] == ["source_row", "status", "attempts", "output_path", "output_host",
                           "provider", "account_used", "provider_job_id", "price_usd", "cost_usd",
                           "error_class", "error_label", "error_message"]
    fox = dict(zip(rows[0], rows[1], strict=True))
    assert fox["notes"] == "'=HYPERLINK(\"http://x\")"
    assert fox["seed"] == "1"  # numbers are not escaped
    assert (fox["status"], fox["account_used"], fox["error_label"]) == (
        "FAILED", "acct-a", "content policy")
    owl = dict(zip(rows[0], rows[2], strict=True))
    assert (owl["notes"], owl["status"], owl["source_row"]) == ("'-5 degrees", "QUEUED", "3")
    # the price kept at import (0.01 $/s x 5 s in the test catalog); no cost reported yet
    assert (owl["price_usd"], owl["cost_usd"]) == ("0.05", "")


def test_export_xlsx_keeps_formulas_as_text(
    tmp_path: Path, catalog: StaticCatalog, store: Store
) -> None:
    result = apply_import(store, plan_for(tmp_path, catalog, store), NOW)
    target = tmp_path / "results.xlsx"
    assert export_results(store, result.batch_id, target, "xlsx") == 2
    with CalamineWorkbook.from_path(str(target)) as book:
        rows = book.get_sheet_by_index(0).to_python()
    assert rows[0][:4] == ["name", "prompt", "seed", "notes"]
    assert rows[1][3] == "'=HYPERLINK(\"http://x\")"
    assert rows[1][2] == 1  # "1" from the CSV goes back as a number
    assert rows[2][3] == "'-5 degrees"


def test_export_of_an_unknown_batch(tmp_path: Path, store: Store) -> None:
    with pytest.raises(InputError, match="no batch 9"):
        export_results(store, 9, tmp_path / "x.csv", "csv")


@pytest.mark.parametrize(("cell", "escaped"), [
    ("=1+1", "'=1+1"), ("+1", "'+1"), ("-1", "'-1"), ("@SUM(A1)", "'@SUM(A1)"),
    ("\t=1", "'\t=1"), ("plain", "plain"), ("", ""),
])
def test_escape_formula(cell: str, escaped: str) -> None:
    assert escape_formula(cell) == escaped


def test_start_up_removes_manifest_temporaries_a_killed_import_left(tmp_path: Path) -> None:
    from reelqueue.intake.apply import remove_stale_manifest_temps

    folder = tmp_path / "batch"
    folder.mkdir()
    (folder / ".manifest.json.4242.tmp").write_text("{half")
    (folder / "manifest.json").write_text("{}")
    (folder / "001_fox.mp4").write_bytes(b"video")
    (folder / ".manifest.json.99.tmp").symlink_to(folder / "001_fox.mp4")
    assert remove_stale_manifest_temps([folder, tmp_path / "gone"]) == 1
    assert sorted(p.name for p in folder.iterdir()) == [
        ".manifest.json.99.tmp", "001_fox.mp4", "manifest.json"]


async def test_engine_start_up_clears_the_temporaries_of_its_batch_folders(
    tmp_path: Path, catalog: StaticCatalog
) -> None:
    import random

    from reelqueue.engine.config import EngineConfig
    from reelqueue.engine.engine import Engine
    from reelqueue.store.memory import MemoryStore

    store = MemoryStore()
    result = apply_import(store, plan_for(tmp_path, catalog, store), NOW)
    folder = Path(result.output_dir)
    (folder / ".manifest.json.31337.tmp").write_text('{"format": "reelqueue-man')
    engine = Engine(store, rng=random.Random(1),
                    config=EngineConfig(videos_dir=(tmp_path / "videos").resolve()))
    await engine.start(paused=True)
    await engine.stop()
    engine.close_store()
    assert not list(folder.glob(".*.tmp"))
