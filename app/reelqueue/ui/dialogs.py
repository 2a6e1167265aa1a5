"""The window's dialogs and their commands: import (plan, then apply), a job's detail,
connect an account, settings, export and the output folder. Dialogs are modeless; each
is kept in :attr:`DialogKeeper.open` until it closes."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Protocol

from PySide6.QtWidgets import QApplication, QFileDialog

from reelqueue.application import accounts, imports, team, views
from reelqueue.application.imports import ImportOptions, ImportPlan
from reelqueue.application.providers import plugin_report
from reelqueue.application.spend_reconcile import reconcile_spend
from reelqueue.domain.errors import KnownError, ProviderError
from reelqueue.ui import files, theme
from reelqueue.ui import format as fmt
from reelqueue.ui.about import AboutDialog
from reelqueue.ui.account_dialog import AccountDialog
from reelqueue.ui.banner import BannerAction
from reelqueue.ui.costs import CostsDialog
from reelqueue.ui.import_dialog import ImportDialog
from reelqueue.ui.instances import InstancesDialog
from reelqueue.ui.job_detail import JobDetailDialog
from reelqueue.ui.session import AccountDraft
from reelqueue.ui.settings import Settings, save_settings
from reelqueue.ui.settings_dialog import SettingsDialog
from reelqueue.ui.thumbnails import Thumbnailer

if TYPE_CHECKING:
    from reelqueue.application.views import AccountSummary
    from reelqueue.ui.main_window import MainWindow
    from reelqueue.ui.session import Spawn, WindowSession


class JobCommands(Protocol):
    """The queue's commands a job's detail view runs (:class:`QueueActions`)."""

    async def retry_now(self, job_ids: list[int], seed: int | None, *,
                        confirmed: bool = False) -> None: ...

    async def cancel_now(self, job_ids: list[int], rendering: int = 0) -> None: ...

    async def use_render(self, job_id: int, provider_job_id: str) -> None: ...

    async def create_again(self, job_id: int, *, confirmed: bool = False) -> None: ...

    async def read_counts(self, job_id: int) -> None: ...


class DialogHost(Protocol):
    """What the dialogs read of the window's state as it changes, and what they ask it
    to do after a command (the controller)."""

    @property
    def summaries(self) -> Sequence[AccountSummary]: ...

    @property
    def batches(self) -> Mapping[int, str]: ...

    @property
    def actions(self) -> JobCommands: ...

    async def refresh_accounts(self) -> None: ...

    async def refresh_batches(self) -> None: ...

    async def load_rows(self) -> None: ...

    def refresh_cards(self, now: float | None = None) -> None: ...

    def start_from_banner(self) -> None: ...


class DialogKeeper:
    """Opens the dialogs, runs what they ask through the session, and forgets them when
    they close.

    Attributes:
        open: the dialogs open now (file dialogs and questions too).
        thumbnails: completed videos' pictures for the job detail (a worker thread).
    """

    def __init__(self, session: WindowSession, window: MainWindow, thumbnails: Thumbnailer,
                 spawn: Spawn, host: DialogHost) -> None:
        self.session = session
        self.window = window
        self.thumbnails = thumbnails
        self.spawn = spawn
        self.host = host
        self.open: list[Any] = []
        self._plan_serial = 0
        self.instances: InstancesDialog | None = None  # the Instances view, while open
        self.costs: CostsDialog | None = None  # the Costs view, while open

    def request_import(self, path: Path | None) -> None:
        if path is not None:
            self.open_import(Path(path))
            return
        dialog = QFileDialog(self.window, "Import a sheet of prompts")
        dialog.setFileMode(QFileDialog.FileMode.ExistingFile)
        dialog.setNameFilter("Sheets (*.csv *.tsv *.tab *.txt *.xlsx *.xlsm *.xlsb *.xls *.ods)")
        dialog.fileSelected.connect(lambda name: self.open_import(Path(name)))
        dialog.open()
        self.open.append(dialog)

    def open_import(self, path: Path) -> ImportDialog:
        dialog = ImportDialog(path, self.session.import_options(), self.window,
                              providers=self.session.app.providers)
        dialog.replanRequested.connect(lambda options: self.spawn(self._plan(dialog, options)))
        dialog.importRequested.connect(
            lambda plan, rows: self.spawn(self._apply(dialog, plan, rows), "import"))
        dialog.finished.connect(lambda _r: self.forget(dialog))
        self.open.append(dialog)
        dialog.show()
        self.spawn(self._plan(dialog, dialog.current_options()), "plan-import")
        return dialog

    async def _plan(self, dialog: ImportDialog, options: ImportOptions) -> None:
        self._plan_serial += 1
        serial = self._plan_serial
        try:
            plan = await imports.plan_import(self.session.app, dialog.path, options)
        except KnownError as exc:
            if serial == self._plan_serial:
                dialog.set_error(str(exc))
            return
        if serial == self._plan_serial:
            dialog.set_plan(plan)

    async def _apply(self, dialog: ImportDialog, plan: ImportPlan, rows: int | None) -> None:
        try:
            result = await imports.apply_import(self.session.app, plan, rows,
                                                max_spend=dialog.spend_cap())
        except KnownError as exc:
            dialog.set_error(str(exc))
            return
        dialog.accept()
        await self.host.refresh_batches()
        await self.host.load_rows()
        what = f"a test run of {fmt.count(result.added, 'job')}" if rows is not None else \
            fmt.count(result.added, "new job")
        text = (f"Imported {what} into batch “{result.batch_name}”"
                + (f" ({fmt.number(result.already_present)} "
                   f"{fmt.plural(result.already_present, 'was')} already there)"
                   if result.already_present else "") + ".")
        actions: list[BannerAction] = (
            [("Start", self.host.start_from_banner)] if self.window.paused else [])
        if not self.host.summaries:
            text += " Connect an account to render them."
            actions = [("Connect an account…", self.show_account_dialog)]
        self.window.banners.show_banner("success", text, actions, key="imported")

    def _chosen_batch(self) -> int | None:
        batch = self.window.batch_filter.currentData()
        return batch if batch is not None else max(self.host.batches, default=None)

    def export(self) -> None:
        batch = self._chosen_batch()
        if batch is None:
            self.window.banners.show_banner("info", "Import a sheet first; there is nothing "
                                            "to export yet.", key="export")
            return
        dialog = QFileDialog(self.window, "Export results", str(self._output_folder(batch)))
        dialog.setAcceptMode(QFileDialog.AcceptMode.AcceptSave)
        dialog.setNameFilters(["CSV (*.csv)", "Excel workbook (*.xlsx)"])
        dialog.selectFile(f"{self.host.batches.get(batch, 'results')} results.csv")
        dialog.fileSelected.connect(lambda name: self.spawn(self._export(batch, Path(name))))
        dialog.open()
        self.open.append(dialog)

    async def _export(self, batch: int, path: Path) -> None:
        kind: Literal["csv", "xlsx"] = "xlsx" if path.suffix.lower() == ".xlsx" else "csv"
        count = await imports.export_batch(self.session.app, batch, path, kind)
        self.window.banners.show_banner("success", f"Exported {fmt.count(count, 'row')} to "
                                        f"{path}.", [("Show", lambda: self._reveal(path))],
                                        key="export")

    def _reveal(self, path: Path) -> None:
        if not files.reveal(path):
            self.window.no_file_opener(path)

    def open_output_folder(self) -> None:
        folder = self._output_folder()
        folder.mkdir(parents=True, exist_ok=True)
        if not files.open_path(folder):
            self.window.no_file_opener(folder)

    def _output_folder(self, batch: int | None = None) -> Path:
        """The batch's folder (default: the one chosen in the filter), else the output
        root. Exports start there too, beside the videos."""
        settings = self.session.settings
        folder = (Path(settings.output_dir) if settings.output_dir
                  else self.session.ctx.videos_dir)
        if batch is None:
            batch = self.window.batch_filter.currentData()
        if batch is not None:
            rows = [r for r in self.window.model.table.rows[:1000] if r.batch_id == batch]
            if rows:
                folder = Path(rows[0].output_path).parent
        return folder

    def reveal_job(self, job_id: int) -> None:
        row = self.window.model.table.row(job_id)
        if row is not None:
            self._reveal(Path(row.output_path))

    def forget(self, dialog: Any) -> None:
        if hasattr(dialog, "stop_timers"):
            dialog.stop_timers()
        if dialog in self.open:
            self.open.remove(dialog)
        dialog.deleteLater()

    def show_job(self, job_id: int) -> JobDetailDialog:
        for dialog in self.open:
            if isinstance(dialog, JobDetailDialog) and dialog.job_id == job_id:
                dialog.raise_()
                dialog.activateWindow()
                return dialog
        dialog = JobDetailDialog(job_id, self.window, thumbnails=self.thumbnails)
        actions = self.host.actions
        dialog.retryRequested.connect(lambda jid, seed: self.spawn(
            self._detail_command(dialog, actions.retry_now([jid], seed))))
        dialog.cancelRequested.connect(lambda jid: self.spawn(
            self._detail_command(dialog, actions.cancel_now([jid]))))
        dialog.renderChosen.connect(lambda jid, rid: self.spawn(
            self._detail_command(dialog, actions.use_render(jid, rid))))
        dialog.createAgainRequested.connect(lambda jid: self.spawn(
            self._detail_command(dialog, actions.create_again(jid))))
        dialog.countsRequested.connect(lambda jid: self.spawn(
            self._detail_command(dialog, actions.read_counts(jid)), "create-evidence"))
        dialog.revealRequested.connect(lambda path: files.reveal(Path(path)))
        dialog.finished.connect(lambda _r: self.forget(dialog))
        self.open.append(dialog)
        dialog.show()
        self.spawn(self.load_detail(dialog), "job-detail")
        return dialog

    async def _detail_command(self, dialog: JobDetailDialog, command: Any) -> None:
        await command
        await self.load_detail(dialog)

    async def load_detail(self, dialog: JobDetailDialog) -> None:
        detail = await views.job_detail(self.session.app, dialog.job_id)
        if detail is None or dialog not in self.open:
            return
        dialog.set_detail(detail)  # it asks self.thumbnails for a completed job's picture

    def show_account_dialog(self) -> AccountDialog:
        dialog = AccountDialog({s.account.name for s in self.host.summaries}, self.window,
                               providers=self.session.app.providers)
        dialog.testRequested.connect(lambda draft: self.spawn(self._test_key(dialog, draft)))
        dialog.connectRequested.connect(
            lambda draft: self.spawn(self._add_account(dialog, draft)))
        dialog.finished.connect(lambda _r: self.forget(dialog))
        self.open.append(dialog)
        dialog.show()
        return dialog

    async def _test_key(self, dialog: AccountDialog, draft: AccountDraft) -> None:
        dialog.set_busy("Asking the provider…")
        try:
            await accounts.test_key(self.session.app, draft)
        except (KnownError, ProviderError) as exc:
            dialog.set_result(False, str(exc))
            return
        dialog.set_result(True, "Key accepted by the provider.")

    async def _add_account(self, dialog: AccountDialog, draft: AccountDraft) -> None:
        dialog.set_busy("Checking the key and storing it in the OS keyring…")
        try:
            await accounts.add_account(self.session.app, draft, check=True)
        except (KnownError, ProviderError) as exc:
            dialog.set_result(False, str(exc))
            return
        dialog.accept()
        await self.host.refresh_accounts()
        self.window.banners.show_banner("success", f"Account {draft.name} connected "
                                        f"(limit {draft.capacity}).", key="account")

    def show_instances(self) -> InstancesDialog:
        """The machines sharing the team queue (refreshed on the controller's tick)."""
        if self.instances is not None:
            self.instances.raise_()
            self.instances.activateWindow()
            return self.instances
        dialog = InstancesDialog(self.window)
        self.instances = dialog

        def closed(_result: int) -> None:
            self.instances = None
            self.forget(dialog)

        dialog.finished.connect(closed)
        self.open.append(dialog)
        dialog.show()
        self.spawn(self.refresh_instances(), "instances")
        return dialog

    async def refresh_instances(self) -> None:
        dialog = self.instances
        if dialog is None:
            return
        machines = await team.machines(self.session.app)
        unserved = await team.unserved(self.session.app, machines)
        if self.instances is dialog:  # not closed meanwhile
            dialog.set_machines(machines, unserved)

    def show_costs(self) -> CostsDialog:
        """The cost reconciliation (issue 32 item 5), read from the providers as a task."""
        if self.costs is not None:
            self.costs.raise_()
            self.costs.activateWindow()
            return self.costs
        dialog = CostsDialog(self.window)
        self.costs = dialog

        def closed(_result: int) -> None:
            self.costs = None
            self.forget(dialog)

        dialog.finished.connect(closed)
        dialog.again.clicked.connect(lambda: self.spawn(self.refresh_costs(), "costs"))
        self.open.append(dialog)
        dialog.show()
        self.spawn(self.refresh_costs(), "costs")
        return dialog

    async def refresh_costs(self) -> None:
        dialog = self.costs
        if dialog is None:
            return
        dialog.reading()
        try:
            report = await reconcile_spend(self.session.app)
        except KnownError as exc:  # the journal is away, or a refusal: said in the dialog
            if self.costs is dialog:
                dialog.set_failed(str(exc))
            return
        if self.costs is dialog:  # not closed meanwhile
            dialog.set_lines(report.lines())

    def show_about(self) -> AboutDialog:
        """The version, the providers and the plug-ins (skipped ones with the reason)."""
        dialog = AboutDialog(self.session.app.providers, plugin_report(), self.window)
        dialog.finished.connect(lambda _r: self.forget(dialog))
        self.open.append(dialog)
        dialog.show()
        return dialog

    def show_settings(self) -> SettingsDialog:
        default = str(self.session.ctx.videos_dir)
        dialog = SettingsDialog(self.session.settings, default, self.window,
                                api_status=self.session.api_status())
        dialog.saved.connect(lambda settings: self.spawn(
            self._save_settings(settings, dialog.team_password_text())))
        dialog.finished.connect(lambda _r: self.forget(dialog))
        self.open.append(dialog)
        dialog.show()
        return dialog

    async def _api_banner_seen(self, text: str) -> None:
        """Remember (in the settings file) that the user has seen this API banner."""
        session = self.session
        if session.settings.api_banner_seen == text:
            return
        settings = replace(session.settings, api_banner_seen=text)
        session.settings = settings
        await asyncio.to_thread(save_settings, session.ctx.data_dir, settings)

    async def _save_settings(self, settings: Settings, team_password: str = "") -> None:
        old = self.session.settings
        # The dialog started from the settings of its opening: keep what the window
        # learnt since (the API banner seen).
        settings = replace(settings, api_banner_seen=old.api_banner_seen)
        await asyncio.to_thread(save_settings, self.session.ctx.data_dir, settings)
        self.session.settings = settings
        if team_password and settings.team_store:
            try:
                where = await asyncio.to_thread(
                    team.save_database_password, settings.team_store, team_password,
                    self.session.app.keys.keystore)
            except KnownError as exc:
                self.window.banners.show_banner(
                    "error", f"The database password was not saved: {exc}", key="team")
            else:
                self.window.banners.show_banner(
                    "success", f"Saved the password of {where} in this machine's keyring.",
                    key="team")
        if settings.team_store != old.team_store:
            self.window.banners.show_banner(
                "info", "The team queue setting applies the next time ReelQueue starts.",
                key="team-restart")
        if settings.theme != old.theme:
            app = QApplication.instance()
            if isinstance(app, QApplication):
                theme.apply_theme(app, settings.theme)
                self.host.refresh_cards()
        if (settings.serve_api, settings.api_listen, settings.api_max_waiting) != (
                old.serve_api, old.api_listen, old.api_max_waiting):
            await self.apply_api()

    async def apply_api(self, *, at_launch: bool = False) -> None:
        """Serve the HTTP API or stop it as the settings say, then say which in a banner
        (and in an open Settings dialog). At launch, a serving banner the user has already
        seen go (the same address and certificate) is not shown again; an error always
        is."""
        session = self.session
        await session.apply_api()
        banners = self.window.banners
        banners.remove_family("api:")
        status = session.api_status()
        if session.api is not None:
            text = f"HTTP API: {status}"
            if not (at_launch and session.settings.api_banner_seen == text):
                banner = banners.show_banner("info", text, key="api:serving")
                for gone in (banner.dismissed, banner.faded):
                    gone.connect(lambda: self.spawn(self._api_banner_seen(text),
                                                        "api-banner-seen"))
        elif session.api_error is not None:
            banners.show_banner("error", f"HTTP API: {status}", key="api:error")
        for dialog in self.open:
            if isinstance(dialog, SettingsDialog):
                dialog.api_status.setText(status)
