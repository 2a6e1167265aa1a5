"""The command line end to end, with the mock provider in its own process."""

from __future__ import annotations

import contextlib
import csv
import json
import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx2
import pytest

pytestmark = pytest.mark.integration

CLI = [sys.executable, "-m", "reelqueue"]


def rq(data: Path, *args: str, stdin: str = "", timeout: float = 120,
       videos: Path | None = None) -> subprocess.CompletedProcess[str]:
    cmd = [*CLI, "--data-dir", str(data), "--videos-dir", str(videos or data / "videos"), *args]
    return subprocess.run(cmd, input=stdin, capture_output=True, text=True, timeout=timeout,
                          check=False)


@contextlib.contextmanager
def mock_process(*options: str) -> Iterator[str]:
    proc = subprocess.Popen([*CLI, "mock-provider", "--port", "0", *options],
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert "listening on" in line, line
        yield line.strip().rsplit(" ", 1)[-1]
    finally:
        proc.terminate()
        proc.wait(10)
        if proc.stdout:
            proc.stdout.close()


def write_sheet(path: Path, prompts: list[str]) -> Path:
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["name", "prompt", "duration"])
        for i, prompt in enumerate(prompts):
            writer.writerow([f"shot{i}", prompt, 4])
    return path


def test_run_a_sheet_end_to_end(tmp_path: Path) -> None:
    data = tmp_path / "data"
    with mock_process("--render-seconds-min", "0.1", "--render-seconds-max", "0.4") as url:
        for name, capacity in (("one", "2"), ("two", "3")):
            added = rq(data, "accounts", "add", name, "--provider", "mock", "--capacity",
                       capacity, "--base-url", url)
            assert added.returncode == 0, added.stderr
            assert "key accepted" in added.stdout
        sheet = write_sheet(tmp_path / "shots.csv",
                            [f"a calm shot number {i}" for i in range(12)]
                            + ["refused [[mock:content_policy]]"])
        run = rq(data, "run", str(sheet), "--no-progress")
        assert run.returncode == 0, run.stdout + run.stderr
        assert ": 13 new jobs, 0 already there, 0 row errors" in run.stdout
        assert "Finished: 12 completed, 1 failed, 0 cancelled." in run.stdout
        counters = httpx2.get(f"{url}/_mock/counters").json()
        assert counters["creates_total"] == 13
        again = rq(data, "run", str(sheet), "--no-progress")
        assert ": 0 new jobs, 13 already there" in again.stdout
        assert httpx2.get(f"{url}/_mock/counters").json()["creates_total"] == 13
    status = json.loads(rq(data, "status", "--json").stdout)
    assert status["by_state"] == {"COMPLETED": 12, "FAILED": 1}
    failed = [j for j in status["jobs"] if j["state"] == "FAILED"]
    assert failed[0]["error_label"] == "content policy" and failed[0]["attempts"] == 1
    for job in status["jobs"]:
        if job["state"] == "COMPLETED":
            # relative to the videos folder (issue 23)
            assert (data / "videos" / job["output_path"]).stat().st_size > 0
            # one machine: the file is on this one (issue 15, where a video is)
            assert job["output_host"] == socket.gethostname()
        else:
            assert job["output_host"] is None
    text = rq(data, "status", "--limit", "100").stdout
    assert text.count(f"(on {socket.gethostname()})") == 12, text
    doctor = rq(data, "doctor")
    assert doctor.returncode == 0, doctor.stdout
    journal = data / "journal.sqlite3"
    assert oct(journal.stat().st_mode & 0o777) == "0o600"


def test_a_corrupt_journal_is_refused_and_left_untouched(tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    journal = data / "journal.sqlite3"
    journal.write_bytes(b"this is not a database\n" * 10)
    before = journal.read_bytes()
    result = rq(data, "status")
    assert result.returncode == 2
    assert "not a ReelQueue journal" in result.stderr
    assert journal.read_bytes() == before


def test_a_foreign_sqlite_file_is_refused(tmp_path: Path) -> None:
    import sqlite3

    data = tmp_path / "data"
    data.mkdir()
    db = sqlite3.connect(data / "journal.sqlite3")
    db.execute("CREATE TABLE stuff (x)")
    db.commit()
    db.close()
    result = rq(data, "doctor")
    assert result.returncode == 2 and "not a ReelQueue journal" in result.stderr


def test_sheet_without_prompt_column_imports_nothing(tmp_path: Path) -> None:
    data = tmp_path / "data"
    sheet = tmp_path / "bad.csv"
    sheet.write_text("title,seconds\nhello,4\n", encoding="utf-8")
    assert rq(data, "accounts", "add", "m", "--provider", "mock", "--no-check").returncode == 0
    result = rq(data, "run", str(sheet), "--no-progress")
    assert result.returncode == 2
    assert "prompt" in result.stderr.lower()
    status = json.loads(rq(data, "status", "--json").stdout)
    assert status["jobs"] == []


@pytest.mark.skipif(os.geteuid() == 0 if hasattr(os, "geteuid") else True,
                    reason="root can write anywhere; checked with a file in the way instead")
def test_unwritable_output_folder_is_refused_before_start(tmp_path: Path) -> None:
    data = tmp_path / "data"
    locked = tmp_path / "locked"
    locked.mkdir(mode=0o500)
    sheet = write_sheet(tmp_path / "s.csv", ["a shot"])
    assert rq(data, "accounts", "add", "m", "--provider", "mock", "--no-check").returncode == 0
    result = rq(data, "run", str(sheet), "--no-progress", videos=locked)
    assert result.returncode == 2 and "cannot be written" in result.stderr


def test_an_output_folder_blocked_by_a_file_is_refused(tmp_path: Path) -> None:
    data = tmp_path / "data"
    blocker = tmp_path / "videos"
    blocker.write_text("a file where the folder should be")
    sheet = write_sheet(tmp_path / "s.csv", ["a shot"])
    assert rq(data, "accounts", "add", "m", "--provider", "mock", "--no-check").returncode == 0
    result = rq(data, "run", str(sheet), "--no-progress", videos=blocker / "sub")
    assert result.returncode == 2, result.stdout + result.stderr
    # Refused at import (the batch folder cannot be made under a file), saying why; the
    # old check ("... or 'not' in stderr") passed on any message with "not" in it.
    assert f"The output folder {blocker / 'sub'}" in result.stderr, result.stderr
    assert "cannot be created (Not a directory)" in result.stderr, result.stderr
    assert "nothing was imported" in result.stderr, result.stderr
    assert json.loads(rq(data, "status", "--json").stdout)["jobs"] == []


def test_a_second_instance_on_the_same_folder_is_refused(tmp_path: Path) -> None:
    from reelqueue.store.lockfile import DataDirLock

    data = tmp_path / "data"
    with DataDirLock(data):
        result = rq(data, "accounts", "add", "m", "--provider", "mock", "--no-check")
    assert result.returncode == 2
    assert "Another ReelQueue" in result.stderr
    assert rq(data, "accounts", "add", "m", "--provider", "mock", "--no-check").returncode == 0


def test_a_grown_lock_file_is_read_no_further_than_a_pid(tmp_path: Path) -> None:
    """The lock file names its holder's pid; one grown by something else (64 MiB here)
    is not read whole to say who holds the folder."""
    from reelqueue.domain.errors import DataDirLocked
    from reelqueue.store.lockfile import DataDirLock

    data = tmp_path / "data"
    with DataDirLock(data) as held:
        with held.path.open("r+b") as handle:
            handle.write(b"4242" + b"7" * (64 << 20))
        with pytest.raises(DataDirLocked) as refused:
            DataDirLock(data).acquire()
    assert "(pid 42427777777777777777:" in str(refused.value)


def test_key_is_never_taken_from_argv(tmp_path: Path) -> None:
    result = rq(tmp_path, "accounts", "add", "x", "--provider", "mock", "--key", "secret")
    assert result.returncode == 2 and "unrecognized arguments" in result.stderr


def test_budget_stops_claiming(tmp_path: Path) -> None:
    data = tmp_path / "data"
    with mock_process("--render-seconds-min", "1.5", "--render-seconds-max", "1.5") as url:
        assert rq(data, "accounts", "add", "m", "--provider", "mock", "--capacity", "1",
                  "--base-url", url).returncode == 0
        sheet = write_sheet(tmp_path / "s.csv", [f"shot {i}" for i in range(5)])
        result = rq(data, "run", str(sheet), "--no-progress", "--budget-seconds", "0.5")
    assert result.returncode == 4, result.stdout + result.stderr
    assert "Time budget reached" in result.stdout
    status = json.loads(rq(data, "status", "--json").stdout)
    assert status["by_state"].get("COMPLETED", 0) >= 1
    assert status["by_state"].get("QUEUED", 0) >= 3
