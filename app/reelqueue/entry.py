"""The ``reelqueue`` program: decides which front end runs.

The only module that may import both front ends (``tests/test_layers.py``): the command
line parses the arguments and runs headless commands; where a command wants the window
(``reelqueue`` alone, ``reelqueue SHEET`` from "Open with", ``reelqueue demo``) it calls
the window opener given here, which exists only when the GUI extra is installed.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from reelqueue.application.context import AppContext
from reelqueue.application.serving import ServeOptions

if TYPE_CHECKING:
    from reelqueue.application.remote import ServedApi
    from reelqueue.application.session import Session


def gui_available() -> bool:
    """The GUI extra is installed and the window module exists (Qt itself is imported
    only by the ui package, and only when the window opens)."""
    from importlib.util import find_spec

    return all(find_spec(name) is not None for name in ("PySide6", "qasync")) and (
        find_spec("reelqueue.ui.app") is not None)


def open_window(ctx: AppContext, *, start: bool, open_sheet: Path | None = None) -> int:
    """Open the window on ``ctx``'s journal (see :func:`reelqueue.ui.app.run_app`).

    Raises WindowUnavailable, before Qt is started, when Qt's platform plugin cannot load
    on this desktop (Qt would abort the process): the message names what to install."""
    from reelqueue.ui.platform_check import ensure_window_can_open

    ensure_window_can_open(os.environ)
    from reelqueue.ui.app import run_app

    return int(run_app(ctx, start=start, open_sheet=open_sheet, api_starter=start_window_api))


async def start_window_api(ctx: AppContext, session: Session,
                           options: ServeOptions) -> ServedApi:
    """The HTTP API on the window's own session (Settings, "Serve the HTTP API"): see
    :func:`reelqueue.api.serve.start_api`."""
    from reelqueue.api.serve import start_api

    return await start_api(ctx, session, options)


def serve_api(ctx: AppContext, options: ServeOptions) -> int:
    """Run the engine and the HTTP API (see :func:`reelqueue.api.serve.run_serve`)."""
    from reelqueue.api.serve import run_serve

    return run_serve(ctx, options)


def main(argv: Sequence[str] | None = None) -> int:
    from reelqueue.cli.main import main as cli_main

    return cli_main(argv, open_window=open_window if gui_available() else None,
                    serve_api=serve_api)


if __name__ == "__main__":
    raise SystemExit(main())
