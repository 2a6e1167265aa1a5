"""A file the user put at a job's output name is the user's (issue 22): a run leaves it
byte for byte, and the video goes to a free suffixed name chosen at download time, which
the journal (status), the export and the machine's manifest all name."""

from __future__ import annotations

import csv
import hashlib
import json
import sqlite3
from pathlib import Path

import pytest

from tests.cli.test_cli_e2e import mock_process, rq, write_sheet

pytestmark = pytest.mark.integration


def test_a_users_file_at_the_output_name_is_kept_and_the_video_goes_beside_it(
        tmp_path: Path) -> None:
    data = tmp_path / "data"
    with mock_process("--render-seconds-min", "0.1", "--render-seconds-max", "0.3") as url:
        added = rq(data, "accounts", "add", "one", "--provider", "mock", "--base-url", url)
        assert added.returncode == 0, added.stderr
        sheet = write_sheet(tmp_path / "shots.csv", [f"a calm shot number {i}"
                                                     for i in range(3)])
        imported = rq(data, "import", str(sheet), "--provider", "mock")
        assert imported.returncode == 0, imported.stdout + imported.stderr
        folder = next((data / "videos").iterdir())
        db = sqlite3.connect(data / "journal.sqlite3")
        planned = {key: path.rpartition("/")[2] for key, path in db.execute(
            "SELECT job_key, output_path FROM jobs")}
        db.close()
        assert len(planned) == 3
        keys = sorted(planned)
        # After the import, before the run: the user puts their own files at two of the
        # names (one a video, one not), and at the first suffix of one of them too.
        mine = {
            planned[keys[0]]: b"\x00\x00\x00\x18ftypisom" + b"my own edit" * 500,
            planned[keys[1]]: b"notes the user keeps beside the videos\n",
        }
        first_suffix = planned[keys[1]].removesuffix(".mp4") + " (2).mp4"
        mine[first_suffix] = b"an earlier copy the user made by hand\n"
        for name, content in mine.items():
            (folder / name).write_bytes(content)
        run = rq(data, "run", "--no-progress")
        assert run.returncode == 0, run.stdout + run.stderr
        assert "Finished: 3 completed" in run.stdout
    for name, content in mine.items():
        assert (folder / name).read_bytes() == content, f"{name} was changed"
    expected = {
        keys[0]: planned[keys[0]].removesuffix(".mp4") + " (2).mp4",
        keys[1]: planned[keys[1]].removesuffix(".mp4") + " (3).mp4",
        keys[2]: planned[keys[2]],
    }
    # The journal: each job's output path is where its video is, with the recorded hash.
    db = sqlite3.connect(data / "journal.sqlite3")
    rows = {key: (path, sha, part) for key, path, sha, part in db.execute(
        "SELECT job_key, output_path, output_sha256, output_part FROM jobs")}
    db.close()
    for key, name in expected.items():
        path, sha, part = rows[key]
        assert path == f"{folder.name}/{name}", "relative to the videos folder (issue 23)"
        assert hashlib.sha256((folder / name).read_bytes()).hexdigest() == sha
        assert part and part.startswith(f".{name}.") and part.endswith(".part")
    status = json.loads(rq(data, "status", "--json").stdout)
    assert sorted(Path(j["output_path"]).name for j in status["jobs"]) == sorted(
        expected.values())
    # The export names the same files.
    out = tmp_path / "out.csv"
    exported = rq(data, "export", "1", "--format", "csv", str(out))
    assert exported.returncode == 0, exported.stderr
    with out.open(encoding="utf-8-sig", newline="") as handle:
        paths = sorted(Path(row["output_path"]).name for row in csv.DictReader(handle))
    assert paths == sorted(expected.values())
    # The machine's manifest too (written by the run's engine).
    [manifest_file] = folder.glob("manifest-*.json")
    manifest = json.loads(manifest_file.read_text("utf-8"))
    assert {entry["key"]: entry["file"] for entry in manifest["jobs"]} == expected
    doctor = rq(data, "doctor")
    assert doctor.returncode == 0, doctor.stdout + doctor.stderr
    assert not list(folder.glob(".*.part")), "no temporary file left"
