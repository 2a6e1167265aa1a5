"""Issue 32: "Update" from another process reaches a running ``reelqueue run`` at once.

A ``run`` whose account waits on "credits low" (its renders held at a Runway fake that
keeps the provider's books: tests/cli/runway_books_fake.py); the balance is topped up at
the fake, and ``reelqueue accounts refresh NAME`` in another process keeps the new view in
the journal. The run must start the renders the balance now pays for without a restart
and without its safety-net pass: that is raised to 600 s here
(``REELQUEUE_TEST_SAFETY_NET_SECONDS``), and the engine's own re-read of the view comes
only after 300 s, so the creates must come well within :data:`WITHIN`. SQLite: the engine
sees another connection's commit by ``PRAGMA data_version`` (``Store.changed_elsewhere``,
about once a second); PostgreSQL: the account view's NOTIFY trigger (schema 14) reaches
the run's listener.
"""

from __future__ import annotations

import json
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from reelqueue.cli.cmd_run import TEST_SAFETY_NET_ENV
from reelqueue.engine.account_views import VIEW_EVERY_SECONDS
from tests.cli.runway_books_fake import RunwayBooks, rq, rq_args, serve, sheet, until
from tests.proof.harness import child_env
from tests.team.file_keyring import BACKEND, FILE_ENV
from tests.team.harness import drop_database, new_database

pytestmark = [pytest.mark.integration]

KEY = "key_" + "7" * 64
BALANCE = 150  # credits: 2 renders of gen4.5, 5 s at 12 credits/s (60), and 30 over
ROWS = 5
# Runway does not say when it charges ("unknown": tests/fixtures/runway/SOURCE.md), so the
# claim counts every render in flight against a balance read later: 300 credits read with
# the 2 held renders running pay for the 3 renders left, exactly.
TOP_UP = 270
SAFETY_NET = 600.0
WITHIN = 120.0
"""The longest the creates may take after the refresh: far more than the second or so
they need, far less than the safety net or the engine's own re-read of the view."""
assert min(SAFETY_NET, VIEW_EVERY_SECONDS) > WITHIN


@pytest.fixture(params=["sqlite", "postgresql"])
def journal(request: pytest.FixtureRequest) -> Iterator[str | None]:
    """None: the data folder's SQLite journal; else a fresh team database's address."""
    if request.param == "sqlite":
        yield None
        return
    pg_dsn: str = request.getfixturevalue("pg_dsn")
    url = new_database(pg_dsn)
    try:
        yield url
    finally:
        drop_database(pg_dsn, url)


def _listed(data: Path, env: dict[str, str], name: str, store: str | None
            ) -> dict[str, Any]:
    listed = rq(data, env, "accounts", "list", "--json", store=store)
    assert listed.returncode == 0, listed.stderr
    (account,) = [a for a in json.loads(listed.stdout) if a["name"] == name]
    assert isinstance(account, dict)
    return account


def _soon(check: Callable[[], bool], run: subprocess.Popen[str], what: str) -> float:
    """Wait for ``check`` while ``run`` lives, at most :data:`WITHIN`; the seconds it took."""
    started = time.monotonic()
    while not check():
        if run.poll() is not None:
            out, err = run.communicate()
            raise AssertionError(f"run ended before {what}: {out}{err}")
        waited = time.monotonic() - started
        assert waited < WITHIN, f"not within {WITHIN:.0f} s: {what}"
        time.sleep(0.02)
    return time.monotonic() - started


def test_a_refresh_in_another_process_resumes_a_run_waiting_on_credits_low(
        tmp_path: Path, journal: str | None) -> None:
    data = tmp_path / "data"
    env = child_env()
    env["PYTHON_KEYRING_BACKEND"] = BACKEND
    env[FILE_ENV] = str(tmp_path / "keyring.json")
    env[TEST_SAFETY_NET_ENV] = str(SAFETY_NET)
    env.pop("REELQUEUE_STORE", None)
    with serve(RunwayBooks(balance=BALANCE, limits={"gen4.5": 10}, held=True)) as books:
        added = rq(data, env, "accounts", "add", "rw", "--provider", "runway", "--capacity",
                   "5", "--base-url", books.url, "--no-check", stdin=KEY + "\n",
                   store=journal)
        assert added.returncode == 0, added.stdout + added.stderr
        path = sheet(tmp_path / "s.csv", [(f"r{i}", f"a fox {i}", "gen4.5", 5)
                                          for i in range(ROWS)])
        run = subprocess.Popen(rq_args(data, "run", str(path), "--provider", "runway",
                                       "--no-progress", store=journal),
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               env=env)
        try:
            # Two renders run (held, polled: the pass that claimed them has long ended,
            # refused the third for credits, and nothing wakes the pump any more).
            until(lambda: books.creates["gen4.5"] == 2 and len(books.polls) == 2
                  and min(books.polls.values()) >= 2, run, "2 renders polled")
            credits = _listed(data, env, "rw", journal)["credits"]
            assert credits["low"], credits
            assert credits["words"] == "credits low: 30 left, this render needs 60"
            assert books.creates == {"gen4.5": 2}

            with books.lock:
                books.balance += TOP_UP
                reads = books.organization_reads
            refreshed = rq(data, env, "accounts", "refresh", "rw", "--json", store=journal)
            assert refreshed.returncode == 0, refreshed.stdout + refreshed.stderr
            assert books.organization_reads == reads + 1  # read by the refresh, not the run
            took = _soon(lambda: books.creates["gen4.5"] == ROWS, run,
                         f"the {ROWS - 2} renders the top-up pays for created")
            print(f"creates after the refresh came in {took:.2f} s")  # the figure
            books.release()
            out, err = run.communicate(timeout=180)
        finally:
            if run.poll() is None:
                run.kill()
                run.communicate()
    assert run.returncode == 0, out + err
    assert f"Finished: {ROWS} completed" in out, out
    assert books.creates == {"gen4.5": ROWS} and books.refused == 0
    assert books.balance == BALANCE + TOP_UP - ROWS * 60
