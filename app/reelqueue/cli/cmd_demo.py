"""``reelqueue demo``: the sample sheet rendered by three built-in mock accounts.

Needs no account and no key. Where there is a display (and the GUI extra is installed) it
opens the window on the demo batch; otherwise it runs headless with a progress line.
Its journal and videos live in ``demo`` folders apart from the user's own.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from reelqueue.cli.context import CliContext
from reelqueue.domain.models import AccountSpec
from reelqueue.resources import resource

DEMO_ACCOUNTS = (("mock-small", 2), ("mock-medium", 3), ("mock-large", 4))


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    demo = sub.add_parser("demo", help="render the sample sheet on built-in mock accounts")
    demo.add_argument("--no-gui", action="store_true", help="headless, even with a display")
    demo.add_argument("--sheet", type=Path, default=None, help=argparse.SUPPRESS)
    demo.set_defaults(handler=handle)


def has_display() -> bool:
    if sys.platform in ("win32", "darwin"):
        return True
    return bool(os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"))


def gui_available() -> bool:
    """The GUI extra is installed and the window module exists (Qt itself is only
    imported by the ui package)."""
    from importlib.util import find_spec

    return all(find_spec(name) is not None for name in ("PySide6", "qasync")) and (
        find_spec("reelqueue.ui.app") is not None)


def demo_context(ctx: CliContext) -> CliContext:
    return CliContext(data_dir=ctx.data_dir / "demo", videos_dir=ctx.videos_dir / "demo",
                      out=ctx.out, clock=ctx.clock)


def prepare(ctx: CliContext, sheet: Path) -> None:
    """Create the demo accounts and import the sample sheet (idempotent)."""
    from reelqueue.intake import ImportOptions, apply_import, plan_import

    with ctx.open_store() as store:
        for name, capacity in DEMO_ACCOUNTS:
            if store.get_account(name) is None:
                store.add_account(AccountSpec(name, "mock", capacity), ctx.clock.now())
        plan = plan_import(sheet, ImportOptions(provider="mock", output_root=ctx.videos_dir,
                                                batch_name="demo"),
                           existing_keys=store.existing_job_keys)
        result = apply_import(store, plan, ctx.clock.now())
    ctx.print(f"Demo: {result.added} new jobs from {sheet.name} "
              f"({result.already_present} already there) on "
              f"{len(DEMO_ACCOUNTS)} mock accounts; journal in {ctx.data_dir}, "
              f"videos in {ctx.videos_dir}.")


def handle(args: argparse.Namespace, ctx: CliContext) -> int:
    demo = demo_context(ctx)
    prepare(demo, args.sheet or resource("sample_prompts.csv"))
    if not args.no_gui and has_display() and gui_available():
        from reelqueue.ui.app import run_app

        return int(run_app(demo, start=True))
    from reelqueue.cli.cmd_run import drive, finish
    from reelqueue.engine.config import EngineConfig

    with demo.open_store() as store:
        result = drive(demo, store, EngineConfig(), budget=None, progress=True)
        return finish(demo, store, result)


def open_window_or_help(args: argparse.Namespace, parser: argparse.ArgumentParser,
                        sheet: Path | None = None) -> int:
    """``reelqueue`` alone (or with a sheet): the window where there is one, else help."""
    if has_display() and gui_available():
        from reelqueue.cli.context import default_data_dir, default_videos_dir
        from reelqueue.ui.app import run_app

        ctx = CliContext(data_dir=(args.data_dir or default_data_dir()).resolve(),
                         videos_dir=(args.videos_dir or default_videos_dir()).resolve())
        return int(run_app(ctx, start=False, open_sheet=sheet))
    if sheet is not None:
        print(f"No display to open {sheet} in; import it with 'reelqueue import {sheet}' "
              f"or render it with 'reelqueue run {sheet}'.")
        return 2
    parser.print_help()
    if not has_display():
        print("\nNo display found: use the commands above (try 'reelqueue demo').")
    return 0
