"""Benchmark: group commit of the render transitions (issue 33 item 5), jobs per second.

    python benchmarks/bench_group_commit.py [--jobs 600] [--rounds 5] [--tasks 8 32]

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

WAL with ``synchronous=FULL`` for every durable commit, on a real disk (``--dir``). Rounds
interleave the contenders, rotating which goes first, so a busy machine slows all alike;
each figure is the median over the rounds, and the load average is printed before and
after. Nothing here is a test and nothing asserts a time.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import tempfile
import time
import uuid
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, TypeVar

from _common import NOW, machine_line, median, print_table
from compare_sqlite_queues import raw_setup, raw_work

from reelqueue.domain.models import AccountSpec, BatchSpec, JobSpec
from reelqueue.engine.async_store import AsyncStore
from reelqueue.store.base import ClaimParams
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


def store_round(folder: Path, jobs: int, tasks: int, wrapper: type[AsyncStore]) -> float:
    sync = SqliteStore.open(folder / "journal.sqlite3", now=NOW)
    batch = sync.create_batch(BatchSpec("bench", "bench.csv", str(folder)), NOW)
    sync.add_jobs(batch.id, [JobSpec(f"k{i:06d}", f"a red fox at sunrise #{i}", "mock",
                                     str(folder / f"{i:06d}.mp4"), params={"duration": 5},
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


def raw_round(folder: Path, jobs: int, tasks: int) -> float:
    raw_setup(folder, jobs)
    started = time.perf_counter()
    with ThreadPoolExecutor(max_workers=tasks) as pool:
        done = sum(pool.map(lambda worker: raw_work(folder, worker), range(tasks)))
    elapsed = time.perf_counter() - started
    assert done == jobs, f"only {done} of {jobs} jobs done"
    return jobs / elapsed


CONTENDERS: dict[str, Callable[[Path, int, int], float]] = {
    "group": lambda folder, jobs, tasks: store_round(folder, jobs, tasks, AsyncStore),
    "one-by-one": lambda folder, jobs, tasks: store_round(folder, jobs, tasks, OneByOne),
    "raw": raw_round,
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
    args = parser.parse_args()
    print(machine_line())
    print(f"load average before: {load()}")
    names = list(CONTENDERS)
    rates: dict[tuple[str, int], list[float]] = {}
    for n in range(args.rounds):
        order = names[n % len(names):] + names[:n % len(names)]
        for tasks in args.tasks:
            for name in order:
                with tempfile.TemporaryDirectory(dir=args.dir) as scratch:
                    rate = CONTENDERS[name](Path(scratch), args.jobs, tasks)
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
    print(f"load average after: {load()}")
    print(machine_line())


if __name__ == "__main__":
    main()
