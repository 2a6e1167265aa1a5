"""Opening and revealing files (thumbnails: thumbnails.py)."""

from __future__ import annotations

import logging
import subprocess
import sys
from pathlib import Path

from PySide6.QtCore import QUrl
from PySide6.QtGui import QDesktopServices

log = logging.getLogger(__name__)


def open_path(path: Path) -> bool:
    return QDesktopServices.openUrl(QUrl.fromLocalFile(str(path)))


def reveal(path: Path) -> bool:
    """Show ``path`` selected in the file manager where the platform allows it, else
    open its folder."""
    try:
        if sys.platform == "darwin" and path.exists():
            subprocess.Popen(["open", "-R", str(path)])
            return True
        if sys.platform == "win32" and path.exists():
            subprocess.Popen(["explorer", "/select,", str(path)])
            return True
    except OSError:
        log.info("could not reveal %s; opening its folder", path)
    folder = path if path.is_dir() else path.parent
    return open_path(folder)
