"""status, doctor and the demo's commands in the application layer (what ``reelqueue
status``, ``doctor`` and ``demo`` call), on a real journal in a temporary data folder."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from reelqueue.application import status
from reelqueue.application.context import AppContext
from reelqueue.application.demo import DEMO_ACCOUNTS, prepare_demo, reset_demo
from reelqueue.domain.clock import FakeClock
from reelqueue.store.lockfile import DataDirLock
from tests.application.test_commands import on_journal, sheet

pytestmark = pytest.mark.integration


@pytest.fixture
def ctx(tmp_path: Path) -> AppContext:
    return AppContext(data_dir=tmp_path / "data", videos_dir=tmp_path / "videos",
                      clock=FakeClock(1_700_000_000.0))


def test_status_reports_the_demo_jobs_and_accounts_and_doctor_finds_nothing(
    ctx: AppContext, tmp_path: Path,
) -> None:
    first = prepare_demo(ctx, sheet(tmp_path), render_seconds=None)
    again = prepare_demo(ctx, sheet(tmp_path), render_seconds=None)
    assert (first.added, again.added, again.already_present) == (3, 0, 3)
    report = on_journal(ctx, lambda session: status.status(session))
    assert report.data["by_state"] == {"QUEUED": 3}
    assert [(a["name"], a["limit"]) for a in report.data["accounts"]] == list(DEMO_ACCOUNTS)
    assert [j["state"] for j in report.data["jobs"]] == ["QUEUED"] * 3
    assert status.attention_sentences(report.attention) == []
    assert report.spend.batches == ()
    checks = on_journal(ctx, lambda session: status.doctor(session, False))
    assert "completed_file_mismatch" in checks and "shared_output_paths" in checks
    assert {name: rows for name, rows in checks.items() if rows} == {}


def test_the_probe_says_whether_another_instance_holds_the_folder(ctx: AppContext) -> None:
    ctx.data_dir.mkdir(parents=True)
    with status.other_instance_probe(ctx) as alive:
        assert alive is False
    other = DataDirLock(ctx.data_dir)
    other.acquire()
    try:
        with status.other_instance_probe(ctx) as alive:
            assert alive is True
    finally:
        other.release()


def test_reset_demo_removes_its_journal(ctx: AppContext, tmp_path: Path) -> None:
    prepare_demo(ctx, sheet(tmp_path), render_seconds=None)
    assert ctx.journal_path.exists()
    folders = [p for p in ctx.videos_dir.iterdir() if p.is_dir()]
    assert [p.name for p in folders] == ["demo"]  # Videos/ReelQueue/demo, not demo/demo
    with ctx.open_store() as store:
        first = store.list_jobs()[0].output_path
    assert first.startswith("demo/") and first.count("/") == 1
    (ctx.videos_dir / first).write_bytes(b"video")  # a demo video
    (folders[0] / "manifest-here.json").write_text("{}")  # a machine's record of it
    keep = ctx.videos_dir / "mine.mp4"  # not the demo's: stays
    keep.write_bytes(b"video")
    assert reset_demo(ctx) == 2
    assert not ctx.journal_path.exists() and not folders[0].exists() and keep.exists()


def test_status_json_names_each_jobs_provider_the_routed_one_for_a_routed_job(
        ctx: AppContext, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Issue 34: ``status --json`` names the provider a job is with (text status and
    export did); a routed job's is the candidate it was routed to, not its first."""
    from reelqueue.cli import main as cli_main
    from reelqueue.domain.models import BatchSpec, JobSpec
    from reelqueue.domain.routes import Candidate, Route, RoutePolicy
    from reelqueue.store.sqlite import SqliteStore

    ctx.data_dir.mkdir(parents=True)
    out = tmp_path / "out"
    route = Route(RoutePolicy.ORDER, (Candidate("veo", refused="its parameters"),
                                      Candidate("luma")))
    store = SqliteStore.open(ctx.journal_path, now=1.0)
    try:
        batch = store.create_batch(BatchSpec("b", "sheet.csv", str(out)), 1.0)
        store.add_jobs(batch.id, [
            JobSpec("plain", "a cat", "runway", str(out / "1.mp4"), row_number=2),
            JobSpec("routed", "a dog", "luma", str(out / "2.mp4"), row_number=3,
                    route=route)], 1.0)
    finally:
        store.close()
    assert cli_main.main(["--data-dir", str(ctx.data_dir), "--videos-dir",
                          str(ctx.videos_dir), "status", "--json"]) == 0
    jobs = json.loads(capsys.readouterr().out)["jobs"]
    assert [(j["row"], j["provider"], j["route"]) for j in jobs] == [
        (2, "runway", None), (3, "luma", ["veo", "luma"])]
