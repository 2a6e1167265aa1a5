"""``reelqueue self-test``: the whole pipeline, headless, against the built-in mock provider.

It works in a throwaway folder, runs four checks (:mod:`reelqueue.application.selftest`),
writes a report (Markdown and JSON), deletes everything else it made, and exits non-zero
if any check failed.
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
from pathlib import Path

from reelqueue.application.selftest import run_checks, write_report
from reelqueue.cli.context import CliContext


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    test = sub.add_parser("self-test", help="run the whole pipeline against the mock provider")
    test.add_argument("--report-dir", type=Path, default=None,
                      help="where the report goes (default: DATA_DIR/reports)")
    test.add_argument("--keep", action="store_true", help="keep the throwaway folder")
    test.set_defaults(handler=handle)


def handle(args: argparse.Namespace, ctx: CliContext) -> int:
    root = Path(tempfile.mkdtemp(prefix="reelqueue-self-test-"))
    try:
        results = run_checks(root)
    finally:
        if args.keep:
            ctx.print(f"Kept the throwaway folder {root}")
        else:
            shutil.rmtree(root, ignore_errors=True)
    for r in results:
        ctx.print(f"{'PASS' if r.passed else 'FAIL'}  {r.name} ({r.seconds}s)")
        for failure in r.failures:
            ctx.print(f"      {failure.splitlines()[0] if failure else failure}")
    md, js = write_report(results, args.report_dir or ctx.data_dir / "reports")
    ctx.print(f"Report: {md} and {js}")
    return 0 if all(r.passed for r in results) else 1
