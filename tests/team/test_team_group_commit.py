"""Group commit on the team journal (issue 33 item 5, store/pg_group.py), through an engine:
the render transitions that arrive together share one transaction and one COMMIT, and
every submission intent is committed before its create leaves (DESIGN.md invariants 3 and
4): the provider reads each job's row through a connection of its own at each create and
finds the intent there, with the client token it is being sent."""

from __future__ import annotations

import asyncio
import dataclasses
import random
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import psycopg
import pytest

from reelqueue.domain.models import AccountSpec, BatchSpec, JobSpec
from reelqueue.domain.states import JobState
from reelqueue.engine.engine import Engine
from reelqueue.providers.base import RenderRequest
from reelqueue.store.postgres import PostgresStore
from tests.engine.fakes import FakeProvider, Script
from tests.engine.test_engine import FAST, install

pytestmark = [pytest.mark.integration]

JOBS = 24


class SlowGroups(PostgresStore):
    """A team store whose groups wait 20 ms before they run (a slow server), so that
    transitions pile up behind each; the size of every group is written down."""

    sizes: list[int]

    def write_group(self, writes: Sequence[Callable[[], Any]], *, durable: bool
                    ) -> list[Any]:
        self.sizes.append(len(writes))
        time.sleep(0.02)
        return super().write_group(writes, durable=durable)


class ReadsTheJournal(FakeProvider):
    """At each create, reads the job's row as another machine would: only what was
    committed."""

    def __init__(self, url: str, scripts: dict[str, Script]) -> None:
        super().__init__(scripts)
        self.url = url
        self.seen_at_create: list[tuple[str, str | None, str]] = []

    async def submit(self, request: RenderRequest) -> str:
        def read() -> tuple[str, str | None]:
            with psycopg.connect(self.url, autocommit=True) as db:
                row = db.execute("SELECT state, client_token FROM jobs WHERE job_key = %s",
                                 (request.job_key,)).fetchone()
            assert row is not None
            return str(row[0]), row[1]

        state, token = await asyncio.to_thread(read)
        self.seen_at_create.append((state, token, request.client_token))
        return await super().submit(request)


async def test_grouped_transitions_on_the_team_journal_keep_every_intent_first(
        team_url: str, tmp_path: Path) -> None:
    setup = PostgresStore.open(team_url, now=time.time())
    batch = setup.create_batch(BatchSpec("shots", "shots.csv", "shots"), time.time())
    setup.add_jobs(batch.id, [JobSpec(f"k{i}", f"p{i}", "fake", f"shots/{i:03d}.mp4",
                                      row_number=i + 2) for i in range(JOBS)], time.time())
    setup.add_account(AccountSpec("acct", "fake", JOBS), time.time())
    setup.close()
    provider = ReadsTheJournal(team_url, {f"p{i}": Script(polls=1) for i in range(JOBS)})
    store = SlowGroups.open(team_url, now=time.time())
    store.sizes = []
    config = dataclasses.replace(FAST, shared_store=True, lease_seconds=20.0,
                                 videos_dir=tmp_path / "videos")
    engine = Engine(store, rng=random.Random(1), providers=install(provider),
                    instance_id="instance-1", config=config)
    await engine.start()
    try:
        await asyncio.wait_for(engine.run_until_drained(), 90)
    finally:
        await engine.stop()
        engine.close_store()

    assert len(provider.seen_at_create) == JOBS
    for state, stored_token, sent_token in provider.seen_at_create:
        assert (state, stored_token) == ("SUBMITTING", sent_token)
    assert max(store.sizes) > 1, store.sizes  # transitions did share a commit
    check = PostgresStore.open(team_url, now=time.time())
    try:
        jobs = check.list_jobs()
        assert len(jobs) == JOBS and {job.state for job in jobs} == {JobState.COMPLETED}
        events = [e.event for e in check.ledger()]
        assert events.count("completed") == JOBS and events.count("fenced_out") == 0
    finally:
        check.close()
    assert all(count == 1 for count in provider.creates.values()), provider.creates
