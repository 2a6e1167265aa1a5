"""``reelqueue import SHEET`` and ``run SHEET`` when no row of the sheet is valid: exit 2
(the code of every refused input), the row errors kept, and a last line that says no row
was valid and how many were refused; a sheet with some valid rows still imports them and
exits 0, reporting the rows it left out."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.cli.test_cli_e2e import rq

pytestmark = pytest.mark.integration

ALL_INVALID = ("prompt,duration\n"
               "a fox in the snow,abc\n"
               "a lighthouse at dusk,-5\n"
               ",4\n")
PARTLY_VALID = ("prompt,duration\n"
                "a fox in the snow,abc\n"
                "a lighthouse at dusk,4\n")


def write(tmp_path: Path, text: str) -> Path:
    sheet = tmp_path / "shots.csv"
    sheet.write_text(text, encoding="utf-8")
    return sheet


def jobs_in(data: Path) -> list[object]:
    status = rq(data, "status", "--json")
    assert status.returncode == 0, status.stdout + status.stderr
    jobs: list[object] = json.loads(status.stdout)["jobs"]
    return jobs


def test_an_import_with_no_valid_row_exits_2_saying_how_many_were_refused(
        tmp_path: Path) -> None:
    data = tmp_path / "data"
    done = rq(data, "import", str(write(tmp_path, ALL_INVALID)))
    assert done.returncode == 2, done.stdout + done.stderr
    assert "Errors: 3 in 3 row(s); these rows are not imported:" in done.stdout
    assert "row 2, column 'duration': 'abc' is not a number of seconds" in done.stdout
    assert "row 4, column 'prompt': the prompt is empty" in done.stdout
    assert ("No row of shots.csv is valid (3 rows refused); nothing was imported."
            in done.stdout), done.stdout
    assert jobs_in(data) == []


def test_a_dry_run_with_no_valid_row_exits_2_too(tmp_path: Path) -> None:
    done = rq(tmp_path / "data", "import", "--dry-run", str(write(tmp_path, ALL_INVALID)))
    assert done.returncode == 2, done.stdout + done.stderr
    assert "No row of shots.csv is valid (3 rows refused)" in done.stdout
    assert "Dry run: nothing was written." not in done.stdout


def test_an_import_with_some_valid_rows_exits_0_and_reports_the_others(
        tmp_path: Path) -> None:
    data = tmp_path / "data"
    done = rq(data, "import", str(write(tmp_path, PARTLY_VALID)))
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Errors: 1 in 1 row(s); these rows are not imported:" in done.stdout
    assert "1 new jobs, 0 already there, 1 row errors" in done.stdout
    assert "is valid" not in done.stdout
    assert len(jobs_in(data)) == 1


def test_run_with_no_valid_row_exits_2_before_rendering_anything(tmp_path: Path) -> None:
    data = tmp_path / "data"
    added = rq(data, "accounts", "add", "m", "--provider", "mock", "--no-check")
    assert added.returncode == 0, added.stdout + added.stderr
    done = rq(data, "run", str(write(tmp_path, ALL_INVALID)), "--no-progress", timeout=60)
    assert done.returncode == 2, done.stdout + done.stderr
    assert "row 3, column 'duration': the duration -5 is negative" in done.stdout
    assert ("reelqueue: No row of shots.csv is valid (3 rows refused); nothing was "
            "imported." in done.stderr), done.stderr
    assert "Finished:" not in done.stdout  # the engine never started
    assert jobs_in(data) == []
