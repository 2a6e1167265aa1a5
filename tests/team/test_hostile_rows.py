"""Rows are untrusted input (issue 21): while two engines render a batch on the team
database, someone with write access rewrites some of the waiting job rows — a 50 MB
prompt, parameters nested 5,000 deep, a megabyte of parameters, parameters that are not an
object, a megabyte of a name. The engines keep running; each hostile row is failed with
the reason by the claim (in SQL, before the row is fetched), nothing is created for it,
and every untouched job completes exactly once."""

from __future__ import annotations

import asyncio
import dataclasses
import random
import time
from pathlib import Path

import psycopg
import pytest

from reelqueue.domain.models import AccountSpec, BatchSpec, JobSpec
from reelqueue.domain.row_limits import REFUSAL_PREFIX, ROW_REFUSED
from reelqueue.domain.states import JobState
from reelqueue.engine.engine import Engine
from reelqueue.store.postgres import PostgresStore
from tests.engine.fakes import FakeProvider, Script
from tests.engine.test_engine import FAST, install

pytestmark = [pytest.mark.integration]

JOBS = 30


def deep(depth: int) -> str:
    return '{"a": ' * depth + "1" + "}" * depth


HOSTILE = [  # (column, SQL value, cast, the refusal's words)
    ("prompt", "x" * (50 * 1024 * 1024), "", "its prompt is 52428800 bytes"),
    ("params", deep(5000), "::jsonb", "nested 16 levels deep"),
    ("params", '{"blob": "' + "y" * (1024 * 1024) + '"}', "::jsonb", "its parameters are"),
    ("params", "[1, 2, 3]", "::jsonb", "not a JSON object"),
    ("name", "n" * (1024 * 1024), "", "its name is 1048576 bytes"),
]


async def test_hostile_rows_written_while_engines_run_are_refused_the_rest_completes(
        team_url: str, tmp_path: Path) -> None:
    setup = PostgresStore.open(team_url, now=time.time())
    batch = setup.create_batch(BatchSpec("shots", "shots.csv", "shots"), time.time())
    setup.add_jobs(batch.id, [JobSpec(f"k{i}", f"p{i}", "fake", f"shots/{i:03d}.mp4",
                                      row_number=i + 2) for i in range(JOBS)], time.time())
    setup.add_account(AccountSpec("acct", "fake", 2), time.time())
    setup.close()
    provider = FakeProvider({f"p{i}": Script(submit_seconds=0.05, polls=2)
                             for i in range(JOBS)})
    config = dataclasses.replace(FAST, shared_store=True, lease_seconds=20.0)
    engines = [Engine(PostgresStore.open(team_url, now=time.time()), rng=random.Random(i),
                      providers=install(provider), instance_id=f"instance-{i}",
                      config=dataclasses.replace(config, videos_dir=tmp_path / f"m{i}"))
               for i in range(2)]
    for engine in engines:
        await engine.start()
    rewritten: dict[int, str] = {}
    try:
        # Once work is under way, the last waiting rows are rewritten behind its back.
        with psycopg.connect(team_url, autocommit=True) as db:
            for _ in range(2000):
                done = db.execute("SELECT COUNT(*) FROM jobs WHERE state = 'COMPLETED'"
                                  ).fetchone()
                if done and done[0] >= 2:
                    break
                await asyncio.sleep(0.01)
            waiting = [row[0] for row in db.execute(
                "SELECT id FROM jobs WHERE state = 'QUEUED' ORDER BY id DESC LIMIT %s",
                (len(HOSTILE),)).fetchall()]
            assert len(waiting) == len(HOSTILE), "the batch went faster than the test"
            for job_id, (column, value, cast, words) in zip(waiting, HOSTILE, strict=True):
                db.execute(f"UPDATE jobs SET {column} = %s{cast} WHERE id = %s",
                           (value, job_id))
                rewritten[job_id] = words
        # The engines keep running through it and drain the batch.
        await asyncio.wait_for(asyncio.gather(*(e.run_until_drained() for e in engines)), 90)
    finally:
        for engine in engines:
            await engine.stop()
            engine.close_store()

    store = PostgresStore.open(team_url, now=time.time())
    try:
        jobs = {job.id: job for job in store.list_jobs()}
        for job_id, words in rewritten.items():
            job = jobs[job_id]
            assert job.state is JobState.FAILED and job.error_label == "invalid input", job
            message = job.error_message or ""
            assert message.startswith(REFUSAL_PREFIX) and words in message, message
            assert len(job.prompt) <= 2000 and len(job.name) <= 200 and job.params == {}
            assert job.attempts == 0 and job.provider_job_id is None
            assert [e.event for e in store.ledger(job_id)].count(ROW_REFUSED) == 1
        untouched = [job for job_id, job in jobs.items() if job_id not in rewritten]
        assert len(untouched) == JOBS - len(HOSTILE)
        assert all(job.state is JobState.COMPLETED for job in untouched), [
            (job.id, job.state) for job in untouched if job.state is not JobState.COMPLETED]
    finally:
        store.close()
    # One create per untouched job, none for a hostile row.
    assert all(n == 1 for n in provider.creates.values()), provider.creates
    assert set(provider.creates) == {job.job_key for job in untouched}
