"""What every command gets: the application layer's context (folders, output stream,
clock, journal) and, when the program has a window, the way to open it; and the videos
folder a data folder remembers (``run --videos-dir X`` once, then ``doctor``, ``export``
and the gallery find the files under X without the flag again; issue 34).

Attributes of :class:`CliContext` beyond :class:`~reelqueue.application.context.AppContext`:
    open_window: opens the window on a context (given by :mod:`reelqueue.entry`; None when
        the GUI extra is not installed). The command line never imports the window itself.
    serve_api: runs the HTTP API (``reelqueue serve``), given by :mod:`reelqueue.entry`.
"""

from __future__ import annotations

import os
import unicodedata
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
from reelqueue.domain.errors import InputError

VIDEOS_DIR_FILE = "videos-folder.txt"
"""The file in a data folder naming the videos folder last given with ``--videos-dir``
(one absolute path, UTF-8)."""
MAX_REMEMBERED_CHARS = 4096
"""A remembered path longer than this is refused (no real folder's path is)."""


class WindowOpener(Protocol):
    def __call__(self, ctx: AppContext, *, start: bool,
                 open_sheet: Path | None = None) -> int: ...


@dataclass
class CliContext(AppContext):
    open_window: WindowOpener | None = None
    serve_api: ApiRunner | None = None


def remembered_videos_dir(data_dir: Path) -> Path | None:
    """The videos folder ``data_dir`` remembers (None: none remembered). InputError, saying
    what to do, for a file that cannot be read or does not name a usable folder."""
    where = data_dir / VIDEOS_DIR_FILE
    try:
        with where.open("rb") as handle:
            raw = handle.read(MAX_REMEMBERED_CHARS * 4 + 1)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise _refused(where, f"it cannot be read: {exc.strerror or exc}") from None
    try:
        text = raw.decode("utf-8").removesuffix("\n")
    except UnicodeDecodeError:
        raise _refused(where, "it is not UTF-8 text") from None
    if not text.strip():
        raise _refused(where, "it is empty")
    if len(text) > MAX_REMEMBERED_CHARS:
        raise _refused(where, f"it is longer than {MAX_REMEMBERED_CHARS} characters")
    if any(unicodedata.category(c) in ("Cc", "Cf", "Zl", "Zp") for c in text):
        raise _refused(where, "it holds control characters")
    folder = Path(text)
    if not folder.is_absolute():
        raise _refused(where, f"{text!r} is not an absolute path")
    try:
        if folder.exists() and not folder.is_dir():
            raise _refused(where, f"{text} is not a folder")
    except OSError as exc:
        raise _refused(where, f"{text} cannot be looked at: {exc.strerror or exc}") from None
    return folder


def _refused(where: Path, why: str) -> InputError:
    return InputError(
        f"The videos folder remembered in {where} cannot be used: {why}. Give the folder "
        "with --videos-dir FOLDER (it is remembered from then on), or delete that file to "
        f"use the default ({default_videos_dir()}).")


def remember_videos_dir(data_dir: Path, videos_dir: Path) -> None:
    """Write ``videos_dir`` (absolute) as the folder ``data_dir`` remembers, atomically;
    nothing when it already is. OSError when the data folder cannot be written."""
    text = str(videos_dir)
    where = data_dir / VIDEOS_DIR_FILE
    try:
        with where.open("rb") as handle:  # no further than the reader reads
            if handle.read(MAX_REMEMBERED_CHARS * 4 + 1).decode("utf-8").removesuffix(
                    "\n") == text:
                return
    except (OSError, UnicodeDecodeError):
        pass
    data_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
    temporary = where.with_name(f".{VIDEOS_DIR_FILE}.{os.getpid()}.tmp")
    try:
        temporary.write_text(text + "\n", encoding="utf-8")
        os.replace(temporary, where)
    finally:
        temporary.unlink(missing_ok=True)


__all__ = ["APP_NAME", "VIDEOS_DIR_FILE", "CliContext", "WindowOpener", "default_data_dir",
           "default_videos_dir", "remember_videos_dir", "remembered_videos_dir"]
