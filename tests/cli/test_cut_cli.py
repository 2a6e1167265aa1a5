"""``reelqueue run --takes 2`` on the mock, then ``reelqueue cut`` (issue 35 items 1, 5, 6):
each take is a clip of its own prompt and seed, the picks join by stream copy, a row
without a pick is a gap (re-encoded, said first), and nothing is cut before a pick."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import av
import opentimelineio as otio
import pytest

from tests.cli.test_cli_e2e import mock_process, rq, write_sheet

pytestmark = pytest.mark.integration


def _seconds(path: Path) -> float:
    with av.open(str(path)) as container:
        stream = container.streams.video[0]
        assert stream.duration is not None and stream.time_base is not None
        return float(stream.duration * stream.time_base)


def test_takes_render_distinct_clips_and_the_picks_are_cut(tmp_path: Path) -> None:
    data = tmp_path / "data"
    with mock_process("--render-seconds-min", "0.05", "--render-seconds-max", "0.1",
                      "--clip-dir", str(tmp_path / "clips")) as url:
        added = rq(data, "accounts", "add", "m", "--provider", "mock", "--capacity", "4",
                   "--base-url", url)
        assert added.returncode == 0, added.stderr
        sheet = write_sheet(tmp_path / "trailer.csv", ["a fox in the snow", "a city at night"])
        run = rq(data, "run", str(sheet), "--takes", "2", "--no-progress")
        assert run.returncode == 0, run.stdout + run.stderr
    jobs = json.loads(rq(data, "status", "--json").stdout)["jobs"]
    assert len(jobs) == 4 and {j["state"] for j in jobs} == {"COMPLETED"}
    # Four different clips: two prompts, two seeds each (drawn, recorded in the job).
    videos = data / "videos"
    assert len({hashlib.sha256((videos / j["output_path"]).read_bytes()).hexdigest()
                for j in jobs}) == 4
    ordered = sorted(jobs, key=lambda j: (j["row"], j["id"]))
    first_take_row2, _second_take_row2, first_take_row3, _ = ordered
    nothing = rq(data, "cut", "trailer")
    assert nothing.returncode == 2 and "No take of this batch is picked yet" in nothing.stderr
    # Both rows picked: alike clips, a stream copy.
    both = rq(data, "cut", "trailer", "--pick", str(first_take_row2["id"]),
              "--pick", str(first_take_row3["id"]))
    assert both.returncode == 0, both.stdout + both.stderr
    assert "stream copy" in both.stdout
    cut_dir = data / "videos" / "trailer" / "cut"
    first = cut_dir / "trailer-cut-1.mp4"
    assert _seconds(first) == pytest.approx(2.0, abs=1 / 24)
    clips = list(otio.adapters.read_from_file(str(first.with_suffix(".otio"))).find_clips())
    assert [c.media_reference.target_url for c in clips] == [
        "../" + Path(first_take_row2["output_path"]).name,
        "../" + Path(first_take_row3["output_path"]).name]
    # One row picked: the other is a gap of its duration (4 s), black, re-encoded.
    one = rq(data, "cut", "trailer", "--pick", str(first_take_row2["id"]))
    assert one.returncode == 0, one.stdout + one.stderr
    assert "re-encoded with libx264" in one.stdout and "1 gap" in one.stdout
    second = cut_dir / "trailer-cut-2.mp4"
    assert _seconds(second) == pytest.approx(1.0 + 4.0, abs=1 / 24)
    assert {p.suffix for p in cut_dir.iterdir()} == {".mp4", ".otio", ".xml", ".edl"}
    # The review's picks, with no --pick: review set, then cut (issue 35: review, then cut).
    for take in (_second_take_row2, first_take_row3):
        chosen = rq(data, "review", "set", str(take["id"]), "pick")
        assert chosen.returncode == 0, chosen.stdout + chosen.stderr
    reviewed = rq(data, "cut", "trailer")
    assert reviewed.returncode == 0, reviewed.stdout + reviewed.stderr
    third = cut_dir / "trailer-cut-3.mp4"
    clips = list(otio.adapters.read_from_file(str(third.with_suffix(".otio"))).find_clips())
    assert [c.media_reference.target_url for c in clips] == [
        "../" + Path(_second_take_row2["output_path"]).name,
        "../" + Path(first_take_row3["output_path"]).name]
