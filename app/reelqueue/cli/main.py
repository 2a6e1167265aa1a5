"""The ``reelqueue`` command: parses arguments and hands each command its context.

Known errors (the environment's fault) are printed plainly with exit code 2; anything
else is a bug, logged with its traceback to the log file, and exits 70.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from collections.abc import Sequence
from pathlib import Path

from reelqueue import __version__
from reelqueue.application.compose import disable_plugins
from reelqueue.application.logs import setup_logging
from reelqueue.application.serving import ApiRunner
from reelqueue.cli.context import (
    CliContext,
    WindowOpener,
    default_data_dir,
    default_videos_dir,
    remember_videos_dir,
    remembered_videos_dir,
)
from reelqueue.domain.errors import HINTS, KnownError, ProviderError

log = logging.getLogger("reelqueue")

EXIT_INPUT = 2
EXIT_BUG = 70


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="reelqueue",
        description="Turn a spreadsheet of prompts into AI videos, crash-safe, across "
                    "several provider accounts. Without a command, opens the window.",
    )
    parser.add_argument("--version", action="version", version=f"reelqueue {__version__}")
    parser.add_argument("--data-dir", type=Path, default=None,
                        help="journal, lock and logs (default: the user data folder)")
    parser.add_argument("--videos-dir", type=Path, default=None,
                        help="where batch folders of videos go (default: Videos/ReelQueue)")
    parser.add_argument("--store", default=None, metavar="URL",
                        help="the team journal on PostgreSQL (postgresql://user@host/db, "
                             "no password in it; default: $REELQUEUE_STORE, else the local "
                             "journal in the data folder)")
    parser.add_argument("--no-plugins", action="store_true",
                        help="start without provider plug-ins (also "
                             "REELQUEUE_NO_PLUGINS=1); the built-in providers only")
    parser.add_argument("-v", "--verbose", action="store_true", help="log more to stderr")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    from reelqueue.cli import (
        cmd_accounts,
        cmd_demo,
        cmd_jobs,
        cmd_run,
        cmd_selftest,
        cmd_status,
    )

    cmd_run.register(sub)
    cmd_demo.register(sub)
    try:
        from reelqueue.cli import cmd_intake
    except ImportError:  # pragma: no cover - only while the intake is being built
        cmd_intake = None  # type: ignore[assignment]
    if cmd_intake is not None:
        cmd_intake.register(sub)
    cmd_status.register(sub)
    cmd_jobs.register(sub)
    from reelqueue.cli import cmd_spend

    cmd_spend.register(sub)
    from reelqueue.cli import cmd_review

    cmd_review.register(sub)
    cmd_accounts.register(sub)
    cmd_selftest.register(sub)
    from reelqueue.cli import cmd_serve, cmd_tokens

    cmd_serve.register(sub)
    cmd_tokens.register(sub)
    from reelqueue.cli import cmd_instances, cmd_migrate, cmd_worker

    cmd_worker.register(sub)
    cmd_instances.register(sub)
    cmd_migrate.register(sub)
    from reelqueue.cli import cmd_cut

    cmd_cut.register(sub)

    mock = sub.add_parser("mock-provider", help="run the mock video provider on loopback")
    from reelqueue.application.builtin_mock import add_mock_server_arguments, run_mock_server

    add_mock_server_arguments(mock)
    mock.set_defaults(handler=lambda args, ctx: run_mock_server(args), needs_context=False)
    return parser


SHEET_SUFFIXES = (".csv", ".tsv", ".txt", ".xlsx", ".xlsm", ".xls", ".ods")


def main(argv: Sequence[str] | None = None, *,
         open_window: WindowOpener | None = None, serve_api: ApiRunner | None = None) -> int:
    """Run the command of ``argv``; ``open_window`` opens the window where a command wants
    it (None: headless only; :mod:`reelqueue.entry` gives it when the GUI is installed)."""
    parser = build_parser()
    argv = list(sys.argv[1:] if argv is None else argv)
    sheet = _opened_sheet(argv)
    if sheet is not None:
        # "Open with ReelQueue" (the .desktop file, Windows and macOS file associations)
        # passes the sheet alone: open the window with the import dialog on it.
        from reelqueue.cli.cmd_demo import open_window_or_help

        argv.remove(str(sheet))
        args = parser.parse_args(argv)
        if args.no_plugins:
            disable_plugins()
        opened = _context_or_message(args, open_window, serve_api)
        if isinstance(opened, int):
            return opened
        return open_window_or_help(opened, parser, sheet=sheet)
    args = parser.parse_args(argv)
    if args.no_plugins:
        disable_plugins()
    found = _context_or_message(args, open_window, serve_api)
    if isinstance(found, int):
        return found
    ctx = found
    if args.command is None:
        from reelqueue.cli.cmd_demo import open_window_or_help

        return open_window_or_help(ctx, parser)
    if getattr(args, "needs_context", True):
        setup_logging(ctx.data_dir, args.verbose)
    try:
        return int(args.handler(args, ctx))
    except KnownError as exc:
        print(f"reelqueue: {exc}", file=sys.stderr)
        return EXIT_INPUT
    except ProviderError as exc:  # e.g. a key check: the provider's answer, in plain words
        print(f"reelqueue: {exc.label.value}: {exc}\n{HINTS.get(exc.label, '')}".rstrip(),
              file=sys.stderr)
        return EXIT_INPUT
    except KeyboardInterrupt:
        print("reelqueue: interrupted; in-flight renders are resumed next time.",
              file=sys.stderr)
        return 130
    except Exception:
        log.exception("unexpected error")
        print("reelqueue: an unexpected error occurred; details are in "
              f"{ctx.data_dir / 'logs' / 'reelqueue.log'}", file=sys.stderr)
        return EXIT_BUG


def _context_or_message(args: argparse.Namespace, open_window: WindowOpener | None,
                        serve_api: ApiRunner | None) -> CliContext | int:
    """:func:`context_of`, or the exit code after saying why there is none."""
    try:
        ctx = context_of(args, open_window, serve_api)
    except KnownError as exc:
        print(f"reelqueue: {exc}", file=sys.stderr)
        return EXIT_INPUT
    if args.videos_dir is not None and getattr(args, "needs_context", True):
        try:
            remember_videos_dir(ctx.data_dir, ctx.videos_dir)
        except OSError as exc:  # a read-only data folder: the command still runs
            print(f"reelqueue: note: the videos folder could not be remembered in "
                  f"{ctx.data_dir} ({exc.strerror or exc}); give --videos-dir again next "
                  "time.", file=sys.stderr)
    return ctx


def context_of(args: argparse.Namespace, open_window: WindowOpener | None,
               serve_api: ApiRunner | None) -> CliContext:
    """The folders and journal of ``args``, the same for a command and for the window:
    ``--data-dir``/``REELQUEUE_DATA_DIR``, ``--videos-dir`` (else the one the data folder
    remembers, else the default), ``--store``/``REELQUEUE_STORE`` (the window opened with
    ``--store postgresql://…`` used to open the local queue). InputError when the
    remembered videos folder cannot be used."""
    data_dir = args.data_dir or Path(os.environ.get("REELQUEUE_DATA_DIR") or default_data_dir())
    data_dir = data_dir.expanduser().resolve()
    videos_dir = (args.videos_dir or remembered_videos_dir(data_dir)
                  or default_videos_dir())
    store_url = args.store or os.environ.get("REELQUEUE_STORE") or None
    return CliContext(data_dir=data_dir,
                      videos_dir=videos_dir.expanduser().resolve(), open_window=open_window,
                      serve_api=serve_api, store_url=store_url)


def _opened_sheet(argv: list[str]) -> Path | None:
    positional: list[str] = []
    takes_value = False
    for arg in argv:
        if takes_value:
            takes_value = False
        elif arg in ("--data-dir", "--videos-dir", "--store"):
            takes_value = True
        elif not arg.startswith("-"):
            positional.append(arg)
    if len(positional) != 1 or positional[0] in _COMMANDS:
        return None
    candidate = Path(positional[0])
    if candidate.suffix.lower() in SHEET_SUFFIXES and candidate.is_file():
        return candidate
    return None


_COMMANDS = {"run", "demo", "import", "export", "status", "doctor", "retry", "cancel",
             "accounts", "self-test", "mock-provider", "serve", "tokens", "worker",
             "migrate-to", "store-password", "team-key", "instances"}


if __name__ == "__main__":
    raise SystemExit(main())
