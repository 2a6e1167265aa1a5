"""The web dashboard on a team database (issue 37): two ``reelqueue worker`` machines and
one ``reelqueue serve --paused`` (it renders nothing itself) on one PostgreSQL database;
the page shows both workers with their heartbeats, and the jobs each one renders.

Needs PostgreSQL (``team_url``, tests/pgserver.py) and chromium (tests/web/browser.py);
skips without either unless they are required.
"""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Any

import pytest

from tests.proof.harness import MockProcess, wait_for
from tests.team.file_keyring import write_keys
from tests.team.harness import Worker, bound_keys, read, team_cli
from tests.team.test_serve_team import TeamServe
from tests.web.browser import start_chromium

pytestmark = [pytest.mark.integration, pytest.mark.slow]

ACCOUNT = "team-mock"
KEY = "sk-web-team-0123456789"
WAIT = 90.0


def page(driver: Any, script: str) -> Any:
    return driver.execute_script(script)


def test_the_page_shows_both_workers_renders_and_heartbeats(team_url: str,
                                                             tmp_path: Path) -> None:
    with MockProcess(tmp_path / "mock", "--render-seconds-min", "0.5",
                     "--render-seconds-max", "1.0") as mock:
        admin = tmp_path / "admin"
        admin.mkdir()
        added = team_cli(admin, team_url, "accounts", "add", ACCOUNT, "--provider", "mock",
                         "--capacity", "4", "--base-url", mock.url, "--no-check",
                         keyring_file=admin / "keyring.json", stdin=KEY + "\n")
        assert added.returncode == 0, added.stdout + added.stderr
        serve = TeamServe("serve", tmp_path, team_url, "--paused")
        workers = [Worker(name, tmp_path, team_url, "--no-progress", "--lease-seconds", "4")
                   for name in ("w1", "w2")]
        for machine in (serve, *workers):
            write_keys(machine.keyring_file, bound_keys(team_url, {ACCOUNT: KEY}))
        driver = None
        try:
            serve.start()
            for worker in workers:
                worker.start()
            for worker in workers:
                worker.wait_running()
            token = serve.make_token("wall", "read")
            driver = start_chromium(serve.cert, tmp_path / "downloads")
            driver.get(serve.url + "/")
            driver.find_element("id", "token").send_keys(token)
            driver.find_element("css selector", "#sign-in-form button").click()
            wait_for(lambda: page(driver, "return document.getElementById('live')"
                                          ".textContent") == "Live", WAIT, "the stream")
            pids = {w.proc.pid for w in workers if w.proc is not None}
            submitter = serve.make_token("script", "submit")
            with serve.client(submitter) as client:
                for i in range(12):
                    answer = client.post("/v1/jobs", json={
                        "prompt": f"team shot {i} [[mock:render_seconds=2]]"})
                    assert answer.status_code == 201, answer.text
            rendering: set[str] = set()

            def both_render() -> bool:
                labels = page(driver, """return [...document.querySelectorAll(
                    '#jobs td.machine')].map((c) => c.textContent)""")
                rendering.update(label for label in labels if "pid" in label)
                return all(any(f"pid {pid}" in label for label in rendering)
                           for pid in pids)

            wait_for(both_render, WAIT, "jobs rendered by both workers on the page",
                     interval=0.2)
            rows = page(driver, """return [...document.querySelectorAll('#machines tbody tr')]
                .map((r) => [r.querySelector('th').textContent,
                             r.querySelector('.machine-state').textContent,
                             r.querySelector('.heartbeat').textContent])""")
            for pid in pids:
                (row,) = [r for r in rows if f"pid {pid}" in r[0]]
                assert row[1] == "running" and "when read" in row[2], row
            instances = {int(p) for (p,) in read(team_url, "SELECT pid FROM instances")}
            assert pids <= instances
            assert page(driver, "return document.querySelectorAll('button.action')"
                                ".length") == 0  # a read token
        finally:
            if driver is not None:
                with contextlib.suppress(Exception):
                    driver.quit()
            for worker in workers:
                worker.stop_quietly()
            serve.stop()
