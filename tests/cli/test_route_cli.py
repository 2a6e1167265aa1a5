"""``reelqueue import`` and ``run`` with routes (issue 24): ``--route``, ``--route-policy``,
``--tolerance``, ``--route-on-policy``, the preview of each routed row's candidates and the
worst case. The imports that write a journal check keys and the batch's saved settings
only: the job's ``route`` column is the store's part of issue 24."""

from __future__ import annotations

import argparse
import io
import re
from pathlib import Path

import openpyxl
import pytest

from reelqueue.cli import cmd_intake, cmd_run
from reelqueue.cli.context import CliContext
from reelqueue.domain.clock import FakeClock
from reelqueue.domain.errors import InputError
from reelqueue.store.sqlite import SqliteStore

SHEET = ("prompt,providers,duration,aspect ratio\n"
         "a cat on a boat,veo|runway|luma,7,\n"
         "a dog,runway,5,\n"
         "wide,veo|luma,7,21:9\n"
         "square,veo|kling,7,4:3\n")


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


def test_the_preview_shows_each_candidate_its_price_and_the_worst_case(
        ctx: CliContext, tmp_path: Path) -> None:
    code, out = run(ctx, "import", str(write(tmp_path)), "--dry-run", "--route-policy",
                    "cheapest", "--tolerance", "nearest-duration")
    assert code == 0
    assert "row 2: 002_a cat on a boat.mp4 [luma model=ray-3.2 duration=5" in out
    assert ("      route (cheapest, tolerance nearest-duration):\n"
            "        1. luma: $0.30 (duration 7 -> 5)\n"
            "        2. runway: $0.84\n"
            "        3. veo: $3.20 (duration 7 -> 8)\n") in out
    assert ("        1. luma: $0.30 (duration 7 -> 5)\n"
            "        left out: veo: column 'aspect ratio': 21:9 is not offered by this "
            "provider (accepted: one of 16:9, 9:16)\n") in out
    assert ("row 5, column 'providers': no provider of the route veo|kling can take this "
            "row") in out
    assert "or a wider tolerance (nearest)" in out
    assert "  total: $1.20\n" in out
    assert ("  worst case: $4.10 (2 routed jobs on the dearest provider of each route; the "
            "total above counts each on its first)") in out
    assert "Dry run: nothing was written." in out
    # Without routed rows there is no worst-case line, and the preview is as before.
    code, out = run(ctx, "import", str(write(tmp_path, "prompt,provider\na,runway\n",
                                             "plain.csv")), "--dry-run")
    assert "worst case" not in out and "route (" not in out


def test_a_batch_route_for_rows_without_a_provider(ctx: CliContext, tmp_path: Path) -> None:
    sheet = write(tmp_path, "prompt,provider\na cat,\na dog,runway\n", "batch.csv")
    code, out = run(ctx, "import", str(sheet), "--dry-run", "--route", "veo, luma",
                    "--route-on-policy", "--duration", "8")
    assert code == 0
    assert ("      route (order, tolerance exact, moves on after a content-policy "
            "refusal):\n        1. veo: $3.20\n") in out
    assert "left out: luma: column '(default duration)': 8 seconds is not offered" in out


@pytest.mark.parametrize(("argv", "words"), [
    (("--route-policy", "quickest"),
     "--route-policy 'quickest': use one of order, cheapest, fastest, spread"),
    (("--tolerance", "loose"),
     "--tolerance 'loose': use one of exact, nearest-duration, nearest"),
    (("--route", "veo"), "--route: The route names one provider"),
    (("--route", "|,;"), "--route: The route '|,;' names no provider"),
    (("--route", "veo,nope,rnway"),
     "The route names 'nope', 'rnway', which are not providers. Providers: fal, kling"),
    (("--route", "veo,runway", "--filename-template", "{provider}_{row}"),
     "uses {provider}, but this batch routes (veo|runway)"),
])
def test_bad_route_options_are_refused_with_what_is_accepted(
        ctx: CliContext, tmp_path: Path, argv: tuple[str, ...], words: str) -> None:
    with pytest.raises(InputError, match=re.escape(words)):
        run(ctx, "import", str(write(tmp_path)), "--dry-run", *argv)


def test_a_reimport_reuses_the_saved_route_settings(ctx: CliContext, tmp_path: Path) -> None:
    book = openpyxl.Workbook()
    sheet = book.active
    assert sheet is not None
    for row in (["prompt", "provider", "seconds"], ["a cat", "", 7], ["a dog", "veo|luma", 7],
                ["a cow", "runway", 5]):
        sheet.append(row)
    path = tmp_path / "promo.xlsx"
    book.save(path)
    code, out = run(ctx, "import", str(path), "--route", "veo,runway", "--route-policy",
                    "cheapest", "--tolerance", "nearest-duration")
    assert code == 0 and "3 new jobs" in out
    store = SqliteStore.open(ctx.journal_path, now=ctx.clock.now())
    try:
        (batch,) = store.list_batches()
        intake = batch.settings["intake"]
        jobs = {job.row_number: job for job in store.list_jobs()}
    finally:
        store.close()
    assert (intake["route"], intake["route_policy"], intake["tolerance"],
            intake["route_on_policy"]) == (["veo", "runway"], "cheapest", "nearest-duration",
                                           False)
    # The journal has each job on its best candidate (runway $0.84 < veo $3.20 at 8 s).
    assert (jobs[2].provider, jobs[3].provider, jobs[4].provider) == ("runway", "luma",
                                                                      "runway")
    # Without route options the saved ones apply: the same keys, nothing new.
    code, out = run(ctx, "import", str(path))
    assert code == 0 and "0 new jobs, 3 already there" in out
    code, out = run(ctx, "import", str(path), "--dry-run", "--preview-rows", "3")
    assert "route (cheapest, tolerance nearest-duration)" in out
    # Other route settings make the routed rows new jobs (their keys hash the policy).
    code, out = run(ctx, "import", str(path), "--dry-run", "--route", "veo,runway",
                    "--tolerance", "nearest-duration")
    assert "Already imported: 1 jobs" in out


def test_the_journal_keeps_each_routed_jobs_route(ctx: CliContext, tmp_path: Path) -> None:
    code, _out = run(ctx, "import", str(write(tmp_path)), "--route-policy", "cheapest",
                     "--tolerance", "nearest-duration")
    assert code == 0
    store = SqliteStore.open(ctx.journal_path, now=ctx.clock.now())
    try:
        jobs = {job.row_number: job for job in store.list_jobs()}
    finally:
        store.close()
    route = jobs[2].route
    assert route is not None and jobs[3].route is None
    assert route.providers() == ["luma", "runway", "veo"] and jobs[2].provider == "luma"
    assert dict(route.candidates[2].changed) == {"duration": (7, 8)}
    assert dict(route.left_out) == {}
    assert dict(jobs[4].route.left_out if jobs[4].route else {}) == {
        "veo": "column 'aspect ratio': 21:9 is not offered by this provider (accepted: one "
               "of 16:9, 9:16)"}


def test_run_takes_the_same_route_options() -> None:
    parser = argparse.ArgumentParser()
    cmd_run.register(parser.add_subparsers(dest="command"))
    args = parser.parse_args(["run", "sheet.csv", "--route", "veo,runway", "--route-policy",
                              "spread", "--tolerance", "nearest", "--route-on-policy"])
    assert cmd_intake.route_options(args) == {
        "route": ("veo", "runway"), "route_policy": "spread", "tolerance": "nearest",
        "route_on_policy": True}
    plain = parser.parse_args(["run", "sheet.csv"])
    assert cmd_intake.route_options(plain) == {
        "route": (), "route_policy": "order", "tolerance": "exact", "route_on_policy": False}
