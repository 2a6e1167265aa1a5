"""Two takes side by side, playing from one clock (issue 35 item 2): each video is decoded
with PyAV on a worker thread of its own at preview size, a few frames ahead, and the
window paints the frame each one has at the clock's time; no audio. The system's player
plays a take at full size (Enter on the review page).

QtMultimedia is not in PySide6-Essentials, and its add-on would break the installer's
size target (issue 35): PyAV is already there for the thumbnails.

A damaged or hostile file is bounded like a thumbnail's (ui/thumbnails.py: its size is
checked, the decoder refuses bigger frames); it shows its reason instead of pictures.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from pathlib import Path

from PySide6.QtCore import QRect, QSize, Qt, QTimer
from PySide6.QtGui import QColor, QImage, QPainter, QPaintEvent
from PySide6.QtWidgets import QSizePolicy, QWidget

from reelqueue.application.keyframes import MAX_PIXELS, NoPicture, check_size, scaled_size
from reelqueue.ui import theme
from reelqueue.ui.thumbnails import ThumbnailError

PREVIEW_BOX = (480, 270)
AHEAD = 8
"""Frames decoded ahead of the clock per video (~1 MB at preview size)."""
TICK_MS = 33
FALLBACK_FPS = 24.0


class FrameStream:
    """One video decoded at preview size on its own worker thread.

    Attributes:
        video: the file. duration: its length in seconds (from its header; else known
            once it was read to its end; None until then). failed: why it shows no
            picture (None: it does). decoded: frames made (tests).
    """

    def __init__(self, video: Path, box: tuple[int, int] = PREVIEW_BOX) -> None:
        self.video = video
        self.box = box
        self.duration: float | None = None
        self.failed: str | None = None
        self.decoded = 0
        self._frames: deque[tuple[float, QImage]] = deque()
        self._current: QImage | None = None
        self._cond = threading.Condition()
        self._stop = False
        self._restart = False
        self._thread = threading.Thread(target=self._run, name="take-player", daemon=True)
        self._thread.start()

    # -- the worker ----------------------------------------------------------------------
    def _run(self) -> None:
        try:
            self._decode()
        except (ThumbnailError, NoPicture) as exc:
            self.failed = str(exc)
        except Exception as exc:  # a file PyAV cannot read: shown, never raised
            self.failed = f"cannot be played here ({type(exc).__name__})"

    def _decode(self) -> None:
        import av  # here: the window opens without paying for FFmpeg's libraries

        with av.open(str(self.video), mode="r", timeout=10.0) as container:
            if not container.streams.video:
                raise ThumbnailError("no video stream")
            stream = container.streams.video[0]
            codec = stream.codec_context
            check_size(codec.width, codec.height)
            codec.options = {"max_pixels": str(MAX_PIXELS)}
            codec.thread_count = 1
            if container.duration:
                self.duration = container.duration / 1_000_000
            base = float(stream.time_base) if stream.time_base is not None else 0.0
            step = 1 / float(stream.average_rate or FALLBACK_FPS)
            while True:
                ended, last = True, -step
                for frame in container.decode(stream):
                    check_size(frame.width, frame.height)
                    at = frame.pts * base if frame.pts is not None and base else last + step
                    last = at
                    width, height = scaled_size(frame.width, frame.height, self.box)
                    rgb = frame.reformat(width=width, height=height, format="rgb24")
                    plane = rgb.planes[0]
                    image = QImage(bytes(plane), width, height, plane.line_size,
                                   QImage.Format.Format_RGB888).copy()
                    with self._cond:
                        while (len(self._frames) >= AHEAD and not self._stop
                               and not self._restart):
                            self._cond.wait()
                        if self._stop:
                            return
                        if self._restart:
                            ended = False
                            break
                        self._frames.append((at, image))
                        self.decoded += 1
                with self._cond:
                    if ended and self.duration is None:
                        self.duration = max(step, last + step)
                    while ended and not self._restart and not self._stop:
                        self._cond.wait()  # held at its end until the clock goes round
                    if self._stop:
                        return
                    self._restart = False
                    self._frames.clear()
                container.seek(0, stream=stream)

    # -- the GUI thread --------------------------------------------------------------------
    def frame_at(self, seconds: float) -> QImage | None:
        """The last frame due at ``seconds`` of the clock (None: none decoded yet)."""
        with self._cond:
            while self._frames and self._frames[0][0] <= seconds:
                self._current = self._frames.popleft()[1]
            self._cond.notify_all()
            return self._current

    def restart(self) -> None:
        """From the beginning (the clock went round)."""
        with self._cond:
            self._restart = True
            self._frames.clear()
            self._current = None
            self._cond.notify_all()

    def close(self) -> None:
        with self._cond:
            self._stop = True
            self._cond.notify_all()
        self._thread.join(5)


class SideBySide(QWidget):
    """Two takes playing from one clock; Space on the review page pauses.

    Attributes:
        streams: the two videos (None: a take without a video here). captions: their
            words. clock: seconds into the play; paused: the clock stands.
        timer: the paint tick.
    """

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.streams: list[FrameStream | None] = [None, None]
        self.captions = ["", ""]
        self.clock = 0.0
        self.paused = False
        self._started = time.monotonic()
        self.timer = QTimer(self)
        self.timer.setObjectName("take-player")
        self.timer.setInterval(TICK_MS)
        self.timer.timeout.connect(self._tick)
        self.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Fixed)
        # pictures smaller than decoded: a row of cards below stays in sight at 720 p
        self.setFixedHeight(PREVIEW_BOX[1] * 2 // 3)

    def sizeHint(self) -> QSize:
        return QSize(PREVIEW_BOX[0] * 2 + 36, PREVIEW_BOX[1] * 2 // 3)

    def play(self, videos: list[Path | None], captions: list[str]) -> None:
        """Play these two (a None shows its caption only), from the start."""
        self.stop()
        self.streams = [None if v is None else FrameStream(v) for v in videos[:2]]
        self.captions = list(captions[:2])
        self.clock, self.paused = 0.0, False
        self._started = time.monotonic()
        self.timer.start()

    def toggle_pause(self) -> None:
        self.paused = not self.paused
        self._started = time.monotonic() - self.clock

    def period(self) -> float | None:
        """One turn of the clock: the longer take's length (None: not known yet)."""
        lengths = [s.duration for s in self.streams if s is not None and s.failed is None]
        if not lengths or any(d is None for d in lengths):
            return None
        return max(d for d in lengths if d is not None)

    def _tick(self) -> None:
        if not self.paused:
            clock = time.monotonic() - self._started
            period = self.period()
            if period is not None and clock >= period:
                self._started = time.monotonic()
                clock = 0.0
                for stream in self.streams:
                    if stream is not None:
                        stream.restart()
            self.clock = clock
        self.update()

    def paintEvent(self, event: QPaintEvent) -> None:
        painter = QPainter(self)
        t = theme.tokens()
        painter.fillRect(self.rect(), QColor(t.window))
        half = (self.width() - 12) // 2
        for i, stream in enumerate(self.streams):
            box = QRect(i * (half + 12), 0, half, self.height() - 24)
            painter.fillRect(box, QColor("#000000"))
            image = None if stream is None else stream.frame_at(self.clock)
            if image is not None and not image.isNull():
                size = image.size().scaled(box.size(), Qt.AspectRatioMode.KeepAspectRatio)
                target = QRect(0, 0, size.width(), size.height())
                target.moveCenter(box.center())
                painter.drawImage(target, image)
            else:
                painter.setPen(QColor("#BBBBBB"))
                words = ("no video on this machine" if stream is None
                         else stream.failed or "loading…")
                painter.drawText(box, Qt.AlignmentFlag.AlignCenter, words)
            painter.setPen(QColor(t.text))
            painter.drawText(QRect(box.left(), box.bottom() + 4, half, 20),
                             Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignVCenter,
                             self.captions[i] if i < len(self.captions) else "")

    def stop(self) -> None:
        self.timer.stop()
        for stream in self.streams:
            if stream is not None:
                stream.close()
        self.streams = [None, None]
