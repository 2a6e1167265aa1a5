"""When the engine reads each account's view (issue 32 item 2), and the reading itself.

The engine reads an account's balance, limits and usage only on the machine that holds
its key (it has built an adapter for it), and only when the adapter offers the view
(``providers.base.account_view_of``): at connect (the first pass that builds the adapter),
then at most every :data:`VIEW_EVERY_SECONDS` per account (a view another process or
machine kept lately counts: it is not read again sooner), before a new batch's first claim
(unless a view of the last :data:`BATCH_FRESH_SECONDS` is kept), and at once after the
account was refused for being out of credits. A read the provider rate-limits is read less often:
the wait starts at twice :data:`VIEW_EVERY_SECONDS` and doubles up to
:data:`VIEW_BACKOFF_MAX_SECONDS`, never sooner than its Retry-After. Reads run beside
the pump, never in it: a slow provider never holds up a claim on another account. The
account being read waits only for the two reads that decide what it may start: the one at
connect and the one before a new batch (each ends, read or failed, within the adapter's
HTTP timeout).

What was read goes to the journal (``Store.put_account_view``), so every process and every
machine of a team sees the same view. A read that fails is kept as a view with no figure
and the reason. Nothing here starts or stops a render: the claim does, from the journal's
copy (store/provider_limits.py, store/balance.py: issue 32 items 3 and 4).
"""

from __future__ import annotations

import asyncio
import logging
import math
from collections.abc import Awaitable, Callable
from dataclasses import replace

from reelqueue.domain.account_view import AccountView, unavailable_view
from reelqueue.domain.errors import ErrorLabel, ProviderError
from reelqueue.domain.states import AccountStatus
from reelqueue.providers.base import AccountViewProvider

__all__ = ["BATCH", "BATCH_FRESH_SECONDS", "CONNECT", "REFUSED", "TIME",
           "VIEW_BACKOFF_MAX_SECONDS", "VIEW_EVERY_SECONDS", "ViewReader", "ViewSchedule",
           "read_view"]

log = logging.getLogger(__name__)

VIEW_EVERY_SECONDS = 300.0
"""At most one read per account this often while the engine runs (the issue's 5 min)."""
VIEW_BACKOFF_MAX_SECONDS = 3600.0
"""The longest wait a rate-limited read backs off to (a Retry-After may ask for more)."""
BATCH_FRESH_SECONDS = 60.0
"""A view read this lately (by any process or machine) is fresh enough for a new batch's
first claim; an older one is read again first (issue 32 item 2: "before a batch's first
claim"): the balance and limits a batch starts on are at most a minute old."""
CONNECT, REFUSED, TIME, BATCH = "connect", "refused", "time", "batch"
"""Why a read is due (:meth:`ViewSchedule.due_reason`)."""


class ViewSchedule:
    """Per account, when its view may be read next (times from the caller's clock).

    Attributes:
        every: seconds between two reads of one account.
        backoff_max: the longest wait after a rate-limited read.
    """

    def __init__(self, every: float = VIEW_EVERY_SECONDS,
                 backoff_max: float = VIEW_BACKOFF_MAX_SECONDS) -> None:
        self.every = every
        self.backoff_max = backoff_max
        self._next: dict[str, float] = {}
        self._backoff: dict[str, float] = {}
        self._reading: set[str] = set()
        self._status: dict[str, AccountStatus] = {}
        self._read_at: dict[str, float] = {}  # the newest view's time, as far as known
        self._batch_due: set[str] = set()
        self._holding: set[str] = set()  # claims wait for the read under way

    def due_reason(self, account: str, now: float,
                   status: AccountStatus | None = None) -> str | None:
        """Why ``account``'s view should be read now: :data:`CONNECT` (never read by this
        engine), :data:`REFUSED` (``status`` turned out_of_credits since the last call, and
        no rate limit holds it back), :data:`TIME` (its time has come); None: not now."""
        before = self._status.get(account)
        if status is not None:
            self._status[account] = status
        if account in self._reading:
            return None
        next_at = self._next.get(account)
        if next_at is None:
            return CONNECT
        refused = (status == AccountStatus.OUT_OF_CREDITS
                   and before is not None and before != AccountStatus.OUT_OF_CREDITS)
        if refused and account not in self._backoff:
            return REFUSED
        if account in self._batch_due and account not in self._backoff:
            return BATCH  # a rate-limited read is not forced: read less often, not hammered
        return TIME if now >= next_at else None

    def due(self, account: str, now: float, status: AccountStatus | None = None) -> bool:
        return self.due_reason(account, now, status) is not None

    def batch_arrived(self, account: str, now: float,
                      fresh: float = BATCH_FRESH_SECONDS) -> None:
        """A batch this engine has not seen was added: unless a view of the last
        ``fresh`` seconds is known, ``account``'s view is due and its claims wait for it
        (:meth:`connecting`). An account never read yet is read at connect anyway."""
        if account in self._next and now - self._read_at.get(account, -math.inf) > fresh:
            self._batch_due.add(account)

    def skipped(self, account: str, next_at: float) -> None:
        """A read not made (another process read the account lately): next at ``next_at``."""
        self._reading.discard(account)
        self._holding.discard(account)
        self._read_at[account] = next_at - self.every
        self._next[account] = next_at

    def connecting(self, account: str) -> bool:
        """Whether a read that decides what ``account`` may start is under way (the first
        one, at connect, or the one before a new batch's first claim): the engine claims
        nothing on it until that read has ended (its limits may be lower than the user's
        setting, its balance lower than the last read's)."""
        return account in self._reading and (account not in self._next
                                             or account in self._holding)

    def started(self, account: str, reason: str | None = None) -> None:
        self._reading.add(account)
        self._batch_due.discard(account)
        if reason == BATCH:
            self._holding.add(account)

    def finished(self, account: str, now: float, *, rate_limited: bool = False,
                 retry_after: float | None = None) -> float:
        """Record a read's end; returns when the next read may start."""
        self._reading.discard(account)
        self._holding.discard(account)
        self._read_at[account] = now
        if rate_limited:
            before = self._backoff.get(account)
            wait = min(2 * (before or self.every), self.backoff_max)
            wait = max(wait, retry_after or 0.0)  # never sooner than the provider asked
            self._backoff[account] = wait
        else:
            self._backoff.pop(account, None)
            wait = self.every
        self._next[account] = now + wait
        return self._next[account]

    def forget(self, account: str) -> None:
        """The account is gone (or its adapter rebuilt): read it again as at connect."""
        self._next.pop(account, None)
        self._backoff.pop(account, None)
        self._status.pop(account, None)
        self._read_at.pop(account, None)
        self._batch_due.discard(account)
        self._holding.discard(account)


async def read_view(account: str, provider: AccountViewProvider, now: float,
                    read_by: str) -> tuple[AccountView, ProviderError | None]:
    """Read ``account``'s view: what the provider said, or a view with no figure and why
    (the error is returned beside it, for the caller's schedule). Never raises but for
    cancellation: a view is advice, and its failure must never stop a render."""
    try:
        view = await provider.account_view()
    except ProviderError as exc:
        return unavailable_view(account, str(exc), now, read_by), exc
    except Exception as exc:  # an adapter's bug: shown, logged, never fatal
        log.exception("reading the account view of %s failed", account)
        return unavailable_view(account, f"unexpected error: {type(exc).__name__}", now,
                                read_by), None
    return replace(view, account=account, read_by=read_by), None


class ViewReader:
    """The engine's reads of account views: scheduled, run as tasks beside the pump,
    written to the journal.

    Attributes:
        schedule: when each account is due.
    """

    def __init__(self, put: Callable[[AccountView], Awaitable[bool]],
                 now: Callable[[], float], read_by: str,
                 schedule: ViewSchedule | None = None,
                 stored: Callable[[], Awaitable[list[AccountView]]] | None = None) -> None:
        self.schedule = schedule or ViewSchedule()
        self._put = put
        self._stored = stored
        self._now = now
        self._read_by = read_by
        self._tasks: dict[str, asyncio.Task[None]] = {}

    def visit(self, account: str, status: AccountStatus,
              provider: AccountViewProvider | None) -> bool:
        """Start a read of ``account`` when its adapter offers a view and it is due;
        returns whether one started."""
        if provider is None:
            return False
        reason = self.schedule.due_reason(account, self._now(), status)
        if reason is None:
            return False
        self.schedule.started(account, reason)
        lately = BATCH_FRESH_SECONDS if reason == BATCH else self.schedule.every
        self._tasks[account] = asyncio.create_task(
            self._read(account, provider, forced=reason == REFUSED, lately=lately),
            name=f"account-view-{account}")
        return True

    def batch_arrived(self, account: str) -> None:
        """A new batch: ``account``'s view is read before it claims from it, unless fresh
        (:meth:`ViewSchedule.batch_arrived`)."""
        self.schedule.batch_arrived(account, self._now())

    def connecting(self, account: str) -> bool:
        """Whether ``account``'s first read is under way (:meth:`ViewSchedule.connecting`)."""
        return self.schedule.connecting(account)

    async def _read_lately(self, account: str, within: float) -> float | None:
        """When the journal's view of ``account`` was read, if within the last
        ``within`` seconds (by any process or machine), else None."""
        if self._stored is None:
            return None
        try:
            views = await self._stored()
        except Exception:  # the journal's trouble is the pump's to report
            return None
        now = self._now()
        for view in views:
            if (view.account == account and math.isfinite(view.read_at)
                    and now - within < view.read_at):
                return min(view.read_at, now)  # a read "in the future" counts as now
        return None

    async def _read(self, account: str, provider: AccountViewProvider, *,
                    forced: bool = False, lately: float = VIEW_EVERY_SECONDS) -> None:
        # "At most every 5 min per account": another process of the team (or a command)
        # may have read it lately; a refusal for want of credits reads regardless.
        read_at = None if forced else await self._read_lately(account, lately)
        if read_at is not None:
            self.schedule.skipped(account, read_at + self.schedule.every)
            self._tasks.pop(account, None)
            return
        rate_limited, retry_after = False, None
        try:
            view, error = await read_view(account, provider, self._now(), self._read_by)
            if error is not None and error.label == ErrorLabel.RATE_LIMITED:
                rate_limited, retry_after = True, error.retry_after
            await self._put(view)
        except asyncio.CancelledError:
            raise
        except Exception:  # the journal refused it: the next read tries again
            log.exception("keeping the account view of %s failed", account)
        finally:
            self.schedule.finished(account, self._now(), rate_limited=rate_limited,
                                   retry_after=retry_after)
            self._tasks.pop(account, None)

    @property
    def reading(self) -> bool:
        """Whether a read is under way (its view may let a waiting account start)."""
        return bool(self._tasks)

    async def wait(self) -> None:
        """Until the reads under way have ended (tests; an orderly stop)."""
        tasks = list(self._tasks.values())
        if tasks:
            await asyncio.gather(*tasks, return_exceptions=True)

    async def stop(self) -> None:
        tasks = list(self._tasks.values())
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
