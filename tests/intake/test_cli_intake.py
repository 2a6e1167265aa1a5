"""``reelqueue import`` and ``reelqueue export`` through their handlers."""

from __future__ import annotations

import argparse
import io
from pathlib import Path

import pytest

from reelqueue.cli import cmd_intake
from reelqueue.cli.context import CliContext
from reelqueue.cli.journal import run_on_journal
from reelqueue.domain.clock import FakeClock
from reelqueue.domain.errors import InputError
from reelqueue.intake import ImportOptions, ImportResult
from reelqueue.store.sqlite import SqliteStore

SHEET = "name,prompt,duration,seed,notes\nfox,a fox,5,1,=1+1\nowl,an owl,-3,2,\nbee,a bee,4,3,\n"


@pytest.fixture
def ctx(tmp_path: Path) -> CliContext:
    return CliContext(data_dir=tmp_path / "data", videos_dir=tmp_path / "videos",
                      out=io.StringIO(), clock=FakeClock())


def run(ctx: CliContext, *argv: str) -> tuple[int, str]:
    parser = argparse.ArgumentParser()
    cmd_intake.register(parser.add_subparsers(dest="command"))
    args = parser.parse_args(argv)
    assert isinstance(ctx.out, io.StringIO)
    ctx.out.seek(0)
    ctx.out.truncate()
    code = int(args.handler(args, ctx))
    return code, ctx.out.getvalue()


def write(tmp_path: Path, text: str = SHEET, name: str = "shots.csv") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def journal_jobs(ctx: CliContext) -> int:
    store = SqliteStore.open(ctx.journal_path, now=ctx.clock.now())
    try:
        return len(store.list_jobs())
    finally:
        store.close()


def test_dry_run_shows_everything_and_writes_nothing(ctx: CliContext, tmp_path: Path) -> None:
    code, out = run(ctx, "import", str(write(tmp_path)), "--dry-run")
    assert code == 0
    assert "Columns: name <- 'name', prompt <- 'prompt', duration <- 'duration'" in out
    assert "Kept for the export only: 'notes'." in out
    assert "row 2: 002_fox.mp4 [mock model=mock-1 duration=5" in out
    assert ("row 3, column 'duration': the duration -3 is negative "
            "(accepted: a number of seconds from 1 to 20)") in out
    assert "Estimate for 2 new jobs" in out and "total: $0.09" in out
    assert "Dry run: nothing was written." in out
    assert not ctx.journal_path.exists()
    assert not ctx.videos_dir.exists()


def test_import_then_reimport(ctx: CliContext, tmp_path: Path) -> None:
    sheet = str(write(tmp_path))
    code, out = run(ctx, "import", sheet)
    assert code == 0
    assert "Created batch 1 'shots': 2 new jobs, 0 already there, 1 row errors." in out
    assert journal_jobs(ctx) == 2
    assert (ctx.videos_dir / "shots").is_dir()  # the folder; the manifest is the engine's
    assert not (ctx.videos_dir / "shots" / "manifest.json").exists()
    code, out = run(ctx, "import", sheet)
    assert code == 0
    assert "Already imported: 2 jobs (nothing to do for them)." in out
    assert "Added to batch 1 'shots': 0 new jobs, 2 already there" in out
    code, out = run(ctx, "import", sheet, "--dry-run")
    assert "(already imported)" in out and "Estimate" not in out


def test_all_or_nothing_refuses_with_exit_2(ctx: CliContext, tmp_path: Path) -> None:
    code, out = run(ctx, "import", str(write(tmp_path)), "--all-or-nothing")
    assert code == 2
    assert "nothing was imported" in out
    assert journal_jobs(ctx) == 0


def test_map_options_are_saved_with_the_batch(ctx: CliContext, tmp_path: Path) -> None:
    sheet = str(write(tmp_path, "Shot,Words,Length\nfox,a fox,5\n"))
    code, out = run(ctx, "import", sheet, "--map", "Words=prompt", "--map", "C=duration",
                    "--map", "Shot=ignore")
    assert code == 0 and "prompt <- 'Words', duration <- 'Length'" in out
    code, out = run(ctx, "import", sheet)  # no --map: the saved overrides apply
    assert code == 0 and "0 new jobs, 1 already there" in out


def test_bad_input_raises_a_known_error(ctx: CliContext, tmp_path: Path) -> None:
    with pytest.raises(InputError, match="no prompt column"):
        run(ctx, "import", str(write(tmp_path, "title,seed\nx,1\n")))
    with pytest.raises(InputError, match="--max-attempts"):
        run(ctx, "import", str(write(tmp_path)), "--max-attempts", "0")
    with pytest.raises(InputError, match="Unknown field"):
        run(ctx, "import", str(write(tmp_path)), "--map", "notes=colour")
    with pytest.raises(InputError, match=r"is 1 MB; the limit is 0 MB"):
        big = write(tmp_path, "prompt\n" + "x" * 1_100_000 + "\n", "big.csv")
        run(ctx, "import", str(big), "--max-file-mb", "0.5")


def test_options_reach_the_plan(ctx: CliContext, tmp_path: Path) -> None:
    sheet = str(write(tmp_path, "prompt\na\n"))
    code, out = run(ctx, "import", sheet, "--model", "mock-2", "--duration", "7",
                    "--aspect-ratio", "9:16", "--resolution", "720p", "--batch-name", "Promo",
                    "--filename-template", "{batch}-{row}", "--output-dir",
                    str(tmp_path / "elsewhere"), "--dry-run")
    assert code == 0
    assert "Promo-2.mp4 [mock model=mock-2 duration=7 aspect_ratio=9:16 resolution=720p]" in out


def test_export_by_name_and_id(ctx: CliContext, tmp_path: Path) -> None:
    run(ctx, "import", str(write(tmp_path)))
    code, out = run(ctx, "export", "shots", "--format", "csv", str(tmp_path / "out.csv"))
    assert code == 0 and "Wrote 2 rows of batch 1" in out
    text = (tmp_path / "out.csv").read_text(encoding="utf-8-sig")
    assert "'=1+1" in text and "QUEUED" in text
    code, out = run(ctx, "export", "1", str(tmp_path / "out.xlsx"))
    assert "(xlsx)" in out and (tmp_path / "out.xlsx").stat().st_size > 0
    with pytest.raises(InputError, match=r"No batch named 'nope'\. Batches: 1 'shots'"):
        run(ctx, "export", "nope", str(tmp_path / "x.csv"))


def test_import_for_run_on_the_runs_session(ctx: CliContext, tmp_path: Path) -> None:
    """``run`` imports on the session it holds (the journal and its lock)."""
    options = ImportOptions(output_root=ctx.videos_dir)

    def import_for_run(opts: ImportOptions) -> ImportResult:
        return run_on_journal(ctx, lambda session: cmd_intake.import_for_run(
            ctx, session, write(tmp_path), opts))

    result = import_for_run(options)
    assert (result.added, len(result.errors)) == (2, 1)
    again = import_for_run(options)
    assert (again.added, again.already_present) == (0, 2)
    with pytest.raises(InputError, match="all-or-nothing"):
        import_for_run(ImportOptions(output_root=ctx.videos_dir, partial=False))
