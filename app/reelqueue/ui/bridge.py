"""The one object through which the engine talks to the window: events in, Qt signals out.

The engine publishes immutable event values on its bus; :class:`EngineBridge` re-emits
each as a signal carrying that same value. Until :meth:`EngineBridge.attach` is called
(the window has connected its slots) messages are held, so nothing published during
start-up — the recovery report above all — is lost.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable

from PySide6.QtCore import QObject, Signal

from reelqueue.application.events import (
    AccountEvent,
    EngineErrorEvent,
    EngineStateEvent,
    Event,
    EventBus,
    JobEvent,
    RecoveryEvent,
)
from reelqueue.ui.qtcompat import emit

HELD_MAX = 100_000


class EngineBridge(QObject):
    """Re-emits engine events as Qt signals.

    Signals:
        jobEvent(JobEvent): a job changed state, sub-status or progress.
        accountEvent(AccountEvent): an account's status or live count changed.
        recoveryEvent(RecoveryEvent): start-up recovery (or a lease take-over) ran.
        engineState(EngineStateEvent): running, paused, drained, stalled, stopped.
        engineError(EngineErrorEvent): a failure the user must see.

    Attributes:
        attached: True once the window connected and held messages were delivered.
    """

    jobEvent = Signal(object)
    accountEvent = Signal(object)
    recoveryEvent = Signal(object)
    engineState = Signal(object)
    engineError = Signal(object)

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.attached = False
        self._held: deque[Event] = deque(maxlen=HELD_MAX)
        self._unsubscribe: Callable[[], None] | None = None

    def connect_bus(self, bus: EventBus) -> None:
        self.disconnect_bus()
        self._unsubscribe = bus.subscribe(self.publish)

    def disconnect_bus(self) -> None:
        if self._unsubscribe is not None:
            self._unsubscribe()
            self._unsubscribe = None

    def publish(self, event: Event) -> None:
        """Called on the engine's loop (the GUI thread under qasync); never blocks."""
        if not self.attached:
            self._held.append(event)
            return
        self._emit(event)

    def attach(self) -> None:
        """The window is connected: deliver what was held, then pass events straight on."""
        self.attached = True
        while self._held:
            self._emit(self._held.popleft())

    def _emit(self, event: Event) -> None:
        if isinstance(event, JobEvent):
            emit(self.jobEvent, event)
        elif isinstance(event, AccountEvent):
            emit(self.accountEvent, event)
        elif isinstance(event, RecoveryEvent):
            emit(self.recoveryEvent, event)
        elif isinstance(event, EngineStateEvent):
            emit(self.engineState, event)
        elif isinstance(event, EngineErrorEvent):
            emit(self.engineError, event)
