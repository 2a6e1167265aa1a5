"""``reelqueue demo``: the sample sheet rendered by three built-in mock accounts.

Needs no account and no key. Where there is a display and the program has a window (the
GUI extra is installed; :mod:`reelqueue.entry` gives the opener) it opens the window on
the demo batch; otherwise it runs headless with a progress line.
Its journal and videos live in ``demo`` folders apart from the user's own.

Pacing: each demo account asks the built-in mock for renders of 20-26 s
(``render_seconds``), so every card shows renders progressing for at least 20 s: the
three accounts (2 + 3 + 4 slots) take 9 of the 12 jobs at once and the last 3 as slots
free up, about 45 s in all, in the window as on the headless progress line.
``--reset`` clears the demo (its journal, and the videos in its batch folders) and runs
it again.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from reelqueue.application.demo import (
    DEMO_ACCOUNTS,
    DEMO_BATCH,
    DEMO_RENDER_SECONDS,
    prepare_demo,
    reset_demo,
)
from reelqueue.cli.context import CliContext
from reelqueue.domain.errors import WindowUnavailable
from reelqueue.resources import resource


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    demo = sub.add_parser("demo", help="render the sample sheet on built-in mock accounts")
    demo.add_argument("--no-gui", action="store_true", help="headless, even with a display")
    demo.add_argument("--reset", action="store_true",
                      help="clear the demo (its jobs and videos) and run it again")
    demo.add_argument("--sheet", type=Path, default=None, help=argparse.SUPPRESS)
    demo.set_defaults(handler=handle)


def has_display() -> bool:
    if sys.platform in ("win32", "darwin"):
        return True
    return bool(os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"))


def demo_context(ctx: CliContext) -> CliContext:
    """The demo's own journal; its videos in the batch folder ``demo`` of the videos
    folder (``Videos/ReelQueue/demo/``)."""
    return CliContext(data_dir=ctx.data_dir / "demo", videos_dir=ctx.videos_dir,
                      out=ctx.out, clock=ctx.clock, open_window=ctx.open_window)


def prepare(ctx: CliContext, sheet: Path,
            render_seconds: tuple[float, float] | None = DEMO_RENDER_SECONDS) -> None:
    """Create the demo accounts and import the sample sheet (idempotent), and say so.
    ``render_seconds``: the accounts' pace (None: the mock's own, fast; for tests)."""
    result = prepare_demo(ctx, sheet, render_seconds)
    ctx.print(f"Demo: {result.added} new jobs from {sheet.name} "
              f"({result.already_present} already there) on "
              f"{len(DEMO_ACCOUNTS)} mock accounts; journal in {ctx.data_dir}, "
              f"videos in {ctx.videos_dir / DEMO_BATCH}.")
    if not result.added:
        ctx.print("The demo has run before: 'reelqueue demo --reset' clears it and runs "
                  "it again.")
    elif result.unpaced:
        ctx.print("These demo accounts come from an older version and render in a blink: "
                  "'reelqueue demo --reset' sets them up again.")


def reset(ctx: CliContext) -> None:
    """Clear the demo (``ctx`` is :func:`demo_context`): its journal and its videos."""
    removed = reset_demo(ctx)
    ctx.print(f"Demo reset: its journal and {removed} files in its video folders removed.")


def handle(args: argparse.Namespace, ctx: CliContext) -> int:
    demo = demo_context(ctx)
    if args.reset:
        reset(demo)
    prepare(demo, args.sheet or resource("sample_prompts.csv"))
    if not args.no_gui and demo.open_window is not None:
        if not has_display():
            demo.print("No display found (neither DISPLAY nor WAYLAND_DISPLAY is set): "
                       "the demo runs headless here.")
        else:
            try:
                return demo.open_window(demo, start=True)
            except WindowUnavailable as exc:
                demo.print(f"{exc}\nThe demo runs headless here instead.")
    from reelqueue.application.config import EngineConfig
    from reelqueue.cli.cmd_run import run_headless

    return run_headless(demo, EngineConfig(), budget=None, progress=True)


def open_window_or_help(ctx: CliContext, parser: argparse.ArgumentParser,
                        sheet: Path | None = None) -> int:
    """``reelqueue`` alone (or with a sheet): the window on ``ctx`` (its folders and its
    journal, a team database included) where there is one (``ctx.open_window`` given and a
    display), else help."""
    open_window = ctx.open_window
    if has_display() and open_window is not None:
        try:
            return open_window(ctx, start=False, open_sheet=sheet)
        except WindowUnavailable as exc:
            print(f"reelqueue: {exc}", file=sys.stderr)
            if sheet is not None:
                print(f"Meanwhile import it with 'reelqueue import {sheet}' or render it "
                      f"with 'reelqueue run {sheet}'.", file=sys.stderr)
            else:
                print("Meanwhile the commands of 'reelqueue --help' need no window (try "
                      "'reelqueue demo').", file=sys.stderr)
            return 2
    if sheet is not None:
        print(f"No display to open {sheet} in; import it with 'reelqueue import {sheet}' "
              f"or render it with 'reelqueue run {sheet}'.")
        return 2
    parser.print_help()
    if not has_display():
        print("\nNo display found: use the commands above (try 'reelqueue demo').")
    return 0
