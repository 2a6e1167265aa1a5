"""The job detail's output pane: the video's thumbnail, and Play.

Play opens the system's video player (``QDesktopServices``): ReelQueue ships
PySide6-Essentials, which has no QtMultimedia (checked: ``import PySide6.QtMultimedia``
fails), and Qt's multimedia backends are what frozen builds lose most often. Where
QtMultimedia is importable (PySide6-Addons installed beside it), the video plays here in
the pane instead, and any error of the player falls back to the system player. When
nothing opens the file the pane says so, with the file's path (docs/ui.md).
"""

from __future__ import annotations

import importlib.util
import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

from PySide6.QtCore import QSize, Qt, QUrl, Signal
from PySide6.QtGui import QPixmap
from PySide6.QtWidgets import QLabel, QStackedWidget, QWidget

from reelqueue.ui import files, theme
from reelqueue.ui.qtcompat import emit

log = logging.getLogger(__name__)

THUMB = QSize(288, 162)
NOTHING_OPENED = ("No video player opened {name}: this computer has no program set up "
                  "for .mp4 files. Install one (VLC plays every format), or use Show in "
                  "folder.")


def inline_player_available() -> bool:
    """QtMultimedia and its widgets are importable (not in PySide6-Essentials)."""
    try:
        return (importlib.util.find_spec("PySide6.QtMultimedia") is not None
                and importlib.util.find_spec("PySide6.QtMultimediaWidgets") is not None)
    except (ImportError, ValueError):
        return False


class PreviewPane(QStackedWidget):
    """The thumbnail (or a film frame when there is none) and, where QtMultimedia
    exists, the playing video in its place.

    Signals:
        notice(str): what to tell the user about playing ("" when it plays here).

    Attributes:
        thumbnail: the label showing the picture.
        inline: the video plays in the pane (else in the system player).
        opener: opens a file in the system's program for it; True when something did.
    """

    notice = Signal(str)

    def __init__(self, parent: QWidget | None = None, *,
                 opener: Callable[[Path], bool] = files.open_path,
                 inline: bool | None = None) -> None:
        super().__init__(parent)
        self.setFixedSize(THUMB)
        self.opener = opener
        self.inline = inline_player_available() if inline is None else inline
        self.thumbnail = QLabel()
        self.thumbnail.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.thumbnail.setStyleSheet(
            f"background: {theme.tokens().surface_alt}; border: 1px solid "
            f"{theme.tokens().border}; border-radius: 8px;")
        self.addWidget(self.thumbnail)
        self._player: Any = None
        self._video: Path | None = None
        self._has_picture = False
        self.set_picture(None)

    @property
    def has_picture(self) -> bool:
        """The video's own picture is shown (not the film frame)."""
        return self._has_picture

    def set_picture(self, pixmap: QPixmap | None) -> None:
        self._has_picture = pixmap is not None and not pixmap.isNull()
        if pixmap is None or pixmap.isNull():
            self.thumbnail.setPixmap(theme.icon("film", "muted", 48).pixmap(QSize(48, 48)))
            return
        self.thumbnail.setPixmap(pixmap.scaled(THUMB, Qt.AspectRatioMode.KeepAspectRatio,
                                               Qt.TransformationMode.SmoothTransformation))

    def play(self, video: Path) -> None:
        """Play ``video`` here or in the system player; :attr:`notice` says which."""
        self._video = video
        if self.inline:
            try:
                self._play_inline(video)
                emit(self.notice, "")
                return
            except Exception:  # a missing backend: the system player instead
                log.info("in-app playback unavailable; opening the system player",
                         exc_info=True)
                self.inline = False
        self._play_outside(video)

    def _play_outside(self, video: Path) -> None:
        if self.opener(video):
            emit(self.notice, f"Opened {video.name} in your video player.")
        else:
            emit(self.notice, NOTHING_OPENED.format(name=video.name))

    def _play_inline(self, video: Path) -> None:
        # Imported here: absent from PySide6-Essentials (see the module docstring).
        from PySide6.QtMultimedia import QAudioOutput, QMediaPlayer
        from PySide6.QtMultimediaWidgets import QVideoWidget

        if self._player is None:
            surface = QVideoWidget()
            self.addWidget(surface)
            player = QMediaPlayer(self)
            player.setAudioOutput(QAudioOutput(player))
            player.setVideoOutput(surface)
            player.errorOccurred.connect(self._inline_failed)
            self._player = (player, surface)
        player, surface = self._player
        self.setCurrentWidget(surface)
        player.setSource(QUrl.fromLocalFile(str(video)))
        player.play()

    def _inline_failed(self, *_args: object) -> None:
        self.inline = False
        self.setCurrentWidget(self.thumbnail)
        if self._video is not None:
            self._play_outside(self._video)

    def stop(self) -> None:
        if self._player is not None:
            self._player[0].stop()
            self.setCurrentWidget(self.thumbnail)
