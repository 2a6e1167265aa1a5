"""``reelqueue instances`` (issue 21): the machines sharing the queue, silence judged on
the database server's clock against each instance's lease; the local journal lists its
one machine."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from reelqueue import __version__
from reelqueue.store.lockfile import DataDirLock
from tests.proof.harness import REELQUEUE, child_env
from tests.team.harness import Worker, read, settle, team_cli

pytestmark = [pytest.mark.integration]


def instances(folder: Path, url: str) -> list[dict[str, Any]]:
    done = team_cli(folder, url, "instances", "--json", keyring_file=folder / "kr.json")
    assert done.returncode == 0, done.stdout + done.stderr
    return list(json.loads(done.stdout))


def test_a_sigkilled_worker_is_shown_gone_once_its_lease_ran_out(tmp_path: Path,
                                                                  team_url: str) -> None:
    viewer = tmp_path / "viewer"
    viewer.mkdir()
    alive = Worker("machine-alive", tmp_path, team_url, "--no-progress",
                   "--lease-seconds", "3")
    killed = Worker("machine-killed", tmp_path, team_url, "--no-progress",
                    "--lease-seconds", "3")
    try:
        alive.start().wait_running()
        killed.start().wait_running()
        rows = instances(viewer, team_url)
        assert sorted(r["state"] for r in rows) == ["running", "running"]
        assert alive.proc is not None and killed.proc is not None
        killed_pid = killed.proc.pid
        killed.kill()
        # Gone once its last heartbeat is older than its lease on the server's clock
        # (a wait bounded by that lease: the registry's own rows say when).
        settle(lambda: [r["state"] for r in instances(viewer, team_url)
                        if r["pid"] == killed_pid] == ["silent"],
               60, "the killed worker to read gone")
        rows = instances(viewer, team_url)
        by_pid = {r["pid"]: r for r in rows}
        gone, running = by_pid[killed.proc.pid], by_pid[alive.proc.pid]
        assert gone["gone"] and gone["silent_for"] > gone["lease_seconds"] == 3
        assert running["state"] == "running" and not running["gone"]
        assert running["silent_for"] <= 3 and running["version"] == __version__
        assert running["clock_offset"] is not None and abs(running["clock_offset"]) < 5
        # The server's own clock decided: the registry's heartbeat is the server's time.
        server_silence = read(team_url, "SELECT extract(epoch FROM clock_timestamp()) - "
                              "heartbeat_at FROM instances WHERE pid = %s",
                              killed_pid)[0][0]
        assert float(server_silence) > 3
        text = team_cli(viewer, team_url, "instances", keyring_file=viewer / "kr.json")
        assert text.returncode == 0, text.stderr
        assert "1 running, 1 gone" in text.stdout
        assert "GONE: not heard from for" in text.stdout
        assert "renders are taken over" in text.stdout
        assert alive.terminate() == 0
        stopped = [r for r in instances(viewer, team_url) if r["pid"] == alive.proc.pid]
        assert [r["state"] for r in stopped] == ["stopped"]
    finally:
        alive.stop_quietly()
        killed.stop_quietly()


def test_the_local_journal_lists_its_one_machine(tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir()

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([*REELQUEUE, "--data-dir", str(data), "instances", *args],
                              capture_output=True, text=True, timeout=120,
                              env=child_env(), check=False)

    done = run("--json")
    assert done.returncode == 0, done.stderr
    (row,) = json.loads(done.stdout)
    assert (row["state"], row["this_machine"], row["version"]) == ("stopped", True,
                                                                   __version__)
    held = DataDirLock(data)
    held.acquire()  # another ReelQueue runs on this folder
    try:
        text = run()
    finally:
        held.release()
    assert text.returncode == 0, text.stderr
    assert "on the local journal" in text.stdout and "running (holds this data folder)" \
        in text.stdout
