"""Where a job's video is on this machine (issues 21, 23), for the front ends.

The journal keeps each job's file relative to the videos folder (``<batch folder>/<file>``)
and the machine that wrote it (``output_host``); every machine resolves the path under its
own videos folder. A path that would leave it (``..``, an absolute path outside it) is
never used: :func:`local_video` gives None for it.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from reelqueue.domain.models import Job
from reelqueue.engine.outputs import located_output, output_refusal
from reelqueue.store.base import this_host

__all__ = ["local_path", "local_paths", "local_video", "output_refusal", "this_host"]


def local_path(stored: str, videos_dir: Path) -> Path | None:
    """The journal's path ``stored`` under ``videos_dir`` (None: it is refused)."""
    return located_output(stored, videos_dir.expanduser().absolute())


def local_paths(videos_dir: Path) -> Callable[[str], Path | None]:
    """:func:`local_path` for many paths under one ``videos_dir`` (placed once: a page
    of the jobs table or a gallery of 100,000 tiles asks for each of its rows)."""
    base = videos_dir.expanduser().absolute()
    return lambda stored: located_output(stored, base)


def local_video(job: Job, videos_dir: Path) -> Path | None:
    """The job's file under ``videos_dir`` (None: its journal path is refused)."""
    return local_path(job.output_path, videos_dir)
