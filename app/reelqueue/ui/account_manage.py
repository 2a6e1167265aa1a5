"""Manage one account (issue 23), from the "Manage…" button of its card: a new key (kept in
the OS keyring; the field never shows it), the limit, the daily cap, the default model
(gateways) and the base URL, "Confirm on this machine" when its key waits for that, and
Remove, whose confirmation says exactly what becomes of the account's waiting jobs.

The dialog only shows and asks; :mod:`reelqueue.ui.account_manage_part` runs the commands
(:mod:`reelqueue.application.accounts`, :mod:`reelqueue.application.account_manage`).
"""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QDialog,
    QFormLayout,
    QFrame,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPushButton,
    QSpinBox,
    QVBoxLayout,
    QWidget,
)

from reelqueue.application.accounts import DEFAULT_MODEL_KINDS, AccountChange
from reelqueue.domain.models import Account
from reelqueue.ui import theme
from reelqueue.ui.qtcompat import emit

CONFIRM_TIP = ("This machine does not send the account's key until you confirm the address "
               "its row names now (same as: reelqueue accounts confirm NAME).")


def parse_cap(text: str, what: str = "A daily cap") -> tuple[float | None, str | None]:
    """A cap as typed ('20', '$12.50'; empty or 'none': no cap) -> (USD or None, what is
    wrong with it or None); ``what`` names it in the words."""
    cleaned = text.strip().lstrip("$").strip().replace(",", "")
    if cleaned.casefold() in ("", "none", "off", "no"):
        return None, None
    try:
        value = float(cleaned)
    except ValueError:
        return None, f"“{text}” is not an amount: type one like 20 or 12.50, or leave it empty."
    if not 0 <= value < float("inf"):
        return None, f"{what} is 0 or more (0 starts nothing); leave it empty for no cap."
    return value, None


class ManageAccountDialog(QDialog):
    """Signals:
        keyChangeRequested(str, str): the account and its new key (never shown).
        changeRequested(str, object): the account and an AccountChange.
        removeRequested(str): the user asked to remove it (the part asks to confirm).
        confirmRequested(str, str): bind this machine's key of account (1) to the address
            (2) the dialog showed, and only if its row still names it.

    Attributes:
        account: the account as it was when the dialog was filled.
    """

    keyChangeRequested = Signal(str, str)
    changeRequested = Signal(str, object)
    removeRequested = Signal(str)
    confirmRequested = Signal(str, str)

    def __init__(self, account: Account, provider_title: str, *, team: bool,
                 default_base_url: str | None = None, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.account = account
        self.team = team
        self.setWindowTitle(f"Manage {account.name}")
        self.setModal(False)
        self.setMinimumWidth(540)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(22, 18, 22, 16)
        layout.setSpacing(12)
        title = QLabel(account.name)
        title.setProperty("role", "heading")
        title.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        subtitle = QLabel(provider_title + (" · team account" if team else ""))
        subtitle.setProperty("role", "muted")
        layout.addWidget(title)
        layout.addWidget(subtitle)
        if team:
            note = QLabel("On a team database an account keeps its name (every machine "
                          "keeps its key under it): it cannot be renamed here.")
            note.setProperty("role", "muted")
            note.setWordWrap(True)
            layout.addWidget(note)

        # Waiting for "accounts confirm" on this machine (shown by set_confirm).
        self.confirm_box = QFrame()
        self.confirm_box.setObjectName("panel")
        confirm_row = QHBoxLayout(self.confirm_box)
        confirm_row.setContentsMargins(12, 8, 12, 8)
        self.confirm_label = QLabel()
        self.confirm_label.setWordWrap(True)
        self.confirm_button = QPushButton("Confirm on this machine")
        self.confirm_button.setToolTip(CONFIRM_TIP)
        self.confirm_address = ""  # the address shown with the words (set_confirm)
        self.confirm_button.clicked.connect(lambda: emit(
            self.confirmRequested, self.account.name, self.confirm_address))
        confirm_row.addWidget(self.confirm_label, 1)
        confirm_row.addWidget(self.confirm_button)
        self.confirm_box.hide()
        layout.addWidget(self.confirm_box)

        form = QFormLayout()
        form.setVerticalSpacing(10)
        self.key = QLineEdit()
        self.key.setEchoMode(QLineEdit.EchoMode.Password)  # never shown, not even on ask
        self.key.setPlaceholderText("Paste a new API key" if account.key_ref
                                    else "This account has no key")
        self.key.setEnabled(bool(account.key_ref))
        self.key_button = QPushButton("Change key")
        self.key_button.setToolTip("Checked with the provider's cheapest read-only call, "
                                   "then kept in this machine's keyring (never in "
                                   "ReelQueue's files)")
        self.key_button.setVisible(bool(account.key_ref))  # a keyless account: nothing to do
        self.key_button.clicked.connect(self._change_key)
        key_row = QHBoxLayout()
        key_row.addWidget(self.key, 1)
        key_row.addWidget(self.key_button)
        form.addRow("API key", key_row)
        self.capacity = QSpinBox()
        self.capacity.setRange(1, 999)
        self.capacity.setSuffix(" renders at once")
        self.capacity.setValue(account.capacity)
        form.addRow("Limit", self.capacity)
        self.daily_cap = QLineEdit()
        self.daily_cap.setPlaceholderText("no cap (USD a day, e.g. 20)")
        cap = account.settings.get("daily_cap")
        self.daily_cap.setText("" if cap is None else f"{float(cap):g}")
        form.addRow("Daily cap", self.daily_cap)
        self.model: QLineEdit | None = None
        if account.provider in DEFAULT_MODEL_KINDS:
            self.model = QLineEdit(str(account.settings.get("model") or ""))
            self.model.setPlaceholderText("the gateway's model for rows that name none")
            form.addRow("Model", self.model)
        self.base_url = QLineEdit(account.base_url or "")
        self.base_url.setPlaceholderText(default_base_url or "provider default")
        form.addRow("Base URL", self.base_url)
        layout.addLayout(form)
        self.url_note = QLabel()
        self.url_note.setProperty("role", "muted")
        self.url_note.setWordWrap(True)
        self.url_note.setText(
            "Changing the address: this machine sends the key there at once; every other "
            "machine of the team must confirm it first (“Confirm on this machine” in its "
            "window, or: reelqueue accounts confirm " + account.name + ")."
            if team else "Changing the address: the key is sent there from now on.")
        layout.addWidget(self.url_note)

        self.status = QLabel()
        self.status.setWordWrap(True)
        self.status.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.status.hide()  # shown with the first word it has to say
        layout.addWidget(self.status)

        buttons = QHBoxLayout()
        self.remove_button = QPushButton("Remove…")
        self.remove_button.setToolTip("Remove the account (you are told what becomes of its "
                                      "waiting jobs before anything is done)")
        self.remove_button.clicked.connect(lambda: emit(self.removeRequested,
                                                        self.account.name))
        buttons.addWidget(self.remove_button)
        buttons.addStretch(1)
        close = QPushButton("Close")
        close.clicked.connect(self.reject)
        self.save_button = QPushButton("Save")
        self.save_button.setProperty("primary", True)
        self.save_button.setDefault(True)
        self.save_button.clicked.connect(self._save)
        buttons.addWidget(close)
        buttons.addWidget(self.save_button)
        layout.addLayout(buttons)

    # -- what the user asked -----------------------------------------------------------
    def _change_key(self) -> None:
        key = self.key.text().strip()
        if not key:
            self.set_result(False, "Paste the new key first.")
            return
        self.key.clear()  # not kept in the dialog once handed over
        emit(self.keyChangeRequested, self.account.name, key)

    def change(self) -> tuple[AccountChange | None, str | None]:
        """What the form changes (None: nothing), or what is wrong with it."""
        account = self.account
        values: dict[str, object] = {}
        if self.capacity.value() != account.capacity:
            values["capacity"] = self.capacity.value()
        cap, problem = parse_cap(self.daily_cap.text())
        if problem:
            return None, problem
        old_cap = account.settings.get("daily_cap")
        if cap != (None if old_cap is None else float(old_cap)):
            values.update({"daily_cap": cap} if cap is not None else {"clear_daily_cap": True})
        if self.model is not None:
            model = self.model.text().strip()
            if model and model != (account.settings.get("model") or ""):
                values["model"] = model
        url = self.base_url.text().strip()
        if url and url != (account.base_url or ""):
            values["base_url"] = url
        if not values:
            return None, None
        return AccountChange(**values), None  # type: ignore[arg-type]

    def _save(self) -> None:
        change, problem = self.change()
        if problem:
            self.set_result(False, problem)
            return
        if change is None:
            self.set_result(True, "Nothing to change.")
            return
        emit(self.changeRequested, self.account.name, change)

    # -- what the part says back -------------------------------------------------------
    def set_account(self, account: Account) -> None:
        """The account as it is now (after a change): the form's starting point."""
        self.account = account
        self.capacity.setValue(account.capacity)
        cap = account.settings.get("daily_cap")
        self.daily_cap.setText("" if cap is None else f"{float(cap):g}")
        self.base_url.setText(account.base_url or "")
        if self.model is not None:
            self.model.setText(str(account.settings.get("model") or ""))

    def set_confirm(self, words: str | None, address: str = "") -> None:
        """Show "Confirm on this machine" with why (None: nothing to confirm) and the
        address the key would be sent to, the one Confirm binds."""
        self.confirm_address = address
        if words is not None and address and address not in words:
            words = f"{words} Confirm sends it to {address}."
        self.confirm_label.setText(words or "")
        self.confirm_box.setVisible(words is not None)
        self.confirm_button.setEnabled(True)

    def set_busy(self, text: str) -> None:
        self.status.setStyleSheet(f"color: {theme.tokens().muted};")
        self.status.setText(text)
        self.status.show()
        for button in (self.key_button, self.save_button, self.remove_button,
                       self.confirm_button):
            button.setEnabled(False)

    def set_result(self, ok: bool, text: str) -> None:
        tint = theme.tokens().success if ok else theme.tokens().danger
        self.status.setStyleSheet(f"color: {tint};")
        self.status.setText(text)
        self.status.show()
        self.key_button.setEnabled(bool(self.account.key_ref))
        for button in (self.save_button, self.remove_button, self.confirm_button):
            button.setEnabled(True)
