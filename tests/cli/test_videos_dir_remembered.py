"""Issue 34 item 5: a data folder remembers its videos folder. ``run --videos-dir X`` once,
then ``doctor`` (and every command, and the window, which take their folders from the
same place) without the flag looks for the files under X (it reported every finished file
missing under the default folder); an explicit flag still wins; a remembered folder that
cannot be used is refused with what to do."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from reelqueue.cli import main as cli_main
from tests.cli.test_cli_e2e import mock_process, write_sheet

pytestmark = pytest.mark.integration

VIDEOS_DIR_FILE = "videos-folder.txt"  # cli/context.py's name for it


def rq(data: Path, home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """A command without ``--videos-dir`` unless ``args`` gives it; HOME is a folder of
    the test, so the default videos folder is empty."""
    env = {**os.environ, "HOME": str(home), "XDG_VIDEOS_DIR": str(home / "Videos")}
    return subprocess.run([sys.executable, "-m", "reelqueue", "--data-dir", str(data), *args],
                          capture_output=True, text=True, timeout=120, env=env, check=False)


def test_doctor_finds_the_files_of_run_videos_dir_without_the_flag(tmp_path: Path) -> None:
    data, home, videos = tmp_path / "data", tmp_path / "home", tmp_path / "elsewhere"
    home.mkdir()
    with mock_process("--render-seconds-min", "0.05", "--render-seconds-max", "0.1") as url:
        added = rq(data, home, "accounts", "add", "m", "--provider", "mock", "--base-url", url)
        assert added.returncode == 0, added.stderr
        sheet = write_sheet(tmp_path / "shots.csv", ["a calm shot", "a quiet shot"])
        run = rq(data, home, "--videos-dir", str(videos), "run", str(sheet), "--no-progress")
        assert run.returncode == 0, run.stdout + run.stderr
        assert "Finished: 2 completed" in run.stdout
    assert len(list(videos.rglob("*.mp4"))) == 2

    doctor = rq(data, home, "doctor", "--json")  # no --videos-dir
    assert doctor.returncode == 0, doctor.stdout + doctor.stderr
    assert json.loads(doctor.stdout)["ok"] is True

    # An explicit flag still wins (and is remembered from then on).
    other = tmp_path / "other"
    elsewhere = rq(data, home, "--videos-dir", str(other), "doctor", "--json")
    assert elsewhere.returncode == 1, elsewhere.stdout  # the files are not under it
    assert (data / VIDEOS_DIR_FILE).read_text(encoding="utf-8").strip() == str(other)


@pytest.mark.parametrize(("content", "word"), [
    (b"relative/videos\n", "is not an absolute path"),
    (b"\xff\xfe/not-utf8", "is not UTF-8 text"),
    (b"/tmp/a\x1b[2Jb", "control characters"),
    (b"/" + b"x" * 20_000, "longer than"),
    (b"", "is empty"),
])
def test_a_remembered_folder_that_cannot_be_used_is_refused_in_words(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], content: bytes,
        word: str) -> None:
    data = tmp_path / "data"
    data.mkdir()
    (data / VIDEOS_DIR_FILE).write_bytes(content)
    assert cli_main.main(["--data-dir", str(data), "status"]) == 2
    err = capsys.readouterr().err
    assert word in err and "--videos-dir" in err and "Traceback" not in err
    # An explicit folder wins over the unusable one, and replaces it.
    videos = tmp_path / "videos"
    assert cli_main.main(["--data-dir", str(data), "--videos-dir", str(videos),
                          "status"]) == 0
    assert cli_main.main(["--data-dir", str(data), "status"]) == 0


def test_a_remembered_file_in_place_of_a_folder_is_refused(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data, blocker = tmp_path / "data", tmp_path / "a-file"
    data.mkdir()
    blocker.write_text("x")
    (data / VIDEOS_DIR_FILE).write_text(f"{blocker}\n", encoding="utf-8")
    assert cli_main.main(["--data-dir", str(data), "doctor"]) == 2
    assert "is not a folder" in capsys.readouterr().err
