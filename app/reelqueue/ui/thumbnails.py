"""Video thumbnails without a system ffmpeg: PyAV (its wheels bundle FFmpeg's decoders),
made on a worker thread, cached in the data folder, delivered to the window by a signal.

A finished video is read as little as possible: the container's header, then packets
until the first keyframe decodes (every other frame is skipped by the decoder), scaled
down to :data:`THUMB_WIDTH` at once. Each file is bounded: a deadline (FFmpeg's own
interrupt callback, and a check per packet), a packet and byte budget, and a cap on the
picture's size given both to the header check and to the decoder (``max_pixels``), so a
hostile or damaged file costs at most a few megabytes and seconds, and ends as the
placeholder. Any error from PyAV (or anything else while decoding) is caught: a thumbnail
is never worth a crash. The outcome is cached by the video's sha256 (the journal records
it for every completed job), a failure too, so a damaged file is not read again on every
open.

What is not contained: a crash *inside* FFmpeg's C code would take the process with it.
PyAV's wheels ship a current FFmpeg (fuzzed upstream) and only the first keyframe of our
own downloads is decoded; a child process per thumbnail would cost ~0.5 s of start-up and
a second entry point in the frozen build.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import sys
import threading
from collections import OrderedDict
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from PySide6.QtCore import QObject, Signal
from PySide6.QtGui import QImage

from reelqueue.application.keyframes import NoPicture, first_keyframe
from reelqueue.ui.qtcompat import emit

log = logging.getLogger(__name__)

WORKER_NICE = 10
"""How much lower the thumbnail workers' priority is than the window's (Linux)."""


def lower_priority() -> None:
    """A thumbnail worker yields the CPU to the GUI thread (Linux: a thread has its own
    nice value); elsewhere, and where refused, it runs at the normal priority. A 1080p
    keyframe is 250 ms of decoding without the interpreter: at the same priority it took
    a core from the window on a busy machine (bench_gui.py's live phase)."""
    if sys.platform.startswith("linux"):
        with contextlib.suppress(OSError, AttributeError):
            native = threading.get_native_id()
            os.setpriority(os.PRIO_PROCESS, native,
                           min(19, os.getpriority(os.PRIO_PROCESS, native) + WORKER_NICE))


THUMB_WIDTH = 576
"""Thumbnails are this wide (twice the detail view's 288 px, for 2x screens)."""
THUMB_MAX_HEIGHT = 576
HASH_LIMIT = 4 * 1024 * 1024 * 1024
"""A video without a recorded sha256 is hashed here, up to this size."""
CACHE_VERSION = "v1"  # in the file name: a change of limits or size makes new ones
MEMORY_ITEMS = 32


class ThumbnailError(Exception):
    """The video gave no picture within the limits (damaged, hostile or not a video)."""


@dataclass(frozen=True)
class Thumbnail:
    """What became of one request.

    Attributes:
        video: the video's path, as asked.
        image: the picture (None: show the placeholder).
        source: "made" (decoded now), "cache" (from disk or memory) or "failed".
        thread: the name of the thread that answered (never the GUI's).
    """

    video: str
    image: QImage | None
    source: str
    thread: str


def decode_first_keyframe(video: Path,
                          box: tuple[int, int] = (THUMB_WIDTH, THUMB_MAX_HEIGHT)) -> QImage:
    """The video's first keyframe, scaled down to fit ``box`` (blocking: call on a worker
    thread); the bounded read is application.keyframes', shared with the web dashboard."""
    try:
        frame = first_keyframe(video, box)
    except NoPicture as exc:
        raise ThumbnailError(str(exc)) from exc
    image = QImage(frame.rgb, frame.width, frame.height, frame.stride,
                   QImage.Format.Format_RGB888)
    return image.copy()  # own the pixels (the bytes above go away)


def file_sha256(video: Path) -> str:
    digest = hashlib.sha256()
    read = 0
    with video.open("rb") as handle:
        while chunk := handle.read(1024 * 1024):
            read += len(chunk)
            if read > HASH_LIMIT:
                raise ThumbnailError("too big to hash for a thumbnail")
            digest.update(chunk)
    return digest.hexdigest()


def cached_thumbnail(video: Path, cache_dir: Path, sha256: str | None = None
                     ) -> tuple[QImage | None, str]:
    """The thumbnail of ``video`` and where it came from ("cache", "made", "failed"),
    from ``cache_dir`` or made and stored there. Blocking; never raises for a bad video."""
    try:
        key = (sha256 or file_sha256(video)).lower()
    except (OSError, ThumbnailError) as exc:
        log.info("no thumbnail for %s: %s", video.name, exc)
        return None, "failed"
    return cached_picture(video, cache_dir / f"{key}-{CACHE_VERSION}", decode_first_keyframe)


def cached_picture(video: Path, stem: Path, decode: Callable[[Path], QImage]
                   ) -> tuple[QImage | None, str]:
    """The picture cached at ``stem`` (``stem.jpg``, or ``stem.none`` for a video that
    gave none), else ``decode(video)`` kept there; and where it came from ("cache",
    "made", "failed"). The table's and the gallery's thumbnails alike. Blocking."""
    picture = stem.with_name(f"{stem.name}.jpg")
    refused = stem.with_name(f"{stem.name}.none")
    if picture.is_file():
        image = QImage(str(picture))
        if not image.isNull():
            return image, "cache"
    if refused.is_file():
        return None, "cache"
    try:
        image = decode(video)
    except Exception as exc:  # anything a damaged file raises ends here
        log.info("no thumbnail for %s: %s: %s", video.name, type(exc).__name__, exc)
        _store(refused, None)
        return None, "failed"
    _store(picture, image)
    return image, "made"


def _store(target: Path, image: QImage | None) -> None:
    """Write a cache file under a temporary name, then rename it into place."""
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        temporary = target.with_name(f".{target.name}.{threading.get_ident()}.tmp")
        if image is None:
            temporary.write_bytes(b"")
        # PySide6's stub types the format as bytes, but the binding refuses bytes and takes
        # only str ("called with wrong argument values"): the stub is wrong here.
        elif not image.save(str(temporary), "JPG", 85):  # type: ignore[call-overload]
            raise OSError("the picture could not be written")
        os.replace(temporary, target)
    except OSError as exc:  # a cache that cannot be written only costs a decode later
        log.info("thumbnail cache not written (%s): %s", target.name, exc)


class Thumbnailer(QObject):
    """Makes thumbnails on one worker thread and answers by signal.

    Signals:
        ready(object): a :class:`Thumbnail`, delivered on the GUI thread.

    Attributes:
        cache_dir: where thumbnails are kept (the data folder's ``thumbnails``).
    """

    ready = Signal(object)
    _done = Signal(object)  # from the worker thread; queued to the GUI thread

    def __init__(self, cache_dir: Path, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.cache_dir = cache_dir
        self._memory: OrderedDict[str, QImage] = OrderedDict()
        self._waiting: set[str] = set()
        self._executor: ThreadPoolExecutor | None = None
        self._done.connect(self._deliver)

    def request(self, video: Path | str, sha256: str | None = None) -> None:
        """Ask for the thumbnail of ``video``; :attr:`ready` answers (at once from memory)."""
        key = str(video)
        image = self._memory.get(key)
        if image is not None:
            self._memory.move_to_end(key)
            emit(self.ready, Thumbnail(key, image, "cache", threading.current_thread().name))
            return
        if key in self._waiting:
            return
        self._waiting.add(key)
        if self._executor is None:
            self._executor = ThreadPoolExecutor(max_workers=1,
                                                thread_name_prefix="reelqueue-thumbnails",
                                                initializer=lower_priority)
        future = self._executor.submit(self._make, key, sha256)
        future.add_done_callback(lambda done: self._finished(key, done))

    def _make(self, key: str, sha256: str | None) -> Thumbnail:
        image, source = cached_thumbnail(Path(key), self.cache_dir, sha256)
        return Thumbnail(key, image, source, threading.current_thread().name)

    def _finished(self, key: str, future: Future[Thumbnail]) -> None:
        """On the worker thread: hand the outcome to the GUI thread (a queued signal)."""
        if future.cancelled():
            return
        try:
            thumb = future.result()
        except Exception:  # a bug of ours: logged, and the placeholder stays
            log.exception("thumbnail of %s", Path(key).name)
            thumb = Thumbnail(key, None, "failed", threading.current_thread().name)
        with contextlib.suppress(RuntimeError):  # the window closed (the QObject is gone)
            emit(self._done, thumb)

    def _deliver(self, thumb: Thumbnail) -> None:
        self._waiting.discard(thumb.video)
        if thumb.image is not None:
            self._memory[thumb.video] = thumb.image
            while len(self._memory) > MEMORY_ITEMS:
                self._memory.popitem(last=False)
        emit(self.ready, thumb)

    def close(self) -> None:
        """Drop what is queued; a decode under way ends within its deadline."""
        if self._executor is not None:
            self._executor.shutdown(wait=False, cancel_futures=True)
            self._executor = None
