"""Per-account dashboards: one card per account, in a horizontally scrolling strip.

A card shows the account's name and provider, a state chip, running vs limit as a gauge,
its queued / completed / failed counts, spend and estimate, completions over the last
hour, and its current renders. Its limit box and pause button send commands that apply
live (a lower limit only stops new claims; pausing never kills running renders).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from PySide6.QtCore import QRectF, QSize, Qt, QTimer, Signal
from PySide6.QtGui import QFont, QFontMetrics, QPainter, QPainterPath, QPen
from PySide6.QtWidgets import (
    QFrame,
    QGridLayout,
    QHBoxLayout,
    QInputDialog,
    QLabel,
    QMessageBox,
    QPushButton,
    QScrollArea,
    QSizePolicy,
    QSpinBox,
    QVBoxLayout,
    QWidget,
)

from reelqueue.application.account_figures import CardFigures
from reelqueue.application.status import to_go_words
from reelqueue.application.words import (
    Condition,
    StateWords,
    account_condition_words,
    condition_words,
    job_state_words,
)
from reelqueue.domain.states import JobState
from reelqueue.ui import format as fmt
from reelqueue.ui import theme
from reelqueue.ui.qtcompat import emit

CARD_WIDTH = 318
COMPACT_WIDTH = 252
MAX_RENDERS_SHOWN = 3
MIN_STRIP_HEIGHT = 140  # a short window squeezes the cards down to this, then they scroll
NBSP = "\u00a0"  # keeps "est. $110.91 to go" on one line when the spend line wraps
KEY_NOT_HERE = condition_words(Condition.KEY_NOT_HERE).name
CONFIRM_HERE = condition_words(Condition.CONFIRM).name
CHIP_TINTS: dict[str, str] = {
    Condition.READY: "success", Condition.RENDERING: "accent", Condition.DISABLED: "neutral",
    Condition.KEY_NOT_HERE: "neutral", Condition.CONFIRM: "warning",
    Condition.ADDRESS_UNREADABLE: "warning", Condition.RATE_LIMITED: "warning",
    Condition.DAILY_CAP: "warning", Condition.KEY_REJECTED: "danger",
    Condition.OUT_OF_CREDITS: "danger", Condition.KEY_MISSING: "danger",
}
"""A chip's tint by its condition's code (layout: the names are application.words')."""
CONFIRM_DETAIL = ("Changed since this machine kept its key: {words}. The key is sent "
                  "nowhere until you confirm the new address in Manage….")


NO_FIGURES = CardFigures()
"""A card with no provider's figures (not read yet, or none published)."""


@dataclass(frozen=True)
class RenderLine:
    name: str
    progress: float | None
    text: str


@dataclass(frozen=True)
class AccountCardData:
    """What one card shows. Attributes name their fields; ``per_minute`` holds 60 counts
    of completions, oldest minute first."""

    name: str
    provider_title: str
    status: str
    enabled: bool
    capacity: int
    live: int
    cooldown_until: float | None = None
    detail: str | None = None
    queued: int = 0  # waiting jobs only this account can take (they hold its render)
    completed: int = 0
    failed: int = 0
    spend: float = 0.0
    estimate: float | None = None  # what its pinned waiting jobs will cost (the journal's)
    estimate_unpriced: int = 0  # and how many of them have no price
    today_words: str | None = None  # the journal's words for today ("$0.93 of $0.50 (...)")
    practice: bool = False  # the mock: its dollars are practice prices, no real money
    spent_today: float = 0.0  # spend caps (the engine's AccountEvent): today's spend,
    daily_cap: float | None = None  # the daily cap (None: none) and the jobs it holds
    cap_waiting: int = 0
    per_minute: tuple[int, ...] = (0,) * 60
    renders: tuple[RenderLine, ...] = ()  # the first MAX_RENDERS_SHOWN of its renders
    more_renders: int = 0  # and how many more (not worded: 1,000 in flight, 3 shown)
    team: bool = False  # a team store: ``live`` counts the renders of every machine
    key_here: bool = True  # False: a team account whose key is not on this machine
    confirm: str = ""  # a team account whose row changed: waits for "accounts confirm" here
    took_over: str = ""  # routed jobs it took over from other providers (the journal's words)
    unreadable: bool = False  # with ``confirm``: the address its row names cannot be read
    # its provider's view, limit in force and balance gate (issue 32), in the words of
    # application.account_figures; empty until read, or when the provider publishes none
    figures: CardFigures = NO_FIGURES

    def words(self) -> StateWords:
        """The account's condition in the one set of words (application.words)."""
        return account_condition_words(
            self.status, enabled=self.enabled, cooldown_until=self.cooldown_until,
            live=self.live, key_here=self.key_here, confirm=bool(self.confirm),
            address_unreadable=self.unreadable and bool(self.confirm),
            cap_reached=self.daily_cap is not None and (
                self.cap_waiting > 0 or self.spent_today >= self.daily_cap))

    def chip(self) -> tuple[str, str]:
        """The state chip's text (its condition's name) and tint."""
        words = self.words()
        return words.name, CHIP_TINTS.get(words.code, "neutral")


class Chip(QLabel):
    """A rounded label tinted with a theme colour."""

    def set_chip(self, text: str, tint: str) -> None:
        base = theme.color(tint)
        fill = theme.color(tint, 46 if theme.tokens().dark else 30)
        # The font is set on the widget, not in the style sheet, so the layout measures
        # the text in the font it is drawn with (a longer word is never cut off).
        font = self.font()
        font.setPointSizeF(8.5)
        font.setWeight(QFont.Weight.DemiBold)
        self.setFont(font)
        self.setStyleSheet(
            f"QLabel {{ color: {base.name()}; background: rgba({fill.red()},{fill.green()},"
            f"{fill.blue()},{fill.alpha()}); border-radius: 9px; padding: 2px 9px; }}")
        self.setText(text)


class Gauge(QWidget):
    """Running vs limit as a ring."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.live = 0
        self.capacity = 1
        self.setFixedSize(78, 78)

    def set_values(self, live: int, capacity: int) -> None:
        if (live, capacity) != (self.live, self.capacity):
            self.live, self.capacity = live, max(1, capacity)
            self.update()

    def paintEvent(self, event: object) -> None:
        painter = QPainter(self)
        painter.setRenderHint(QPainter.RenderHint.Antialiasing)
        rect = QRectF(6, 6, self.width() - 12, self.height() - 12)
        pen = QPen(theme.color("border"), 7)
        pen.setCapStyle(Qt.PenCapStyle.RoundCap)
        painter.setPen(pen)
        painter.drawArc(rect, 225 * 16, -270 * 16)
        fraction = min(1.0, self.live / self.capacity)
        if fraction > 0:
            over = self.live > self.capacity
            pen.setColor(theme.color("warning" if over else "accent"))
            painter.setPen(pen)
            painter.drawArc(rect, 225 * 16, int(-270 * 16 * fraction))
        painter.setPen(self.palette().color(self.foregroundRole()))
        font = QFont(self.font())
        font.setPointSizeF(font.pointSizeF() * 1.35)
        font.setWeight(QFont.Weight.DemiBold)
        text = f"{self.live}/{self.capacity}"
        room = self.width() - 22  # inside the ring: "999/999" must not spill over it
        width = QFontMetrics(font).horizontalAdvance(text)
        if width > room:
            font.setPointSizeF(font.pointSizeF() * room / width)
        painter.setFont(font)
        painter.drawText(QRectF(0, 0, self.width(), self.height() - 8),
                         int(Qt.AlignmentFlag.AlignCenter), text)
        small = QFont(self.font())
        small.setPointSizeF(small.pointSizeF() * 0.78)
        painter.setFont(small)
        painter.setPen(theme.color("muted"))
        painter.drawText(QRectF(0, self.height() / 2 + 6, self.width(), 16),
                         int(Qt.AlignmentFlag.AlignHCenter), "running")
        painter.end()


class Sparkline(QWidget):
    """Completions per minute over the last hour, as small bars."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.values: tuple[int, ...] = (0,) * 60
        self.setMinimumHeight(34)
        self.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Fixed)

    def set_values(self, values: tuple[int, ...]) -> None:
        if values != self.values:
            self.values = values
            self.update()

    def sizeHint(self) -> QSize:
        return QSize(240, 34)

    def paintEvent(self, event: object) -> None:
        painter = QPainter(self)
        painter.setRenderHint(QPainter.RenderHint.Antialiasing)
        width, height = self.width(), self.height()
        painter.fillRect(QRectF(0, height - 1, width, 1), theme.color("border"))
        peak = max(self.values) if self.values else 0
        if peak > 0:
            step = width / len(self.values)
            bar = max(1.5, step - 1.5)
            for i, value in enumerate(self.values):
                if not value:
                    continue
                h = max(2.0, (height - 4) * value / peak)
                path = QPainterPath()
                path.addRoundedRect(QRectF(i * step, height - 1 - h, bar, h), 1, 1)
                painter.fillPath(path, theme.color("accent", 200))
        painter.end()


MIN_BAR = 40
"""The narrowest progress bar of a card's render line (pixels)."""


class RenderBars(QWidget):
    """The account's current renders: name, a thin bar and a short status each."""

    ROW = 20

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.lines: tuple[RenderLine, ...] = ()
        self.more = 0
        self.setFixedHeight(self.ROW * MAX_RENDERS_SHOWN)

    def set_lines(self, lines: tuple[RenderLine, ...], more: int = 0) -> None:
        """``lines`` shown (at most :data:`MAX_RENDERS_SHOWN`), ``more`` not shown."""
        shown = lines[:MAX_RENDERS_SHOWN]
        more += len(lines) - len(shown)
        if (shown, more) != (self.lines, self.more):
            self.lines, self.more = shown, more
            self.update()

    def paintEvent(self, event: object) -> None:
        painter = QPainter(self)
        painter.setRenderHint(QPainter.RenderHint.Antialiasing)
        metrics = self.fontMetrics()
        text_color = self.palette().color(self.foregroundRole())
        width = self.width()
        if not self.lines:
            painter.setPen(theme.color("muted"))
            painter.drawText(QRectF(0, 0, width, self.ROW),
                             int(Qt.AlignmentFlag.AlignVCenter), "No renders right now")
        name_w, bar_x, bar_w, text_w = self.columns(width)
        for i, line in enumerate(self.lines):
            y = i * self.ROW
            painter.setPen(text_color)
            name = line.name if i < MAX_RENDERS_SHOWN - 1 or not self.more else \
                f"{line.name} (+{self.more})"
            painter.drawText(QRectF(0, y, name_w, self.ROW), int(Qt.AlignmentFlag.AlignVCenter),
                             metrics.elidedText(name, Qt.TextElideMode.ElideRight, name_w))
            track = QRectF(bar_x, y + self.ROW / 2 - 2, bar_w, 4)
            path = QPainterPath()
            path.addRoundedRect(track, 2, 2)
            painter.fillPath(path, theme.color("border"))
            fraction = line.progress
            if fraction is not None:
                done = QPainterPath()
                done.addRoundedRect(QRectF(track.left(), track.top(),
                                           max(4.0, bar_w * min(1.0, fraction)), 4), 2, 2)
                painter.fillPath(done, theme.color("accent"))
            painter.setPen(theme.color("muted"))
            painter.drawText(QRectF(width - text_w, y, text_w, self.ROW),
                             int(Qt.AlignmentFlag.AlignVCenter | Qt.AlignmentFlag.AlignRight),
                             metrics.elidedText(line.text, Qt.TextElideMode.ElideRight,
                                                text_w))
        painter.end()

    def columns(self, width: int) -> tuple[int, int, int, int]:
        """Name width, bar start, bar width and status width at ``width``: the status
        gets what its longest words need (N8: a fixed 68 px cut "about 5 s left" to
        "about 5 s l"), up to half the row; the bar gives way first, then the name."""
        metrics = self.fontMetrics()
        need = max((metrics.horizontalAdvance(line.text) + 2 for line in self.lines),
                   default=0)
        text_w = min(max(68, need), width // 2)
        name_w = min(int(width * 0.42), max(0, width - text_w - 8 - 6 - MIN_BAR))
        bar_x = name_w + 8
        bar_w = max(0, width - bar_x - text_w - 6)
        return name_w, bar_x, bar_w, text_w


def _metric(value: str, caption: str) -> tuple[QLabel, QLabel]:
    number = QLabel(value)
    number.setProperty("role", "metric")
    label = QLabel(caption)
    label.setProperty("role", "muted")
    # never narrower than its word ("completed", the state's one name, is the longest):
    # the grid gives the room to the columns that need it
    label.setSizePolicy(QSizePolicy.Policy.Minimum, QSizePolicy.Policy.Preferred)
    return number, label


class AccountCard(QFrame):
    """One account's dashboard.

    Signals:
        capacityChanged(str, int): the user set a new limit (debounced).
        enabledChanged(str, bool): the user paused (False) or resumed (True) the account.
        markReady(str): the user fixed the key or topped up credits.
        showJobs(str): the user wants the table filtered to this account.
        manageRequested(str): the user wants the account's dialog (key, limits, remove).
        dailyCapChanged(str, object): the user set the account's daily spend cap in USD
            (a float), or removed it (None).
        updateRequested(str): the user wants the provider's figures read again now.
    """

    capacityChanged = Signal(str, int)
    dailyCapChanged = Signal(str, object)
    enabledChanged = Signal(str, bool)
    markReady = Signal(str)
    showJobs = Signal(str)
    manageRequested = Signal(str)
    updateRequested = Signal(str)

    def __init__(self, data: AccountCardData, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("card")
        self.setFixedWidth(CARD_WIDTH)
        self.name = data.name
        self.data: AccountCardData | None = None
        self.compact = False
        layout = QVBoxLayout(self)
        layout.setContentsMargins(16, 14, 16, 14)
        layout.setSpacing(10)
        self._layout = layout

        head = QHBoxLayout()
        names = QVBoxLayout()
        names.setSpacing(0)
        self.title = QPushButton(data.name)
        self.title.setProperty("flat", True)
        self.title.setStyleSheet("QPushButton { font-size: 11pt; font-weight: 600; "
                                 "padding: 0; text-align: left; }")
        self.title.setCursor(Qt.CursorShape.PointingHandCursor)
        self.title.setToolTip(f"{data.name}: show this account's jobs")
        self.title.clicked.connect(lambda: emit(self.showJobs, self.name))
        self.provider = QLabel(data.provider_title)
        self.provider.setProperty("role", "muted")
        names.addWidget(self.title)
        names.addWidget(self.provider)
        head.addLayout(names, 1)
        self.chip = Chip()
        # The chip and, under it, "Manage…" (issue 23): the key, limits, address, removal.
        right = QVBoxLayout()
        right.setSpacing(2)
        right.addWidget(self.chip, 0, Qt.AlignmentFlag.AlignRight)
        self.manage_button = QPushButton("Manage…")
        self.manage_button.setProperty("flat", True)
        self.manage_button.setCursor(Qt.CursorShape.PointingHandCursor)
        self.manage_button.setToolTip(f"{data.name}: change its key, limit, daily cap or "
                                      "address, or remove it")
        self.manage_button.clicked.connect(lambda: emit(self.manageRequested, self.name))
        right.addWidget(self.manage_button, 0, Qt.AlignmentFlag.AlignRight)
        head.addLayout(right)
        layout.addLayout(head)

        # Everything below the head folds away in the compact card (a one-line summary
        # stands in for it), so many accounts fit a small screen.
        self.details = QWidget()
        details = QVBoxLayout(self.details)
        details.setContentsMargins(0, 0, 0, 0)
        details.setSpacing(10)
        self.summary = QLabel()
        self.summary.setProperty("role", "muted")
        self.summary.setWordWrap(True)
        self.summary.hide()
        layout.addWidget(self.summary)
        middle = QHBoxLayout()
        middle.setSpacing(14)
        self.gauge = Gauge()
        middle.addWidget(self.gauge)
        grid = QGridLayout()
        grid.setHorizontalSpacing(8)  # room for "completed" beside five-digit counts
        grid.setVerticalSpacing(0)
        self.queued, queued_label = _metric("0", "waiting")
        queued_label.setToolTip("Waiting jobs only this account can take (they hold its "
                                "render or submission); the shared queue is counted once, "
                                "above the cards")
        self.completed, done_label = _metric("0", job_state_words(JobState.COMPLETED).name)
        self.failed, failed_label = _metric("0", job_state_words(JobState.FAILED).name)
        for column, (number, label) in enumerate(((self.queued, queued_label),
                                                  (self.completed, done_label),
                                                  (self.failed, failed_label))):
            grid.addWidget(number, 0, column)
            grid.addWidget(label, 1, column)
        self.spend = QLabel()
        self.spend.setProperty("role", "muted")
        self.spend.setWordWrap(True)  # "Spent $1,234.50 · est. $310.00 to go" may not fit
        grid.addWidget(self.spend, 2, 0, 1, 3)
        middle.addLayout(grid, 1)
        details.addLayout(middle)
        self.team_label = QLabel()  # a team store: whose renders the figures count
        self.team_label.setProperty("role", "muted")
        self.team_label.setWordWrap(True)
        self.team_label.hide()
        details.addWidget(self.team_label)
        self.over_label = QLabel()  # a limit lowered below the renders running
        self.over_label.setProperty("role", "muted")
        self.over_label.setWordWrap(True)
        self.over_label.hide()
        details.addWidget(self.over_label)

        spark_head = QLabel("COMPLETED · LAST HOUR")
        spark_head.setProperty("role", "section")
        details.addWidget(spark_head)
        self.sparkline = Sparkline()
        details.addWidget(self.sparkline)
        renders_head = QLabel("CURRENT RENDERS")
        self.renders_head = renders_head
        renders_head.setProperty("role", "section")
        details.addWidget(renders_head)
        self.renders = RenderBars()
        details.addWidget(self.renders)
        layout.addWidget(self.details)
        self._build_figures(layout)

        controls = QHBoxLayout()
        self.controls = controls
        self.limit_label = QLabel("Limit")
        self.limit_label.setProperty("role", "muted")
        controls.addWidget(self.limit_label)
        self.limit = QSpinBox()
        self.limit.setRange(1, 999)
        self.limit.setToolTip("Renders at once. Applies live: lowering it never stops "
                              "running renders.")
        self.limit.valueChanged.connect(self._limit_edited)
        controls.addWidget(self.limit)
        self.cap_button = QPushButton("Cap…")  # "Daily cap…" does not fit beside the limit
        self.cap_button.setToolTip("Daily spend cap: stop starting renders on this account "
                                   "once it has spent this much today (USD, the computer's "
                                   "calendar day)")
        self.cap_button.clicked.connect(self._ask_daily_cap)
        controls.addWidget(self.cap_button)
        controls.addStretch(1)
        # "Mark ready" gets a row of its own (shown only when needed): beside the limit box
        # and the pause button it had no room left and was cut to "ark reac".
        self.ready_button = QPushButton("Mark ready")
        self.ready_button.setToolTip("The key is fixed or credits topped up: use it again")
        self.ready_button.clicked.connect(lambda: emit(self.markReady, self.name))
        self.ready_row = QHBoxLayout()
        self.ready_row.addWidget(self.ready_button)
        self.ready_row.addStretch(1)
        layout.addLayout(self.ready_row)
        self.pause_button = QPushButton("Pause")
        self.pause_button.clicked.connect(self._toggle_enabled)
        controls.addWidget(self.pause_button)
        layout.addLayout(controls)

        self._limit_timer = QTimer(self)
        self._limit_timer.setSingleShot(True)
        self._limit_timer.setInterval(600)
        self._limit_timer.timeout.connect(
            lambda: emit(self.capacityChanged, self.name, self.limit.value()))
        self.set_data(data)

    def _build_figures(self, layout: QVBoxLayout) -> None:
        """The provider's figures (issue 32): the balance "as of HH:MM" with "Update"
        beside it, the limit in force and "credits low: ...". Shown folded too: they say
        why an account starts nothing."""
        # A layout, not a widget of its own: a nested widget shown later settled one
        # event loop pass after the card (its labels were drawn squeezed meanwhile).
        box = QVBoxLayout()
        box.setSpacing(2)
        row = QHBoxLayout()
        row.setSpacing(6)
        self.balance_label = QLabel()
        self.balance_label.setProperty("role", "muted")
        self.balance_label.setWordWrap(True)
        row.addWidget(self.balance_label, 1)
        self.update_button = QPushButton("Update")
        self.update_button.setProperty("flat", True)
        self.update_button.setCursor(Qt.CursorShape.PointingHandCursor)
        self.update_button.setToolTip("Read the balance, limits and usage from the provider "
                                      "now (from this machine, which holds the key)")
        self.update_button.clicked.connect(lambda: emit(self.updateRequested, self.name))
        row.addWidget(self.update_button, 0, Qt.AlignmentFlag.AlignTop)
        box.addLayout(row)
        self.view_limit_label = QLabel()  # "5 set · provider allows 2 for gen4.5"
        self.view_limit_label.setProperty("role", "muted")
        self.view_limit_label.setWordWrap(True)
        box.addWidget(self.view_limit_label)
        self.credits_label = QLabel()  # "credits low: 40 left, this render needs 60"
        self.credits_label.setWordWrap(True)
        box.addWidget(self.credits_label)
        for widget in (self.balance_label, self.update_button, self.view_limit_label,
                       self.credits_label):
            widget.hide()
        layout.addLayout(box)

    def set_updating(self, updating: bool) -> None:
        """"Update" pressed: the button says so and waits until the read ends."""
        self.update_button.setEnabled(not updating)
        self.update_button.setText("Updating…" if updating else "Update")

    def _show_figures(self, figures: CardFigures) -> None:
        self.balance_label.setVisible(bool(figures.balance))
        self.balance_label.setText(_sentence(figures.balance))
        self.balance_label.setToolTip("\n".join(_sentence(line) for line in figures.details))
        tint = theme.color("warning").name()
        self.balance_label.setStyleSheet(f"QLabel {{ color: {tint}; }}" if figures.stale
                                         else "")
        self.update_button.setVisible(bool(figures.balance) and figures.can_update)
        self.view_limit_label.setText(_sentence(figures.limit))
        self.view_limit_label.setVisible(bool(figures.limit))
        self.credits_label.setText(_sentence(figures.credits))
        self.credits_label.setStyleSheet(
            f"QLabel {{ color: {theme.color('danger').name()}; font-weight: 600; }}")
        self.credits_label.setVisible(bool(figures.credits))

    def _limit_edited(self, _value: int) -> None:
        self._limit_timer.start()

    def _ask_daily_cap(self) -> None:
        current = self.data.daily_cap if self.data else None
        text, ok = QInputDialog.getText(
            self, "Daily spend cap",
            f"Stop starting renders on {self.name} once it has spent this much today\n"
            "(USD; the day is this computer's calendar day). Empty: no cap.",
            text="" if current is None else f"{current:g}")
        if not ok:
            return
        problem = self.apply_daily_cap_text(text)
        if problem:
            QMessageBox.warning(self, "Daily spend cap", problem)

    def apply_daily_cap_text(self, text: str) -> str | None:
        """Emit ``dailyCapChanged`` for what the user typed ('20', '$12.50', empty or
        'none': no cap); return what is wrong with it instead, changing nothing."""
        cleaned = text.strip().lstrip("$").strip().replace(",", "")
        if cleaned.casefold() in ("", "none", "off", "no"):
            emit(self.dailyCapChanged, self.name, None)
            return None
        try:
            value = float(cleaned)
        except ValueError:
            return f"“{text}” is not an amount: type one like 20 or 12.50, or leave it empty."
        if not 0 <= value < float("inf"):
            return "A daily cap is 0 or more (0 starts nothing); leave it empty for no cap."
        emit(self.dailyCapChanged, self.name, value)
        return None

    def _toggle_enabled(self) -> None:
        if self.data is not None:
            emit(self.enabledChanged, self.name, not self.data.enabled)

    def set_compact(self, compact: bool) -> None:
        """Fold the card to its name, state, a two-line summary and its buttons."""
        if compact == self.compact:
            return
        self.compact = compact
        self.setFixedWidth(COMPACT_WIDTH if compact else CARD_WIDTH)
        self._layout.setContentsMargins(*((12, 10, 12, 10) if compact else (16, 14, 16, 14)))
        self._layout.setSpacing(6 if compact else 10)
        self.details.setVisible(not compact)
        self.provider.setVisible(not compact)
        self.summary.setVisible(compact)
        self.limit_label.setVisible(not compact)
        self.limit.setVisible(not compact)
        self.cap_button.setVisible(not compact)
        # Folded, "Mark ready" shares the pause button's row (the limit box is away).
        source, target = ((self.ready_row, self.controls) if compact
                          else (self.controls, self.ready_row))
        source.removeWidget(self.ready_button)
        target.insertWidget(0, self.ready_button)
        self._set_title()

    def _set_title(self) -> None:
        """The name, elided to the room the chip leaves (the full name is in the tooltip)."""
        if self.data is None:
            return
        margins = self._layout.contentsMargins()
        room = (self.maximumWidth() - margins.left() - margins.right()
                - self.chip.sizeHint().width() - 12)
        font = self.title.font()
        font.setPointSizeF(11)
        font.setWeight(QFont.Weight.DemiBold)
        metrics = QFontMetrics(font)
        self.title.setText(metrics.elidedText(self.data.name, Qt.TextElideMode.ElideRight,
                                              max(40, room)))

    def set_data(self, data: AccountCardData) -> None:
        if data == self.data:
            return
        old, self.data = self.data, data
        self.provider.setText(data.provider_title)
        if (old is None or old.chip() != data.chip() or old.detail != data.detail
                or old.confirm != data.confirm):
            self.chip.set_chip(*data.chip())
            words = data.words()
            self.chip.setToolTip(
                CONFIRM_DETAIL.format(words=data.confirm)
                if words.code in (Condition.CONFIRM, Condition.ADDRESS_UNREADABLE)
                else words.hint if words.code == Condition.KEY_NOT_HERE
                else data.detail or words.hint)
            self._set_title()
        self.gauge.set_values(data.live, data.capacity)
        self.queued.setText(fmt.number(data.queued))
        self.completed.setText(fmt.number(data.completed))
        self.failed.setText(fmt.number(data.failed))
        # Only the jobs pinned to this account: the journal's figure (application.status
        # Money), in the words `reelqueue status`/`spend` and the API say; a provider's
        # shared queue is priced once, above the cards (dashboard.shared_queue_text).
        estimate = ""
        if data.estimate or data.estimate_unpriced:
            head, comma, unpriced = to_go_words(data.estimate or 0.0,
                                                data.estimate_unpriced).partition(", ")
            estimate = f" · {head.replace(' ', NBSP)}{comma}{unpriced}"
        # The mock's figures are practice prices (it charges no real money): said so, never
        # "Spent" beside a banner that says nothing was charged (issue 23).
        word = "Practice spend" if data.practice else "Spent"
        spent = f"{word} {fmt.money(data.spend)}{estimate}"
        if data.daily_cap is not None:  # "Spent today $x of $cap", the cap's own line
            today = data.today_words or (f"{fmt.money(data.spent_today)} of "
                                         f"{fmt.money(data.daily_cap)}")
            spent += f"\n{'Practice today' if data.practice else 'Spent today'} {today}"
            if data.cap_waiting:
                spent += f" · cap reached: {fmt.number(data.cap_waiting)}{NBSP}waiting"
        self.spend.setText(spent)
        # Wrapped only between the parts: "12,345 done", never "12,345 / done".
        over = over_limit_text(data.live, data.capacity)
        self.over_label.setText(over)
        self.over_label.setVisible(bool(over))
        self.gauge.setToolTip(over or (f"{data.live} of {data.capacity} running across all "
                                       "machines" if data.team else ""))
        self.team_label.setText(team_text(data))
        self.team_label.setVisible(data.team)
        self.renders_head.setText("CURRENT RENDERS · THIS MACHINE" if data.team
                                  else "CURRENT RENDERS")
        # The separator keeps its dot with the part before it (a wrapped line never starts
        # with "·"), and the money goes on its own line rather than trailing a "·".
        counts = (NBSP + "· ").join(part.replace(" ", NBSP) for part in (
            over or f"{data.live}/{data.capacity} running"
            + (" on all machines" if data.team else ""),
            f"{fmt.number(data.queued)} waiting here",
            f"{fmt.number(data.completed)} {job_state_words(JobState.COMPLETED).name}",
            f"{fmt.number(data.failed)} {job_state_words(JobState.FAILED).name}"))
        if data.took_over:  # routing (issue 24): where its extra work came from
            spent += f"\n{data.took_over[0].upper()}{data.took_over[1:]}"
        self.summary.setText(f"{counts}\n{spent}" if spent else counts)
        self.sparkline.set_values(data.per_minute)
        self.renders.set_lines(data.renders, data.more_renders)
        if old is None or old.figures != data.figures:
            self._show_figures(data.figures)
        if not self._limit_timer.isActive() and self.limit.value() != data.capacity:
            self.limit.blockSignals(True)
            self.limit.setValue(data.capacity)
            self.limit.blockSignals(False)
        self.pause_button.setText("Resume" if not data.enabled else "Pause")
        self.ready_button.setVisible(data.status in ("key_rejected", "out_of_credits",
                                                     "key_missing"))

    def stop_timers(self) -> None:
        self._limit_timer.stop()


class AccountStrip(QScrollArea):
    """The cards side by side; an empty state that offers to connect an account.

    Signals:
        addAccount(): the user wants to connect an account.
        countChanged(int): the number of cards changed (the window may fold them).

    Attributes:
        cards: the cards by account name. compact: the cards are folded (see
            :meth:`AccountCard.set_compact`).
    """

    addAccount = Signal()
    countChanged = Signal(int)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWidgetResizable(True)
        self.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAsNeeded)
        self.setVerticalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAsNeeded)
        self.setSizePolicy(QSizePolicy.Policy.Preferred, QSizePolicy.Policy.Maximum)
        self.setFrameShape(QFrame.Shape.NoFrame)
        inner = QWidget()
        self._row = QHBoxLayout(inner)
        self._row.setContentsMargins(0, 0, 0, 0)
        self._row.setSpacing(12)
        self.empty = QFrame()
        self.empty.setObjectName("card")
        self.empty.setFixedWidth(CARD_WIDTH)
        empty_layout = QVBoxLayout(self.empty)
        empty_layout.setContentsMargins(18, 18, 18, 18)
        title = QLabel("No accounts yet")
        title.setProperty("role", "title")
        hint = QLabel("Connect a provider account to start rendering. Each account has "
                      "its own limit on renders at once.")
        hint.setWordWrap(True)
        hint.setProperty("role", "muted")
        button = QPushButton("Connect an account…")
        button.setProperty("primary", True)
        button.clicked.connect(self.addAccount.emit)
        empty_layout.addWidget(title)
        empty_layout.addWidget(hint)
        empty_layout.addStretch(1)
        empty_layout.addWidget(button, 0, Qt.AlignmentFlag.AlignLeft)
        self._row.addWidget(self.empty)
        self._row.addStretch(1)
        self.setWidget(inner)
        self.cards: dict[str, AccountCard] = {}
        self.compact = False
        self._fit_height()

    def set_compact(self, compact: bool) -> None:
        """Fold (True) or unfold every card, now and for cards added later."""
        self.compact = compact
        for card in self.cards.values():
            card.set_compact(compact)
        self._fit_height()

    def set_accounts(self, items: list[AccountCardData]) -> list[AccountCard]:
        """Show these accounts in this order; return the cards created now."""
        created: list[AccountCard] = []
        before = len(self.cards)
        wanted = [item.name for item in items]
        for name in list(self.cards):
            if name not in wanted:
                card = self.cards.pop(name)
                card.stop_timers()
                card.setParent(None)
                card.deleteLater()
        for position, item in enumerate(items):
            known = self.cards.get(item.name)
            if known is None:
                known = AccountCard(item)
                known.set_compact(self.compact)
                self.cards[item.name] = known
                created.append(known)
            else:
                known.set_data(item)
            if self._row.indexOf(known) != position:
                self._row.insertWidget(position, known)
        self.empty.setVisible(not items)
        self._fit_height()
        if len(self.cards) != before:
            emit(self.countChanged, len(self.cards))
        return created

    def _fit_height(self) -> None:
        # The cards are never squeezed below the height their wrapped lines need at their
        # width: a strip shorter than that scrolls (vertically too) instead of cutting
        # text (the provider's figures at their longest took four more lines).
        inner = self.widget()
        if inner is not None:
            inner.setMinimumHeight(self._cards_height())
        self.updateGeometry()  # the cards' height may have changed: ask the layout again

    def _cards_height(self) -> int:
        widgets: list[QWidget] = list(self.cards.values()) or [self.empty]
        # The cards have a fixed width and wrapped text: ask for their height at it.
        return max(w.heightForWidth(w.maximumWidth()) if w.hasHeightForWidth()
                   else w.sizeHint().height() for w in widgets)

    def sizeHint(self) -> QSize:
        """As tall as the tallest card, plus a scroll bar when they do not all fit. Never
        taller (size policy Maximum); on a short window it gives way and scrolls instead
        of being drawn under the jobs table."""
        bar = self.horizontalScrollBar().sizeHint().height() + 4
        return QSize(CARD_WIDTH * 3, self._cards_height() + bar)

    def minimumSizeHint(self) -> QSize:
        return QSize(CARD_WIDTH, min(self.sizeHint().height(), MIN_STRIP_HEIGHT))


def _sentence(words: str) -> str:
    """The application's words start a line here: their first letter capitalised."""
    return words[:1].upper() + words[1:]


def team_text(data: AccountCardData) -> str:
    """The line a team store's card adds: whose renders the gauge counts, and a keyless
    account's words (never a key error: other machines hold its key)."""
    if not data.team:
        return ""
    text = f"{data.live} of {data.capacity} running across all machines"
    if not data.key_here:
        text += " · key not on this machine — other machines render for it"
    elif data.confirm:
        text += (" · its address changed on the team database: its key is sent nowhere "
                 "until you confirm it here (Manage…)")
    return text


def over_limit_text(live: int, capacity: int) -> str:
    """A limit lowered mid-run: "4 running, limit now 1: no new renders until below"."""
    if live <= capacity:
        return ""
    return (f"{fmt.number(live)} running, limit now {fmt.number(capacity)}: no new renders "
            "until below")


def per_minute(completions: list[float], now: float) -> tuple[int, ...]:
    """60 counts (oldest minute first) of the completion times given."""
    buckets = [0] * 60
    start = now - 3600
    for at in completions:
        if at >= start:
            buckets[min(59, math.floor((at - start) / 60))] += 1
    return tuple(buckets)
