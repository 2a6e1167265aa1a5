"""``reelqueue review`` (issue 35 item 3): the takes by row, a decision with its words, a
failed take refused plainly, a bad decision word, and a re-roll that asks before paying
(nothing written without a terminal or --yes)."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from reelqueue.domain.models import BatchSpec, JobSpec
from reelqueue.store.lockfile import make_private_dir
from reelqueue.store.sqlite import SqliteStore
from tests.cli.test_cli_e2e import rq

pytestmark = pytest.mark.integration


def _journal(data: Path) -> list[int]:
    make_private_dir(data)
    store = SqliteStore.open(data / "journal.sqlite3", now=time.time())
    try:
        batch = store.create_batch(BatchSpec("shots", "s.csv", "shots"), time.time())
        ids = list(store.add_jobs(batch.id, [
            JobSpec(k, "a shot", "mock", f"shots/{i}.mp4", row_number=2, name="one")
            for i, k in enumerate(["a", "a#2"])], time.time()).job_ids)
        store.cancel_jobs([ids[1]], time.time())
        return ids
    finally:
        store.close()


def test_review_set_and_show(tmp_path: Path) -> None:
    data = tmp_path / "data"
    ids = _journal(data)
    picked = rq(data, "review", "set", str(ids[0]), "pick", "--rating", "4", "--by", "ana")
    assert picked.returncode == 0, picked.stderr
    assert picked.stdout.strip() == f"Take {ids[0]}: picked, 4/5."
    refused = rq(data, "review", "set", str(ids[1]), "reject")
    assert refused.returncode == 2 and "nothing to pick or reject" in refused.stderr
    assert "Traceback" not in refused.stderr
    bad = rq(data, "review", "set", str(ids[0]), "maybe")
    assert bad.returncode == 2 and "say pick, reject or clear" in bad.stderr
    text = rq(data, "review", "shots").stdout
    assert "Batch 1 (shots): 0 of 0 reviewed" in text
    assert f"take {ids[0]}" in text and "picked, 4/5  by ana" in text
    listed = json.loads(rq(data, "review", "1", "--json").stdout)
    (row,) = listed["rows"]
    assert row["picked"] == ids[0] and row["takes"][0]["decided_by"] == "ana"
    reroll = rq(data, "review", "reroll", "1")
    assert reroll.returncode == 0 and "no row to re-roll" in reroll.stdout
