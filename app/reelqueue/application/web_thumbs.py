"""A finished video's thumbnail as a PNG for the web dashboard (issue 37), without Qt:
PyAV decodes the first keyframe within the window's limits (ui/thumbnails.py: a
deadline, a packet and byte budget, a cap on the picture's size given to the decoder),
and the pixels are written as a PNG with zlib (no imaging library). Cached by the video's
sha256 in the data folder, a failure too (an empty file), so a damaged video is read
once. Call from a worker thread: it blocks.
"""

from __future__ import annotations

import contextlib
import logging
import os
import struct
import time
import zlib
from pathlib import Path

log = logging.getLogger(__name__)

__all__ = ["THUMB_WIDTH", "thumbnail_png"]

THUMB_WIDTH = 480
THUMB_MAX_HEIGHT = 480
MAX_SIDE = 8192
MAX_PIXELS = 8192 * 4320
MAX_PACKETS = 600
MAX_BYTES = 64 * 1024 * 1024
DEADLINE_SECONDS = 5.0
CACHE_VERSION = "w1"


class _NoPicture(Exception):
    """The video gave no picture within the limits."""


def _check_size(width: int, height: int) -> None:
    if not (0 < width <= MAX_SIDE and 0 < height <= MAX_SIDE and width * height <= MAX_PIXELS):
        raise _NoPicture(f"picture size {width}x{height} is outside the limits")


def _scaled(width: int, height: int) -> tuple[int, int]:
    scale = min(THUMB_WIDTH / width, THUMB_MAX_HEIGHT / height, 1.0)
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


def _decode(video: Path) -> bytes:
    import av  # here: serving starts without FFmpeg's libraries

    started = time.monotonic()
    with av.open(str(video), mode="r", timeout=DEADLINE_SECONDS,
                 options={"probesize": str(8 * 1024 * 1024)}) as container:
        if not container.streams.video:
            raise _NoPicture("no video stream")
        stream = container.streams.video[0]
        codec = stream.codec_context
        _check_size(codec.width, codec.height)
        codec.options = {"max_pixels": str(MAX_PIXELS)}
        codec.skip_frame = "NONKEY"
        codec.thread_count = 1
        read = 0
        for count, packet in enumerate(container.demux(stream)):
            read += packet.size
            if (count >= MAX_PACKETS or read > MAX_BYTES
                    or time.monotonic() - started > DEADLINE_SECONDS):
                raise _NoPicture("no keyframe within the limits")
            for frame in packet.decode():
                _check_size(frame.width, frame.height)
                width, height = _scaled(frame.width, frame.height)
                rgb = frame.reformat(width=width, height=height, format="rgb24")
                plane = rgb.planes[0]
                return png_bytes(width, height, bytes(plane), plane.line_size)
    raise _NoPicture("the video has no picture")


def thumbnail_png(video: Path, sha256: str, cache_dir: Path) -> bytes | None:
    """The PNG of ``video``'s first keyframe (None: it has no picture within the limits,
    remembered). ``sha256`` names it in the cache (a hex digest: the journal's)."""
    if not sha256 or not all(c in "0123456789abcdef" for c in sha256.lower()):
        return None
    target = cache_dir / f"{sha256.lower()}-{CACHE_VERSION}.png"
    with contextlib.suppress(OSError):
        cached = target.read_bytes()
        return cached or None
    try:
        picture: bytes | None = _decode(video)
    except Exception as exc:  # PyAV's errors, a hostile file: never worth a crash
        log.info("no thumbnail for %s: %s", video.name, type(exc).__name__)
        picture = None
    try:
        cache_dir.mkdir(parents=True, exist_ok=True)
        partial = target.with_suffix(f".{os.getpid()}.part")
        partial.write_bytes(picture or b"")
        partial.replace(target)
    except OSError:
        log.info("the thumbnail cache %s cannot be written", cache_dir)
    return picture
