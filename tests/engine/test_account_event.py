"""One builder for AccountEvent (engine/events.account_event): what the pump and a render
that pauses its account publish about an account."""

from __future__ import annotations

import asyncio
import random
from pathlib import Path

import pytest

from reelqueue.domain.errors import ErrorClass, ErrorLabel, ProviderError
from reelqueue.domain.models import Account, AccountSpec, Job
from reelqueue.domain.states import AccountStatus, JobState
from reelqueue.engine.engine import Engine
from reelqueue.engine.events import AccountEvent, JobEvent, account_event
from reelqueue.store.memory import MemoryStore
from reelqueue.store.spend import AccountSpend
from tests.engine.fakes import FakeProvider, Script
from tests.engine.test_engine import FAST, add_batch, install

pytestmark = pytest.mark.unit


def row(**changes: object) -> Account:
    fields: dict[str, object] = dict(
        name="a", provider="mock", capacity=3, position=0, enabled=True, base_url=None,
        key_ref=None, status=AccountStatus.RATE_LIMITED, status_detail="slow down",
        cooldown_until=120.0, settings={}, created_at=0.0)
    fields.update(changes)
    return Account(**fields)  # type: ignore[arg-type]


def test_the_event_carries_the_row_the_live_count_and_the_committed_spend() -> None:
    spend = AccountSpend(account="a", spent_today=4.0, reserved=1.5, cap=10.0, waiting=2)
    assert account_event(row(), live=2, at=99.0, spend=spend) == AccountEvent(
        name="a", status=AccountStatus.RATE_LIMITED, live=2, capacity=3, at=99.0,
        cooldown_until=120.0, detail="slow down", spent_today=5.5, daily_cap=10.0,
        cap_waiting=2)


def test_a_paused_account_says_disabled_and_no_spend_means_no_cap() -> None:
    event = account_event(row(enabled=False), live=0, at=5.0)
    assert event.status == "disabled"
    assert (event.spent_today, event.daily_cap, event.cap_waiting) == (0.0, None, 0)
    assert not event.spend_capped


async def run_with_a_rejected_key(tmp_path: Path) -> tuple[list[object], list[Job]]:
    """One job on account "a", whose key the provider refuses at the create: the events
    published and the journal's jobs once the queue has drained."""
    rejected = ProviderError("401 no such key", error_class=ErrorClass.ACCOUNT,
                             label=ErrorLabel.KEY_REJECTED)
    store = MemoryStore()
    add_batch(store, tmp_path, ["p"])
    store.add_account(AccountSpec("a", "fake", 2), 0)
    engine = Engine(store, config=FAST, rng=random.Random(1),
                    providers=install(FakeProvider({"p": Script(submit_errors=[rejected])})))
    events: list[object] = []
    engine.bus.subscribe(events.append)
    await engine.start()
    await asyncio.wait_for(engine.run_until_drained(), 20)
    await engine.stop()
    jobs = store.list_jobs()
    engine.close_store()
    return events, jobs


async def test_a_render_that_pauses_its_account_publishes_the_stored_row(
    tmp_path: Path,
) -> None:
    events, _jobs = await run_with_a_rejected_key(tmp_path)
    cards = [e for e in events if isinstance(e, AccountEvent) and e.name == "a"]
    rejected_cards = [e for e in cards if e.status == AccountStatus.KEY_REJECTED]
    assert rejected_cards, cards
    first = rejected_cards[0]
    assert (first.capacity, first.detail, first.cooldown_until) == (2, "401 no such key", None)


async def test_a_job_given_back_to_the_shared_queue_is_published_unbound(
    tmp_path: Path,
) -> None:
    """The journal clears the account of a job whose claim ended holding nothing (here:
    its key was refused before any create); the event says so, so a window stops counting
    it as "waiting here" on that account's card (issue 23)."""
    events, (job,) = await run_with_a_rejected_key(tmp_path)
    assert job.state == JobState.QUEUED and job.account is None
    back = [e for e in events if isinstance(e, JobEvent) and e.state == JobState.QUEUED]
    assert back, events
    assert back[-1].unbound and back[-1].account is None
    claimed = [e for e in events if isinstance(e, JobEvent) and e.state == JobState.CLAIMED]
    assert claimed and claimed[0].account == "a" and not claimed[0].unbound
