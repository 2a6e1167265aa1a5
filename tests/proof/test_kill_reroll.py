"""The re-roll's spend cap survives a kill (issue 35 item 4), through the real command line.

A 5-row sheet with 3 takes a row renders; 4 rows are rejected whole and one is picked;
``reelqueue review reroll --per-row 3 --yes`` quotes 12 takes and their price, and that
amount becomes the re-roll's cap. ``reelqueue run`` is SIGKILLed while the re-roll renders
(some creates sent, some renders in flight), restarted on the same folder and left to
drain. The re-roll's spend never passes its confirmed cap (read after the kill and at the
end), and its job count and spend are what the quote said: no take rendered twice. The
mock provider is its own process, so renders go on while the runner is dead.
"""

from __future__ import annotations

import csv
import json
import time
from pathlib import Path

import pytest

from reelqueue.domain.review import Decision, ReviewChange
from reelqueue.store.spend import SPEND_EVENT
from tests.proof.harness import (
    DRAIN_TIMEOUT,
    MockProcess,
    Runner,
    add_account,
    cli,
    journal,
    record_figures,
    wait_for,
)

pytestmark = [pytest.mark.slow, pytest.mark.integration]

ROWS, TAKES, PER_ROW = 5, 3, 3
PRICE = 0.04  # mock-1 at $0.01 a second, 4 s
RUN_ARGS = ["--no-progress", "--retry-base", "0.2", "--retry-cap", "2"]


def write_sheet(path: Path) -> None:
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["name", "prompt", "duration", "repeat"])
        for i in range(ROWS):
            writer.writerow([f"shot{i}", f"shot {i} [[mock:render_seconds=1.2]]", 4, TAKES])


def reroll_spend(data: Path, batch_id: int) -> tuple[float, float, int]:
    """(spend written for the re-roll's jobs, its cap, how many of its jobs sent a create)."""
    with journal(data) as store:
        batch = store.get_batch(batch_id)
        assert batch is not None
        ids = {j.id for j in store.list_jobs(batch_id=batch_id)}
        spent = sum(float(e.detail.get("usd", 0)) for e in store.ledger()
                    if e.event == SPEND_EVENT and e.job_id in ids)
        sent = sum(1 for j in store.list_jobs(batch_id=batch_id) if j.client_token)
        return spent, float(batch.settings["max_spend"]), sent


def test_a_kill_during_a_reroll_never_passes_its_confirmed_cap(tmp_path: Path) -> None:
    data, videos = tmp_path / "data", tmp_path / "videos"
    sheet = tmp_path / "takes.csv"
    write_sheet(sheet)
    with MockProcess(tmp_path / "mock") as mock:
        add_account(data, "acct-a", mock.url, 4)
        first = Runner(data, videos, [str(sheet), *RUN_ARGS], tmp_path / "run-1.log")
        assert first.wait() == 0, first.output()
        assert f"Finished: {ROWS * TAKES} completed" in first.output()

        # The review: rows 1-4 rejected whole, row 5 picked (the store's own writes).
        with journal(data) as store:
            jobs = store.list_jobs(batch_id=1)
            assert len(jobs) == ROWS * TAKES
            for job in jobs:
                last_row = job.row_number == max(j.row_number or 0 for j in jobs)
                decision = Decision.PICK if last_row and "#" not in job.job_key else (
                    Decision.NONE if last_row else Decision.REJECT)
                if decision is not Decision.NONE:
                    store.set_review(ReviewChange(job.id, decision, None, 0, "proof",
                                                  time.time()))
        listed = json.loads(cli(data, "review", "1", "--json").stdout)
        assert listed["rows_to_reroll"] == ROWS - 1 and listed["reviewed"] == 13

        quoted = cli(data, "review", "reroll", "1", "--per-row", str(PER_ROW), "--yes",
                     "--json", videos=videos)
        assert quoted.returncode == 0, quoted.stdout + quoted.stderr
        done = json.loads(quoted.stdout)
        expected_jobs = (ROWS - 1) * PER_ROW
        assert done["jobs"] == len(done["job_ids"]) == expected_jobs
        assert done["estimated_usd"] == pytest.approx(expected_jobs * PRICE)
        assert done["cap"] == done["estimated_usd"]
        reroll_batch = int(done["reroll_batch_id"])

        second = Runner(data, videos, RUN_ARGS, tmp_path / "run-2.log", )
        third: Runner | None = None
        try:
            def some_sent() -> bool:
                assert second.alive(), f"the runner exited early:\n{second.output()}"
                _spent, _cap, sent = reroll_spend(data, reroll_batch)
                return sent >= 5

            wait_for(some_sent, DRAIN_TIMEOUT, "the re-roll's first creates", interval=0.05)
            second.kill()  # SIGKILL: no cleanup code runs
            spent, cap, sent = reroll_spend(data, reroll_batch)
            at_kill = {"sent_at_kill": sent, "spent_at_kill": round(spent, 6)}
            assert sent < expected_jobs, "the kill should land mid re-roll"
            assert spent <= cap + 1e-9, (spent, cap)

            third = Runner(data, videos, RUN_ARGS, tmp_path / "run-3.log")
            code = third.wait()
        finally:
            for runner in (second, third):
                if runner is not None:
                    runner.kill()
        spent, cap, sent = reroll_spend(data, reroll_batch)
        assert spent <= cap + 1e-9, (spent, cap)
        assert spent == pytest.approx(done["estimated_usd"]), "spend equals the quote"
        creates = mock.creates_by_key()
        with journal(data) as store:
            again = store.list_jobs(batch_id=reroll_batch)
            absent = {e.job_id for e in store.ledger() if e.event == "reconciled_absent"
                      and e.job_id in {j.id for j in again}}
            assert len(again) == expected_jobs
            if absent:
                # A create in flight at the kill that never reached the provider: proven
                # absent, created again; its first intent's spend stays (money fails
                # closed), so the confirmed cap holds the last take back, said, never
                # passed: the run ends stalled on the cap.
                assert code != 0 and "spend cap reached" in third.output(), third.output()
                waiting = [j for j in again if str(j.state) != "COMPLETED"]
                assert waiting and all(str(j.state) in ("QUEUED", "RETRY_WAIT")
                                       for j in waiting), [(j.id, str(j.state)) for j in again]
            else:
                assert code == 0, third.output()
                assert all(str(j.state) == "COMPLETED" for j in again), [
                    (j.id, str(j.state)) for j in again]
            assert all(creates.get(j.job_key, 0) <= 1 for j in again), "a take rendered twice"
    record_figures("kill_reroll", {
        "quoted_jobs": expected_jobs, "quoted_usd": done["estimated_usd"], "cap": cap,
        **at_kill, "spent_at_end": round(spent, 6),
        "creates": sum(creates.get(j.job_key, 0) for j in again),
        "proven_absent_at_kill": len(absent)})
    listed = json.loads(cli(data, "review", "1", "--json").stdout)
    # "total" counts finished takes: a take the cap held back (the absent branch) waits.
    finished = sum(1 for j in again if str(j.state) == "COMPLETED")
    assert finished == expected_jobs - len(absent)
    assert listed["total"] == ROWS * TAKES + finished
    assert [len(r["takes"]) for r in listed["rows"]] == [TAKES + PER_ROW] * (ROWS - 1) + [TAKES]
