"""What the HTTP API serves, on a running :class:`~reelqueue.application.session.Session`
(the one of ``reelqueue serve``, or the window's: one process owns a data folder, so the
window serves its own engine rather than a second one).

:class:`RemoteAccess` is the API's whole view of ReelQueue: the submitter, the journal
feed (reads and the event stream), the client tokens, and the session's commands (cancel,
retry, accounts, a batch upload). The API itself (``reelqueue/api``) is a thin front end
over it and never touches the journal, the keyring or the engine.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from reelqueue.application import dashboard, jobs, review, spend_reconcile, status, team, views
from reelqueue.application.account_figures import AccountFigures, read_account_figures
from reelqueue.application.accounts import AccountChange, update_account
from reelqueue.application.batch_upload import BatchUploadOutcome, upload_batch
from reelqueue.application.context import AppContext
from reelqueue.application.create_evidence import (
    CreateEvidence,
    holds_unknown_create,
    job_create_evidence,
)
from reelqueue.application.feed import JournalFeed
from reelqueue.application.serving import ServeOptions
from reelqueue.application.session import Session
from reelqueue.application.submit import JobSubmitter
from reelqueue.application.tokens import ClientTokens
from reelqueue.application.words import StateWords
from reelqueue.domain.models import Job
from reelqueue.domain.review import Decision, ReviewWritten
from reelqueue.engine.queries import AccountSummary
from reelqueue.intake.catalog import RegistryCatalog
from reelqueue.intake.planner import DEFAULT_MAX_WAITING, ImportOptions
from reelqueue.intake.routes import route_settings

__all__ = ["ApiStarter", "EngineState", "RemoteAccess", "ServedApi"]


class ServedApi(Protocol):
    """The HTTP API while it is served (:class:`reelqueue.api.serve.RunningApi`)."""

    @property
    def url(self) -> str: ...
    @property
    def fingerprint(self) -> str | None: ...
    async def stop(self) -> None: ...


class ApiStarter(Protocol):
    """Starts the HTTP API on a running session, on the caller's loop; OSError when the
    address is taken, InputError for options not allowed. :mod:`reelqueue.entry` gives
    the window one (front ends never import each other)."""

    def __call__(self, ctx: AppContext, session: Session,
                 options: ServeOptions) -> Awaitable[ServedApi]: ...


@dataclass(frozen=True)
class EngineState:
    """Attributes: paused (hands out no new work), active_renders (workers running)."""

    paused: bool
    active_renders: int


class RemoteAccess:
    """The commands and reads a remote client may use, on one running session.

    Attributes:
        session: the session (its engine runs).
        feed: the journal's reads for remote clients.
        tokens: the client tokens.
        submitter: validates and writes submitted jobs.
        upload_root: the private folder where an uploaded sheet lives while imported.
        thumbnail_root: where the web dashboard's thumbnails are cached.
        videos_dir: this machine's videos folder (every job's file is relative to it).
    """

    def __init__(self, session: Session, feed: JournalFeed, tokens: ClientTokens,
                 videos_dir: Path, max_waiting: int | None,
                 upload_root: Path | None = None, thumbnail_root: Path | None = None
                 ) -> None:
        engine = session.running_engine
        self.session = session
        self.feed = feed
        self.tokens = tokens
        self.videos_dir = videos_dir
        self.submitter = JobSubmitter(engine, feed.reader, videos_dir,
                                      RegistryCatalog(engine.providers), max_waiting)
        self.upload_root = upload_root or videos_dir / ".uploads"
        self.thumbnail_root = thumbnail_root or videos_dir / ".thumbnails"

    @classmethod
    async def open(cls, ctx: AppContext, session: Session,
                   max_waiting: int | None) -> RemoteAccess:
        """Open the feed and the tokens on ``ctx``'s journal for ``session``: the team
        database's with ``ctx.store_url`` (the one the session's engine runs on), else the
        local SQLite journal's."""
        feed = await JournalFeed.open_for(ctx)
        try:
            tokens = await ClientTokens.open_for(ctx)
        except BaseException:
            feed.close()
            raise
        return cls(session, feed, tokens, ctx.videos_dir, max_waiting,
                   upload_root=ctx.data_dir / "uploads",
                   thumbnail_root=ctx.data_dir / "web-thumbnails")

    def close(self) -> None:
        """Close the feed's and the tokens' connections (the session is the caller's)."""
        self.feed.close()
        self.tokens.close()

    def engine_state(self) -> EngineState:
        engine = self.session.live_engine
        return EngineState(paused=engine is None or engine.paused,
                           active_renders=0 if engine is None else engine.active_workers)

    def subscribe(self, subscriber: Callable[[object], None]) -> Callable[[], None]:
        """Call ``subscriber`` at each engine event; returns the unsubscribe."""
        return self.session.bus.subscribe(subscriber)

    async def get_job(self, job_id: int) -> Job | None:
        journal = self.session.journal
        return await journal.get_job(job_id)

    async def create_evidence(self, job: Job) -> CreateEvidence | None:
        """The last reading of the provider's counts for ``job``'s unknown create (issue
        32 item 6), from its ledger; None when it holds none or none was read."""
        if not holds_unknown_create(job):
            return None
        return await job_create_evidence(self.session, job.id)

    async def cancel(self, job_id: int) -> bool:
        return job_id in await jobs.cancel(self.session, [job_id])

    async def retry(self, job_id: int) -> bool:
        return job_id in await jobs.retry(self.session, [job_id])

    async def retry_with_seed(self, job_id: int, seed: int) -> tuple[jobs.RetryPlan, list[int]]:
        """Retry with ``seed``: a failed, cancelled or parked job is rendered again with it;
        a completed one is kept and a new job renders it (application.jobs). The plan (its
        price) and the ids done (the requeued job, or the new one)."""
        plan = await jobs.retry_plan(self.session, [job_id], new_seed=seed)
        return plan, await jobs.retry(self.session, plan.job_ids, new_seed=seed)

    # -- review (issue 35 item 3) --------------------------------------------------------
    async def batch_takes(self, batch_id: int) -> review.BatchTakes:
        """A batch's takes by row (its re-rolls' too); InputError: no such batch."""
        return await review.batch_takes(self.session, batch_id)

    async def set_review(self, job_id: int, decision: Decision | None, *,
                         rating: int | None, seen_version: int,
                         by: str) -> ReviewWritten:
        """A client's decision on a take, compare-and-set on ``seen_version`` (application
        .review.set_decision: ReviewConflict, ReviewRefused, InputError)."""
        return await review.set_decision(self.session, job_id, decision, rating=rating,
                                         seen_version=seen_version, by=by)

    async def accounts(self) -> list[AccountSummary]:
        return await views.accounts(self.session)

    async def account_words(self, summaries: list[AccountSummary]) -> dict[str, StateWords]:
        """Name -> each account's condition in the one set of words, as ``status`` and the
        window's cards say it (application.words; today's spend and this machine's keys
        read now)."""
        return await status.account_states_now(self.session, summaries,
                                               await status.money(self.session))

    async def account_figures(self, summaries: list[AccountSummary]
                              ) -> dict[str, AccountFigures]:
        """Name -> each account's view, limit in force and balance gate (issue 32), as
        ``accounts list --json``, ``status --json`` and the window's cards give them."""
        return await read_account_figures(self.session, [s.account for s in summaries])

    async def money(self) -> status.Money:
        """The journal's money figures: the window's cards and ``reelqueue spend`` read
        the same (issue 23)."""
        return await status.money(self.session)

    async def reconcile_spend(self, days: int) -> spend_reconcile.SpendReconciliation:
        """``spend --reconcile``'s figures (issue 32 item 5): read from the providers now,
        by this machine; creates nothing."""
        return await spend_reconcile.reconcile_spend(self.session, days)

    def check_route(self, text: str) -> tuple[str, ...]:
        """A batch route's providers (``"veo,runway"``), each a provider of this session;
        InputError saying what is wrong."""
        return route_settings(text, "order", "exact", False,
                              RegistryCatalog(self.session.providers)).providers

    async def upload_batch(self, content: bytes, file_name: str, *, provider: str,
                           batch_name: str | None, dry_run: bool,
                           routing: Mapping[str, Any] | None = None) -> BatchUploadOutcome:
        """Import an uploaded sheet (see :mod:`~reelqueue.application.batch_upload`) with
        the submitter's queue limit. ``routing``: the route settings as ImportOptions
        fields (route, route_policy, tolerance, route_on_policy)."""
        submitter = self.submitter
        options = ImportOptions(provider=provider, output_root=submitter.videos_dir,
                                batch_name=batch_name,
                                max_waiting=submitter.max_waiting or DEFAULT_MAX_WAITING,
                                **dict(routing or {}))
        return await upload_batch(self.session, self.feed, self.upload_root, content,
                                  file_name, options, dry_run=dry_run)

    # -- the web dashboard's reads and commands (issue 37) ------------------------------
    async def history(self, job_id: int) -> dashboard.JobHistory | None:
        return await dashboard.job_history(self.session, job_id)

    async def batch_counts(self) -> dashboard.QueueCounts:
        return await dashboard.batch_counts(self.session)

    async def attention(self) -> list[dashboard.AttentionItem]:
        return await dashboard.attention(self.session)

    async def retry_plan(self, job_id: int, new_seed: int | None = None) -> jobs.RetryPlan:
        """What a retry of the job would do and cost, before doing it (writes nothing)."""
        return await jobs.retry_plan(self.session, [job_id], new_seed=new_seed)

    async def resolve_with_render(self, job_id: int, provider_job_id: str) -> None:
        await jobs.resolve_with_render(self.session, job_id, provider_job_id)

    async def resolve_by_creating_again(self, job_id: int) -> jobs.RetryPlan:
        return await jobs.resolve_by_creating_again(self.session, job_id)

    async def set_batch_paused(self, batch_id: int, paused: bool) -> bool:
        """Pause or resume a batch; False when there is no such batch."""
        return await jobs.set_batch_paused(self.session, batch_id, paused) is not None

    async def set_account_enabled(self, name: str, enabled: bool) -> None:
        """Pause (no new work; running renders finish) or resume an account; InputError
        when there is no such account."""
        await update_account(self.session, name, AccountChange(enabled=enabled))

    async def machines(self) -> list[team.TeamMachine]:
        """The machines sharing the journal with their heartbeats (this one on a local
        journal)."""
        return await team.instances(self.session, local_running=True)
