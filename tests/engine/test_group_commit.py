"""Group commit of the render transitions (issue 33 item 5): AsyncStore hands the fenced
transitions that arrive together to SqliteStore.write_group, one transaction with a
savepoint per write and one COMMIT, and answers no caller before that COMMIT returned.
(PostgreSQL's group commit: tests/store/test_postgres_commit.py and
tests/team/test_team_group_commit.py.)

The journal thread is held on a gate (a threading.Event) while the transitions queue, so
every test knows which writes form a group: nothing here depends on timing.
"""

from __future__ import annotations

import asyncio
import random
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from reelqueue.domain.errors import JournalBug, JournalError
from reelqueue.domain.models import AccountSpec, BatchSpec, ClaimToken, JobSpec
from reelqueue.domain.routes import Candidate, Route, RoutePolicy
from reelqueue.engine.async_store import GROUPED_TRANSITIONS, AsyncStore
from reelqueue.engine.engine import Engine
from reelqueue.providers.base import RenderRequest
from reelqueue.store.base import ClaimParams, JobError, write_each_alone
from reelqueue.store.sqlite import SqliteStore
from tests.engine.fakes import FakeProvider
from tests.engine.test_engine import FAST, install

pytestmark = pytest.mark.unit

NOW = 1_000.0
ERROR = JobError("retryable", "provider_error", "boom")
ROUTE = Route(RoutePolicy.CHEAPEST, (Candidate("mock"), Candidate("other")))


class Statements:
    """The statements a connection runs (its trace callback), and an optional hold on
    COMMIT: while ``hold`` is set, a COMMIT waits in the journal thread until released."""

    def __init__(self) -> None:
        self.seen: list[str] = []
        self.hold = False
        self.commit_entered = threading.Event()
        self.release = threading.Event()

    def __call__(self, statement: str) -> None:
        self.seen.append(statement)
        if statement.strip().upper().startswith("COMMIT") and self.hold:
            self.commit_entered.set()
            assert self.release.wait(30), "the test never released the COMMIT"

    def commits(self) -> int:
        return sum(1 for s in self.seen if s.strip().upper().startswith("COMMIT"))


@pytest.fixture
def journal(tmp_path: Path) -> Iterator[tuple[SqliteStore, list[ClaimToken], Statements]]:
    """A file journal with 32 claimed jobs on one account, and its statement trace."""
    store = SqliteStore.open(tmp_path / "journal.sqlite3", now=NOW)
    batch = store.create_batch(BatchSpec("b", "s.csv", str(tmp_path / "out")), NOW)
    store.add_jobs(batch.id, [JobSpec(f"k{i}", f"prompt {i}", "mock",
                                      str(tmp_path / "out" / f"{i:03d}.mp4"), row_number=i + 2)
                              for i in range(32)], NOW)
    store.add_account(AccountSpec("acct", "mock", 32), NOW)
    tokens = []
    for _ in range(32):
        claim = store.claim_next_job(ClaimParams("acct", "instance", NOW, 600.0))
        assert claim is not None
        tokens.append(claim.token)
    statements = Statements()
    store.raw_connection().set_trace_callback(statements)
    yield store, tokens, statements
    store.raw_connection().set_trace_callback(None)
    store.close()


def state_of(path: Path, job_id: int) -> str:
    """The job's state as a second connection reads it: only what was committed."""
    with sqlite3.connect(path) as other:
        return str(other.execute("SELECT state FROM jobs WHERE id = ?", (job_id,)).fetchone()[0])


async def queued_behind_gate(store: AsyncStore, calls: list[Callable[[], Any]]
                             ) -> tuple[list[asyncio.Task[Any]], threading.Event]:
    """Hold the journal thread, start ``calls`` (each an AsyncStore coroutine function),
    and return once all of them wait in the group queue; set the event to let them run."""
    gate, holding = threading.Event(), threading.Event()

    def hold() -> None:
        holding.set()
        assert gate.wait(30), "the test never opened the gate"

    blocker = asyncio.ensure_future(store.call(hold))
    await asyncio.to_thread(holding.wait, 30)
    tasks = [asyncio.ensure_future(call()) for call in calls]
    for _ in range(3):  # each task queues its write in its first step, before any await
        await asyncio.sleep(0)
    if len(store._queued) != len(calls):
        gate.set()
        pytest.fail("the transitions did not wait in one group")
    tasks.append(blocker)
    return tasks, gate


async def test_32_concurrent_transitions_share_one_commit(journal: Any) -> None:
    sync, tokens, statements = journal
    store = AsyncStore(sync)
    try:
        before = statements.commits()
        tasks, gate = await queued_behind_gate(store, [
            (lambda t=t: store.mark_submitting(t, f"ct-{t.job_id}", NOW)) for t in tokens])
        gate.set()
        answers = await asyncio.gather(*tasks)
        assert answers[:-1] == [True] * 32
        assert statements.commits() - before == 1  # one COMMIT, one fsync, for 32 intents
        assert {state_of(sync.path, t.job_id) for t in tokens} == {"SUBMITTING"}

        # A whole life of the 32 jobs: 4 transitions each, far fewer commits than writes.
        before = statements.commits()
        for step in (lambda t: store.record_submitted(t, f"r{t.job_id}", NOW),
                     lambda t: store.mark_downloading(t, NOW),
                     lambda t: store.mark_completed(t, size=1, sha256="0" * 64, cost=None,
                                                    now=NOW)):
            tasks, gate = await queued_behind_gate(store, [
                (lambda t=t, step=step: step(t)) for t in tokens])
            gate.set()
            assert (await asyncio.gather(*tasks))[:-1] == [True] * 32
        assert statements.commits() - before == 3
        assert {state_of(sync.path, t.job_id) for t in tokens} == {"COMPLETED"}
    finally:
        store.shutdown()


async def test_no_caller_is_answered_before_the_groups_commit_returned(journal: Any) -> None:
    sync, tokens, statements = journal
    store = AsyncStore(sync)
    try:
        statements.hold = True
        tasks, gate = await queued_behind_gate(store, [
            (lambda t=t: store.mark_submitting(t, f"ct-{t.job_id}", NOW)) for t in tokens[:8]])
        gate.set()
        assert await asyncio.to_thread(statements.commit_entered.wait, 30)
        for _ in range(20):  # any answer sent before the COMMIT would be delivered by now
            await asyncio.sleep(0)
        assert [task.done() for task in tasks[:-1]] == [False] * 8
        statements.release.set()
        assert (await asyncio.gather(*tasks))[:-1] == [True] * 8
        assert statements.commits() == 1  # the eight intents were one group
    finally:
        statements.release.set()
        store.shutdown()


async def test_a_fenced_out_write_fails_only_its_caller(journal: Any) -> None:
    sync, tokens, statements = journal
    store = AsyncStore(sync)
    stale = ClaimToken(tokens[1].job_id, "not-the-claim")
    try:
        tasks, gate = await queued_behind_gate(store, [
            lambda: store.mark_submitting(tokens[0], "ct-0", NOW),
            lambda: store.mark_submitting(stale, "ct-1", NOW),
            lambda: store.mark_submitting(tokens[2], "ct-2", NOW)])
        gate.set()
        assert (await asyncio.gather(*tasks))[:-1] == [True, False, True]
        assert statements.commits() == 1
        assert [state_of(sync.path, t.job_id) for t in tokens[:3]] == [
            "SUBMITTING", "CLAIMED", "SUBMITTING"]
        assert sync.ledger(job_id=tokens[1].job_id)[-1].event == "fenced_out"
    finally:
        store.shutdown()


class SabotagedStore(SqliteStore):
    """Its progress write of one job writes, then raises: a bug inside one write."""

    broken_job = -1

    def record_progress(self, token: ClaimToken, sub_status: str, progress: float | None,
                        now: float) -> bool:
        written = super().record_progress(token, sub_status, progress, now)
        if token.job_id == self.broken_job:
            raise RuntimeError("a bug after the write")
        return written


async def test_an_exception_rolls_back_only_its_own_savepoint(tmp_path: Path) -> None:
    sync = SabotagedStore.open(tmp_path / "journal.sqlite3", now=NOW)
    batch = sync.create_batch(BatchSpec("b", "s.csv", str(tmp_path)), NOW)
    sync.add_jobs(batch.id, [JobSpec(f"k{i}", f"p{i}", "mock", str(tmp_path / f"{i}.mp4"),
                                     row_number=i + 2) for i in range(3)], NOW)
    sync.add_account(AccountSpec("acct", "mock", 3), NOW)
    tokens = []
    for _ in range(3):
        claim = sync.claim_next_job(ClaimParams("acct", "instance", NOW, 600.0))
        assert claim is not None
        sync.mark_submitting(claim.token, f"ct{claim.token.job_id}", NOW)
        sync.record_submitted(claim.token, f"r{claim.token.job_id}", NOW)
        tokens.append(claim.token)
    sync.broken_job = tokens[1].job_id
    store = AsyncStore(sync)
    try:
        tasks, gate = await queued_behind_gate(store, [
            (lambda t=t: store.record_progress(t, "rendering", 0.5, NOW)) for t in tokens])
        gate.set()
        answers = await asyncio.gather(*tasks, return_exceptions=True)
        assert answers[0] is True and answers[2] is True
        assert isinstance(answers[1], RuntimeError)
        progress = {job.id: job.progress for job in sync.list_jobs()}
        assert progress == {tokens[0].job_id: 0.5, tokens[1].job_id: None,
                            tokens[2].job_id: 0.5}
        assert [e.event for e in sync.ledger(job_id=tokens[1].job_id)][-1] != "progress"
    finally:
        store.shutdown()
        sync.close()


async def test_a_failed_commit_fails_every_caller_of_the_group(journal: Any) -> None:
    sync, tokens, _ = journal
    store = AsyncStore(sync)
    queries = sync._q
    try:
        # The COMMIT of the next transaction fails (SQLite refuses the statement): the group
        # is rolled back, and no caller may believe its intent is in the journal.
        sync._q = {**queries, "commit_write": "COMMIT TO nowhere"}
        tasks, gate = await queued_behind_gate(store, [
            (lambda t=t: store.mark_submitting(t, f"ct-{t.job_id}", NOW)) for t in tokens[:4]])
        gate.set()
        answers = await asyncio.gather(*tasks, return_exceptions=True)
        assert all(isinstance(a, JournalBug) for a in answers[:-1]), answers
        sync._q = queries
        assert {state_of(sync.path, t.job_id) for t in tokens[:4]} == {"CLAIMED"}
        assert not sync.raw_connection().in_transaction
        assert await store.mark_submitting(tokens[0], "ct-again", NOW) is True
    finally:
        sync._q = queries
        store.shutdown()


def every_transition(token: ClaimToken) -> dict[str, Callable[[SqliteStore], Any]]:
    """Each grouped transition, called with ``token`` (one that holds no claim)."""
    return {
        "mark_submitting": lambda s: s.mark_submitting(token, "ct", NOW),
        "record_submitted": lambda s: s.record_submitted(token, "r", NOW),
        "mark_rendering": lambda s: s.mark_rendering(token, NOW),
        "record_progress": lambda s: s.record_progress(token, "x", 0.1, NOW),
        "mark_downloading": lambda s: s.mark_downloading(token, NOW),
        "record_download": lambda s: s.record_download(token, size=1, sha256="0" * 64,
                                                       now=NOW),
        "mark_completed": lambda s: s.mark_completed(token, size=1, sha256="0" * 64,
                                                     cost=None, now=NOW),
        "set_retry_wait": lambda s: s.set_retry_wait(token, ERROR, NOW, NOW,
                                                     keep_provider_job=False),
        "release_to_queue": lambda s: s.release_to_queue(token, ERROR, NOW),
        "hand_over": lambda s: s.hand_over(token, ERROR, NOW, route=ROUTE,
                                           to=ROUTE.candidates[1], came_from="mock"),
        "mark_failed": lambda s: s.mark_failed(token, ERROR, NOW),
        "park_job": lambda s: s.park_job(token, ERROR, NOW),
        "forget_submission": lambda s: s.forget_submission(token, NOW, {}),
    }


def test_the_durability_table_matches_the_store(journal: Any) -> None:
    """A group opened without fsync refuses a write the store wants durable, so the table
    that chooses each group's fsync must name every durable transition as durable."""
    sync, tokens, _ = journal
    calls = every_transition(ClaimToken(tokens[0].job_id, "no-such-claim"))
    assert set(calls) == set(GROUPED_TRANSITIONS)
    for name, call in calls.items():
        answers = sync.write_group([lambda c=call: c(sync)], durable=False)
        refused = isinstance(answers[0], JournalError)
        assert refused == GROUPED_TRANSITIONS[name], name


class JournalReadingProvider(FakeProvider):
    """On each create, reads the journal file through its own connection: what it finds
    is what was committed before the create left."""

    def __init__(self, path: Path) -> None:
        super().__init__()
        self.path = path
        self.seen_at_create: list[tuple[str, str | None, str]] = []

    async def submit(self, request: RenderRequest) -> str:
        with sqlite3.connect(self.path) as other:
            state, token = other.execute("SELECT state, client_token FROM jobs WHERE job_key = ?",
                                         (request.job_key,)).fetchone()
        self.seen_at_create.append((str(state), token, request.client_token))
        return await super().submit(request)


class SlowCommits(Statements):
    """Every COMMIT is slowed (a slow fsync), and each transaction is written down with
    the ``synchronous`` it committed under and whether it held a submission intent."""

    def __init__(self) -> None:
        super().__init__()
        self.full: bool | None = None
        self.in_transaction = False
        self.intent = False
        self.intents_committed: list[bool] = []  # per transaction with intents: fsynced?

    def __call__(self, statement: str) -> None:
        text = statement.strip().upper()
        if text.startswith("PRAGMA SYNCHRONOUS"):
            self.full = text.endswith("FULL") or text.endswith("FULL;")
        elif text.startswith("BEGIN"):
            self.intent = False
        elif "SET STATE = 'SUBMITTING'" in text:  # the intent (fenced_mark_submitting)
            self.intent = True
        elif text.startswith("COMMIT"):
            time.sleep(0.005)
            if self.intent:
                self.intents_committed.append(bool(self.full))
        super().__call__(statement)


async def test_every_intent_is_committed_with_fsync_before_its_create(tmp_path: Path) -> None:
    path = tmp_path / "journal.sqlite3"
    sync = SqliteStore.open(path, now=1.0)
    count = 24
    batch = sync.create_batch(BatchSpec("b", "s.csv", str(tmp_path / "out")), 0)
    sync.add_jobs(batch.id, [JobSpec(f"k{i}", f"p{i}", "fake",
                                     str(tmp_path / "out" / f"{i:03d}.mp4"), row_number=i + 2)
                             for i in range(count)], 0)
    sync.add_account(AccountSpec("acct", "fake", count), 0)
    statements = SlowCommits()
    sync.raw_connection().set_trace_callback(statements)
    provider = JournalReadingProvider(path)
    engine = Engine(sync, config=FAST, rng=random.Random(1), providers=install(provider))
    await engine.start()
    try:
        result = await asyncio.wait_for(engine.run_until_drained(), 60)
    finally:
        await engine.stop()
        sync.raw_connection().set_trace_callback(None)
        engine.close_store()
    assert result.outcome == "drained"
    assert len(provider.seen_at_create) == count
    for state, stored_token, sent_token in provider.seen_at_create:
        assert (state, stored_token) == ("SUBMITTING", sent_token)
    assert statements.intents_committed and all(statements.intents_committed)


class NoGroupStore(SqliteStore):
    """A store without group commit: one transaction per write."""

    def write_group(self, writes: Sequence[Callable[[], Any]], *, durable: bool
                    ) -> list[Any]:
        return write_each_alone(writes)


async def test_a_store_without_group_commit_writes_each_transition_alone(
        tmp_path: Path) -> None:
    sync = NoGroupStore.open(tmp_path / "journal.sqlite3", now=NOW)
    batch = sync.create_batch(BatchSpec("b", "s.csv", str(tmp_path)), NOW)
    sync.add_jobs(batch.id, [JobSpec(f"k{i}", f"p{i}", "mock", str(tmp_path / f"{i}.mp4"),
                                     row_number=i + 2) for i in range(3)], NOW)
    sync.add_account(AccountSpec("acct", "mock", 3), NOW)
    tokens = []
    for _ in range(3):
        claim = sync.claim_next_job(ClaimParams("acct", "instance", NOW, 600.0))
        assert claim is not None
        tokens.append(claim.token)
    statements = Statements()
    sync.raw_connection().set_trace_callback(statements)
    store = AsyncStore(sync)
    try:
        tasks, gate = await queued_behind_gate(store, [
            lambda: store.mark_submitting(tokens[0], "ct-0", NOW),
            lambda: store.mark_submitting(ClaimToken(tokens[1].job_id, "stale"), "ct-1", NOW),
            lambda: store.mark_submitting(tokens[2], "ct-2", NOW)])
        gate.set()
        assert (await asyncio.gather(*tasks))[:-1] == [True, False, True]
        assert statements.commits() == 3
    finally:
        sync.raw_connection().set_trace_callback(None)
        store.shutdown()
        sync.close()
