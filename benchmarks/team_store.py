"""Benchmark: the team journal (PostgresStore) against a hand-written psycopg loop, and
claim latency as the queue grows; the SQLite journal in the same run for reference.

    python benchmarks/team_store.py [--seconds 4] [--sizes 1000,100000,1000000]
                                    [--procs 1,3,8] [--dsn postgresql://…]

Without ``--dsn`` a throwaway server is started (tests/pgserver.py: initdb + pg_ctl on
loopback, ``fsync=off`` like the tests; as ``nobody`` when run as root) and removed.

1. **Job lives per second.** A job's life is the journal's part of a render: the claim
   transaction (account row ``FOR UPDATE``, live count, next job ``FOR UPDATE SKIP
   LOCKED``, the claim, its ledger row) and four fenced writes, each with its ledger row
   (submitting, submitted, downloading, completed): five transactions. N processes (own
   connections) live jobs on ONE account (limit far above N, so every claim queues on the
   same account row: the worst case for the row lock) for ``--seconds``; three runs each,
   the median. Once through ``PostgresStore`` and once through a loop that sends the same
   SQL (the store's own named queries) with psycopg directly: what the store's Python
   costs on top. Target: store >= 0.8x the loop. The SQLite store (one file, processes
   behind its write lock, ``synchronous=FULL`` as in production) is timed the same way.
2. **Claim latency** with 1k to 1M queued jobs (filled on the server with
   ``generate_series``), 300 claims one at a time through ``PostgresStore``: p50, p99.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import signal
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests.pgserver
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import machine_line, median, print_table

from reelqueue.domain.models import AccountSpec, BatchSpec, ClaimToken, JobSpec
from reelqueue.store.base import ClaimParams
from reelqueue.store.postgres import PostgresStore, pg_queries
from reelqueue.store.sqlite import SqliteStore

ACCOUNT = "bench"
SHA = "0" * 64


def fresh_database(server_dsn: str) -> str:
    import psycopg

    name = f"bench_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(server_dsn, autocommit=True) as db:
        db.execute(f'CREATE DATABASE "{name}"')
    return server_dsn.rsplit("/", 1)[0] + f"/{name}"


def fill_pg(url: str, jobs: int) -> None:
    store = PostgresStore.open(url, now=time.time())
    try:
        store.add_account(AccountSpec(ACCOUNT, "mock", 1_000_000), time.time())
        batch = store.create_batch(BatchSpec("bench", "b.csv", "/tmp/bench"), time.time())
        with store.raw_connection() as db:
            db.execute(
                "INSERT INTO jobs (batch_id, job_key, row_number, name, prompt, provider, "
                "params, output_path, created_at, updated_at) "
                "SELECT %s, 'bench-' || g, g, 'clip', 'a red fox #' || g, 'mock', "
                "'{\"duration\": 5}'::jsonb, '/tmp/bench/' || g || '.mp4', %s, %s "
                "FROM generate_series(1, %s) AS g", (batch.id, time.time(), time.time(), jobs))
            db.execute("ANALYZE jobs")
    finally:
        store.close()


def fill_sqlite(path: Path, jobs: int) -> None:
    store = SqliteStore.open(path, now=time.time())
    try:
        store.add_account(AccountSpec(ACCOUNT, "mock", 1_000_000), time.time())
        batch = store.create_batch(BatchSpec("bench", "b.csv", "/tmp/bench"), time.time())
        for start in range(0, jobs, 5000):
            specs = [JobSpec(job_key=f"bench-{i}", prompt=f"a red fox #{i}", provider="mock",
                             output_path=f"/tmp/bench/{i}.mp4", row_number=i, name="clip")
                     for i in range(start, min(jobs, start + 5000))]
            store.add_jobs(batch.id, specs, time.time())
    finally:
        store.close()


# -- one process's loop ------------------------------------------------------------------
def live_with_store(store: Any, deadline: float) -> int:
    lives, owner = 0, f"bench-{uuid.uuid4().hex[:8]}"
    while time.perf_counter() < deadline:
        now = time.time()
        claim = store.claim_next_job(ClaimParams(ACCOUNT, owner, now, 60.0, now - 3600))
        if claim is None:
            break
        token = ClaimToken(claim.job.id, claim.token.token)
        assert store.mark_submitting(token, uuid.uuid4().hex, now)
        assert store.record_submitted(token, f"mr_{claim.job.id}", now)
        assert store.mark_downloading(token, now)
        assert store.mark_completed(token, size=1, sha256=SHA, cost=None, now=now)
        lives += 1
    return lives


def live_with_psycopg(url: str, deadline: float) -> int:
    """The same transactions, the store's own SQL, psycopg directly."""
    import psycopg
    from psycopg.rows import dict_row
    from psycopg.types.json import Jsonb

    q = pg_queries()
    lives, owner = 0, f"hand-{uuid.uuid4().hex[:8]}"
    with psycopg.connect(url, row_factory=dict_row) as db:
        def ledger(event: str, job_id: int, token: str, now: float) -> None:
            db.execute(q["insert_ledger"], {"now": now, "event": event, "job_id": job_id,
                                            "account": ACCOUNT, "claim_token": token,
                                            "detail": Jsonb({}), "clock": None})

        def fenced(name: str, event: str, job_id: int, token: str, **params: Any) -> None:
            now = time.time()
            with db.transaction():
                cur = db.execute(q[name], {"id": job_id, "token": token, "now": now,
                                           "clock": None, **params})
                assert cur.rowcount == 1
                ledger(event, job_id, token, now)

        while time.perf_counter() < deadline:
            now = time.time()
            token = uuid.uuid4().hex
            with db.transaction():
                account = db.execute(q["lock_account"], {"name": ACCOUNT}).fetchone()
                assert account is not None
                room = db.execute(q["claim_room"], {"account": ACCOUNT,
                                                    "clock": None}).fetchone()
                assert room is not None
                row = db.execute(q["next_claimable"], {
                    "provider": "mock", "now": now, "account": ACCOUNT, "creates": True,
                    "skip_batches": [], "clock": None}).fetchone()
                if row is None:
                    break
                job_id = int(row["id"])
                db.execute(q["claim_job"], {"id": job_id, "account": ACCOUNT, "token": token,
                                            "owner": owner, "lease_seconds": 60,
                                            "now": now, "clock": None}).fetchone()
                ledger("claimed", job_id, token, now)
            fenced("fenced_mark_submitting", "submitting", job_id, token,
                   client_token=uuid.uuid4().hex, min_lease=None)
            fenced("fenced_record_submitted", "submitted", job_id, token,
                   provider_job_id=f"mr_{job_id}")
            fenced("fenced_mark_downloading", "downloading", job_id, token)
            fenced("fenced_mark_completed", "completed", job_id, token, size=1, sha256=SHA,
                   cost=None, host="bench")
            lives += 1
    return lives


def _child(kind: str, where: str, barrier: Any, seconds: float, out: Any) -> None:
    store: Any = None
    if kind == "store":
        store = PostgresStore.open(where, now=time.time(), max_size=1)
    elif kind == "sqlite":
        store = SqliteStore.open(Path(where), now=time.time())
    barrier.wait()
    deadline = time.perf_counter() + seconds
    try:
        lives = (live_with_psycopg(where, deadline) if kind == "psycopg"
                 else live_with_store(store, deadline))
    finally:
        if store is not None:
            store.close()
    out.put(lives)


def lives_per_second(kind: str, where: str, procs: int, seconds: float) -> float:
    ctx = mp.get_context("spawn")
    barrier = ctx.Barrier(procs + 1)
    out = ctx.Queue()
    children = [ctx.Process(target=_child, args=(kind, where, barrier, seconds, out))
                for _ in range(procs)]
    for child in children:
        child.start()
    barrier.wait()
    started = time.perf_counter()
    total = sum(out.get(timeout=seconds + 120) for _ in children)
    elapsed = time.perf_counter() - started
    for child in children:
        child.join(timeout=30)
    return total / elapsed


def claim_latency(url: str, claims: int) -> tuple[float, float]:
    store = PostgresStore.open(url, now=time.time())
    try:
        times = []
        for _ in range(claims):
            now = time.time()
            started = time.perf_counter()
            claim = store.claim_next_job(ClaimParams(ACCOUNT, "lat", now, 60.0, now - 3600))
            times.append(time.perf_counter() - started)
            assert claim is not None
    finally:
        store.close()
    times.sort()
    return times[len(times) // 2] * 1000, times[min(len(times) - 1,
                                                    int(len(times) * 0.99))] * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=4.0)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--procs", default="1,3,8")
    parser.add_argument("--sizes", default="1000,100000,1000000")
    parser.add_argument("--claims", type=int, default=300)
    parser.add_argument("--dsn", default=None, help="a server of your own (else a throwaway)")
    parser.add_argument("--json", type=Path, default=None, help="also write figures here")
    args = parser.parse_args()
    # SIGTERM ends the run through the finally below, which stops the throwaway server.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    server = None
    if args.dsn is None:
        from tests.pgserver import start_server

        server = start_server()
        dsn = server.dsn
    else:
        dsn = args.dsn
    figures: dict[str, Any] = {"machine": machine_line(), "lives": {}, "latency": {}}
    try:
        print(machine_line())
        rows = [["processes", "PostgresStore/s", "psycopg loop/s", "ratio", "SQLite store/s"]]
        for procs in [int(p) for p in args.procs.split(",")]:
            # Enough queued jobs that no run drains the queue.
            need = int(3000 * procs * args.seconds) + 10_000
            # The kinds take turns in every round, so the neighbours' load (this machine is
            # shared) drifts over all of them alike rather than over one kind's runs.
            runs: dict[str, list[float]] = {"store": [], "psycopg": [], "sqlite": []}
            for _ in range(args.runs):
                for kind in runs:
                    if kind == "sqlite":
                        folder = Path(tempfile.mkdtemp(prefix="bench-sqlite-"))
                        where = str(folder / "journal.sqlite3")
                        fill_sqlite(Path(where), min(need, 60_000))
                    else:
                        where = fresh_database(dsn)
                        fill_pg(where, need)
                    runs[kind].append(lives_per_second(kind, where, procs, args.seconds))
            result = {kind: median(values) for kind, values in runs.items()}
            figures.setdefault("runs", {})[procs] = runs
            figures["lives"][procs] = result
            rows.append([str(procs), f"{result['store']:.0f}", f"{result['psycopg']:.0f}",
                         f"{result['store'] / result['psycopg']:.2f}x",
                         f"{result['sqlite']:.0f}"])
            print_table(rows)
        rows = [["queued jobs", "fill s", "claim p50 ms", "claim p99 ms"]]
        for size in [int(s) for s in args.sizes.split(",")]:
            where = fresh_database(dsn)
            started = time.perf_counter()
            fill_pg(where, size)
            fill = time.perf_counter() - started
            p50, p99 = claim_latency(where, args.claims)
            figures["latency"][size] = {"p50_ms": p50, "p99_ms": p99, "fill_s": fill}
            rows.append([f"{size:,}", f"{fill:.1f}", f"{p50:.2f}", f"{p99:.2f}"])
            print_table(rows)
    finally:
        if server is not None:
            server.stop()
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2))


if __name__ == "__main__":
    main()
