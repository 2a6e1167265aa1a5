"""application/submit.py in one process: concurrent submits are written in groups (one
transaction per batch), and each still gets its own answer: a new id, the same id for a
repeated key, 409 for the key with another body, QueueFull past the limit."""

from __future__ import annotations

import asyncio
from collections import Counter
from pathlib import Path

import pytest

from reelqueue.application.submit import (
    IdempotencyConflict,
    JobRequest,
    JobSubmitter,
    QueueFull,
    SubmitOutcome,
)
from reelqueue.engine.engine import Engine
from reelqueue.intake.catalog import RegistryCatalog
from reelqueue.store.journal_reader import JournalReader
from reelqueue.store.sqlite import SqliteStore

pytestmark = pytest.mark.integration


async def _submit_all(tmp_path: Path, max_waiting: int | None,
                      requests: list[tuple[JobRequest, str]]
                      ) -> tuple[list[SubmitOutcome | BaseException], int]:
    journal = tmp_path / "journal.sqlite3"
    store = SqliteStore.open(journal, now=0.0)
    engine = Engine(store)
    reader = JournalReader(journal)
    try:
        await engine.start(paused=True)
        submitter = JobSubmitter(engine, reader, tmp_path / "videos",
                                 RegistryCatalog(engine.providers), max_waiting)
        answers = await asyncio.gather(
            *(submitter.submit(request, client="c", idempotency_key=key)
              for request, key in requests), return_exceptions=True)
        jobs = len(await engine.store.list_jobs())
    finally:
        await engine.stop()
        engine.close_store()
        reader.close()
    return list(answers), jobs


async def test_concurrent_submits_share_transactions_and_keep_their_own_answers(
        tmp_path: Path) -> None:
    requests = [(JobRequest(prompt=f"shot {i % 30}", batch=f"b{i % 2}"), f"k{i % 30}")
                for i in range(60)]
    requests.append((JobRequest(prompt="another body"), "k0"))
    answers, jobs = await _submit_all(tmp_path, None, requests)
    assert jobs == 30
    assert isinstance(answers[-1], IdempotencyConflict)
    outcomes = [a for a in answers[:-1] if isinstance(a, SubmitOutcome)]
    assert len(outcomes) == 60
    by_key: dict[str, set[int]] = {}
    for (_, key), outcome in zip(requests, outcomes, strict=False):
        by_key.setdefault(key, set()).add(outcome.job_id)
    assert all(len(ids) == 1 for ids in by_key.values())  # one id per key
    assert len({next(iter(ids)) for ids in by_key.values()}) == 30
    assert Counter(o.replay for o in outcomes) == {False: 30, True: 30}


async def test_a_group_past_the_queue_limit_is_answered_one_by_one(tmp_path: Path) -> None:
    requests = [(JobRequest(prompt=f"shot {i}"), f"k{i}") for i in range(20)]
    answers, jobs = await _submit_all(tmp_path, 7, requests)
    assert jobs == 7
    assert sum(isinstance(a, SubmitOutcome) for a in answers) == 7
    assert sum(isinstance(a, QueueFull) for a in answers) == 13
