"""The Windows and macOS build workflow (issue 36 item 6) parses, and each of its jobs
runs its platform's build script with the frozen smoke test on: the file is never run by
.ci/run (no such host here), so this is what keeps it from rotting unseen."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[2]
WORKFLOW = ROOT / ".github" / "workflows" / "desktops.yml"


def _runs(job: dict[str, object]) -> str:
    steps = job["steps"]
    assert isinstance(steps, list)
    return "\n".join(str(step.get("run", "")) for step in steps if isinstance(step, dict))


def test_the_desktop_workflow_builds_and_smoke_tests_on_windows_and_macos() -> None:
    workflow = yaml.safe_load(WORKFLOW.read_text(encoding="utf-8"))
    jobs = workflow["jobs"]
    assert jobs["windows"]["runs-on"].startswith("windows")
    assert jobs["macos"]["runs-on"].startswith("macos")
    windows, macos = _runs(jobs["windows"]), _runs(jobs["macos"])
    assert "installer\\windows\\build.ps1" in windows and "-NoSmoke" not in windows
    assert "installer/macos/build.sh" in macos and "--no-smoke" not in macos
    # the scripts named exist and hold the smoke test they are run for
    assert "self-test" in (ROOT / "installer" / "windows" / "build.ps1").read_text("utf-8")
    assert "self-test" in (ROOT / "installer" / "macos" / "build.sh").read_text("utf-8")
    assert "unverified" in (ROOT / "docs" / "installer.md").read_text("utf-8").lower()
