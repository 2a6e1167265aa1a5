"""The import benchmark still runs (on a small sheet; the real figures are in docs)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_benchmark_runs_on_a_small_sheet() -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "app")}
    result = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "bench_import.py"), "--rows", "300",
         "--runs", "1"],
        check=True, capture_output=True, text=True, env=env, timeout=300,
    )
    assert "ReelQueue plan_import + apply_import (CSV)" in result.stdout
    assert "x baseline" in result.stdout


@pytest.mark.slow
def test_hostile_benchmark_runs_and_stays_under_the_bound() -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "app")}
    result = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "bench_import_hostile.py"), "--skip-large"],
        check=True, capture_output=True, text=True, env=env, timeout=600,
    )
    assert "| sparse.xlsx |" in result.stdout and "refused:" in result.stdout
    assert "under the documented bound of 512 MB" in result.stdout, result.stdout
