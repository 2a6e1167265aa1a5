"""The "Costs" view (issue 32 item 5): ``reelqueue spend --reconcile`` in the window. Per
account, model and UTC day, what the journal started and priced against what the provider
reports it used, each difference named (renders the journal does not know, price drift
with the price that would match, refunds), and per render where the provider lists them.

The words are the application's (:mod:`reelqueue.application.spend_reconcile`); this
dialog only shows them. The read asks the providers, so it runs as a task of the session
(the keeper's ``refresh_costs``) and the dialog says "Reading…" until it is back.
"""

from __future__ import annotations

from PySide6.QtWidgets import (
    QDialog,
    QDialogButtonBox,
    QLabel,
    QPlainTextEdit,
    QVBoxLayout,
    QWidget,
)


class CostsDialog(QDialog):
    """The cost reconciliation, read once per opening (and on "Read again").

    Signals: ``rejected`` (Close), ``againRequested`` via :attr:`again`'s ``clicked``.

    Attributes:
        text: the lines shown, read-only (selectable, so they can be copied).
        again: the "Read again" button.
    """

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle("Costs")
        layout = QVBoxLayout(self)
        self.summary = QLabel("Reading the providers' usage…")
        self.summary.setWordWrap(True)
        layout.addWidget(self.summary)
        self.text = QPlainTextEdit()
        self.text.setReadOnly(True)
        self.text.setLineWrapMode(QPlainTextEdit.LineWrapMode.WidgetWidth)
        layout.addWidget(self.text, 1)
        note = QLabel("Reading only: nothing is created or changed. The same figures: "
                      "reelqueue spend --reconcile.")
        note.setProperty("role", "muted")
        note.setWordWrap(True)
        layout.addWidget(note)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close)
        self.again = buttons.addButton("Read again", QDialogButtonBox.ButtonRole.ActionRole)
        buttons.rejected.connect(self.reject)
        layout.addWidget(buttons)
        self.resize(820, 420)

    def reading(self) -> None:
        self.summary.setText("Reading the providers' usage…")
        self.again.setEnabled(False)

    def set_lines(self, lines: list[str]) -> None:
        """The reconciliation's lines: the first is the heading, the rest the text."""
        self.summary.setText(lines[0] if lines else "")
        self.text.setPlainText("\n".join(lines[1:]))
        self.again.setEnabled(True)

    def set_failed(self, why: str) -> None:
        self.summary.setText(f"Costs not read: {why}")
        self.again.setEnabled(True)
