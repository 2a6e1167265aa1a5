"""The jobs table: a flat model over :class:`JobTable`, with filters and coalesced updates.

``data()`` is O(1): a list index (through the filter's view, when one is set) and a field
read. New rows come in pages, one ``beginInsertRows`` each. Events change the rows at once
but the views hear of it once per tick (:meth:`JobTableModel.flush`, driven by a timer):
one ``dataChanged`` spanning the changed rows, or one layout change when a filter's
membership changed.

Sorting is the journal's work (``Store.job_ids_ordered``, an ORDER BY on its thread): a
click on a header asks for the ids in order (:attr:`JobTableModel.orderRequested`, run by
the controller) and :meth:`JobTableModel.set_order` shows them, the filter applied over
that order. The sort survives live updates: an event that changes a row's value in the
sorted column, or new rows, make the order stale, and the model asks again at most once
per :data:`RESORT_SECONDS`: one layout change when a row moved (selections kept on their
jobs), none when the answer moves no row (values changed within their places: the cells
that changed are repainted as any other change, the rest of the view is left alone).
"""

from __future__ import annotations

import time
from array import array
from collections.abc import Container, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from PySide6.QtCore import (
    QAbstractTableModel,
    QModelIndex,
    QObject,
    QPersistentModelIndex,
    QRect,
    QRectF,
    Qt,
    Signal,
)
from PySide6.QtGui import QColor, QFontMetrics, QPainter, QPainterPath
from PySide6.QtWidgets import QStyle, QStyledItemDelegate, QStyleOptionViewItem

from reelqueue.application.events import JobEvent
from reelqueue.application.views import JobRow
from reelqueue.application.words import OUTCOME_UNKNOWN, StateWords, job_state_words
from reelqueue.domain.states import JobState
from reelqueue.ui import format as fmt
from reelqueue.ui import theme
from reelqueue.ui.jobs_data import (
    FINAL_VALUES,
    IN_FLIGHT_VALUES,
    JobStats,
    JobTable,
)
from reelqueue.ui.qtcompat import emit

ModelIndex = QModelIndex | QPersistentModelIndex

COL_ROW, COL_NAME, COL_PROMPT, COL_ACCOUNT, COL_STATE, COL_PROGRESS, COL_ATTEMPTS, \
    COL_OUTPUT, COL_ERROR = range(9)
HEADERS = ("Row", "Name", "Prompt", "Account", "State", "Progress", "Attempts", "Output",
           "Error")

SORT_ORDERS = ("row", "name", "prompt", "account", "state", "progress", "attempts", "output",
               "error")
"""The journal's order (``store.base.JOB_ORDERS``) behind each column, in column order."""
RESORT_SECONDS = 1.0
"""A sorted table is put in order again at most this often while rows change."""
ORDER_TIMEOUT = 10.0
"""An order asked for and not answered in this time is asked for again."""
FEW_KEPT = 8
"""Up to this many kept (persistent) indexes are placed by a scan of the view after a
re-layout; more build the position map once."""

# What a column sorts on, read from a JobRow: a change of it makes the order stale.
_SORT_VALUE = (
    lambda r: r.row_number,
    lambda r: r.name,
    lambda r: r.prompt,
    lambda r: (r.account, r.provider),
    lambda r: r.state,
    lambda r: r.progress,
    lambda r: r.attempts,
    lambda r: r.output_path,
    lambda r: r.error_label,
)

JobIdRole = Qt.ItemDataRole.UserRole + 1
"""The job's id (int)."""
JobRowRole = Qt.ItemDataRole.UserRole + 2
"""The :class:`JobRow` itself, for delegates and the detail view."""
StateRole = Qt.ItemDataRole.UserRole + 3
"""The job state's value (str)."""

STATE_TINTS: dict[str, str] = {
    JobState.QUEUED: "neutral", JobState.RETRY_WAIT: "warning", JobState.CLAIMED: "info",
    JobState.SUBMITTING: "info", JobState.RENDERING: "accent", JobState.DOWNLOADING: "info",
    JobState.COMPLETED: "success", JobState.FAILED: "danger", JobState.CANCELLED: "neutral",
    JobState.PARKED: "warning",
}


@dataclass(frozen=True)
class JobFilter:
    """Attributes:
    states: job state values shown (None: all).
    batch_id: only this batch (None: all).
    account: only jobs on this account (None: all).
    text: a case-insensitive piece of the name, prompt or output file name.
    """

    states: frozenset[str] | None = None
    batch_id: int | None = None
    account: str | None = None
    text: str = ""

    @property
    def active(self) -> bool:
        return bool(self.states is not None or self.batch_id is not None
                    or self.account is not None or self.text.strip())

    def matches(self, row: JobRow) -> bool:
        if self.states is not None and row.state not in self.states:
            return False
        if self.batch_id is not None and row.batch_id != self.batch_id:
            return False
        if self.account is not None and row.account != self.account:
            return False
        needle = self.text.strip().casefold()
        return not needle or (needle in row.name.casefold() or needle in row.prompt.casefold()
                              or needle in row.output_path.casefold())


def state_words(row: JobRow) -> StateWords:
    """The row's state in the one set of words (application.words): the table's State
    column, its tooltip, and the Error column of a create of unknown outcome."""
    return job_state_words(row.state, row.sub_status, row.error_label, row.provider_job_id)


def _state_text(row: JobRow) -> str:
    name = state_words(row).name
    if row.priority and row.state in (JobState.QUEUED, JobState.RETRY_WAIT):
        # "Move to the front" (issue 34): which waiting jobs go before the others.
        return f"{name} · {'↑ front' if row.priority > 0 else '↓ later'}"
    return name


def _error_text(row: JobRow) -> str:
    # A create of unknown outcome is not an error: its one name, not the label's own
    # words ("submit outcome unknown" was a fourth name for it).
    words = state_words(row) if row.error_label else None
    if words is not None and words.code == OUTCOME_UNKNOWN:
        return words.name
    return row.error_label or ""


def _attempts(row: JobRow) -> str:  # "1/3" on a completed job reads as "2 tries left"
    if row.state in (JobState.COMPLETED, JobState.CANCELLED):
        return ""
    return f"{row.attempts}/{row.max_attempts}"


def _output(row: JobRow) -> str:
    return Path(row.output_path).name if row.output_path else ""


def elsewhere(row: JobRow, here: str | None) -> str | None:
    """The machine of a team that holds this job's file, when it is not this one."""
    return row.host if here is not None and row.host and row.host != here else None


def _account(row: JobRow) -> str:
    if row.account:
        return f"{row.account}"
    # A pinned job waits for its one account, never "any" (issue 34, N1).
    return f"{row.pinned_account} (pinned)" if row.pinned_account else f"{row.provider} · any"


_DISPLAY = (
    lambda r: "" if r.row_number is None else str(r.row_number),
    lambda r: r.name,
    lambda r: r.prompt,
    _account,
    _state_text,
    lambda r: "",
    _attempts,
    _output,
    _error_text,
)


class JobTableModel(QAbstractTableModel):
    """Signals:
        orderRequested(str, bool): the model wants every job id in this order (one of
            :data:`SORT_ORDERS`), descending or not, from the journal; answer with
            :meth:`set_order`.

    Attributes:
    table: the rows and counters this model shows.
    filter: the filter in force.
    sort_column: the column sorted by (-1: none, jobs in id order).
    sort_descending: the sort's direction.
    """

    orderRequested = Signal(str, bool)

    def __init__(self, table: JobTable | None = None, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.table = table or JobTable()
        self.filter = JobFilter()
        # Indices into table.rows (None: all of them), and the sort's order below, are
        # arrays, not lists: a list of 100,000 indices made once a second by a live sort
        # is walked by every collection of the young objects it sits among (2-5 of them
        # at a time: 5-12 ms of the GUI thread each, bench_gui.py); an array holds no
        # objects and is never walked.
        self._view: array[int] | None = None
        self._view_pos: dict[int, int] | None = None
        self.now = time.time
        self.here: str | None = None  # a team's window: this machine's host name
        self.sort_column = -1
        self.sort_descending = False
        self._order: array[int] | None = None  # table indices in the sort's order
        self._order_for: tuple[int, bool] | None = None  # the sort _order was made for
        self._order_stale = False
        self._asked_at: float | None = None  # an order asked for, not answered yet
        self._ordered_at = 0.0

    # -- Qt model API ----------------------------------------------------------------------
    def rowCount(self, parent: ModelIndex = QModelIndex()) -> int:  # noqa: B008
        if parent.isValid():
            return 0
        return len(self.table.rows) if self._view is None else len(self._view)

    def columnCount(self, parent: ModelIndex = QModelIndex()) -> int:  # noqa: B008
        return 0 if parent.isValid() else len(HEADERS)

    def headerData(self, section: int, orientation: Qt.Orientation,
                   role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if orientation == Qt.Orientation.Horizontal and 0 <= section < len(HEADERS):
            if role == Qt.ItemDataRole.DisplayRole:
                return HEADERS[section]
            if role == Qt.ItemDataRole.TextAlignmentRole:
                return int(Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignVCenter)
        return None

    def row_at(self, row: int) -> JobRow:
        return self.table.rows[row if self._view is None else self._view[row]]

    def data(self, index: ModelIndex, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if not index.isValid():
            return None
        record = self.row_at(index.row())
        column = index.column()
        if role == Qt.ItemDataRole.DisplayRole:
            if column == COL_OUTPUT and (host := elsewhere(record, self.here)):
                return f"{_output(record)} · on {host}"
            return _DISPLAY[column](record)
        if role == Qt.ItemDataRole.ToolTipRole:
            if column == COL_PROMPT:
                return record.prompt
            if column == COL_STATE:
                return state_words(record).hint or None
            if column == COL_ERROR and record.error_message:
                return record.error_message
            if column == COL_OUTPUT:
                host = elsewhere(record, self.here)
                return (f"{record.output_path}\non {host} (another machine of the team "
                        "holds this file)" if host else record.output_path)
            return None
        if role == JobIdRole:
            return record.id
        if role == JobRowRole:
            return record
        if role == StateRole:
            return record.state
        if role == Qt.ItemDataRole.ForegroundRole and column == COL_ERROR:
            return theme.color("danger")
        if role == Qt.ItemDataRole.TextAlignmentRole and column in (COL_ROW, COL_ATTEMPTS):
            return int(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
        return None

    def flags(self, index: ModelIndex) -> Qt.ItemFlag:
        if not index.isValid():
            return Qt.ItemFlag.NoItemFlags
        return Qt.ItemFlag.ItemIsEnabled | Qt.ItemFlag.ItemIsSelectable

    def sort(self, column: int, order: Qt.SortOrder = Qt.SortOrder.AscendingOrder) -> None:
        """Sort by ``column`` (a header click); -1 goes back to id order. The order comes
        from the journal (:attr:`orderRequested`); flipping the direction of the sort in
        force shows at once (ties go by id, so descending is ascending reversed)."""
        descending = order == Qt.SortOrder.DescendingOrder
        if not 0 <= column < len(HEADERS):
            if self.sort_column < 0:
                return
            self.sort_column, self._order, self._order_for = -1, None, None
            self._order_stale = False
            self._relayout()
            return
        if (column, descending) == (self.sort_column, self.sort_descending):
            return
        self.sort_column, self.sort_descending = column, descending
        if self._order is not None and self._order_for == (column, not descending):
            self._order.reverse()
            self._order_for = (column, descending)
            self._relayout()
            if not self._order_stale:
                return
        self._ask_order()

    def _ask_order(self) -> None:
        self._order_stale = False
        self._asked_at = time.monotonic()
        emit(self.orderRequested, SORT_ORDERS[self.sort_column], self.sort_descending)

    def set_order(self, order: str, descending: bool, job_ids: list[int], *,
                  indexes: array[int] | None = None,
                  positions: dict[int, int] | None = None) -> bool:
        """Show the jobs in the order the journal gave (every job id, in order). An answer
        for a sort no longer in force is dropped (False). Jobs the answer does not know
        yet (added since) follow at the end until the next order. ``indexes``: the ids'
        rows, already looked up, and ``positions`` each of those rows' place in that order
        (both made off the GUI thread: :func:`order_lookup`)."""
        if self.sort_column < 0 or (order, descending) != (SORT_ORDERS[self.sort_column],
                                                           self.sort_descending):
            return False
        self._asked_at = None
        self._ordered_at = time.monotonic()
        ordered = (array("q", self.table.indexes_of(job_ids)) if indexes is None
                   else indexes)
        if positions is not None and len(positions) != len(ordered):
            positions = None  # not the map of this order
        if len(ordered) < len(self.table.rows):
            known: Container[int] = positions if positions is not None else set(ordered)
            missing = [i for i in range(len(self.table.rows)) if i not in known]
            if positions is not None:
                positions = {**positions, **{i: len(ordered) + n for n, i in enumerate(missing)}}
            ordered.extend(missing)
            self._order_stale = True
        # Unfiltered, the view is this order: its map, made off-thread, places the kept
        # indexes (building it here held the GUI thread 15-20 ms a re-sort, bench_gui.py).
        view_map = positions if not self.filter.active else None
        if self._order_for == (self.sort_column, descending) and self._order == ordered:
            # Nothing moved (values changed within their places): the views are told
            # nothing, and repaint nothing (a re-layout repaints every visible row).
            if view_map is not None and self._view_pos is None:
                self._view_pos = view_map
            return True
        self._order = ordered
        self._order_for = (self.sort_column, descending)
        self._relayout(view_map)
        return True

    def _sort_value(self, row: JobRow | None) -> Any:
        return None if row is None else _SORT_VALUE[self.sort_column](row)

    def _maybe_reorder(self) -> None:
        """Ask the journal for the order again when rows moved, at most once a period."""
        if not self._order_stale or self.sort_column < 0:
            return
        now = time.monotonic()
        if self._asked_at is not None and now - self._asked_at < ORDER_TIMEOUT:
            return  # the answer is on its way; what changed since is asked for after
        if now - self._ordered_at >= RESORT_SECONDS:
            self._ask_order()

    # -- feeding -------------------------------------------------------------------------
    def add_rows(self, rows: list[JobRow], stats: JobStats | None = None) -> int:
        """Append a page of new jobs with one ``beginInsertRows``; return how many."""
        if not rows:
            return 0
        table = self.table
        start = len(table.rows)
        fresh = [row for row in rows if table.index_of(row.id) is None]
        if not fresh:
            return 0
        if self._order is not None:
            self._order.extend(range(start, start + len(fresh)))
            self._order_stale = True
        if self._view is None:
            self.beginInsertRows(QModelIndex(), start, start + len(fresh) - 1)
            table.append(fresh, stats if len(fresh) == len(rows) else None)
            self.endInsertRows()
            return len(fresh)
        table.append(fresh, stats if len(fresh) == len(rows) else None)
        shown = [i for i in range(start, start + len(fresh)) if self.filter.matches(table.rows[i])]
        if shown:
            first = len(self._view)
            self.beginInsertRows(QModelIndex(), first, first + len(shown) - 1)
            self._view.extend(shown)
            if self._view_pos is not None:
                self._view_pos.update(zip(shown, range(first, first + len(shown)), strict=True))
            self.endInsertRows()
        return len(fresh)

    def apply_event(self, event: JobEvent) -> bool:
        """Apply an event now; views hear of it at the next :meth:`flush`."""
        if self.sort_column < 0 or self._order_stale:
            return self.table.apply(event)
        row = self.table.row(event.job_id)
        before = self._sort_value(row)
        applied = self.table.apply(event)
        if row is not None and self._sort_value(row) != before:
            self._order_stale = True
        return applied

    def replace_rows(self, rows: list[JobRow]) -> None:
        for row in rows:
            before = self._sort_value(self.table.row(row.id)) if self.sort_column >= 0 else None
            if self.table.replace(row) and self.sort_column >= 0 \
                    and self._sort_value(row) != before:
                self._order_stale = True

    def flush(self) -> int:
        """Tell the views what changed since the last tick; return the rows changed."""
        self._maybe_reorder()
        dirty = self.table.take_dirty()
        if not dirty:
            return 0
        if self._view is None:
            first, last = min(dirty), max(dirty)
        else:
            pos = self._positions()
            rows = self.table.rows
            # Unfiltered (a sorted view), every row is shown: no membership to check.
            if self.filter.active and any((i in pos) != self.filter.matches(rows[i])
                                          for i in dirty):
                self._relayout()
                return len(dirty)
            shown = [pos[i] for i in dirty if i in pos]
            if not shown:
                return len(dirty)
            first, last = min(shown), max(shown)
        emit(self.dataChanged, self.index(first, 0), self.index(last, len(HEADERS) - 1))
        return len(dirty)

    # -- filtering -----------------------------------------------------------------------
    def set_filter(self, job_filter: JobFilter) -> None:
        if job_filter == self.filter:
            return
        self.filter = job_filter
        self._relayout()

    def _positions(self) -> dict[int, int]:
        if self._view_pos is None:
            view: Sequence[int] = self._view if self._view is not None else ()
            self._view_pos = dict(zip(view, range(len(view)), strict=True))
        return self._view_pos

    def _compute_view(self) -> array[int] | None:
        order = self._order
        if not self.filter.active:
            return None if order is None else array("q", order)
        matches = self.filter.matches
        if order is None:
            return array("q", [i for i, row in enumerate(self.table.rows) if matches(row)])
        rows = self.table.rows
        return array("q", [i for i in order if matches(rows[i])])

    def _relayout(self, view_map: dict[int, int] | None = None) -> None:
        """Recompute the view, keeping selections and the current row on their jobs.
        ``view_map``: each row's place in the new view, when known already."""
        emit(self.layoutAboutToBeChanged)
        persistent = self.persistentIndexList()
        ids = [self.row_at(index.row()).id if index.isValid() else None
               for index in persistent]
        self._view = self._compute_view()
        self._view_pos = view_map
        new_indexes = []
        # A few kept indexes (the current row, a small selection) are found by a scan of
        # the view in C; building the whole position map for them cost 20+ ms per re-sort
        # of 100,000 rows, on the GUI thread, once a second during a live sort.
        find = self._view_row_scanned if len(persistent) <= FEW_KEPT else self.view_row_of
        for index, job_id in zip(persistent, ids, strict=True):
            row = find(job_id) if job_id is not None else None
            new_indexes.append(QModelIndex() if row is None
                               else self.index(row, index.column()))
        self.changePersistentIndexList(persistent, new_indexes)
        emit(self.layoutChanged)

    def _view_row_scanned(self, job_id: int) -> int | None:
        """:meth:`view_row_of` without the position map (see _relayout)."""
        index = self.table.index_of(job_id)
        if index is None or self._view is None or self._view_pos is not None:
            return self.view_row_of(job_id)
        try:
            return self._view.index(index)
        except ValueError:
            return None

    def view_row_of(self, job_id: int) -> int | None:
        index = self.table.index_of(job_id)
        if index is None:
            return None
        if self._view is None:
            return index
        return self._positions().get(index)

    def job_ids(self, rows: list[int]) -> list[int]:
        return [self.row_at(row).id for row in rows]

    def visible_in_flight(self, first: int, last: int) -> bool:
        last = min(last, self.rowCount() - 1)
        return any(self.row_at(row).state in IN_FLIGHT_VALUES for row in range(first, last + 1))


def _pill(painter: QPainter, rect: QRectF, fill: QColor) -> None:
    path = QPainterPath()
    path.addRoundedRect(rect, rect.height() / 2, rect.height() / 2)
    painter.fillPath(path, fill)


class MiddleElideDelegate(QStyledItemDelegate):
    """A cell whose end matters as much as its start ("002_shot01.mp4 · on box-b"): elided
    in the middle, so the machine that holds the file stays visible in a narrow column."""

    def initStyleOption(self, option: QStyleOptionViewItem, index: ModelIndex) -> None:
        super().initStyleOption(option, index)
        option.textElideMode = Qt.TextElideMode.ElideMiddle


class StateDelegate(QStyledItemDelegate):
    """The state as a coloured dot and its label."""

    def paint(self, painter: QPainter, option: QStyleOptionViewItem, index: ModelIndex) -> None:
        row: JobRow | None = index.data(JobRowRole)
        if row is None:
            super().paint(painter, option, index)
            return
        self.initStyleOption(option, index)
        style = option.widget.style() if option.widget else None
        text = option.text
        option.text = ""
        if style is not None:
            style.drawControl(QStyle.ControlElement.CE_ItemViewItem, option, painter,
                              option.widget)
        painter.save()
        painter.setRenderHint(QPainter.RenderHint.Antialiasing)
        tint = theme.color(STATE_TINTS.get(row.state, "neutral"))
        rect = option.rect.adjusted(8, 0, -6, 0)
        dot = QRectF(rect.left(), rect.center().y() - 3.5, 7, 7)
        painter.setBrush(tint)
        painter.setPen(Qt.PenStyle.NoPen)
        painter.drawEllipse(dot)
        painter.setPen(option.palette.color(option.palette.ColorRole.Text))
        text_rect = QRect(rect.left() + 14, rect.top(), rect.width() - 14, rect.height())
        metrics = QFontMetrics(option.font)
        painter.drawText(text_rect, int(Qt.AlignmentFlag.AlignVCenter | Qt.AlignmentFlag.AlignLeft),
                         metrics.elidedText(text, Qt.TextElideMode.ElideRight, text_rect.width()))
        painter.restore()


class ProgressDelegate(QStyledItemDelegate):
    """A progress bar (or an elapsed-time bar against how long renders of the kind took,
    when the provider gives no number) for in-flight rows; the render time or nothing for
    the others (:meth:`JobTable.progress_words`)."""

    def __init__(self, model: JobTableModel, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.model = model

    def text_for(self, row: JobRow, now: float) -> tuple[float | None, str]:
        table = self.model.table
        if row.state in IN_FLIGHT_VALUES:
            return table.progress_words(row, now)
        if row.state == JobState.COMPLETED and row.finished_at and row.attempt_started:
            return 1.0, f"done in {fmt.duration(row.finished_at - row.attempt_started)}"
        if row.state == JobState.COMPLETED:
            return 1.0, "done"
        return None, ""

    def paint(self, painter: QPainter, option: QStyleOptionViewItem, index: ModelIndex) -> None:
        row: JobRow | None = index.data(JobRowRole)
        self.initStyleOption(option, index)
        style = option.widget.style() if option.widget else None
        if style is not None:
            style.drawControl(QStyle.ControlElement.CE_ItemViewItem, option, painter,
                              option.widget)
        if row is None:
            return
        fraction, text = self.text_for(row, self.model.now())
        painter.save()
        painter.setRenderHint(QPainter.RenderHint.Antialiasing)
        rect = QRectF(option.rect.adjusted(8, 0, -8, 0))
        muted = theme.color("muted")
        if row.state in IN_FLIGHT_VALUES:
            track = QRectF(rect.left(), rect.center().y() + 5, rect.width(), 4)
            _pill(painter, track, theme.color("border"))
            if fraction is not None:
                done = QRectF(track.left(), track.top(), max(4.0, track.width() * fraction),
                              track.height())
                tint = "accent" if row.progress is not None else "info"
                _pill(painter, done, theme.color(tint))
            else:  # no number and no estimate yet: an indeterminate stripe
                _pill(painter, QRectF(track.left(), track.top(), track.width() * 0.25, 4),
                      theme.color("info", 140))
            text_rect = QRectF(rect.left(), rect.top(), rect.width(), rect.height() / 2 + 4)
            painter.setPen(option.palette.color(option.palette.ColorRole.Text))
            flags = Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignBottom
        else:
            text_rect = rect
            painter.setPen(muted)
            flags = Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignVCenter
        font = option.font
        font.setPointSizeF(font.pointSizeF() * 0.92)
        painter.setFont(font)
        painter.drawText(text_rect, int(flags), text)
        painter.restore()


def is_final(row: JobRow) -> bool:
    return row.state in FINAL_VALUES


def order_lookup(table: JobTable, job_ids: list[int]) -> tuple[array[int], dict[int, int]]:
    """A sort's answer made ready for :meth:`JobTableModel.set_order` on a worker thread:
    the ids' rows and each row's place. Python-level loops, so the GUI thread gets the
    interpreter every few milliseconds (a C-level ``dict(zip(...))`` would hold it)."""
    indexes = array("q", table.indexes_of(job_ids))
    return indexes, {row: place for place, row in enumerate(indexes)}
