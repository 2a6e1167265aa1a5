"""When a render is polled (issue 33 item 3): poll when it can matter.

Two rules, both in memory (no journal read per poll):

- **The first poll from the typical time.** The engine keeps each render kind's finished
  times (:class:`~reelqueue.domain.render_times.RenderTimes`): read once at start from the
  journal (``recent_render_times``, bounded) and added to by its own completions. A render
  this engine submitted on an account whose answers carry no progress is first polled at
  a fraction of its kind's typical time (the range's low end: p25 once there are enough
  renders), never later than the account's last poll hint, between the config's floor and
  ceiling. Without a typical time, or on an account whose answers carry progress (the pace
  of the progress says when it ends: ``render.poll_wait``), the first poll is at once, as
  before. Later polls keep their pacing.
- **An even spread within the account's budget.** Each account's polls go through a slot
  schedule: one poll every ``60 / per_minute`` seconds at most, in the order the polls
  fell due (the oldest due goes first, so no render waits for ever). The budget is the
  provider's published limit where its adapter gives one (``polls_per_minute``), else
  :func:`default_polls_per_minute` from the account's capacity. A thousand renders
  reattached after a restart then poll spread over seconds, not at one tick. Only polls
  wait for a slot: creates and downloads never do, and no account waits for another's.

And one rule for an account whose adapter lists many renders in one call
(:class:`~reelqueue.providers.base.ListPollProvider`):

- **One list call per account, not one poll per render.** A render that asks for its
  status joins the account's pending asks; the account's next poll slot (waited for no
  less than :data:`LIST_GATHER_SECONDS`, so renders falling due at about the same time
  meet) sends ONE ``poll_many`` for the pending ids (at most the adapter's
  ``poll_many_limit``; the rest wait for the next slot). A list call counts as one poll
  against the budget. Each id found gets its answer; an id missing from the answer is
  polled on its own (its own slot, the single ``poll``): never concluded gone. A list
  call that fails with a rate limit or a refused key is each asker's error, as its own
  poll's would be (polling one by one would send N requests into an account that just
  refused one); any other failure (an unreadable answer, a 5xx, a timeout, a list the
  server lacks) sends that round's asks to single polls, so the render sees its own
  poll's answer and render.py's handling of it, and the account's list is left alone
  for a while (:data:`LIST_REST_SECONDS`, doubling while it keeps failing). So does a
  list read that answers none of its asks (the renders are beyond the pages it reads).
  A round with a single render due polls it on its own: one poll is a smaller read than
  a list page. A render asks alone (``status(..., alone=True)``) when its poll is aimed
  at its end by its progress (``render.poll_wait``): the gathering would keep its
  finished slot empty that long.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Protocol

from reelqueue.domain.errors import ErrorClass, ErrorLabel, ProviderError
from reelqueue.domain.render_times import RenderTimes
from reelqueue.providers.base import (
    ListPollProvider,
    RemoteStatus,
    list_poll_of,
    poll_many_limit,
)

POLLS_PER_SLOT_MINUTE = 60.0
"""The default budget per render slot: one poll a second on average, well above what the
poll back-off asks in steady state (one every 5–20 s) and far below a herd."""
MIN_POLLS_PER_MINUTE = 60.0
"""The least default budget of an account, whatever its capacity."""
MAX_POLLS_PER_MINUTE = 600_000.0
"""A published budget above this is read as this (a slot of 0.1 ms)."""
LIST_GATHER_SECONDS = 0.5
"""How long a list call waits at least for more renders of its account to fall due: a
render's answer is up to this much later than a single poll's, against poll waits of
5-20 s (docs/benchmarks.md "Renders in flight", session 23: 1 s cost 0.6 s of latency
from a render's end to its file at the median)."""
LIST_REST_SECONDS = 10.0
"""After a list call failed (other than a rate limit or a refused key), the account's
renders are polled one by one for this long, doubled per failure in a row (at most
:data:`LIST_REST_MAX_SECONDS`)."""
LIST_REST_MAX_SECONDS = 300.0


class _Polls(Protocol):
    async def poll(self, provider_job_id: str) -> RemoteStatus: ...


def default_polls_per_minute(capacity: int) -> float:
    """An account's poll budget when its provider publishes none: from its capacity."""
    return max(MIN_POLLS_PER_MINUTE, max(capacity, 1) * POLLS_PER_SLOT_MINUTE)


def published_polls_per_minute(provider: object) -> float | None:
    """The adapter's ``polls_per_minute`` (the provider's documented limit for status
    reads), or None when it gives none or something that is not a positive number."""
    value = getattr(provider, "polls_per_minute", None)
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    if not math.isfinite(value) or value <= 0:
        return None
    return min(float(value), MAX_POLLS_PER_MINUTE)


def poll_budget(provider: object, capacity: int) -> float:
    """Polls per minute an account may make: published, else from its capacity."""
    return published_polls_per_minute(provider) or default_polls_per_minute(capacity)


def first_poll_wait(typical_low: float | None, *, fraction: float, hint: float | None,
                    floor: float, ceiling: float) -> float | None:
    """Seconds from a create's answer to its render's first poll, or None (poll at once)
    when no typical time is known. ``fraction`` of the typical time, never later than the
    provider's ``hint`` when there is one, between ``floor`` and ``ceiling``."""
    if typical_low is None or not math.isfinite(typical_low) or typical_low <= 0:
        return None
    wait = typical_low * fraction
    if hint is not None and math.isfinite(hint) and hint > 0:
        wait = min(wait, hint)
    return min(max(wait, floor), max(floor, ceiling))


@dataclass
class _Account:
    """One account's slot schedule (``interval`` 0: no budget set, no wait) and what its
    last poll answer carried."""

    interval: float = 0.0
    next_slot: float = -math.inf
    progress: bool = False
    hint: float | None = None


@dataclass
class _Lister:
    """One account's pending asks for its next list call, and the task that sends it."""

    asks: dict[str, list[asyncio.Future[RemoteStatus | None]]] = field(default_factory=dict)
    task: asyncio.Task[None] | None = None
    failures: int = 0
    rest_until: float = -math.inf


class PollPlanner:
    """Attributes:
    render_times: finished renders' times by kind (the journal's at start, then this
        engine's own completions).
    polls: polls that went through a slot, by account (for tests and benchmarks); a
        list call is one.
    delayed: polls that waited for their slot, by account.
    list_calls: list calls sent, by account.
    listed: renders answered by a list call, by account.
    missed: renders a list call did not answer (polled on their own), by account.
    list_failed: list calls that failed and sent their asks to single polls.
    """

    def __init__(self, now: Callable[[], float] | None = None, *,
                 gather: float = LIST_GATHER_SECONDS) -> None:
        # The loop's monotonic time by default: slots are this process's own schedule,
        # never compared across machines (DESIGN.md invariant 14 is for journal times).
        self._now = now
        self.render_times = RenderTimes()
        self._accounts: dict[str, _Account] = {}
        self.polls: dict[str, int] = {}
        self.delayed: dict[str, int] = {}
        self.gather = gather
        self._listers: dict[str, _Lister] = {}
        self.list_calls: dict[str, int] = {}
        self.listed: dict[str, int] = {}
        self.missed: dict[str, int] = {}
        self.list_failed: dict[str, int] = {}

    def _time(self) -> float:
        return self._now() if self._now is not None else asyncio.get_running_loop().time()

    # -- typical times -----------------------------------------------------------------
    def load(self, times: Iterable[tuple[str, float]]) -> int:
        """Add the journal's finished renders (kind, seconds); how many were kept. A
        value that is not a finite time is left out."""
        kept = 0
        for kind, seconds in times:
            if math.isfinite(seconds) and seconds >= 0:
                self.render_times.add(kind, float(seconds))
                kept += 1
        return kept

    def finished(self, kind: str, seconds: float) -> None:
        """A render of ``kind`` this engine completed took ``seconds`` (claim to file)."""
        if math.isfinite(seconds):
            self.render_times.add(kind, seconds)

    def typical_low(self, kind: str) -> float | None:
        typical = self.render_times.range(kind)
        return None if typical is None else typical.low

    # -- what an account's answers carry -------------------------------------------------
    def answered(self, account: str, *, progress: bool, hint: float | None) -> None:
        """An unfinished render's poll answer on ``account``: whether it carried progress
        and the hint it gave (the last hint given is kept)."""
        state = self._accounts.get(account)
        if state is None:
            state = self._accounts[account] = _Account()
        # Progress once seen stays: a queued answer has none on providers that give it
        # while running.
        state.progress = state.progress or progress
        if hint is not None:
            state.hint = hint

    def first_wait(self, account: str, kind: str, *, fraction: float, floor: float,
                   ceiling: float) -> float | None:
        """Seconds from the create's answer to the first poll (:func:`first_poll_wait`),
        or None (at once) where the account's answers carry progress or no typical time
        of ``kind`` is known."""
        state = self._accounts.get(account)
        if state is not None and state.progress:
            return None
        return first_poll_wait(self.typical_low(kind), fraction=fraction,
                               hint=None if state is None else state.hint,
                               floor=floor, ceiling=ceiling)

    # -- the per-account budget ----------------------------------------------------------
    def set_budget(self, account: str, per_minute: float) -> None:
        """The account's polls per minute from now on (slots already given stand)."""
        # A hair longer than 60 / per_minute, so float sums of slots never fit one poll
        # more than the budget in a minute.
        interval = 60.0 / max(per_minute, 1e-9) * (1 + 1e-9)
        state = self._accounts.get(account)
        if state is None:
            self._accounts[account] = _Account(interval)
        else:
            state.interval = interval

    def budget(self, account: str) -> float | None:
        state = self._accounts.get(account)
        return None if state is None or not state.interval else 60.0 / state.interval

    def reserve(self, account: str) -> float:
        """Take the account's next free slot: seconds to wait for it (0: now; always 0 on
        an account whose budget was never set)."""
        self.polls[account] = self.polls.get(account, 0) + 1
        state = self._accounts.get(account)
        if state is None or not state.interval:
            return 0.0
        now = self._time()
        slot = max(now, state.next_slot)
        state.next_slot = slot + state.interval
        return slot - now

    async def turn(self, account: str) -> None:
        """Wait for the account's next poll slot. Slots are given in the order polls
        ask, which is the order they fell due: the oldest due polls first."""
        wait = self.reserve(account)
        if wait > 0:
            self.delayed[account] = self.delayed.get(account, 0) + 1
            await asyncio.sleep(wait)

    # -- one list call for many renders -------------------------------------------------
    async def stop(self) -> None:
        """End every account's list task (the engine's stop, after its renders): a list
        read under way is cancelled, and any asker still waiting is answered "not
        listed" (its own poll decides, if it still runs)."""
        tasks = [state.task for state in self._listers.values()
                 if state.task is not None and not state.task.done()]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    async def status(self, account: str, provider: _Polls, provider_job_id: str, *,
                     alone: bool = False) -> RemoteStatus:
        """The render's current state: from the account's next list call when its adapter
        lists renders (and ``alone`` is False), else (or when the list did not answer
        it) from its own poll in its own slot. Raises the poll's (or the list call's
        account-level) :class:`ProviderError`."""
        lister = None if alone else list_poll_of(provider, provider_job_id)
        if lister is not None:
            answer = await self._listed_status(account, lister, provider_job_id)
            if answer is not None:
                return answer
        await self.turn(account)
        return await provider.poll(provider_job_id)

    async def _listed_status(self, account: str, lister: ListPollProvider,
                             provider_job_id: str) -> RemoteStatus | None:
        state = self._listers.get(account)
        if state is None:
            state = self._listers[account] = _Lister()
        if self._time() < state.rest_until:
            return None
        future: asyncio.Future[RemoteStatus | None] = (
            asyncio.get_running_loop().create_future())
        state.asks.setdefault(provider_job_id, []).append(future)
        if state.task is None or state.task.done():
            state.task = asyncio.create_task(self._send_lists(account, lister, state),
                                             name=f"list-poll-{account}")
        return await future

    async def _send_lists(self, account: str, lister: ListPollProvider,
                          state: _Lister) -> None:
        """The account's list calls, one per poll slot, while asks are pending."""
        limit = poll_many_limit(lister)
        batch: dict[str, list[asyncio.Future[RemoteStatus | None]]] = {}
        try:
            while state.asks:
                wait = self.reserve(account)
                if wait > 0:
                    self.delayed[account] = self.delayed.get(account, 0) + 1
                await asyncio.sleep(max(wait, self.gather))
                ids = [i for i, futures in state.asks.items()
                       if any(not f.done() for f in futures)][:limit]
                batch = {i: state.asks.pop(i) for i in ids}
                for i in [i for i, fs in state.asks.items() if all(f.done() for f in fs)]:
                    del state.asks[i]  # every asker gave up (its render was stopped)
                if not batch:
                    continue
                if len(batch) == 1:
                    # One render due: its own poll is the smaller read (a list page
                    # carries up to a hundred renders), in a slot of its own.
                    for futures in batch.values():
                        _settle(futures, None)
                    continue
                self.list_calls[account] = self.list_calls.get(account, 0) + 1
                self._answer(account, state, batch, await self._call(lister, ids))
        except BaseException:
            # Stopped (the engine is closing) or a bug here: no asker waits for ever, the
            # ones of the list read under way included.
            for futures in (*batch.values(), *state.asks.values()):
                _settle(futures, None)
            state.asks.clear()
            raise

    @staticmethod
    async def _call(lister: ListPollProvider, ids: list[str]
                    ) -> Mapping[str, RemoteStatus] | ProviderError | None:
        """The list call's answer, its account-level error, or None (failed otherwise)."""
        try:
            return await lister.poll_many(tuple(ids))
        except ProviderError as exc:
            if exc.error_class == ErrorClass.ACCOUNT and exc.label in (
                    ErrorLabel.RATE_LIMITED, ErrorLabel.KEY_REJECTED,
                    ErrorLabel.OUT_OF_CREDITS):
                return exc
            return None
        except Exception:  # a plug-in's bug: its renders are polled one by one
            return None

    def _answer(self, account: str, state: _Lister,
                batch: dict[str, list[asyncio.Future[RemoteStatus | None]]],
                answer: Mapping[str, RemoteStatus] | ProviderError | None) -> None:
        if isinstance(answer, ProviderError):
            for futures in batch.values():
                for future in futures:
                    if not future.done():
                        future.set_exception(answer)
            return
        if answer is None or not isinstance(answer, Mapping):
            self._rest(state)
            self.list_failed[account] = self.list_failed.get(account, 0) + 1
            for futures in batch.values():
                _settle(futures, None)
            return
        answered = 0
        for render_id, futures in batch.items():
            try:
                found = answer.get(render_id)
            except Exception:  # a plug-in's odd mapping: this render polls on its own
                found = None
            if isinstance(found, RemoteStatus):
                answered += 1
                self.listed[account] = self.listed.get(account, 0) + 1
                _settle(futures, found)
            else:
                self.missed[account] = self.missed.get(account, 0) + 1
                _settle(futures, None)
        if answered:
            state.failures = 0
        else:
            # None of its asks were in the list's pages (more newer renders than the page
            # budget reads, or a list that lags): single polls cost less than a list read
            # plus them, so the list rests as after a failure.
            self._rest(state)

    def _rest(self, state: _Lister) -> None:
        state.failures += 1
        rest = min(LIST_REST_MAX_SECONDS,
                   LIST_REST_SECONDS * 2 ** min(state.failures - 1, 16))
        state.rest_until = self._time() + rest


def _settle(futures: list[asyncio.Future[RemoteStatus | None]],
            value: RemoteStatus | None) -> None:
    for future in futures:
        if not future.done():
            future.set_result(value)
