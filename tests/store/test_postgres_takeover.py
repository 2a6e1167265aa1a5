"""Takeover between machines on one PostgreSQL journal (issue 15): separate stores (separate
connections, as separate machines have) and a shared clock. A dead instance's expired
leases are taken over by another, reattached by provider job id (a render is never created
again), a DOWNLOADING row is downloaded again from the same render, the dead instance's late
writes are fenced out, and several instances recovering at once take each job once."""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

from reelqueue.domain.clock import FakeClock
from reelqueue.domain.models import FileCheck, Job
from reelqueue.domain.states import JobState
from reelqueue.store.base import ClaimParams, JobError, RecoverParams
from reelqueue.store.postgres import PostgresStore
from tests import pgserver
from tests.conftest import seed_store

pytestmark = pytest.mark.unit

LEASE = 30.0


def no_file(job: Job) -> FileCheck:
    return FileCheck(exists=False)


def takeover(instance: str, now: float) -> RecoverParams:
    return RecoverParams(instance, now, LEASE, only_expired=True, check_output=no_file)


@pytest.fixture
def machines(pg_dsn: str, clock: FakeClock) -> Iterator[list[PostgresStore]]:
    """Three stores on one fresh schema; the fake clock stands in for the server's."""
    schema = pgserver.new_schema_name()
    stores = [PostgresStore.open(pg_dsn, now=1, schema=schema, server_clock=clock)
              for _ in range(3)]
    yield stores
    for store in stores:
        store.close()
    pgserver.drop_schema(pg_dsn, schema)


def test_expired_leases_move_to_another_machine_and_late_writes_are_fenced(
    machines: list[PostgresStore], tmp_path: Path, clock: FakeClock
) -> None:
    a, b, _ = machines
    seed_store(a, tmp_path, clock.now(), jobs=3, accounts={"acct-a": 3})
    rendering = a.claim_next_job(ClaimParams("acct-a", "boot-a", clock.now(), LEASE))
    downloading = a.claim_next_job(ClaimParams("acct-a", "boot-a", clock.now(), LEASE))
    assert rendering and downloading
    for c in (rendering, downloading):
        assert a.mark_submitting(c.token, f"ct-{c.job.id}", clock.now())
        assert a.record_submitted(c.token, f"pj-{c.job.id}", clock.now())
    assert a.mark_downloading(downloading.token, clock.now())
    clock.advance(LEASE / 2)
    assert b.recover(takeover("boot-b", clock.now())).touched == 0, "leases still live"
    clock.advance(LEASE)  # machine a died: no heartbeat
    report = b.recover(takeover("boot-b", clock.now()))
    assert sorted(report.reattached) == sorted([rendering.job.id, downloading.job.id])
    for c in (rendering, downloading):
        job = b.get_job(c.job.id)
        assert job is not None and job.lease_owner == "boot-b"
        assert job.state == JobState.RENDERING, "polled again, then downloaded"
        assert (job.provider_job_id, job.client_token) == (f"pj-{c.job.id}",
                                                           f"ct-{c.job.id}")
        assert job.account == "acct-a" and job.attempts == 1
    assert b.live_count("acct-a") == 2, "the renders keep their slots"
    # Machine a wakes up and writes late: refused, on the record, nothing changed.
    assert not a.mark_completed(downloading.token, size=1, sha256="ab" * 32, cost=None,
                                now=clock.now())
    assert not a.set_retry_wait(rendering.token, JobError("retryable", "x", "y"),
                                clock.now(), clock.now(), keep_provider_job=False)
    assert a.renew_leases("boot-a", clock.now(), LEASE) == 0, "a renews nothing it lost"
    assert b.get_job(downloading.job.id).state == JobState.RENDERING  # type: ignore[union-attr]
    fenced = [e for e in b.ledger() if e.event == "fenced_out"]
    assert {(e.job_id, e.claim_token) for e in fenced} == {
        (downloading.job.id, downloading.token.token), (rendering.job.id, rendering.token.token)}
    creates = Counter(e.job_id for e in b.ledger() if e.event == "submitting")
    assert set(creates.values()) == {1}, "no render was submitted twice"


def test_a_renewed_lease_is_not_taken_over(
    machines: list[PostgresStore], tmp_path: Path, clock: FakeClock
) -> None:
    a, b, _ = machines
    seed_store(a, tmp_path, clock.now(), jobs=1, accounts={"acct-a": 1})
    c = a.claim_next_job(ClaimParams("acct-a", "boot-a", clock.now(), LEASE))
    assert c is not None
    clock.advance(LEASE - 1)
    assert a.renew_leases("boot-a", clock.now(), LEASE) == 1
    clock.advance(2)  # past the first lease, inside the renewed one
    assert b.recover(takeover("boot-b", clock.now())).touched == 0
    assert a.mark_submitting(c.token, "ct", clock.now())


def test_instances_recovering_at_once_take_each_job_once(
    machines: list[PostgresStore], tmp_path: Path, clock: FakeClock
) -> None:
    a = machines[0]
    seed_store(a, tmp_path, clock.now(), jobs=6, accounts={"acct-a": 6})
    claims = [a.claim_next_job(ClaimParams("acct-a", "boot-a", clock.now(), LEASE))
              for _ in range(6)]
    for c in claims:
        assert c is not None
        assert a.mark_submitting(c.token, f"ct-{c.job.id}", clock.now())
        assert a.record_submitted(c.token, f"pj-{c.job.id}", clock.now())
    clock.advance(LEASE + 1)
    start = threading.Barrier(3)
    reports: dict[str, list[int]] = {}
    errors: list[BaseException] = []

    def recover(store: PostgresStore, instance: str) -> None:
        try:
            start.wait(timeout=30)
            reports[instance] = store.recover(takeover(instance, clock.now())).reattached
        except BaseException as exc:  # reported by the main thread
            errors.append(exc)

    threads = [threading.Thread(target=recover, args=(store, f"boot-{n}"))
               for n, store in enumerate(machines)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert not errors, errors
    taken = Counter(job_id for ids in reports.values() for job_id in ids)
    assert sorted(taken) == sorted(c.job.id for c in claims if c)
    assert set(taken.values()) == {1}, f"a job was taken over twice: {reports}"
    reattached = Counter(e.job_id for e in a.ledger() if e.event == "reattached")
    assert set(reattached.values()) == {1}
    owners = {j.id: j.lease_owner for j in a.list_jobs()}
    for instance, ids in reports.items():
        assert all(owners[i] == instance for i in ids)
