"""The gallery's thumbnails: small, many, made on worker threads, cached on disk.

A tile's picture is asked for only when the view paints the tile (the model asks in
``data()``), so a batch of thousands costs only what is scrolled past. Requests wait in a
stack (the newest first: what is on screen now, not what was scrolled past a second ago),
bounded, so a fast scroll leaves no backlog. Each answer is cached under a key of the
file's path, size and modification time (a file replaced makes a new key) and the picture
size, as a small JPEG in the data folder (an unreadable video as an empty ``.none`` file,
so it is not read again). Answers reach the GUI thread by a queued signal; pixmaps are made
there, from the worker's QImage (QPixmap belongs to the GUI thread).
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import threading
from collections import OrderedDict
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from PySide6.QtCore import QObject, QSize, Qt, QTimer, Signal
from PySide6.QtGui import QImage, QPixmap

from reelqueue.ui.qtcompat import emit
from reelqueue.ui.thumbnails import cached_picture, decode_first_keyframe, lower_priority

log = logging.getLogger(__name__)

CACHE_VERSION = "g1"
MAX_PENDING = 256
"""Requests kept waiting; older ones are dropped (asked again if still on screen)."""
MEMORY_ITEMS = 600


@dataclass(frozen=True)
class GalleryThumb:
    """One answer: the video's path, its picture (None: the placeholder stays), where it
    came from ("made", "cache" or "failed") and the thread that made it."""

    video: str
    image: QImage | None
    source: str
    thread: str


def cache_key(video: Path, box: tuple[int, int]) -> str:
    """The cache key of ``video`` at ``box``: its path, size and modification time."""
    info = video.stat()
    text = f"{video.resolve()}\0{info.st_size}\0{info.st_mtime_ns}\0{box[0]}x{box[1]}"
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:40]


def gallery_thumbnail(video: Path, cache_dir: Path, box: tuple[int, int]
                      ) -> tuple[QImage | None, str]:
    """The picture of ``video`` fitted to ``box``, from ``cache_dir`` or made and kept
    there. Blocking (a worker thread's); never raises for a bad or missing video."""
    try:
        key = cache_key(video, box)
    except OSError as exc:
        log.info("no gallery thumbnail for %s: %s", video.name, exc)
        return None, "failed"
    return cached_picture(video, cache_dir / f"{key}-{CACHE_VERSION}",
                          lambda path: decode_first_keyframe(path, box))


class GalleryThumbs(QObject):
    """Makes gallery thumbnails on worker threads; answers on the GUI thread.

    Signals:
        ready(object): a :class:`GalleryThumb` (on the GUI thread).

    Attributes:
        cache_dir: where they are kept. box: the largest picture kept (width, height).
        display: the size pictures are shown at, in device pixels (None: as kept); the
            worker scales them to it, so the GUI thread only copies pixels when painting.
        ratio: the screen's device pixel ratio the pixmaps are made for.
        counts: answers by source ("made", "cache", "failed"), for tests and benchmarks.
        threads: the names of the threads that made answers.
    """

    ready = Signal(object)
    _done = Signal(object)

    def __init__(self, cache_dir: Path, box: tuple[int, int] = (320, 180), *,
                 workers: int = 2, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.cache_dir = cache_dir
        self.box = box
        self.workers = max(1, workers)
        self.display: tuple[int, int] | None = None
        self.ratio = 1.0
        self.counts: dict[str, int] = {"made": 0, "cache": 0, "failed": 0}
        self.threads: set[str] = set()
        self._pixmaps: OrderedDict[str, QPixmap] = OrderedDict()
        self._failed: set[str] = set()
        self._asked: set[str] = set()  # waiting or being made
        self._stack: list[str] = []
        self._lock = threading.Lock()
        self._executor: ThreadPoolExecutor | None = None
        self._unsent = 0
        self._send = QTimer(self)
        self._send.setSingleShot(True)
        self._send.setInterval(0)
        self._send.timeout.connect(self._send_requests)
        self._done.connect(self._deliver)

    def pixmap(self, video: str) -> QPixmap | None:
        """The picture if it is at hand (None: ask with :meth:`request`)."""
        pixmap = self._pixmaps.get(video)
        if pixmap is not None:
            self._pixmaps.move_to_end(video)
        return pixmap

    def pending(self) -> int:
        """Pictures asked for and not answered yet."""
        return len(self._asked)

    def failed(self, video: str) -> bool:
        """The video gave no picture (damaged, missing): the placeholder stays."""
        return video in self._failed

    def request(self, video: str) -> None:
        """Ask for ``video``'s picture; :attr:`ready` answers. Cheap: call it from
        ``data()`` for every painted tile."""
        if video in self._pixmaps or video in self._failed or video in self._asked:
            return
        self._asked.add(video)
        with self._lock:
            self._stack.append(video)
            dropped = self._stack[:-MAX_PENDING] if len(self._stack) > MAX_PENDING else []
            if dropped:
                del self._stack[:len(dropped)]
        for old in dropped:  # scrolled past: asked again if painted again
            self._asked.discard(old)
        # The workers are woken once the paint that asked is over: started during it,
        # they take the interpreter's lock from the GUI thread in the middle of the paint.
        self._unsent += 1
        if not self._send.isActive():
            self._send.start()

    def _send_requests(self) -> None:
        count, self._unsent = self._unsent, 0
        if not count:
            return
        if self._executor is None:
            self._executor = ThreadPoolExecutor(max_workers=self.workers,
                                                thread_name_prefix="reelqueue-gallery",
                                                initializer=lower_priority)
        for _ in range(count):
            self._executor.submit(self._work)

    def _work(self) -> None:
        """On a worker thread: make the newest request waiting."""
        with self._lock:
            if not self._stack:
                return
            video = self._stack.pop()
        try:
            image, source = gallery_thumbnail(Path(video), self.cache_dir, self.box)
            display = self.display
            if image is not None and display is not None:
                image = image.scaled(QSize(*display), Qt.AspectRatioMode.KeepAspectRatio,
                                     Qt.TransformationMode.SmoothTransformation)
            if image is not None:  # the backing store's format: a paint is a plain copy
                image = image.convertToFormat(QImage.Format.Format_ARGB32_Premultiplied)
        except Exception:  # a bug of ours: logged, and the placeholder stays
            log.exception("gallery thumbnail of %s", Path(video).name)
            image, source = None, "failed"
        with contextlib.suppress(RuntimeError):  # the window closed (the QObject is gone)
            emit(self._done, GalleryThumb(video, image, source,
                                          threading.current_thread().name))

    def _deliver(self, thumb: GalleryThumb) -> None:
        self._asked.discard(thumb.video)
        self.counts[thumb.source] = self.counts.get(thumb.source, 0) + 1
        self.threads.add(thumb.thread)
        if thumb.image is None:
            self._failed.add(thumb.video)
        else:
            pixmap = QPixmap.fromImage(thumb.image)
            pixmap.setDevicePixelRatio(self.ratio)
            self._pixmaps[thumb.video] = pixmap
            while len(self._pixmaps) > MEMORY_ITEMS:
                self._pixmaps.popitem(last=False)
        emit(self.ready, thumb)

    def forget(self) -> None:
        """Drop the pictures in memory and the requests waiting (the disk cache stays)."""
        with self._lock:
            self._stack.clear()
        self._asked.clear()
        self._pixmaps.clear()
        self._failed.clear()

    def close(self) -> None:
        """Drop what waits; a decode under way ends within its deadline."""
        with self._lock:
            self._stack.clear()
        self._send.stop()
        self._unsent = 0
        if self._executor is not None:
            self._executor.shutdown(wait=False, cancel_futures=True)
            self._executor = None


def cache_files(cache_dir: Path) -> list[str]:
    """The gallery's cache files (for tests and the benchmark)."""
    try:
        return sorted(name for name in os.listdir(cache_dir) if CACHE_VERSION in name)
    except OSError:
        return []
