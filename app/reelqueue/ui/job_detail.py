"""A job's detail: prompt and parameters, error with a plain hint, output, history.

Non-modal; one window per job. The controller loads the job and its ledger on the journal
thread and calls :meth:`JobDetailDialog.set_detail`. A completed job's thumbnail comes
from the window's :class:`~reelqueue.ui.thumbnails.Thumbnailer` (PyAV on a worker thread,
cached by the video's sha256); a film frame stands in until it arrives, and for good when
the video gives none. Play opens the video (:mod:`reelqueue.ui.preview`).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from PySide6.QtCore import (
    QModelIndex,
    QPersistentModelIndex,
    Qt,
    Signal,
)
from PySide6.QtGui import QAction, QGuiApplication, QPixmap
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QDialog,
    QFrame,
    QGridLayout,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QPlainTextEdit,
    QPushButton,
    QScrollArea,
    QSizePolicy,
    QSpinBox,
    QTableView,
    QVBoxLayout,
    QWidget,
)

from reelqueue.application.create_evidence import (
    NOT_READ,
    READ_ACTION,
    READING,
    recorded_evidence,
)
from reelqueue.application.views import JobDetail
from reelqueue.application.words import OUTCOME_UNKNOWN, job_state_words
from reelqueue.domain.errors import HINTS, ErrorClass, ErrorLabel
from reelqueue.domain.models import Job, LedgerEntry
from reelqueue.domain.states import JobState
from reelqueue.ui import format as fmt
from reelqueue.ui import theme
from reelqueue.ui.accounts_view import Chip
from reelqueue.ui.jobs_model import STATE_TINTS
from reelqueue.ui.list_model import ListTableModel
from reelqueue.ui.preview import THUMB, PreviewPane
from reelqueue.ui.qtcompat import emit
from reelqueue.ui.thumbnails import Thumbnail, Thumbnailer

ModelIndex = QModelIndex | QPersistentModelIndex


class LedgerModel(ListTableModel[LedgerEntry]):
    """A job's ledger entries, oldest first."""

    HEADERS = ("Time", "Event", "Account", "Details")

    def set_entries(self, entries: list[LedgerEntry]) -> None:
        self.set_items(entries)

    @property
    def entries(self) -> list[LedgerEntry]:
        return self.items

    def data(self, index: ModelIndex, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if not index.isValid():
            return None
        entry = self.items[index.row()]
        if role in (Qt.ItemDataRole.DisplayRole, Qt.ItemDataRole.ToolTipRole):
            detail = fmt.history_detail(entry.event, entry.detail)
            values = (fmt.stamp(entry.at), entry.event.replace("_", " "),
                      entry.account or "", detail)
            return values[index.column()]
        if role == Qt.ItemDataRole.ForegroundRole and index.column() == 1:
            if entry.event in ("failed", "fenced_out", "possible_duplicate_charge"):
                return theme.color("danger")
            if entry.event == "completed":
                return theme.color("success")
        return None


def _size(count: int) -> str:
    if count >= 1_000_000:
        return f"{count / 1_000_000:.1f} MB"
    return f"{max(1, round(count / 1000))} KB"


def hint_for(label: str | None) -> str:
    try:
        return HINTS[ErrorLabel(label)] if label else ""
    except ValueError:
        return ""


def set_long_text(label: QLabel, text: str) -> None:
    """Show ``text`` in ``label``, an unbroken run too long to wrap cut in its middle
    (:func:`fmt.elide_long`), the whole of it in the tooltip and copied whole by the
    label's "Copy" (N7: a 64-character sha256 made the detail scroll sideways)."""
    shown = fmt.elide_long(text)
    label.setText(shown)
    label.setToolTip(text if shown != text else "")
    for action in label.actions():
        label.removeAction(action)
        action.deleteLater()
    if shown != text:
        copy = QAction("Copy", label)
        copy.triggered.connect(lambda: QGuiApplication.clipboard().setText(text))
        label.addAction(copy)
        label.setContextMenuPolicy(Qt.ContextMenuPolicy.ActionsContextMenu)
    else:
        label.setContextMenuPolicy(Qt.ContextMenuPolicy.DefaultContextMenu)


class JobDetailDialog(QDialog):
    """Signals:
        retryRequested(int, object): the job id and a new seed (None: keep the seed).
        renderChosen(int, str): the job id and the render the user says is its own (a
            create whose outcome stayed unknown, issue 19).
        createAgainRequested(int): the job id: none of the candidates is it, render anew.
        countsRequested(int): the job id: read the provider's usage counts for its unknown
            create now (in the background; the line updates when the reading is kept).
        cancelRequested(int): the job id.
        revealRequested(str): a file to show in its folder.

    Attributes:
        job_id: the job shown.
        preview: the thumbnail and Play (:class:`~reelqueue.ui.preview.PreviewPane`).
        thumbnails: where thumbnails come from (None: the film frame only).
    """

    retryRequested = Signal(int, object)
    renderChosen = Signal(int, str)
    createAgainRequested = Signal(int)
    countsRequested = Signal(int)
    cancelRequested = Signal(int)
    revealRequested = Signal(str)

    def __init__(self, job_id: int, parent: QWidget | None = None, *,
                 thumbnails: Thumbnailer | None = None,
                 preview: PreviewPane | None = None) -> None:
        super().__init__(parent)
        self.job_id = job_id
        self.job: Job | None = None
        self.thumbnails = thumbnails
        if thumbnails is not None:
            thumbnails.ready.connect(self._thumbnail_ready)
        self.setModal(False)
        self.setWindowTitle(f"Job {job_id}")
        self.resize(920, 700)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(20, 18, 20, 16)
        layout.setSpacing(12)

        head = QHBoxLayout()
        self.title = QLabel(f"Job {job_id}")
        self.title.setProperty("role", "heading")
        self.chip = Chip()
        self.subtitle = QLabel("Loading…")
        self.subtitle.setProperty("role", "muted")
        titles = QVBoxLayout()
        titles.setSpacing(2)
        title_row = QHBoxLayout()
        title_row.addWidget(self.title)
        title_row.addWidget(self.chip)
        title_row.addStretch(1)
        titles.addLayout(title_row)
        titles.addWidget(self.subtitle)
        head.addLayout(titles, 1)
        layout.addLayout(head)

        body = QHBoxLayout()
        body.setSpacing(16)
        left = QVBoxLayout()
        left.setSpacing(8)
        prompt_head = QLabel("PROMPT")
        prompt_head.setProperty("role", "section")
        self.prompt = QPlainTextEdit()
        self.prompt.setReadOnly(True)
        self.prompt.setMaximumHeight(96)
        left.addWidget(prompt_head)
        left.addWidget(self.prompt)
        params_head = QLabel("PARAMETERS")
        params_head.setProperty("role", "section")
        left.addWidget(params_head)
        self.params = QFrame()
        self.params.setObjectName("panel")
        self.params_layout = QGridLayout(self.params)
        self.params_layout.setContentsMargins(12, 10, 12, 10)
        self.params_layout.setHorizontalSpacing(18)
        self.params_layout.setVerticalSpacing(4)
        left.addWidget(self.params)
        self.error_box = QFrame()
        self.error_box.setObjectName("panel")
        error_layout = QVBoxLayout(self.error_box)
        error_layout.setContentsMargins(12, 10, 12, 10)
        self.error_title = QLabel()
        self.error_title.setStyleSheet(f"color: {theme.tokens().danger}; font-weight: 600;")
        self.error_text = QLabel()
        self.error_text.setWordWrap(True)
        self.error_text.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.error_hint = QLabel()
        self.error_hint.setWordWrap(True)
        self.error_hint.setProperty("role", "muted")
        for widget in (self.error_title, self.error_text, self.error_hint):
            error_layout.addWidget(widget)
        # An unknown create's candidates come before the long words of its message.
        left.addWidget(self._resolve_box())
        left.addWidget(self.error_box)
        left.addStretch(1)
        body.addLayout(left, 1)

        right = QVBoxLayout()
        right.setSpacing(8)
        output_head = QLabel("OUTPUT")
        output_head.setProperty("role", "section")
        right.addWidget(output_head)
        self.preview = preview or PreviewPane()
        self.thumbnail = self.preview.thumbnail
        right.addWidget(self.preview)
        self.output_label = QLabel()
        self.output_label.setWordWrap(True)
        self.output_label.setMaximumWidth(THUMB.width())
        self.output_label.setProperty("role", "muted")
        self.output_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        right.addWidget(self.output_label)
        file_buttons = QHBoxLayout()
        self.open_button = QPushButton("Play")
        self.open_button.setIcon(theme.icon("play", size=16))
        self.open_button.setToolTip("Plays here where Qt's multimedia module is installed, "
                                    "else opens your video player")
        self.reveal_button = QPushButton("Show in folder")
        self.reveal_button.setIcon(theme.icon("folder", size=16))
        self.open_button.clicked.connect(lambda: self.preview.play(Path(self._output())))
        self.reveal_button.clicked.connect(lambda: emit(self.revealRequested, self._output()))
        file_buttons.addWidget(self.open_button)
        file_buttons.addWidget(self.reveal_button)
        file_buttons.addStretch(1)
        right.addLayout(file_buttons)
        self.play_notice = QLabel()
        self.play_notice.setWordWrap(True)
        self.play_notice.setMaximumWidth(THUMB.width())
        self.play_notice.setProperty("role", "muted")
        self.play_notice.setVisible(False)
        self.preview.notice.connect(self._show_notice)
        right.addWidget(self.play_notice)
        right.addStretch(1)
        body.addLayout(right, 0)
        # On a 720-pixel screen a failed job's prompt, error and hint need more height than
        # there is: they scroll instead of being crushed (issue 13, clipped text).
        body_widget = QWidget()
        body_widget.setLayout(body)
        body_scroll = QScrollArea()
        body_scroll.setWidgetResizable(True)
        body_scroll.setFrameShape(QFrame.Shape.NoFrame)
        body_scroll.setWidget(body_widget)
        body_scroll.setMinimumHeight(360)  # the history gives way first
        layout.addWidget(body_scroll, 3)

        history_head = QLabel("HISTORY")
        history_head.setProperty("role", "section")
        layout.addWidget(history_head)
        self.ledger_model = LedgerModel(self)
        self.ledger_view = QTableView()
        self.ledger_view.setMinimumHeight(110)  # header and three entries, then it scrolls
        self.ledger_view.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Ignored)
        self.ledger_view.setModel(self.ledger_model)
        self.ledger_view.verticalHeader().setVisible(False)
        self.ledger_view.verticalHeader().setDefaultSectionSize(28)
        self.ledger_view.setShowGrid(False)
        self.ledger_view.setWordWrap(False)
        self.ledger_view.setAlternatingRowColors(True)
        header = self.ledger_view.horizontalHeader()
        header.setDefaultAlignment(Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignVCenter)
        header.resizeSection(0, 160)
        header.resizeSection(1, 130)
        header.resizeSection(2, 120)
        header.setSectionResizeMode(3, QHeaderView.ResizeMode.Stretch)
        layout.addWidget(self.ledger_view, 1)

        actions = QHBoxLayout()
        self.new_seed = QCheckBox("with a new seed")
        self.seed = QSpinBox()
        self.seed.setRange(0, 2_147_483_647)
        self.seed.setEnabled(False)
        self.new_seed.toggled.connect(self.seed.setEnabled)
        self.new_seed.toggled.connect(lambda _on: self._update_retry())
        self.retry_button = QPushButton("Retry")
        self.retry_button.setIcon(theme.icon("retry", size=16))
        self.retry_button.clicked.connect(self._retry)
        self.cancel_button = QPushButton("Cancel job")
        self.cancel_button.setIcon(theme.icon("cancel", size=16))
        self.cancel_button.clicked.connect(lambda: emit(self.cancelRequested, self.job_id))
        close = QPushButton("Close")
        close.clicked.connect(self.close)
        actions.addWidget(self.retry_button)
        actions.addWidget(self.new_seed)
        actions.addWidget(self.seed)
        actions.addStretch(1)
        actions.addWidget(self.cancel_button)
        actions.addWidget(close)
        layout.addLayout(actions)

    def _update_retry(self) -> None:
        """Retry: a failed, cancelled or parked job; a finished one only with a new seed
        (a new job beside it renders the seed; the finished video is kept)."""
        state = self.job.state if self.job is not None else None
        finished = state == JobState.COMPLETED
        self.retry_button.setEnabled(
            state in (JobState.FAILED, JobState.CANCELLED, JobState.PARKED)
            or (finished and self.new_seed.isChecked()))
        self.retry_button.setToolTip(
            "A finished video is kept: tick 'with a new seed' to render a new one beside "
            "it (a new job, its price shown first)" if finished else "")

    def _output(self) -> str:
        return self.job.output_path if self.job else ""

    def _resolve_box(self) -> QFrame:
        """For a create whose outcome stayed unknown: the renders the provider's records
        hold that could be this job's, to pick one (read, never created again), or to say
        none is it (rendered again, paid)."""
        self.resolve_box = QFrame()
        self.resolve_box.setObjectName("panel")
        box = QVBoxLayout(self.resolve_box)
        box.setContentsMargins(12, 10, 12, 10)
        self.resolve_text = QLabel()
        self.resolve_text.setWordWrap(True)
        self.candidates = QComboBox()
        self.use_render = QPushButton("This is it: use this render")
        self.use_render.setToolTip("The render is read and downloaded; nothing is created "
                                   "or charged again. A render goes to one job only.")
        self.use_render.clicked.connect(lambda: emit(
            self.renderChosen, self.job_id, str(self.candidates.currentData() or "")))
        self.create_again = QPushButton("None is it: render again…")
        self.create_again.setToolTip("Renders this row anew; the first create may already "
                                     "be charged. Asks before it pays.")
        self.create_again.clicked.connect(lambda: emit(self.createAgainRequested,
                                                       self.job_id))
        buttons = QHBoxLayout()
        buttons.addWidget(self.use_render)
        buttons.addWidget(self.create_again)
        buttons.addStretch(1)
        # What the provider's usage counts said of this create (issue 32 item 6): the
        # ledger's last reading, and the action that takes a new one. Information only.
        self.evidence_text = QLabel(NOT_READ)
        self.evidence_text.setTextFormat(Qt.TextFormat.PlainText)  # a journal row's text
        self.evidence_text.setWordWrap(True)
        self.evidence_text.setTextInteractionFlags(
            Qt.TextInteractionFlag.TextSelectableByMouse)
        self.read_counts = QPushButton(READ_ACTION)
        self.read_counts.setToolTip("Asks the provider for this account's usage on the "
                                    "create's day; nothing is created or charged.")
        self.read_counts.clicked.connect(self._read_counts)
        evidence_row = QHBoxLayout()
        evidence_row.addWidget(self.evidence_text, 1)
        evidence_row.addWidget(self.read_counts, 0, Qt.AlignmentFlag.AlignTop)
        box.addWidget(self.resolve_text)
        box.addWidget(self.candidates)
        box.addLayout(buttons)
        box.addLayout(evidence_row)
        self.resolve_box.setVisible(False)
        return self.resolve_box

    def _read_counts(self) -> None:
        self.read_counts.setEnabled(False)
        self.evidence_text.setText(READING)
        emit(self.countsRequested, self.job_id)

    def _set_evidence(self, ledger: list[LedgerEntry]) -> None:
        found = recorded_evidence(ledger, time.time())
        self.evidence_text.setText(NOT_READ if found is None else found.words)
        self.read_counts.setEnabled(True)

    def _set_resolve(self, job: Job, ledger: list[LedgerEntry]) -> None:
        unknown = (job.state == JobState.PARKED and job.provider_job_id is None
                   and job.error_label == ErrorLabel.SUBMIT_UNKNOWN.value)
        self.resolve_box.setVisible(unknown)
        if not unknown:
            return
        self._set_evidence(ledger)
        found: list[dict[str, Any]] = []
        for entry in reversed(ledger):
            if entry.event == "reconcile_unresolved":
                found = list(entry.detail.get("candidates") or [])
                break
        self.candidates.clear()
        for c in found:
            created = (" · created " + fmt.stamp(float(c["created_at"]))
                       if c.get("created_at") else "")
            self.candidates.addItem(f"{c.get('id')}{created} · {c.get('status') or '?'}",
                                    str(c.get("id")))
        self.candidates.setVisible(bool(found))
        self.use_render.setVisible(bool(found))
        self.resolve_text.setText(
            "The provider's records hold renders that could be this job's; pick the one "
            "that is (check it in the provider's dashboard), or render again if none is."
            if found else "No render of this job was found in the provider's records "
            "(or it cannot be asked). Look in its dashboard as the message above says; "
            "render again only if it is not there.")

    def _retry(self) -> None:
        emit(self.retryRequested, self.job_id, self.seed.value() if self.new_seed.isChecked()
                                 else None)

    def set_detail(self, detail: JobDetail) -> None:
        job = detail.job
        self.job = job
        self.setWindowTitle(fmt.job_title(job.name, job.row_number, job.id))
        self.title.setText(fmt.job_title(job.name, job.row_number, job.id))
        state = job.state.value
        words = job_state_words(state, job.sub_status, job.error_label, job.provider_job_id)
        self.chip.set_chip(words.name, STATE_TINTS.get(state, "neutral"))
        self.chip.setToolTip(words.hint)
        row = f"row {job.row_number} · " if job.row_number is not None else ""
        where = f" on {job.account}" if job.account else ""
        tries = fmt.attempts(state, job.attempts, job.max_attempts)
        origin = job.metadata.get("variant_of")
        variant = (f" · a new seed of job {origin}" if isinstance(origin, int)
                   and not isinstance(origin, bool) else "")
        self.subtitle.setText(f"{row}{job.provider}{where}{variant}"
                              f"{' · ' + tries if tries else ''}")
        self.prompt.setPlainText(job.prompt)
        self._set_params(job)
        has_error = bool(job.error_label)
        self.error_box.setVisible(has_error)
        if has_error:
            kind = ("not a failure" if job.error_class == ErrorClass.UNKNOWN.value
                    else job.error_class or "error")
            said = words.name if words.code == OUTCOME_UNKNOWN else job.error_label or ""
            self.error_title.setText(f"{said.capitalize()} ({kind})")
            self.error_text.setText(job.error_message or "")
            self.error_hint.setText(hint_for(job.error_label))
        exists = Path(job.output_path).is_file() if state == JobState.COMPLETED else False
        size = f" · {_size(job.output_size)}" if job.output_size else ""
        # the machine that wrote the file (on a team store, the one that holds it)
        host = f" · on {job.output_host}" if job.output_host else ""
        set_long_text(self.output_label,
                      f"{job.output_path}{size}{host}" if job.output_path else "")
        self.open_button.setEnabled(exists)
        self.reveal_button.setEnabled(bool(job.output_path))
        self._update_retry()
        self.cancel_button.setEnabled(
            state not in (JobState.COMPLETED, JobState.FAILED, JobState.CANCELLED))
        self.seed.setValue(int(job.params.get("seed") or 0) + 1)
        self._set_resolve(job, detail.ledger)
        self.ledger_model.set_entries(detail.ledger)
        if exists and self.thumbnails is not None:
            self.thumbnails.request(job.output_path, job.output_sha256)

    def stop_timers(self) -> None:
        """Called by the controller as the dialog goes: stop a video playing in it."""
        self.preview.stop()

    def _thumbnail_ready(self, thumb: Thumbnail) -> None:
        if self.job is not None and thumb.video == self.job.output_path:
            self.set_thumbnail(None if thumb.image is None else QPixmap.fromImage(thumb.image))

    def _show_notice(self, text: str) -> None:
        self.play_notice.setText(text)
        self.play_notice.setVisible(bool(text))

    def _set_params(self, job: Job) -> None:
        while self.params_layout.count():
            item = self.params_layout.takeAt(0)
            widget = item.widget() if item is not None else None
            if widget is not None:
                widget.deleteLater()
        values: dict[str, object] = dict(job.params)
        if job.pinned_account:
            values["pinned account"] = job.pinned_account
        if job.provider_job_id:
            values["provider job id"] = job.provider_job_id
        if job.cost is not None:
            values["cost"] = fmt.money(job.cost)
        form = list(values.items()) or [("parameters", "provider defaults")]
        for row, (key, value) in enumerate(form):
            name = QLabel(str(key).replace("_", " "))
            name.setProperty("role", "muted")
            text = QLabel()
            text.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
            text.setWordWrap(True)
            set_long_text(text, str(value))
            self.params_layout.addWidget(name, row, 0, Qt.AlignmentFlag.AlignTop)
            self.params_layout.addWidget(text, row, 1)
        self.params_layout.setColumnStretch(1, 1)

    def set_thumbnail(self, pixmap: QPixmap | None) -> None:
        self.preview.set_picture(pixmap)
