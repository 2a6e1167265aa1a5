"""In-app banners: recovery reports, batch ends, errors. Always shown, even with a tray.

Success and info banners without a button fade by themselves after :data:`FADE_MS` (not
while the pointer is on one) into the notifications list (:class:`NotificationBell`, a
count of the unseen ones on the toolbar). A banner that carries a button ("Also retry
these 2…", "Retry (est. $…)", the import's "Start") asks something: it stays until it is
answered (a button: the banner goes), dismissed, or the controller removes it because it
is no longer true (N3: they faded after 6 s and the list kept only their words). Errors
and warnings stay likewise. At most :data:`MAX_SHOWN` banners show at once, of them at
most :data:`MAX_LOUD` warnings and errors — the older ones fold under "N more — Show"
(issue 23: banners piled up and took the table's rows at 1280x720).

The area floats over the bottom of the window's content (:meth:`BannerArea.overlay`)
instead of taking a place in its layout: a banner coming or going never moves the table
(N3: the rows jumped whenever one went)."""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from PySide6.QtCore import QEvent, QObject, QSize, Qt, QTimer, Signal
from PySide6.QtGui import QColor
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
MAX_SHOWN = 3
"""Banners shown at once, of every kind; older ones fold under "N more — Show"."""
OVERLAY_MARGIN = 12
"""Pixels between the floating banners and the content's edges."""
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


def opaque(colour: QColor, under: QColor) -> QColor:
    """``colour`` laid over ``under``, as one opaque colour."""
    a = colour.alphaF()
    return QColor(round(colour.red() * a + under.red() * (1 - a)),
                  round(colour.green() * a + under.green() * (1 - a)),
                  round(colour.blue() * a + under.blue() * (1 - a)))


def _one_line(text: str, limit: int = 90) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[:limit - 1] + "…"


class Banner(QFrame):
    """One message with optional actions and a close button.

    Signals:
        dismissed(): the user closed it (or an action closed it).
        faded(): it went by itself (:attr:`fade_timer` ran out).
        answered(): one of its buttons was pressed (its work has run).

    Attributes:
        key: banners with the same key replace each other.
        kind: "info", "success", "warning" or "error".
        fade_timer: the single-shot timer that makes a success or info banner without a
            button go (None for the others); stopped while the pointer is on the banner.
    """

    dismissed = Signal()
    faded = Signal()
    answered = Signal()

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
        fill = opaque(theme.color(tint, 40 if theme.tokens().dark else 22),
                      QColor(theme.tokens().surface))  # it floats over the table
        border = theme.color(tint, 110)
        self.setObjectName("banner")
        self.setStyleSheet(
            f"QFrame#banner {{ background: {fill.name()}; "
            f"border: 1px solid rgba({border.red()},{border.green()},"
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
            button.clicked.connect(lambda _checked=False, run=callback: self._answer(run))
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

    def _answer(self, run: Callable[[], object]) -> None:
        """A button: what it says runs, and the question is answered (the banner goes,
        not a newer one of its key that the button's work may have shown)."""
        run()
        emit(self.answered)

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
        self._host: QWidget | None = None  # set by overlay()
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
        tokens = theme.tokens()  # it floats over the table: a ground of its own
        self.more.setStyleSheet(
            f"QPushButton#banner-more {{ background: {tokens.surface}; "
            f"border: 1px solid {tokens.border}; border-radius: 6px; padding: 3px 10px; }}")
        self.more.clicked.connect(self._toggle_more)
        self._layout.addWidget(self.more, 0, Qt.AlignmentFlag.AlignLeft)
        self.setVisible(False)
        self._arrange()

    def show_banner(self, kind: str, text: str,
                    actions: Sequence[BannerAction] | None = None,
                    key: str | None = None) -> Banner:
        key = key or f"{kind}:{text}"
        self.remove(key)
        # A banner with a button asks something: it never goes by itself (N3).
        fades = kind in FADING_KINDS and not actions
        banner = Banner(kind, text, actions or [], key, self,
                        fade_ms=self.fade_ms if fades else None)
        banner.dismissed.connect(lambda: self.remove(key))
        banner.faded.connect(lambda: self._went_by_itself(banner))
        banner.answered.connect(lambda: self._drop(banner))
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
        unfolded = [b for b in banners if id(b) not in folded]
        folded |= set(map(id, unfolded[:-MAX_SHOWN]))  # the oldest of the rest
        if not folded:
            self._expanded = False
        for banner in banners:
            banner.setHidden(id(banner) in folded and not self._expanded)
        if folded:
            count = len(folded)
            loud_only = all(b.kind in LOUD_KINDS for b in banners if id(b) in folded)
            noun = (" warning" if count == 1 else " warnings") if loud_only else ""
            self.more.setText("Show fewer" if self._expanded
                              else f"{count} more{noun} — Show")
        self.more.setVisible(bool(folded))
        self.setVisible(bool(banners))
        self._place()

    # -- floating over the content ----------------------------------------------------------
    def overlay(self, host: QWidget) -> None:
        """Float over the bottom of ``host`` (the window's content) instead of taking a
        place in its layout: the table never moves when a banner comes or goes."""
        self.setParent(host)
        self._host = host
        host.installEventFilter(self)
        self._arrange()

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        if watched is self._host and event.type() == QEvent.Type.Resize:
            self._place()
        return super().eventFilter(watched, event)

    def event(self, e: QEvent) -> bool:
        if e.type() == QEvent.Type.LayoutRequest:
            self._place()
        return super().event(e)

    def _place(self) -> None:
        host = self._host
        if host is None:
            return
        width = max(0, host.width() - 2 * OVERLAY_MARGIN)
        layout = self._layout
        height = (layout.totalHeightForWidth(width) if layout.hasHeightForWidth()
                  else layout.totalSizeHint().height())
        height = min(height, max(0, host.height() - 2 * OVERLAY_MARGIN))
        self.setGeometry(OVERLAY_MARGIN, host.height() - OVERLAY_MARGIN - height,
                         width, height)
        self.raise_()
