"""``reelqueue --store URL serve`` started while its team database is down waits for it,
as the worker does (tests/team/test_worker_waits.py): it answers on loopback once the
server is back; SIGTERM while it waits ends it with exit 0, the API never started; a
bounded wait gives up with exit 2 (cli/database_wait.py, application/team_wait.py)."""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from tests import pgserver
from tests.proof.harness import REELQUEUE, wait_for
from tests.team.harness import machine_env, new_database, terminate
from tests.team.test_serve_team import TeamServe

pytestmark = pytest.mark.integration

UNREACHABLE = "postgresql://reelqueue@127.0.0.1:1/none"
"""Port 1 on loopback: refused at once, no server needed."""


def alive(serve: TeamServe) -> bool:
    return serve.proc is not None and serve.proc.poll() is None


def waiting_or_gone(serve: TeamServe) -> Callable[[], bool]:
    return lambda: "Waiting for it" in serve.output() or not alive(serve)


@pytest.mark.parametrize(("limit", "waited"), [("0", False), ("1.5", True)])
def test_a_bounded_wait_gives_up_with_exit_2(tmp_path: Path, limit: str,
                                             waited: bool) -> None:
    done = subprocess.run(
        [*REELQUEUE, "--data-dir", str(tmp_path / "data"), "--store", UNREACHABLE, "serve",
         "--listen", "127.0.0.1:0", "--wait-for-database", limit],
        stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=120,
        env=machine_env(tmp_path / "keyring.json"), check=False)
    assert done.returncode == 2, done.stdout + done.stderr
    assert "cannot be reached" in done.stderr
    assert ("Waiting for it (at most 1.5 s" in done.stdout) is waited, done.stdout
    assert "Serving" not in done.stdout


def test_a_serve_started_before_its_database_waits_then_answers(
        tmp_path: Path, own_server: pgserver.Server) -> None:
    url = new_database(own_server.dsn)
    assert own_server.halt().returncode == 0
    stopped = TeamServe("b", tmp_path, url)
    waiting = TeamServe("a", tmp_path, url)
    try:
        for serve in (stopped, waiting):
            serve.launch()
            wait_for(waiting_or_gone(serve), 60, f"serve {serve.name} to wait")
            assert alive(serve), serve.output()
            assert "cannot be reached" in serve.output()
        # SIGTERM while waiting: an orderly stop, the API never started.
        assert terminate(stopped, "serve") == 0, stopped.output()
        assert "Serve stopped while waiting for the team database" in stopped.output()
        assert "Serving" not in stopped.output()

        assert own_server.start().returncode == 0
        waiting.wait_serving(timeout=120)  # tries again 30 s apart at most
        assert "Team database reached after" in waiting.output()
        with waiting.client() as client:
            health = client.get("/v1/health")
        assert health.status_code == 200, health.text
        assert health.json()["journal"] == "writable", health.text
        assert terminate(waiting, "serve") == 0, waiting.output()
    finally:
        stopped.stop()
        waiting.stop()
