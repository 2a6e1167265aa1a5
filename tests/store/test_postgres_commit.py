"""A COMMIT whose answer is lost (issue 15): the store reads back whether it was written.

Machine ``a`` talks to the real server through connections whose ``commit()`` follows a
plan: ``"after"`` sends the real COMMIT and then raises the error a cut connection raises
(the write committed, the client never heard), ``"before"`` rolls back and raises it (the
COMMIT never arrived). Machine ``b`` is an ordinary store on the same schema. A claim or a
fenced write whose answer was lost is reported as it is in the database; when that cannot
be read the operation fails, and the claim nobody learned of is not renewed by its live
instance (``renew_leases(tokens=...)``), so its lease runs out and ``b`` takes it over.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar

import psycopg
import pytest
from psycopg import pq
from psycopg.rows import dict_row
from psycopg_pool import ConnectionPool

from reelqueue.domain.clock import FakeClock
from reelqueue.domain.errors import JournalError, RenderAlreadyRecorded
from reelqueue.domain.models import ClaimToken, FileCheck, Job
from reelqueue.domain.states import JobState
from reelqueue.engine.async_store import GROUPED_TRANSITIONS, AsyncStore
from reelqueue.store.base import ClaimParams, RecoverParams
from reelqueue.store.pg_group import PgGroupCommit
from reelqueue.store.postgres import PostgresStore
from reelqueue.store.postgres_support import describe_dsn
from tests import pgserver
from tests.conftest import seed_store
from tests.engine.test_group_commit import every_transition, queued_behind_gate

pytestmark = [pytest.mark.unit,
              pytest.mark.expect_warnings("answer to the COMMIT", "was written",
                                          "was not written", "runs again")]

LEASE = 30.0


class LostAnswer(psycopg.Connection[Any]):
    """A connection whose next commits follow :attr:`plan` (shared by the pool's
    connections; empty: ordinary commits). ``commits`` counts the COMMITs that reached the
    server. A commit is a ``commit()`` of an open transaction, a statement sent in
    autocommit (its own transaction: one round trip per transition, issue 20) or the
    ``COMMIT`` statement of a transaction sent whole in one pipeline; for the last two
    ``"before"`` means the statement (or the pipeline's COMMIT, replaced by a ROLLBACK)
    never took effect."""

    plan: ClassVar[list[str]] = []
    commits: ClassVar[int] = 0

    def commit(self) -> None:
        if self.info.transaction_status != pq.TransactionStatus.INTRANS:
            super().commit()  # nothing to commit (the pool's own commit on return)
            return
        step = LostAnswer.plan.pop(0) if LostAnswer.plan else "ok"
        if step == "before":
            self.rollback()
        else:
            super().commit()
            LostAnswer.commits += 1
        if step != "ok":
            raise psycopg.OperationalError("server closed the connection unexpectedly")

    def execute(self, query: Any, params: Any = None, **kwargs: Any) -> Any:
        text = query.decode() if isinstance(query, bytes) else str(query)
        if not self.autocommit or not text.strip():  # a transaction's step, the pool's check
            return super().execute(query, params, **kwargs)
        in_pipeline = self._pipeline is not None
        if in_pipeline and text.strip().rstrip(";").upper() != "COMMIT":
            return super().execute(query, params, **kwargs)  # a step of the pipeline
        step = LostAnswer.plan.pop(0) if LostAnswer.plan else "ok"
        if step == "before":
            if in_pipeline:
                super().execute("ROLLBACK")
        else:
            cursor = super().execute(query, params, **kwargs)
            LostAnswer.commits += 1
            if step == "ok":
                return cursor
            if not in_pipeline:
                cursor.fetchall()
        raise psycopg.OperationalError("server closed the connection unexpectedly")


def no_file(job: Job) -> FileCheck:
    return FileCheck(exists=False)


@pytest.fixture
def pair(pg_dsn: str, tmp_path: Path, clock: FakeClock
         ) -> Iterator[tuple[PostgresStore, PostgresStore]]:
    """(a, b): a loses COMMIT answers on demand, b is ordinary; one job queued, acct-a."""
    schema = pgserver.new_schema_name()
    b = PostgresStore.open(pg_dsn, now=clock.now(), schema=schema, server_clock=clock)
    seed_store(b, tmp_path, clock.now(), jobs=2, accounts={"acct-a": 2})
    pool: ConnectionPool = ConnectionPool(
        pg_dsn, connection_class=LostAnswer, min_size=1, max_size=2, open=False,
        kwargs={"row_factory": dict_row, "autocommit": False,
                "options": f"-c search_path={schema}"})
    pool.open(wait=True, timeout=30)
    a = PostgresStore(pool, describe_dsn(pg_dsn), schema, None, server_clock=clock)
    LostAnswer.plan.clear()
    try:
        yield a, b
    finally:
        LostAnswer.plan.clear()
        a.close()
        b.close()
        pgserver.drop_schema(pg_dsn, schema)


def claim(store: PostgresStore, clock: FakeClock, instance: str = "boot-a") -> Any:
    return store.claim_next_job(ClaimParams("acct-a", instance, clock.now(), LEASE))


def test_a_claim_that_committed_unheard_is_returned(
    pair: tuple[PostgresStore, PostgresStore], clock: FakeClock
) -> None:
    a, b = pair
    LostAnswer.plan[:] = ["after"]
    got = claim(a, clock)
    assert not LostAnswer.plan, "the claim's COMMIT met the lost answer"
    assert got is not None, "the claim committed: it is the caller's"
    row = b.get_job(got.job.id)
    assert row is not None and row.state == JobState.CLAIMED
    assert (row.claim_token, row.lease_owner) == (got.token.token, "boot-a")
    assert got.job.attempts == row.attempts == 1 and got.account == "acct-a"
    assert b.counts().by_state.get("CLAIMED") == 1, "one claim, not two"
    assert a.mark_submitting(got.token, "ct-1", clock.now()), "its token writes"


def test_a_claim_whose_commit_never_arrived_is_none_and_claims_nothing(
    pair: tuple[PostgresStore, PostgresStore], clock: FakeClock
) -> None:
    a, b = pair
    LostAnswer.plan[:] = ["before"]
    assert claim(a, clock) is None
    assert not LostAnswer.plan
    assert b.counts().by_state.get("CLAIMED") is None
    assert [e.event for e in b.ledger() if e.event == "claimed"] == []
    assert claim(a, clock) is not None, "the job is still there to claim"


def test_record_submitted_that_committed_unheard_is_reported_done(
    pair: tuple[PostgresStore, PostgresStore], clock: FakeClock
) -> None:
    a, b = pair
    got = claim(a, clock)
    assert got is not None and a.mark_submitting(got.token, "ct-1", clock.now())
    LostAnswer.plan[:] = ["after"]
    before = LostAnswer.commits
    assert a.record_submitted(got.token, "pj-1", clock.now()) is True
    assert LostAnswer.commits - before == 2, "the write and the read-back, not the write twice"
    row = b.get_job(got.job.id)
    assert row is not None and (row.state, row.provider_job_id) == (JobState.RENDERING, "pj-1")
    assert Counter(e.event for e in b.ledger(got.job.id))["submitted"] == 1
    assert a.mark_downloading(got.token, clock.now()), "the claim goes on"


def test_record_submitted_that_never_arrived_is_written_then(
    pair: tuple[PostgresStore, PostgresStore], clock: FakeClock
) -> None:
    """Read back as not written, the row is as before: the write runs once more, so the
    provider's job id is kept (reported "no", the render would be looked for again)."""
    a, b = pair
    got = claim(a, clock)
    assert got is not None and a.mark_submitting(got.token, "ct-1", clock.now())
    LostAnswer.plan[:] = ["before"]
    assert a.record_submitted(got.token, "pj-1", clock.now()) is True
    row = b.get_job(got.job.id)
    assert row is not None and (row.state, row.provider_job_id) == (JobState.RENDERING, "pj-1")
    assert Counter(e.event for e in b.ledger(got.job.id))["submitted"] == 1


def test_a_fenced_out_write_that_committed_unheard_stays_refused(
    pair: tuple[PostgresStore, PostgresStore], clock: FakeClock
) -> None:
    a, b = pair
    got = claim(a, clock)
    assert got is not None and a.mark_submitting(got.token, "ct-1", clock.now())
    assert b.cancel_jobs([got.job.id], clock.now()) == [got.job.id]
    LostAnswer.plan[:] = ["after"]
    assert a.record_submitted(got.token, "pj-1", clock.now()) is False
    events = [e.event for e in b.ledger(got.job.id)]
    assert events.count("fenced_out") == 1, "refused once, not run again"
    assert b.get_job(got.job.id).state == JobState.CANCELLED  # type: ignore[union-attr]


@pytest.mark.parametrize("write", ["mark_completed", "mark_rendering", "record_progress"])
def test_other_fenced_writes_that_committed_unheard_are_reported_done(
    pair: tuple[PostgresStore, PostgresStore], clock: FakeClock, write: str
) -> None:
    a, b = pair
    got = claim(a, clock)
    assert got is not None and a.mark_submitting(got.token, "ct-1", clock.now())
    assert a.record_submitted(got.token, "pj-1", clock.now())
    if write == "mark_completed":
        assert a.mark_downloading(got.token, clock.now())
    LostAnswer.plan[:] = ["after"]
    if write == "mark_completed":
        assert a.mark_completed(got.token, size=3, sha256="ab" * 32, cost=None,
                                now=clock.now()) is True
        expected = JobState.COMPLETED
    elif write == "mark_rendering":
        assert a.mark_rendering(got.token, clock.now()) is True
        expected = JobState.RENDERING
    else:
        assert a.record_progress(got.token, "running", 0.5, clock.now()) is True
        expected = JobState.RENDERING
    assert not LostAnswer.plan
    row = b.get_job(got.job.id)
    assert row is not None and row.state == expected
    if write == "record_progress":
        assert (row.sub_status, row.progress) == ("running", 0.5)
    completed = [e for e in b.ledger(got.job.id) if e.event == "completed"]
    assert len(completed) == (1 if write == "mark_completed" else 0)


def test_an_unreadable_outcome_raises_and_the_claim_is_taken_over(
    pair: tuple[PostgresStore, PostgresStore], clock: FakeClock
) -> None:
    """The claim committed, its answer was lost and so was the read-back's: the caller gets
    an error and never learns the claim. Its instance heartbeats only the claims it runs,
    so the lease runs out and another instance takes the job over: nothing stranded."""
    a, b = pair
    LostAnswer.plan[:] = ["after", "after"]
    with pytest.raises(JournalError, match="could not be asked") as raised:
        claim(a, clock)
    assert "secret" not in str(raised.value)
    stranded = [j for j in b.list_jobs() if j.state == JobState.CLAIMED]
    assert len(stranded) == 1 and stranded[0].lease_owner == "boot-a"
    assert a.renew_leases("boot-a", clock.now(), LEASE, tokens=[]) == 0
    clock.advance(LEASE / 2)
    assert a.renew_leases("boot-a", clock.now(), LEASE, tokens=[]) == 0, "not kept alive"
    clock.advance(LEASE / 2 + 1)
    report = b.recover(RecoverParams("boot-b", clock.now(), LEASE, only_expired=True,
                                     check_output=no_file))
    assert report.requeued == [stranded[0].id]
    again = claim(b, clock, "boot-b")
    assert again is not None and again.job.id == stranded[0].id


def test_renew_leases_with_tokens_renews_only_those(
    pair: tuple[PostgresStore, PostgresStore], clock: FakeClock
) -> None:
    a, _ = pair
    first, second = claim(a, clock), claim(a, clock)
    assert first is not None and second is not None
    start = clock.now()
    clock.advance(5)  # the server's clock: leases are counted from it
    assert a.renew_leases("boot-a", clock.now(), LEASE, tokens=[second.token.token]) == 1
    leases = {j.id: j.lease_until for j in a.list_jobs()}
    assert leases[first.job.id] == start + LEASE
    assert leases[second.job.id] == start + 5 + LEASE
    clock.advance(1)
    assert a.renew_leases("boot-a", clock.now(), LEASE) == 2, "None: every lease"


def test_an_async_transition_sets_only_its_own_commit(
    pair: tuple[PostgresStore, PostgresStore], clock: FakeClock
) -> None:
    """A claim and the switch to downloading commit without waiting for the WAL's flush
    (commit_async: set for their own transaction only). The pool's connections stay
    durable for what follows, and inside a transaction already open (a step of it) the
    write does not turn that transaction's commit asynchronous."""
    a, _ = pair
    first, second = claim(a, clock), claim(a, clock)
    assert first is not None and second is not None
    for got in (first, second):
        assert a.mark_submitting(got.token, f"ct-{got.job.id}", clock.now())
        assert a.record_submitted(got.token, f"pj-{got.job.id}", clock.now())
    assert a.mark_downloading(first.token, clock.now())
    for _ in range(2):  # both of the pool's connections
        with a.raw_connection() as db:
            row = db.execute("SELECT current_setting('synchronous_commit') AS s").fetchone()
            assert row is not None and row["s"] == "on"
    with a.raw_connection() as db:
        assert a.mark_downloading(second.token, clock.now())
        row = db.execute("SELECT current_setting('synchronous_commit') AS s").fetchone()
        assert row is not None and row["s"] == "on", "the open transaction stays durable"


# -- group commit of the render transitions (store/pg_group.py, issue 33 item 5) ----------

def rendering_pair(a: PostgresStore, clock: FakeClock) -> list[Any]:
    """Both seeded jobs claimed on ``a`` with their intent and render written."""
    claims = [claim(a, clock), claim(a, clock)]
    for got in claims:
        assert got is not None and a.mark_submitting(got.token, f"ct-{got.job.id}", clock.now())
        assert a.record_submitted(got.token, f"pj-{got.job.id}", clock.now())
    return claims


def synchronous(a: PostgresStore) -> str:
    """The open transaction's synchronous_commit (a write of a group may read it)."""
    with a.raw_connection() as db:
        row = db.execute("SELECT current_setting('synchronous_commit') AS s").fetchone()
        assert row is not None
        return str(row["s"])


def test_a_group_of_transitions_commits_once(
    pair: tuple[PostgresStore, PostgresStore], clock: FakeClock
) -> None:
    a, b = pair
    first, second = rendering_pair(a, clock)
    stale = ClaimToken(first.job.id, "stale-token")
    before = LostAnswer.commits
    answers = a.write_group([
        lambda: a.mark_downloading(first.token, clock.now()),
        lambda: a.record_progress(second.token, "running", 0.5, clock.now()),
        lambda: a.mark_rendering(stale, clock.now()),  # fenced out: its caller's False
        lambda: synchronous(a),
    ], durable=True)
    assert answers == [True, True, False, "on"]
    assert LostAnswer.commits - before == 1, "one COMMIT for the group"
    assert b.get_job(first.job.id).state == JobState.DOWNLOADING  # type: ignore[union-attr]
    assert b.get_job(second.job.id).progress == 0.5  # type: ignore[union-attr]
    assert [e.event for e in b.ledger(first.job.id)].count("fenced_out") == 1


def test_a_group_none_of_whose_writes_needs_the_disk_commits_without_waiting(
    pair: tuple[PostgresStore, PostgresStore], clock: FakeClock
) -> None:
    a, b = pair
    first, second = rendering_pair(a, clock)
    answers = a.write_group([
        lambda: a.record_progress(first.token, "running", 0.25, clock.now()),
        lambda: a.record_progress(second.token, "running", 0.75, clock.now()),
        lambda: synchronous(a),
    ], durable=False)
    assert answers == [True, True, "off"]
    assert synchronous(a) == "on", "only that transaction's commit"
    assert [j.progress for j in b.list_jobs()] == [0.25, 0.75]


def test_a_durable_write_in_a_group_opened_without_the_disk_runs_alone(
    pair: tuple[PostgresStore, PostgresStore], clock: FakeClock
) -> None:
    """Never left undurable: the group is undone and each write runs in its own
    transaction, the completion with its durable commit."""
    a, b = pair
    first, second = rendering_pair(a, clock)
    assert a.mark_downloading(second.token, clock.now())
    before = LostAnswer.commits
    answers = a.write_group([
        lambda: a.record_progress(first.token, "running", 0.5, clock.now()),
        lambda: a.mark_completed(second.token, size=3, sha256="ab" * 32, cost=None,
                                 now=clock.now()),
    ], durable=False)
    assert answers == [True, True]
    assert LostAnswer.commits - before == 2, "each alone"
    assert b.get_job(second.job.id).state == JobState.COMPLETED  # type: ignore[union-attr]
    assert b.get_job(first.job.id).progress == 0.5  # type: ignore[union-attr]


def test_a_write_that_raises_fails_only_its_caller(
    pair: tuple[PostgresStore, PostgresStore], clock: FakeClock
) -> None:
    """A render another job holds: that caller gets RenderAlreadyRecorded; the group is
    undone and the other writes run alone, each once."""
    a, b = pair
    first, second = rendering_pair(a, clock)
    assert a.mark_downloading(first.token, clock.now())
    answers = a.write_group([
        lambda: a.mark_completed(first.token, size=3, sha256="ab" * 32, cost=None,
                                 now=clock.now()),
        lambda: a.record_submitted(second.token, f"pj-{first.job.id}", clock.now()),
        lambda: a.record_progress(second.token, "running", 0.5, clock.now()),
    ], durable=True)
    assert answers[0] is True and answers[2] is True
    assert isinstance(answers[1], RenderAlreadyRecorded), answers[1]
    assert b.get_job(first.job.id).state == JobState.COMPLETED  # type: ignore[union-attr]
    assert Counter(e.event for e in b.ledger(first.job.id))["completed"] == 1
    assert b.get_job(second.job.id).provider_job_id == f"pj-{second.job.id}"  # type: ignore[union-attr]


@pytest.mark.parametrize("lost", ["after", "before"])
def test_a_group_whose_commit_answer_was_lost_is_read_back(
    pair: tuple[PostgresStore, PostgresStore], clock: FakeClock, lost: str
) -> None:
    """"after": the group committed unheard; its transaction's status says so and every
    answer stands (nothing written twice). "before": it never committed; each write runs
    again alone."""
    a, b = pair
    first, second = rendering_pair(a, clock)
    assert a.mark_downloading(first.token, clock.now())
    LostAnswer.plan[:] = [lost]
    answers = a.write_group([
        lambda: a.mark_completed(first.token, size=3, sha256="ab" * 32, cost=None,
                                 now=clock.now()),
        lambda: a.mark_downloading(second.token, clock.now()),
    ], durable=True)
    assert not LostAnswer.plan
    assert answers == [True, True]
    assert b.get_job(first.job.id).state == JobState.COMPLETED  # type: ignore[union-attr]
    assert b.get_job(second.job.id).state == JobState.DOWNLOADING  # type: ignore[union-attr]
    events = Counter(e.event for e in b.ledger())
    assert (events["completed"], events["downloading"], events["fenced_out"]) == (1, 2, 0)


def test_a_group_whose_outcome_cannot_be_read_fails_every_caller(
    pair: tuple[PostgresStore, PostgresStore], clock: FakeClock
) -> None:
    """The COMMIT's answer and both reads of the group's status lost: unknown, said, and
    nothing assumed (the group committed here; nobody is told it did not)."""
    a, b = pair
    first, second = rendering_pair(a, clock)
    LostAnswer.plan[:] = ["after", "after", "after"]
    with pytest.raises(JournalError, match="could not say whether"):
        a.write_group([lambda: a.mark_downloading(first.token, clock.now()),
                       lambda: a.mark_downloading(second.token, clock.now())], durable=True)
    assert {j.state for j in b.list_jobs()} == {JobState.DOWNLOADING}


def test_the_durability_table_matches_the_postgres_store(
    pair: tuple[PostgresStore, PostgresStore], clock: FakeClock,
    monkeypatch: pytest.MonkeyPatch
) -> None:
    """As on SQLite (tests/engine/test_group_commit.py): a group opened without waiting
    for the disk refuses each write the store wants durable, so GROUPED_TRANSITIONS, which
    chooses each group's commit, must name every durable transition durable."""
    a, _ = pair
    refusals: list[bool] = []
    refuse = PgGroupCommit._refuse_undurable

    def watched(self: PgGroupCommit, durable: bool) -> None:
        try:
            refuse(self, durable)
        except JournalError:
            refusals.append(True)
            raise

    monkeypatch.setattr(PgGroupCommit, "_refuse_undurable", watched)
    got = claim(a, clock)
    assert got is not None
    calls = every_transition(ClaimToken(got.job.id, "no-such-claim"))
    assert set(calls) == set(GROUPED_TRANSITIONS)
    for name, call in calls.items():
        refusals.clear()
        a.write_group([lambda c=call: c(a), lambda: None], durable=False)  # type: ignore[misc]
        assert bool(refusals) == GROUPED_TRANSITIONS[name], name


async def test_concurrent_transitions_of_an_engine_share_one_commit(
    pair: tuple[PostgresStore, PostgresStore], clock: FakeClock
) -> None:
    """Through the engine's AsyncStore: the transitions that queue together are one
    group, one COMMIT."""
    a, b = pair
    first, second = rendering_pair(a, clock)
    store = AsyncStore(a)
    try:
        before = LostAnswer.commits
        tasks, gate = await queued_behind_gate(store, [
            lambda: store.mark_downloading(first.token, clock.now()),
            lambda: store.mark_downloading(second.token, clock.now())])
        gate.set()
        assert (await asyncio.gather(*tasks))[:-1] == [True, True]
        assert LostAnswer.commits - before == 1
        assert {j.state for j in b.list_jobs()} == {JobState.DOWNLOADING}
    finally:
        store.shutdown()
