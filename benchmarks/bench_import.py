"""Benchmark: importing a 100,000-row sheet into a fresh journal, against a floor.

    PYTHONPATH=app python benchmarks/bench_import.py [--rows 100000] [--runs 3]

For the CSV and the XLSX it times ``plan_import`` + ``apply_import`` (reading, mapping,
validating every row against the mock provider, keys, file names, the estimate, the SQLite
journal's ``add_jobs`` and the manifest) into a fresh ``SqliteStore``. The baseline, run in
the same process on the same file, is the least any importer must do: ``csv.reader`` and
one ``executemany`` into a similar table at the same durability (WAL, synchronous=FULL).
Each figure is the median of ``--runs`` interleaved rounds (baseline, CSV, XLSX), so a busy
machine slows all three alike. Peak memory is the maximum resident set (VmHWM) of a child
process doing one import, so the interpreter is counted too.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import random
import resource
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterable
from pathlib import Path

NOW = 1_800_000_000.0
SUBJECTS = ["a red fox", "an old lighthouse", "a paper boat", "a neon street", "a glacier",
            "a street market", "a hummingbird", "a steam train", "a koi pond", "a desert road"]
ACTIONS = ["at sunrise", "in the rain", "in slow motion", "seen from a drone", "at night",
           "in a snowstorm", "during golden hour", "under northern lights"]
STYLES = ["cinematic", "35 mm film", "documentary", "macro close-up", "wide establishing shot"]
RATIOS = ["16:9", "9:16", "1:1"]


def write_csv(path: Path, rows: int) -> None:
    rng = random.Random(5)
    with path.open("w", encoding="utf-8-sig", newline="") as stream:
        writer = csv.writer(stream)
        writer.writerow(["name", "prompt", "duration", "aspect_ratio", "seed", "notes"])
        for index in range(rows):
            prompt = (f"{rng.choice(SUBJECTS)} {rng.choice(ACTIONS)}, {rng.choice(STYLES)}, "
                      f"shot {index}")
            writer.writerow([f"clip {index}", prompt, rng.randint(2, 12), rng.choice(RATIOS),
                             rng.randint(0, 2**31), f"take {index % 7}"])


def write_xlsx(csv_path: Path, path: Path) -> None:
    from openpyxl import Workbook

    book = Workbook(write_only=True)
    sheet = book.create_sheet("Prompts")
    with csv_path.open(encoding="utf-8-sig", newline="") as stream:
        reader = csv.reader(stream)
        sheet.append(next(reader))
        for name, prompt, duration, ratio, seed, notes in reader:
            sheet.append([name, prompt, int(duration), ratio, int(seed), notes])
    book.save(path)


SPLITS: dict[str, list[tuple[float, float]]] = {}
"""Per sheet format: (plan_import, apply_import) seconds of each timed import."""


def import_with_reelqueue(sheet: Path, work: Path) -> int:
    from reelqueue.intake import ImportOptions, apply_import, plan_import
    from reelqueue.store.sqlite import SqliteStore

    store = SqliteStore.open(work / "journal.sqlite3", now=NOW)
    try:
        started = time.perf_counter()
        plan = plan_import(sheet, ImportOptions(output_root=work / "videos"),
                           existing_keys=store.existing_job_keys, now=NOW)
        planned = time.perf_counter()
        result = apply_import(store, plan, NOW)
        SPLITS.setdefault(sheet.suffix, []).append(
            (planned - started, time.perf_counter() - planned))
    finally:
        store.close()
    return result.added


BASELINE_SCHEMA = """
CREATE TABLE jobs (
    id INTEGER PRIMARY KEY, batch_id INTEGER NOT NULL, job_key TEXT NOT NULL UNIQUE,
    row_number INTEGER, name TEXT NOT NULL, prompt TEXT NOT NULL, provider TEXT NOT NULL,
    params TEXT NOT NULL, output_path TEXT NOT NULL, state TEXT NOT NULL DEFAULT 'QUEUED',
    metadata TEXT NOT NULL, created_at REAL NOT NULL
)
"""


def import_baseline(sheet: Path, work: Path) -> int:
    """csv.reader + one executemany, at the journal's durability."""
    db = sqlite3.connect(work / "baseline.sqlite3", isolation_level=None)
    db.execute("PRAGMA journal_mode = WAL")
    db.execute("PRAGMA synchronous = FULL")
    db.execute(BASELINE_SCHEMA)
    with sheet.open(encoding="utf-8-sig", newline="") as stream:
        reader = csv.reader(stream)
        header = next(reader)
        rows = [
            (1, f"{number}", number, row[0], row[1], "mock",
             json.dumps({"duration": row[2], "aspect_ratio": row[3], "seed": row[4]}),
             f"/videos/{number}.mp4", json.dumps(dict(zip(header, row, strict=False))), NOW)
            for number, row in enumerate(reader, start=2)
        ]
    db.execute("BEGIN IMMEDIATE")
    db.executemany(
        "INSERT INTO jobs (batch_id, job_key, row_number, name, prompt, provider, params, "
        "output_path, metadata, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", rows)
    db.execute("COMMIT")
    db.close()
    return len(rows)


def timed(run: Callable[[Path, Path], int], sheet: Path) -> tuple[float, int]:
    with tempfile.TemporaryDirectory() as work:
        started = time.perf_counter()
        count = run(sheet, Path(work))
        return time.perf_counter() - started, count


def median_of(results: Iterable[tuple[float, int]]) -> tuple[float, int]:
    listed = list(results)
    return statistics.median(seconds for seconds, _ in listed), listed[-1][1]


def peak_rss_mb(sheet: Path) -> float:
    """One import in a child process; its peak resident set in MB."""
    output = subprocess.run(
        [sys.executable, __file__, "--child", str(sheet)], check=True, capture_output=True,
        text=True,
    ).stdout
    return float(output.strip().splitlines()[-1])


def child(sheet: Path) -> None:
    with tempfile.TemporaryDirectory() as work:
        import_with_reelqueue(sheet, Path(work))
    print(f"{peak_kb() / 1024:.0f}")


def peak_kb() -> int:
    """This process's peak RSS in KB. Linux keeps ``ru_maxrss`` across ``execve`` (a
    child would report its parent's peak), so the memory map's own VmHWM comes first."""
    status = Path("/proc/self/status")
    if status.exists():
        for line in status.read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KB on Linux


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--child", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child)
        return
    with tempfile.TemporaryDirectory() as scratch:
        folder = Path(scratch)
        csv_path, xlsx_path = folder / "prompts.csv", folder / "prompts.xlsx"
        write_csv(csv_path, args.rows)
        write_xlsx(csv_path, xlsx_path)
        # Interleaved rounds, so that a busy machine slows all three alike.
        rounds = [
            (timed(import_baseline, csv_path), timed(import_with_reelqueue, csv_path),
             timed(import_with_reelqueue, xlsx_path))
            for _ in range(args.runs)
        ]
        baseline, base_rows = median_of(r[0] for r in rounds)
        csv_time, csv_rows = median_of(r[1] for r in rounds)
        xlsx_time, xlsx_rows = median_of(r[2] for r in rounds)
        csv_peak, xlsx_peak = peak_rss_mb(csv_path), peak_rss_mb(xlsx_path)
    assert base_rows == csv_rows == xlsx_rows == args.rows, (base_rows, csv_rows, xlsx_rows)
    load = ", ".join(f"{value:.1f}" for value in os.getloadavg())
    print(f"rows: {args.rows:,}; median of {args.runs} interleaved runs; "
          f"Python {sys.version.split()[0]}; {os.cpu_count()} CPUs, load average {load}")
    print("| what | seconds | rows/s | x baseline | peak RSS |")
    print("|---|---:|---:|---:|---:|")
    print(f"| baseline: csv.reader + one executemany (CSV) | {baseline:.2f} | "
          f"{args.rows / baseline:,.0f} | 1.00 | |")
    print(f"| ReelQueue plan_import + apply_import (CSV) | {csv_time:.2f} | "
          f"{args.rows / csv_time:,.0f} | {csv_time / baseline:.2f} | {csv_peak:.0f} MB |")
    print(f"| ReelQueue plan_import + apply_import (XLSX) | {xlsx_time:.2f} | "
          f"{args.rows / xlsx_time:,.0f} | {xlsx_time / baseline:.2f} | {xlsx_peak:.0f} MB |")
    for suffix, splits in SPLITS.items():
        plan = statistics.median(split[0] for split in splits)
        apply = statistics.median(split[1] for split in splits)
        print(f"{suffix[1:].upper()}: plan_import {plan:.2f} s, apply_import {apply:.2f} s "
              f"(medians)")


if __name__ == "__main__":
    main()
