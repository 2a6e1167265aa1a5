"""Benchmark: the cost of one claim as the queue grows from 1k to 1M jobs.

    python benchmarks/bench_claim_scaling.py [--sizes 1000,100000,1000000] [--claims 200]

For each size a journal with the real schema is filled with that many queued jobs (one
``executemany`` in one transaction, then a checkpoint), opened with ``SqliteStore``, and
``claim_next_job`` is timed one call at a time: the whole write transaction (account row,
live count, next claimable job by the partial index, the conditional update, the ledger
row, the commit). Two durability settings are timed on the same file:

* ``store``: as in production, the store's own: a claim commits without an fsync (WAL,
  ``synchronous=NORMAL``; its submission intent, not timed here, is the durable step).
  This column was labelled ``FULL`` and set FULL on the connection, but the store switches
  the connection to NORMAL before a claim all the same: it always measured this.
* ``OFF``: ``synchronous=OFF`` set on the store's connection, so what is left is the query
  work that could grow with the queue. The store switches the setting only when the one it
  last made differs (it does not read it back), so the benchmark also tells it NORMAL is
  set; before 2026-12-02 it did not, the store set NORMAL before the first claim and this
  column measured NORMAL too.

The baseline is the same claim on the 1k journal. Target: within 2x from 1k to 1M.

Two more scenarios put 10% of the jobs at the head of the queue where a claim cannot take
them: waiting out a retry (RETRY_WAIT, due in an hour), or pinned to another account. A
claim that walked the queue in priority order would step over all of them every time
(journal schema 2 did: 54 ms a claim at 1M); schema 3 seeks past them.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from _common import (
    NOW,
    add_account,
    add_batch,
    bulk_connection,
    insert_queued_jobs,
    job_rows,
    machine_line,
    median,
    new_journal,
    print_table,
)

from reelqueue.store.base import ClaimParams
from reelqueue.store.sqlite import SqliteStore


def build(path: Path, size: int) -> float:
    """A journal of ``size`` queued jobs; returns the seconds it took."""
    started = time.perf_counter()
    new_journal(path)
    db = bulk_connection(path)
    try:
        db.execute("BEGIN IMMEDIATE")
        batch = add_batch(db, path.parent / "videos")
        add_account(db, "acct", 1_000_000)
        add_account(db, "other", 1)
        db.execute("COMMIT")
        insert_queued_jobs(db, job_rows(batch, size, path.parent / "videos"))
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        db.close()
    return time.perf_counter() - started


SCENARIOS = {
    "all queued": None,
    "10% of the head waiting out a retry":
        "UPDATE jobs SET state = 'RETRY_WAIT', run_after = :later, attempts = 1 "
        "WHERE id <= :head AND state = 'QUEUED'",
    "10% of the head pinned to another account":
        "UPDATE jobs SET pinned_account = 'other' WHERE id <= :head AND state = 'QUEUED'",
}
RESET = ("UPDATE jobs SET state = 'QUEUED', run_after = 0, attempts = 0, pinned_account = NULL,"
         " account = NULL, claim_token = NULL, lease_owner = NULL, lease_until = NULL,"
         " started_at = NULL WHERE state <> 'QUEUED' OR pinned_account IS NOT NULL")


def arrange(path: Path, sql: str | None, size: int) -> None:
    db = bulk_connection(path)
    try:
        db.execute("BEGIN IMMEDIATE")
        db.execute(RESET)
        if sql:
            db.execute(sql, {"later": NOW + 3600, "head": size // 10})
        db.execute("COMMIT")
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        db.close()


def time_claims(path: Path, claims: int, synchronous: str) -> list[float]:
    store = SqliteStore.open(path, now=NOW)
    try:
        if synchronous != "store":  # else the store's own setting, as in production
            store.raw_connection().execute(f"PRAGMA synchronous = {synchronous}")
            # The store sets NORMAL before a claim unless it believes it is set already.
            store._synchronous_full = False
        params = ClaimParams("acct", "bench", NOW, 60.0)
        for _ in range(10):  # warm the page cache and the statement cache
            assert store.claim_next_job(params) is not None
        latencies = []
        for _ in range(claims):
            started = time.perf_counter()
            claim = store.claim_next_job(params)
            latencies.append(time.perf_counter() - started)
            assert claim is not None
        return latencies
    finally:
        store.close()


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000,100000,1000000")
    parser.add_argument("--claims", type=int, default=50, help="timed claims per pass")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--dir", type=Path, default=Path(tempfile.gettempdir()))
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    print(machine_line())
    syncs = ("store", "OFF")
    # latencies[scenario][size][sync]: every round visits every scenario and size, so that
    # the disk's slow spells fall on all cells alike.
    latencies: dict[str, dict[int, dict[str, list[float]]]] = {
        label: {size: {sync: [] for sync in syncs} for size in sizes} for label in SCENARIOS}
    with tempfile.TemporaryDirectory(dir=args.dir) as scratch:
        paths = {size: Path(scratch) / f"journal-{size}.sqlite3" for size in sizes}
        built = {size: build(paths[size], size) for size in sizes}
        for _ in range(args.rounds):
            for label, sql in SCENARIOS.items():
                for size in sizes:
                    arrange(paths[size], sql, size)  # every pass starts from the same queue
                    for sync in syncs:
                        latencies[label][size][sync] += time_claims(paths[size], args.claims,
                                                                    sync)
    base = {sync: median(latencies["all queued"][sizes[0]][sync]) for sync in syncs}
    for label, by_size in latencies.items():
        table: list[list[str]] = [["jobs", "build s", "store median ms", "store p95 ms",
                                   "vs 1k", "OFF median ms", "OFF p95 ms", "vs 1k"]]
        for size, by_sync in by_size.items():
            row = [f"{size:,}", f"{built[size]:.1f}"]
            for sync in syncs:
                med = median(by_sync[sync])
                row += [f"{med * 1e3:.3f}", f"{percentile(by_sync[sync], 0.95) * 1e3:.3f}",
                        f"{med / base[sync]:.2f}x"]
            table.append(row)
        print(f"\nclaim_next_job latency, {label} ({args.rounds} rounds x {args.claims} claims"
              " per cell, each pass after 10 warm-up claims; ratio against 1k all queued)")
        print_table(table)
    print(machine_line())


if __name__ == "__main__":
    main()
