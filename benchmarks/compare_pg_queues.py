"""Benchmark: a job's whole life through ReelQueue's PostgreSQL journal, beside other
PostgreSQL queues, a raw psycopg loop and a hand-written loop that keeps ReelQueue's
guarantees (issue 20).

    pip install -e '.[bench]'      # procrastinate, pgqueuer (not project deps)
    python benchmarks/compare_pg_queues.py [--jobs 1000] [--rounds 5] [--workers 1 3]
                                           [--dsn postgresql://...]
        [--trees base=/path/to/an/older/tree ...]   # a before/after in the same rounds

Without ``--dsn`` a throwaway server is started on loopback (tests/pgserver.py: initdb +
pg_ctl), then turned back to ``fsync=on`` and ``full_page_writes=on`` (the tests run it
without fsync; here commits wait for the disk, as in production), and removed at the end.

A *job life* is what one job costs the queue once it is enqueued:

- **ReelQueue** ``PostgresStore``, in the render worker's call order (the same calls as
  benchmarks/compare_sqlite_queues.py): ``claim_next_job`` -> ``mark_submitting`` (the
  durable intent, with the min-lease check) -> ``record_submitted`` (rendering) ->
  ``mark_downloading`` -> ``mark_completed``, each with its ledger row, fencing and caps.
- **raw**: a plain psycopg loop on its own schema, two transactions per job (claim:
  ``UPDATE ... WHERE id = (SELECT ... FOR UPDATE SKIP LOCKED) RETURNING`` + a ledger row;
  completion: ``UPDATE`` + a ledger row). The ratio every other line is measured against.
- **hand**: a hand-written loop keeping ReelQueue's guarantees on its own schema: the claim
  locks the account's row, counts its live jobs under that lock against its limit, takes
  the job with ``SKIP LOCKED`` and writes a ledger row (one pipeline: BEGIN, the lock, one
  statement, COMMIT, with ``synchronous_commit = off`` for the transaction); then the
  durable intent (fenced by the claim token, the lease checked on the server's clock), the
  provider job id and the completion, each one statement in autocommit that updates the
  job and writes its ledger row. Four round trips, three WAL flushes.
- **floor**: ReelQueue's own schema and statements (the store's claim pipeline, its five
  one-statement fenced writes with their ledger rows and commits, the same parameters)
  sent raw on one connection, without the store's Python (no pool, error mapping,
  read-back of a lost commit, row readers or Job objects): what ReelQueue's schema and
  SQL cost whatever the code around them; the store's distance from it is the code's.
- **procrastinate**: ``batch_defer`` beforehand; ``run_worker(wait=False)`` runs a no-op
  task until none is left (its documented API, default settings).
- **pgqueuer**: ``Queries.enqueue`` beforehand; ``QueueManager.run(mode=drain)`` runs a
  no-op entrypoint until none is left (its documented API and defaults: it fetches jobs
  in batches of 10).

Jobs are enqueued before the clock starts, each round in a fresh database. With W workers,
W processes (fork) take jobs until none is left; the figure is jobs per second of wall time
from a common start. Rounds interleave the contenders (rotating which goes first) so that
a busy machine slows all alike; each figure is the median over the rounds, and each ratio
is against the raw loop of the same worker count. Nothing here is a test and nothing
asserts a time.

Per job, measured in the same rounds on the server: transactions (``pg_stat_database``
``xact_commit``) and WAL flushes (``pg_stat_wal.wal_sync``, PostgreSQL 14 and later; the
server's WAL writer's flushes count too). Round trips and statements per job are counted
on the client in one extra one-worker pass per psycopg contender, from libpq's own trace
of the protocol (``PQtrace``): a round trip is a ``Sync`` (the end of an extended-protocol
exchange or of a pipeline) or a simple ``Query``, where the client waits for the server's
answer; a statement is a simple ``Query`` or an extended
``Execute``. procrastinate and pgqueuer run on their own async connections and are not
traced (server-side figures only).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import psycopg

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests.pgserver
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import NOW, machine_line, median, print_table, run_forked

from reelqueue.domain.models import AccountSpec, BatchSpec, JobSpec
from reelqueue.store.base import ClaimParams
from reelqueue.store.postgres import PostgresStore
from reelqueue.store.provider_limits import VIEW_FRESH_SECONDS

Setup = Callable[[str, int], None]
Work = Callable[[str, int], int]  # (database URL, worker index) -> jobs done

MIN_LEASE = 60.0
LEASE = 600.0


# -- ReelQueue ---------------------------------------------------------------------------
def reelqueue_setup(url: str, jobs: int) -> None:
    store = PostgresStore.open(url, now=NOW)
    try:
        batch = store.create_batch(BatchSpec("bench", "bench.csv", "/tmp/bench"), NOW)
        store.add_jobs(batch.id, [
            JobSpec(job_key=f"k{i:07d}", prompt=f"a red fox at sunrise #{i}",
                    provider="mock", output_path=f"/tmp/bench/{i:07d}.mp4",
                    params={"duration": 5}, row_number=i + 2, name=f"clip {i}")
            for i in range(jobs)], NOW)
        store.add_account(AccountSpec("acct", "mock", 1000), NOW)
    finally:
        store.close()


def reelqueue_work(url: str, worker: int) -> int:
    store = PostgresStore.open(url, now=NOW)
    params = ClaimParams("acct", f"bench-{worker}", NOW, LEASE)
    done = 0
    try:
        while (claim := store.claim_next_job(params)) is not None:
            token = claim.token
            assert store.mark_submitting(token, uuid.uuid4().hex, NOW,
                                         min_lease_seconds=MIN_LEASE)
            assert store.record_submitted(token, f"pj-{token.job_id}", NOW)
            assert store.mark_downloading(token, NOW)
            assert store.mark_completed(token, size=1000, sha256="ab" * 32, cost=None,
                                        now=NOW)
            done += 1
    finally:
        store.close()
    return done


# -- floor: ReelQueue's own schema and statements, without the store's layers -----------
def floor_work(url: str, worker: int) -> int:
    """The floor of ReelQueue's schema and statements: the store's own claim pipeline
    (BEGIN, the account's row lock, ``claim_fast``, COMMIT) and its one-statement fenced
    writes (``one_trip_*`` around ``fenced_*``, each with its ledger rows and the same
    commit), the same parameters, sent raw on one connection; none of the store's Python
    (no pool, error mapping, read-back, row readers or Job objects)."""
    from psycopg.rows import dict_row
    from psycopg.types.json import Jsonb

    from reelqueue.domain.row_limits import refusal_params
    from reelqueue.store.pg_sql import fenced_sql, pg_queries, positional

    q = pg_queries()
    owner = f"bench-{worker}"
    claim_sql, claim_names = positional(q["claim_fast"].encode())
    lock_sql, lock_names = positional(q["lock_account"].encode())
    writes = [(event, *positional(fenced_sql(template, update, durable)), extra)
              for event, template, update, durable, extra in (
                  ("submitting", "one_trip_submitting", "fenced_mark_submitting", True,
                   {"min_lease": MIN_LEASE}),
                  ("submitted", "one_trip_submitted", "fenced_record_submitted", True, {}),
                  ("downloading", "one_trip_fenced", "fenced_mark_downloading", False,
                   {"output_path": None, "part": None}),
                  ("completed", "one_trip_completed", "fenced_mark_completed", True,
                   {"size": 1000, "sha256": "ab" * 32, "cost": None, "host": "bench",
                    "slack": 1e-9}))]
    done = 0
    with psycopg.connect(url, autocommit=True, cursor_factory=psycopg.RawCursor,
                         row_factory=dict_row) as db:
        while True:
            token = uuid.uuid4().hex
            args: dict[str, Any] = {
                "account": "acct", "token": token, "owner": owner, "lease_seconds": LEASE,
                "now": NOW, "creates": True, "skip_batches": [], "clock": None,
                "name": "acct", "skip_models": [], "default_model": None,
                "view_fresh_seconds": VIEW_FRESH_SECONDS, **refusal_params()}
            with db.pipeline():
                db.execute(q["begin"])
                db.execute(lock_sql, [args[n] for n in lock_names])
                cur = db.execute(claim_sql, [args[n] for n in claim_names])
                db.execute(q["commit"])
            row = cur.fetchone()
            if row is None or row["id"] is None:
                return done
            job_id = row["id"]
            for event, sql, names, extra in writes:
                detail = {"client_token": uuid.uuid4().hex} if event == "submitting" else (
                    {"provider_job_id": f"pj-{job_id}"} if event == "submitted" else {})
                values = {**args, **extra, **detail, "id": job_id, "event": event,
                          "detail": Jsonb(detail),
                          "fenced_detail": Jsonb({"write": event})}
                assert db.execute(sql, [values[n] for n in names]).fetchone() is not None
            done += 1


# -- raw and hand: their own schema ------------------------------------------------------
OWN_SCHEMA = """
CREATE TABLE accounts (name text PRIMARY KEY, capacity integer NOT NULL);
CREATE TABLE jobs (id bigserial PRIMARY KEY, state text NOT NULL, payload jsonb NOT NULL,
                   account text, owner text, token text, client_token text,
                   provider_job_id text, lease_until double precision,
                   updated_at double precision);
CREATE INDEX jobs_state ON jobs (state, id);
CREATE INDEX jobs_live ON jobs (account, state);
CREATE TABLE ledger (seq bigserial PRIMARY KEY, at double precision, event text,
                     job_id bigint, account text, token text, detail jsonb);
"""


def own_setup(url: str, jobs: int) -> None:
    with psycopg.connect(url) as db:
        db.execute(OWN_SCHEMA)
        db.execute("INSERT INTO accounts VALUES ('acct', 1000)")
        db.execute("INSERT INTO jobs (state, payload) SELECT 'QUEUED', "
                   "jsonb_build_object('prompt', 'a red fox at sunrise #' || i) "
                   "FROM generate_series(1, %s) AS i", (jobs,))


def raw_work(url: str, worker: int) -> int:
    done = 0
    with psycopg.connect(url) as db:
        while True:
            token = uuid.uuid4().hex
            row = db.execute(
                "UPDATE jobs SET state = 'CLAIMED', owner = %s, token = %s, updated_at = %s "
                "WHERE id = (SELECT id FROM jobs WHERE state = 'QUEUED' ORDER BY id "
                "LIMIT 1 FOR UPDATE SKIP LOCKED) RETURNING id",
                (f"bench-{worker}", token, NOW)).fetchone()
            if row is None:
                db.commit()
                return done
            db.execute("INSERT INTO ledger (at, event, job_id, token, detail) VALUES "
                       "(%s, 'claimed', %s, %s, '{}')", (NOW, row[0], token))
            db.commit()
            changed = db.execute("UPDATE jobs SET state = 'COMPLETED', updated_at = %s "
                                 "WHERE id = %s AND token = %s",
                                 (NOW, row[0], token)).rowcount
            assert changed == 1
            db.execute("INSERT INTO ledger (at, event, job_id, token, detail) VALUES "
                       "(%s, 'completed', %s, %s, '{}')", (NOW, row[0], token))
            db.commit()
            done += 1


SERVER_NOW = "extract(epoch FROM clock_timestamp())::double precision"
HAND_CLAIM = f"""
WITH live AS (SELECT COUNT(*) AS n FROM jobs
               WHERE account = %(account)s
                 AND state IN ('CLAIMED', 'SUBMITTING', 'RENDERING', 'DOWNLOADING')),
c AS (SELECT id FROM jobs
       WHERE state = 'QUEUED'
         AND (SELECT n FROM live) < (SELECT capacity FROM accounts WHERE name = %(account)s)
       ORDER BY id LIMIT 1 FOR UPDATE SKIP LOCKED),
j AS (UPDATE jobs SET state = 'CLAIMED', account = %(account)s, owner = %(owner)s,
             token = %(token)s, lease_until = {SERVER_NOW} + %(lease)s,
             updated_at = %(now)s
        FROM c WHERE jobs.id = c.id RETURNING jobs.id),
l AS (INSERT INTO ledger (at, event, job_id, account, token, detail)
      SELECT {SERVER_NOW}, 'claimed', j.id, %(account)s, %(token)s,
             jsonb_build_object('owner', %(owner)s::text) FROM j)
SELECT id FROM j
"""
HAND_FENCED = f"""
WITH j AS (UPDATE jobs SET state = %(to)s, updated_at = %(now)s,
                  client_token = COALESCE(%(client_token)s, client_token),
                  provider_job_id = COALESCE(%(provider_job_id)s, provider_job_id)
            WHERE id = %(id)s AND token = %(token)s AND state = %(from)s
              AND (%(min_lease)s::double precision IS NULL
                   OR lease_until - {SERVER_NOW} >= %(min_lease)s::double precision)
           RETURNING id, account),
l AS (INSERT INTO ledger (at, event, job_id, account, token, detail)
      SELECT {SERVER_NOW}, %(event)s, j.id, j.account, %(token)s, %(detail)s FROM j),
f AS (INSERT INTO ledger (at, event, job_id, token, detail)
      SELECT {SERVER_NOW}, 'fenced_out', %(id)s, %(token)s, '{{}}'::jsonb
       WHERE NOT EXISTS (SELECT 1 FROM j))
SELECT id FROM j
"""


def hand_work(url: str, worker: int) -> int:
    from psycopg.types.json import Jsonb

    done = 0
    owner = f"bench-{worker}"
    with psycopg.connect(url, autocommit=True) as db:
        while True:
            token = uuid.uuid4().hex
            # One round trip: BEGIN, the account's lock, the claim, COMMIT in one flush.
            with db.pipeline():
                db.execute("BEGIN")
                db.execute("SET LOCAL synchronous_commit = off")
                db.execute("SELECT capacity FROM accounts WHERE name = %s FOR UPDATE",
                           ("acct",))
                cur = db.execute(HAND_CLAIM, {"account": "acct", "owner": owner,
                                              "token": token, "lease": LEASE, "now": NOW})
                db.execute("COMMIT")
            row = cur.fetchone()
            if row is None:
                return done
            job_id = row[0]
            for step, (before, after, extra) in enumerate((
                    ("CLAIMED", "SUBMITTING", {"client_token": uuid.uuid4().hex}),
                    ("SUBMITTING", "RENDERING", {"provider_job_id": f"pj-{job_id}"}),
                    ("RENDERING", "COMPLETED", {}))):
                fenced = db.execute(HAND_FENCED, {
                    "to": after, "from": before, "id": job_id, "token": token, "now": NOW,
                    "client_token": extra.get("client_token"),
                    "provider_job_id": extra.get("provider_job_id"),
                    "min_lease": MIN_LEASE if step == 0 else None,
                    "event": after.lower(), "detail": Jsonb(extra)}).fetchone()
                assert fenced is not None
            done += 1


# -- procrastinate -----------------------------------------------------------------------
_PROCRASTINATE_DONE = [0]


def _procrastinate(url: str) -> Any:
    import logging

    import procrastinate

    logging.getLogger("procrastinate").setLevel(logging.ERROR)

    app = procrastinate.App(connector=procrastinate.PsycopgConnector(
        conninfo=url, kwargs={"autocommit": True}))

    @app.task(name="noop")
    def noop(i: int) -> None:
        _PROCRASTINATE_DONE[0] += 1

    return app, noop


def procrastinate_setup(url: str, jobs: int) -> None:
    app, noop = _procrastinate(url)
    with app.open():
        app.schema_manager.apply_schema()
        for start in range(0, jobs, 1000):
            noop.batch_defer(*[{"i": i} for i in range(start, min(jobs, start + 1000))])


def procrastinate_work(url: str, worker: int) -> int:
    app, _ = _procrastinate(url)
    _PROCRASTINATE_DONE[0] = 0
    with app.open():
        app.run_worker(wait=False, install_signal_handlers=False, listen_notify=False)
    return _PROCRASTINATE_DONE[0]


# -- pgqueuer ----------------------------------------------------------------------------
def pgqueuer_setup(url: str, jobs: int) -> None:
    from pgqueuer.adapters.drivers.psycopg import PsycopgDriver
    from pgqueuer.adapters.persistence.queries import Queries

    async def setup() -> None:
        conn = await psycopg.AsyncConnection.connect(url, autocommit=True)
        try:
            queries = Queries(PsycopgDriver(conn))
            await queries.install()
            for start in range(0, jobs, 1000):
                n = min(jobs, start + 1000) - start
                await queries.enqueue(["noop"] * n, [f"{start + i}".encode()
                                                     for i in range(n)], [0] * n)
        finally:
            await conn.close()

    asyncio.run(setup())


def pgqueuer_work(url: str, worker: int) -> int:
    import logging

    from pgqueuer.adapters.drivers.psycopg import PsycopgDriver
    from pgqueuer.adapters.persistence.queries import Queries
    from pgqueuer.core.qm import QueueManager
    from pgqueuer.domain.types import QueueExecutionMode

    logging.getLogger("pgqueuer").setLevel(logging.WARNING)
    done = [0]

    async def work() -> None:
        conn = await psycopg.AsyncConnection.connect(url, autocommit=True)
        try:
            manager = QueueManager(Queries(PsycopgDriver(conn)))

            @manager.entrypoint("noop")
            async def noop(job: Any) -> None:
                done[0] += 1

            await manager.run(mode=QueueExecutionMode.drain)
        finally:
            await conn.close()

    asyncio.run(work())
    return done[0]


CONTENDERS: dict[str, tuple[Setup, Work]] = {
    "raw": (own_setup, raw_work),
    "hand": (own_setup, hand_work),
    "reelqueue": (reelqueue_setup, reelqueue_work),
    "floor": (reelqueue_setup, floor_work),
    "procrastinate": (procrastinate_setup, procrastinate_work),
    "pgqueuer": (pgqueuer_setup, pgqueuer_work),
}
TRACED = ("raw", "hand", "reelqueue", "floor")


# -- the server and its counters ---------------------------------------------------------
@contextmanager
def server(dsn: str | None) -> Iterator[str]:
    if dsn:
        yield dsn
        return
    from tests.pgserver import start_server

    found = start_server()
    try:
        assert found.folder is not None
        # Started again without the tests' fsync=off: commits wait for the disk.
        found.ctl("stop", "-m", "fast", "-w")
        port = found.dsn.rsplit(":", 1)[1].split("/")[0]
        started = found.ctl("start", "-w", "-t", "60", "-l", str(found.folder / "server.log"),
                            "-o", f"-p {port} -k {found.folder} "
                            "-c listen_addresses=127.0.0.1 -c max_connections=200",
                            timeout=90)
        if started.returncode:
            raise RuntimeError(f"pg_ctl start failed: {started.stderr.strip()}")
        yield found.dsn
    finally:
        found.stop()


@contextmanager
def fresh_database(server_dsn: str) -> Iterator[str]:
    name = f"bench_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(server_dsn, autocommit=True) as db:
        db.execute(f'CREATE DATABASE "{name}"')
    try:
        yield server_dsn.rsplit("/", 1)[0] + f"/{name}"
    finally:
        with psycopg.connect(server_dsn, autocommit=True) as db:
            db.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def server_counters(server_dsn: str, database: str) -> tuple[int, int | None]:
    """(commits in ``database``, the server's WAL syncs; None before PostgreSQL 14)."""
    with psycopg.connect(server_dsn, autocommit=True) as db:
        db.execute("SELECT pg_stat_force_next_flush()")
        db.execute("SELECT pg_stat_clear_snapshot()")
        row = db.execute("SELECT xact_commit FROM pg_stat_database WHERE datname = %s",
                         (database,)).fetchone()
        commits = int(row[0]) if row else 0
        try:
            wal = db.execute("SELECT wal_sync FROM pg_stat_wal").fetchone()
        except psycopg.Error:
            return commits, None
    return commits, int(wal[0]) if wal else None


PER_JOB: dict[str, list[tuple[float, float | None]]] = {}


TREES: dict[str, Path] = {}
"""``--trees``: label -> a source tree whose ``app/`` runs as contender ``reelqueue@label``."""


def tree_step(label: str, step: str, url: str, jobs: int, workers: int) -> str:
    """This script run again with tree ``label``'s ``app/`` first on the path, for one
    step of a round (``setup``, or ``work``: the workers, timed by the subprocess)."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(TREES[label] / "app"), *filter(None, [os.environ.get("PYTHONPATH")])])}
    done = subprocess.run(
        [sys.executable, __file__, "--tree-step", step, str(workers), url, "--jobs", str(jobs)],
        env=env, check=True, capture_output=True, text=True)
    return done.stdout


def one_round(name: str, server_dsn: str, jobs: int, workers: int) -> float:
    """Jobs per second of one contender's round with ``workers`` processes."""
    with fresh_database(server_dsn) as url:
        database = url.rsplit("/", 1)[1]
        tree = name.removeprefix("reelqueue@") if name.startswith("reelqueue@") else None
        if tree is None:
            CONTENDERS[name][0](url, jobs)
        else:
            tree_step(tree, "setup", url, jobs, workers)
        time.sleep(0.6)  # the setup's statistics reach the server's counters
        commits0, wal0 = server_counters(server_dsn, database)
        if tree is None:
            elapsed = run_workers(name, url, jobs, workers)
        else:
            elapsed = float(tree_step(tree, "work", url, jobs, workers).split()[-1])
        time.sleep(0.6)  # the workers' statistics (sent as their backends exit)
        commits1, wal1 = server_counters(server_dsn, database)
        PER_JOB.setdefault(name, []).append(
            ((commits1 - commits0) / jobs,
             None if wal0 is None or wal1 is None else (wal1 - wal0) / jobs))
        return jobs / elapsed


def run_workers(name: str, url: str, jobs: int, workers: int) -> float:
    """Seconds for ``workers`` forked processes to take every job of ``url``."""
    elapsed, done = run_forked(name, CONTENDERS[name][1], url, workers)
    assert done == jobs, f"{name}: {done} of {jobs} jobs done"
    return elapsed


def traced_pass(name: str, server_dsn: str, jobs: int) -> tuple[float, float]:
    """(round trips, statements) per job, from libpq's trace of one worker's connections."""
    setup, work = CONTENDERS[name]
    with fresh_database(server_dsn) as url, tempfile.TemporaryDirectory() as scratch:
        setup(url, jobs)
        files: list[Any] = []
        original = psycopg.Connection.connect.__func__  # type: ignore[attr-defined]

        def connect(cls: Any, *args: Any, **kwargs: Any) -> Any:
            conn = original(cls, *args, **kwargs)
            trace = open(Path(scratch) / f"{len(files)}.trace", "w")  # noqa: SIM115
            files.append(trace)
            conn.pgconn.trace(trace.fileno())
            conn.pgconn.set_trace_flags(psycopg.pq.Trace.SUPPRESS_TIMESTAMPS)
            return conn

        module_connect = psycopg.connect
        psycopg.Connection.connect = classmethod(connect)  # type: ignore[assignment,method-assign]
        psycopg.connect = psycopg.Connection.connect
        try:
            assert work(url, 0) == jobs
        finally:
            psycopg.Connection.connect = classmethod(original)  # type: ignore[assignment,method-assign]
            psycopg.connect = module_connect
        trips = statements = 0
        for trace in files:
            trace.close()
            for line in Path(trace.name).read_text(errors="replace").splitlines():
                parts = line.split("\t")
                if len(parts) < 3 or parts[0] != "F":
                    continue
                # The client waits for the server at each Sync (extended protocol, or the
                # end of a pipeline) and each simple Query.
                trips += parts[2] in ("Sync", "Query")
                statements += parts[2] in ("Execute", "Query")
        return trips / jobs, statements / jobs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=1000, help="jobs per round")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 3])
    parser.add_argument("--only", nargs="+", choices=list(CONTENDERS),
                        help="run these contenders only (raw is always run)")
    parser.add_argument("--trace-jobs", type=int, default=200,
                        help="jobs of the traced one-worker pass (0: skip it)")
    parser.add_argument("--dsn", help="a server of your own (a database is made per round)")
    parser.add_argument("--trees", nargs="+", default=[], metavar="LABEL=PATH",
                        help="also run ReelQueue from these source trees (PATH/app) as "
                             "contenders reelqueue@LABEL, in the same interleaved rounds: "
                             "a before/after in one run (e.g. base=/path/to/main)")
    parser.add_argument("--tree-step", nargs=3, metavar=("STEP", "WORKERS", "URL"),
                        help=argparse.SUPPRESS)  # a --trees contender's subprocess
    args = parser.parse_args()
    if args.tree_step:
        step, workers, url = args.tree_step
        if step == "setup":
            reelqueue_setup(url, args.jobs)
        else:
            print(run_workers("reelqueue", url, args.jobs, int(workers)))
        return
    for tree in args.trees:
        label, _, path = tree.partition("=")
        TREES[label] = Path(path).resolve()
    names = ["raw", *[n for n in (args.only or CONTENDERS) if n != "raw"],
             *[f"reelqueue@{label}" for label in TREES]]
    print(machine_line())
    with server(args.dsn) as server_dsn:
        with psycopg.connect(server_dsn, autocommit=True) as db:
            settings = db.execute(
                "SELECT current_setting('server_version'), current_setting('fsync'), "
                "current_setting('synchronous_commit')").fetchone()
        assert settings is not None
        print(f"PostgreSQL {settings[0]}, fsync={settings[1]}, "
              f"synchronous_commit={settings[2]} (loopback, pid {os.getpid()})")
        traced = {name: traced_pass(name, server_dsn, args.trace_jobs)
                  for name in names if name in TRACED and args.trace_jobs}
        rates: dict[tuple[str, int], list[float]] = {}
        for workers in args.workers:
            for n in range(args.rounds):
                turn = n % len(names)
                for name in names[turn:] + names[:turn]:
                    rates.setdefault((name, workers), []).append(
                        one_round(name, server_dsn, args.jobs, workers))
    table = [("contender", *[f"W={w} jobs/s" for w in args.workers],
              *[f"W={w} vs raw" for w in args.workers],
              *[f"W={w} vs hand, per round" for w in args.workers if "hand" in names],
              "round trips", "statements", "commits", "WAL flushes")]
    for name in names:
        medians = [median(rates[(name, w)]) for w in args.workers]
        raws = [median(rates[("raw", w)]) for w in args.workers]
        # The median of each round's own ratio to the hand-written loop of the same round
        # (issue 20's target): less moved by a load spike that hits one round.
        per_round = [median([x / h for x, h in zip(rates[(name, w)], rates[("hand", w)],
                                                   strict=True)])
                     for w in args.workers if "hand" in names]
        trips, statements = traced.get(name, (None, None))
        commits = median(c for c, _ in PER_JOB[name])
        flushes = [f for _, f in PER_JOB[name] if f is not None]
        table.append((name, *[f"{m:.0f}" for m in medians],
                      *[f"{m / r:.2f}x" for m, r in zip(medians, raws, strict=True)],
                      *[f"{p:.2f}x" for p in per_round],
                      "n/a" if trips is None else f"{trips:.2f}",
                      "n/a" if statements is None else f"{statements:.2f}",
                      f"{commits:.2f}",
                      f"{median(flushes):.2f}" if flushes else "unavailable"))
    print(f"full job life, {args.jobs} jobs per round, median of {args.rounds} interleaved "
          "rounds; per job: round trips and statements (client trace, one worker), "
          "commits and WAL flushes (server counters, median over all rounds)")
    print_table(table)
    print(machine_line())


if __name__ == "__main__":
    main()
