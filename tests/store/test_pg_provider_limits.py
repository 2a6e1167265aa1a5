"""Limits and the balance from the provider on PostgreSQL with many connections at once
(issue 32 items 3 and 4): four stores, as four machines would have, claim, send and
finish on one account of capacity 5 whose view allows 2 of its model at once and whose
balance pays for 5 renders. Never more than 2 held at once, exactly 5 started."""

from __future__ import annotations

import threading
import time
from collections import Counter
from pathlib import Path

from reelqueue.domain.account_view import AccountView, Balance, Charging, ModelLimit
from reelqueue.domain.models import AccountSpec, BatchSpec, JobSpec
from reelqueue.store.base import ClaimParams
from reelqueue.store.postgres import PostgresStore
from tests.store.test_postgres_schema import new_schema, schemas  # noqa: F401 (fixture)

CHARGING = {"runway": Charging("create", "credits", 0.01)}


def test_many_connections_never_pass_the_model_limit_nor_the_balance(
    pg_dsn: str, schemas: list[str], tmp_path: Path  # noqa: F811
) -> None:
    schema = new_schema(schemas)
    setup = PostgresStore.open(pg_dsn, now=1, schema=schema)
    now = time.time()
    batch = setup.create_batch(BatchSpec("b", "s.csv", str(tmp_path)), now)
    setup.add_jobs(batch.id, [
        JobSpec(f"k{i}", "p", "runway", str(tmp_path / f"{i}.mp4"),
                params={"model": "gen4.5"}, metadata={"price": 0.6}) for i in range(20)], now)
    setup.add_account(AccountSpec("acct", "runway", 5), now)
    assert setup.put_account_view(AccountView(
        "acct", Balance(300.0, "credits"), (ModelLimit("gen4.5", 2, None),), None, now - 1))
    held: set[int] = set()
    peak = 0
    guard = threading.Lock()
    errors: list[BaseException] = []

    def worker(number: int) -> None:
        nonlocal peak
        store = PostgresStore.open(pg_dsn, now=1, schema=schema)
        try:
            idle = 0
            while idle < 20:
                claim = store.claim_next_job(ClaimParams(
                    "acct", f"inst-{number}", time.time(), 60, charging=CHARGING))
                if claim is None:
                    idle += 1
                    time.sleep(0.005)
                    continue
                idle = 0
                with guard:
                    held.add(claim.job.id)
                    peak = max(peak, len(held))
                at = time.time()
                assert store.mark_submitting(claim.token, f"ct-{claim.job.id}", at)
                assert store.record_submitted(claim.token, f"pj-{claim.job.id}", at)
                time.sleep(0.05)  # the render runs: the other workers claim meanwhile
                assert store.mark_downloading(claim.token, at)
                with guard:
                    held.discard(claim.job.id)
                assert store.mark_completed(claim.token, size=1, sha256="ab" * 32,
                                            cost=None, now=at)
        except BaseException as exc:  # reported by the main thread
            errors.append(exc)
        finally:
            store.close()

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert not errors, errors
    assert peak <= 2, peak
    claimed = Counter(e.job_id for e in setup.ledger() if e.event == "claimed")
    assert len(claimed) == 5 and set(claimed.values()) == {1}, "floor(300 / 60), once each"
    setup.close()
