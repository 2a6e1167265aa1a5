"""The engine's events as the front ends receive them: immutable values a session's bus
(:attr:`Session.bus <reelqueue.application.session.Session.bus>`) publishes. Defined in
:mod:`reelqueue.engine.events`; front ends import them from here.
"""

from __future__ import annotations

from reelqueue.engine.events import (
    AccountEvent,
    AccountEventStatus,
    EngineErrorEvent,
    EngineState,
    EngineStateEvent,
    Event,
    EventBus,
    JobEvent,
    RecoveryEvent,
    StallReason,
    Subscriber,
    not_configured_reasons,
)

__all__ = ["AccountEvent", "AccountEventStatus", "EngineErrorEvent", "EngineState",
           "EngineStateEvent", "Event", "EventBus", "JobEvent", "RecoveryEvent",
           "StallReason", "Subscriber", "not_configured_reasons"]
