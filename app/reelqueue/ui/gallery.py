"""The results gallery (issue 23): one batch's videos as a grid of thumbnails.

Each tile shows the video's first frame (made off the GUI thread, see gallery_thumbs.py),
the job's name and a state badge; a video another machine of the team holds shows
"on HOST" instead of a picture. Only painted tiles ask for their picture (the model asks
in ``data()``), so a batch of thousands scrolls as freely as one of ten.

Keys: arrows, Home/End move; Enter opens the video; Space shows a larger preview (Space or
Esc closes it). Actions on the selection: Open, Show in folder, Retry with a new seed (only
where the provider takes a seed; else greyed, the reason in its tooltip: a failed,
cancelled or parked job is rendered again with the seed, a finished one is kept and a new
job beside it renders the seed, its price said first) and Export (the rows as a sheet
and the videos copied to a folder).
"""

from __future__ import annotations

import tempfile
from collections import OrderedDict
from collections.abc import Callable
from pathlib import Path
from typing import Any

from PySide6.QtCore import (
    QAbstractListModel,
    QEvent,
    QModelIndex,
    QPersistentModelIndex,
    QPoint,
    QRect,
    QSize,
    Qt,
    QTimer,
    Signal,
)
from PySide6.QtGui import (
    QColor,
    QFont,
    QFontMetrics,
    QGuiApplication,
    QKeyEvent,
    QKeySequence,
    QMouseEvent,
    QPainter,
    QPaintEvent,
    QPen,
    QPixmap,
    QResizeEvent,
    QShowEvent,
    QWheelEvent,
)
from PySide6.QtWidgets import (
    QAbstractItemView,
    QComboBox,
    QDialog,
    QFileDialog,
    QFrame,
    QHBoxLayout,
    QLabel,
    QListView,
    QPushButton,
    QStackedWidget,
    QStyle,
    QStyledItemDelegate,
    QStyleOptionViewItem,
    QVBoxLayout,
    QWidget,
)

from reelqueue.application.gallery import GalleryItem
from reelqueue.application.words import OUTCOME_UNKNOWN
from reelqueue.ui import files, theme
from reelqueue.ui import format as fmt
from reelqueue.ui.gallery_thumbs import GalleryThumb, GalleryThumbs
from reelqueue.ui.qtcompat import emit
from reelqueue.ui.review_view import ReviewView

ItemRole = Qt.ItemDataRole.UserRole + 1
PICTURE = QSize(192, 108)
TILE = QSize(208, 156)
TILE_CACHE = 400
"""Tiles kept drawn (a few screens' worth: ~125 KB each at 100 %)."""
RETRYABLE = frozenset({"FAILED", "CANCELLED", "PARKED"})

BADGE_TINTS: dict[str, str] = {
    "COMPLETED": "success", "FAILED": "danger", "PARKED": "warning", "CANCELLED": "neutral",
    "QUEUED": "neutral", "RETRY_WAIT": "warning", "CLAIMED": "accent",
    "SUBMITTING": "accent", "RENDERING": "accent", "DOWNLOADING": "accent",
}


def badge(item: GalleryItem) -> tuple[str, str]:
    """A tile's badge: its state's one name (application.words) and the theme colour it
    is tinted with."""
    return item.words.name, BADGE_TINTS.get(item.state, "neutral")


def picture_text(item: GalleryItem) -> str:
    """What a tile without a picture says instead."""
    if item.held_by is not None:
        return f"on {item.held_by}"
    if item.completed and not item.here:
        return "path refused"
    if item.completed:
        return "no picture"
    if item.state in RETRYABLE:
        if item.words.code == OUTCOME_UNKNOWN:  # not an error: its state's one name
            return item.words.name
        return (item.error or "no video").split(":")[0]
    if item.state in ("QUEUED", "RETRY_WAIT"):
        return "not started"
    return f"{item.words.name}…"


RETRY_TIP = ("Render the selected jobs again, each with a new random seed. A finished "
             "video is kept: its new video is a new job beside it, with its own file. The "
             "price is shown before anything starts.")


def retry_block(items: list[GalleryItem]) -> str | None:
    """Why "Retry with a new seed" is greyed for these tiles (None: it is offered)."""
    if not items:
        return "Select the videos to render again."
    for item in items:
        if item.seed_blocked is not None:
            return item.seed_blocked
    if not any(item.state in RETRYABLE or item.completed for item in items):
        return ("Only failed, cancelled, parked or finished jobs are rendered again; these "
                "have not finished yet.")
    return None


class GalleryModel(QAbstractListModel):
    """The tiles of one batch; a painted tile asks :class:`GalleryThumbs` for its picture.

    Attributes:
        items: the tiles in id order. thumbs: the picture maker.
    """

    def __init__(self, thumbs: GalleryThumbs, parent: Any = None) -> None:
        super().__init__(parent)
        self.items: list[GalleryItem] = []
        self.thumbs = thumbs
        self._rows_by_path: dict[str, int] = {}
        self._changed: set[int] = set()
        self._flush = QTimer(self)
        self._flush.setSingleShot(True)
        self._flush.setInterval(15)
        self._flush.timeout.connect(self._emit_changed)
        thumbs.ready.connect(self._thumb_ready)

    def rowCount(self, parent: QModelIndex | QPersistentModelIndex = QModelIndex()) -> int:  # noqa: B008
        return 0 if parent.isValid() else len(self.items)

    def data(self, index: QModelIndex | QPersistentModelIndex,
             role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if not index.isValid() or not 0 <= index.row() < len(self.items):
            return None
        item = self.items[index.row()]
        if role == ItemRole:
            return item
        if role == Qt.ItemDataRole.DisplayRole:
            return item.title
        if role == Qt.ItemDataRole.DecorationRole:
            return self.picture(item)
        if role == Qt.ItemDataRole.ToolTipRole:
            lines = [f"{item.title} — {badge(item)[0]}", item.prompt[:200]]
            if item.held_by is not None:
                lines.append(f"The video is on {item.held_by} (the machine that rendered "
                             "it); open it there.")
            elif item.completed:
                lines.append(item.output_path)
            if item.error:
                lines.append(item.error)
            return "\n".join(line for line in lines if line)
        if role == Qt.ItemDataRole.AccessibleTextRole:
            return f"{item.title}, {badge(item)[0]}"
        return None

    def picture(self, item: GalleryItem) -> QPixmap | None:
        """The tile's picture if it is at hand; else asked for (only painted tiles ask)."""
        if not item.local:
            return None
        pixmap = self.thumbs.pixmap(item.output_path)
        if pixmap is None and not self.thumbs.failed(item.output_path):
            self.thumbs.request(item.output_path)
        return pixmap

    def set_items(self, items: list[GalleryItem]) -> None:
        """Show ``items``: a new list resets; the same jobs changed are updated in place
        (the selection and the scroll position stay)."""
        if [i.job_id for i in items] == [i.job_id for i in self.items]:
            old, self.items = self.items, list(items)
            changed = [row for row, (a, b) in enumerate(zip(old, items, strict=True)) if a != b]
            self._index_paths()
            for row in changed:
                self._changed.add(row)
            if changed:
                self._flush.start()
            return
        self.beginResetModel()
        self.items = list(items)
        self._index_paths()
        self._changed.clear()
        self.endResetModel()

    def _index_paths(self) -> None:
        self._rows_by_path = {item.output_path: row for row, item in enumerate(self.items)}

    def item(self, row: int) -> GalleryItem | None:
        return self.items[row] if 0 <= row < len(self.items) else None

    def _thumb_ready(self, thumb: GalleryThumb) -> None:
        row = self._rows_by_path.get(thumb.video)
        if row is not None:
            self._changed.add(row)
            if not self._flush.isActive():
                self._flush.start()

    def _emit_changed(self) -> None:
        rows, self._changed = sorted(self._changed), set()
        roles = [Qt.ItemDataRole.DecorationRole, ItemRole]
        for row in rows:
            if row < len(self.items):
                index = self.index(row)
                self.dataChanged.emit(index, index, roles)


class GalleryDelegate(QStyledItemDelegate):
    """Paints a tile: the picture (or what stands in for it), the name, the badge.

    Each tile's card and name are drawn once into a pixmap (again when its selection
    changes) and then only copied; the picture (made at the size shown), the badge and
    the words standing in for a picture (each drawn once for all tiles) are copied over
    it: a scroll through thousands of tiles paints a screen of them many times a second
    on the GUI thread, and a picture that arrives draws nothing anew.
    """

    def __init__(self, model: GalleryModel | None = None, parent: QWidget | None = None
                 ) -> None:
        super().__init__(parent)
        self.model = model  # read directly when given: no round trip through Qt per tile
        self._parts: dict[tuple[object, ...], QPixmap] = {}
        self._badges: dict[tuple[object, ...], QPixmap] = {}  # without measuring again
        self._tiles: OrderedDict[tuple[object, ...], QPixmap] = OrderedDict()

    def sizeHint(self, option: QStyleOptionViewItem,
                 index: QModelIndex | QPersistentModelIndex) -> QSize:
        return TILE

    def _part(self, key: tuple[object, ...], size: QSize, ratio: float,
              draw: Callable[[QPainter], None]) -> QPixmap:
        full = (*key, size.width(), size.height(), ratio)
        pixmap = self._parts.get(full)
        if pixmap is None:
            if len(self._parts) > 256:  # a theme switched many times: start again
                self._parts.clear()
            pixmap = QPixmap(round(size.width() * ratio), round(size.height() * ratio))
            pixmap.setDevicePixelRatio(ratio)
            pixmap.fill(Qt.GlobalColor.transparent)
            part = QPainter(pixmap)
            part.setRenderHint(QPainter.RenderHint.Antialiasing)
            draw(part)
            part.end()
            self._parts[full] = pixmap
        return pixmap

    def paint(self, painter: QPainter, option: QStyleOptionViewItem,
              index: QModelIndex | QPersistentModelIndex) -> None:
        model = self.model
        item = (model.item(index.row()) if model is not None and index.model() is model
                else index.data(ItemRole))
        if not isinstance(item, GalleryItem):
            return
        rect: QRect = option.rect
        selected = bool(option.state & QStyle.StateFlag.State_Selected)
        focused = selected and bool(option.state & QStyle.StateFlag.State_HasFocus)
        device = painter.device()
        ratio = device.devicePixelRatioF() if device is not None else 1.0
        t = theme.tokens()
        font = option.font
        font_key = font.key()
        # 1. The card and the name: drawn once per tile (and selection), then copied.
        key = (item.job_id, item.title, selected, focused, t.dark, t.accent, ratio,
               rect.width(), rect.height(), font_key)
        tile = self._tiles.get(key)
        if tile is None:
            tile = QPixmap(round(rect.width() * ratio), round(rect.height() * ratio))
            tile.setDevicePixelRatio(ratio)
            tile.fill(Qt.GlobalColor.transparent)
            part = QPainter(tile)
            part.setRenderHint(QPainter.RenderHint.Antialiasing)
            self._draw_card(part, QRect(QPoint(0, 0), rect.size()), font, item.title,
                            selected, focused, ratio)
            part.end()
            self._tiles[key] = tile
            while len(self._tiles) > TILE_CACHE:
                self._tiles.popitem(last=False)
        else:
            self._tiles.move_to_end(key)
        painter.drawPixmap(rect.topLeft(), tile)
        # 2. The picture (made at the size shown: a copy), or what stands in for it.
        picture = picture_rect(rect)
        pixmap = (model.picture(item) if model is not None and index.model() is model
                  else index.data(Qt.ItemDataRole.DecorationRole))
        if pixmap is not None and not pixmap.isNull():
            size = pixmap.deviceIndependentSize().toSize()
            if size.width() > picture.width() or size.height() > picture.height():
                size = size.scaled(picture.size(), Qt.AspectRatioMode.KeepAspectRatio)
            target = QRect(0, 0, size.width(), size.height())
            target.moveCenter(picture.center())
            painter.fillRect(picture, QColor("#000000"))
            painter.drawPixmap(target, pixmap)
        else:
            text = picture_text(item)

            def draw_text(p: QPainter) -> None:
                p.setFont(font)
                p.setPen(QColor(t.muted))
                metrics = QFontMetrics(font)
                p.drawText(QRect(0, 0, picture.width() - 12, picture.height()),
                           Qt.AlignmentFlag.AlignCenter,
                           metrics.elidedText(text, Qt.TextElideMode.ElideMiddle,
                                              picture.width() - 12))

            painter.drawPixmap(picture.topLeft() + QPoint(6, 0), self._part(
                ("text", text, t.muted, font_key),
                QSize(picture.width() - 12, picture.height()), ratio, draw_text))
        # 3. The badge, over the picture's top-left corner.
        word, tint = badge(item)
        colour = getattr(t, tint)
        badge_key = ("badge", word, colour, t.dark, font_key, ratio)
        pixmap = self._badges.get(badge_key)
        if pixmap is None:
            pill, draw_badge = self._badge(word, colour, font)
            pixmap = self._part(badge_key, pill, ratio, draw_badge)
            self._badges[badge_key] = pixmap
        painter.drawPixmap(picture.topLeft() + QPoint(6, 6), pixmap)

    def _badge(self, word: str, colour: str, base: QFont
               ) -> tuple[QSize, Callable[[QPainter], None]]:
        t = theme.tokens()
        font = QFont(base)
        font.setPointSizeF(max(7.0, font.pointSizeF() * 0.85))
        font.setWeight(QFont.Weight.DemiBold)
        metrics = QFontMetrics(font)
        pill = QSize(metrics.horizontalAdvance(word) + 14, metrics.height() + 4)

        def draw_badge(p: QPainter) -> None:
            shape = QRect(QPoint(0, 0), pill)
            p.setPen(Qt.PenStyle.NoPen)
            p.setBrush(QColor(colour))
            p.drawRoundedRect(shape, pill.height() / 2, pill.height() / 2)
            p.setFont(font)
            p.setPen(QColor("#FFFFFF") if not t.dark else QColor(t.window))
            p.drawText(shape, Qt.AlignmentFlag.AlignCenter, word)

        return pill, draw_badge

    def _draw_card(self, painter: QPainter, rect: QRect, font: QFont, name: str,
                   selected: bool, focused: bool, ratio: float) -> None:
        t = theme.tokens()
        card = rect.adjusted(2, 2, -2, -2)
        picture = picture_rect(rect)
        edge = card.adjusted(1, 1, -1, -1)
        painter.setPen(QPen(QColor(t.accent if selected else t.border), 2 if selected else 1))
        painter.setBrush(QColor(t.surface))
        painter.drawRoundedRect(edge, 8, 8)
        painter.setPen(Qt.PenStyle.NoPen)
        painter.setBrush(QColor(t.surface_alt))
        painter.drawRoundedRect(picture, 4, 4)
        if focused:
            painter.setPen(QPen(QColor(t.accent), 1, Qt.PenStyle.DotLine))
            painter.setBrush(Qt.BrushStyle.NoBrush)
            painter.drawRoundedRect(edge.adjusted(3, 3, -3, -3), 6, 6)
        painter.setFont(font)
        painter.setPen(QColor(t.text))
        metrics = QFontMetrics(font)
        name_rect = QRect(card.left() + 8, picture.bottom() + 6, card.width() - 16,
                          metrics.height() + 2)
        painter.drawText(name_rect, Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignVCenter,
                         metrics.elidedText(name, Qt.TextElideMode.ElideRight,
                                            name_rect.width()))


def picture_rect(rect: QRect) -> QRect:
    """Where a tile at ``rect`` shows its picture."""
    card = rect.adjusted(2, 2, -2, -2)
    return QRect(card.left() + (card.width() - PICTURE.width()) // 2, card.top() + 6,
                 PICTURE.width(), PICTURE.height())


HOVER_DELAY_MS = 600
"""How long the pointer rests on a tile before its larger picture shows (a tooltip's
delay: moving across the grid shows nothing)."""


class GalleryList(QListView):
    """The grid. Signals: openRequested(): Enter; previewRequested(): Space;
    hoverRequested(int row, QPoint global position): the pointer rested on a tile for
    :data:`HOVER_DELAY_MS`; hoverEnded(): it left that tile (or a key, click or scroll).

    Attributes:
        hover_timer: the rest's timer (single shot; tests fire it with ``timeout``).
    """

    openRequested = Signal()
    previewRequested = Signal()
    hoverRequested = Signal(int, QPoint)
    hoverEnded = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.hover_timer = QTimer(self)
        self.hover_timer.setSingleShot(True)
        self.hover_timer.setInterval(HOVER_DELAY_MS)
        self.hover_timer.timeout.connect(self._rested)
        self._hover_row = -1
        self._hover_at = QPoint()
        self.setViewMode(QListView.ViewMode.IconMode)
        self.setMovement(QListView.Movement.Static)
        self.setResizeMode(QListView.ResizeMode.Adjust)
        self.setUniformItemSizes(True)  # no size asked of the tiles off screen
        self.setWrapping(True)
        self.setSpacing(6)
        self.setGridSize(QSize(TILE.width() + 8, TILE.height() + 8))
        self.setSelectionMode(QAbstractItemView.SelectionMode.ExtendedSelection)
        self.setVerticalScrollMode(QAbstractItemView.ScrollMode.ScrollPerPixel)
        self.verticalScrollBar().setSingleStep(24)
        self.setMouseTracking(True)
        self.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        # The grid paints its own background (paintEvent): Qt then scrolls by moving the
        # pixels already painted and repaints only the strip uncovered, not every tile.
        self.viewport().setAttribute(Qt.WidgetAttribute.WA_OpaquePaintEvent, True)

    def paintEvent(self, event: QPaintEvent) -> None:
        painter = QPainter(self.viewport())
        background = QColor(theme.tokens().window)
        rects = [event.region().boundingRect()] if event.region().isEmpty() else [
            rect for rect in event.region()]  # type: ignore[attr-defined]  # (the stub)
        for rect in rects:
            painter.fillRect(rect, background)
        painter.end()
        # QListView paints every tile under the region's bounding rectangle: a strip
        # uncovered at the bottom and a picture arrived at the top would be the whole
        # screen. Each rectangle of the region on its own paints only what changed.
        bounding = event.rect()
        if len(rects) > 1 and (sum(r.width() * r.height() for r in rects)
                               < bounding.width() * bounding.height() * 0.7):
            for rect in rects:
                super().paintEvent(QPaintEvent(rect))
            return
        super().paintEvent(event)

    def resizeEvent(self, event: QResizeEvent) -> None:
        # The room left over at the right is shared out between the columns.
        cell = TILE.width() + 8
        width = self.viewport().width() - 2 * self.spacing() - 4  # the layout's margins
        columns = max(1, width // cell)
        wanted = QSize(max(cell, width // columns), TILE.height() + 8)
        if self.gridSize() != wanted:
            self.setGridSize(wanted)
        super().resizeEvent(event)

    # -- hover: a larger picture after a rest on a tile -----------------------------------
    def mouseMoveEvent(self, event: QMouseEvent) -> None:
        super().mouseMoveEvent(event)
        if event.buttons() != Qt.MouseButton.NoButton:
            return
        row = self.indexAt(event.position().toPoint()).row()
        self._hover_at = event.globalPosition().toPoint()
        if row != self._hover_row:
            self._end_hover()
            self._hover_row = row
            if row >= 0:
                self.hover_timer.start()

    def _rested(self) -> None:
        if self._hover_row >= 0:
            emit(self.hoverRequested, self._hover_row, self._hover_at)

    def _end_hover(self) -> None:
        self.hover_timer.stop()
        if self._hover_row >= 0:
            self._hover_row = -1
            emit(self.hoverEnded)

    def leaveEvent(self, event: QEvent) -> None:
        self._end_hover()
        super().leaveEvent(event)

    def viewportEvent(self, event: QEvent) -> bool:
        # The rest's larger picture carries the tile's words (its caption is the tooltip's
        # text): no tooltip on top of it.
        if event.type() == QEvent.Type.ToolTip:
            return True
        return super().viewportEvent(event)

    def mousePressEvent(self, event: QMouseEvent) -> None:
        self._end_hover()
        super().mousePressEvent(event)

    def wheelEvent(self, event: QWheelEvent) -> None:
        self._end_hover()
        super().wheelEvent(event)

    def keyPressEvent(self, event: QKeyEvent) -> None:
        self._end_hover()
        key = event.key()
        if key in (Qt.Key.Key_Return, Qt.Key.Key_Enter):
            emit(self.openRequested)
            return
        if key == Qt.Key.Key_Space:
            emit(self.previewRequested)
            return
        super().keyPressEvent(event)


class PreviewPane:
    """A larger picture of one tile and its caption (the Space preview's and the hover
    popup's): the video's frame at the preview size, made off the GUI thread, or the
    tile's words when there is no video here.

    Attributes:
        thumbs: the preview-size pictures. item: the tile shown (None: none yet).
        picture, caption: the widgets (laid out by the owner).
    """

    def __init__(self, thumbs: GalleryThumbs) -> None:
        self.thumbs = thumbs
        self.item: GalleryItem | None = None
        self.picture = QLabel()
        self.picture.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.picture.setMinimumSize(QSize(thumbs.box[0], thumbs.box[1]))
        self.picture.setStyleSheet(f"background: {theme.tokens().surface_alt}; "
                                   "border-radius: 6px;")
        self.caption = QLabel()
        self.caption.setWordWrap(True)
        self.caption.setProperty("role", "muted")
        thumbs.ready.connect(self._ready)

    def show_item(self, item: GalleryItem) -> None:
        self.item = item
        word = badge(item)[0]
        self.caption.setText(f"{item.title} · {word}\n{item.prompt}")
        self._set_picture()

    def _set_picture(self) -> None:
        item = self.item
        if item is None:
            return
        if item.local:
            pixmap = self.thumbs.pixmap(item.output_path)
            if pixmap is not None:  # fitted to the preview (a small video is scaled up)
                self.picture.setPixmap(pixmap.scaled(
                    QSize(*self.thumbs.box), Qt.AspectRatioMode.KeepAspectRatio,
                    Qt.TransformationMode.SmoothTransformation))
                self.picture.setText("")
                return
            if not self.thumbs.failed(item.output_path):
                self.thumbs.request(item.output_path)
                self.picture.clear()
                self.picture.setText("Loading…")
                return
        self.picture.clear()
        self.picture.setText(picture_text(item))

    def _ready(self, thumb: GalleryThumb) -> None:
        if self.item is not None and thumb.video == self.item.output_path:
            self._set_picture()


class _ShowsPane:
    """What the Space preview and the hover popup show through their :class:`PreviewPane`
    (a member, not a base: PySide6 would call a plain base's ``__init__`` itself)."""

    pane: PreviewPane

    @property
    def item(self) -> GalleryItem | None:
        return self.pane.item

    @property
    def picture(self) -> QLabel:
        return self.pane.picture

    @property
    def caption(self) -> QLabel:
        return self.pane.caption

    def show_item(self, item: GalleryItem) -> None:
        self.pane.show_item(item)


class PreviewDialog(_ShowsPane, QDialog):
    """A larger picture of the current tile; Space or Esc closes it."""

    def __init__(self, thumbs: GalleryThumbs, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.pane = PreviewPane(thumbs)
        self.setWindowTitle("Preview")
        self.setModal(False)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(12, 12, 12, 12)
        layout.addWidget(self.picture, 1)
        layout.addWidget(self.caption)

    def show_item(self, item: GalleryItem) -> None:
        self.setWindowTitle(f"Preview — {item.title}")
        self.pane.show_item(item)

    def keyPressEvent(self, event: QKeyEvent) -> None:
        if event.key() in (Qt.Key.Key_Space, Qt.Key.Key_Escape):
            self.hide()
            return
        super().keyPressEvent(event)


class HoverPreview(_ShowsPane, QFrame):
    """The larger picture shown beside the pointer after a rest on a tile (a tooltip-like
    window: no focus taken, gone when the pointer leaves the tile)."""

    def __init__(self, thumbs: GalleryThumbs, parent: QWidget | None = None) -> None:
        super().__init__(parent, Qt.WindowType.ToolTip)
        self.pane = PreviewPane(thumbs)
        self.setObjectName("panel")
        self.setAttribute(Qt.WidgetAttribute.WA_ShowWithoutActivating, True)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(10, 10, 10, 10)
        layout.addWidget(self.picture, 1)
        self.caption.setMaximumWidth(thumbs.box[0])
        layout.addWidget(self.caption)

    def show_at(self, item: GalleryItem, pointer: QPoint, words: str = "") -> None:
        """Show ``item`` beside ``pointer`` (global), kept on its screen; ``words``: the
        caption (the tile's tooltip text: name, state, prompt, file or host, error)."""
        self.show_item(item)
        if words:
            self.caption.setText(words)
        self.adjustSize()
        size = self.sizeHint()
        screen = QGuiApplication.screenAt(pointer) or QGuiApplication.primaryScreen()
        room = screen.availableGeometry()
        x = pointer.x() + 16
        if x + size.width() > room.right():
            x = pointer.x() - 16 - size.width()
        y = min(max(room.top(), pointer.y() + 16), room.bottom() - size.height())
        self.move(max(room.left(), x), y)
        self.show()


class GalleryView(QWidget):
    """The gallery page beside the jobs table.

    Signals:
        batchChosen(int): show this batch's videos (the controller reads them).
        shown(): the gallery became visible (a batch chosen while it was hidden is read
            now: tiles are read only for a gallery someone looks at).
        retryRequested(list, object): job ids, and -1 (a new seed for each).
        exportRequested(int, list, object): batch id, job ids, the folder (Path).
        cutRequested(int, list): batch id, the picked job ids (the selected takes).
        noOpener(object): nothing on this system opens the path (Path).
        reviewShown(int): the review page (issue 35) shows this batch (read its takes).

    Attributes:
        thumbs: the tiles' pictures. preview_thumbs: the preview's (larger).
        model: the tiles. view: the grid. preview: the preview dialog (None until shown).
    """

    batchChosen = Signal(int)
    shown = Signal()
    reviewShown = Signal(int)
    retryRequested = Signal(list, object)
    exportRequested = Signal(int, list, object)
    cutRequested = Signal(int, list)
    noOpener = Signal(object)

    def __init__(self, cache_dir: Path | None = None, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        folder = cache_dir or Path(tempfile.gettempdir()) / "reelqueue-gallery"
        self.thumbs = GalleryThumbs(folder, (PICTURE.width() * 2, PICTURE.height() * 2),
                                    workers=2, parent=self)
        self.preview_thumbs = GalleryThumbs(folder, (640, 360), workers=1, parent=self)
        self.model = GalleryModel(self.thumbs, self)
        self._set_display()
        self.preview: PreviewDialog | None = None
        self.hover: HoverPreview | None = None
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(8)
        bar = QHBoxLayout()
        bar.setSpacing(8)
        self.batch = QComboBox()
        self.batch.setMinimumWidth(180)
        self.batch.setToolTip("The batch whose videos are shown")
        self.batch.currentIndexChanged.connect(self._batch_changed)
        bar.addWidget(self.batch)
        self.count_label = QLabel()
        self.count_label.setProperty("role", "muted")
        bar.addWidget(self.count_label)
        bar.addStretch(1)
        self.open_button = QPushButton("Open")
        self.open_button.setToolTip("Play the selected video (Enter)")
        self.open_button.clicked.connect(self.open_selected)
        self.reveal_button = QPushButton("Show in folder")
        self.reveal_button.clicked.connect(self.reveal_selected)
        self.retry_button = QPushButton("Retry with a new seed")
        self.retry_button.clicked.connect(self.retry_selected)
        self.export_button = QPushButton("Export…")
        self.export_button.setToolTip("Copy the selected videos to a folder, with a sheet "
                                      "of their rows and results")
        self.export_button.clicked.connect(self.export_selected)
        # The cut (issue 35 item 5): the review's picks, or the selected takes.
        self.cut_button = QPushButton("Cut")
        self.cut_button.clicked.connect(self.cut_selected)
        for button in (self.open_button, self.reveal_button, self.retry_button,
                       self.export_button, self.cut_button):
            bar.addWidget(button)
        # The review page (issue 35 item 2): the takes grouped by row, reviewed by key.
        self.review_button = QPushButton("Review")
        self.review_button.setCheckable(True)
        self.review_button.setShortcut(QKeySequence("Ctrl+E"))
        self.review_button.setStyleSheet(  # checked looks pressed, as Table | Gallery
            "QPushButton:checked { background: palette(highlight); "
            "color: palette(highlighted-text); border-color: palette(highlight); }")
        self.review_button.setToolTip("Review the takes row by row: P pick, X reject, "
                                      "U clear, 1-5 rate, Ctrl+Z undo (Ctrl+E)")
        self.review_button.toggled.connect(self.show_review)
        bar.addWidget(self.review_button)
        layout.addLayout(bar)
        self.view = GalleryList()
        self.view.setModel(self.model)
        self.view.setItemDelegate(GalleryDelegate(self.model, self.view))
        self.view.openRequested.connect(self.open_selected)
        self.view.previewRequested.connect(self.toggle_preview)
        self.view.hoverRequested.connect(self.show_hover)
        self.view.hoverEnded.connect(self.hide_hover)
        self.view.doubleClicked.connect(lambda _index: self.open_selected())
        self.view.selectionModel().selectionChanged.connect(lambda *_a: self._update_actions())
        self.view.selectionModel().currentChanged.connect(lambda *_a: self._follow_preview())
        self.model.modelReset.connect(self._update_actions)
        self.model.dataChanged.connect(lambda *_a: self._update_actions())
        self.review = ReviewView(self.thumbs)
        self.pages = QStackedWidget()
        self.pages.addWidget(self.view)
        self.pages.addWidget(self.review)
        layout.addWidget(self.pages, 1)
        self._update_actions()

    def _set_display(self) -> None:
        """Pictures are made at the size a tile shows them, for this screen's pixels."""
        ratio = self.devicePixelRatioF()
        if ratio != self.thumbs.ratio or self.thumbs.display is None:
            self.thumbs.ratio = ratio
            self.thumbs.display = (round(PICTURE.width() * ratio),
                                   round(PICTURE.height() * ratio))
            self.thumbs.forget()

    def showEvent(self, event: QShowEvent) -> None:
        self._set_display()
        super().showEvent(event)
        emit(self.shown)

    def set_cache_dir(self, folder: Path) -> None:
        """Keep the pictures in ``folder`` (the data folder's)."""
        self.thumbs.cache_dir = folder
        self.preview_thumbs.cache_dir = folder

    # -- batches and items ----------------------------------------------------------------
    def set_batches(self, batches: list[tuple[int, str]]) -> None:
        """The batches to choose from, oldest first; the newest is chosen at first."""
        wanted = [(name, bid) for bid, name in batches]
        present = [(self.batch.itemText(i), self.batch.itemData(i))
                   for i in range(self.batch.count())]
        if wanted == present:
            return
        current = self.batch.currentData()
        self.batch.blockSignals(True)
        self.batch.clear()
        for name, bid in wanted:
            self.batch.addItem(name, bid)
        index = self.batch.findData(current) if current is not None else -1
        self.batch.setCurrentIndex(index if index >= 0 else self.batch.count() - 1)
        self.batch.blockSignals(False)
        if self.batch.currentData() != current and self.batch.currentData() is not None:
            emit(self.batchChosen, int(self.batch.currentData()))

    def current_batch(self) -> int | None:
        data = self.batch.currentData()
        return None if data is None else int(data)

    def choose_batch(self, batch_id: int) -> None:
        index = self.batch.findData(batch_id)
        if index >= 0:
            self.batch.setCurrentIndex(index)

    def _batch_changed(self, _index: int) -> None:
        batch = self.current_batch()
        if batch is not None:
            emit(self.batchChosen, batch)
            if self.reviewing:
                emit(self.reviewShown, batch)

    # -- review (issue 35 item 2) -----------------------------------------------------------
    @property
    def reviewing(self) -> bool:
        return self.pages.currentWidget() is self.review

    def show_review(self, on: bool) -> None:
        """Switch between the grid and the review page (the button, or a test)."""
        if self.review_button.isChecked() != on:
            self.review_button.setChecked(on)  # comes back here through toggled
            return
        self.pages.setCurrentWidget(self.review if on else self.view)
        for button in (self.open_button, self.reveal_button, self.retry_button,
                       self.export_button):
            button.setVisible(not on)
        batch = self.current_batch()
        if on:
            self.review.setFocus()
            if batch is not None:
                emit(self.reviewShown, batch)

    def set_items(self, batch_id: int, items: list[GalleryItem]) -> None:
        """The chosen batch's tiles (items of another batch, read late, are ignored)."""
        if batch_id != self.current_batch():
            return
        self.model.set_items(items)
        done = sum(1 for item in items if item.completed)
        self.count_label.setText(f"{fmt.count(len(items), 'job')} · "
                                 f"{fmt.count(done, 'video')}")
        if items and not self.view.currentIndex().isValid():
            self.view.setCurrentIndex(self.model.index(0))
        self._update_actions()

    def selected_items(self) -> list[GalleryItem]:
        rows = sorted(index.row() for index in self.view.selectionModel().selectedIndexes())
        items = [self.model.items[row] for row in rows if row < len(self.model.items)]
        if not items:
            current = self.model.item(self.view.currentIndex().row())
            if current is not None and self.view.currentIndex().isValid():
                items = [current]
        return items

    # -- actions --------------------------------------------------------------------------
    def _update_actions(self) -> None:
        items = self.selected_items()
        local = [i for i in items if i.local]
        held = [i for i in items if i.held_by is not None]
        for button in (self.open_button, self.reveal_button):
            button.setEnabled(bool(local))
        reason = ("Select a finished video first." if not items
                  else f"The video is on {held[0].held_by}: open it there." if held and not local
                  else "None of the selected jobs has a video yet." if not local else "")
        self.open_button.setToolTip(reason or "Play the selected video (Enter)")
        self.reveal_button.setToolTip(reason or "Show the selected video in its folder")
        block = retry_block(items)
        self.retry_button.setEnabled(block is None)
        self.retry_button.setToolTip(block or RETRY_TIP)
        self.export_button.setEnabled(bool(items))
        picks = [i for i in items if i.completed]
        self.cut_button.setEnabled(self.current_batch() is not None)
        self.cut_button.setToolTip(
            "Join the selected finished takes (one per row) in sheet order into one video "
            "and a timeline (.otio, FCP XML, EDL) in the batch's cut folder; rows without "
            "a selected take are black gaps" if picks
            else "Join the review's picks (one per row) in sheet order into one video and a "
                 "timeline (.otio, FCP XML, EDL) in the batch's cut folder; rows without a "
                 "pick are black gaps (or select the takes to cut here).")

    def cut_selected(self) -> None:
        batch = self.current_batch()
        # The selected takes are the picks; none selected: the review's picks.
        ids = [item.job_id for item in self.selected_items() if item.completed]
        if batch is not None:
            emit(self.cutRequested, batch, ids)

    def open_selected(self) -> None:
        for item in self.selected_items()[:8]:  # a few players, not a hundred
            if item.local:
                path = Path(item.output_path)
                if not files.open_path(path):
                    emit(self.noOpener, path)

    def reveal_selected(self) -> None:
        for item in self.selected_items()[:1]:
            if item.local:
                path = Path(item.output_path)
                if not files.reveal(path):
                    emit(self.noOpener, path)

    def retry_selected(self) -> None:
        items = self.selected_items()
        if retry_block(items) is not None:
            return
        ids = [item.job_id for item in items if item.state in RETRYABLE or item.completed]
        emit(self.retryRequested, ids, -1)

    def export_selected(self) -> None:
        items = self.selected_items()
        batch = self.current_batch()
        if not items or batch is None:
            return
        dialog = QFileDialog(self, "Export the selected videos to a folder")
        dialog.setFileMode(QFileDialog.FileMode.Directory)
        dialog.setOption(QFileDialog.Option.ShowDirsOnly, True)
        ids = [item.job_id for item in items]
        dialog.fileSelected.connect(
            lambda name: emit(self.exportRequested, batch, ids, Path(name)))
        dialog.open()

    # -- preview --------------------------------------------------------------------------
    def toggle_preview(self) -> None:
        if self.preview is not None and self.preview.isVisible():
            self.preview.hide()
            return
        item = self.model.item(self.view.currentIndex().row())
        if item is None:
            return
        if self.preview is None:
            self.preview = PreviewDialog(self.preview_thumbs, self)
        self.preview.show_item(item)
        self.preview.show()

    def show_hover(self, row: int, pointer: QPoint) -> None:
        """The pointer rested on tile ``row``: its larger picture beside it."""
        item = self.model.item(row)
        if item is None or not self.isVisible():
            return
        if self.hover is None:
            self.hover = HoverPreview(self.preview_thumbs, self)
        words = self.model.data(self.model.index(row), Qt.ItemDataRole.ToolTipRole)
        self.hover.show_at(item, pointer, words if isinstance(words, str) else "")

    def hide_hover(self) -> None:
        if self.hover is not None:
            self.hover.hide()

    def _follow_preview(self) -> None:
        if self.preview is not None and self.preview.isVisible():
            item = self.model.item(self.view.currentIndex().row())
            if item is not None:
                self.preview.show_item(item)

    def stop(self) -> None:
        """Drop the pictures waiting to be made (the window closes)."""
        self.hide_hover()
        self.review.stop()
        self.thumbs.close()
        self.preview_thumbs.close()
