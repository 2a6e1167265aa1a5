"""The user's commands on jobs and batches: cancel, retry (plan first, then apply),
prioritize, pause/resume a batch, a batch's spend cap. The window, the command line and
the HTTP API all call these.

Each is one way, engine or not: a journal write, then one :meth:`Session.changed` naming
what changed (a running engine stops a cancelled render at once, publishes the events and
wakes the pump; on a journal opened alone nothing more happens).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from reelqueue.application import create_evidence
from reelqueue.application.session import Session
from reelqueue.domain.errors import InputError, RenderAlreadyRecorded
from reelqueue.domain.models import Batch, Job
from reelqueue.domain.states import FINAL, JobState
from reelqueue.engine.lost_creates import account_lost_create_search
from reelqueue.engine.retry_plan import (
    RetryPlan,
    estimated_price,
    plan_retry,
    takes_seed,
    variant_spec,
)
from reelqueue.intake.estimate import AccountPrices
from reelqueue.providers.base import LostCreateSearch
from reelqueue.store.base import Prioritized, Store

__all__ = ["BatchSummary", "Prioritized", "RetryPlan", "SeedVariant", "UnknownCreate",
           "add_seed_variants",
           "batches", "cancel", "failed_job_ids",
           "is_paused", "list_batches", "prioritize_batch", "prioritize_jobs",
           "resolve_by_creating_again", "resolve_with_render", "retry", "retry_plan",
           "set_batch_cap", "set_batch_paused", "unknown_candidates",
           "unknown_create_evidence"]


async def cancel(session: Session, job_ids: list[int]) -> list[int]:
    """Cancel the jobs not yet finished (a render in flight is stopped); return those
    cancelled."""
    done = await session.journal.cancel_jobs(list(job_ids), session.clock.now())
    await session.changed(jobs=done)
    return done


async def failed_job_ids(session: Session, *, failed: bool = True,
                         parked: bool = False) -> list[int]:
    """The ids of every failed and parked job (``failed``), or parked job (``parked``)."""
    states: list[JobState] = []
    if failed:
        states += [JobState.FAILED, JobState.PARKED]
    elif parked:
        states.append(JobState.PARKED)
    if not states:
        return []
    journal = session.journal
    return [job.id for job in await journal.list_jobs(states=states)]


async def retry_plan(session: Session, job_ids: list[int], *, new_seed: int | None = None,
                     include_permanent: bool = True,
                     create_again: bool = False) -> RetryPlan:
    """What :func:`retry` of these jobs would do and cost (read again vs rendered again,
    with the estimated price), for the front end to say before doing it. Writes nothing."""
    journal = session.journal
    jobs = {}
    for job_id in dict.fromkeys(job_ids):
        job = await journal.get_job(job_id)
        if job is not None:
            jobs[job_id] = job
    listed = await journal.list_accounts()
    return plan_retry(list(job_ids), jobs, new_seed=new_seed,
                      include_permanent=include_permanent, providers=session.providers,
                      accounts=AccountPrices.of(listed),
                      account_rows={a.name: a for a in listed},
                      create_again=create_again)


async def retry(session: Session, job_ids: list[int], *,
                new_seed: int | None = None, reconcile: bool = True,
                create_again: Iterable[int] = ()) -> list[int]:
    """Queue the jobs again (those of a :class:`RetryPlan`); return those requeued (a job
    that changed meanwhile is left alone), then the new jobs of the completed ones when
    ``new_seed`` is given (:func:`add_seed_variants`; one that seed already made is not
    made again).

    An unknown create keeps its client token to be looked for first (where its account
    cannot be searched, the engine parks it again and creates nothing: money fails
    closed). Only those in ``create_again`` (the plan's ``create_again``, once the user
    agreed to pay), or every one when ``reconcile`` is False (the user's "create it
    again"), are rendered again, as deliberate re-renders on the record."""
    again = set(create_again)
    looked = [job_id for job_id in job_ids if job_id not in again]
    now = session.clock.now()
    done = [] if not looked else await session.journal.requeue_jobs(
        looked, now, new_seed=new_seed, reconcile=reconcile)
    if again:
        done += await session.journal.requeue_jobs(
            [job_id for job_id in job_ids if job_id in again], now, new_seed=new_seed,
            reconcile=False)
    made: list[int] = []
    if new_seed is not None:
        rest = [job_id for job_id in dict.fromkeys(job_ids) if job_id not in done]
        made = [v.job_id for v in await add_seed_variants(session, rest, new_seed)
                if v.added]
    await session.changed(jobs=[*done, *made])
    return [*done, *made]


@dataclass(frozen=True)
class SeedVariant:
    """A new job that renders a completed one again with a new seed.

    Attributes:
        original: the completed job's id (kept as it is: its file, its spend).
        job_id: the new job's id. seed: its seed. output_path: its file (the journal's).
        added: False when the same seed had already been asked for that job (the job
            made then is named, nothing new is added).
    """

    original: int
    job_id: int
    seed: int
    output_path: str
    added: bool = True


async def add_seed_variants(session: Session, job_ids: list[int],
                            new_seed: int) -> list[SeedVariant]:
    """For each completed job of ``job_ids`` whose provider takes a seed, add a new job in
    its batch (:func:`~reelqueue.engine.retry_plan.variant_spec`: same prompt and
    parameters, ``new_seed``, its own key and file) and write in the ledger of both what
    it is, with the estimated price. Other jobs are left alone. The finished job is never
    touched: a finished video is not rendered twice; this is a different video."""
    journal = session.journal
    providers = session.providers
    now = session.clock.now()

    def add(store: Store) -> list[SeedVariant]:
        made: list[SeedVariant] = []
        for job_id in dict.fromkeys(job_ids):
            job = store.get_job(job_id)
            if (job is None or job.state != JobState.COMPLETED
                    or not takes_seed(providers, job.provider)):
                continue
            spec = variant_spec(job, new_seed)
            result = store.add_jobs(job.batch_id, [spec], now)
            if result.job_ids:
                new_id, added = result.job_ids[0], True
            else:  # the same seed asked again for this job: its variant exists
                existing = _job_with_key(store, job.batch_id, spec.job_key)
                if existing is None:
                    continue
                new_id, added = existing, False
            if added:
                usd, unpriced = estimated_price([job], providers)
                price = None if unpriced else usd
                store.note("seed_variant", now, job_id=job.id, detail={
                    "variant_job": new_id, "seed": new_seed, "estimated_usd": price,
                    "output_path": spec.output_path})
                store.note("seed_variant_of", now, job_id=new_id, detail={
                    "original_job": job.id, "seed": new_seed, "estimated_usd": price,
                    "why": "the user asked for a new seed of a finished video: a new video "
                           "beside the kept one"})
            made.append(SeedVariant(job.id, new_id, new_seed, spec.output_path, added))
        return made

    return await journal.call(add, journal.sync)


def _job_with_key(store: Store, batch_id: int, key: str) -> int | None:
    return next((j.id for j in store.list_jobs(batch_id=batch_id) if j.job_key == key), None)


@dataclass(frozen=True)
class UnknownCreate:
    """What is known of a create whose outcome stayed unknown, for ``resolve``.

    Attributes:
        job_id: the job.
        candidates: the renders the last look found and could not choose between (id,
            created, status).
        search: how its account's lost creates are found, asked of the adapter built
            from the account as it is now (engine/lost_creates.py).
        looked: the provider's records were read for it and gave an answer; False when
            nothing was read (its account cannot be searched, or reading failed).
        why: the last look's reason, in the provider's or ReelQueue's words.
    """

    job_id: int
    candidates: list[dict[str, Any]]
    search: LostCreateSearch
    looked: bool
    why: str = ""

    @property
    def words(self) -> str:
        """What was looked for and found, in one paragraph (CLI, window, API)."""
        job = self.job_id
        pick = (f"Look in the provider's dashboard, then 'reelqueue resolve {job} --render "
                f"ID' if it is there, or '--create-again' (charged again) if it is not.")
        if self.candidates:
            return (f"Job {job}: the provider's records hold renders that could be this "
                    f"job's; pick one with 'reelqueue resolve {job} --render ID' (a render "
                    "goes to at most one job), or '--create-again' if none is it.")
        if not self.search.looks:
            return (f"Job {job}: this provider cannot be searched for an earlier create on "
                    "its account; nothing was looked for in its records. " + pick)
        if not self.looked:
            why = f" ({self.why})" if self.why else ""
            return (f"Job {job}: the provider's records could not be read{why}; nothing "
                    "was found and nothing is concluded. 'reelqueue retry "
                    f"{job}' looks again (no charge). " + pick)
        if not self.search.proves_absence:
            return (f"Job {job}: no render was found in the provider's records, which can "
                    "find a render but never prove one absent (fal's history lists "
                    "finished requests only): it may still be running or be listed later. "
                    f"'reelqueue retry {job}' looks again (no charge). " + pick)
        why = f" ({self.why})" if self.why else ""
        return (f"Job {job}: the provider's records were read and could not settle it"
                f"{why}; no candidate was found. " + pick)


async def unknown_candidates(session: Session, job_id: int) -> UnknownCreate:
    """What the last look for this job's unknown create found: the renders it could not
    choose between, whether anything was read, and how its account is searched now.
    InputError when the job holds no create whose outcome is unknown."""
    job = await session.journal.get_job(job_id)
    if job is None:
        raise InputError(f"There is no job {job_id}.")
    if not _is_unknown(job):
        raise InputError(f"Job {job_id} holds no create with an unknown outcome "
                         f"({job.state.value.lower()}); nothing to resolve.")
    account = None if job.account is None else await session.journal.get_account(job.account)
    search = account_lost_create_search(account, session.providers)
    for entry in reversed(await session.journal.ledger(job_id)):
        if entry.event == "reconcile_unresolved":
            candidates = list(entry.detail.get("candidates") or [])
            # Entries before issue 32 do not say whether the records were read: only
            # candidates prove it.
            looked = bool(candidates) or entry.detail.get("looked") is True
            return UnknownCreate(job_id, candidates, search, looked,
                                 str(entry.detail.get("why") or ""))
    return UnknownCreate(job_id, [], search, False)


async def unknown_create_evidence(session: Session, job_id: int
                                  ) -> create_evidence.CreateEvidence:
    """What the provider's usage counts say of the job's unknown create ("billed", "not
    counted", "not provable: N creates in the window"; issue 32 item 6), read now, kept on
    the job's ledger (every front end shows it from there) and shown beside ``resolve``'s
    choices. Information only: it creates nothing and decides nothing (DESIGN.md invariant
    11). InputError when the job holds no create with an unknown outcome."""
    return await create_evidence.read_create_evidence(session, job_id)


async def resolve_with_render(session: Session, job_id: int, provider_job_id: str) -> None:
    """The user's pick of the render of a create whose outcome stayed unknown: the job reads
    that render (no new create). InputError when the job holds no unknown create or the
    render belongs to another job (a render goes to at most one job)."""
    job = await session.journal.get_job(job_id)
    if job is None:
        raise InputError(f"There is no job {job_id}.")
    if not _is_unknown(job):
        raise InputError(f"Job {job_id} holds no create with an unknown outcome "
                         f"({job.state.value.lower()}); nothing to resolve.")
    try:
        done = await session.journal.attach_render(job_id, provider_job_id,
                                                   session.clock.now())
    except RenderAlreadyRecorded as exc:
        raise InputError(str(exc)) from exc
    if done:
        await session.changed(jobs=[job_id])
    else:
        raise InputError(f"Job {job_id} changed meanwhile; nothing was done.")


async def resolve_by_creating_again(session: Session, job_id: int) -> RetryPlan:
    """The user's explicit "create it again" for an unknown create (its first create may
    already be charged: said by the plan, written as a deliberate re-render)."""
    job = await session.journal.get_job(job_id)
    if job is None or not _is_unknown(job):
        raise InputError(f"Job {job_id} holds no create with an unknown outcome; use "
                         "'reelqueue retry' for other jobs.")
    plan = await retry_plan(session, [job_id], create_again=True)
    await retry(session, [job_id], reconcile=False)
    return plan


def _is_unknown(job: Job) -> bool:
    return create_evidence.holds_unknown_create(job)


async def prioritize_jobs(session: Session, job_ids: list[int],
                          priority: int | None = None) -> Prioritized:
    """Give the jobs ``priority`` (None: move them to the front)."""
    result = await session.journal.prioritize_jobs(list(job_ids), session.clock.now(),
                                                   priority=priority)
    await session.changed()
    return result


async def prioritize_batch(session: Session, batch_id: int,
                           priority: int | None = None) -> Prioritized:
    """Every unfinished job of the batch (None: to the front)."""
    result = await session.journal.prioritize_batch(batch_id, session.clock.now(),
                                                    priority=priority)
    await session.changed()
    return result


async def set_batch_paused(session: Session, batch_id: int, paused: bool) -> Batch | None:
    """Pause (its jobs are not claimed; renders in flight finish) or resume a batch; None
    when there is no such batch."""
    batch = await session.journal.set_batch_paused(batch_id, paused, session.clock.now())
    await session.changed()
    return batch


async def set_batch_cap(session: Session, batch_id: int, usd: float | None) -> Batch:
    """The batch's spend cap in USD (None: no cap). Raising or lifting it releases the jobs
    it held at once."""
    batch = await session.journal.update_batch_settings(batch_id, {"max_spend": usd},
                                                        session.clock.now())
    await session.changed()
    if batch is None:
        raise InputError(f"There is no batch {batch_id}.")
    return batch


def is_paused(batch: Batch) -> bool:
    return bool(batch.settings.get("paused"))


@dataclass(frozen=True)
class BatchSummary:
    """A batch with its job counts.

    Attributes:
        batch: the batch. jobs: its jobs. unfinished: those not in a final state.
        paused: its waiting jobs are not started.
    """

    batch: Batch
    jobs: int
    unfinished: int

    @property
    def paused(self) -> bool:
        return is_paused(self.batch)


async def list_batches(session: Session) -> list[BatchSummary]:
    """Every batch, oldest first, with how many of its jobs are unfinished."""
    journal = session.journal

    def read(store: Store) -> list[BatchSummary]:
        out = []
        for batch in store.list_batches():
            jobs = store.list_jobs(batch_id=batch.id)
            out.append(BatchSummary(batch, len(jobs),
                                    sum(1 for j in jobs if j.state not in FINAL)))
        return out

    return await journal.call(read, journal.sync)


async def batches(session: Session) -> list[Batch]:
    """Every batch (no counts)."""
    journal = session.journal
    return await journal.list_batches()
