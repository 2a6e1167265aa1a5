"""One clock decides (DESIGN.md invariant 14, issue 19): on the team journal every time
compared across machines is the server's, whatever the workers' clocks say.

Three stores on one schema are three machines; a FakeClock stands in for the server's
clock (``PostgresStore.open(server_clock=...)``), and each "worker" passes its own ``now``
from a clock 30 s fast or 30 s slow, as a machine without NTP would. Measured before this
change (issue 19): a slow worker's leases were already expired for everyone else when it
wrote them (live renders taken over: 3 created twice, 6 live on an account capped at 4),
and a fast worker's outlived their time by the skew.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from reelqueue.domain.clock import FakeClock
from reelqueue.domain.models import AccountSpec, BatchSpec, FileCheck, Job
from reelqueue.domain.states import AccountStatus, JobState
from reelqueue.store.base import ClaimParams, JobError, RecoverParams
from reelqueue.store.postgres import PostgresStore
from reelqueue.store.spend import local_day_start
from tests import pgserver
from tests.conftest import make_specs, seed_store

pytestmark = pytest.mark.unit

LEASE = 10.0
SKEW = 30.0
ERR = JobError("retryable", "provider error", "boom")


def no_file(job: Job) -> FileCheck:
    return FileCheck(exists=False)


@pytest.fixture
def server() -> FakeClock:
    return FakeClock()


@pytest.fixture
def machines(pg_dsn: str, server: FakeClock) -> Iterator[list[PostgresStore]]:
    schema = pgserver.new_schema_name()
    stores = [PostgresStore.open(pg_dsn, now=server.now(), schema=schema,
                                 server_clock=server) for _ in range(2)]
    yield stores
    for store in stores:
        store.close()
    pgserver.drop_schema(pg_dsn, schema)


def takeover(store: PostgresStore, instance: str, now: float) -> RecoverParams:
    return RecoverParams(instance, now, LEASE, only_expired=True, check_output=no_file)


@pytest.mark.parametrize("owner_skew, taker_skew", [(-SKEW, SKEW), (SKEW, -SKEW), (-SKEW, 0.0),
                                                    (0.0, SKEW)])
def test_a_live_lease_is_never_taken_over_whatever_the_clocks_say(
    machines: list[PostgresStore], tmp_path: Path, server: FakeClock,
    owner_skew: float, taker_skew: float,
) -> None:
    a, b = machines
    seed_store(a, tmp_path, server.now(), jobs=2, accounts={"acct-a": 2})
    c = a.claim_next_job(ClaimParams("acct-a", "owner", server.now() + owner_skew, LEASE))
    assert c is not None
    job = a.get_job(c.job.id)
    assert job is not None and job.lease_until == server.now() + LEASE, \
        "the lease is counted from the server's clock"
    server.advance(LEASE - 1)  # live on the server for one more second
    report = b.recover(takeover(b, "taker", server.now() + taker_skew))
    assert report.touched == 0, "a live lease stays with its owner"
    assert a.mark_submitting(c.token, "ct", server.now() + owner_skew)
    # Renewed by the owner's heartbeat: again a whole lease from the server's now.
    assert a.renew_leases("owner", server.now() + owner_skew, LEASE) == 1
    server.advance(LEASE - 1)
    assert b.recover(takeover(b, "taker", server.now() + taker_skew)).touched == 0
    assert a.record_submitted(c.token, "pj", server.now() + owner_skew)


@pytest.mark.parametrize("owner_skew", [SKEW, -SKEW])
def test_a_lease_ends_on_time_on_the_server(
    machines: list[PostgresStore], tmp_path: Path, server: FakeClock, owner_skew: float,
) -> None:
    """A fast worker's lease does not outlive its time (nor a slow one's end early): the
    owner dies, and the lease runs out LEASE seconds later on the server's clock."""
    a, b = machines
    seed_store(a, tmp_path, server.now(), jobs=1, accounts={"acct-a": 1})
    c = a.claim_next_job(ClaimParams("acct-a", "owner", server.now() + owner_skew, LEASE))
    assert c is not None
    assert a.mark_submitting(c.token, "ct", server.now() + owner_skew)
    assert a.record_submitted(c.token, "pj", server.now() + owner_skew)
    server.advance(LEASE / 2)
    assert a.renew_leases("owner", server.now() + owner_skew, LEASE) == 1
    server.advance(LEASE + 0.5)  # the owner died after that heartbeat
    report = b.recover(takeover(b, "taker", server.now()))
    assert report.reattached == [c.job.id], "taken over once its time ran out"
    assert not a.mark_downloading(c.token, server.now() + owner_skew), "fenced out"


def test_retry_and_cool_down_times_follow_the_servers_clock(
    machines: list[PostgresStore], tmp_path: Path, server: FakeClock,
) -> None:
    """A fast worker writes a 5 s retry wait and a 20 s cool-down: both end 5 s and 20 s
    later on the server, so a slow worker claims them on time, not 60 s late."""
    fast, slow = machines
    seed_store(fast, tmp_path, server.now(), jobs=1, accounts={"acct-a": 1})
    c = fast.claim_next_job(ClaimParams("acct-a", "fast", server.now() + SKEW, LEASE))
    assert c is not None
    now_fast = server.now() + SKEW
    assert fast.set_retry_wait(c.token, ERR, now_fast + 5, now_fast, keep_provider_job=False)
    fast.set_account_status("acct-a", AccountStatus.RATE_LIMITED, now_fast,
                            cooldown_until=now_fast + 20)
    account = slow.get_account("acct-a")
    assert account is not None and account.cooldown_until == server.now() + 20
    job = slow.get_job(c.job.id)
    assert job is not None and job.run_after == server.now() + 5
    server.advance(19)
    assert slow.claim_next_job(ClaimParams("acct-a", "slow", server.now() - SKEW,
                                           LEASE)) is None, "still cooling down"
    server.advance(1.5)
    again = slow.claim_next_job(ClaimParams("acct-a", "slow", server.now() - SKEW, LEASE))
    assert again is not None and again.job.id == c.job.id


def test_the_daily_cap_counts_the_servers_day(
    machines: list[PostgresStore], tmp_path: Path, server: FakeClock,
) -> None:
    """Ten seconds before midnight on the server a fast worker's clock says it is a new
    day: the spend of the server's day still counts against the daily cap."""
    a, _ = machines
    server.current = local_day_start(server.now()) + 86400 - 10  # 23:59:50
    batch = a.create_batch(BatchSpec("b", "s.csv", str(tmp_path)), server.now())
    specs = [type(s)(**{**s.__dict__, "metadata": {"price": 0.8}})
             for s in make_specs(tmp_path, 2)]
    a.add_jobs(batch.id, specs, server.now())
    a.add_account(AccountSpec("acct-a", "mock", 2, settings={"daily_cap": 1.0}),
                  server.now())
    exact = server.now()
    first = a.claim_next_job(ClaimParams("acct-a", "w", exact, LEASE, local_day_start(exact)))
    assert first is not None and a.mark_submitting(first.token, "ct", exact)
    fast = server.now() + SKEW  # 00:00:20 by its clock: a new day there, not here
    assert local_day_start(fast) > local_day_start(exact)
    assert a.claim_next_job(ClaimParams("acct-a", "fast", fast, LEASE,
                                        local_day_start(fast))) is None, \
        "0.8 of the server's day is spent: another 0.8 would pass the 1.0 cap"
    server.advance(11)  # the server's midnight: a new day for everyone
    fast = server.now() + SKEW
    assert a.claim_next_job(ClaimParams("acct-a", "fast", fast, LEASE,
                                        local_day_start(fast))) is not None


def test_the_ledger_and_the_registry_are_written_on_the_servers_clock(
    machines: list[PostgresStore], tmp_path: Path, server: FakeClock,
) -> None:
    a, _ = machines
    seed_store(a, tmp_path, server.now(), jobs=1, accounts={"acct-a": 1})
    a.register_instance("skewed", host="h", pid=1, version="v")
    c = a.claim_next_job(ClaimParams("acct-a", "skewed", server.now() - SKEW, LEASE))
    assert c is not None
    (claimed,) = [e for e in a.ledger() if e.event == "claimed"]
    assert claimed.at == server.now()
    server.advance(3)
    a.renew_leases("skewed", server.now() + SKEW, LEASE)
    (row,) = a.list_instances()
    assert row.heartbeat_at == server.now() and row.started_at == server.now() - 3
    # What is only shown keeps the worker's own clock.
    job = a.get_job(c.job.id)
    assert job is not None and job.started_at == server.now() - 3 - SKEW
    assert job.state == JobState.CLAIMED
