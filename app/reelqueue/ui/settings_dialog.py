"""The settings: folders and names, retries, crash take-over, crash behaviour, theme, and
serving the HTTP API from this window. Non-modal. Wording is plain: no "lease", no
"backoff"."""

from __future__ import annotations

from dataclasses import replace

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QDialog,
    QDoubleSpinBox,
    QFileDialog,
    QFormLayout,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPushButton,
    QSpinBox,
    QVBoxLayout,
    QWidget,
)

from reelqueue.ui import theme
from reelqueue.ui.qtcompat import emit
from reelqueue.ui.settings import THEMES, Settings, team_store_problem

TEAM_SECTION = "TEAM QUEUE · APPLIES AFTER A RESTART"
TEAM_NOTE = ("Applies after a restart: ReelQueue opens the team queue the next time it "
             "starts (--store or REELQUEUE_STORE, when given, win over it).")


class SettingsDialog(QDialog):
    """Signals:
        saved(object): the new Settings.
    """

    saved = Signal(object)

    def __init__(self, settings: Settings, default_output: str,
                 parent: QWidget | None = None, api_status: str = "") -> None:
        super().__init__(parent)
        self.setWindowTitle("Settings")
        self.setModal(False)
        self.setMinimumWidth(560)
        self.settings = settings
        layout = QVBoxLayout(self)
        layout.setContentsMargins(22, 18, 22, 16)
        layout.setSpacing(12)
        title = QLabel("Settings")
        title.setProperty("role", "heading")
        layout.addWidget(title)
        form = QFormLayout()
        form.setVerticalSpacing(10)

        def section(text: str) -> None:
            label = QLabel(text)
            label.setProperty("role", "section")
            form.addRow(label)

        section("OUTPUT")
        self.output = QLineEdit(settings.output_dir)
        self.output.setPlaceholderText(default_output)
        browse = QPushButton("Browse…")
        browse.clicked.connect(self._browse)
        row = QHBoxLayout()
        row.addWidget(self.output, 1)
        row.addWidget(browse)
        form.addRow("Output folder", row)
        self.template = QLineEdit(settings.filename_template)
        self.template.setToolTip("{row:03}, {name}, {seed}, {model}, {provider}, {date}, "
                                 "{n}, {id}, {batch}")
        form.addRow("File names", self.template)

        section("RETRIES")
        self.attempts = QSpinBox()
        self.attempts.setRange(1, 100)
        self.attempts.setValue(settings.max_attempts)
        self.attempts.setSuffix(" at most")
        form.addRow("Tries per job", self.attempts)
        self.retry_base = QDoubleSpinBox()
        self.retry_base.setRange(0.1, 3600)
        self.retry_base.setValue(settings.retry_base)
        self.retry_base.setSuffix(" s")
        self.retry_cap = QDoubleSpinBox()
        self.retry_cap.setRange(0.1, 86_400)
        self.retry_cap.setValue(settings.retry_cap)
        self.retry_cap.setSuffix(" s")
        backoff = QHBoxLayout()
        backoff.setSpacing(8)
        self.retry_base_label = QLabel("first up to")
        self.retry_cap_label = QLabel("at most")
        for label, box in ((self.retry_base_label, self.retry_base),
                           (self.retry_cap_label, self.retry_cap)):
            label.setProperty("role", "muted")
            label.setBuddy(box)
            backoff.addWidget(label)
            backoff.addWidget(box, 1)
            backoff.addSpacing(6)  # the labels touched the box before them
        form.addRow("Wait between tries", backoff)
        self.lease = QDoubleSpinBox()
        self.lease.setRange(5, 3600)
        self.lease.setValue(settings.lease_seconds)
        self.lease.setSuffix(" s")
        self.lease.setToolTip("How long a render may go without a sign of life from this "
                              "ReelQueue (a crash, a sleeping laptop) before another "
                              "ReelQueue on the same journal may pick it up. The render is "
                              "picked up, never paid for twice.")
        form.addRow("Pick up a silent render after", self.lease)

        section(TEAM_SECTION)
        self.team_store = QLineEdit(settings.team_store)
        self.team_store.setPlaceholderText("postgresql://user@host/db")
        self.team_store.setToolTip(
            "Empty: this computer's own queue. Share one queue and the accounts' limits "
            "with other machines through a PostgreSQL database. No password in the "
            "address: it comes from this machine's keyring (the password field beside "
            "it) or a pgpass file.")
        self.team_password = QLineEdit()
        self.team_password.setEchoMode(QLineEdit.EchoMode.Password)
        self.team_password.setPlaceholderText("password")
        self.team_password.setToolTip("The database password, kept in this machine's OS "
                                      "keyring (never in the settings, the database or a "
                                      "log); leave it empty to use the keyring's or a "
                                      "pgpass file's")
        team_row = QHBoxLayout()
        team_row.setSpacing(8)
        team_row.addWidget(self.team_store, 3)
        team_row.addWidget(self.team_password, 2)
        form.addRow("Database", team_row)
        self.team_store.setToolTip(f"{self.team_store.toolTip()} {TEAM_NOTE}")
        self.team_note = QLabel()  # why the address cannot be saved (shown only then)
        self.team_note.setWordWrap(True)
        self.team_note.hide()

        section("START-UP AND LOOK")
        self.paused_after_crash = QCheckBox("Start paused after a crash, so I can check first")
        self.paused_after_crash.setChecked(settings.start_paused_after_crash)
        form.addRow("", self.paused_after_crash)
        self.theme = QComboBox()
        for name in THEMES:
            self.theme.addItem({"system": "Follow the system", "light": "Light",
                                "dark": "Dark"}[name], name)
        self.theme.setCurrentIndex(max(0, self.theme.findData(settings.theme)))
        form.addRow("Theme", self.theme)

        section("HTTP API")
        self.serve_api = QCheckBox("Serve the HTTP API to other programs")
        self.serve_api.setChecked(settings.serve_api)
        self.serve_api.setToolTip("The same server as 'reelqueue serve', on this window's "
                                  "queue, over HTTPS; clients need a token "
                                  "('reelqueue tokens add NAME').")
        form.addRow("", self.serve_api)
        self.api_listen = QLineEdit(settings.api_listen)
        self.api_listen.setToolTip("HOST:PORT. 127.0.0.1 is this computer only; another "
                                   "address lets other computers in.")
        form.addRow("Listen on", self.api_listen)
        self.api_max_waiting = QSpinBox()
        self.api_max_waiting.setRange(1, 100_000_000)
        self.api_max_waiting.setGroupSeparatorShown(True)
        self.api_max_waiting.setValue(settings.api_max_waiting)
        self.api_max_waiting.setSuffix(" waiting jobs")
        self.api_max_waiting.setToolTip("Submits are refused (try later) while this many "
                                        "jobs wait.")
        form.addRow("Refuse submits at", self.api_max_waiting)
        self.api_status = QLabel(api_status)
        self.api_status.setWordWrap(True)
        self.api_status.setProperty("role", "muted")
        self.api_status.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        form.addRow("Now", self.api_status)
        layout.addLayout(form)
        layout.addWidget(self.team_note)
        note = QLabel("Tries per job apply to sheets imported from now on; the waits and "
                      "the pick-up time apply the next time ReelQueue starts.")
        note.setWordWrap(True)
        note.setProperty("role", "muted")
        layout.addWidget(note)

        buttons = QHBoxLayout()
        buttons.addStretch(1)
        cancel = QPushButton("Cancel")
        cancel.clicked.connect(self.reject)
        save = QPushButton("Save")
        save.setProperty("primary", True)
        save.setDefault(True)
        save.clicked.connect(self._save)
        buttons.addWidget(cancel)
        buttons.addWidget(save)
        layout.addLayout(buttons)

    def _browse(self) -> None:
        dialog = QFileDialog(self, "Output folder", self.output.text())
        dialog.setFileMode(QFileDialog.FileMode.Directory)
        dialog.fileSelected.connect(self.output.setText)
        dialog.open()

    def values(self) -> Settings:
        return replace(
            self.settings, output_dir=self.output.text().strip(),
            filename_template=self.template.text().strip() or self.settings.filename_template,
            max_attempts=self.attempts.value(), retry_base=self.retry_base.value(),
            retry_cap=max(self.retry_cap.value(), self.retry_base.value()),
            lease_seconds=self.lease.value(),
            start_paused_after_crash=self.paused_after_crash.isChecked(),
            theme=str(self.theme.currentData()), serve_api=self.serve_api.isChecked(),
            api_listen=self.api_listen.text().strip(),
            api_max_waiting=self.api_max_waiting.value(),
            team_store=self.team_store.text().strip()).checked()

    def team_password_text(self) -> str:
        """The database password typed (saved in the keyring, not in the settings)."""
        return self.team_password.text()

    def _save(self) -> None:
        problem = team_store_problem(self.team_store.text().strip())
        if problem is None and self.team_password.text() and not self.team_store.text().strip():
            problem = "A database password needs the team queue's address."
        if problem:
            self.team_note.setText(problem)
            self.team_note.show()
            self.team_note.setStyleSheet(f"color: {theme.color('danger').name()};")
            self.team_store.setFocus()
            return
        emit(self.saved, self.values())
        self.accept()
