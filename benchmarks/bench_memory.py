"""Benchmark: resident memory of a headless run holding 100k jobs.

    python benchmarks/bench_memory.py [--jobs 100000] [--budget 3] [--rounds 3]

A journal with 100k queued jobs and one mock account (limit 6, no base URL, so the
built-in mock provider starts in the process). Two headless runs, each in a child:

* ``engine``: the journal opened, recovery, the engine rendering for three seconds
  (``run_until_drained(budget_seconds=3)``: it stops claiming, waits for the renders in
  flight), stopped -- what ``reelqueue run`` does around its engine;
* ``reelqueue run --budget-seconds 3``: the real command, which also checks, before it
  starts, that the folder of every open job can be written.

Each child reports its own peak resident set (VmHWM; Linux keeps ``ru_maxrss`` across
``execve``, so the ``getrusage`` figure of a child would carry its parent's peak).
Baseline: a child that only imports the package (the command line, the engine, the store,
the mock provider). The same runs on a 1k-job journal show what the jobs themselves cost.
Target: < 150 MB.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
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
    peak_rss_kb,
    print_table,
)

IMPORTS = ("import reelqueue.cli.main, reelqueue.cli.cmd_run, reelqueue.engine.engine, "
           "reelqueue.store.sqlite, reelqueue.mockprovider, reelqueue.providers.mock, httpx2")


def build(data_dir: Path, jobs: int) -> None:
    data_dir.mkdir(parents=True)
    path = data_dir / "journal.sqlite3"
    new_journal(path)
    db = bulk_connection(path)
    try:
        db.execute("BEGIN IMMEDIATE")
        batch = add_batch(db, data_dir / "videos")
        add_account(db, "mock-1", 6)
        db.execute("COMMIT")
        insert_queued_jobs(db, job_rows(batch, jobs, data_dir / "videos"))
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        db.close()


def child(argv: list[str]) -> float:
    """Run this script as a child with ``argv``; its last line is the peak in KB."""
    done = subprocess.run([sys.executable, __file__, *argv], capture_output=True, text=True,
                          check=False)
    if done.returncode != 0:
        raise SystemExit(f"child {argv} failed ({done.returncode}):\n{done.stdout}\n"
                         f"{done.stderr}")
    return float(done.stdout.strip().splitlines()[-1]) / 1024


def engine_in_child(data_dir: Path, budget: float) -> None:
    import asyncio

    from reelqueue.application.builtin_mock import builtin_mock
    from reelqueue.engine.engine import Engine
    from reelqueue.providers.registry import ProviderRegistry
    from reelqueue.store.sqlite import SqliteStore

    async def drive(store: SqliteStore, providers: ProviderRegistry) -> str:
        engine = Engine(store, providers=providers)
        await engine.start()
        result = await engine.run_until_drained(budget_seconds=budget)
        await engine.stop()
        engine.close_store()
        return result.outcome

    store = SqliteStore.open(data_dir / "journal.sqlite3", now=NOW)
    try:
        with builtin_mock(store) as providers:  # the mock's URL: the registry's, not a global
            outcome = asyncio.run(drive(store, providers))
    finally:
        store.close()
    if outcome not in ("budget", "drained"):
        raise SystemExit(f"the engine ended {outcome}")
    print(peak_rss_kb())


def cli_in_child(data_dir: Path, budget: float) -> None:
    from reelqueue.cli.main import main as reelqueue

    code = reelqueue(["--data-dir", str(data_dir), "--videos-dir", str(data_dir / "videos"),
                      "run", "--budget-seconds", str(budget)])
    # 4: the budget ran out (the point of the exercise); 0: every job finished.
    if code not in (0, 4):
        raise SystemExit(f"reelqueue run exited {code}")
    print(peak_rss_kb())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=100_000)
    parser.add_argument("--budget", type=float, default=3.0)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--dir", type=Path, default=Path(tempfile.gettempdir()))
    parser.add_argument("--child-imports", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--child-engine", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--child-cli", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child_imports:
        exec(IMPORTS)  # the baseline: the package imported, nothing more
        print(peak_rss_kb())
        return
    if args.child_engine:
        engine_in_child(args.child_engine, args.budget)
        return
    if args.child_cli:
        cli_in_child(args.child_cli, args.budget)
        return
    print(machine_line())
    small = 1000
    kinds = {"engine": "--child-engine", "reelqueue run": "--child-cli"}
    results: dict[tuple[str, int], list[float]] = {}
    imports: list[float] = []
    for n in range(args.rounds):
        with tempfile.TemporaryDirectory(dir=args.dir) as scratch:
            folder = Path(scratch)
            imports.append(child(["--child-imports"]))
            line = [f"imports {imports[-1]:.1f}"]
            for kind, flag in kinds.items():
                for jobs in (small, args.jobs):
                    data_dir = folder / f"{flag}-{jobs}"
                    build(data_dir, jobs)  # a fresh journal for every run
                    peak = child([flag, str(data_dir), "--budget", str(args.budget)])
                    results.setdefault((kind, jobs), []).append(peak)
                    line.append(f"{kind} {jobs:,} {peak:.1f}")
            print(f"round {n + 1} (MB): " + ", ".join(line))
    base = median(imports)
    print(f"\npeak resident set (VmHWM), median of {args.rounds} rounds; {args.budget:g} s "
          "of rendering on one mock account (limit 6)")
    table = [("process", "peak MB", "vs baseline")]
    table.append(("baseline: interpreter + package imported", f"{base:.1f}", "1.00x"))
    for (kind, jobs), peaks in results.items():
        table.append((f"{kind}, {jobs:,} queued jobs", f"{median(peaks):.1f}",
                      f"{median(peaks) / base:.2f}x"))
    print_table(table)
    for kind in kinds:
        grown = median(results[(kind, args.jobs)]) - median(results[(kind, small)])
        print(f"{kind}: about {grown * 2**20 / (args.jobs - small):,.0f} bytes of peak "
              "memory per job")
    print(machine_line())


if __name__ == "__main__":
    main()
