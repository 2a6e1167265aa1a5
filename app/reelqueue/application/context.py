"""What every front end's command gets: its folders, its output stream, the clock, and
the journal.

Attributes of :class:`AppContext`:
    data_dir: the journal, the lock file and logs live here.
    videos_dir: the root under which each batch gets its own folder of videos.
    out: where the command prints (stdout, or a buffer in tests).
    clock: the injected clock.
    store_url: the team journal (``postgresql://…``, issue 15) instead of the local
        SQLite journal; None for the local one. The data folder stays this machine's
        (lock, logs, keys, videos) either way.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

import platformdirs

from reelqueue.domain.clock import Clock, SystemClock

if TYPE_CHECKING:
    from reelqueue.store.base import Store

__all__ = ["APP_NAME", "AppContext", "default_data_dir", "default_videos_dir"]

APP_NAME = "ReelQueue"


def default_data_dir() -> Path:
    return Path(platformdirs.user_data_dir(APP_NAME, appauthor=False))


def default_videos_dir() -> Path:
    return Path(platformdirs.user_videos_dir()) / APP_NAME


@dataclass
class AppContext:
    data_dir: Path
    videos_dir: Path
    out: TextIO = field(default_factory=lambda: sys.stdout)
    clock: Clock = field(default_factory=SystemClock)
    store_url: str | None = None

    @property
    def journal_path(self) -> Path:
        return self.data_dir / "journal.sqlite3"

    @property
    def has_journal(self) -> bool:
        """Whether there is a journal to read (a team database always counts as one)."""
        from reelqueue.application.team_seam import journal_mode

        return journal_mode(self).shared or self.journal_path.exists()

    @contextmanager
    def open_store(self, *, lock: bool = True) -> Iterator[Store]:
        """Open the journal, holding the data-folder lock unless ``lock`` is False.

        Raises DataDirLocked when another ReelQueue holds the folder, JournalCorrupt when
        the file is not a journal (the file is left untouched).
        """
        from reelqueue.store.lockfile import DataDirLock, make_private_dir

        make_private_dir(self.data_dir)
        held = DataDirLock(self.data_dir) if lock else None
        if held is not None:
            held.acquire()
        try:
            store = self.open_journal_store()
            try:
                yield store
            finally:
                store.close()
        finally:
            if held is not None:
                held.release()

    def open_journal_store(self) -> Store:
        """Open the journal itself (the team database with ``store_url``), no lock taken;
        the caller closes it. Blocking: call on a worker thread from a loop. Built by the
        composition root (:func:`~reelqueue.application.compose.open_journal_store`)."""
        from reelqueue.application.compose import open_journal_store

        return open_journal_store(self)

    def print(self, *parts: object) -> None:
        print(*parts, file=self.out, flush=True)
