"""Logging for every front end: stderr for errors (all of it with ``verbose``), and a
rotating log file in the data folder that only the owner can read."""

from __future__ import annotations

import logging
import os
import sys
from logging.handlers import RotatingFileHandler
from pathlib import Path
from typing import Any

__all__ = ["PrivateRotatingFileHandler", "setup_logging"]


def setup_logging(data_dir: Path, verbose: bool) -> None:
    from reelqueue.store.lockfile import make_private_dir

    root = logging.getLogger()
    root.setLevel(logging.DEBUG if verbose else logging.INFO)
    stderr = logging.StreamHandler()
    stderr.setLevel(logging.INFO if verbose else logging.ERROR)
    stderr.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))
    root.addHandler(stderr)
    logs = data_dir / "logs"
    try:
        make_private_dir(data_dir)
        make_private_dir(logs)
        handler = PrivateRotatingFileHandler(logs / "reelqueue.log", maxBytes=5_000_000,
                                             backupCount=3, encoding="utf-8")
    except OSError:
        return
    handler.setFormatter(logging.Formatter(
        "%(asctime)s %(process)d %(levelname)s %(name)s: %(message)s"))
    root.addHandler(handler)
    # httpx2 logs every request URL at INFO; URLs may carry signed tokens. Keep it quiet
    # (and httpx/httpcore too, should another library bring them in).
    for name in ("httpx2", "httpcore2", "httpx", "httpcore"):
        logging.getLogger(name).setLevel(logging.WARNING)
    # qasync logs each call it hands to a worker thread, with its arguments, at DEBUG: a
    # key on its way to the keyring would be written out with --verbose.
    logging.getLogger("qasync").setLevel(logging.INFO)


class PrivateRotatingFileHandler(RotatingFileHandler):
    """A rotating log whose files are the owner's only (0600), the rotated ones too.

    The log names prompts, file paths and provider job ids; it is created through
    ``os.open`` with mode 0600 rather than ``open`` under the process umask.
    """

    def _open(self) -> Any:
        flags = os.O_WRONLY | os.O_CREAT | os.O_APPEND | getattr(os, "O_NOFOLLOW", 0)
        fd = os.open(self.baseFilename, flags, 0o600)
        if sys.platform != "win32":
            os.fchmod(fd, 0o600)
        return os.fdopen(fd, "a", encoding=self.encoding, errors=self.errors)
