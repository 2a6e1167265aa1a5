"""Spend caps from the command line, with the mock provider in its own process."""

from __future__ import annotations

import json
from pathlib import Path

import httpx2
import pytest

from tests.cli.test_cli_e2e import mock_process, rq, write_sheet

pytestmark = pytest.mark.integration


def test_run_with_max_spend_starts_five_renders_then_batch_cap_none_finishes(
    tmp_path: Path,
) -> None:
    data = tmp_path / "data"
    with mock_process("--render-seconds-min", "0.05", "--render-seconds-max", "0.1") as url:
        added = rq(data, "accounts", "add", "one", "--provider", "mock", "--capacity", "3",
                   "--base-url", url)
        assert added.returncode == 0, added.stderr
        # 4 s on mock-1 at $0.01/s: $0.04 a render; a cap of 5 renders
        sheet = write_sheet(tmp_path / "shots.csv", [f"a calm shot {i}" for i in range(8)])
        run = rq(data, "run", str(sheet), "--no-progress", "--max-spend", "0.2")
        assert "Spend cap of batch 1: $0.20." in run.stdout, run.stdout + run.stderr
        assert "spend cap reached" in run.stdout + run.stderr
        # The advice fits the reason: raise the cap, not "fix the account".
        assert "reelqueue batch cap" in run.stdout and "accounts test" not in run.stdout
        assert "3 jobs wait because of a spend cap" in run.stdout
        assert httpx2.get(f"{url}/_mock/counters").json()["creates_total"] == 5
        status = json.loads(rq(data, "status", "--json").stdout)
        assert status["by_state"] == {"COMPLETED": 5, "QUEUED": 3}
        (batch,) = status["spend"]["batches"]
        assert batch["cap"] == 0.2 and batch["waiting_for_cap"] == 3
        assert batch["spent"] == pytest.approx(0.2)
        done = [j for j in status["jobs"] if j["state"] == "COMPLETED"]
        assert all(j["price"] == 0.04 and j["cost"] == 0.04 for j in done)
        text = rq(data, "status").stdout
        assert "Batch 1 (shots): spent $0.20 of $0.20, cap reached: 3 waiting" in text

        raised = rq(data, "batch", "cap", "1", "none")
        assert raised.returncode == 0 and "no spend cap" in raised.stdout, raised.stderr
        again = rq(data, "run", "--no-progress")
        assert again.returncode == 0, again.stdout + again.stderr
        assert httpx2.get(f"{url}/_mock/counters").json()["creates_total"] == 8
    status = json.loads(rq(data, "status", "--json").stdout)
    assert status["by_state"] == {"COMPLETED": 8}


def test_a_cap_is_refused_unless_it_is_an_amount_or_none(tmp_path: Path) -> None:
    data = tmp_path / "data"
    sheet = write_sheet(tmp_path / "s.csv", ["a shot"])
    bad = rq(data, "run", str(sheet), "--no-progress", "--max-spend", "lots")
    assert bad.returncode != 0 and "'lots' is neither" in bad.stderr
    # Refused before anything was read or written: no journal, nothing imported.
    assert not (data / "journal.sqlite3").exists()
    assert "new jobs" not in bad.stdout, bad.stdout
