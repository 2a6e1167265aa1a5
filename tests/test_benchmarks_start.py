"""Every benchmark script still starts as its docstring says (``python benchmarks/X.py``).

The figures in docs/benchmarks.md come from these scripts; one that no longer imports
(bench_gallery.py imported ``benchmarks._common``, which only resolves from a package
run, and failed on its documented command line) silently stops being re-measurable.
``--help`` imports everything a script imports at the top and parses nothing else.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCRIPTS = sorted(p for p in (ROOT / "benchmarks").glob("*.py") if not p.name.startswith("_"))


def test_the_benchmarks_folder_has_scripts() -> None:
    assert len(SCRIPTS) >= 10, SCRIPTS


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: p.name)
def test_a_benchmark_starts_from_its_documented_command_line(script: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "app"), "QT_QPA_PLATFORM": "offscreen"}
    result = subprocess.run([sys.executable, str(script), "--help"], capture_output=True,
                            text=True, env=env, timeout=120, cwd=ROOT)
    assert result.returncode == 0, result.stderr[-2000:]
    assert "usage:" in result.stdout
