"""Opening and revealing files, and video thumbnails (ffmpeg, where there is one)."""

from __future__ import annotations

import hashlib
import logging
import shutil
import subprocess
import sys
from pathlib import Path

import platformdirs
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


def thumbnail_file(video: Path) -> Path | None:
    """A cached JPEG of the video's first second (blocking: call on a worker thread)."""
    ffmpeg = shutil.which("ffmpeg")
    if ffmpeg is None or not video.is_file():
        return None
    stat = video.stat()
    key = hashlib.sha1(f"{video}:{stat.st_size}:{stat.st_mtime_ns}".encode()).hexdigest()
    cache = Path(platformdirs.user_cache_dir("ReelQueue", appauthor=False)) / "thumbnails"
    target = cache / f"{key}.jpg"
    if target.is_file():
        return target
    cache.mkdir(parents=True, exist_ok=True)
    try:
        subprocess.run([ffmpeg, "-v", "error", "-y", "-ss", "0.5", "-i", str(video),
                        "-frames:v", "1", "-vf", "scale=576:-2", str(target)],
                       check=True, timeout=20, capture_output=True)
    except (OSError, subprocess.SubprocessError):
        return None
    return target if target.is_file() else None
