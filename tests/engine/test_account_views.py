"""The engine reads each account's view (issue 32 item 2) where its key is: at connect,
at most every 5 minutes per account (an injected clock), at once after an out-of-credits
refusal, less often when the provider rate-limits the read; what it read goes to the
journal, a failed read as a view with no figure and why, and a render never waits on it."""

from __future__ import annotations

import random

import pytest

from reelqueue.domain.account_view import AccountView, Balance, ModelLimit
from reelqueue.domain.clock import FakeClock
from reelqueue.domain.errors import ErrorClass, ErrorLabel, ProviderError
from reelqueue.domain.models import AccountSpec
from reelqueue.domain.states import AccountStatus
from reelqueue.engine.account_views import (
    VIEW_BACKOFF_MAX_SECONDS,
    VIEW_EVERY_SECONDS,
    ViewSchedule,
)
from reelqueue.engine.engine import Engine
from reelqueue.store.memory import MemoryStore
from tests.engine.fakes import FakeProvider
from tests.engine.test_engine import FAST, install

pytestmark = pytest.mark.unit


class ViewingProvider(FakeProvider):
    """A fake adapter that offers the account view and counts its reads."""

    def __init__(self, clock: FakeClock | None = None) -> None:
        super().__init__()
        self.clock = clock  # read_at: its time (the provider's Date header), else 1000 + n
        self.view_reads = 0
        self.view_error: ProviderError | None = None

    async def account_view(self) -> AccountView:
        self.view_reads += 1
        if self.view_error is not None:
            raise self.view_error
        return AccountView("ignored", Balance(42.0, "credits"),
                           (ModelLimit("m", 2, 50, "utc_day", self.view_reads),), None,
                           self.clock.now() if self.clock else 1_000.0 + self.view_reads)


async def one_pass(engine: Engine) -> None:
    """One whole pump pass, started after this call, and the view reads it began."""
    fresh = engine._passes_started + 1
    engine.wake()
    while engine._passes < fresh:
        await engine._pass_done.wait()
    await engine.views.wait()


async def test_the_engine_reads_at_connect_then_at_most_every_five_minutes() -> None:
    clock = FakeClock(1_000_000.0)
    provider = ViewingProvider()
    store = MemoryStore()
    store.add_account(AccountSpec("acct", "fake", 2), 0)
    engine = Engine(store, config=FAST, clock=clock, rng=random.Random(1),
                    providers=install(provider), instance_id="instance-A")
    await engine.start()
    try:
        await one_pass(engine)
        assert provider.view_reads == 1, "read at connect"
        (view,) = store.account_views()
        assert view.account == "acct" and view.read_by == "instance-A"
        assert view.balance == Balance(42.0, "credits")
        for _ in range(3):
            await one_pass(engine)
        clock.advance(VIEW_EVERY_SECONDS - 1)
        await one_pass(engine)
        assert provider.view_reads == 1, "not again within 5 minutes, however many passes"
        clock.advance(2)
        await one_pass(engine)
        assert provider.view_reads == 2
        store.set_account_status("acct", AccountStatus.OUT_OF_CREDITS, clock.now())
        await one_pass(engine)
        assert provider.view_reads == 3, "read at once after an out-of-credits refusal"
        await one_pass(engine)
        assert provider.view_reads == 3, "once per refusal, not every pass"
        provider.view_error = ProviderError("Fake: HTTP 429: slow down",
                                            error_class=ErrorClass.ACCOUNT,
                                            label=ErrorLabel.RATE_LIMITED, retry_after=30)
        clock.advance(VIEW_EVERY_SECONDS)
        await one_pass(engine)
        assert provider.view_reads == 4
        (view,) = store.account_views()
        assert view.balance is None and view.limits == ()
        assert view.problem == "Fake: HTTP 429: slow down"
        clock.advance(VIEW_EVERY_SECONDS)
        await one_pass(engine)
        assert provider.view_reads == 4, "a rate-limited read is read less often"
        clock.advance(VIEW_EVERY_SECONDS)
        await one_pass(engine)
        assert provider.view_reads == 5
    finally:
        await engine.stop()
        engine.close_store()


async def test_a_view_another_process_kept_lately_is_not_read_again_sooner() -> None:
    """At most every 5 minutes per account, not per process: a team's other machine (or
    ``accounts refresh``) read it a minute ago, so this engine reads it 4 minutes later."""
    clock = FakeClock(1_000_000.0)
    provider = ViewingProvider(clock)
    store = MemoryStore()
    store.add_account(AccountSpec("acct", "fake", 2), 0)
    store.put_account_view(AccountView("acct", Balance(7.0, "credits"), (), None,
                                       clock.now() - 60, "instance-B"))
    engine = Engine(store, config=FAST, clock=clock, rng=random.Random(1),
                    providers=install(provider), instance_id="instance-A")
    await engine.start()
    try:
        await one_pass(engine)
        assert provider.view_reads == 0
        assert store.account_views()[0].read_by == "instance-B"
        clock.advance(VIEW_EVERY_SECONDS - 60 - 1)
        await one_pass(engine)
        assert provider.view_reads == 0
        clock.advance(2)
        await one_pass(engine)
        assert provider.view_reads == 1
        assert store.account_views()[0].read_by == "instance-A"
    finally:
        await engine.stop()
        engine.close_store()


async def test_an_adapter_without_the_view_is_never_asked() -> None:
    provider = FakeProvider()
    store = MemoryStore()
    store.add_account(AccountSpec("acct", "fake", 1), 0)
    engine = Engine(store, config=FAST, rng=random.Random(1), providers=install(provider))
    await engine.start()
    try:
        await one_pass(engine)
        assert store.account_views() == []
    finally:
        await engine.stop()
        engine.close_store()


def test_the_schedule_spaces_reads_and_backs_off_a_rate_limit() -> None:
    schedule = ViewSchedule()
    assert schedule.due("a", 0.0), "never read: due (connect)"
    schedule.started("a")
    assert not schedule.due("a", 10_000.0), "one read at a time"
    assert schedule.finished("a", 0.0) == VIEW_EVERY_SECONDS
    assert not schedule.due("a", VIEW_EVERY_SECONDS - 0.001)
    assert schedule.due("a", VIEW_EVERY_SECONDS)
    waits = []
    now = 0.0
    for _ in range(6):
        schedule.started("a")
        waits.append(schedule.finished("a", now, rate_limited=True) - now)
    assert waits == [600.0, 1200.0, 2400.0, VIEW_BACKOFF_MAX_SECONDS,
                     VIEW_BACKOFF_MAX_SECONDS, VIEW_BACKOFF_MAX_SECONDS]
    schedule.started("a")
    assert schedule.finished("a", now, rate_limited=True, retry_after=7200.0) == 7200.0, (
        "never sooner than the provider's Retry-After")
    assert not schedule.due("a", 100.0, AccountStatus.READY)
    assert not schedule.due("a", 200.0, AccountStatus.OUT_OF_CREDITS), (
        "a refusal does not break through a rate limit's back-off")
    schedule.started("a")
    assert schedule.finished("a", now) == VIEW_EVERY_SECONDS, "a good read resets it"
