"""A finished video's first keyframe, decoded within limits, without Qt: the window's
thumbnails (ui/thumbnails.py makes a QImage of it) and the web dashboard's (issue 37: a
PNG written with zlib, no imaging library) are the same bounded read.

PyAV decodes as little as possible: the container's header, then packets until the first
keyframe decodes (every other frame skipped), scaled down at once. Each file is bounded:
a deadline (FFmpeg's own interrupt callback, and a check per packet), a packet and byte
budget, and a cap on the picture's size given both to the header check and to the
decoder (``max_pixels``). The web's PNGs are cached by the video's sha256 in the data
folder, a failure too (an empty file), so a damaged video is read once. Blocking: call
from a worker thread.
"""

from __future__ import annotations

import contextlib
import logging
import os
import stat
import struct
import time
import zlib
from dataclasses import dataclass
from pathlib import Path

log = logging.getLogger(__name__)

__all__ = ["DEADLINE_SECONDS", "MAX_PIXELS", "MAX_SIDE", "Keyframe", "NoPicture", "check_size",
           "first_keyframe", "scaled_size", "thumbnail_png", "trim_cache"]

WEB_BOX = (480, 480)
"""The web dashboard's thumbnails fit this box."""
MAX_SIDE = 8192
MAX_PIXELS = 8192 * 4320
"""The largest picture decoded (8K); a larger header or frame gives no picture."""
MAX_PACKETS = 600
MAX_BYTES = 64 * 1024 * 1024
"""Packets read before giving up on a keyframe (a video starts with one)."""
DEADLINE_SECONDS = 5.0
CACHE_VERSION = "w1"
CACHE_MAX_BYTES = 256 * 1024 * 1024
CACHE_MAX_FILES = 20_000
"""The thumbnail cache's bounds: past either, the pictures used longest ago go first (a
picture is made again when asked for; the cache only saves the decoding)."""
TRIM_EVERY = 64
"""The cache is trimmed at a process's first write and then every this many writes (a
listing of 20,000 files costs tens of ms: not worth paying for each picture); it may pass
its bounds by this many pictures meanwhile."""
_written = 0


class NoPicture(Exception):
    """The video gave no picture within the limits (damaged, hostile or not a video)."""


@dataclass(frozen=True)
class Keyframe:
    """A decoded picture. Attributes: width, height, rgb (8-bit RGB rows), stride (bytes
    per row in ``rgb``)."""

    width: int
    height: int
    rgb: bytes
    stride: int


def check_size(width: int, height: int) -> None:
    if not (0 < width <= MAX_SIDE and 0 < height <= MAX_SIDE and width * height <= MAX_PIXELS):
        raise NoPicture(f"picture size {width}x{height} is outside the limits")


def scaled_size(width: int, height: int, box: tuple[int, int]) -> tuple[int, int]:
    scale = min(box[0] / width, box[1] / height, 1.0)
    # even sizes: some pixel formats cannot be scaled to odd ones
    return max(2, round(width * scale) // 2 * 2), max(2, round(height * scale) // 2 * 2)


def png_bytes(width: int, height: int, rgb: bytes, stride: int) -> bytes:
    """An 8-bit RGB PNG of ``rgb`` (rows of ``stride`` bytes)."""
    rows = b"".join(b"\x00" + rgb[y * stride:y * stride + width * 3] for y in range(height))

    def chunk(kind: bytes, data: bytes) -> bytes:
        return (struct.pack(">I", len(data)) + kind + data
                + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF))

    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header)
            + chunk(b"IDAT", zlib.compress(rows, 6)) + chunk(b"IEND", b""))


def first_keyframe(video: Path, box: tuple[int, int]) -> Keyframe:
    """The video's first keyframe scaled down to fit ``box``; NoPicture past a limit
    (PyAV's own errors pass through: the caller catches every error)."""
    import av  # here: the window and serve start without FFmpeg's libraries

    started = time.monotonic()
    with av.open(str(video), mode="r", timeout=DEADLINE_SECONDS,
                 options={"probesize": str(8 * 1024 * 1024)}) as container:
        if not container.streams.video:
            raise NoPicture("no video stream")
        stream = container.streams.video[0]
        codec = stream.codec_context
        check_size(codec.width, codec.height)
        codec.options = {"max_pixels": str(MAX_PIXELS)}  # the decoder refuses bigger frames
        codec.skip_frame = "NONKEY"
        codec.thread_count = 1  # one frame: threads would only add memory
        read = 0
        for count, packet in enumerate(container.demux(stream)):
            read += packet.size
            if (count >= MAX_PACKETS or read > MAX_BYTES
                    or time.monotonic() - started > DEADLINE_SECONDS):
                raise NoPicture("no keyframe within the limits")
            for frame in packet.decode():
                check_size(frame.width, frame.height)
                width, height = scaled_size(frame.width, frame.height, box)
                rgb = frame.reformat(width=width, height=height, format="rgb24")
                plane = rgb.planes[0]
                return Keyframe(width, height, bytes(plane), plane.line_size)
    raise NoPicture("the video has no picture")


MAX_CACHED_BYTES = 8 * 1024 * 1024
"""A cached thumbnail larger than this was not written by us: it is made again."""


def _no_block(path: str, flags: int) -> int:
    return os.open(path, flags | getattr(os, "O_NONBLOCK", 0))


def thumbnail_png(video: Path, sha256: str, cache_dir: Path) -> bytes | None:
    """The PNG of ``video``'s first keyframe (None: it has no picture within the limits,
    remembered). ``sha256`` names it in the cache (a hex digest: the journal's)."""
    if not sha256 or not all(c in "0123456789abcdef" for c in sha256.lower()):
        return None
    target = cache_dir / f"{sha256.lower()}-{CACHE_VERSION}.png"
    with contextlib.suppress(OSError):
        # A regular file only (a FIFO put there would block), read no further than a
        # picture of ours can be (a few dozen KiB); anything else is made again over it.
        with open(target, "rb", opener=_no_block) as handle:
            regular = stat.S_ISREG(os.fstat(handle.fileno()).st_mode)
            cached = handle.read(MAX_CACHED_BYTES + 1) if regular else None
        if cached is not None and len(cached) <= MAX_CACHED_BYTES:
            os.utime(target)  # used now: the last to go when the cache is trimmed
            return cached or None
    try:
        frame = first_keyframe(video, WEB_BOX)
        picture: bytes | None = png_bytes(frame.width, frame.height, frame.rgb, frame.stride)
    except Exception as exc:  # PyAV's errors, a hostile file: never worth a crash
        log.info("no thumbnail for %s: %s", video.name, type(exc).__name__)
        picture = None
    try:
        cache_dir.mkdir(parents=True, exist_ok=True)
        partial = target.with_suffix(f".{os.getpid()}.part")
        partial.write_bytes(picture or b"")
        partial.replace(target)
        global _written
        _written += 1
        if _written % TRIM_EVERY == 1:  # the first write, then every TRIM_EVERY-th
            trim_cache(cache_dir)
    except OSError:
        log.info("the thumbnail cache %s cannot be written", cache_dir)
    return picture


def trim_cache(cache_dir: Path, max_bytes: int = CACHE_MAX_BYTES,
               max_files: int = CACHE_MAX_FILES) -> int:
    """Remove the pictures of ``cache_dir`` used longest ago until it holds at most
    ``max_files`` files and ``max_bytes`` bytes; returns how many went. Only the cache's
    own names (``*.png``, a left ``*.part``) are touched."""
    entries = []
    for path in cache_dir.iterdir():
        if path.suffix not in (".png", ".part"):
            continue
        with contextlib.suppress(OSError):
            info = path.stat()
            entries.append((info.st_mtime, info.st_size, path))
    total = sum(size for _, size, _ in entries)
    if len(entries) <= max_files and total <= max_bytes:
        return 0
    entries.sort()
    removed = 0
    for _, size, path in entries:
        if len(entries) - removed <= max_files and total <= max_bytes:
            break
        with contextlib.suppress(OSError):
            path.unlink()
        total -= size
        removed += 1
    return removed
