"""What the command line may change while another ReelQueue (the window, ``run``) holds
the data folder (issue 34, N6-N13 d): one rule, said in the same words by the commands it
refuses and the ones it lets through."""

from __future__ import annotations

from pathlib import Path

import pytest

from reelqueue.store.lockfile import DataDirLock
from tests.cli.test_cli_e2e import rq, write_sheet

pytestmark = pytest.mark.integration


def test_a_held_folder_refuses_and_admits_by_one_rule_named_truly(tmp_path: Path) -> None:
    data = tmp_path / "data"
    sheet = write_sheet(tmp_path / "s.csv", ["a calm shot"])
    imported = rq(data, "import", str(sheet))
    assert imported.returncode == 0, imported.stdout + imported.stderr
    held = DataDirLock(data)  # as the open window holds it
    held.acquire()
    try:
        added = rq(data, "accounts", "add", "one", "--provider", "mock", "--capacity", "2")
        capped = rq(data, "batch", "cap", "1", "5")
    finally:
        held.release()
    assert added.returncode != 0
    refusal = " ".join(added.stderr.split())
    # Says who may hold it (the window as well as 'run') and what can be done meanwhile.
    assert "the window" in refusal and "reelqueue run" in refusal, refusal
    assert "batch cap" in refusal and "--daily-cap" in refusal, refusal
    assert capped.returncode == 0, capped.stderr
    said = " ".join(capped.stdout.split())
    # Its promise names the window too, not only 'run'.
    assert "the window" in said and "within 30 seconds" in said, said
