"""One render attempt: submit (write-ahead) -> poll -> download -> complete.

Every write names the claim token; a refused write means the claim was lost (lease taken
over, job cancelled) and the attempt stops without touching anything else. Errors are
sorted into the three classes of DESIGN.md invariant 6; any other exception takes the
retryable path, so an exception can never swallow a job.
"""

from __future__ import annotations

import asyncio
import errno
import functools
import logging
import random
import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, TypeVar

from reelqueue.domain.clock import Clock
from reelqueue.domain.errors import (
    ErrorClass,
    ErrorLabel,
    OutputNotWritable,
    ProviderError,
    RenderAlreadyRecorded,
    account_status_for,
    submit_unknown_message,
)
from reelqueue.domain.models import Claim
from reelqueue.domain.render_times import render_kind
from reelqueue.domain.states import FINAL, AccountStatus, JobState, RemotePhase
from reelqueue.engine.async_store import AsyncStore
from reelqueue.engine.config import EngineConfig
from reelqueue.engine.events import EventBus, JobEvent, account_event
from reelqueue.engine.load import DownloadBacklog
from reelqueue.engine.outputs import (
    OUTPUT_NAME_CLEANED,
    OutputWriter,
    WrittenFile,
    free_output_name,
    part_path,
    path_parts,
    remove_parts_of,
    stored_name,
    writable_output,
)
from reelqueue.engine.polling import PollPlanner
from reelqueue.engine.reconcile import Reconciler, Verdict, candidate_dict
from reelqueue.engine.retry_plan import estimated_price
from reelqueue.providers.base import (
    Provider,
    ReconcileMethod,
    RemoteRecord,
    RemoteStatus,
    RenderRequest,
    SearchableProvider,
    lost_create_search,
    reconcile_method,
    render_id_problem,
    sends_client_token,
)
from reelqueue.providers.registry import ProviderRegistry
from reelqueue.store.base import JobError
from reelqueue.store.routing import hand_over_target
from reelqueue.store.spend import price_of, refund

log = logging.getLogger(__name__)

_T = TypeVar("_T")

STOPPED_IN_FLIGHT = "stopped_in_flight"
"""Ledger event of a job left in flight by an orderly stop (Engine.stop)."""

RESUME_STARTED = "resume_started"
"""Ledger event written when a process starts the work of a resumed job: just before its
render is polled again, or just before the provider is asked for its earlier create (after
any settle wait). Only these count as crashes of the job's own making: a process killed
during start-up, recovery or a wait never touched the job."""


class ClaimLost(Exception):
    """The journal refused a fenced write: another owner has this job now."""


class RemoteRenderFailed(Exception):
    """The provider's render failed (``gone``: the provider no longer knows it); a retry
    needs a new render."""

    def __init__(self, error: ProviderError, *, gone: bool = False) -> None:
        super().__init__(str(error))
        self.error = error
        self.gone = gone


class SubmissionUnresolved(Exception):
    """A create may have reached the provider and asking for it failed or was not
    conclusive: the outcome is unknown, which is never read as "no" (DESIGN.md invariants
    11, 13). ``candidates``: renders that could be it, for the user to choose from;
    ``looked``: the provider's records were read and answered (``resolve`` says so)."""

    def __init__(self, error: ProviderError, client_token: str,
                 candidates: tuple[RemoteRecord, ...] = (), *, looked: bool = False) -> None:
        super().__init__(str(error))
        self.error = error
        self.client_token = client_token
        self.candidates = candidates
        self.looked = looked  # the provider's records were read and answered


NEVER_ARRIVED_WORDS = ("The interrupted submission never reached the provider (its records "
                       "show no such render; nothing was charged): it is sent now, once.")

FINISHED_WITHOUT_FILE = (
    "The provider reported the render finished but gave no file; it was not created "
    "again (a finished render is paid) — check the provider's dashboard.")


@dataclass
class RenderContext:
    """What every attempt shares with the engine."""

    store: AsyncStore
    bus: EventBus
    clock: Clock
    config: EngineConfig
    writer: OutputWriter
    rng: random.Random
    providers: ProviderRegistry
    reconciler: Reconciler | None = None
    #: called with (job id, batch id) when a job changed (the engine's manifests)
    job_changed: Callable[[int, int], None] | None = None
    #: when polls go out: typical times, each account's budget (engine/polling.py)
    polling: PollPlanner = field(default_factory=PollPlanner)
    #: finished renders whose file is not on disk yet: the pump's brake (engine/load.py)
    downloads: DownloadBacklog = field(default_factory=DownloadBacklog)


LOOK_BEFORE_END = 0.5
"""Seconds before a render's estimated end at which it is polled once more when its
progress says more than twice that is left (:func:`poll_wait`)."""


def poll_wait(hint: float, floor: float, pace: tuple[float, float] | None, now: float,
              progress: float | None) -> float:
    """Seconds until the next poll: the provider's hint, or sooner when the render's
    progress says it will be finished before then.

    A finished render is only seen at a poll, so polling on the hint alone adds on average
    half a period to every render (with the mock's 0.2 s hint, a 0.5 s render held its
    slot 0.63 s: benchmarks/bench_scheduler.py). ``pace`` is an earlier (time, progress)
    of the render; the progress made since then gives the time left, and the poll is
    aimed a little after it. Polls stay at least ``floor`` apart, and an early one is
    only repeated while the progress keeps moving (a render stuck at 99% is polled on the
    hint again).
    """
    wait = hint
    if pace is not None and progress is not None:
        then, before = pace
        if progress > before and now > then:
            left = (1.0 - progress) * (now - then) / (progress - before)
            if left > 2 * LOOK_BEFORE_END:
                # Far from the end an estimate's error grows with the time left (2 % of
                # 5 s is 0.1 s of an empty slot): look once more just before the end,
                # where the pace over the longer span aims the last poll within a few ms.
                wait = min(hint, left - LOOK_BEFORE_END)
            else:
                wait = min(hint, left * 1.02 + 0.005)
    return max(wait, floor)


class RenderAttempt:
    """Attributes:
    claim: the job and the claim token this attempt owns.
    provider: the account's adapter.
    """

    def __init__(self, ctx: RenderContext, claim: Claim, provider: Provider) -> None:
        self.ctx = ctx
        self.claim = claim
        self.provider = provider
        self.job = claim.job
        self.token = claim.token
        self.provider_job_id = claim.job.provider_job_id
        self.submitted_at: float | None = None
        self.user_retry = False
        # True while a submission whose outcome is unknown is being asked for: any error
        # then keeps its client token (an exception must never turn unknown into "no").
        self.unresolved = False
        self.pending_token: str | None = None  # the client token of the last create sent
        # The price the last intent charged, when the provider answered that create with a
        # 4xx refusal: nothing was made, so it is refunded once the error is recorded.
        self.refused_price: float | None = None
        # A resumed job's ``resume_started`` entry is still to be written (once per claim).
        self.resume_pending = False

    # -- helpers -----------------------------------------------------------------------
    def _now(self) -> float:
        return self.ctx.clock.now()

    def _emit(self, state: JobState, *, unbound: bool = False, **fields: object) -> None:
        if self.ctx.job_changed is not None:
            self.ctx.job_changed(self.job.id, self.job.batch_id)
        self.ctx.bus.publish(JobEvent(
            job_id=self.job.id, state=state, at=self._now(),
            account=None if unbound else self.claim.account, unbound=unbound,
            attempts=self.job.attempts, **fields))  # type: ignore[arg-type]

    async def _emit_after(self, state: JobState, **fields: object) -> None:
        """The event of an error's write. A job waiting again stays bound to this account
        only while it holds a render or a submission: the journal's word, read back
        rather than guessed here."""
        unbound = False
        if state in (JobState.QUEUED, JobState.RETRY_WAIT):
            try:
                job = await self.ctx.store.get_job(self.job.id)
            except Exception:  # the event is a view's hint; the journal stays right
                log.exception("job %s: could not read it back", self.job.id)
                job = None
            unbound = job is not None and job.account is None
        self._emit(state, unbound=unbound, **fields)

    async def _fenced(self, ok: bool) -> None:
        if not ok:
            raise ClaimLost()

    def _kind(self) -> str:
        return render_kind(self.job.provider, self.job.params)

    def _request(self, client_token: str) -> RenderRequest:
        return RenderRequest(job_key=self.job.job_key, client_token=client_token,
                             prompt=self.job.prompt, params=self.job.params)

    # -- the lifecycle -----------------------------------------------------------------
    async def run(self) -> None:
        try:
            await self._lifecycle()
        except ClaimLost:
            log.info("job %s: claim lost; this attempt stops", self.job.id)
        except asyncio.CancelledError:
            # Shutting down: the job stays in flight and is reattached at the next start.
            raise
        except SubmissionUnresolved as exc:
            await self._handle_unresolved(exc)
        except RemoteRenderFailed as exc:
            await self._handle_remote_failure(exc.error, gone=exc.gone)
        except ProviderError as exc:
            await self._handle_error(exc, keep_render=self._keeps_render)
        except OSError as exc:
            label = ErrorLabel.DISK
            message = ("The disk is full" if exc.errno == errno.ENOSPC
                       else f"Writing the video failed: {exc.strerror or exc}")
            await self._handle_error(
                ProviderError(message, error_class=ErrorClass.RETRYABLE, label=label),
                keep_render=self._keeps_render)
        except Exception as exc:  # a bug of ours: retryable, logged with its traceback
            log.exception("job %s: unexpected error in the render worker", self.job.id)
            error = ProviderError(f"Internal error: {type(exc).__name__}: {exc}",
                                  error_class=ErrorClass.RETRYABLE, label=ErrorLabel.INTERNAL)
            if (self.unresolved and self.pending_token is not None
                    and reconcile_method(self.provider) == ReconcileMethod.NONE):
                # The create may have left and this provider cannot be asked: unknown.
                await self._handle_unresolved(SubmissionUnresolved(error, self.pending_token))
                return
            await self._handle_error(error, keep_render=self._keeps_render)

    @property
    def _keeps_render(self) -> bool:
        """A retry keeps the render, or the unresolved submission (client token)."""
        return self.provider_job_id is not None or self.unresolved

    def _planned_output(self) -> Path:
        """Where this machine writes the job's video: its journal path under this
        machine's videos folder. A path that would leave it (``..``, an absolute path
        outside it) fails the job, with why, before anything is sent: never written."""
        try:
            return writable_output(self.job.output_path, self.ctx.config.videos_dir)
        except OutputNotWritable as exc:
            raise ProviderError(str(exc), error_class=ErrorClass.PERMANENT,
                                label=ErrorLabel.DISK) from None

    async def _lifecycle(self) -> None:
        store, now = self.ctx.store, self._now
        self._planned_output()
        if self.provider_job_id is None and self.job.client_token:
            # An unresolved submission (crash inside the submit window, or a create whose
            # outcome stayed unknown): look for it in the provider's records; never create
            # blindly. On a provider that cannot be asked, only the user's retry creates
            # again, as a deliberate re-render on the record.
            # A kept client token always means "look first": the user's retry that pays
            # again drops it (requeue with reconcile=False, issue 32). Where this account
            # cannot be asked, the job is parked again and nothing is created, whatever a
            # front end promised (money fails closed).
            # A create whose resume keeps killing the process is parked, as renders are.
            if await self._park_if_resumes_keep_crashing():
                return
            self.resume_pending = True  # noted just before the provider is asked
            if self.job.state == JobState.CLAIMED:
                await self._fenced(await store.mark_submitting(
                    self.token, self.job.client_token, now()))
            await self._reconcile(self.job.client_token)
        elif self.provider_job_id is not None:
            if await self._park_if_resumes_keep_crashing():
                return
            self.resume_pending = True
            await self._note_resume_started()
            if self.job.state == JobState.CLAIMED:
                retry = await self._user_retry_of_this_claim()
                self.user_retry = bool(retry and retry.get("rereads"))
                await self._fenced(await store.mark_rendering(self.token, now()))
            self._emit(JobState.RENDERING, sub_status="reattached")
        else:
            await self._note_rerender_of_an_unknown_create()
            await self._submit()
        status = await self._poll_until_done()
        with self.ctx.downloads.fetching():
            await self._fetch(status)

    async def _fetch(self, status: RemoteStatus) -> None:
        """DOWNLOADING -> COMPLETED: the file written crash-safe, its hash recorded."""
        store, now = self.ctx.store, self._now
        final = await self._start_download()
        assert self.provider_job_id is not None

        async def record(written: WrittenFile) -> None:
            # The hash before the name: recovery completes a job only from the file whose
            # hash its download recorded (issue 22).
            await self._fenced(await store.record_download(
                self.token, size=written.size, sha256=written.sha256, now=now()))

        written = await self.ctx.writer.write_atomically(
            self.provider.download(self.provider_job_id, status), final, self.token.token,
            before_publish=record)
        finished_at = now()
        await self._fenced(await store.mark_completed(
            self.token, size=written.size, sha256=written.sha256,
            cost=status.cost, now=finished_at))
        if self.job.started_at is not None:  # the journal's measure: first claim to file
            self.ctx.polling.finished(self._kind(), finished_at - self.job.started_at)
        if self.ctx.config.shared_store:  # a dead machine's partial file of this job
            await asyncio.to_thread(functools.partial(
                remove_parts_of, final, idle_seconds=self.ctx.config.lease_seconds / 2))
        self._emit(JobState.COMPLETED, progress=1.0, output_path=str(written.path),
                   cost=status.cost)

    async def _start_download(self) -> Path:
        """RENDERING -> DOWNLOADING, naming the file: the job's output path, or a free
        suffixed name when something the journal did not record is there (the user's file,
        kept untouched: issue 22), and the temporary file it is written to. A changed name
        goes to the batch's manifest too. Returns the output path chosen."""
        planned = self._planned_output()
        try:
            final = await asyncio.to_thread(free_output_name, planned)
        except OutputNotWritable as exc:  # every suffix taken: the user's to tidy up
            raise ProviderError(str(exc), error_class=ErrorClass.RETRYABLE,
                                label=ErrorLabel.DISK) from None
        part = part_path(final, self.token.token)
        stored = stored_name(self.job.output_path, final)
        await self._fenced(await self.ctx.store.mark_downloading(
            self.token, self._now(), output_path=stored, part=part.name))
        if (named := path_parts(self.job.output_path)) and named[-1] != planned.name:
            await self.ctx.store.note(  # the journal's name was not safe (issue 34)
                OUTPUT_NAME_CLEANED, self._now(), job_id=self.job.id,
                account=self.claim.account, claim_token=self.token.token,
                detail={"from": named[-1][:300], "to": planned.name})
            self.job = replace(self.job, output_path=stored)
        self._emit(JobState.DOWNLOADING)
        if final != planned:
            log.info("job %s: %s is taken by a file the journal did not record; it is kept "
                     "and the video goes to %s", self.job.id, planned.name, final.name)
            self.job = replace(self.job, output_path=stored)
        return final

    async def _park_if_resumes_keep_crashing(self) -> bool:
        """Park the job (and return True) when its work was resumed after unclean exits
        more than ``EngineConfig.max_resumes`` times in a row.

        A resume spends no attempt, so a render that kills the process every time it is
        resumed would be resumed forever; failing it would throw away a paid render (and a
        retry would pay again). It is parked instead: it keeps its provider job id, is not
        resumed by itself, and the user's retry reads it again (docs/design-notes.md).
        A crash counts only where a process had started the job's resumed work (a
        ``resume_started`` entry, written just before its render is polled or its earlier
        create is asked for) and then died: a kill during start-up, recovery, a settle wait
        or a queue for the account's slot is no sign that this job kills the process.
        Orderly stops (Ctrl+C, SIGTERM, the window closed keeping renders) leave a
        ``stopped_in_flight`` entry and end the count, as a new claim does.
        """
        store = self.ctx.store
        crashes = 0
        for entry in reversed(await store.ledger(self.job.id)):
            if entry.event in ("claimed", "requeued", STOPPED_IN_FLIGHT):
                break
            crashes += entry.event == RESUME_STARTED
        if crashes < self.ctx.config.max_resumes:  # max_resumes resumes died: no more
            return False
        if self.provider_job_id is None:  # a create resumed to be looked for (issue 19)
            error = JobError(str(ErrorClass.UNKNOWN), ErrorLabel.SUBMIT_UNKNOWN.value,
                             f"The process died {crashes} times in a row while this job's "
                             "create was being looked for or sent; it was parked, not "
                             "failed, and not sent again. Retry it: the provider is asked "
                             "for it first, and it is created only if it never arrived.")
        else:
            error = JobError(str(ErrorClass.RETRYABLE), ErrorLabel.PARKED.value,
                             f"The process died {crashes} times in a row while this render "
                             "was resumed; it was parked, not failed, and keeps its render "
                             f"({self.provider_job_id}). Retry it to read the render again "
                             "(no new render, no charge).")
        if await store.park_job(self.token, error, self._now()):
            self._emit(JobState.PARKED, error_label=error.label, error_message=error.message)
        return True

    async def _note_resume_started(self) -> None:
        """Write ``resume_started`` once per claim, just before the resumed work begins."""
        if not self.resume_pending:
            return
        self.resume_pending = False
        await self.ctx.store.note(RESUME_STARTED, self._now(), job_id=self.job.id,
                                  account=self.claim.account, claim_token=self.token.token,
                                  detail={"provider_job_id": self.provider_job_id,
                                          "client_token": self.job.client_token})

    async def _user_retry_of_this_claim(self) -> dict[str, Any] | None:
        """The user's ``requeued`` entry when this claim is the first since it, else None.

        Its ``rereads`` names a kept render (a render gone at the provider is then created
        again on purpose), its ``unresolved_client_token`` a create whose outcome stayed
        unknown (the new create is then a deliberate re-render too)."""
        store = self.ctx.store
        claims = 0
        for entry in reversed(await store.ledger(self.job.id)):
            if entry.event == "claimed":
                claims += 1
                if claims > 1:
                    return None
            elif entry.event == "requeued" and entry.detail.get("by") == "user":
                return entry.detail
        return None

    async def _note_rerender_of_an_unknown_create(self) -> None:
        """A create after the user's retry of a 'submit outcome unknown' job may pay for a
        second render (the first may exist): write it as a deliberate re-render, with the
        old client token and the estimated price, before it is sent."""
        if self.job.state != JobState.CLAIMED:
            return
        retry = await self._user_retry_of_this_claim()
        old_token = retry.get("unresolved_client_token") if retry else None
        if not old_token:
            return
        store = self.ctx.store
        usd, unpriced = estimated_price([self.job], self.ctx.providers)
        await store.note("deliberate_rerender", self._now(),
                         job_id=self.job.id, account=self.claim.account,
                         claim_token=self.token.token,
                         detail={"provider_job_id": None, "client_token": old_token,
                                 "estimated_usd": None if unpriced else usd,
                                 "why": "the user retried a job whose earlier create may "
                                        "have reached the provider (submit outcome unknown)"})

    async def _submit(self) -> None:
        store = self.ctx.store
        client_token = uuid.uuid4().hex
        # Write-ahead: the intent is committed before a byte goes to the provider.
        intent = asyncio.ensure_future(store.mark_submitting(
            self.token, client_token, self._now(),
            min_lease_seconds=self.ctx.config.create_min_lease_seconds))
        try:
            written = await asyncio.shield(intent)
        except asyncio.CancelledError:
            await self._withdraw_intent_on_stop(intent)
            raise
        await self._fenced(written)
        self._emit(JobState.SUBMITTING)
        # Until the adapter answers, the create may be on its way: an unexpected exception
        # in there (a bug) keeps the client token, so the next claim asks before anything
        # is created again.
        self.unresolved, self.pending_token = True, client_token
        create = asyncio.ensure_future(self.provider.submit(self._request(client_token)))
        try:
            provider_job_id = await asyncio.shield(create)
        except asyncio.CancelledError:
            await self._finish_create_on_stop(create)
            raise
        except ProviderError as exc:
            if not exc.body_maybe_sent:
                self.unresolved = False  # a definite refusal: nothing was created
                if exc.status_code is not None and 400 <= exc.status_code < 500:
                    self.refused_price = price_of(self.job.metadata)
                raise
            await self._unknown_submission(client_token, exc)
            return
        problem = render_id_problem(provider_job_id)
        if problem is not None:  # answered, but naming no render this journal can keep
            await self._unknown_submission(client_token, ProviderError(
                problem, error_class=ErrorClass.PERMANENT, label=ErrorLabel.SUBMIT_UNKNOWN,
                body_maybe_sent=True))
            return
        self.unresolved = False
        self.submitted_at = self._now()
        # The render exists and is paid for from here on: a stop arriving while its id is
        # on its way to the journal (queued behind other writes on the journal thread)
        # must not drop the write, or an orderly stop leaves "submit outcome unknown" on a
        # provider that cannot be asked.
        recording = asyncio.ensure_future(self._record_submitted(provider_job_id))
        try:
            await asyncio.shield(recording)
        except asyncio.CancelledError:
            await self._finish_recording_on_stop(recording, provider_job_id)
            raise

    async def _finish_recording_on_stop(self, recording: asyncio.Future[None],
                                        provider_job_id: str) -> None:
        """An orderly stop while an answered create's render id was being written: the
        write is waited for (a second cancel, the user insisting, leaves the intent for
        recovery to settle, as after a crash)."""
        try:
            await recording
            log.info("job %s: the render answered at the stop was recorded (%s)",
                     self.job.id, provider_job_id)
        except asyncio.CancelledError:
            return
        except ClaimLost:
            log.info("job %s: claim lost while recording render %s at the stop",
                     self.job.id, provider_job_id)
        except Exception:
            log.exception("job %s: could not record render %s at the stop",
                          self.job.id, provider_job_id)

    async def _withdraw_intent_on_stop(self, intent: asyncio.Future[bool]) -> None:
        """An orderly stop while the intent was being written: no create has been sent, so
        the intent is withdrawn (SUBMITTING -> CLAIMED without its token) instead of left
        for recovery to read as a create whose outcome is unknown."""
        try:
            if await intent:
                await self.ctx.store.forget_submission(
                    self.token, self._now(), {"why": "stopped before the create was sent"},
                    "intent_withdrawn")
        except asyncio.CancelledError:
            return  # the user insisting: recovery settles the intent as after a crash
        except Exception:
            log.exception("job %s: could not withdraw the intent at the stop", self.job.id)

    async def _finish_create_on_stop(self, create: asyncio.Future[str]) -> None:
        """An orderly stop (Ctrl+C, the window closed) while a create is on its way: wait
        for the provider's answer and record its job id, so the render is reattached next
        time, instead of ending "submit outcome unknown" on a provider that cannot be asked
        (or being looked up on one that can). The HTTP client's timeout bounds the wait; a
        second cancel (the user insisting) ends it, and the journal keeps the intent for
        recovery to settle, as after a crash."""
        try:
            provider_job_id = await create
        except asyncio.CancelledError:
            create.cancel()
            return
        except Exception:  # refused or unknown: the journal's intent tells recovery
            log.info("job %s: a create answered with an error during the stop", self.job.id)
            return
        if render_id_problem(provider_job_id) is not None:
            log.info("job %s: a create answered during the stop named no usable render; "
                     "its intent is left for recovery", self.job.id)
            return
        try:
            self.unresolved = False
            await self._record_submitted(provider_job_id)
            log.info("job %s: the create under way at the stop was recorded (%s)",
                     self.job.id, provider_job_id)
        except Exception:
            log.exception("job %s: could not record the create answered during the stop",
                          self.job.id)

    async def _record_submitted(self, provider_job_id: str) -> None:
        store = self.ctx.store
        self.provider_job_id = provider_job_id
        if not await store.record_submitted(self.token, provider_job_id, self._now()):
            await self._orphaned(provider_job_id)
            raise ClaimLost()
        self._emit(JobState.RENDERING, sub_status="submitted")

    async def _orphaned(self, provider_job_id: str) -> None:
        """A render answered after this claim was lost (its lease ran out: the process was
        stopped, the network cut): written as an orphan render, flagged, and cancelled at
        the provider where it can be -- unless the job's new owner holds it, or may still
        find it in the provider's records (its create is unresolved there)."""
        store, now = self.ctx.store, self._now()
        job = await store.get_job(self.job.id)
        if job is not None and job.provider_job_id == provider_job_id:
            return  # the new owner found it: one render, nothing orphaned
        unresolved = (job is not None and job.provider_job_id is None
                      and job.client_token is not None and job.state not in FINAL)
        detail: dict[str, Any] = {
            "provider_job_id": provider_job_id, "client_token": self.pending_token,
            "job_state": None if job is None else str(job.state),
            "left_for": "the new owner's reconciliation" if unresolved else None}
        await store.note("orphan_render", now, job_id=self.job.id, account=self.claim.account,
                         claim_token=self.token.token, detail=detail)
        if unresolved:
            return
        await store.note("possible_duplicate_charge", now, job_id=self.job.id,
                         account=self.claim.account, claim_token=self.token.token,
                         detail={"provider_job_id": provider_job_id,
                                 "why": "a create answered after its claim was lost; the job "
                                        "holds another render or is finished"})
        try:
            await self.provider.cancel(provider_job_id)
        except Exception as exc:  # the flag stands; the user sees it in the job's history
            log.warning("job %s: the orphan render %s could not be cancelled: %s",
                        self.job.id, provider_job_id, exc)
            return
        await store.note("orphan_cancelled", self._now(), job_id=self.job.id,
                         account=self.claim.account, detail={"provider_job_id": provider_job_id})

    async def _unknown_submission(self, client_token: str, exc: ProviderError) -> None:
        """The create may have reached the provider. Never send it again blindly."""
        store = self.ctx.store
        await store.note("submit_outcome_unknown", self._now(),
                         job_id=self.job.id, account=self.claim.account,
                         claim_token=self.token.token,
                         detail={"client_token": client_token, "error": str(exc)})
        if reconcile_method(self.provider) != ReconcileMethod.NONE:
            await self._reconcile(client_token, after_error=exc)
            return
        raise SubmissionUnresolved(exc, client_token)

    async def _reconcile(self, client_token: str, after_error: ProviderError | None = None
                         ) -> None:
        """Look for our earlier create in the provider's records (invariant 13): by client
        token, or by a search of the account's renders. Found: continue it (no new create).
        Proven absent: create once, on this claim. Otherwise it stays unknown."""
        method = reconcile_method(self.provider)
        if method == ReconcileMethod.NONE:
            raise SubmissionUnresolved(after_error or ProviderError(
                "this provider cannot be searched for an earlier create on this account; "
                "nothing was looked for and nothing was created",
                error_class=ErrorClass.PERMANENT, label=ErrorLabel.SUBMIT_UNKNOWN),
                client_token)
        self.unresolved = True
        if method == ReconcileMethod.SEARCH:
            verdict = await self._asking(client_token, self._search)
            await self._apply_verdict(client_token, verdict)
            return
        await self._note_resume_started()
        found = await self._asking(client_token, functools.partial(
            self.provider.lookup, self._request(client_token)))
        detail = {"method": "key", "client_token": client_token, "found": found}
        if found:
            self.unresolved = False
            await self.ctx.store.note("reconciled", self._now(), job_id=self.job.id,
                                      account=self.claim.account,
                                      claim_token=self.token.token, detail=detail)
            await self._record_found(client_token, found)
            return
        await self._create_after_absent(detail)

    async def _asking(self, client_token: str, ask: Callable[[], Awaitable[_T]]) -> _T:
        """``ask()`` with up to three tries on a retryable error; any failure leaves the
        submission unresolved (its client token kept), never "no"."""
        for attempt in range(3):
            try:
                return await ask()
            except ProviderError as exc:
                if exc.error_class != ErrorClass.RETRYABLE or attempt == 2:
                    raise SubmissionUnresolved(exc, client_token) from exc
                await asyncio.sleep(self.ctx.config.retry_backoff.delay(attempt + 1,
                                                                        self.ctx.rng))
        raise AssertionError("unreachable")

    async def _search(self) -> Verdict:
        provider = self.provider
        assert isinstance(provider, SearchableProvider)
        reconciler = self.ctx.reconciler or Reconciler(self.ctx.store, self.ctx.clock,
                                                       self.ctx.config)
        return await reconciler.resolve(account=self.claim.account,
                                        provider_kind=self.job.provider,
                                        provider=provider, job=self.job,
                                        before_asking=self._note_resume_started)

    async def _apply_verdict(self, client_token: str, verdict: Verdict) -> None:
        assert isinstance(self.provider, SearchableProvider)
        settle = (self.ctx.reconciler.settle_seconds(self.provider) if self.ctx.reconciler
                  else self.provider.settle_seconds)
        detail = {"client_token": client_token, **verdict.ledger_detail(settle)}
        if verdict.outcome == "found":
            assert verdict.provider_job_id is not None
            self.unresolved = False
            await self.ctx.store.note("reconciled", self._now(), job_id=self.job.id,
                                      account=self.claim.account,
                                      claim_token=self.token.token, detail=detail)
            await self._record_found(client_token, verdict.provider_job_id)
        elif verdict.outcome == "absent":
            await self._create_after_absent(detail)
        else:
            raise SubmissionUnresolved(ProviderError(
                f"the provider's records could not settle it: {verdict.why}",
                error_class=ErrorClass.PERMANENT, label=ErrorLabel.SUBMIT_UNKNOWN),
                client_token, verdict.candidates, looked=True)

    async def _record_found(self, client_token: str, provider_job_id: str) -> None:
        problem = render_id_problem(provider_job_id)
        if problem is not None:  # a lookup or search that named no usable render
            raise SubmissionUnresolved(ProviderError(
                problem, error_class=ErrorClass.PERMANENT, label=ErrorLabel.SUBMIT_UNKNOWN),
                client_token, looked=True)
        try:
            await self._record_submitted(provider_job_id)
        except RenderAlreadyRecorded as exc:  # taken by another job meanwhile
            self.provider_job_id = None
            raise SubmissionUnresolved(ProviderError(
                str(exc), error_class=ErrorClass.PERMANENT,
                label=ErrorLabel.SUBMIT_UNKNOWN), client_token, looked=True) from exc

    async def _create_after_absent(self, detail: dict[str, Any]) -> None:
        """The provider's records prove the earlier create never landed: this claim creates
        once (not flagged; the ledger's ``reconciled_absent`` says what was read)."""
        self.unresolved = False
        await self._fenced(await self.ctx.store.forget_submission(self.token, self._now(),
                                                                  detail))
        self.job = replace(self.job, state=JobState.CLAIMED, client_token=None)
        self._emit(JobState.CLAIMED, error_message=NEVER_ARRIVED_WORDS)
        await self._submit()

    async def _poll_until_done(self) -> RemoteStatus:
        store, config = self.ctx.store, self.ctx.config
        assert self.provider_job_id is not None
        last_sub_status: str | None = None
        polls = 0
        errors = 0
        no_file = 0
        # An earlier (time, progress) of this render: a render this attempt submitted was
        # at 0% when the provider accepted it.
        pace = None if self.submitted_at is None else (self.submitted_at, 0.0)
        planner, account = self.ctx.polling, self.claim.account
        if self.submitted_at is not None:
            # Just created: polled first when its kind's typical time says it can be done
            # (engine/polling.py); a resumed render's age is unknown, it is polled at once.
            first = planner.first_wait(account, self._kind(),
                                       fraction=config.first_poll_fraction,
                                       floor=config.poll_min_seconds,
                                       ceiling=config.first_poll_max_seconds)
            if first is not None:
                await asyncio.sleep(max(0.0, self.submitted_at + first - self._now()))
        aimed = False  # the next poll is aimed at the render's end (its progress says)
        while True:
            # The account's next slot within its per-minute budget: polls only, never a
            # create or a download, and never another account's. Where the adapter lists
            # renders, the account's renders due together share one list call; a render
            # the list does not answer is polled on its own (engine/polling.py). A user's
            # retry asks its first poll alone: its 404 means the render is gone. A poll
            # aimed at the render's end asks alone too: a list call gathers for up to
            # LIST_GATHER_SECONDS, which would keep the finished render's slot that long.
            try:
                status = await planner.status(account, self.provider, self.provider_job_id,
                                              alone=(self.user_retry and polls == 0)
                                              or aimed)
                seen_at = self._now()
                errors = 0
            except ProviderError as exc:
                if self.user_retry and polls == 0 and exc.status_code in (404, 410):
                    # The user asked for this job again and the provider says its render
                    # is gone: create it anew, on purpose and on the record.
                    raise RemoteRenderFailed(exc, gone=True) from exc
                if exc.error_class == ErrorClass.PERMANENT:
                    raise
                if exc.error_class == ErrorClass.ACCOUNT and exc.label != ErrorLabel.RATE_LIMITED:
                    raise
                errors += 1
                if errors >= config.poll_error_limit:
                    raise
                wait = exc.retry_after or config.poll_backoff.delay(errors, self.ctx.rng)
                await asyncio.sleep(max(wait, config.poll_min_seconds))
                continue
            polls += 1
            if status.phase == RemotePhase.SUCCEEDED:
                if status.video_url:
                    return status
                # Finished is paid: read it again (the file may show up), never create it
                # again; in the end fail it without a create.
                no_file += 1
                if no_file > config.finished_without_file_polls:
                    raise ProviderError(FINISHED_WITHOUT_FILE + f" (job {self.provider_job_id}"
                                        f", provider said: {status.sub_status or 'finished'})",
                                        error_class=ErrorClass.PERMANENT,
                                        label=ErrorLabel.NO_FILE)
                await asyncio.sleep(max(config.poll_min_seconds,
                                        config.poll_backoff.delay(no_file + 1, self.ctx.rng)))
                continue
            if status.phase in (RemotePhase.FAILED, RemotePhase.CANCELLED):
                raise RemoteRenderFailed(status.error or ProviderError(
                    f"The provider's render ended {status.phase.value}",
                    error_class=ErrorClass.RETRYABLE, label=ErrorLabel.PROVIDER_ERROR))
            planner.answered(account, progress=status.progress is not None,
                             hint=status.poll_after)
            sub_status = status.sub_status or status.phase.value
            if sub_status != last_sub_status:
                await self._fenced(await store.record_progress(
                    self.token, sub_status, status.progress, self._now()))
                last_sub_status = sub_status
            self._emit(JobState.RENDERING, sub_status=sub_status, progress=status.progress)
            hint = status.poll_after or config.poll_backoff.ceiling(polls)
            wait = poll_wait(hint, config.poll_min_seconds, pace, seen_at, status.progress)
            aimed = wait < hint
            if status.progress is not None:
                pace = (seen_at, status.progress)
            # Counted from the answer: the journal write above took some of the wait.
            await asyncio.sleep(max(config.poll_min_seconds, wait - (self._now() - seen_at)))

    # -- errors ------------------------------------------------------------------------
    async def _hand_over(self, exc: ProviderError, error: JobError, now: float) -> bool:
        """A routed job the provider definitely refused (issue 24: its parameters, or its
        content policy where the batch opted in) goes to its next candidate: True when
        written (or lost to a newer claim), False when there is none (the job fails)."""
        route = self.job.route
        if (route is None or exc.error_class != ErrorClass.PERMANENT
                or not route.moves_on_after(exc.label.value)):
            return False
        changed, to = hand_over_target(route, self.job.provider,
                                       f"{exc.label.value}: {exc}"[:300])
        if to is None:
            return False
        if await self.ctx.store.hand_over(self.token, error, now, route=changed, to=to,
                                          came_from=self.job.provider):
            self._emit(JobState.QUEUED, unbound=True, provider=to.provider,
                       kind=render_kind(to.provider, to.params),
                       error_label=exc.label.value,
                       error_message=f"{self.job.provider} refused it ({exc}); "
                                     f"handed over to {to.provider}")
        return True

    async def _refund_refused_create(self, exc: ProviderError, now: float) -> None:
        """The provider answered this attempt's create with a 4xx refusal: nothing was
        made, so the price its intent charged is given back (a ``spend`` entry of minus
        that price), once the error is recorded. Without it a routed job refused by two
        providers counted three prices against its batch's cap. Written after the error:
        a crash in between leaves the charge (money fails closed)."""
        price, self.refused_price = self.refused_price, None
        if not price:
            return
        try:
            await self.ctx.store.note(
                "spend", now, job_id=self.job.id, account=self.claim.account,
                claim_token=self.token.token,
                detail=refund(price, f"the provider refused the create (HTTP "
                                     f"{exc.status_code}, {exc.label.value}): nothing was made"))
        except Exception:
            log.exception("job %s: could not write the refund of a refused create",
                          self.job.id)

    async def _handle_error(self, exc: ProviderError, *, keep_render: bool) -> None:
        store, now = self.ctx.store, self._now()
        error = JobError(str(exc.error_class), exc.label.value, str(exc))
        try:
            if not keep_render and self.provider_job_id is None and await self._hand_over(
                    exc, error, now):
                await self._refund_refused_create(exc, now)
                return
            if exc.error_class == ErrorClass.ACCOUNT:
                await self._pause_account(exc)
                ok = await store.release_to_queue(self.token, error, now)
                state = JobState.QUEUED
            elif (exc.error_class == ErrorClass.PERMANENT
                  or self.job.attempts >= self.job.max_attempts):
                ok = await store.mark_failed(self.token, error, now)
                state = JobState.FAILED
            else:
                delay = exc.retry_after or self.ctx.config.retry_backoff.delay(
                    self.job.attempts, self.ctx.rng)
                ok = await store.set_retry_wait(self.token, error, now + delay,
                                                now, keep_provider_job=keep_render)
                state = JobState.RETRY_WAIT
        except Exception:
            log.exception("job %s: could not record its error", self.job.id)
            return
        if ok:
            await self._refund_refused_create(exc, now)
            await self._emit_after(state, error_label=exc.label.value, error_message=str(exc))

    async def _handle_remote_failure(self, exc: ProviderError, *, gone: bool = False) -> None:
        """The provider's render failed: it is never reattached (DESIGN.md invariant 11).

        Account-level reason (rate limited, budget, quota): the account pauses once and the
        job waits with the render dropped; a later claim creates anew, counted as an
        attempt. Retryable reason: a retry wait, render dropped. Otherwise (and when the
        attempts are used up) FAILED with the provider's reason and the render dropped.
        A user's retry that found its render gone creates anew as a deliberate re-render.
        """
        store, now = self.ctx.store, self._now()
        error = JobError(str(exc.error_class), exc.label.value, str(exc))
        rerender = self.user_retry and (gone or exc.error_class != ErrorClass.PERMANENT)
        if rerender:
            usd, unpriced = estimated_price([self.job], self.ctx.providers)
            await store.note("deliberate_rerender", now, job_id=self.job.id,
                             account=self.claim.account, claim_token=self.token.token,
                             detail={"provider_job_id": self.provider_job_id,
                                     "estimated_usd": None if unpriced else usd,
                                     "why": str(exc)})
        try:
            if not rerender and await self._hand_over(exc, error, now):
                return
            if exc.error_class == ErrorClass.ACCOUNT:
                await self._pause_account(exc)
            if (not rerender and exc.error_class == ErrorClass.PERMANENT) or (
                    self.job.attempts >= self.job.max_attempts and not rerender):
                ok = await store.mark_failed(self.token, error, now,
                                             drop_render=True)
                state = JobState.FAILED
            else:
                # A dropped render is created anew at once (an account pause holds that
                # account back by itself); a retryable failure waits its back-off.
                delay = 0.0 if rerender or exc.error_class == ErrorClass.ACCOUNT else (
                    exc.retry_after or self.ctx.config.retry_backoff.delay(
                        self.job.attempts, self.ctx.rng))
                ok = await store.set_retry_wait(self.token, error, now + delay,
                                                now, keep_provider_job=False)
                state = JobState.RETRY_WAIT
        except Exception:
            log.exception("job %s: could not record its error", self.job.id)
            return
        if ok:
            await self._emit_after(state, error_label=exc.label.value, error_message=str(exc))

    async def _handle_unresolved(self, exc: SubmissionUnresolved) -> None:
        """Asking for an earlier submission failed or was not conclusive: keep its client
        token (and account) so the next claim asks again, never creates. An account-level
        answer pauses the account (no attempt spent); a retryable one waits and asks again
        while attempts last. Otherwise the job is PARKED as "submit outcome unknown": not
        a failure, holding no slot, with its candidates, for the user to resolve."""
        store, now = self.ctx.store, self._now()
        cause = exc.error
        askable = reconcile_method(self.provider) != ReconcileMethod.NONE
        try:
            if cause.error_class == ErrorClass.ACCOUNT and askable:
                await self._pause_account(cause)
                error = JobError(str(cause.error_class), cause.label.value, str(cause))
                ok = await store.release_to_queue(self.token, error, now,
                                                  keep_submission=True)
                state = JobState.QUEUED
            elif (cause.error_class == ErrorClass.RETRYABLE and askable
                  and self.job.attempts < self.job.max_attempts):
                error = JobError(str(cause.error_class), cause.label.value,
                                 f"The provider could not be asked whether the submission "
                                 f"arrived ({cause}); it is asked again, nothing is created.")
                delay = cause.retry_after or self.ctx.config.retry_backoff.delay(
                    self.job.attempts, self.ctx.rng)
                ok = await store.set_retry_wait(self.token, error,
                                                now + delay, now, keep_provider_job=True)
                state = JobState.RETRY_WAIT
            else:
                around = await self._intent_time(exc.client_token)
                message = submit_unknown_message(
                    str(cause), client_token=exc.client_token,
                    token_sent=sends_client_token(self.provider),
                    account=self.claim.account, around=around)
                if exc.candidates:
                    message += " Candidates: " + "; ".join(
                        f"{c.provider_job_id} ({c.status}"
                        + (f", created {_utc(c.created_at)})" if c.created_at else ")")
                        for c in exc.candidates) + "."
                error = JobError(str(ErrorClass.UNKNOWN), ErrorLabel.SUBMIT_UNKNOWN.value,
                                 message)
                await store.note("reconcile_unresolved", now, job_id=self.job.id,
                                 account=self.claim.account, claim_token=self.token.token,
                                 detail={"client_token": exc.client_token,
                                         "why": str(cause),
                                         "search": lost_create_search(self.provider).value,
                                         "looked": exc.looked,
                                         "candidates": [candidate_dict(c)
                                                        for c in exc.candidates]})
                ok = await store.park_job(self.token, error, now)
                state = JobState.PARKED
        except Exception:
            log.exception("job %s: could not record its error", self.job.id)
            return
        if ok:
            await self._emit_after(state, error_label=error.label, error_message=error.message)

    async def _intent_time(self, client_token: str) -> float | None:
        for entry in await self.ctx.store.ledger(self.job.id):
            if entry.event == "submitting" and entry.detail.get("client_token") == client_token:
                return entry.at
        return None

    async def _pause_account(self, exc: ProviderError) -> None:
        store, now = self.ctx.store, self._now()
        account = self.claim.account
        status = account_status_for(exc.label) or AccountStatus.KEY_REJECTED
        until: float | None = (now + (exc.retry_after or self.ctx.config.rate_limit_default_seconds)
                               if status == AccountStatus.RATE_LIMITED else None)
        await store.set_account_status(account, status, now,
                                       detail=str(exc), cooldown_until=until)
        row = await store.get_account(account)
        if row is None:
            return  # removed while it rendered: no card to tell
        live = await store.live_count(account)
        self.ctx.bus.publish(account_event(row, live, now))


def _utc(at: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(at))
