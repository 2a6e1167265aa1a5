"""Benchmark: group commit of the render transitions (issue 33 item 5), jobs per second.

    python benchmarks/bench_group_commit.py [--jobs 600] [--rounds 5] [--tasks 8 32]
    python benchmarks/bench_group_commit.py --postgres [--dsn URL] ...

A job's whole life in one engine process: ``claim_next_job`` -> ``mark_submitting`` ->
``record_submitted`` -> ``mark_downloading`` -> ``mark_completed``, by T concurrent
asyncio tasks (the engine's render workers) through one :class:`AsyncStore` on one journal
file, until no job is left. Contenders, each at T:

- **group**: AsyncStore as it ships: the transitions that arrive together share one
  transaction and one fsync (a savepoint each); the claim runs alone.
- **one-by-one**: the same tasks with every transition in its own transaction (the
  journal before group commit): the control, to see what grouping alone changes.
- **raw**: the raw two-transaction loop of ``compare_sqlite_queues.py`` (claim, then
  completion, each ``BEGIN IMMEDIATE`` ... ``COMMIT`` with an fsync) run by T threads, each
  with its own connection on one file: the issue's target is group ahead of it.

SQLite: WAL with ``synchronous=FULL`` for every durable commit, on a real disk (``--dir``).
``--postgres``: the same contenders on the team journal (``PostgresStore``; **raw** is
``compare_pg_queues.py``'s raw loop, T threads with a connection each), each round in a
fresh database of a throwaway server on loopback with ``fsync=on`` (or ``--dsn``). Rounds
interleave the contenders, rotating which goes first, so a busy machine slows all alike;
each figure is the median over the rounds, and the load average is printed before and
after. Nothing here is a test and nothing asserts a time.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, TypeVar

import compare_pg_queues as pg
import psycopg
from _common import NOW, machine_line, median, print_table
from compare_sqlite_queues import raw_setup, raw_work

from reelqueue.domain.models import AccountSpec, BatchSpec, JobSpec
from reelqueue.engine.async_store import AsyncStore
from reelqueue.store.base import ClaimParams, Store
from reelqueue.store.postgres import PostgresStore
from reelqueue.store.sqlite import SqliteStore

T = TypeVar("T")


class OneByOne(AsyncStore):
    """AsyncStore with group commit off: each transition is its own transaction."""

    async def _grouped(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        return await self.call(fn, *args, **kwargs)


async def _lives(store: AsyncStore, tasks: int) -> int:
    params = ClaimParams("acct", "bench-instance", NOW, 600.0)

    async def worker() -> int:
        done = 0
        while (claim := await store.claim_next_job(params)) is not None:
            token = claim.token
            assert await store.mark_submitting(token, uuid.uuid4().hex, NOW)
            assert await store.record_submitted(token, f"pj-{token.job_id}", NOW)
            assert await store.mark_downloading(token, NOW)
            assert await store.mark_completed(token, size=1000, sha256="ab" * 32,
                                              cost=0.05, now=NOW)
            done += 1
        return done

    return sum(await asyncio.gather(*(worker() for _ in range(tasks))))


def store_round(sync: Store, where: str, jobs: int, tasks: int,
                wrapper: type[AsyncStore]) -> float:
    batch = sync.create_batch(BatchSpec("bench", "bench.csv", where), NOW)
    sync.add_jobs(batch.id, [JobSpec(f"k{i:06d}", f"a red fox at sunrise #{i}", "mock",
                                     f"{where}/{i:06d}.mp4", params={"duration": 5},
                                     row_number=i + 2) for i in range(jobs)], NOW)
    sync.add_account(AccountSpec("acct", "mock", tasks), NOW)
    store = wrapper(sync)
    try:
        started = time.perf_counter()
        done = asyncio.run(_lives(store, tasks))
        elapsed = time.perf_counter() - started
    finally:
        store.shutdown()
        sync.close()
    assert done == jobs, f"only {done} of {jobs} jobs done"
    return jobs / elapsed


def sqlite_round(folder: Path, jobs: int, tasks: int, wrapper: type[AsyncStore]) -> float:
    return store_round(SqliteStore.open(folder / "journal.sqlite3", now=NOW), str(folder),
                       jobs, tasks, wrapper)


def raw_round(folder: Path, jobs: int, tasks: int) -> float:
    raw_setup(folder, jobs)
    return threaded(jobs, tasks, lambda worker: raw_work(folder, worker))


def threaded(jobs: int, tasks: int, work: Callable[[int], int]) -> float:
    started = time.perf_counter()
    with ThreadPoolExecutor(max_workers=tasks) as pool:
        done = sum(pool.map(work, range(tasks)))
    elapsed = time.perf_counter() - started
    assert done == jobs, f"only {done} of {jobs} jobs done"
    return jobs / elapsed


Contender = Callable[[Any, int, int], float]  # (folder or server DSN, jobs, T) -> jobs/s

CONTENDERS: dict[str, Contender] = {
    "group": lambda folder, jobs, tasks: sqlite_round(folder, jobs, tasks, AsyncStore),
    "one-by-one": lambda folder, jobs, tasks: sqlite_round(folder, jobs, tasks, OneByOne),
    "raw": raw_round,
}


WAL_PER_JOB: dict[str, list[tuple[float, float]]] = {}
"""--postgres: per contender, each round's (commits, WAL syncs) per job, from the server's
own counters (pg_stat_database, pg_stat_wal)."""


@contextlib.contextmanager
def counted(server: str, name: str, jobs: int) -> Iterator[str]:
    with pg.fresh_database(server) as url:
        database = url.rsplit("/", 1)[1]
        commits, syncs = pg.server_counters(server, database)
        yield url
        commits_after, syncs_after = pg.server_counters(server, database)
        WAL_PER_JOB.setdefault(name, []).append(
            ((commits_after - commits) / jobs,
             ((syncs_after or 0) - (syncs or 0)) / jobs))


def pg_round(server: str, jobs: int, tasks: int, wrapper: type[AsyncStore]) -> float:
    name = "group" if wrapper is AsyncStore else "one-by-one"
    with counted(server, f"{name} T={tasks}", jobs) as url:
        return store_round(PostgresStore.open(url, now=NOW), "/tmp/bench", jobs, tasks,
                           wrapper)


def pg_raw_round(server: str, jobs: int, tasks: int) -> float:
    with counted(server, f"raw T={tasks}", jobs) as url:
        pg.own_setup(url, jobs)
        return threaded(jobs, tasks, lambda worker: pg.raw_work(url, worker))


PG_CONTENDERS: dict[str, Contender] = {
    "group": lambda server, jobs, tasks: pg_round(server, jobs, tasks, AsyncStore),
    "one-by-one": lambda server, jobs, tasks: pg_round(server, jobs, tasks, OneByOne),
    "raw": pg_raw_round,
}


def load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=600, help="job lives per round")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--tasks", type=int, nargs="+", default=[8, 32])
    parser.add_argument("--dir", type=Path, default=Path(tempfile.gettempdir()),
                        help="where the journals are written (a real disk: fsync counts)")
    parser.add_argument("--postgres", action="store_true",
                        help="the team journal on PostgreSQL instead of SQLite")
    parser.add_argument("--dsn", help="with --postgres: a server to use (else a throwaway "
                        "one on loopback, fsync on)")
    args = parser.parse_args()
    with contextlib.ExitStack() as stack:
        if args.postgres:
            server = stack.enter_context(pg.server(args.dsn))
            with psycopg.connect(server) as db:
                row = db.execute("SELECT current_setting('server_version'), "
                                 "current_setting('fsync')").fetchone()
            print(f"PostgreSQL {row[0] if row else '?'}, fsync={row[1] if row else '?'}")
        run(args, PG_CONTENDERS if args.postgres else CONTENDERS,
            lambda: contextlib.nullcontext(server) if args.postgres
            else tempfile.TemporaryDirectory(dir=args.dir))


def run(args: argparse.Namespace, contenders: dict[str, Contender],
        where: Callable[[], contextlib.AbstractContextManager[Any]]) -> None:
    print(machine_line())
    print(f"load average before: {load()}")
    names = list(contenders)
    rates: dict[tuple[str, int], list[float]] = {}
    for n in range(args.rounds):
        order = names[n % len(names):] + names[:n % len(names)]
        for tasks in args.tasks:
            for name in order:
                with where() as scratch:
                    rate = contenders[name](
                        scratch if args.postgres else Path(scratch), args.jobs, tasks)
                rates.setdefault((name, tasks), []).append(rate)
    table = [("contender", *[f"T={t} jobs/s" for t in args.tasks],
              *[f"T={t} vs raw" for t in args.tasks],
              *[f"T={t} vs raw, per round" for t in args.tasks], "rounds (jobs/s)")]
    for name in names:
        medians = [median(rates[(name, t)]) for t in args.tasks]
        # The ratio within each round (the same minutes of load), then its median: on a
        # shared disk the rounds' own rates vary more than the contenders differ.
        per_round = [median(a / b for a, b in zip(rates[(name, t)], rates[("raw", t)],
                                                   strict=True)) for t in args.tasks]
        table.append((name, *[f"{m:.0f}" for m in medians],
                      *[f"{m / median(rates[('raw', t)]):.2f}x"
                        for m, t in zip(medians, args.tasks, strict=True)],
                      *[f"{r:.2f}x" for r in per_round],
                      " | ".join(" ".join(f"{r:.0f}" for r in rates[(name, t)])
                                 for t in args.tasks)))
    print(f"median of {args.rounds} interleaved rounds of {args.jobs} job lives "
          f"(group / one-by-one: 5 transactions a job; raw: 2)")
    print_table(table)
    if WAL_PER_JOB:
        print("per job, medians of the rounds (the server's counters; setup included):")
        print_table([("contender", "commits", "WAL syncs")] + [
            (name, f"{median(c for c, _ in seen):.2f}", f"{median(w for _, w in seen):.2f}")
            for name, seen in WAL_PER_JOB.items()])
    print(f"load average after: {load()}")
    print(machine_line())


if __name__ == "__main__":
    main()
