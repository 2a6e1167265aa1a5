"""Wake-ups across machines: the team database notifies every listening instance when
work may have appeared (jobs added or settled, an account, its view or a batch changed),
and a
listener that cannot listen wakes its pump on a timer instead."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from reelqueue.domain.account_view import AccountView, Balance
from reelqueue.domain.models import AccountSpec, BatchSpec
from reelqueue.store.postgres import PostgresStore
from reelqueue.store.postgres_notify import (
    WAKE_TRIGGERS,
    WakeListener,
    listen_conninfo,
    missing_wake_triggers,
)
from tests.conftest import make_specs
from tests.proof.harness import wait_for

pytestmark = [pytest.mark.integration]


class Wakes:
    def __init__(self) -> None:
        self.count = 0
        self.lock = threading.Lock()

    def __call__(self) -> None:
        with self.lock:
            self.count += 1


def test_changes_on_one_connection_wake_the_listener_of_another(tmp_path: Path,
                                                                 team_url: str) -> None:
    here = PostgresStore.open(team_url, now=time.time())
    there = PostgresStore.open(team_url, now=time.time())
    assert missing_wake_triggers(there) == [], "the schema made them (version 3)"
    dsn, schema = listen_conninfo(here)
    wakes = Wakes()
    listener = WakeListener(dsn, schema, wakes, fallback_seconds=60).start()
    try:
        wait_for(listener.listening.is_set, 30, "the listener to listen")
        now = time.time()
        there.add_account(AccountSpec("acct", "mock", 2), now)           # 1
        batch = there.create_batch(BatchSpec("b", "s.csv", str(tmp_path)), now)
        there.add_jobs(batch.id, make_specs(tmp_path, 3), now)                     # 2
        claim = there.claim_next_job(_claim_params("acct", now))
        assert claim is not None                                         # in flight: none
        there.renew_leases("i-1", now, 60)                               # no state change
        there.update_account("acct", now, capacity=5)                    # 3: a cap change
        wait_for(lambda: listener.notifications >= 3, 30, "three notifications")
        assert listener.notifications == 3
        there.cancel_jobs([claim.job.id], now)                           # 4: settled
        wait_for(lambda: listener.notifications >= 4, 30, "the cancel's notification")
    finally:
        listener.stop()
        here.close()
        there.close()
    assert not listener.listening.is_set()
    assert wakes.count >= 4 + 1  # one on connecting (work committed while not listening)


def test_an_account_view_kept_elsewhere_wakes_the_listener(team_url: str) -> None:
    """``accounts refresh`` in another process writes only the account's view: a balance
    read higher must reach the running engines at once (issue 32), not at their safety
    net. The store itself never asks to be polled (it has NOTIFY)."""
    here = PostgresStore.open(team_url, now=time.time())
    there = PostgresStore.open(team_url, now=time.time())
    dsn, schema = listen_conninfo(here)
    listener = WakeListener(dsn, schema, Wakes(), fallback_seconds=60).start()
    try:
        wait_for(listener.listening.is_set, 30, "the listener to listen")
        now = time.time()
        there.add_account(AccountSpec("acct", "mock", 2), now)
        wait_for(lambda: listener.notifications >= 1, 30, "the account's notification")
        assert there.put_account_view(AccountView("acct", Balance(500.0, "credits"), (),
                                                  None, now, "instance-2"))
        wait_for(lambda: listener.notifications >= 2, 30, "the view's notification")
        assert listener.notifications == 2
        assert here.changed_elsewhere() is False  # NOTIFY, not a poll
    finally:
        listener.stop()
        here.close()
        there.close()


def test_the_check_names_a_wake_up_trigger_that_was_dropped(team_url: str) -> None:
    store = PostgresStore.open(team_url, now=time.time())
    try:
        assert missing_wake_triggers(store) == []
        assert len(WAKE_TRIGGERS) == 5
        with store.raw_connection() as db:
            db.execute("DROP TRIGGER reelqueue_wake_accounts ON accounts")
        assert missing_wake_triggers(store) == ["reelqueue_wake_accounts"]
        store.add_account(AccountSpec("acct", "mock", 2), time.time())  # still works
    finally:
        store.close()


def test_a_listener_that_cannot_listen_wakes_on_a_timer(
        caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level("INFO", logger="reelqueue.store.postgres_notify")
    wakes = Wakes()
    # Port 9 on loopback: nothing listens there, so every connection is refused.
    listener = WakeListener("postgresql://nobody:pw-not-shown@127.0.0.1:9/db", "public",
                            wakes, fallback_seconds=0.05).start()
    try:
        wait_for(lambda: wakes.count >= 3, 30, "three timer wake-ups")
        assert not listener.listening.is_set()
    finally:
        listener.stop()
    assert "not listening to nobody@127.0.0.1:9/db" in caplog.text
    assert "pw-not-shown" not in caplog.text


def _claim_params(account: str, now: float) -> object:
    from reelqueue.store.base import ClaimParams

    return ClaimParams(account, "i-1", now, 60.0, now - 3600)
