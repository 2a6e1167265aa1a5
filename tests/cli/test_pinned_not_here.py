"""Rows pinned to an account not configured here (issue 34, N1): imported with a warning
naming the account and the rows (never refused), and the waiting jobs say why they wait in
``status`` and when ``run`` stops."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from tests.cli.test_cli_e2e import mock_process, rq

pytestmark = pytest.mark.integration

WORDS = "pinned to account studio-x, which is not configured here"


def pinned_sheet(path: Path) -> Path:
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["name", "prompt", "duration", "account"])
        for i, account in enumerate(["", "studio-x", "studio-x", "m"]):
            writer.writerow([f"shot{i}", f"a calm shot {i}", 4, account])
    return path


def test_rows_pinned_to_an_unknown_account_are_said_imported_and_wait_with_a_reason(
        tmp_path: Path) -> None:
    data = tmp_path / "data"
    sheet = pinned_sheet(tmp_path / "pins.csv")
    with mock_process("--render-seconds-min", "0.05", "--render-seconds-max", "0.1") as url:
        added = rq(data, "accounts", "add", "m", "--provider", "mock", "--no-check",
                   "--base-url", url)
        assert added.returncode == 0, added.stderr
        dry = rq(data, "import", "--dry-run", str(sheet))
        assert dry.returncode == 0, dry.stdout + dry.stderr
        said = " ".join(dry.stdout.split())
        assert f"Warning: Rows 3, 4: {WORDS}; they are imported and wait" in said, said
        assert "m, which" not in said, "a configured account is no warning"
        run = rq(data, "run", str(sheet), "--no-progress")
        out = " ".join((run.stdout + run.stderr).split())
        assert f"Rows 3, 4: {WORDS}" in out, out
        assert f"2 jobs {WORDS}" in out, "run ends saying why the rest waits"
    status = " ".join(rq(data, "status").stdout.split())
    assert f"waiting: {WORDS} (2 jobs;" in status, status
    assert "2 queued" in status and "2 completed" in status, status
