"""Immutable events the engine publishes; the CLI's progress line and the window read them.

Subscribers are plain callables run on the engine's loop; they must not block. The bus
keeps the last events until the first subscriber connects, so nothing published during
start-up (the recovery report above all) is lost.
"""

from __future__ import annotations

import logging
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from reelqueue.domain.models import RecoveryReport

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class JobEvent:
    """A job changed state, sub-status or progress."""

    job_id: int
    state: str
    at: float
    account: str | None = None
    sub_status: str | None = None
    progress: float | None = None
    attempts: int | None = None
    error_label: str | None = None
    error_message: str | None = None
    output_path: str | None = None
    cost: float | None = None


@dataclass(frozen=True)
class AccountEvent:
    """An account's status or live count changed."""

    name: str
    status: str
    live: int
    capacity: int
    at: float
    cooldown_until: float | None = None
    detail: str | None = None


@dataclass(frozen=True)
class RecoveryEvent:
    report: RecoveryReport
    at: float


@dataclass(frozen=True)
class EngineStateEvent:
    """The engine started, paused, resumed, drained, stalled or stopped."""

    state: str
    at: float
    detail: str = ""


@dataclass(frozen=True)
class EngineErrorEvent:
    """A bug or an environment failure the user must see."""

    message: str
    at: float


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
