"""Where a job's video is on this machine (issues 21, 23), for the front ends.

The journal keeps each job's file relative to the videos folder (``<batch folder>/<file>``)
and the machine that wrote it (``output_host``); every machine resolves the path under its
own videos folder. A path that would leave it (``..``, an absolute path outside it) is
never used: :func:`local_video` gives None for it.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

from reelqueue.domain.models import Job
from reelqueue.engine.outputs import is_absolute, located_output, output_refusal, path_parts
from reelqueue.store.base import this_host

__all__ = ["local_path", "local_path_texts", "local_paths", "local_video", "output_refusal",
           "this_host"]


def local_path(stored: str, videos_dir: Path) -> Path | None:
    """The journal's path ``stored`` under ``videos_dir`` (None: it is refused)."""
    return located_output(stored, videos_dir.expanduser().absolute())


def local_paths(videos_dir: Path) -> Callable[[str], Path | None]:
    """:func:`local_path` for many paths under one ``videos_dir`` (placed once: a page
    of the jobs table or a gallery of 100,000 tiles asks for each of its rows)."""
    base = videos_dir.expanduser().absolute()
    return lambda stored: located_output(stored, base)


def local_path_texts(videos_dir: Path) -> Callable[[str], str | None]:
    """:func:`local_paths` as text, for the jobs table's 100,000 rows: on POSIX a
    relative journal path (``<batch folder>/<file>``, every path since journal version 9)
    is joined by string (``str(base.joinpath(*parts))`` says the same; it cost ~25 µs a
    row, 2-3 s of the interpreter for a 100,000-job table); anything else, and every path
    on Windows (drives, shares), goes through :func:`local_paths`."""
    slow = local_paths(videos_dir)
    if os.name != "posix":
        return lambda stored: None if (path := slow(stored)) is None else str(path)
    prefix = str(videos_dir.expanduser().absolute()).rstrip("/") + "/"

    def place(stored: str) -> str | None:
        if is_absolute(stored):
            path = slow(stored)
            return None if path is None else str(path)
        parts = path_parts(stored)
        return None if parts is None else prefix + "/".join(parts)

    return place


def local_video(job: Job, videos_dir: Path) -> Path | None:
    """The job's file under ``videos_dir`` (None: its journal path is refused)."""
    return local_path(job.output_path, videos_dir)
