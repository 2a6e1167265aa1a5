"""The controller's part for "Manage account" (issue 23): opens the dialog from a card's
"Manage…" button and runs what it asks through the application layer: a new key
(:func:`~reelqueue.application.account_manage.change_key`), a change
(:func:`~reelqueue.application.accounts.update_account`), "Confirm on this machine"
(:func:`~reelqueue.application.accounts.confirm_account`) and removal, after a
confirmation that says what becomes of the waiting jobs
(:func:`~reelqueue.application.account_manage.removal_effect`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol

from PySide6.QtCore import QObject
from PySide6.QtWidgets import QMessageBox

from reelqueue.application import account_manage, accounts, team
from reelqueue.application.accounts import AccountChange
from reelqueue.domain.errors import KnownError, ProviderError
from reelqueue.domain.models import Account
from reelqueue.ui.account_manage import ManageAccountDialog

if TYPE_CHECKING:
    from reelqueue.application.views import AccountSummary
    from reelqueue.ui.accounts_view import AccountCard
    from reelqueue.ui.dialogs import DialogKeeper
    from reelqueue.ui.main_window import MainWindow
    from reelqueue.ui.session import Spawn, WindowSession


class AccountList(Protocol):
    """The window's accounts as they change (the controller): read, and read again after
    a change."""

    @property
    def summaries(self) -> Sequence[AccountSummary]: ...

    async def refresh_accounts(self) -> None: ...


class AccountManagePart(QObject):
    """Attributes: dialogs: the open dialogs by account name. box: the last removal
    question (for tests)."""

    def __init__(self, session: WindowSession, window: MainWindow, keeper: DialogKeeper,
                 spawn: Spawn, account_list: AccountList, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.session = session
        self.window = window
        self.keeper = keeper
        self.spawn = spawn
        self.account_list = account_list
        self.dialogs: dict[str, ManageAccountDialog] = {}
        self.box: QMessageBox | None = None

    def connect_card(self, card: AccountCard) -> None:
        card.manageRequested.connect(self.open)

    def _account(self, name: str) -> Account | None:
        for summary in self.account_list.summaries:
            if summary.account.name == name:
                return summary.account
        return None

    def open(self, name: str) -> ManageAccountDialog | None:
        dialog = self.dialogs.get(name)
        if dialog is not None:
            dialog.raise_()
            dialog.activateWindow()
            return dialog
        account = self._account(name)
        if account is None:
            return None
        session = self.session
        try:
            info = session.app.providers.get(account.provider)
            title, default_url = info.title, info.default_base_url
        except KnownError:
            title, default_url = account.provider, None
        dialog = ManageAccountDialog(account, title, team=team.is_team_session(session.app),
                                     default_base_url=default_url, parent=self.window)
        dialog.keyChangeRequested.connect(
            lambda who, key: self.spawn(self._change_key(dialog, who, key), "account"))
        dialog.changeRequested.connect(
            lambda who, change: self.spawn(self._change(dialog, who, change), "account"))
        dialog.confirmRequested.connect(
            lambda who, address: self.spawn(self._confirm(dialog, who, address), "account"))
        dialog.removeRequested.connect(
            lambda who: self.spawn(self._ask_remove(dialog, who), "account"))
        dialog.finished.connect(lambda _result: self._closed(name, dialog))
        self.dialogs[name] = dialog
        self.keeper.open.append(dialog)  # closed with the window
        dialog.show()
        self.spawn(self._load_confirm(dialog, name), "account")
        return dialog

    def _closed(self, name: str, dialog: ManageAccountDialog) -> None:
        if self.dialogs.get(name) is dialog:
            del self.dialogs[name]
        if dialog in self.keeper.open:
            self.keeper.forget(dialog)

    async def _load_confirm(self, dialog: ManageAccountDialog, name: str) -> None:
        try:
            question = await account_manage.confirm_words(self.session.app, name)
        except KnownError:
            question = None
        if self._shown(dialog):
            if question is None:
                dialog.set_confirm(None)
            else:
                dialog.set_confirm(question.words, question.address)

    def _shown(self, dialog: ManageAccountDialog) -> bool:
        """The dialog is still open (an answer may come after it was closed)."""
        return dialog in self.dialogs.values()

    async def _change_key(self, dialog: ManageAccountDialog, name: str, key: str) -> None:
        dialog.set_busy("Checking the new key with the provider…")
        try:
            text = await account_manage.change_key(self.session.app, name, key)
        except (KnownError, ProviderError) as exc:  # never quotes the key
            dialog.set_result(False, f"The key was not changed: {exc}")
            return
        if self._shown(dialog):
            dialog.set_result(True, text)
        await self._reload(dialog, name)

    async def _change(self, dialog: ManageAccountDialog, name: str,
                      change: AccountChange) -> None:
        dialog.set_busy("Saving…")
        try:
            account = await accounts.update_account(self.session.app, name, change)
        except KnownError as exc:
            dialog.set_result(False, f"Nothing was changed: {exc}")
            return
        text = f"Account {name} saved."
        if change.base_url is not None and team.is_team_session(self.session.app):
            text += (" This machine sends its key to the new address; every other machine "
                     "of the team waits until it is confirmed there (“Confirm on this "
                     f"machine”, or: reelqueue accounts confirm {name}).")
        if self._shown(dialog):
            dialog.set_account(account)
            dialog.set_result(True, text)
        await self._reload(dialog, name)

    async def _confirm(self, dialog: ManageAccountDialog, name: str, address: str) -> None:
        """Binds the key to the address the dialog showed, never to one the team database
        put in the row since (issue 34)."""
        dialog.set_busy("Confirming…")
        try:
            result = await accounts.confirm_account(self.session.app, name,
                                                    expect_url=address)
        except KnownError as exc:
            dialog.set_result(False, str(exc))
            return
        if self._shown(dialog):
            dialog.set_result(result.ok, result.message)
        await self._reload(dialog, name)

    async def _reload(self, dialog: ManageAccountDialog, name: str) -> None:
        await self.account_list.refresh_accounts()
        await self._load_confirm(dialog, name)

    async def _ask_remove(self, dialog: ManageAccountDialog, name: str) -> None:
        try:
            effect = await account_manage.removal_effect(self.session.app, name)
        except KnownError as exc:
            dialog.set_result(False, str(exc))
            return
        if not self._shown(dialog):
            return
        box = QMessageBox(QMessageBox.Icon.Warning, f"Remove {name}?",
                          f"Remove the account “{name}”?",
                          QMessageBox.StandardButton.Cancel, dialog)
        box.setInformativeText(effect.text())
        remove = box.addButton("Remove", QMessageBox.ButtonRole.DestructiveRole)
        box.setDefaultButton(QMessageBox.StandardButton.Cancel)
        remove.setEnabled(effect.running == 0)
        remove.clicked.connect(lambda: self.spawn(self._remove(dialog, name), "account"))
        self.box = box
        box.open()

    async def _remove(self, dialog: ManageAccountDialog, name: str) -> None:
        dialog.set_busy(f"Removing {name}…")
        try:
            await accounts.remove_account(self.session.app, name)
        except KnownError as exc:
            dialog.set_result(False, f"{name} was not removed: {exc}")
            return
        await self.account_list.refresh_accounts()
        self.window.banners.show_banner("info", f"Account {name} removed.",
                                        key=f"removed:{name}")
        if self._shown(dialog):
            dialog.accept()
