"""In-app banners: recovery reports, batch ends, errors. Always shown, even with a tray.

Success and info banners fade by themselves after :data:`FADE_MS` (not while the pointer
is on one, so its buttons stay reachable) into the notifications list (:class:`NotificationBell`,
a count of the unseen ones on the toolbar); errors and warnings stay until the user closes
them or the controller removes them because their cause went, and at most
:data:`MAX_LOUD` of them show at once — the older ones fold under "N more warnings — Show"
(issue 23: banners piled up and took the table's rows at 1280x720)."""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from PySide6.QtCore import QEvent, QSize, Qt, QTimer, Signal
from PySide6.QtWidgets import (
    QFrame,
    QHBoxLayout,
    QLabel,
    QMenu,
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
LOUD_KINDS = frozenset({"warning", "error"})
MAX_LOUD = 2
"""Warnings and errors shown at once; older ones fold under "N more warnings — Show"."""
KEEP_NOTIFICATIONS = 50


@dataclass(frozen=True)
class Notification:
    """A banner that went by itself: its kind, words and when it was shown (epoch s)."""

    kind: str
    text: str
    at: float


class NotificationBell(QToolButton):
    """The toolbar's notifications list: every banner that faded, newest first, the count
    of those not seen yet in its text ("Notifications 3"); opening the list marks them
    seen.

    Attributes:
        items: the newest :data:`KEEP_NOTIFICATIONS` notifications, newest first.
        unseen: how many arrived since the list was last opened.
    """

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("notifications")
        # The list opens on a click; Qt's menu arrow (drawn under the text) adds nothing.
        self.setStyleSheet("QToolButton#notifications::menu-indicator { image: none; }")
        self.items: deque[Notification] = deque(maxlen=KEEP_NOTIFICATIONS)
        self.unseen = 0
        self.setIcon(theme.icon("info", "muted", 18))
        self.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonTextBesideIcon)
        self.setPopupMode(QToolButton.ToolButtonPopupMode.InstantPopup)
        self.list = QMenu(self)
        self.list.aboutToShow.connect(self._fill)
        self.setMenu(self.list)
        self._update()

    def add(self, kind: str, text: str, at: float | None = None) -> None:
        self.items.appendleft(Notification(kind, text, time.time() if at is None else at))
        self.unseen += 1
        self._update()

    def lines(self) -> list[str]:
        """What the list shows, one line per notification: "14:05  Imported 12 jobs…"."""
        return [f"{time.strftime('%H:%M', time.localtime(n.at))}  {_one_line(n.text)}"
                for n in self.items]

    def _fill(self) -> None:
        self.list.clear()
        if not self.items:
            self.list.addAction("Nothing yet: banners that go by themselves are kept here"
                                ).setEnabled(False)
        for note, line in zip(self.items, self.lines(), strict=True):
            action = self.list.addAction(theme.icon(note.kind, KIND_TINTS.get(note.kind,
                                                                             "info"), 16),
                                         line)
            action.setToolTip(note.text)
        if self.items:
            self.list.addSeparator()
            self.list.addAction("Clear", self.clear)
        self.unseen = 0
        self._update()

    def clear(self) -> None:
        self.items.clear()
        self.unseen = 0
        self._update()

    def _update(self) -> None:
        self.setText(f"Notifications {self.unseen}" if self.unseen else "Notifications")
        self.setToolTip(f"{self.unseen} not seen yet" if self.unseen
                        else "Banners that went by themselves")


def _one_line(text: str, limit: int = 90) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[:limit - 1] + "…"


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
        # Its own until a toolbar takes it (main_window): deleted with the area, on the GUI
        # thread, never by a garbage collection on another thread.
        self.bell = NotificationBell(self)
        self.bell.hide()
        self._expanded = False
        self._layout = QVBoxLayout(self)
        self._layout.setContentsMargins(0, 0, 0, 0)
        self._layout.setSpacing(6)
        self.more = QPushButton()
        self.more.setObjectName("banner-more")
        self.more.setFlat(True)
        self.more.clicked.connect(self._toggle_more)
        self._layout.addWidget(self.more, 0, Qt.AlignmentFlag.AlignLeft)
        self.setVisible(False)
        self._arrange()

    def show_banner(self, kind: str, text: str,
                    actions: Sequence[BannerAction] | None = None,
                    key: str | None = None) -> Banner:
        key = key or f"{kind}:{text}"
        self.remove(key)
        banner = Banner(kind, text, actions or [], key, self,
                        fade_ms=self.fade_ms if kind in FADING_KINDS else None)
        banner.dismissed.connect(lambda: self.remove(key))
        banner.faded.connect(lambda: self._went_by_itself(banner))
        self._layout.insertWidget(self._layout.count() - 1, banner)  # above "N more"
        self._arrange()
        return banner

    def banners(self) -> list[Banner]:
        found = []
        for i in range(self._layout.count()):
            item = self._layout.itemAt(i)
            widget = item.widget() if item is not None else None
            if isinstance(widget, Banner):
                found.append(widget)
        return found

    def shown(self) -> list[Banner]:
        """The banners on screen (not folded under "N more warnings")."""
        return [b for b in self.banners() if not b.isHidden()]

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
        self._arrange()

    def _went_by_itself(self, banner: Banner) -> None:
        if banner in self.banners():
            self.bell.add(banner.kind, banner.text)
        self._drop(banner)

    def _drop(self, banner: Banner) -> None:
        """Take this banner out (not a newer one of its key that replaced it)."""
        if banner.fade_timer is not None:
            banner.fade_timer.stop()
        if banner in self.banners():
            self._layout.removeWidget(banner)
            banner.hide()
            banner.deleteLater()
        self._arrange()

    def _toggle_more(self) -> None:
        self._expanded = not self._expanded
        self._arrange()

    def _arrange(self) -> None:
        """Show every quiet banner and the newest :data:`MAX_LOUD` warnings and errors;
        fold the older ones under the "N more" button (all of them when unfolded)."""
        banners = self.banners()
        loud = [b for b in banners if b.kind in LOUD_KINDS]
        folded = set(map(id, loud[:-MAX_LOUD])) if len(loud) > MAX_LOUD else set()
        if not folded:
            self._expanded = False
        for banner in banners:
            banner.setHidden(id(banner) in folded and not self._expanded)
        if folded:
            count = len(folded)
            self.more.setText("Show fewer" if self._expanded else
                              f"{count} more {'warning' if count == 1 else 'warnings'} — Show")
        self.more.setVisible(bool(folded))
        self.setVisible(bool(banners))
