"""One ReelQueue per data folder: an OS file lock, released by the OS if the process dies.

Because of this lock, start-up recovery on one machine may treat every in-flight row as a
leftover of a dead process (DESIGN.md, "Leases").
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import IO

from reelqueue.domain.errors import DataDirLocked

LOCK_NAME = "reelqueue.lock"


class DataDirLock:
    """Attributes:
    path: the lock file inside the data folder.
    """

    def __init__(self, data_dir: Path) -> None:
        self.path = Path(data_dir) / LOCK_NAME
        self._handle: IO[str] | None = None

    def acquire(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
        handle = os.fdopen(fd, "r+", encoding="utf-8")
        try:
            _lock(handle)
        except OSError:
            holder = handle.read().strip() or "unknown"
            handle.close()
            raise DataDirLocked(
                f"Another ReelQueue (pid {holder}) is already using {self.path.parent}. "
                "Close it (or wait for it to finish), or pass a different --data-dir."
            ) from None
        handle.seek(0)
        handle.truncate()
        handle.write(str(os.getpid()))
        handle.flush()
        self._handle = handle

    def release(self) -> None:
        if self._handle is not None:
            _unlock(self._handle)
            self._handle.close()
            self._handle = None

    def __enter__(self) -> DataDirLock:
        self.acquire()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


if sys.platform == "win32":  # pragma: no cover - exercised on Windows builds
    import msvcrt

    def _lock(handle: IO[str]) -> None:
        msvcrt.locking(handle.fileno(), msvcrt.LK_NBLCK, 1)

    def _unlock(handle: IO[str]) -> None:
        handle.seek(0)
        msvcrt.locking(handle.fileno(), msvcrt.LK_UNLCK, 1)

else:
    import fcntl

    def _lock(handle: IO[str]) -> None:
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)

    def _unlock(handle: IO[str]) -> None:
        fcntl.flock(handle.fileno(), fcntl.LOCK_UN)
