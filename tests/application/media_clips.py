"""Tiny test clips made with PyAV (no numpy): 64x36, a second, 12 fps, optional sound."""

from __future__ import annotations

import hashlib
import math
import struct
from pathlib import Path
from typing import Any

import av


def _picture(width: int, height: int, rgb: tuple[int, int, int], index: int) -> Any:
    frame = av.VideoFrame(width, height, "rgb24")
    line = frame.planes[0].line_size
    row = bytes(rgb) * width + bytes(line - 3 * width)
    data = bytearray(row * height)
    x = (index * 3) % width
    for y in range(height):
        data[y * line + 3 * x:y * line + 3 * x + 3] = b"\xff\xff\xff"
    frame.planes[0].update(bytes(data))
    return frame


def make_clip(path: Path, *, width: int = 64, height: int = 36, fps: int = 12,
              seconds: float = 1.0, audio: bool = False,
              rgb: tuple[int, int, int] = (200, 30, 30)) -> str:
    """Write a clip; return its sha256."""
    with av.open(str(path), "w", format="mp4") as container:
        video = container.add_stream("libx264", rate=fps)
        video.width, video.height, video.pix_fmt = width, height, "yuv420p"
        video.options = {"preset": "ultrafast"}
        sound = None
        if audio:
            sound = container.add_stream("aac", rate=48000)
            sound.layout = "stereo"
        for index in range(round(seconds * fps)):
            frame = _picture(width, height, rgb, index)
            frame.pts = index
            for packet in video.encode(frame):
                container.mux(packet)
        for packet in video.encode():
            container.mux(packet)
        if sound is not None:
            total, at = int(48000 * seconds), 0
            while at < total:
                count = min(1024, total - at)
                chunk = av.AudioFrame(format="s16", layout="stereo", samples=count)
                chunk.planes[0].update(b"".join(
                    struct.pack("<hh", v, v) for v in
                    (int(3000 * math.sin(j / 20)) for j in range(at, at + count))))
                chunk.sample_rate, chunk.pts = 48000, at
                at += count
                for packet in sound.encode(chunk):
                    container.mux(packet)
            for packet in sound.encode():
                container.mux(packet)
    return hashlib.sha256(path.read_bytes()).hexdigest()


def seconds_of(path: Path) -> float:
    """The file's length as PyAV reads it (its container's duration)."""
    with av.open(str(path)) as container:
        assert container.duration is not None
        return container.duration / av.time_base


def video_seconds(path: Path) -> float:
    """The video stream's length: frames times their duration."""
    with av.open(str(path)) as container:
        stream = container.streams.video[0]
        assert stream.duration is not None and stream.time_base is not None
        return float(stream.duration * stream.time_base)
