"""Benchmark: start-up recovery of a 100k-job journal with 1k jobs in flight.

    python benchmarks/bench_recovery.py [--jobs 100000] [--in-flight 1000] [--rounds 5]

Two journals: a big batch killed half-way -- 40% of the jobs COMPLETED with their videos
on disk (and six ledger rows each), 1,000 in flight (CLAIMED, SUBMITTING and RENDERING;
20 of them with their finished video already renamed into place), 500 RETRY_WAIT, 500
FAILED, the rest QUEUED, and 100 ``.part`` files of dead attempts in the batch folder --
and the same with no completed job (a big import killed early).

Timed: ``Engine._recover()``, everything the engine does before its pump may start:
``store.recover`` (one write transaction: finished-on-disk -> completed, provider job id
-> reattach, submit window -> requeue with a possible-duplicate-charge entry, the rest
-> requeue; the ledger pruned by age), the size check of every completed job's video,
the removal of ``.part`` files and the resume of reattached renders. The accounts use a
provider kind with no adapter, so no worker starts and nothing is sent anywhere. Each
round recovers a fresh copy of the same journal; each step is also timed on its own.

Baseline: one raw SQL UPDATE of the 1,000 in-flight rows in one transaction, at the
journal's durability, on a copy of the same file. Target: recovery < 0.5 s.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import shutil
import sqlite3
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

from _common import (
    NOW,
    add_account,
    add_batch,
    bulk_connection,
    machine_line,
    median,
    new_journal,
    print_table,
)

from reelqueue.domain.clock import FakeClock
from reelqueue.domain.states import IN_FLIGHT
from reelqueue.engine.engine import Engine
from reelqueue.engine.outputs import check_output, missing_outputs, remove_partials
from reelqueue.resources import resource
from reelqueue.store.base import RecoverParams
from reelqueue.store.sqlite import SqliteStore

VIDEO = resource("sample.mp4").read_bytes()
SHA = hashlib.sha256(VIDEO).hexdigest()
COLUMNS = ("batch_id, job_key, row_number, name, prompt, provider, params, output_path, "
           "state, attempts, account, claim_token, lease_owner, lease_until, client_token, "
           "provider_job_id, run_after, output_size, output_sha256, created_at, updated_at, "
           "started_at, finished_at")


def rows(batch: int, jobs: int, in_flight: int, completed: int, videos: Path,
         ) -> Iterator[tuple[object, ...]]:
    params = json.dumps({"duration": 5, "aspect_ratio": "16:9"})
    for i in range(jobs):
        path = str(videos / f"{i:06d}.mp4")
        base: tuple[object, ...] = (batch, f"job-{i:06d}", i + 2, f"clip {i}",
                                    f"a red fox at sunrise #{i}", "bench", params, path)
        if i < completed:
            state: tuple[object, ...] = ("COMPLETED", 1, "acct-1", None, None, None, f"ct-{i}",
                                         f"pj-{i}", 0, len(VIDEO), SHA, NOW, NOW, NOW, NOW)
        elif i < completed + in_flight:
            kind = ("CLAIMED", "SUBMITTING", "RENDERING", "RENDERING")[i % 4]
            client = None if kind == "CLAIMED" else f"ct-{i}"
            render = f"pj-{i}" if kind == "RENDERING" else None
            state = (kind, 1, f"acct-{i % 3 + 1}", f"tok-{i}", "dead-instance", NOW - 5,
                     client, render, 0, None, None, NOW, NOW, NOW, None)
        elif i < completed + in_flight + 500:
            state = ("RETRY_WAIT", 1, None, None, None, None, None, None, NOW + 60, None, None,
                     NOW, NOW, NOW, None)
        elif i < completed + in_flight + 1000:
            state = ("FAILED", 3, None, None, None, None, None, None, 0, None, None, NOW, NOW,
                     NOW, NOW)
        else:
            state = ("QUEUED", 0, None, None, None, None, None, None, 0, None, None, NOW, NOW,
                     None, None)
        yield (*base, *state)


def ledger_rows(completed: int) -> Iterator[tuple[object, ...]]:
    for i in range(1, completed + 1):
        for event in ("claimed", "submitting", "submitted", "remote_status", "downloading",
                      "completed"):
            yield (NOW, event, i, "acct-1", f"tok-{i}", "{}")


def build(folder: Path, jobs: int, in_flight: int, completed: int) -> tuple[Path, Path, float]:
    """The journal (checkpointed into one file) and the batch folder."""
    started = time.perf_counter()
    path = folder / "template.sqlite3"
    videos = folder / "videos"
    videos.mkdir()
    new_journal(path)
    db = bulk_connection(path)
    try:
        db.execute("BEGIN IMMEDIATE")
        batch = add_batch(db, videos)
        for n in (1, 2, 3):
            add_account(db, f"acct-{n}", 500, provider="bench")
        db.executemany(f"INSERT INTO jobs ({COLUMNS}) VALUES ({', '.join('?' * 23)})",
                       rows(batch, jobs, in_flight, completed, videos))
        db.executemany("INSERT INTO ledger (at, event, job_id, account, claim_token, detail)"
                       " VALUES (?, ?, ?, ?, ?, ?)", ledger_rows(completed))
        db.execute("COMMIT")
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        on_disk = [r[0] for r in db.execute(
            "SELECT output_path FROM jobs WHERE state = 'COMPLETED' OR (state IN "
            "('CLAIMED', 'SUBMITTING', 'RENDERING') AND id % 50 = 7)")]
    finally:
        db.close()
    for output in on_disk:  # 20 in-flight jobs' videos were renamed into place before the kill
        Path(output).write_bytes(VIDEO)
    for n in range(100):
        (videos / f".{n:06d}.mp4.deadbeef0000.part").write_bytes(VIDEO[:1000])
    return path, videos, time.perf_counter() - started


def fresh_copy(template: Path, videos: Path, target: Path) -> Path:
    shutil.copyfile(template, target)
    for n in range(100):
        (videos / f".{n:06d}.mp4.deadbeef0000.part").write_bytes(VIDEO[:1000])
    return target


async def engine_recover(path: Path) -> tuple[float, int]:
    store = SqliteStore.open(path, now=NOW)
    engine = Engine(store, clock=FakeClock(NOW + 1))
    started = time.perf_counter()
    report = await engine._recover()
    elapsed = time.perf_counter() - started
    await engine.stop()
    engine.close_store()
    store.close()
    return elapsed, report.touched


def steps(path: Path, videos: Path) -> dict[str, float]:
    """The same work, one step at a time, on the calling thread."""
    store = SqliteStore.open(path, now=NOW)
    try:
        timings: dict[str, float] = {}
        started = time.perf_counter()
        store.recover(RecoverParams("bench", NOW + 1, 60.0, False, check_output,
                                    prune_before=NOW + 1 - 90 * 86400))
        timings["store.recover (one transaction)"] = time.perf_counter() - started
        started = time.perf_counter()
        outputs = store.completed_outputs()
        timings["read completed jobs' (id, path, size)"] = time.perf_counter() - started
        started = time.perf_counter()
        assert not missing_outputs(outputs)
        timings["stat their videos"] = time.perf_counter() - started
        started = time.perf_counter()
        remove_partials({videos})
        timings["remove .part files"] = time.perf_counter() - started
        started = time.perf_counter()
        store.list_jobs(None, list(IN_FLIGHT))
        timings["list in-flight jobs to resume"] = time.perf_counter() - started
        return timings
    finally:
        store.close()


def raw_update(path: Path) -> float:
    db = sqlite3.connect(str(path), isolation_level=None)
    try:
        db.execute("PRAGMA journal_mode = WAL")
        db.execute("PRAGMA synchronous = FULL")
        started = time.perf_counter()
        db.execute("BEGIN IMMEDIATE")
        changed = db.execute(
            "UPDATE jobs SET state = 'QUEUED', claim_token = NULL, lease_owner = NULL, "
            "lease_until = NULL, account = NULL, client_token = NULL, provider_job_id = NULL,"
            " updated_at = ? WHERE state IN ('CLAIMED', 'SUBMITTING', 'RENDERING', "
            "'DOWNLOADING')", (NOW + 1,)).rowcount
        db.execute("COMMIT")
        elapsed = time.perf_counter() - started
        assert changed > 0
        return elapsed
    finally:
        db.close()


def scenario(folder: Path, jobs: int, in_flight: int, completed: int, rounds: int) -> None:
    template, videos, built = build(folder, jobs, in_flight, completed)
    print(f"\njournal: {jobs:,} jobs, {completed:,} completed with their videos, "
          f"{in_flight:,} in flight; {template.stat().st_size / 2**20:.0f} MiB, built in "
          f"{built:.1f} s")
    totals: list[float] = []
    baselines: list[float] = []
    parts: dict[str, list[float]] = {}
    touched = 0
    for n in range(rounds):
        copy = fresh_copy(template, videos, folder / f"round-{n}.sqlite3")
        elapsed, touched = asyncio.run(engine_recover(copy))
        totals.append(elapsed)
        copy.unlink()
        copy = fresh_copy(template, videos, folder / f"steps-{n}.sqlite3")
        for label, seconds in steps(copy, videos).items():
            parts.setdefault(label, []).append(seconds)
        copy.unlink()
        copy = fresh_copy(template, videos, folder / f"raw-{n}.sqlite3")
        baselines.append(raw_update(copy))
        copy.unlink()
    total, baseline = median(totals), median(baselines)
    print(f"recovery touched {touched} jobs; medians of {rounds} rounds")
    table = [("step", "ms")]
    table += [(f"  {label}", f"{median(values) * 1e3:.1f}") for label, values in parts.items()]
    table.append(("Engine._recover() in all", f"{total * 1e3:.1f}"))
    table.append(("baseline: one UPDATE of the in-flight rows", f"{baseline * 1e3:.1f}"))
    table.append(("ratio recovery / baseline", f"{total / baseline:.1f}x"))
    print_table(table)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=100_000)
    parser.add_argument("--in-flight", type=int, default=1000)
    parser.add_argument("--completed", type=float, default=0.4,
                        help="share of completed jobs in the first journal")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--dir", type=Path, default=Path(tempfile.gettempdir()))
    args = parser.parse_args()
    print(machine_line())
    for completed in (int(args.jobs * args.completed), 0):
        with tempfile.TemporaryDirectory(dir=args.dir) as scratch:
            scenario(Path(scratch), args.jobs, args.in_flight, completed, args.rounds)
    print(machine_line())


if __name__ == "__main__":
    main()
