"""Benchmark: peak memory of an import of each hostile sheet, and of the largest fair ones.

    PYTHONPATH=app python benchmarks/bench_import_hostile.py [--skip-large]

Each sheet is imported (``plan_import`` + ``apply_import`` into a fresh SQLite journal) in a
child process of its own; the child reports what happened (refused, with the first words of
the message, or the jobs added), its seconds and its peak resident set (VmHWM, the
interpreter included). The sheets: every file of tests/fixtures/sheets/hostile/, a 1M-row
CSV and a 25 MB single-cell CSV (generated here), and for scale the largest sheets that
*are* imported: 100,000 rows as CSV and XLSX (the import benchmark's sheet), and 100,000
rows of 900-character prompts (a 96 MB CSV, just under the 100 MB file cap), and 100,000
rows of 500 euro signs in cp1252 (51 MB on disk, 101 MB decoded: just under the 100 MiB
text cap; the costliest text there is, two bytes in memory for each byte on disk).

The bound documented in docs/intake.md ("Limits") is checked against the maximum.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "fixtures"))

import bench_import
import make_hostile_sheets as make

BOUND_MB = 512
NOW = 1_800_000_000.0


def child(sheet: Path) -> None:
    from reelqueue.domain.errors import InputError
    from reelqueue.intake import ImportOptions, apply_import, plan_import
    from reelqueue.store.sqlite import SqliteStore

    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as work:
        store = SqliteStore.open(Path(work) / "journal.sqlite3", now=NOW)
        try:
            plan = plan_import(sheet, ImportOptions(output_root=Path(work) / "videos"),
                               existing_keys=store.existing_job_keys, now=NOW)
            outcome = f"imported {apply_import(store, plan, NOW).added:,} jobs"
        except InputError as exc:
            outcome = "refused: " + " ".join(str(exc).split()[:9]) + " ..."
        finally:
            store.close()
    print(f"{time.perf_counter() - started:.2f}\t{bench_import.peak_kb() / 1024:.0f}\t{outcome}")


def measure(sheet: Path) -> tuple[float, float, str]:
    output = subprocess.run([sys.executable, __file__, "--child", str(sheet)], check=True,
                            capture_output=True, text=True).stdout
    seconds, peak, outcome = output.strip().splitlines()[-1].split("\t", 2)
    return float(seconds), float(peak), outcome


def write_long_prompts(path: Path, rows: int = 100_000, chars: int = 900) -> Path:
    with path.open("w", encoding="utf-8", newline="") as stream:
        stream.write("name,prompt,duration\n")
        body = ("a slow dolly shot over a harbour at dawn, " * 30)[:chars]
        for index in range(rows):
            stream.write(f'clip {index},"{body} {index}",5\n')
    return path


def write_euro_prompts(path: Path, rows: int = 100_000, chars: int = 500) -> Path:
    """cp1252 euro signs: one byte each on disk, two in memory (the costliest text)."""
    with path.open("wb") as stream:
        stream.write(b"name,prompt,duration\n")
        euros = "\u20ac" * chars
        for index in range(rows):
            stream.write(f'clip {index},"{euros} {index}",5\n'.encode("cp1252"))
    return path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--child", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--skip-large", action="store_true",
                        help="only the committed hostile files and the two large CSVs")
    args = parser.parse_args()
    if args.child:
        child(args.child)
        return
    with tempfile.TemporaryDirectory() as scratch:
        folder = Path(scratch)
        sheets = sorted(make.HOSTILE.iterdir())
        sheets.append(make.write_million_rows(folder / "million_rows.csv"))
        sheets.append(make.write_one_huge_cell(folder / "one_25mb_cell.csv"))
        if not args.skip_large:
            bench_import.write_csv(folder / "prompts_100k.csv", 100_000)
            bench_import.write_xlsx(folder / "prompts_100k.csv", folder / "prompts_100k.xlsx")
            sheets += [folder / "prompts_100k.csv", folder / "prompts_100k.xlsx",
                       write_long_prompts(folder / "long_prompts_96mb.csv"),
                       write_euro_prompts(folder / "euro_prompts_cp1252.csv")]
        print("| sheet | size | seconds | peak RSS | outcome |\n|---|---:|---:|---:|---|")
        worst = 0.0
        for sheet in sheets:
            seconds, peak, outcome = measure(sheet)
            worst = max(worst, peak)
            print(f"| {sheet.name} | {sheet.stat().st_size / 1024:,.0f} KB | {seconds:.2f} | "
                  f"{peak:.0f} MB | {outcome} |", flush=True)
    verdict = "under" if worst < BOUND_MB else "OVER"
    print(f"\nworst peak {worst:.0f} MB: {verdict} the documented bound of {BOUND_MB} MB")


if __name__ == "__main__":
    main()
