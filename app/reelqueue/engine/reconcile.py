"""Finding a create whose answer was lost in the provider's own records (DESIGN.md
invariant 13, issue 19).

A create that may have reached the provider is never sent again blindly. Where the provider
lists the account's renders with what it echoes of each create, the list is searched:

- **Window.** Our render was created in ``[intent - margin, intent + create window +
  margin]``: the intent is committed before a byte is sent, the create cannot be sent later
  than the HTTP client's bounds after it (:func:`create_window`), and ``margin`` covers the
  offset between our clock (or the team database's) and the provider's.
- **Settled.** The list is read only once the provider's settle time has passed since the
  latest moment the create could have been sent; a list read sooner proves nothing.
- **Matching** on the echo the adapter normalises (prompt, model, duration...): the jobs of
  one account with the same echo form a group, matched against the renders of that echo in
  their windows that no other job holds. As many renders as jobs: each job takes one (in
  time order). No render, a complete listing and nothing in the window that cannot be
  compared: the create never landed (*absent*). Anything else stays *unknown* with its
  candidates, for the user: a render goes to at most one job, and two candidates are never
  guessed between.

All the account's unresolved jobs are decided from one scan; the account's searches run one
at a time (:class:`Reconciler`).
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from reelqueue.domain.clock import Clock
from reelqueue.domain.models import Job
from reelqueue.domain.states import JobState
from reelqueue.engine.async_store import AsyncStore
from reelqueue.engine.config import EngineConfig
from reelqueue.providers.base import (
    RemoteRecord,
    RenderRequest,
    SearchableProvider,
    SearchResult,
)

log = logging.getLogger(__name__)

CLOCK_MARGIN_SECONDS = 120.0
"""How far the provider's creation times may be off ours (or the team database's), either
way. Wider only adds candidates (which are shown, never guessed between); narrower could
leave our render outside the window and wrongly conclude "absent"."""

Outcome = Literal["found", "absent", "unknown"]

EARLY_WHY = "the provider's list was read before its settle time"


def create_window(config: EngineConfig) -> float:
    """Seconds after the intent within which the create may still have reached the
    provider: one request's connect, write and read bounds (each at most the HTTP timeout),
    with a half more for the journal write and scheduling (docs/providers.md)."""
    return 2.5 * config.http_timeout_seconds


@dataclass(frozen=True)
class Pending:
    """One create whose answer was lost.

    Attributes:
        job_id: the job.
        request: what was sent (its echo is what the provider shows of it).
        intent_at: when its intent was first committed; None when the journal no longer
            says (the ledger was pruned), and then nothing can be concluded.
    """

    job_id: int
    request: RenderRequest
    intent_at: float | None

    def window(self, create_seconds: float, margin: float) -> tuple[float, float] | None:
        if self.intent_at is None:
            return None
        return (self.intent_at - margin, self.intent_at + create_seconds + margin)


@dataclass(frozen=True)
class Verdict:
    """What the provider's records say of one create.

    Attributes:
        outcome: found (reattach ``provider_job_id``), absent (create once), unknown.
        provider_job_id: the render found.
        candidates: the renders that could be it (unknown), for the user to choose from.
        why: in the user's words.
        window: the creation times searched (Unix seconds).
        read_at: when the list was read.
        complete: whether the listing covered the whole window.
    """

    outcome: Outcome
    provider_job_id: str | None = None
    candidates: tuple[RemoteRecord, ...] = ()
    why: str = ""
    window: tuple[float, float] | None = None
    read_at: float = 0.0
    complete: bool = False

    def ledger_detail(self, settle_seconds: float) -> dict[str, Any]:
        """The ledger's record of the decision (``reconciled``, ``reconciled_absent``,
        ``reconcile_unresolved``)."""
        return {
            "method": "search", "provider_job_id": self.provider_job_id,
            "window": list(self.window) if self.window else None,
            "settle_seconds": settle_seconds, "read_at": self.read_at,
            "complete": self.complete, "why": self.why,
            "candidates": [candidate_dict(r) for r in self.candidates],
        }


def candidate_dict(record: RemoteRecord) -> dict[str, Any]:
    return {"id": record.provider_job_id, "created_at": record.created_at,
            "status": record.status}


def _signature(echo: Mapping[str, Any]) -> str:
    return json.dumps(echo, sort_keys=True, default=str, ensure_ascii=False)


def _in_window(record: RemoteRecord, window: tuple[float, float] | None) -> bool:
    if window is None or record.created_at is None:
        return True  # cannot be ruled out
    return window[0] <= record.created_at <= window[1]


def decide(
    pending: Sequence[Pending], others: Sequence[Pending], result: SearchResult, *,
    read_at: float, held: set[str], echo: Callable[[RenderRequest], Mapping[str, Any]],
    create_seconds: float, margin: float, settle_seconds: float,
    echo_keeps_hours: float | None = None,
) -> dict[int, Verdict]:
    """Decide each of ``pending`` from one listing (pure: no I/O).

    ``others`` are the account's other unresolved creates (parked for the user, or not yet
    settled): they are matched alongside, so a render that could be theirs is never given
    to a pending job by mistake, but they get no verdict here. ``held``: provider job ids a
    job of the journal already holds (never candidates).
    """
    everyone = [*pending, *others]
    signature = {p.job_id: _signature(echo(p.request)) for p in everyone}
    windows = {p.job_id: p.window(create_seconds, margin) for p in everyone}
    free = [r for r in result.records if r.provider_job_id not in held]
    verdicts: dict[int, Verdict] = {}
    for job in pending:
        window = windows[job.job_id]
        base = {"window": window, "read_at": read_at, "complete": result.complete}
        if job.intent_at is None or window is None:
            verdicts[job.job_id] = Verdict(
                "unknown", why="the time of the create is no longer in the journal, so "
                "the provider's records cannot be narrowed to it", **base)  # type: ignore[arg-type]
            continue
        if echo_keeps_hours is not None and (
                read_at - job.intent_at > echo_keeps_hours * 3600 - margin):
            verdicts[job.job_id] = Verdict(
                "unknown", why=f"the provider removes what it echoes of a create after "
                f"{echo_keeps_hours:g} h, and this create is older, so its render cannot be "
                "told from others", **base)  # type: ignore[arg-type]
            continue
        group = sorted((p for p in everyone if signature[p.job_id] == signature[job.job_id]),
                       key=lambda p: (p.intent_at if p.intent_at is not None else -1.0,
                                      p.job_id))
        group_windows = [windows[p.job_id] for p in group]
        candidates = sorted(
            (r for r in free if r.echo is not None
             and _signature(r.echo) == signature[job.job_id]
             and any(_in_window(r, w) for w in group_windows)),
            key=lambda r: (r.created_at if r.created_at is not None else float("inf"),
                           r.provider_job_id))
        blind = [r for r in free if r.echo is None
                 and any(_in_window(r, w) for w in group_windows)]
        mine = tuple(r for r in candidates if _in_window(r, window))
        if blind:
            verdicts[job.job_id] = Verdict(
                "unknown", candidates=mine + tuple(blind),
                why=f"{len(blind)} render(s) created in the window cannot be compared (the "
                    "provider no longer shows what they were asked for)",
                **base)  # type: ignore[arg-type]
        elif not candidates:
            if result.complete:
                verdicts[job.job_id] = Verdict(
                    "absent", why="the provider's records hold no render of this prompt "
                    "and parameters created in the window", **base)  # type: ignore[arg-type]
            else:
                verdicts[job.job_id] = Verdict(
                    "unknown", why="the provider's list could not be read over the whole "
                    "window, so a missing render proves nothing",
                    **base)  # type: ignore[arg-type]
        elif len(candidates) == len(group):
            paired = candidates[group.index(next(p for p in group if p.job_id == job.job_id))]
            if _in_window(paired, window):
                verdicts[job.job_id] = Verdict(
                    "found", provider_job_id=paired.provider_job_id, candidates=(paired,),
                    why="one render of this prompt and parameters in the window",
                    **base)  # type: ignore[arg-type]
            else:
                verdicts[job.job_id] = Verdict(
                    "unknown", candidates=mine, why="the renders of this prompt do not line "
                    "up with the jobs that sent it", **base)  # type: ignore[arg-type]
        elif len(candidates) > len(group):
            verdicts[job.job_id] = Verdict(
                "unknown", candidates=mine,
                why=f"{len(candidates)} renders of this prompt and parameters for "
                    f"{len(group)} job(s): which is ours cannot be told (another client "
                    "on the same key?)", **base)  # type: ignore[arg-type]
        else:
            verdicts[job.job_id] = Verdict(
                "unknown", candidates=mine,
                why=f"{len(candidates)} render(s) of this prompt for {len(group)} jobs that "
                    "sent it: which of them landed cannot be told",
                **base)  # type: ignore[arg-type]
        if (read_at < job.intent_at + create_seconds + settle_seconds
                and verdicts[job.job_id].outcome != "found"):
            # Look early, conclude late (issue 33): a render found is ours at once; "not
            # there" (or anything short of found) proves nothing before the settle time.
            verdicts[job.job_id] = Verdict(
                "unknown", candidates=verdicts[job.job_id].candidates, why=EARLY_WHY,
                **base)  # type: ignore[arg-type]
    return verdicts


def early_looks(intent_at: float, create_seconds: float, settle_seconds: float) -> list[float]:
    """When a lost create is looked for before its settle time (issue 33, "look early,
    conclude late"): as soon as the provider can have listed it (the create window after
    the intent), then every quarter of the settle time (at least a create window apart),
    until the settle time, when "not there" can be concluded."""
    settled = intent_at + create_seconds + settle_seconds
    step = max(settle_seconds / 4, create_seconds, 1.0)
    looks, at = [], intent_at + create_seconds
    while at < settled - step / 2:
        looks.append(at)
        at += step
    return looks


@dataclass
class _Account:
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    decided: dict[int, Verdict] = field(default_factory=dict)


class Reconciler:
    """Runs the searches of each account one at a time and decides every unresolved create
    of the account from one scan (a second job waiting on the same account usually finds
    its verdict already made).

    Attributes:
        store: the journal.
        clock: the engine's clock.
        config: for the create window.
        margin: :data:`CLOCK_MARGIN_SECONDS`.
    """

    def __init__(self, store: AsyncStore, clock: Clock, config: EngineConfig,
                 margin: float = CLOCK_MARGIN_SECONDS) -> None:
        self.store = store
        self.clock = clock
        self.config = config
        self.margin = margin
        self._accounts: dict[str, _Account] = {}

    def settle_seconds(self, provider: SearchableProvider) -> float:
        """The provider's settle time (a test's config may set its own)."""
        override = self.config.reconcile_settle_seconds
        return provider.settle_seconds if override is None else override

    async def resolve(self, *, account: str, provider_kind: str,
                      provider: SearchableProvider, job: Job,
                      before_asking: Callable[[], Awaitable[None]] | None = None) -> Verdict:
        """The verdict on ``job``'s unresolved create (its ``client_token``), waiting for
        the provider's settle time first; ``before_asking`` is awaited after that wait,
        just before the provider's list is read. Provider errors propagate (the caller
        keeps the create unresolved: unknown is never "no")."""
        state = self._accounts.setdefault(account, _Account())
        settle = self.settle_seconds(provider)
        async with state.lock:
            # Decided from an earlier scan of this account (only settled jobs are decided).
            ready = state.decided.pop(job.id, None)
            if ready is not None:
                return ready
            rows = await self.store.unresolved_submissions(account)
            intent = next((at for row, at in rows if row.id == job.id), None)
            create_seconds = create_window(self.config)
            if intent is not None:
                for look_at in early_looks(intent, create_seconds, settle):
                    if look_at < self.clock.now():
                        continue
                    await asyncio.sleep(look_at - self.clock.now())
                    early = await self._look(account, provider_kind, provider, job, settle,
                                             before_asking)
                    before_asking = None  # said once, before the first read
                    if early.outcome == "found":
                        return early
                wait = intent + create_seconds + settle - self.clock.now()
                if wait > 0:
                    log.info("job %s: the provider's list is read in %.0f s (its settle "
                             "time)", job.id, wait)
                    await asyncio.sleep(wait)
            return await self._look(account, provider_kind, provider, job, settle,
                                    before_asking)

    async def _look(self, account: str, provider_kind: str, provider: SearchableProvider,
                    job: Job, settle: float,
                    before_asking: Callable[[], Awaitable[None]] | None) -> Verdict:
        """One read of the account's list and the verdicts it gives (held under the
        account's lock by :meth:`resolve`)."""
        state = self._accounts[account]
        create_seconds = create_window(self.config)
        rows = await self.store.unresolved_submissions(account)
        intent = next((at for row, at in rows if row.id == job.id), None)
        now = self.clock.now()
        everyone = [Pending(row.id, _request_of(row), at) for row, at in rows
                    if row.client_token]
        if not any(p.job_id == job.id for p in everyone):
            everyone.append(Pending(job.id, _request_of(job), intent))
        settled = [p for p in everyone if p.intent_at is not None
                   and now >= p.intent_at + create_seconds + settle]
        pending = [p for p in settled if p.job_id == job.id] or [
            p for p in everyone if p.job_id == job.id]
        pending += [p for p in settled if p.job_id != job.id and _in_flight(rows, p)]
        others = [p for p in everyone if p not in pending]
        windows = [w for p in pending
                   if (w := p.window(create_seconds, self.margin)) is not None]
        since = min((w[0] for w in windows), default=now - create_seconds - self.margin)
        if before_asking is not None:
            await before_asking()
        result = await provider.search(since, now)
        read_at = self.clock.now()
        held = await self.store.known_provider_job_ids(
            provider_kind, account, [r.provider_job_id for r in result.records])
        verdicts = decide(pending, others, result, read_at=read_at, held=held,
                          echo=provider.echo, create_seconds=create_seconds,
                          margin=self.margin, settle_seconds=settle,
                          echo_keeps_hours=provider.echo_keeps_hours)
        for job_id, verdict in verdicts.items():
            if job_id != job.id and verdict.why != EARLY_WHY:
                state.decided[job_id] = verdict
        return verdicts[job.id]


def _in_flight(rows: Sequence[tuple[Job, float | None]], pending: Pending) -> bool:
    """A job the engine is reconciling now (SUBMITTING): its verdict can be kept for it."""
    return any(row.id == pending.job_id and row.state == JobState.SUBMITTING
               for row, _ in rows)


def _request_of(job: Job) -> RenderRequest:
    return RenderRequest(job_key=job.job_key, client_token=job.client_token or "",
                         prompt=job.prompt, params=job.params)
