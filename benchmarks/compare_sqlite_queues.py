"""Benchmark: a job's whole life through ReelQueue's SQLite journal, beside other SQLite
queues and a raw two-transaction loop, at the same durability (issue 20).

    pip install huey litequeue persist-queue   # the other queues (not project deps)
    python benchmarks/compare_sqlite_queues.py [--jobs 1000] [--rounds 5] [--workers 1 3]
        [--trees base=/path/to/an/older/tree ...]   # a before/after in the same rounds

A *job life* is what one job costs the queue once it is enqueued:

- **ReelQueue** ``SqliteStore``, in the render worker's call order: ``claim_next_job`` ->
  ``mark_submitting`` (the durable intent) -> ``record_submitted`` (rendering) ->
  ``mark_downloading`` -> ``mark_completed``, each with its ledger row, fencing and caps.
- **hand**: ReelQueue's own schema and named statements in the store's five transactions
  (the same fenced updates, ledger rows and durability, the account's room counted under
  the write lock, the store's next-job statement) with none of the store's Python:
  the floor of this schema and these guarantees, whatever the code around them.
- **raw**: a hand-written loop on its own two-table schema, two transactions per job
  (claim: ``UPDATE ... RETURNING`` + a ledger row; completion: ``UPDATE`` + a ledger
  row). The ratio every other line is measured against.
- **huey** ``SqliteStorage(fsync=True)``: ``dequeue`` + ``put_data`` of the result.
- **litequeue** ``LiteQueue``: ``pop`` + ``done``.
- **persist-queue** ``SQLiteAckQueue``: ``get`` + ``ack``.

Every contender runs WAL with ``synchronous=FULL`` (huey's ``fsync=True``; the others'
connections are set so after they open), so every commit waits for the disk, as ReelQueue's
durable transitions do. Jobs are enqueued before the clock starts (batch enqueue is
measured on its own: ``add_jobs`` against ``executemany`` in one transaction). With W
workers, W processes (fork) share one database file and take jobs until none is left;
the figure is jobs per second of wall time from a common start. Rounds interleave the
contenders (rotating which goes first) so that a busy machine slows all alike; each
figure is the median over the rounds, and each ratio is against the raw loop of the same
worker count. Nothing here is a test and nothing asserts a time.

Count fsyncs with ``strace -f -c -e trace=fsync,fdatasync python
benchmarks/compare_sqlite_queues.py --only reelqueue --rounds 1 --workers 1``.
"""

from __future__ import annotations

import argparse
import json
import os
import sqlite3
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from _common import NOW, machine_line, median, print_table, run_forked

from reelqueue.domain.models import AccountSpec, BatchSpec, JobSpec
from reelqueue.store.base import ClaimParams
from reelqueue.store.queries import named_queries
from reelqueue.store.sqlite import SqliteStore

Setup = Callable[[Path, int], None]
Work = Callable[[Path, int], int]  # (folder, worker index) -> jobs done


def _full(conn: sqlite3.Connection) -> None:
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("PRAGMA synchronous = FULL")
    conn.execute("PRAGMA busy_timeout = 30000")


# -- ReelQueue ---------------------------------------------------------------------------
def reelqueue_setup(folder: Path, jobs: int) -> None:
    store = SqliteStore.open(folder / "journal.sqlite3", now=NOW)
    try:
        batch = store.create_batch(BatchSpec("bench", "bench.csv", str(folder)), NOW)
        store.add_jobs(batch.id, [
            JobSpec(job_key=f"k{i:07d}", prompt=f"a red fox at sunrise #{i}",
                    provider="mock", output_path=str(folder / f"{i:07d}.mp4"),
                    params={"duration": 5}, row_number=i + 2, name=f"clip {i}")
            for i in range(jobs)], NOW)
        store.add_account(AccountSpec("acct", "mock", 1000), NOW)
    finally:
        store.close()


def reelqueue_work(folder: Path, worker: int) -> int:
    store = SqliteStore.open(folder / "journal.sqlite3", now=NOW)
    params = ClaimParams("acct", f"bench-{worker}", NOW, 600.0)
    done = 0
    try:
        while (claim := store.claim_next_job(params)) is not None:
            token = claim.token
            assert store.mark_submitting(token, uuid.uuid4().hex, NOW)
            assert store.record_submitted(token, f"pj-{token.job_id}", NOW)
            assert store.mark_downloading(token, NOW)
            assert store.mark_completed(token, size=1000, sha256="ab" * 32, cost=0.05,
                                        now=NOW)
            done += 1
    finally:
        store.close()
    return done


# -- hand: ReelQueue's own schema and statements, without the store's layers -------------
def hand_work(folder: Path, worker: int) -> int:
    """The floor of this schema and these guarantees: the store's own named statements in
    the store's five transactions, each fenced update with its ledger row and durable where
    the store's is (NORMAL, FULL, FULL, NORMAL, FULL; the PRAGMA before BEGIN where the
    setting changes), the account's live renders counted under the write lock before the
    claim, the store's next-job statement (``next_claimable``: its three index seeks); but
    none of the claim's other reads (no spend caps, provider limits, hostile-row check or
    view) and none of the store's Python (no error mapping, row readers or Job objects)."""
    q = named_queries()
    db = sqlite3.connect(str(folder / "journal.sqlite3"), isolation_level=None)
    db.row_factory = sqlite3.Row
    db.execute("PRAGMA busy_timeout = 30000")
    owner = f"bench-{worker}"
    done = 0
    full: list[bool | None] = [None]
    # The store's own next-job statement with the parameters of a claim that no cap,
    # pause or provider limit narrows (until session 24 a plain query stood here; it
    # sorted every queued row at each claim: 0.24 ms a job at 1,000 jobs, which made
    # this floor slower than the store's own statements).
    next_args = {"provider": "mock", "now": NOW, "account": "acct", "creates": True,
                 "skip_batches": "[]", "skip_models": "[]", "default_model": None}

    def begin(durable: bool) -> None:
        if full[0] is not durable:  # as the store: only when the setting changes
            db.execute(q["synchronous_full" if durable else "synchronous_normal"])
            full[0] = durable
        db.execute(q["begin_write"])

    def step(sql: str, args: dict[str, Any], event: str, detail: str) -> None:
        assert db.execute(sql, args).fetchone() is not None, event
        db.execute(q["insert_ledger"], {"now": NOW, "event": event, "job_id": args["id"],
                                        "account": "acct", "claim_token": args["token"],
                                        "detail": detail})

    # After the claim: (durable, fenced update, its own parameters, ledger event).
    after_claim: tuple[tuple[bool, str, dict[str, Any], str], ...] = (
        (True, "fenced_mark_submitting", {"min_lease": None}, "submitting"),
        (True, "fenced_record_submitted", {}, "submitted"),
        (False, "fenced_mark_downloading", {"output_path": None, "part": None},
         "downloading"),
        (True, "fenced_mark_completed",
         {"size": 1000, "sha256": "ab" * 32, "cost": 0.05, "host": None}, "completed"),
    )
    try:
        while True:
            token = uuid.uuid4().hex
            begin(False)
            room = db.execute(q["claim_account"], {"name": "acct", "now": NOW}).fetchone()
            found = db.execute(q["next_claimable"], next_args).fetchone()
            if found is None or room["live"] >= room["capacity"]:
                db.execute(q["commit_write"])
                return done
            args = {"id": found[0], "token": token, "now": NOW,
                    "client_token": uuid.uuid4().hex, "provider_job_id": f"pj-{found[0]}"}
            step(q["claim_job"], {**args, "account": "acct", "owner": owner,
                                  "lease_until": NOW + 600.0},
                 "claimed", json.dumps({"owner": owner}))
            db.execute(q["commit_write"])
            for durable, query, extra, event in after_claim:
                begin(durable)
                step(q[query], {**args, **extra}, event, "{}")
                if event == "completed":  # the reported cost's spend entry, as the store's
                    db.execute(q["insert_ledger"], {
                        "now": NOW, "event": "spend", "job_id": found[0], "account": "acct",
                        "claim_token": token, "detail": json.dumps({"usd": 0.05})})
                db.execute(q["commit_write"])
            done += 1
    finally:
        db.close()


# -- raw: two transactions per job -------------------------------------------------------
RAW_SCHEMA = """
CREATE TABLE jobs (id INTEGER PRIMARY KEY, state TEXT NOT NULL, payload TEXT NOT NULL,
                   owner TEXT, token TEXT, updated_at REAL);
CREATE INDEX jobs_state ON jobs (state, id);
CREATE TABLE ledger (seq INTEGER PRIMARY KEY, at REAL, event TEXT, job_id INTEGER,
                     detail TEXT);
"""


def raw_setup(folder: Path, jobs: int) -> None:
    db = sqlite3.connect(str(folder / "raw.sqlite3"), isolation_level=None)
    _full(db)
    db.executescript(RAW_SCHEMA)
    db.execute("BEGIN")
    db.executemany("INSERT INTO jobs (state, payload) VALUES ('QUEUED', ?)",
                   ((json.dumps({"prompt": f"a red fox at sunrise #{i}"}),)
                    for i in range(jobs)))
    db.execute("COMMIT")
    db.close()


def raw_work(folder: Path, worker: int) -> int:
    db = sqlite3.connect(str(folder / "raw.sqlite3"), isolation_level=None)
    _full(db)
    done = 0
    try:
        while True:
            token = uuid.uuid4().hex
            db.execute("BEGIN IMMEDIATE")
            row = db.execute(
                "UPDATE jobs SET state = 'CLAIMED', owner = ?, token = ?, updated_at = ? "
                "WHERE id = (SELECT id FROM jobs WHERE state = 'QUEUED' ORDER BY id "
                "LIMIT 1) RETURNING id", (f"bench-{worker}", token, NOW)).fetchone()
            if row is None:
                db.execute("COMMIT")
                return done
            db.execute("INSERT INTO ledger (at, event, job_id, detail) VALUES "
                        "(?, 'claimed', ?, ?)", (NOW, row[0], json.dumps({"t": token})))
            db.execute("COMMIT")
            db.execute("BEGIN IMMEDIATE")
            changed = db.execute("UPDATE jobs SET state = 'COMPLETED', updated_at = ? "
                                 "WHERE id = ? AND token = ?", (NOW, row[0], token)).rowcount
            assert changed == 1
            db.execute("INSERT INTO ledger (at, event, job_id, detail) VALUES "
                        "(?, 'completed', ?, '{}')", (NOW, row[0]))
            db.execute("COMMIT")
            done += 1
    finally:
        db.close()


# -- huey --------------------------------------------------------------------------------
def _huey(folder: Path) -> Any:
    from huey.storage import SqliteStorage

    return SqliteStorage(name="bench", filename=str(folder / "huey.db"), fsync=True,
                         timeout=30)


def huey_setup(folder: Path, jobs: int) -> None:
    storage = _huey(folder)
    for i in range(jobs):
        storage.enqueue(json.dumps({"prompt": f"a red fox at sunrise #{i}"}).encode())
    storage.close()


def huey_work(folder: Path, worker: int) -> int:
    storage = _huey(folder)
    done = 0
    try:
        while (data := storage.dequeue()) is not None:
            storage.put_data(f"result-{done}-{worker}", data)
            done += 1
    finally:
        storage.close()
    return done


# -- litequeue ---------------------------------------------------------------------------
def _litequeue(folder: Path) -> Any:
    from litequeue import LiteQueue

    queue = LiteQueue(str(folder / "lite.db"))
    _full(queue.conn)
    return queue


def litequeue_setup(folder: Path, jobs: int) -> None:
    queue = _litequeue(folder)
    for i in range(jobs):
        queue.put(json.dumps({"prompt": f"a red fox at sunrise #{i}"}))
    queue.conn.close()


def litequeue_work(folder: Path, worker: int) -> int:
    queue = _litequeue(folder)
    done = 0
    try:
        while (message := queue.pop()) is not None:
            queue.done(message.message_id)
            done += 1
    finally:
        queue.conn.close()
    return done


# -- persist-queue -----------------------------------------------------------------------
def _persist(folder: Path) -> Any:
    from persistqueue import SQLiteAckQueue

    queue = SQLiteAckQueue(str(folder / "persist"), auto_commit=True, multithreading=True)
    for conn in (queue._getter, queue._putter):  # the library's two connections
        _full(conn)
    return queue


def persist_setup(folder: Path, jobs: int) -> None:
    queue = _persist(folder)
    for i in range(jobs):
        queue.put({"prompt": f"a red fox at sunrise #{i}"})
    queue.close()


def persist_work(folder: Path, worker: int) -> int:
    from persistqueue import Empty

    queue = _persist(folder)
    done = 0
    try:
        while True:
            try:
                item = queue.get(block=False)
            except Empty:
                return done
            queue.ack(item)
            done += 1
    finally:
        queue.close()


CONTENDERS: dict[str, tuple[Setup, Work]] = {
    "raw": (raw_setup, raw_work),
    "reelqueue": (reelqueue_setup, reelqueue_work),
    "hand": (reelqueue_setup, hand_work),
    "huey": (huey_setup, huey_work),
    "litequeue": (litequeue_setup, litequeue_work),
    "persist-queue": (persist_setup, persist_work),
}


DELIVERED_TWICE: dict[tuple[str, int], int] = {}


TREES: dict[str, Path] = {}
"""``--trees``: label -> a source tree whose ``app/`` runs as contender ``reelqueue@label``."""


def tree_round(label: str, where: Path, jobs: int, workers: int) -> float:
    """One round of ReelQueue from another source tree (``--trees``): this script run again
    in a subprocess with that tree's ``app/`` first on the path, timing itself (the
    interpreter's start is not timed)."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(TREES[label] / "app"), *filter(None, [os.environ.get("PYTHONPATH")])])}
    done = subprocess.run(
        [sys.executable, __file__, "--one-round", "reelqueue", str(workers),
         "--jobs", str(jobs), "--dir", str(where)],
        env=env, check=True, capture_output=True, text=True)
    return float(done.stdout.split()[-1])


def one_round(name: str, where: Path, jobs: int, workers: int) -> float:
    """Jobs per second of one contender's round with ``workers`` processes."""
    if name.startswith("reelqueue@"):
        return tree_round(name.removeprefix("reelqueue@"), where, jobs, workers)
    setup, work = CONTENDERS[name]
    with tempfile.TemporaryDirectory(dir=where) as scratch:
        folder = Path(scratch)
        setup(folder, jobs)
        if workers == 1:
            started = time.perf_counter()
            done = work(folder, 0)
            elapsed = time.perf_counter() - started
        else:
            elapsed, done = run_forked(name, work, folder, workers)
        # persist-queue's get is a SELECT then an UPDATE: across processes it hands some
        # jobs out twice. Counted and printed, not hidden; the rate is of distinct jobs.
        assert done >= jobs, f"{name}: only {done} of {jobs} jobs done"
        DELIVERED_TWICE[(name, workers)] = DELIVERED_TWICE.get((name, workers), 0) + (
            done - jobs)
        return jobs / elapsed


def enqueue_rates(where: Path, jobs: int, rounds: int) -> tuple[list[float], list[float]]:
    """Rows per second: ``SqliteStore.add_jobs`` against a raw ``executemany`` of the same
    rows into the same schema in one transaction (both durable)."""
    store_rates: list[float] = []
    raw_rates: list[float] = []
    for n in range(rounds):
        for which in (("store", "raw") if n % 2 == 0 else ("raw", "store")):
            with tempfile.TemporaryDirectory(dir=where) as scratch:
                folder = Path(scratch)
                specs = [JobSpec(job_key=f"k{i:07d}", prompt=f"a red fox at sunrise #{i}",
                                 provider="mock", output_path=str(folder / f"{i:07d}.mp4"),
                                 params={"duration": 5}, row_number=i + 2,
                                 name=f"clip {i}") for i in range(jobs)]
                store = SqliteStore.open(folder / "journal.sqlite3", now=NOW)
                batch = store.create_batch(BatchSpec("bench", "bench.csv", str(folder)), NOW)
                if which == "store":
                    started = time.perf_counter()
                    store.add_jobs(batch.id, specs, NOW)
                    store_rates.append(jobs / (time.perf_counter() - started))
                    store.close()
                    continue
                store.close()
                db = sqlite3.connect(str(folder / "journal.sqlite3"), isolation_level=None)
                _full(db)
                started = time.perf_counter()
                db.execute("BEGIN IMMEDIATE")
                db.executemany(
                    "INSERT INTO jobs (batch_id, job_key, row_number, name, prompt, provider,"
                    " params, output_path, state, max_attempts, created_at, updated_at) "
                    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, 'QUEUED', 3, ?, ?)",
                    ((batch.id, s.job_key, s.row_number, s.name, s.prompt, s.provider,
                      json.dumps(s.params), s.output_path, NOW, NOW) for s in specs))
                db.execute("COMMIT")
                raw_rates.append(jobs / (time.perf_counter() - started))
                db.close()
    return store_rates, raw_rates


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=1000, help="jobs per round")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 3])
    parser.add_argument("--only", nargs="+", choices=list(CONTENDERS),
                        help="run these contenders only (raw is always run)")
    parser.add_argument("--enqueue-rows", type=int, default=20000,
                        help="rows per round of the batch-enqueue comparison (0: skip)")
    parser.add_argument("--dir", type=Path, default=Path(tempfile.gettempdir()),
                        help="where the databases go (a real disk: commits wait for it)")
    parser.add_argument("--trees", nargs="+", default=[], metavar="LABEL=PATH",
                        help="also run ReelQueue from these source trees (PATH/app) as "
                             "contenders reelqueue@LABEL, in the same interleaved rounds: "
                             "a before/after in one run (e.g. base=/path/to/main)")
    parser.add_argument("--one-round", nargs=2, metavar=("NAME", "WORKERS"),
                        help=argparse.SUPPRESS)  # a --trees contender's subprocess
    args = parser.parse_args()
    if args.one_round:
        print(one_round(args.one_round[0], args.dir, args.jobs, int(args.one_round[1])))
        return
    for tree in args.trees:
        label, _, path = tree.partition("=")
        TREES[label] = Path(path).resolve()
    names = ["raw", *[n for n in (args.only or CONTENDERS) if n != "raw"],
             *[f"reelqueue@{label}" for label in TREES]]
    print(machine_line())
    table = [("contender", *[f"W={w} jobs/s" for w in args.workers],
              *[f"W={w} vs raw" for w in args.workers],
              *[f"W={w} vs raw, per round" for w in args.workers])]
    rates: dict[tuple[str, int], list[float]] = {}
    for workers in args.workers:
        for n in range(args.rounds):
            turn = n % len(names)
            for name in names[turn:] + names[:turn]:
                rates.setdefault((name, workers), []).append(
                    one_round(name, args.dir, args.jobs, workers))
    for name in names:
        medians = [median(rates[(name, w)]) for w in args.workers]
        raws = [median(rates[("raw", w)]) for w in args.workers]
        # The median of each round's own ratio (this contender against the raw loop of the
        # same round, run next to it): less moved by a load spike that hits one round.
        per_round = [median([x / r for x, r in zip(rates[(name, w)], rates[("raw", w)],
                                                   strict=True)]) for w in args.workers]
        table.append((name, *[f"{m:.0f}" for m in medians],
                      *[f"{m / r:.2f}x" for m, r in zip(medians, raws, strict=True)],
                      *[f"{p:.2f}x" for p in per_round]))
    twice = {k: v for k, v in DELIVERED_TWICE.items() if v}
    print(f"full job life, {args.jobs} jobs per round, median of {args.rounds} interleaved "
          "rounds, WAL + synchronous=FULL everywhere")
    print_table(table)
    for (name, workers), count in sorted(twice.items()):
        print(f"{name} at W={workers}: {count} deliveries of a job already delivered "
              f"over {args.rounds} rounds (not a safe multi-process queue)")
    if args.enqueue_rows:
        store_rates, raw_rates = enqueue_rates(args.dir, args.enqueue_rows, args.rounds)
        print(f"batch enqueue of {args.enqueue_rows} rows: store {median(store_rates):.0f} "
              f"rows/s, raw executemany {median(raw_rates):.0f} rows/s, "
              f"{median(store_rates) / median(raw_rates):.2f}x")
    print(machine_line())


if __name__ == "__main__":
    main()
