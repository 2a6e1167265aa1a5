"""In-app banners: recovery reports, batch ends, errors. Always shown, even with a tray.

Success and info banners fade by themselves after :data:`FADE_MS` (not while the pointer
is on one, so its buttons stay reachable); errors and warnings stay until the user closes
them or the controller removes them because their cause went (issue 23: banners piled up
and took the table's rows at 1280x720)."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from PySide6.QtCore import QEvent, QSize, Qt, QTimer, Signal
from PySide6.QtWidgets import (
    QFrame,
    QHBoxLayout,
    QLabel,
    QPushButton,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from reelqueue.ui import theme
from reelqueue.ui.qtcompat import emit

BannerAction = tuple[str, Callable[[], object]]
"""A banner button: its text and what it runs (its return value is ignored)."""

KIND_TINTS = {"info": "info", "success": "success", "warning": "warning", "error": "danger"}
FADING_KINDS = frozenset({"info", "success"})
FADE_MS = 6000
"""How long a success or info banner stays (milliseconds of the pointer not on it)."""


class Banner(QFrame):
    """One message with optional actions and a close button.

    Signals:
        dismissed(): the user closed it (or an action closed it).
        faded(): it went by itself (:attr:`fade_timer` ran out).

    Attributes:
        key: banners with the same key replace each other.
        kind: "info", "success", "warning" or "error".
        fade_timer: the single-shot timer that makes a success or info banner go (None
            for errors and warnings); stopped while the pointer is on the banner.
    """

    dismissed = Signal()
    faded = Signal()

    def __init__(self, kind: str, text: str, actions: Sequence[BannerAction],
                 key: str, parent: QWidget | None = None, fade_ms: int | None = None) -> None:
        super().__init__(parent)
        self.key = key
        self.kind = kind
        self.fade_timer: QTimer | None = None
        if fade_ms is not None:
            self.fade_timer = QTimer(self)
            self.fade_timer.setObjectName(f"banner-fade:{key}")
            self.fade_timer.setSingleShot(True)
            self.fade_timer.setInterval(fade_ms)
            self.fade_timer.timeout.connect(self._fade)
            self.fade_timer.start()
        tint = KIND_TINTS.get(kind, "info")
        base = theme.color(tint)
        fill = theme.color(tint, 40 if theme.tokens().dark else 22)
        border = theme.color(tint, 110)
        self.setObjectName("banner")
        self.setStyleSheet(
            f"QFrame#banner {{ background: rgba({fill.red()},{fill.green()},{fill.blue()},"
            f"{fill.alpha()}); border: 1px solid rgba({border.red()},{border.green()},"
            f"{border.blue()},{border.alpha()}); border-radius: 8px; }}")
        layout = QHBoxLayout(self)
        layout.setContentsMargins(12, 8, 8, 8)
        layout.setSpacing(10)
        icon = QLabel()
        icon.setPixmap(theme.icon(kind if kind != "success" else "success", tint, 18)
                       .pixmap(QSize(18, 18)))
        icon.setStyleSheet("background: transparent; border: none;")
        layout.addWidget(icon, 0, Qt.AlignmentFlag.AlignTop)
        self.label = QLabel(text)
        self.label.setWordWrap(True)
        self.label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.label.setStyleSheet("background: transparent; border: none;")
        layout.addWidget(self.label, 1)
        self.buttons: dict[str, QPushButton] = {}
        for label, callback in actions:
            button = QPushButton(label)
            button.clicked.connect(callback)
            button.setStyleSheet(f"QPushButton {{ color: {base.name()}; font-weight: 600; }}")
            self.buttons[label] = button
            layout.addWidget(button, 0, Qt.AlignmentFlag.AlignVCenter)
        close = QToolButton()
        close.setIcon(theme.icon("close", "muted", 16))
        close.setAutoRaise(True)
        close.setToolTip("Dismiss")
        close.clicked.connect(self.dismiss)
        layout.addWidget(close, 0, Qt.AlignmentFlag.AlignTop)

    @property
    def text(self) -> str:
        return self.label.text()

    def dismiss(self) -> None:
        self.hide()
        emit(self.dismissed)

    def _fade(self) -> None:
        self.hide()
        emit(self.faded)

    def event(self, e: QEvent) -> bool:
        # The pointer on the banner holds it (reading it, reaching for a button).
        if self.fade_timer is not None:
            if e.type() == QEvent.Type.Enter:
                self.fade_timer.stop()
            elif e.type() == QEvent.Type.Leave:
                self.fade_timer.start()
        return super().event(e)


class BannerArea(QWidget):
    """A column of banners above the content; newest at the bottom.

    Lifecycle: one banner per key (a kind: "recovery", "stalled", "imported", "retry"...);
    a newer one of the same key replaces the older, and the controller removes a banner
    when what it says is no longer true (the stalled one once work moves, "Imported ...
    [Start]" once the run starts). Success and info banners fade after
    :attr:`fade_ms`.

    Attributes:
        fade_ms: how long a success or info banner stays (:data:`FADE_MS`).
    """

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.fade_ms = FADE_MS
        self._layout = QVBoxLayout(self)
        self._layout.setContentsMargins(0, 0, 0, 0)
        self._layout.setSpacing(6)
        self.setVisible(False)

    def show_banner(self, kind: str, text: str,
                    actions: Sequence[BannerAction] | None = None,
                    key: str | None = None) -> Banner:
        key = key or f"{kind}:{text}"
        self.remove(key)
        banner = Banner(kind, text, actions or [], key, self,
                        fade_ms=self.fade_ms if kind in FADING_KINDS else None)
        banner.dismissed.connect(lambda: self.remove(key))
        banner.faded.connect(lambda: self._drop(banner))
        self._layout.addWidget(banner)
        self.setVisible(True)
        return banner

    def banners(self) -> list[Banner]:
        found = []
        for i in range(self._layout.count()):
            item = self._layout.itemAt(i)
            widget = item.widget() if item is not None else None
            if isinstance(widget, Banner):
                found.append(widget)
        return found

    def get(self, key: str) -> Banner | None:
        return next((b for b in self.banners() if b.key == key), None)

    def remove_family(self, prefix: str) -> None:
        """Remove every banner whose key starts with ``prefix`` (one kind of banner)."""
        for banner in self.banners():
            if banner.key.startswith(prefix):
                self.remove(banner.key)

    def remove(self, key: str) -> None:
        for banner in self.banners():
            if banner.key == key:
                self._drop(banner)
        self.setVisible(bool(self.banners()))

    def _drop(self, banner: Banner) -> None:
        """Take this banner out (not a newer one of its key that replaced it)."""
        if banner.fade_timer is not None:
            banner.fade_timer.stop()
        if banner in self.banners():
            self._layout.removeWidget(banner)
            banner.hide()
            banner.deleteLater()
        self.setVisible(bool(self.banners()))
