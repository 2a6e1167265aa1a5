"""What the window shows while its team database cannot be opened (issue 21).

The window used to open on an unreachable team database with "No accounts yet" and "Drop
a spreadsheet" — the user's work looked gone — and command-line words. Now the queue's
place says which database, why (libpq's reason in ReelQueue's words: unreachable, login
refused, TLS refused), that nothing recorded there is lost, when it tries again (a
back-off of :data:`RETRY_SECONDS`), and offers "Try again now" and "Open the local queue"
(this machine's own journal, for this launch; Settings keep the team queue).
"""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import QFrame, QHBoxLayout, QLabel, QPushButton, QVBoxLayout, QWidget

from reelqueue.ui.qtcompat import emit

LOCAL_QUEUE_EXIT = 75
"""The controller's ``finished`` code for "Open the local queue": ui/app.py reopens the
window on this machine's own journal."""
RETRY_SECONDS = (5, 10, 20, 40, 60)
"""Seconds before each new try; the last one repeats."""


def retry_delay(attempt: int) -> int:
    """Seconds to wait before try number ``attempt`` + 1 (``attempt`` from 0)."""
    return RETRY_SECONDS[min(attempt, len(RETRY_SECONDS) - 1)]


class UnreachablePage(QFrame):
    """The team database's problem in place of the accounts and jobs.

    Signals:
        retryRequested(): "Try again now".
        localRequested(): "Open the local queue".
    """

    retryRequested = Signal()
    localRequested = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("panel")
        layout = QVBoxLayout(self)
        layout.addStretch(1)
        self.title = QLabel("The team database cannot be reached")
        self.title.setProperty("role", "heading")
        self.title.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.detail = QLabel()
        self.detail.setWordWrap(True)
        self.detail.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.detail.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.detail.setFixedWidth(560)
        self.safe = QLabel("Nothing recorded there is lost: jobs, renders and spend stay in "
                           "the team database, and renders already running at the "
                           "providers go on. The queue opens as soon as it answers.")
        self.safe.setProperty("role", "muted")
        self.safe.setWordWrap(True)
        self.safe.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.safe.setFixedWidth(560)
        self.status = QLabel()
        self.status.setProperty("role", "muted")
        self.status.setAlignment(Qt.AlignmentFlag.AlignCenter)
        buttons = QHBoxLayout()
        buttons.addStretch(1)
        self.retry_button = QPushButton("Try again now")
        self.retry_button.setProperty("primary", True)
        self.retry_button.clicked.connect(lambda: emit(self.retryRequested))
        self.local_button = QPushButton("Open the local queue")
        self.local_button.setToolTip("This machine's own queue, for this launch (Settings "
                                     "keep the team queue for the next one)")
        self.local_button.clicked.connect(lambda: emit(self.localRequested))
        buttons.addWidget(self.retry_button)
        buttons.addWidget(self.local_button)
        buttons.addStretch(1)
        layout.addWidget(self.title)
        self.safe.setMinimumHeight(max(0, self.safe.heightForWidth(560)))
        for label in (self.detail, self.safe):
            layout.addWidget(label, 0, Qt.AlignmentFlag.AlignHCenter)
        layout.addSpacing(6)
        layout.addLayout(buttons)
        layout.addWidget(self.status)
        layout.addStretch(1)

    def set_problem(self, title: str, message: str) -> None:
        self.title.setText(title)
        self.detail.setText(message)
        self.detail.setMinimumHeight(max(0, self.detail.heightForWidth(560)))

    def set_status(self, text: str) -> None:
        self.status.setText(text)
