"""``doctor`` on a team database (issue 19): live claims are fine while their lease holds
on the server's clock and their owner's heartbeat is recent; expired leases still held and
claims of instances silent past a lease are reported."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from reelqueue.domain.clock import FakeClock
from reelqueue.store.base import ClaimParams
from reelqueue.store.postgres import PostgresStore
from tests import pgserver
from tests.conftest import seed_store

pytestmark = pytest.mark.unit

LEASE = 10.0


@pytest.fixture
def team(pg_dsn: str, clock: FakeClock, tmp_path: Path) -> Iterator[PostgresStore]:
    schema = pgserver.new_schema_name()
    store = PostgresStore.open(pg_dsn, now=clock.now(), schema=schema, server_clock=clock)
    seed_store(store, tmp_path, clock.now(), jobs=3, accounts={"acct-a": 3})
    yield store
    store.close()
    pgserver.drop_schema(pg_dsn, schema)


def live_claim_checks(store: PostgresStore) -> dict[str, list[object]]:
    found = store.doctor_queries(instance_alive=True)
    assert "live_claims_after_exit" not in found, "a team's claims are checked, not skipped"
    return {k: found[k] for k in ("expired_leases_held", "claims_of_silent_instances")}


def test_live_claims_of_running_instances_are_fine(team: PostgresStore,
                                                   clock: FakeClock) -> None:
    team.register_instance("a", host="box-a", pid=1, version="v", lease_seconds=LEASE)
    assert team.claim_next_job(ClaimParams("acct-a", "a", clock.now() + 30, LEASE))
    clock.advance(LEASE - 1)
    assert team.renew_leases("a", clock.now() - 30, LEASE) == 1
    clock.advance(LEASE - 1)
    assert live_claim_checks(team) == {"expired_leases_held": [],
                                       "claims_of_silent_instances": []}
    assert not any(team.doctor_queries(instance_alive=False).values())


def test_expired_leases_and_silent_owners_are_reported(team: PostgresStore,
                                                       clock: FakeClock) -> None:
    team.register_instance("dead", host="box-d", pid=1, version="v", lease_seconds=LEASE)
    team.register_instance("stuck", host="box-s", pid=2, version="v", lease_seconds=LEASE)
    dead = team.claim_next_job(ClaimParams("acct-a", "dead", clock.now(), LEASE))
    assert dead is not None
    clock.advance(LEASE + 2)  # dead: no heartbeat, its lease ran out 2 s ago
    # stuck: its pump claims (a fresh lease) while its heartbeat stands still.
    stuck = team.claim_next_job(ClaimParams("acct-a", "stuck", clock.now(), LEASE))
    assert stuck is not None
    found = live_claim_checks(team)
    assert found["expired_leases_held"] == [(dead.job.id, "CLAIMED", "dead", 2.0)]
    assert found["claims_of_silent_instances"] == [
        (dead.job.id, "CLAIMED", "dead", "box-d", 12.0),
        (stuck.job.id, "CLAIMED", "stuck", "box-s", 12.0)]
    # An instance that said goodbye left its renders on purpose: only their leases count.
    team.stop_instance("stuck")
    assert live_claim_checks(team)["claims_of_silent_instances"] == [
        (dead.job.id, "CLAIMED", "dead", "box-d", 12.0)]
