"""Immutable events the engine publishes; the CLI's progress line and the window read them.

Subscribers are plain callables run on the engine's loop; they must not block. The bus
keeps the last events until the first subscriber connects, so nothing published during
start-up (the recovery report above all) is lost.
"""

from __future__ import annotations

import logging
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, Literal

from reelqueue.domain.models import Account, RecoveryReport
from reelqueue.domain.states import AccountStatus, JobState
from reelqueue.engine.account_keys import confirm_words
from reelqueue.intake.pins import not_configured_words
from reelqueue.store.spend import AccountSpend, SpendSummary, ToGo

log = logging.getLogger(__name__)

AccountEventStatus = AccountStatus | Literal["disabled"]
"""An account's status as events carry it: its stored status, or ``"disabled"`` while the
user has paused it (the stored status is then kept for when it is enabled again)."""

EngineState = Literal["running", "waiting", "stalled", "done", "paused", "drained", "stopped"]
"""What :class:`EngineStateEvent` says (its docstring tells when each is published)."""


@dataclass(frozen=True)
class JobEvent:
    """A job changed state, sub-status or progress.

    ``account`` None means "not said" (the view keeps what it shows); ``unbound`` says the
    journal no longer binds the job to any account (its claim ended holding no render or
    submission, so any account of its provider may take it next): the view drops the
    account it showed (issue 23: a job back in the shared queue still counted as "waiting
    here" on its old account's card)."""

    job_id: int
    state: JobState
    at: float
    account: str | None = None
    unbound: bool = False
    sub_status: str | None = None
    progress: float | None = None
    attempts: int | None = None
    error_label: str | None = None
    error_message: str | None = None
    output_path: str | None = None
    cost: float | None = None
    #: the provider the job is with now, and its render kind, when that changed (a routed
    #: job taken over at claim or handed over after a refusal: issue 24); None: unchanged
    provider: str | None = None
    kind: str | None = None


@dataclass(frozen=True)
class AccountEvent:
    """An account's status or live count changed."""

    name: str
    status: AccountEventStatus
    live: int
    capacity: int
    at: float
    cooldown_until: float | None = None
    detail: str | None = None
    spent_today: float = 0.0  # spend caps: USD since local midnight, the daily cap, and
    daily_cap: float | None = None  # how many jobs it holds back (0: not reached)
    cap_waiting: int = 0
    # This machine's own word on the account, None when it renders here as usual: its
    # address changed on the team database and waits for `accounts confirm` (issue 21).
    machine: str | None = None

    @property
    def spend_capped(self) -> bool:
        """The account's daily spend cap holds jobs back (stall reason "spend cap reached")."""
        return self.cap_waiting > 0


def account_event(account: Account, live: int, at: float,
                  spend: AccountSpend | None = None, *,
                  machine: str | None = None) -> AccountEvent:
    """The one way an :class:`AccountEvent` is built (the engine's pump and a render that
    pauses its account): the stored row, its live count and, when known, its spend today.

    The status is ``"disabled"`` while the user has paused the account. ``spent_today`` is
    what is committed today: spent plus the renders being started (their price moves from
    reserved to spent with the intent), so the figure the claim checks. Without ``spend``
    the event carries no cap (the pump's next event does).
    """
    return AccountEvent(
        name=account.name, status=account.status if account.enabled else "disabled",
        live=live, capacity=account.capacity, at=at,
        cooldown_until=account.cooldown_until, detail=account.status_detail,
        spent_today=spend.committed if spend else 0.0,
        daily_cap=spend.cap if spend else None,
        cap_waiting=spend.waiting if spend else 0, machine=machine)


@dataclass(frozen=True)
class RecoveryEvent:
    report: RecoveryReport
    at: float


@dataclass(frozen=True)
class StallReason:
    """Why waiting jobs are not taken by an account (or a provider has no account).

    Attributes:
        subject: the account name, the provider kind (``no_account``) or the batch name
            (``batch_paused``).
        code: ``disabled`` (the user paused the account), ``no_key`` (its key is not in
            the keyring), ``no_account`` (no account for that provider), ``batch_paused``,
            ``not_configured`` (jobs are pinned to an account not configured here),
            ``unusable`` (the account's settings are refused), ``confirm`` (its address
            changed on the team database: ``accounts confirm NAME`` on this machine), or
            the account's status value (``out_of_credits``, ``key_rejected``,
            ``rate_limited``, a spend cap's own status...: front ends word the codes they
            know and show any other as is).
        until: when it ends by itself (a rate limit's cool-down), else None.
        detail: the provider's or the engine's own words, if any.
    """

    subject: str
    code: str
    until: float | None = None
    detail: str | None = None


@dataclass(frozen=True)
class EngineStateEvent:
    """The engine started, paused, resumed, drained, stalled or stopped.

    The pump publishes what is true after each pass, when it changed: ``running``
    (renders in flight), ``waiting`` (jobs wait and nothing runs, but a retry or an
    account's cool-down falls due at ``next_due``), ``stalled`` (jobs wait, nothing runs
    and nothing will change without the user: ``reasons``), ``done`` (no job waits or
    runs) or ``paused`` (the user paused the queue; renders in flight finish).
    ``run_until_drained`` also says ``drained``/``stalled`` (with ``detail`` only), and
    ``stop()`` says ``stopped``.

    Attributes:
        waiting: jobs waiting (queued or in a retry wait) when known, else 0.
        running: renders this engine has in flight.
        reasons: per account (or provider) why waiting jobs are not taken.
    """

    state: EngineState
    at: float
    detail: str = ""
    waiting: int = 0
    running: int = 0
    next_due: float | None = None
    reasons: tuple[StallReason, ...] = ()


@dataclass(frozen=True)
class EngineErrorEvent:
    """A bug or an environment failure the user must see."""

    message: str
    at: float


def stall_reasons(accounts: Iterable[Account], waiting_providers: Iterable[str],
                  can_use: Callable[[Account], bool], has_key: Callable[[Account], bool],
                  paused_batches: Iterable[str] = (), *,
                  needs_confirm: Callable[[Account], bool] = lambda account: False,
                  ) -> tuple[tuple[StallReason, ...], bool]:
    """Why the waiting jobs of ``waiting_providers`` are not taken, per account (only
    accounts of those providers), and whether any of those providers still has an account
    that can take work now or after a cool-down (False: nothing changes without the user).
    """
    wanted = set(waiting_providers)
    reasons: list[StallReason] = []
    served: set[str] = set()
    for account in accounts:
        if account.provider not in wanted:
            continue
        if not account.enabled:
            reasons.append(StallReason(account.name, "disabled"))
        elif not has_key(account):
            reasons.append(StallReason(account.name, "no_key"))
        elif needs_confirm(account):
            reasons.append(StallReason(account.name, "confirm", detail=confirm_words(
                account.name)))
        elif not can_use(account):
            reasons.append(StallReason(account.name, "unusable", detail=account.status_detail))
        elif account.status == AccountStatus.RATE_LIMITED:
            reasons.append(StallReason(account.name, account.status.value,
                                       until=account.cooldown_until,
                                       detail=account.status_detail))
            served.add(account.provider)
        elif account.status != AccountStatus.READY:
            reasons.append(StallReason(account.name, str(account.status.value),
                                       detail=account.status_detail))
        else:
            served.add(account.provider)
    have_account = {a.provider for a in accounts if a.provider in wanted}
    reasons.extend(StallReason(provider, "no_account")
                   for provider in sorted(wanted - have_account))
    reasons.extend(StallReason(name, "batch_paused") for name in paused_batches)
    return tuple(reasons), bool(served)


def spend_cap_reasons(summary: SpendSummary) -> tuple[StallReason, ...]:
    """Code ``spend_cap`` ("spend cap reached") for every account or batch whose cap holds
    jobs back; the detail says what was spent of what (docs/design-notes.md)."""
    reasons = [StallReason(a.account, "spend_cap", detail=(
        f"spend cap reached: {a.describe()} today, {a.waiting} waiting"))
        for a in summary.accounts if a.reached and a.cap is not None]
    reasons += [StallReason(b.name, "spend_cap", detail=(
        f"spend cap reached: {b.describe()}, {b.waiting} waiting"))
        for b in summary.batches if b.reached]
    return tuple(reasons)


def not_configured_reasons(accounts: Iterable[Account],
                           to_go: Iterable[ToGo]) -> tuple[StallReason, ...]:
    """Code ``not_configured`` for every account that waiting jobs are pinned (or bound)
    to and that is not configured here (issue 34, N1: they waited without a word); the
    detail says how many, in :func:`~reelqueue.intake.pins.not_configured_words`."""
    names = {account.name for account in accounts}
    waiting: dict[str, int] = {}
    for group in to_go:
        if group.account is not None and group.account not in names:
            waiting[group.account] = (waiting.get(group.account, 0) + group.priced
                                      + group.unpriced)
    return tuple(StallReason(name, "not_configured", detail=(
        f"{n:,} {'job' if n == 1 else 'jobs'} {not_configured_words(name)}"))
        for name, n in sorted(waiting.items()))


Event = JobEvent | AccountEvent | RecoveryEvent | EngineStateEvent | EngineErrorEvent
Subscriber = Callable[[Event], Any]


class EventBus:
    def __init__(self, backlog: int = 1000) -> None:
        self._subscribers: list[Subscriber] = []
        self._backlog: deque[Event] = deque(maxlen=backlog)

    def subscribe(self, subscriber: Subscriber) -> Callable[[], None]:
        first = not self._subscribers
        self._subscribers.append(subscriber)
        if first:
            while self._backlog:
                self._deliver(subscriber, self._backlog.popleft())

        def unsubscribe() -> None:
            if subscriber in self._subscribers:
                self._subscribers.remove(subscriber)

        return unsubscribe

    def publish(self, event: Event) -> None:
        if not self._subscribers:
            self._backlog.append(event)
            return
        for subscriber in list(self._subscribers):
            self._deliver(subscriber, event)

    @staticmethod
    def _deliver(subscriber: Subscriber, event: Event) -> None:
        try:
            subscriber(event)
        except Exception:  # a broken view must not stop the engine
            log.exception("event subscriber failed")
