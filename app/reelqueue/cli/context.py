"""What every command gets: the application layer's context (folders, output stream,
clock, journal) and, when the program has a window, the way to open it.

Attributes of :class:`CliContext` beyond :class:`~reelqueue.application.context.AppContext`:
    open_window: opens the window on a context (given by :mod:`reelqueue.entry`; None when
        the GUI extra is not installed). The command line never imports the window itself.
    serve_api: runs the HTTP API (``reelqueue serve``), given by :mod:`reelqueue.entry`.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from reelqueue.application.context import (
    APP_NAME,
    AppContext,
    default_data_dir,
    default_videos_dir,
)
from reelqueue.application.serving import ApiRunner


class WindowOpener(Protocol):
    def __call__(self, ctx: AppContext, *, start: bool,
                 open_sheet: Path | None = None) -> int: ...


@dataclass
class CliContext(AppContext):
    open_window: WindowOpener | None = None
    serve_api: ApiRunner | None = None


__all__ = ["APP_NAME", "CliContext", "WindowOpener", "default_data_dir",
           "default_videos_dir"]
