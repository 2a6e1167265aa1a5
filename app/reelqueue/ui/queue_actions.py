"""What the user asks of the queue from the window: start, pause, cancel (asking first
when it may cost), retry (a price waits for the banner's button), retry failed, run the
demo again, queue order, batch pause, and the account cards' commands."""

from __future__ import annotations

import random
from collections.abc import Mapping
from dataclasses import replace
from typing import TYPE_CHECKING, Any, Protocol

from PySide6.QtWidgets import QInputDialog, QMessageBox

from reelqueue.application import accounts, imports, jobs, status
from reelqueue.application.accounts import AccountChange
from reelqueue.application.jobs import RetryPlan
from reelqueue.application.retry_words import retry_summary
from reelqueue.application.words import OUTCOME_UNKNOWN, job_state_words
from reelqueue.domain.errors import InputError, KnownError
from reelqueue.domain.states import JobState
from reelqueue.ui import format as fmt
from reelqueue.ui.account_manage import parse_cap
from reelqueue.ui.job_detail import JobDetailDialog
from reelqueue.ui.jobs_data import FINAL_VALUES

if TYPE_CHECKING:
    from reelqueue.ui.dialogs import DialogKeeper
    from reelqueue.ui.main_window import MainWindow
    from reelqueue.ui.paging import JobPager
    from reelqueue.ui.session import Spawn, WindowSession

# Cancelling these may cost: the create was (or may have been) sent and billed.
CHARGED_STATES = frozenset({JobState.SUBMITTING, JobState.RENDERING, JobState.DOWNLOADING})
FINISHED_STATES = frozenset({JobState.COMPLETED, JobState.FAILED, JobState.CANCELLED})


class QueueHost(Protocol):
    """What the queue's commands read of the window's state as it changes, and what they
    ask it to read again after a command (the controller)."""

    @property
    def batches(self) -> Mapping[int, str]: ...

    async def refresh_accounts(self) -> None: ...

    async def refresh_batches(self) -> None: ...

    async def load_rows(self) -> None: ...


class QueueActions:
    """The queue's commands, each run as a task of the session; outcomes are banners.

    Attributes:
        cancel_box: the last "Cancel jobs" question asked (None before the first).
        cap_box: the last "Batch spend cap" question asked (None before the first).
    """

    def __init__(self, session: WindowSession, window: MainWindow, keeper: DialogKeeper,
                 pager: JobPager, spawn: Spawn, host: QueueHost) -> None:
        self.session = session
        self.window = window
        self.keeper = keeper
        self.pager = pager
        self.spawn = spawn
        self.host = host
        self.cancel_box: QMessageBox | None = None
        self.cap_box: QInputDialog | None = None

    def start_queue(self) -> None:
        if self.session.app.engine is not None and not self.session.closed:
            self.session.app.resume()

    def pause_queue(self) -> None:
        if self.session.app.engine is not None and not self.session.closed:
            self.session.app.pause()

    def cancel(self, job_ids: list[int], always_ask: bool = False) -> QMessageBox | None:
        """Cancel asks first, naming what it may cost (renders in flight may already be
        charged); one queued job goes without a question unless ``always_ask`` (the
        Cancel button and Del). Returns the question asked."""
        rows = [r for i in job_ids if (r := self.window.model.table.row(i)) is not None]
        open_ids = [r.id for r in rows if r.state not in FINISHED_STATES]
        rendering = sum(r.state in CHARGED_STATES for r in rows)
        if rows and not open_ids:
            self.window.banners.show_banner(
                "info", f"Nothing to cancel: {fmt.plural(len(rows), 'this')} "
                f"{fmt.plural(len(rows), 'job')} already finished.", key="cancelled")
            return None
        if len(open_ids) <= 1 and not rendering and len(rows) == len(job_ids) \
                and not always_ask:
            self.spawn(self.cancel_now(job_ids, rendering), "cancel")
            return None
        n = len(open_ids) if rows else len(job_ids)
        box = QMessageBox(QMessageBox.Icon.Question, "Cancel jobs",
                          f"Cancel {fmt.count(n, 'job')}?", parent=self.window)
        box.setInformativeText(
            (f"{fmt.number(rendering)} {fmt.plural(rendering, 'is')} rendering now and may "
             "already be charged; the provider is asked to stop "
             f"{fmt.plural(rendering, 'it', 'them')}. " if rendering else "")
            + "Cancelled jobs stay in the list; Retry queues them again.")
        box.setStandardButtons(QMessageBox.StandardButton.Yes | QMessageBox.StandardButton.No)
        box.setDefaultButton(QMessageBox.StandardButton.No)
        box.setEscapeButton(QMessageBox.StandardButton.No)
        box.button(QMessageBox.StandardButton.Yes).setText(f"Cancel {fmt.count(n, 'job')}")
        box.button(QMessageBox.StandardButton.No).setText(f"Keep {fmt.plural(n, 'it', 'them')}")

        def answered(button: object) -> None:
            if button is box.button(QMessageBox.StandardButton.Yes):
                self.spawn(self.cancel_now(job_ids, rendering), "cancel")

        box.buttonClicked.connect(answered)
        box.finished.connect(lambda _r: self.keeper.forget(box))
        box.setWindowModality(box.windowModality().WindowModal)
        self.keeper.open.append(box)
        self.cancel_box = box
        box.open()
        return box

    async def cancel_now(self, job_ids: list[int], rendering: int = 0) -> None:
        done = await jobs.cancel(self.session.app, job_ids)
        text = f"Cancelled {fmt.count(len(done), 'job')}"
        if rendering:
            text += (f", {fmt.count(rendering, 'render')} stopped while running (the "
                     "provider may have charged for what it rendered)")
        if len(done) < len(job_ids):
            text += (f"; {fmt.number(len(job_ids) - len(done))} had already finished and "
                     "were left as they were")
        self.window.banners.show_banner("info", text + ".", key="cancelled")

    def retry(self, job_ids: list[int], seed: object = None) -> None:
        new_seed = random.randrange(2**31) if seed == -1 else seed
        self.spawn(
            self.retry_now(job_ids, new_seed if isinstance(new_seed, int) else None), "retry")

    async def retry_now(self, job_ids: list[int], seed: int | None, *,
                     confirmed: bool = False) -> None:
        # Retry asks before it pays (issue 10): a charge, known or not ("price unknown"),
        # waits for the banner's button; re-reading a kept render is free and goes at once.
        plan = await jobs.retry_plan(self.session.app, job_ids, new_seed=seed)
        if (plan.rerender_usd > 0 or plan.unpriced or plan.maybe_charged) and not confirmed:
            price = (f"est. ${plan.rerender_usd:.2f}" if not plan.unpriced
                     else "price unknown" if not plan.rerender_usd
                     else f"est. ${plan.rerender_usd:.2f} + unknown")
            if plan.maybe_charged:  # the retry plan's words: said on the button that pays
                price += (f"; {fmt.number(len(plan.maybe_charged))} may already be "
                          "charged")
            self.window.banners.show_banner(
                "warning", f"Retry: {retry_summary(plan)}",
                [(f"Retry ({price})", lambda: self.spawn(
                    self.retry_now(job_ids, seed, confirmed=True), "retry"))], key="retry")
            return
        # Only the unknown creates the user agreed to pay for (the button) are created
        # again; any other is looked for first, never created (issue 32).
        done = await jobs.retry(self.session.app, job_ids, new_seed=seed,
                                create_again=plan.create_again if confirmed else ())
        if not done:
            self.window.banners.show_banner("info", "Only failed, cancelled or parked jobs "
                                            "can be retried (a finished one with a new "
                                            "seed).", key="retry")
            return
        made = [job_id for job_id in done if job_id not in job_ids]
        if made:  # finished videos kept; their new seeds are new jobs (the gallery's retry)
            renders = ("renders it into its own file" if len(made) == 1
                       else "render them, each into its own file")
            self.window.banners.show_banner(
                "info", f"Retry: {retry_summary(plan)} New {fmt.plural(len(made), 'job')} "
                f"{', '.join(str(i) for i in made)} {renders}; the finished "
                f"{fmt.plural(len(plan.variants), 'video')} and "
                f"{'its' if len(plan.variants) == 1 else 'their'} spend are kept.",
                key="retry")
            await self.pager.load_rows()
        elif plan.reread or plan.reconcile:
            self.window.banners.show_banner("info", f"Retry: {retry_summary(plan)}", key="retry")
        await self.pager.refresh_rows([job_id for job_id in done if job_id in job_ids])
        if confirmed:  # from the banner: the job's open detail view follows too
            for dialog in list(self.keeper.open):
                if isinstance(dialog, JobDetailDialog) and dialog.job_id in done:
                    await self.keeper.load_detail(dialog)

    async def use_render(self, job_id: int, provider_job_id: str) -> None:
        """The user's pick among the candidates of an unknown create: read, never created."""
        try:
            await jobs.resolve_with_render(self.session.app, job_id, provider_job_id)
        except InputError as exc:
            self.window.banners.show_banner("warning", str(exc), key="resolve")
            return
        self.window.banners.show_banner(
            "info", f"Job {job_id}: render {provider_job_id} is read from the provider (no "
            "new render, no new charge).", key="resolve")
        await self.pager.refresh_rows([job_id])

    async def read_counts(self, job_id: int) -> None:
        """Read the provider's usage counts for the job's unknown create (issue 32 item 6):
        the reading is kept on its ledger, which the detail then shows. Creates nothing."""
        try:
            await jobs.unknown_create_evidence(self.session.app, job_id)
        except KnownError as exc:  # resolved meanwhile, or the journal refused the write
            self.window.banners.show_banner("warning", str(exc), key="resolve")

    async def create_again(self, job_id: int, *, confirmed: bool = False) -> None:
        """None of the candidates is it: render anew, after saying it may be charged twice."""
        if not confirmed:
            plan = await jobs.retry_plan(self.session.app, [job_id], create_again=True)
            self.window.banners.show_banner(
                "warning", f"Render job {job_id} again: {retry_summary(plan)}",
                [(f"Render again ({plan.price_text})", lambda: self.spawn(
                    self.create_again(job_id, confirmed=True), "resolve"))], key="resolve")
            return
        try:
            await jobs.resolve_by_creating_again(self.session.app, job_id)
        except InputError as exc:
            self.window.banners.show_banner("warning", str(exc), key="resolve")
            return
        await self.pager.refresh_rows([job_id])
        for dialog in list(self.keeper.open):
            if isinstance(dialog, JobDetailDialog) and dialog.job_id == job_id:
                await self.keeper.load_detail(dialog)

    def retry_failed(self) -> None:
        batch = self.window.batch_filter.currentData()
        ids = [r.id for r in self.window.model.table.rows
               if r.state in (JobState.FAILED, JobState.PARKED)
               and (batch is None or r.batch_id == batch)]
        if not ids:
            self.window.banners.show_banner("info", "There are no failed jobs to retry.",
                                            key="retry")
            return
        self.spawn(self._retry_failed(ids), "retry-failed")

    async def _retry_failed(self, ids: list[int], *, include_permanent: bool = False,
                            confirmed: bool = False) -> None:
        """Like ``reelqueue retry --failed``: permanent failures (content policy, invalid
        input...) are left out unless asked for; it says what it re-reads for free and
        what it renders again at a price, and a price waits for the user's button."""
        plan = await jobs.retry_plan(
            self.session.app, ids, include_permanent=include_permanent)
        text = retry_summary(plan, include_hint="'Also retry' queues them too")
        also = [(also_retry_label(plan),
                 lambda: self.spawn(self._retry_failed(ids, include_permanent=True),
                                    "retry-failed"))] if plan.skipped_permanent else []
        if not plan.job_ids:
            self.window.banners.show_banner("info", f"Retry failed: {text}", also,
                                            key="retry")
            return
        if (plan.rerender_usd > 0 or plan.unpriced or plan.maybe_charged) and not confirmed:
            price = (f"est. ${plan.rerender_usd:.2f}" if not plan.unpriced
                     else "price unknown" if not plan.rerender_usd
                     else f"est. ${plan.rerender_usd:.2f} + unknown")
            if plan.maybe_charged:  # the retry plan's words: said on the button that pays
                price += (f"; {fmt.number(len(plan.maybe_charged))} may already be "
                          "charged")
            self.window.banners.show_banner(
                "warning", f"Retry failed: {text}",
                [(f"Retry ({price})", lambda: self.spawn(self._retry_failed(
                    ids, include_permanent=include_permanent, confirmed=True),
                    "retry-failed")), *also], key="retry")
            return
        done = await jobs.retry(self.session.app, plan.job_ids,
                                create_again=plan.create_again if confirmed else ())
        self.window.banners.show_banner(
            "info", f"Queued {fmt.count(len(done), 'job')} again. {text}", also, key="retry")
        await self.pager.refresh_rows(done)

    def is_demo(self, batch_name: str) -> bool:
        from reelqueue.application.demo import DEMO_BATCH

        return (self.session.ctx.data_dir.name == "demo"
                and batch_name.split(" ")[0] == DEMO_BATCH)

    def run_demo_again(self) -> None:
        self.spawn(self._run_demo_again(), "demo-again")

    async def _run_demo_again(self) -> None:
        """The sample sheet once more, as a new batch ("demo 2"...): the journal is open
        here, so the finished one stays on the record ('reelqueue demo --reset' clears it)."""
        from reelqueue.application.demo import DEMO_BATCH
        from reelqueue.resources import resource

        taken = set(self.host.batches.values())
        n = 2
        while f"{DEMO_BATCH} {n}" in taken:
            n += 1
        options = self.session.import_options(provider="mock", batch_name=f"{DEMO_BATCH} {n}")
        plan = await imports.plan_import(self.session.app, resource("sample_prompts.csv"),
                                          options)
        result = await imports.apply_import(self.session.app, plan)
        await self.host.refresh_batches()
        await self.host.load_rows()
        self.start_queue()
        self.window.banners.show_banner(
            "info", f"The demo runs again: {fmt.count(result.added, 'new job')} in batch "
            f"“{result.batch_name}”.", key="demo")

    def prioritize(self, job_ids: list[int]) -> None:
        self.spawn(self._prioritize(job_ids), "prioritize")

    async def _prioritize(self, job_ids: list[int]) -> None:
        result = await jobs.prioritize_jobs(self.session.app, job_ids)
        await self.pager.refresh_rows(list(result.job_ids))  # the State column says so
        left = len(set(job_ids)) - result.changed
        self.window.banners.show_banner(
            "info", f"Moved {fmt.count(result.changed, 'job')} to the front of the queue"
            + (f"; {fmt.number(left)} already finished" if left else "") + ".",
            key="priority")

    def prioritize_batch(self, batch_id: int) -> None:
        self.spawn(self._prioritize_batch(batch_id), "prioritize-batch")

    async def _prioritize_batch(self, batch_id: int) -> None:
        result = await jobs.prioritize_batch(self.session.app, batch_id)
        # Its unfinished rows take the batch's new priority as the journal did (one
        # UPDATE over the batch), without reading each one back.
        table = self.pager.model.table
        self.pager.model.replace_rows([
            replace(row, priority=result.priority) for row in table.rows
            if row.batch_id == batch_id and row.state not in FINAL_VALUES])
        name = self.host.batches.get(batch_id, f"batch {batch_id}")
        self.window.banners.show_banner(
            "info", f"Batch “{name}” moved to the front: its "
            f"{fmt.count(result.changed, 'unfinished job')} go before the others.",
            key="priority")

    def pause_batch(self, batch_id: int, paused: bool) -> None:
        self.spawn(self._pause_batch(batch_id, paused), "pause-batch")

    async def _pause_batch(self, batch_id: int, paused: bool) -> None:
        batch = await jobs.set_batch_paused(self.session.app, batch_id,
                                                      paused)
        await self.host.refresh_batches()
        if batch is None:
            return
        text = (f"Batch “{batch.name}” paused: its waiting jobs are not started; renders "
                "already running finish." if paused else
                f"Batch “{batch.name}” resumed.")
        actions = [("Resume", lambda: self.pause_batch(batch_id, False))] if paused else []
        self.window.banners.show_banner("info", text, actions, key=f"batch-paused:{batch_id}")

    def ask_batch_cap(self, batch_id: int) -> None:
        """Ask for a batch's new spend cap, saying what it has spent and its cap now
        (issue 34: the Stalled banner quoted 'reelqueue batch cap' instead)."""
        self.spawn(self._ask_batch_cap(batch_id), "batch-cap")

    async def _ask_batch_cap(self, batch_id: int) -> None:
        money = await status.money(self.session.app)
        spend = next((b for b in money.today.batches if b.batch_id == batch_id), None)
        name = self.host.batches.get(batch_id, f"batch {batch_id}")
        spent = spend.spent + spend.reserved if spend is not None else 0.0
        now = f" of its cap of {fmt.money(spend.cap)}" if spend is not None else ""
        box = QInputDialog(self.window)
        box.setWindowTitle("Batch spend cap")
        box.setLabelText(
            f"Stop starting renders of batch “{name}” once it has spent this much (USD).\n"
            f"Spent so far: {fmt.money(spent)}{now}. Empty: no cap.")
        suggestion = max(spend.cap * 2, spend.cap + 1.0) if spend is not None else 0.0
        box.setTextValue(f"{suggestion:.2f}" if spend is not None else "")
        box.setOkButtonText("Set cap")
        box.textValueSelected.connect(lambda text: self._batch_cap_typed(batch_id, text))
        self.cap_box = box
        box.open()

    def _batch_cap_typed(self, batch_id: int, text: str) -> None:
        usd, problem = parse_cap(text, "A batch's cap")
        if problem:
            self.window.banners.show_banner("warning", f"The cap was not changed: {problem}",
                                            key=f"batch-cap:{batch_id}")
            return
        self.spawn(self._set_batch_cap(batch_id, usd), "batch-cap")

    async def _set_batch_cap(self, batch_id: int, usd: float | None) -> None:
        batch = await jobs.set_batch_cap(self.session.app, batch_id, usd)
        await self.host.refresh_accounts()  # and the money figures with them
        text = (f"Batch “{batch.name}”: no spend cap." if usd is None else
                f"Batch “{batch.name}”: spend cap {fmt.money(usd)}.")
        self.window.banners.show_banner("info", text + " Waiting jobs it held start as it "
                                        "allows.", key=f"batch-cap:{batch_id}")

    def set_capacity(self, account: str, capacity: int) -> None:
        self.spawn(self._account_command(accounts.update_account(
            self.session.app, account, AccountChange(capacity=capacity))))

    def set_enabled(self, account: str, enabled: bool) -> None:
        self.spawn(self._account_command(accounts.update_account(
            self.session.app, account, AccountChange(enabled=enabled))))

    def set_daily_cap(self, account: str, usd: float | None) -> None:
        """From the card: raising or removing the cap releases the jobs it held at once."""
        self.spawn(self._account_command(accounts.update_account(
            self.session.app, account, AccountChange(daily_cap=usd, clear_daily_cap=usd is None))))

    def mark_ready(self, account: str) -> None:
        self.spawn(self._account_command(accounts.mark_ready(self.session.app, account)))

    async def _account_command(self, command: Any) -> None:
        await command
        await self.host.refresh_accounts()


def also_retry_label(plan: RetryPlan) -> str:
    """The button that retries what a bulk retry left out, in the retry plan's classes:
    permanent failures are "refused by the provider's rules"; a submit outcome unknown is
    not (it was never refused). Short: the banner's text says the rest (the first create
    of an unknown outcome may already be charged), and a price still waits for its own
    button."""
    permanent = len(plan.left_out_permanent)
    unknown = len(plan.left_out_unknown)
    if permanent and unknown:
        return (f"Also retry these {fmt.number(permanent + unknown)} ({fmt.number(permanent)} "
                f"refused, {fmt.number(unknown)} {job_state_words(OUTCOME_UNKNOWN).name})")
    if permanent:
        return f"Also retry {fmt.number(permanent)} refused by the provider's rules"
    return f"Also retry {fmt.number(unknown)} ({job_state_words(OUTCOME_UNKNOWN).name})"
