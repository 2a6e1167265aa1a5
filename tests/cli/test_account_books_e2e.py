"""Issue 32's "Done when", the balance and the tier limits, through real ``reelqueue run``
processes on a Runway fake that keeps the provider's books (tests/cli/runway_books_fake.py,
bodies in the SDK's shapes: tests/fixtures/runway/SOURCE.md).

- Capacity 5 on a tier allowing 2 renders of gen4.5 at once (and 1 of veo3.1): never
  more open at the provider, the user's 5 kept and shown; a re-read of the account
  (``accounts refresh``, from another process while the run goes on) raising gen4.5 to 4
  gives 4 without a restart, veo3.1 keeping its own 1.
- A batch whose cost is twice the balance: creates sent == floor(balance / price) exactly,
  none refused for credits, the rest wait with "credits low" and complete on a second
  account; the same with two ``reelqueue run`` processes on one journal (a team PostgreSQL
  database: each process its own data folder, as two machines, since SQLite's data-folder
  lock admits one ``run``), which connect and claim together.
"""

from __future__ import annotations

import json
import subprocess
import threading
from pathlib import Path
from typing import Any

import pytest

from tests.cli.runway_books_fake import RunwayBooks, rq, rq_args, serve, sheet, until
from tests.proof.harness import child_env
from tests.team.file_keyring import BACKEND, FILE_ENV
from tests.team.harness import drop_database, new_database

pytestmark = [pytest.mark.integration]

KEY = "key_" + "5" * 64


def _env(tmp_path: Path) -> dict[str, str]:
    env = child_env()
    env["PYTHON_KEYRING_BACKEND"] = BACKEND
    env[FILE_ENV] = str(tmp_path / "keyring.json")
    return env


def _add(data: Path, env: dict[str, str], name: str, url: str, capacity: int,
         store: str | None = None) -> None:
    added = rq(data, env, "accounts", "add", name, "--provider", "runway", "--capacity",
               str(capacity), "--base-url", url, "--no-check", stdin=KEY + "\n", store=store)
    assert added.returncode == 0, added.stdout + added.stderr


def _listed(data: Path, env: dict[str, str], name: str) -> dict[str, Any]:
    listed = rq(data, env, "accounts", "list", "--json")
    assert listed.returncode == 0, listed.stderr
    (account,) = [a for a in json.loads(listed.stdout) if a["name"] == name]
    assert isinstance(account, dict)
    return account


def test_tier_limits_hold_and_a_re_read_raises_them_without_a_restart(
        tmp_path: Path) -> None:
    data, env = tmp_path / "data", _env(tmp_path)
    with serve(RunwayBooks(balance=100_000, limits={"gen4.5": 2, "veo3.1": 1},
                           held=True)) as books:
        _add(data, env, "rw", books.url, 5)
        rows = [(f"g{i}", f"a fox {i}", "gen4.5", 5) for i in range(10)]
        rows += [(f"t{i}", f"a hen {i}", "veo3.1", 8) for i in range(3)]
        path = sheet(tmp_path / "s.csv", rows)
        run = subprocess.Popen(rq_args(data, "run", str(path), "--provider", "runway",
                                       "--no-progress"),
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               env=env)
        try:
            # The renders are held: the run fills what the tier allows, then waits.
            until(lambda: books.open_now("gen4.5") == 2 and books.open_now("veo3.1") == 1,
                  run, "2 gen4.5 and 1 veo3.1 open")
            account = _listed(data, env, "rw")
            assert account["limit"] == 5  # the user's setting, kept
            in_force = account["limit_in_force"]
            assert in_force["set"] == 5 and in_force["applied"]
            models = {m["model"]: m for m in in_force["models"]}
            assert models["gen4.5"]["provider_allows"] == 2
            assert models["gen4.5"]["in_force"] == 2
            assert models["veo3.1"]["provider_allows"] == 1
            assert "5 set · provider allows" in in_force["words"], in_force["words"]
            status = rq(data, env, "status", "--json")
            assert status.returncode == 0, status.stderr
            assert "provider allows 2 for gen4.5" in status.stdout, status.stdout

            # The provider raises gen4.5 to 4; the account is read again beside the run.
            with books.lock:
                books.limits["gen4.5"] = 4
                reads = books.organization_reads
            refreshed = rq(data, env, "accounts", "refresh", "rw", "--json")
            assert refreshed.returncode == 0, refreshed.stdout + refreshed.stderr
            assert books.organization_reads == reads + 1  # the fake saw the re-read
            # The view kept by another process wakes the run at once (its journal watch,
            # tests/cli/test_wake_elsewhere_e2e.py): 2 more gen4.5 start while the first 2
            # are still held, veo3.1 keeping its 1.
            until(lambda: books.open_now("gen4.5") == 4, run, "4 gen4.5 open at once")
            assert (books.most_open["gen4.5"], books.most_open["veo3.1"]) == (4, 1)
            books.release()
            out, err = run.communicate(timeout=180)
        finally:
            if run.poll() is None:
                run.kill()
                run.communicate()
        assert run.returncode == 0, out + err
        assert "Finished: 13 completed" in out, out
        assert books.creates == {"gen4.5": 10, "veo3.1": 3}
        assert books.refused == 0
        # never more than the tier allowed: 4 of gen4.5 (after the re-read), 1 of
        # veo3.1, and the user's 5 for the account
        assert books.most_open["gen4.5"] == 4
        assert books.most_open["veo3.1"] == 1
        assert books.most_open_total <= 5
        assert _listed(data, env, "rw")["limit"] == 5


BALANCE = 330  # credits: 5 renders of gen4.5, 5 s at 12 credits/s (60), and 30 over
PAYS_FOR = BALANCE // 60
ROWS = 11  # 660 credits: twice the balance


def test_a_batch_twice_the_balance_sends_what_it_pays_for_and_waits_credits_low(
        tmp_path: Path) -> None:
    data, env = tmp_path / "data", _env(tmp_path)
    with serve(RunwayBooks(balance=BALANCE, limits={"gen4.5": 10})) as first, \
            serve(RunwayBooks(balance=100_000, limits={"gen4.5": 10})) as second:
        _add(data, env, "rw", first.url, 5)
        path = sheet(tmp_path / "s.csv", [(f"r{i}", f"a fox {i}", "gen4.5", 5)
                                          for i in range(ROWS)])
        run = rq(data, env, "run", str(path), "--provider", "runway", "--no-progress")
        # exit 3: the rest wait, and the run says why
        assert run.returncode == 3, run.stdout + run.stderr
        assert f"{ROWS - PAYS_FOR} jobs wait: credits low on rw" in run.stdout, run.stdout
        assert f"Finished: {PAYS_FOR} completed" in run.stdout, run.stdout
        assert first.creates == {"gen4.5": PAYS_FOR} and first.refused == 0
        account = _listed(data, env, "rw")
        assert account["credits"]["low"], account["credits"]
        assert account["credits"]["words"] == "credits low: 30 left, this render needs 60"
        assert account["view"]["balance"] == {"amount": BALANCE, "unit": "credits"}

        # a second account: the jobs waiting complete there, and nothing more is sent to
        # the first
        _add(data, env, "rw2", second.url, 5)
        again = rq(data, env, "run", "--no-progress")
        assert again.returncode == 0, again.stdout + again.stderr
        assert f"Finished: {ROWS} completed, 0 failed" in again.stdout, again.stdout
        assert first.creates == {"gen4.5": PAYS_FOR} and first.refused == 0
        assert second.creates == {"gen4.5": ROWS - PAYS_FOR} and second.refused == 0


def test_a_routed_batch_twice_the_balance_goes_on_to_the_next_candidate(
        tmp_path: Path) -> None:
    data, env = tmp_path / "data", _env(tmp_path)
    with serve(RunwayBooks(balance=BALANCE, limits={"gen4.5": 10})) as books:
        _add(data, env, "rw", books.url, 5)
        added = rq(data, env, "accounts", "add", "m", "--provider", "mock", "--capacity", "3")
        assert added.returncode == 0, added.stdout + added.stderr
        path = tmp_path / "s.csv"  # no model: each candidate's own (Runway's is gen4.5)
        path.write_text("name,prompt,duration\n" + "".join(
            f"r{i},a fox {i},5\n" for i in range(ROWS)), encoding="utf-8")
        run = rq(data, env, "run", str(path), "--route", "runway,mock", "--no-progress")
        assert run.returncode == 0, run.stdout + run.stderr
        assert f"Finished: {ROWS} completed, 0 failed" in run.stdout, run.stdout
        assert books.creates == {"gen4.5": PAYS_FOR} and books.refused == 0
        status = rq(data, env, "status", "--json")
        assert status.returncode == 0, status.stderr
        money = json.loads(status.stdout)["money"]
        assert money["taken_over"] == {"m": {"runway": ROWS - PAYS_FOR}}
        (rw,) = [a for a in json.loads(status.stdout)["accounts"] if a["name"] == "rw"]
        assert rw["credits"]["left"] == BALANCE - PAYS_FOR * 60


def test_two_runs_on_one_team_journal_send_only_what_the_balance_pays_for(
        tmp_path: Path, pg_dsn: str) -> None:
    import psycopg

    env = _env(tmp_path)
    env.pop("REELQUEUE_STORE", None)
    url = new_database(pg_dsn)
    machines = [tmp_path / "one", tmp_path / "two"]
    runs: list[subprocess.Popen[str]] = []
    try:
        with serve(RunwayBooks(balance=BALANCE, limits={"gen4.5": 10})) as books:
            _add(machines[0], env, "rw", books.url, 10, store=url)
            path = sheet(tmp_path / "s.csv", [(f"r{i}", f"a fox {i}", "gen4.5", 5)
                                              for i in range(ROWS)])
            imported = rq(machines[0], env, "import", str(path), "--provider", "runway",
                          store=url)
            assert imported.returncode == 0, imported.stdout + imported.stderr
            # Each process reads the account at connect and claims nothing on it before
            # that read has ended: answered together, they claim together.
            books.readers_together = threading.Barrier(2)
            runs = [subprocess.Popen(rq_args(m, "run", "--no-progress", store=url),
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     text=True, env=env) for m in machines]
            outputs = [r.communicate(timeout=180) for r in runs]
            for run, (out, err) in zip(runs, outputs, strict=True):
                assert run.returncode == 3, out + err
                assert f"{ROWS - PAYS_FOR} jobs wait: credits low on rw" in out, out
            assert books.organization_reads == 2
            assert books.creates == {"gen4.5": PAYS_FOR} and books.refused == 0
        with psycopg.connect(url) as db:
            states = dict(db.execute("SELECT state, count(*) FROM jobs GROUP BY state")
                          .fetchall())
            claims = dict(db.execute("SELECT detail->>'owner', count(*) FROM ledger WHERE "
                                     "event = 'claimed' GROUP BY 1").fetchall())
        assert states == {"COMPLETED": PAYS_FOR, "QUEUED": ROWS - PAYS_FOR}
        # every claim was a create the balance paid for, whichever process made it (the
        # two usually split them 2 and 3)
        assert sum(claims.values()) == PAYS_FOR and len(claims) <= 2, claims
    finally:
        for run in runs:
            if run.poll() is None:
                run.kill()
                run.communicate()
        drop_database(pg_dsn, url)
