"""The gallery's review page (issue 35 item 2): a batch's takes grouped by row, reviewed
from the keyboard.

Each row of the sheet is a line of take cards (picture, decision, rating). Keys (the
application's :data:`~reelqueue.application.review_pass.KEYS`): P picks (one pick per
row), Shift+P picks and goes to the next row, X rejects, U clears, 1-5 rate (0 removes),
Right/Left and Down/Up move by take and by row, Ctrl+Z undoes, Enter plays the take in the
system's player at full size, Space plays it beside the next take of its row from one
clock (ui/take_player.py; Space again or Esc stops). "Show only unreviewed" hides the
rows with nothing left to review; "12 of 15 reviewed" counts the finished takes with a
decision.

The page only asks: each change goes to the controller (:attr:`ReviewView.decisionAsked`),
which writes it through the application layer and answers with :meth:`ReviewView.written`
or :meth:`ReviewView.refused` ("changed by X meanwhile").
"""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QRect, QSize, Qt, Signal
from PySide6.QtGui import QColor, QFont, QFontMetrics, QKeyEvent, QPainter, QPaintEvent, QPen
from PySide6.QtWidgets import (
    QCheckBox,
    QHBoxLayout,
    QLabel,
    QPushButton,
    QScrollArea,
    QSizePolicy,
    QVBoxLayout,
    QWidget,
)

from reelqueue.application.review import TakeGroup
from reelqueue.application.review_pass import KEYS, Ask, ReviewPass
from reelqueue.application.review_words import (
    ALL_DECIDED,
    NO_TAKES,
    NO_VIDEO_HERE,
    NOTHING_TO_DECIDE,
    decided_words,
    decision_words,
    progress_words,
)
from reelqueue.application.words import job_state_words
from reelqueue.domain.models import Job
from reelqueue.domain.review import CLEAR_RATING, Decision, ReviewWritten
from reelqueue.domain.states import JobState
from reelqueue.ui import theme
from reelqueue.ui.gallery_thumbs import GalleryThumb, GalleryThumbs
from reelqueue.ui.qtcompat import emit
from reelqueue.ui.take_player import SideBySide

PICTURE = QSize(192, 108)
CARD = QSize(208, 160)
HEADER = 28
ROW = HEADER + CARD.height() + 12
MARGIN = 12

DECISION_TINTS = {Decision.PICK: "success", Decision.REJECT: "danger",
                  Decision.NONE: "neutral"}


class ReviewCanvas(QWidget):
    """The rows and their take cards, painted; keys go to the page (:class:`ReviewView`).

    Attributes:
        review: the pass (rows, current take). thumbs: the cards' pictures.
        videos: the local file of each finished take, by job id.
    """

    def __init__(self, review: ReviewPass, thumbs: GalleryThumbs,
                 parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.review = review
        self.thumbs = thumbs
        self.videos: dict[int, str] = {}
        self.setFocusPolicy(Qt.FocusPolicy.StrongFocus)
        self.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Fixed)
        thumbs.ready.connect(self._thumb_ready)

    def sizeHint(self) -> QSize:
        rows = self.review.visible
        widest = max((len(g.takes) for g in rows), default=1)
        return QSize(MARGIN * 2 + widest * CARD.width(), MARGIN + max(1, len(rows)) * ROW)

    def relayout(self) -> None:
        self.setMinimumSize(self.sizeHint())
        self.resize(max(self.width(), self.sizeHint().width()), self.sizeHint().height())
        self.update()

    def card_rect(self, row: int, take: int) -> QRect:
        return QRect(MARGIN + take * CARD.width(), MARGIN + row * ROW + HEADER,
                     CARD.width() - 8, CARD.height())

    def _thumb_ready(self, thumb: GalleryThumb) -> None:
        if thumb.video in self.videos.values():
            self.update()

    def paintEvent(self, event: QPaintEvent) -> None:
        painter = QPainter(self)
        painter.setRenderHint(QPainter.RenderHint.Antialiasing)
        t = theme.tokens()
        painter.fillRect(event.rect(), QColor(t.window))
        font = self.font()
        metrics = QFontMetrics(font)
        bold = QFont(font)
        bold.setWeight(QFont.Weight.DemiBold)
        shown = self.review.visible
        if not shown:
            painter.setPen(QColor(t.muted))
            painter.drawText(self.rect().adjusted(MARGIN, MARGIN, -MARGIN, -MARGIN),
                             Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignTop,
                             NO_TAKES if not self.review.groups else ALL_DECIDED)
            return
        first = max(0, (event.rect().top() - MARGIN) // ROW)
        last = min(len(shown) - 1, (event.rect().bottom() - MARGIN) // ROW)
        for r in range(first, last + 1):
            group = shown[r]
            top = MARGIN + r * ROW
            painter.setFont(bold)
            painter.setPen(QColor(t.text))
            head = row_title(group)
            painter.drawText(QRect(MARGIN, top, self.width() - 2 * MARGIN, HEADER - 6),
                             Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignVCenter,
                             metrics.elidedText(head, Qt.TextElideMode.ElideRight,
                                                self.width() - 2 * MARGIN))
            painter.setFont(font)
            for i, take in enumerate(group.takes):
                current = r == self.review.row and i == self.review.take
                self._card(painter, self.card_rect(r, i), take, current, font)

    def _card(self, painter: QPainter, rect: QRect, take: Job, current: bool,
              font: QFont) -> None:
        t = theme.tokens()
        tint = getattr(t, DECISION_TINTS[take.review.decision])
        edge = QColor(t.accent) if current else (
            QColor(tint) if take.review.decision is not Decision.NONE else QColor(t.border))
        painter.setPen(QPen(edge, 3 if current else 1))
        painter.setBrush(QColor(t.surface))
        painter.drawRoundedRect(rect.adjusted(1, 1, -1, -1), 8, 8)
        picture = QRect(rect.left() + (rect.width() - PICTURE.width()) // 2, rect.top() + 6,
                        PICTURE.width(), PICTURE.height())
        painter.setPen(Qt.PenStyle.NoPen)
        painter.setBrush(QColor(t.surface_alt))
        painter.drawRoundedRect(picture, 4, 4)
        video = self.videos.get(take.id)
        pixmap = None if video is None else self.thumbs.pixmap(video)
        if video is not None and pixmap is None and not self.thumbs.failed(video):
            self.thumbs.request(video)
        if pixmap is not None and not pixmap.isNull():
            size = pixmap.deviceIndependentSize().toSize().scaled(
                picture.size(), Qt.AspectRatioMode.KeepAspectRatio)
            target = QRect(0, 0, size.width(), size.height())
            target.moveCenter(picture.center())
            painter.fillRect(picture, QColor("#000000"))
            painter.drawPixmap(target, pixmap)
        else:
            painter.setPen(QColor(t.muted))
            words = job_state_words(str(take.state), take.sub_status, take.error_label,
                                    take.provider_job_id).name
            painter.drawText(picture, Qt.AlignmentFlag.AlignCenter,
                             "no picture" if take.state == JobState.COMPLETED else words)
        metrics = QFontMetrics(font)
        line = QRect(rect.left() + 8, picture.bottom() + 6, rect.width() - 16,
                     metrics.height() + 2)
        painter.setPen(QColor(tint) if take.review.decision is not Decision.NONE
                       else QColor(t.muted))
        painter.drawText(line, Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignVCenter,
                         metrics.elidedText(f"#{take.id} · {decision_words(take.review)}",
                                            Qt.TextElideMode.ElideRight, line.width()))
        by = decided_words(take.review)
        if by:
            painter.setPen(QColor(t.muted))
            painter.drawText(line.translated(0, metrics.height() + 2),
                             Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignVCenter,
                             metrics.elidedText(by, Qt.TextElideMode.ElideRight,
                                                line.width()))


def row_title(group: TakeGroup) -> str:
    """"Row 3 · shot2 · to re-roll · 3 takes"."""
    first = group.first
    row = f"Row {first.row_number}" if first.row_number is not None else "Row"
    count = len(group.takes)
    return f"{row} · {first.name} · {group.state_words} · {count} take{'s' * (count != 1)}"


class ReviewView(QWidget):
    """The review page of one batch.

    Signals:
        decisionAsked(object): an :class:`~reelqueue.application.review_pass.Ask` to write.
        rerollAsked(int): re-roll this batch (the controller prices it and asks first).
        openAsked(object): play this file (Path) in the system's player.

    Attributes:
        review: the pass. canvas: the painted rows (in :attr:`scroller`).
        progress: "12 of 15 reviewed".
        only_unreviewed: the filter's check box. reroll_button, status: the re-roll
            button, and the line that says what a key did (or why it did nothing).
        batch_id: the batch shown (None: none yet).
    """

    decisionAsked = Signal(object)
    rerollAsked = Signal(int)
    openAsked = Signal(object)

    def __init__(self, thumbs: GalleryThumbs, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.review = ReviewPass()
        self.batch_id: int | None = None
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(6)
        bar = QHBoxLayout()
        self.progress = QLabel(progress_words(0, 0))
        self.progress.setProperty("role", "muted")
        bar.addWidget(self.progress)
        self.only_unreviewed = QCheckBox("Show only unreviewed")
        self.only_unreviewed.toggled.connect(self._filter)
        bar.addWidget(self.only_unreviewed)
        bar.addStretch(1)
        self.reroll_button = QPushButton("Re-roll rejected rows…")
        self.reroll_button.setToolTip(
            "A new take (new seed) of each row with no pick, a reject and nothing left to "
            "review; its price is shown first and is the re-roll's spend cap.")
        self.reroll_button.clicked.connect(self._reroll)
        bar.addWidget(self.reroll_button)
        layout.addLayout(bar)
        self.keys = QLabel("  ".join(f"{key}: {what.split(' (')[0]}" for key, what in KEYS[:5])
                           + "  Ctrl+Z: undo")
        self.keys.setProperty("role", "muted")
        self.keys.setWordWrap(True)
        layout.addWidget(self.keys)
        # Space: the current take and its neighbour side by side, from one clock.
        self.compare = SideBySide()
        self.compare.hide()
        layout.addWidget(self.compare)
        self.canvas = ReviewCanvas(self.review, thumbs)
        self.scroller = QScrollArea()
        self.scroller.setWidget(self.canvas)
        self.scroller.setWidgetResizable(False)
        self.scroller.setFocusProxy(self.canvas)
        layout.addWidget(self.scroller, 1)
        self.status = QLabel("")
        self.status.setProperty("role", "muted")
        layout.addWidget(self.status)
        self.setFocusProxy(self.canvas)
        self.canvas.installEventFilter(self)
        self._compared: list[int] = []

    # -- data ------------------------------------------------------------------------------
    def set_takes(self, batch_id: int, groups: list[TakeGroup], videos: dict[int, str],
                  progress: str) -> None:
        """The batch's rows as read from the journal."""
        if batch_id != self.batch_id:
            self.review = ReviewPass()
            self.canvas.review = self.review
            self.review.only_unreviewed = self.only_unreviewed.isChecked()
            self.batch_id = batch_id
        self.review.set_groups(groups)
        self.canvas.videos = dict(videos)
        self.progress.setText(progress)
        self._changed()

    def written(self, done: ReviewWritten, *, undo: bool) -> None:
        self.review.written(done, undo=undo)
        moved = "".join(f" (the pick moved from #{m})" for m in done.moved_from)
        self.status.setText(("Undone: " if undo else "")
                            + f"#{done.job_id} {decision_words(done.review)}{moved}.")
        self.progress.setText(progress_words(self.review.reviewed, self.review.total))
        self._changed()

    def refused(self, words: str) -> None:
        self.status.setText(words)

    def _changed(self) -> None:
        self.canvas.relayout()
        self._follow_compare()
        group = self.review.current_group
        if group is not None:
            rect = self.canvas.card_rect(self.review.row, self.review.take)
            self.scroller.ensureVisible(rect.center().x(), rect.center().y(),
                                      CARD.width() // 2 + MARGIN, ROW // 2 + MARGIN)

    def _filter(self, only: bool) -> None:
        self.review.set_only_unreviewed(only)
        self._changed()

    def _reroll(self) -> None:
        if self.batch_id is not None:
            emit(self.rerollAsked, self.batch_id)

    # -- keys ------------------------------------------------------------------------------
    def eventFilter(self, watched: object, event: object) -> bool:
        if watched is self.canvas and isinstance(event, QKeyEvent) and (
                event.type() == QKeyEvent.Type.KeyPress):
            return self.key(event)
        return super().eventFilter(watched, event)  # type: ignore[arg-type]

    def key(self, event: QKeyEvent) -> bool:
        """One key of the pass; True when it was one of :data:`KEYS`."""
        key, mods = event.key(), event.modifiers()
        shift = bool(mods & Qt.KeyboardModifier.ShiftModifier)
        ctrl = bool(mods & Qt.KeyboardModifier.ControlModifier)
        review = self.review
        if ctrl and key == Qt.Key.Key_Z:
            self._ask(review.undo(), "Nothing to undo.")
        elif ctrl:
            return False
        elif key == Qt.Key.Key_P:
            self._ask(review.ask(Decision.PICK))
            if shift:
                review.move_row(1)
        elif key == Qt.Key.Key_X:
            self._ask(review.ask(Decision.REJECT))
        elif key == Qt.Key.Key_U:
            self._ask(review.ask(Decision.NONE))
        elif Qt.Key.Key_0 <= key <= Qt.Key.Key_5:
            rating = int(key) - int(Qt.Key.Key_0)
            self._ask(review.ask(None, CLEAR_RATING if rating == 0 else rating))
        elif key == Qt.Key.Key_Right:
            review.move_take(1)
        elif key == Qt.Key.Key_Left:
            review.move_take(-1)
        elif key == Qt.Key.Key_Down:
            review.move_row(1)
        elif key == Qt.Key.Key_Up:
            review.move_row(-1)
        elif key == Qt.Key.Key_Space:
            if self.compare.isVisible():
                self.compare.stop()
                self.compare.hide()
            else:
                self.compare.show()
                self._follow_compare(force=True)
            return True
        elif key == Qt.Key.Key_Escape and self.compare.isVisible():
            self.compare.stop()
            self.compare.hide()
            return True
        elif key in (Qt.Key.Key_Return, Qt.Key.Key_Enter):
            take = review.current
            video = None if take is None else self.canvas.videos.get(take.id)
            if video is None:
                self.status.setText(NO_VIDEO_HERE)
            else:
                emit(self.openAsked, Path(video))
        else:
            return False
        self._changed()
        return True

    def compared(self) -> list[Job]:
        """The takes the side-by-side shows: the current one and the next of its row (the
        previous one for the row's last)."""
        group, take = self.review.current_group, self.review.current
        if group is None or take is None:
            return []
        takes = list(group.takes)
        at = takes.index(take)
        other = takes[at + 1] if at + 1 < len(takes) else (takes[at - 1] if at else None)
        return [take] if other is None else [take, other]

    def _follow_compare(self, force: bool = False) -> None:
        if not self.compare.isVisible():
            return
        takes = self.compared()
        ids = [t.id for t in takes]
        if not force and ids == self._compared:
            return
        self._compared = ids
        videos = [None if (v := self.canvas.videos.get(t.id)) is None else Path(v)
                  for t in takes]
        self.compare.play(videos + [None] * (2 - len(videos)),
                          [f"#{t.id} · {decision_words(t.review)}" for t in takes])

    def stop(self) -> None:
        """The window closes: the players' threads end."""
        self.compare.stop()

    def _ask(self, ask: Ask | None, nothing: str = "No take here.") -> None:
        if ask is None:
            self.status.setText(nothing)
            return
        take = self.review.current
        refused = (JobState.FAILED, JobState.CANCELLED)
        if take is not None and take.state in refused and not ask.undo:
            self.status.setText(f"#{take.id} {job_state_words(str(take.state)).name}: "
                                f"{NOTHING_TO_DECIDE}")
            return
        emit(self.decisionAsked, ask)
