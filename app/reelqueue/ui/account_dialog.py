"""Connect an account: provider, name, key (hidden), limit, base URL, and "Test key".

Non-modal. The key goes to the OS keyring (never the journal); when no keyring is usable
the controller shows the keyring's own explanation here, with what to do.
"""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal, SignalInstance
from PySide6.QtWidgets import (
    QComboBox,
    QDialog,
    QFormLayout,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPushButton,
    QSpinBox,
    QVBoxLayout,
    QWidget,
)

from reelqueue.application.builtin_mock import on_builtin_mock
from reelqueue.application.providers import ProviderRegistry, builtin_registry
from reelqueue.ui import theme
from reelqueue.ui.qtcompat import emit
from reelqueue.ui.session import AccountDraft


class AccountDialog(QDialog):
    """Signals:
        testRequested(object): an AccountDraft whose key to test.
        connectRequested(object): an AccountDraft to connect.
    """

    testRequested = Signal(object)
    connectRequested = Signal(object)

    def __init__(self, taken_names: set[str], parent: QWidget | None = None,
                 providers: ProviderRegistry | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle("Connect an account")
        self.setModal(False)
        self.setMinimumWidth(520)
        self.taken = {name.casefold() for name in taken_names}
        self._providers = providers or builtin_registry()
        layout = QVBoxLayout(self)
        layout.setContentsMargins(22, 18, 22, 16)
        layout.setSpacing(12)
        title = QLabel("Connect an account")
        title.setProperty("role", "heading")
        hint = QLabel("The key is checked with the provider's cheapest read-only call and "
                      "stored in your system's keyring — never in ReelQueue's files.")
        hint.setWordWrap(True)
        hint.setProperty("role", "muted")
        layout.addWidget(title)
        layout.addWidget(hint)

        form = QFormLayout()
        form.setVerticalSpacing(10)
        self.provider = QComboBox()
        for kind in self._providers.kinds():
            self.provider.addItem(self._providers.get(kind).title, kind)
        self.name = QLineEdit()
        self.name.setPlaceholderText("e.g. Studio A")
        self.key = QLineEdit()
        self.key.setEchoMode(QLineEdit.EchoMode.Password)
        self.key.setPlaceholderText("Paste the API key")
        self.show_key = QPushButton("Show")
        self.show_key.setCheckable(True)
        self.show_key.toggled.connect(self._toggle_key)
        key_row = QHBoxLayout()
        key_row.addWidget(self.key, 1)
        key_row.addWidget(self.show_key)
        self.base_url = QLineEdit()
        self.base_url.setPlaceholderText("provider default")
        self.capacity = QSpinBox()
        self.capacity.setRange(1, 999)
        self.capacity.setSuffix(" renders at once")
        form.addRow("Provider", self.provider)
        form.addRow("Name", self.name)
        form.addRow("API key", key_row)
        form.addRow("Base URL", self.base_url)
        form.addRow("Limit", self.capacity)
        layout.addLayout(form)

        self.status = QLabel()
        self.status.setWordWrap(True)
        self.status.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        layout.addWidget(self.status)

        buttons = QHBoxLayout()
        self.test_button = QPushButton("Test key")
        self.test_button.clicked.connect(lambda: self._emit(self.testRequested))
        buttons.addWidget(self.test_button)
        buttons.addStretch(1)
        cancel = QPushButton("Cancel")
        cancel.clicked.connect(self.reject)
        self.connect_button = QPushButton("Connect")
        self.connect_button.setProperty("primary", True)
        self.connect_button.setDefault(True)
        self.connect_button.clicked.connect(lambda: self._emit(self.connectRequested))
        buttons.addWidget(cancel)
        buttons.addWidget(self.connect_button)
        layout.addLayout(buttons)
        self.provider.currentIndexChanged.connect(lambda _i: self._provider_changed())
        self._provider_changed()

    def _toggle_key(self, shown: bool) -> None:
        self.key.setEchoMode(QLineEdit.EchoMode.Normal if shown else QLineEdit.EchoMode.Password)
        self.show_key.setText("Hide" if shown else "Show")

    def _provider_changed(self) -> None:
        info = self._providers.get(self.provider.currentData())
        self.capacity.setValue(info.params.default_capacity)
        self.key.setPlaceholderText("Paste the API key" if info.requires_key
                                    else "Not needed for this provider")
        needs_url = info.default_base_url is None and not on_builtin_mock(info.kind, None)
        self.base_url.setPlaceholderText("required: https://…" if needs_url
                                         else "provider default")

    def draft(self) -> AccountDraft:
        return AccountDraft(name=self.name.text().strip(),
                            provider=str(self.provider.currentData()),
                            capacity=self.capacity.value(),
                            key=self.key.text().strip() or None,
                            base_url=self.base_url.text().strip() or None)

    def _emit(self, signal: SignalInstance) -> None:
        draft = self.draft()
        if not draft.name:
            self.set_result(False, "Give the account a name.")
            return
        if draft.name.casefold() in self.taken:
            self.set_result(False, f"An account named {draft.name!r} already exists.")
            return
        emit(signal, draft)

    def set_busy(self, text: str) -> None:
        self.status.setStyleSheet(f"color: {theme.tokens().muted};")
        self.status.setText(text)
        self.test_button.setEnabled(False)
        self.connect_button.setEnabled(False)

    def set_result(self, ok: bool, text: str) -> None:
        tint = theme.tokens().success if ok else theme.tokens().danger
        self.status.setStyleSheet(f"color: {tint};")
        self.status.setText(text)
        self.test_button.setEnabled(True)
        self.connect_button.setEnabled(True)
