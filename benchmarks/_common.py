"""Helpers shared by the engine benchmarks (issue 3): machine notes, medians, big journals.

Run any benchmark as ``python benchmarks/bench_x.py``; each prints its own figures and the
ratio against a baseline measured in the same run. Nothing here asserts a time.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import platform
import queue
import sqlite3
import statistics
import sys
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

# Runnable from a checkout without an install: the package lives under app/.
_APP = Path(__file__).resolve().parent.parent / "app"
if _APP.is_dir() and str(_APP) not in sys.path:
    sys.path.insert(0, str(_APP))

from reelqueue.store.sqlite import SqliteStore  # noqa: E402

NOW = 1_800_000_000.0

IN_FLIGHT_STATES = ("CLAIMED", "SUBMITTING", "RENDERING", "DOWNLOADING")


def machine_line() -> str:
    """One line on the machine and how busy it was (the figures are only comparable
    within one run)."""
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    return (f"machine: {os.cpu_count()} CPUs, load {load:.2f}, Python "
            f"{platform.python_version()}, SQLite {sqlite3.sqlite_version}")


def median(values: Iterable[float]) -> float:
    return statistics.median(list(values))


def peak_rss_kb() -> int:
    """This process's peak resident set in KB. Linux keeps ``ru_maxrss`` across ``execve``
    (a child started by a big parent would report the parent's peak), so the memory map's
    own high-water mark (VmHWM) comes first."""
    status = Path("/proc/self/status")
    if status.exists():
        for line in status.read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    import resource

    return int(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)


def new_journal(path: Path) -> None:
    """An empty journal with the real schema (made by the store itself)."""
    SqliteStore.open(path, now=NOW).close()


def bulk_connection(path: Path) -> sqlite3.Connection:
    """A raw connection for building big journals fast (no fsync while loading)."""
    db = sqlite3.connect(str(path), isolation_level=None)
    db.execute("PRAGMA journal_mode = WAL")
    db.execute("PRAGMA synchronous = OFF")
    return db


def add_batch(db: sqlite3.Connection, output_dir: Path, max_attempts: int = 3) -> int:
    cursor = db.execute(
        "INSERT INTO batches (name, source_path, output_dir, max_attempts, settings, "
        "created_at) VALUES ('bench', 'bench.csv', ?, ?, '{}', ?)",
        (str(output_dir), max_attempts, NOW))
    return int(cursor.lastrowid or 0)


def add_account(db: sqlite3.Connection, name: str, capacity: int, provider: str = "mock",
                base_url: str | None = None) -> None:
    db.execute(
        "INSERT INTO accounts (name, provider, capacity, position, base_url, settings, "
        "created_at) VALUES (?, ?, ?, (SELECT COALESCE(MAX(position), 0) + 1 FROM accounts),"
        " ?, '{}', ?)", (name, provider, capacity, base_url, NOW))


def job_rows(batch_id: int, count: int, output_dir: Path, *, start: int = 0,
             provider: str = "mock", prompt: str = "a red fox at sunrise, cinematic",
             ) -> Iterator[tuple[object, ...]]:
    """Rows for ``insert_queued_jobs``: queued jobs like an import makes them."""
    params = json.dumps({"duration": 5, "aspect_ratio": "16:9"})
    for index in range(start, start + count):
        yield (batch_id, f"bench-{index:08d}", index + 2, f"clip {index}",
               f"{prompt} #{index}", provider, params,
               str(output_dir / f"{index:08d}.mp4"), NOW)


def insert_queued_jobs(db: sqlite3.Connection, rows: Iterable[tuple[object, ...]]) -> None:
    """One transaction, one executemany."""
    db.execute("BEGIN IMMEDIATE")
    db.executemany(
        "INSERT INTO jobs (batch_id, job_key, row_number, name, prompt, provider, params, "
        "output_path, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?9)", rows)
    db.execute("COMMIT")


def print_table(rows: Sequence[Sequence[str]]) -> None:
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    for row in rows:
        print("  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)))


def _forked_worker(work: Callable[[Any, int], int], target: Any, index: int, start: Any,
                   out: Any) -> None:
    start.wait()
    out.put(work(target, index))


def run_forked(name: str, work: Callable[[Any, int], int], target: Any,
               workers: int) -> tuple[float, int]:
    """``workers`` forked processes each running ``work(target, index)`` from a common
    start: (seconds from the start until all have answered, the jobs they report done).
    A worker that dies is an error, not a hang."""
    context = multiprocessing.get_context("fork")
    start, out = context.Barrier(workers + 1), context.Queue()
    processes = [context.Process(target=_forked_worker, args=(work, target, i, start, out))
                 for i in range(workers)]
    for process in processes:
        process.start()
    start.wait()
    started = time.perf_counter()
    results: list[int] = []
    while len(results) < workers:
        try:
            results.append(out.get(timeout=1))
        except queue.Empty:
            dead = [p.exitcode for p in processes if p.exitcode not in (None, 0)]
            if dead:
                raise RuntimeError(f"{name}: a worker died ({dead})") from None
    elapsed = time.perf_counter() - started
    for process in processes:
        process.join()
    return elapsed, sum(results)
