"""Benchmark: job cycles per second through the SQLite store, against raw sqlite3.

    python benchmarks/bench_store.py [--cycles 300] [--rounds 5]

One cycle is a job's whole life on the journal: ``claim_next_job`` -> ``mark_submitting``
-> ``record_submitted`` -> ``mark_downloading`` -> ``mark_completed``: five write
transactions, five ledger rows. The baseline is a hand-written ``sqlite3`` loop doing the
same work on the same schema at the same durability (WAL, ``synchronous=FULL`` except for
the claim and the switch to downloading, which the store commits without fsync,
``BEGIN IMMEDIATE`` per transaction, the same number of transactions and ledger inserts,
the claim counting the account's live jobs inside its transaction, the claimed row read
back), without the store's layers (row objects, JSON details, the account lookup of each
fenced write). Only the choice of the next job uses the store's own query text.

Two places are measured: the journal's folder on a real disk (every commit waits for
fsync, as in production) and ``/dev/shm`` (memory: fsync costs nothing, so what is left
is the CPU cost of each layer). Rounds alternate store and baseline (and which of the two
goes first), so a busy machine slows both alike; each figure is the median over the
rounds, and every round is printed. Target: the store does at
least 0.8x the baseline's cycles per second on disk.
"""

from __future__ import annotations

import argparse
import json
import sqlite3
import tempfile
import time
import uuid
from pathlib import Path

from _common import NOW, machine_line, median, print_table

from reelqueue.domain.models import AccountSpec, BatchSpec, JobSpec
from reelqueue.store.base import ClaimParams
from reelqueue.store.queries import named_queries
from reelqueue.store.sqlite import SqliteStore

LIVE = "('CLAIMED', 'SUBMITTING', 'RENDERING', 'DOWNLOADING')"
# The one statement not written out here: which job to claim is a query-plan question
# (three index seeks), not a layer cost, so the baseline asks it the store's way.
NEXT_CLAIMABLE = named_queries()["next_claimable"]


def specs(folder: Path, count: int) -> list[JobSpec]:
    return [JobSpec(job_key=f"k{i:06d}", prompt=f"a red fox at sunrise #{i}", provider="mock",
                    output_path=str(folder / f"{i:06d}.mp4"), params={"duration": 5},
                    row_number=i + 2, name=f"clip {i}") for i in range(count)]


def store_cycles(folder: Path, cycles: int) -> float:
    """Seconds for ``cycles`` job lives through SqliteStore."""
    store = SqliteStore.open(folder / "store.sqlite3", now=NOW)
    try:
        batch = store.create_batch(BatchSpec("bench", "bench.csv", str(folder)), NOW)
        store.add_jobs(batch.id, specs(folder, cycles), NOW)
        store.add_account(AccountSpec("acct", "mock", 4), NOW)
        params = ClaimParams("acct", "bench-instance", NOW, 60.0)
        started = time.perf_counter()
        for _ in range(cycles):
            claim = store.claim_next_job(params)
            assert claim is not None
            token = claim.token
            assert store.mark_submitting(token, uuid.uuid4().hex, NOW)
            assert store.record_submitted(token, f"pj-{token.job_id}", NOW)
            assert store.mark_downloading(token, NOW)
            assert store.mark_completed(token, size=1000, sha256="ab" * 32, cost=0.05, now=NOW)
        return time.perf_counter() - started
    finally:
        store.close()


def _ledger(db: sqlite3.Connection, event: str, job_id: int, token: str,
            detail: dict[str, object]) -> None:
    db.execute("INSERT INTO ledger (at, event, job_id, account, claim_token, detail) "
               "VALUES (?, ?, ?, 'acct', ?, ?)", (NOW, event, job_id, token, json.dumps(detail)))


def _fenced(db: sqlite3.Connection, sql: str, args: tuple[object, ...], event: str,
            job_id: int, token: str, detail: dict[str, object]) -> None:
    db.execute("BEGIN IMMEDIATE")
    changed = db.execute(sql, args).rowcount
    assert changed == 1
    _ledger(db, event, job_id, token, detail)
    db.execute("COMMIT")


def raw_cycles(folder: Path, cycles: int) -> float:
    """Seconds for ``cycles`` job lives by hand-written SQL on the same schema."""
    path = folder / "raw.sqlite3"
    store = SqliteStore.open(path, now=NOW)  # the same schema, jobs and account
    batch = store.create_batch(BatchSpec("bench", "bench.csv", str(folder)), NOW)
    store.add_jobs(batch.id, specs(folder, cycles), NOW)
    store.add_account(AccountSpec("acct", "mock", 4), NOW)
    store.close()
    db = sqlite3.connect(str(path), isolation_level=None)
    try:
        db.execute("PRAGMA busy_timeout = 10000")
        db.execute("PRAGMA journal_mode = WAL")
        db.execute("PRAGMA synchronous = FULL")
        db.execute("PRAGMA foreign_keys = ON")
        started = time.perf_counter()
        for _ in range(cycles):
            token = uuid.uuid4().hex
            # Same durability per step as the store: the claim and the switch to
            # downloading commit without fsync (synchronous=NORMAL), the rest with it.
            db.execute("PRAGMA synchronous = NORMAL")
            db.execute("BEGIN IMMEDIATE")
            provider, capacity = db.execute(
                "SELECT provider, capacity FROM accounts WHERE name = 'acct' AND enabled = 1"
            ).fetchone()
            live = db.execute(f"SELECT COUNT(*) FROM jobs WHERE account = 'acct' "
                              f"AND state IN {LIVE}").fetchone()[0]
            assert live < capacity
            # No spend cap here: creates allowed, no batch skipped (the query's
            # parameters since the caps; the store counts the batches only when a cap refuses).
            job_id = db.execute(NEXT_CLAIMABLE, {"provider": provider, "now": NOW,
                                                 "account": "acct", "creates": 1,
                                                 "skip_batches": "[]", "skip_models": "[]",
                                                 "default_model": None}).fetchone()[0]
            db.execute(
                "UPDATE jobs SET state = 'CLAIMED', account = 'acct', claim_token = ?, "
                "lease_owner = 'bench-instance', lease_until = ?, attempts = attempts + 1, "
                "started_at = COALESCE(started_at, ?), updated_at = ? "
                "WHERE id = ? AND state IN ('QUEUED', 'RETRY_WAIT')",
                (token, NOW + 60, NOW, NOW, job_id))
            row = db.execute("SELECT * FROM jobs WHERE id = ?", (job_id,)).fetchone()
            _ledger(db, "claimed", job_id, token, {"owner": "bench-instance",
                                                   "attempt": row[12]})
            db.execute("COMMIT")
            db.execute("PRAGMA synchronous = FULL")
            client_token = uuid.uuid4().hex
            _fenced(db, "UPDATE jobs SET state = 'SUBMITTING', client_token = ?, updated_at = ?"
                    " WHERE id = ? AND claim_token = ? AND state = 'CLAIMED'"
                    " AND provider_job_id IS NULL", (client_token, NOW, job_id, token),
                    "submitting", job_id, token, {"client_token": client_token})
            _fenced(db, "UPDATE jobs SET state = 'RENDERING', provider_job_id = ?, "
                    "sub_status = 'submitted', updated_at = ? WHERE id = ? AND claim_token = ?"
                    " AND state = 'SUBMITTING'", (f"pj-{job_id}", NOW, job_id, token),
                    "submitted", job_id, token, {"provider_job_id": f"pj-{job_id}"})
            db.execute("PRAGMA synchronous = NORMAL")
            _fenced(db, "UPDATE jobs SET state = 'DOWNLOADING', updated_at = ? WHERE id = ? "
                    "AND claim_token = ? AND state = 'RENDERING'", (NOW, job_id, token),
                    "downloading", job_id, token, {})
            db.execute("PRAGMA synchronous = FULL")
            _fenced(db, "UPDATE jobs SET state = 'COMPLETED', output_size = 1000, "
                    "output_sha256 = ?, cost = 0.05, progress = 1.0, finished_at = ?, "
                    "updated_at = ?, claim_token = NULL, lease_owner = NULL, lease_until = NULL"
                    " WHERE id = ? AND claim_token = ? AND state = 'DOWNLOADING'",
                    ("ab" * 32, NOW, NOW, job_id, token), "completed", job_id, token,
                    {"size": 1000, "sha256": "ab" * 32})
        return time.perf_counter() - started
    finally:
        db.close()


def measure(where: Path, cycles: int, rounds: int) -> tuple[list[float], list[float]]:
    """Cycles per second of each round (store, raw) in folder ``where``; the order of the
    two alternates, so neither always runs right after the other."""
    store_rates: list[float] = []
    raw_rates: list[float] = []
    runs = [(store_cycles, store_rates), (raw_cycles, raw_rates)]
    for n in range(rounds):
        for run, rates in runs if n % 2 == 0 else runs[::-1]:
            with tempfile.TemporaryDirectory(dir=where) as scratch:
                rates.append(cycles / run(Path(scratch), cycles))
    return store_rates, raw_rates


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cycles", type=int, default=300, help="job lives per round (disk)")
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--disk-dir", type=Path, default=Path(tempfile.gettempdir()))
    args = parser.parse_args()
    print(machine_line())
    places = [("disk (fsync)", args.disk_dir, args.cycles)]
    if Path("/dev/shm").is_dir():
        places.append(("/dev/shm (no fsync cost)", Path("/dev/shm"), args.cycles * 5))
    table = [("where", "cycles/round", "store cycles/s", "raw cycles/s", "store/raw",
              "store rounds", "raw rounds")]
    for label, where, cycles in places:
        store_rates, raw_rates = measure(where, cycles, args.rounds)
        store_rate, raw_rate = median(store_rates), median(raw_rates)
        table.append((label, str(cycles), f"{store_rate:.1f}", f"{raw_rate:.1f}",
                      f"{store_rate / raw_rate:.2f}x",
                      " ".join(f"{r:.0f}" for r in store_rates),
                      " ".join(f"{r:.0f}" for r in raw_rates)))
    print(f"median of {args.rounds} interleaved rounds; a cycle = claim -> submitting -> "
          "submitted -> downloading -> completed (5 transactions)")
    print_table(table)
    print(machine_line())


if __name__ == "__main__":
    main()
