"""The frozen Linux build, smoke-tested: installer/linux/smoke-test.sh under pytest.

Slow (it builds the one-folder app with PyInstaller, about a minute on two cores, then runs
the frozen program's self-test, keyring and window checks), so it runs only when
REELQUEUE_BUILD_FROZEN=1, as CI sets it. Inside scripts/ci-secret-service.sh the script
uses that Secret Service; otherwise it starts its own.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "installer" / "linux" / "smoke-test.sh"

pytestmark = [pytest.mark.slow, pytest.mark.integration]


@pytest.mark.timeout(1800)
def test_frozen_app_builds_and_passes_its_smoke_test() -> None:
    if os.environ.get("REELQUEUE_BUILD_FROZEN") != "1":
        pytest.skip("REELQUEUE_BUILD_FROZEN=1 builds the frozen app and smoke-tests it")
    if not sys.platform.startswith("linux"):
        pytest.skip("the smoke test is the Linux build's (installer/README.md for the others)")
    env = dict(os.environ)
    if sys.prefix != sys.base_prefix:  # build with this virtual environment's packages
        env["VIRTUAL_ENV"] = sys.prefix
        env["PATH"] = f"{Path(sys.prefix) / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    result = subprocess.run(["bash", str(SCRIPT)], cwd=ROOT, env=env, capture_output=True,
                            text=True, timeout=1700, check=False)
    report = ROOT / "build" / "installer-smoke.md"
    summary = report.read_text(encoding="utf-8") if report.exists() else "(no report)"
    assert result.returncode == 0, (
        f"smoke test failed (exit {result.returncode})\n{summary}\n--- stdout (end)\n"
        f"{result.stdout[-6000:]}\n--- stderr (end)\n{result.stderr[-4000:]}")
    print(summary)
