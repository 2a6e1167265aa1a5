"""One ReelQueue per data folder: an OS file lock, released by the OS if the process dies.

Because of this lock, start-up recovery on one machine may treat every in-flight row as a
leftover of a dead process (DESIGN.md, "Leases").
"""

from __future__ import annotations

import errno
import os
import stat
import sys
from pathlib import Path
from typing import IO

from reelqueue.domain.errors import DataDirLocked, JournalError

LOCK_NAME = "reelqueue.lock"


class DataDirLock:
    """Attributes:
    path: the lock file inside the data folder.
    """

    def __init__(self, data_dir: Path) -> None:
        self.path = Path(data_dir) / LOCK_NAME
        self._handle: IO[str] | None = None

    def acquire(self) -> None:
        make_private_dir(self.path.parent)
        try:
            # Never through a link: a link planted here would make us write our pid (and
            # truncate) whatever file it points at.
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT | _NOFOLLOW, 0o600)
        except OSError as exc:
            if exc.errno in (errno.ELOOP, errno.EMLINK) or self.path.is_symlink():
                raise JournalError(
                    f"{self.path} is a symbolic link; ReelQueue will not follow it. "
                    "Remove it, then run the command again.") from None
            raise JournalError(
                f"The lock file {self.path} cannot be opened ({exc.strerror or exc}). Check "
                "that the data folder is writable, or pass a different --data-dir.") from None
        handle = os.fdopen(fd, "r+", encoding="utf-8")
        try:
            _lock(handle)
        except OSError:
            # A pid, as release() wrote it; a file made larger by something else is
            # read no further than a pid could be.
            holder = handle.read(64).strip()[:20] or "unknown"
            handle.close()
            raise DataDirLocked(
                f"Another ReelQueue (pid {holder}: the window, or a 'reelqueue run', "
                f"'demo' or 'serve') is already using {self.path.parent}. Close it (or "
                "wait for it to finish), or pass a different --data-dir."
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


_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)


def make_private_dir(folder: Path) -> None:
    """Create ``folder`` (and its parents) readable by its owner only (0700 on POSIX).

    The data folder holds the journal (prompts, provider job ids, spend) and the logs; other
    users of the machine have no business reading them. An existing folder of ours that is
    wider is narrowed; on Windows the folder inherits the profile's ACL, which is private.
    """
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    if sys.platform == "win32":  # pragma: no cover - POSIX modes do not apply
        return
    try:
        mode = stat.S_IMODE(folder.stat().st_mode)
        if mode & 0o077:
            folder.chmod(mode & 0o700)
    except OSError:
        pass  # not ours to change (a shared mount): the journal file itself is still 0600


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
