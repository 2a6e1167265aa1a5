"""Fault injection matrix (issue 3, item 5).

Each row injects one fault through the mock provider (a ``[[mock:...]]`` directive in the
prompt) into one job, runs the real engine against the mock on loopback with a real SQLite
journal, and checks what DESIGN.md invariant 6 says must happen: the final state, the
error class and label, whether attempts were counted, the ledger trail, and how many
create requests reached the provider. A disk that fills up during a download is the last
row: the job stays retryable and the journal intact.
"""

from __future__ import annotations

import asyncio
import errno
import random
import sqlite3
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from reelqueue.domain.backoff import BackoffPolicy
from reelqueue.domain.models import AccountSpec, BatchSpec, JobSpec
from reelqueue.domain.states import JobState
from reelqueue.engine.config import EngineConfig
from reelqueue.engine.engine import Engine
from reelqueue.engine.events import Event, JobEvent
from reelqueue.engine.outputs import check_output
from reelqueue.mockprovider.options import MockOptions
from reelqueue.mockprovider.server import MockProviderServer
from reelqueue.store.sqlite import SqliteStore

pytestmark = pytest.mark.integration

RETRY_AFTER = 0.4
CONFIG = EngineConfig(
    retry_backoff=BackoffPolicy(0.05, 0.2), poll_backoff=BackoffPolicy(0.05, 0.2),
    poll_min_seconds=0.01, heartbeat_seconds=1.0, http_timeout_seconds=2.0,
    rate_limit_default_seconds=5.0)
OPTIONS = MockOptions(render_seconds_min=0.1, render_seconds_max=0.2, retry_after=RETRY_AFTER,
                      hang_seconds=6.0, seed=5)

R, P, A = "retryable", "permanent", "account"


@dataclass(frozen=True)
class Case:
    """One row of the matrix.

    directive: what goes inside ``[[mock:...]]``.
    state: the job's final state; drain: how the drain ends.
    errors: the (event, error class, label) of every error the ledger records for the
        job, in order (retry_wait, released, failed).
    attempts: the job's attempt count at the end (account-level errors spend none).
    trail: events that must appear in the job's ledger, in this order (others between).
    creates: create requests the provider received for the job.
    counters / at_least: other mock counters, exactly / at least.
    """

    directive: str
    state: JobState
    errors: list[tuple[str, str, str]]
    attempts: int
    trail: list[str]
    creates: int
    lookup: bool | str = True  # or "search": the mock's list, not its lookup by token
    drain: str = "drained"
    account: str = "ready"
    counters: dict[str, int] = field(default_factory=dict)
    at_least: dict[str, int] = field(default_factory=dict)


DONE = ["downloading", "completed"]
MATRIX: dict[str, Case] = {
    "429 with Retry-After": Case(
        "rate_limit*1", JobState.COMPLETED, [("released", A, "rate limited")], 1,
        ["claimed", "released", "claimed", "submitted", *DONE], 2),
    "500 once": Case(
        "server_error*1", JobState.COMPLETED, [("retry_wait", R, "provider error")], 2,
        ["claimed", "retry_wait", "claimed", "submitted", *DONE], 2),
    "500 always": Case(
        "server_error", JobState.FAILED,
        [("retry_wait", R, "provider error")] * 2 + [("failed", R, "provider error")], 3,
        ["claimed", "retry_wait", "claimed", "retry_wait", "claimed", "failed"], 3),
    "connection reset on create, lookup": Case(
        "connection_reset*1", JobState.COMPLETED, [], 1,
        ["submitting", "submit_outcome_unknown", "reconciled", "submitted", *DONE], 1),
    # Unknown is not a failure (issue 19): parked for the user, holding no slot.
    "connection reset on create, no lookup": Case(
        "connection_reset*1", JobState.PARKED, [], 1,
        ["submitting", "submit_outcome_unknown", "reconcile_unresolved", "parked"], 1,
        lookup=False),
    "connection reset on create, search": Case(
        "connection_reset*1", JobState.COMPLETED, [], 1,
        ["submitting", "submit_outcome_unknown", "reconciled", "submitted", *DONE], 1,
        lookup="search"),
    "timeout on create (body sent), lookup": Case(
        "create_timeout*1", JobState.COMPLETED, [], 1,
        ["submitting", "submit_outcome_unknown", "reconciled", "submitted", *DONE], 1),
    "timeout on create (body sent), no lookup": Case(
        "create_timeout*1", JobState.PARKED, [], 1,
        ["submitting", "submit_outcome_unknown", "reconcile_unresolved", "parked"], 1,
        lookup=False),
    "timeout on create (body sent), search": Case(
        "create_timeout*1", JobState.COMPLETED, [], 1,
        ["submitting", "submit_outcome_unknown", "reconciled", "submitted", *DONE], 1,
        lookup="search"),
    "timeout on poll": Case(
        "poll_timeout*1", JobState.COMPLETED, [], 1, ["submitted", *DONE], 1,
        at_least={"polls_total": 2}),
    "malformed JSON on create": Case(
        "malformed*1", JobState.COMPLETED, [], 1,
        ["submit_outcome_unknown", "reconciled", "submitted", *DONE], 1),
    "malformed JSON on poll": Case(
        "poll_malformed*1", JobState.COMPLETED, [], 1, ["submitted", *DONE], 1,
        at_least={"polls_total": 2}),
    "remote render failed once": Case(
        "render_fail*1", JobState.COMPLETED, [("retry_wait", R, "provider error")], 2,
        ["submitted", "retry_wait", "claimed", "submitting", "submitted", *DONE], 2),
    "remote render always fails": Case(
        "render_fail", JobState.FAILED,
        [("retry_wait", R, "provider error")] * 2 + [("failed", R, "provider error")], 3,
        ["submitted", "retry_wait", "submitted", "retry_wait", "submitted", "failed"], 3),
    "content policy": Case(
        "content_policy", JobState.FAILED, [("failed", P, "content policy")], 1,
        ["claimed", "submitting", "failed"], 1),
    "bad key (401)": Case(
        "bad_key", JobState.QUEUED, [("released", A, "key rejected")], 0,
        ["claimed", "submitting", "released"], 1, drain="stalled", account="key_rejected"),
    "out of credits (402)": Case(
        "no_credits", JobState.QUEUED, [("released", A, "out of credits")], 0,
        ["claimed", "submitting", "released"], 1, drain="stalled",
        account="out_of_credits"),
    "expired download link once (fresh link)": Case(
        "expired_link*1", JobState.COMPLETED, [], 1, ["submitted", *DONE], 1,
        counters={"downloads_total": 2}),
    "expired download link twice": Case(
        "expired_link*2", JobState.COMPLETED, [("retry_wait", R, "download failed")], 2,
        ["downloading", "retry_wait", "claimed", "resumed", *DONE], 1,
        counters={"downloads_total": 3}),
    "truncated download": Case(
        "truncated*1", JobState.COMPLETED, [("retry_wait", R, "download failed")], 2,
        ["downloading", "retry_wait", "claimed", "resumed", *DONE], 1,
        counters={"downloads_total": 2}),
    "HTML page instead of the video": Case(
        "html*1", JobState.COMPLETED, [("retry_wait", R, "download failed")], 2,
        ["downloading", "retry_wait", "claimed", "resumed", *DONE], 1,
        counters={"downloads_total": 2}),
}


@dataclass
class Outcome:
    drain: str
    job: Any
    ledger: list[Any]
    counters: dict[str, Any]
    account: Any
    events: list[Event]
    out: Path
    seconds: float


async def run_one(tmp_path: Path, prompt: str, *, lookup: bool | str = True,
                  fault_hook: Any = None) -> Outcome:
    out = tmp_path / "out"
    store = SqliteStore.open(tmp_path / "journal.sqlite3", now=time.time())
    events: list[Event] = []
    started = time.monotonic()
    with MockProviderServer(OPTIONS) as server:
        batch = store.create_batch(BatchSpec("matrix", "m.csv", str(out)), time.time())
        store.add_jobs(batch.id, [JobSpec("fault-job", prompt, "mock", str(out / "v.mp4"))],
                       time.time())
        settings = ({"lookup": lookup} if isinstance(lookup, bool)
                    else {"reconcile": lookup, "settle_seconds": 0.2})
        store.add_account(AccountSpec("acct", "mock", 1, server.url, settings=settings),
                          time.time())
        engine = Engine(store, config=CONFIG, rng=random.Random(1))
        engine.bus.subscribe(events.append)
        engine.writer.fault_hook = fault_hook
        try:
            await engine.start()
            result = await asyncio.wait_for(engine.run_until_drained(), 30)
        finally:
            await engine.stop()
            engine.close_store()
        counters = server.counters()
    outcome = Outcome(result.outcome, store.get_job(1), store.ledger(1), counters,
                      store.get_account("acct"), events, out, time.monotonic() - started)
    store.close()
    db = sqlite3.connect(str(tmp_path / "journal.sqlite3"))
    try:
        assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    finally:
        db.close()
    return outcome


def _subsequence(wanted: list[str], seen: list[str]) -> bool:
    it = iter(seen)
    return all(any(event == w for event in it) for w in wanted)


@pytest.mark.parametrize("name", list(MATRIX))
async def test_fault(tmp_path: Path, name: str) -> None:
    case = MATRIX[name]
    got = await run_one(tmp_path, f"matrix shot [[mock:{case.directive}]]", lookup=case.lookup)
    job, ledger = got.job, got.ledger
    seen = [e.event for e in ledger]
    assert got.drain == case.drain, (name, got.drain)
    assert job.state == case.state, (name, job.state, seen)
    assert job.attempts == case.attempts, (name, job.attempts, seen)
    errors = [(e.event, e.detail.get("error_class"), e.detail.get("label"))
              for e in ledger if e.event in ("retry_wait", "released", "failed")]
    assert errors == case.errors, (name, errors)
    if case.errors and case.state != JobState.COMPLETED:
        assert (job.error_class, job.error_label) == case.errors[-1][1:]
    assert _subsequence(case.trail, seen), (name, seen)
    assert got.counters["creates_by_job_key"].get("fault-job", 0) == case.creates, name
    for counter, value in case.counters.items():
        assert got.counters[counter] == value, (name, counter, got.counters[counter])
    for counter, value in case.at_least.items():
        assert got.counters[counter] >= value, (name, counter, got.counters[counter])
    if "timeout" in case.directive:  # the client really waited for its read timeout
        assert got.seconds >= CONFIG.http_timeout_seconds
    assert got.account.status.value == case.account
    # Whatever happened: a completed job has exactly its whole file; nothing else is left.
    files = sorted(p.name for p in got.out.iterdir()) if got.out.exists() else []
    if case.state == JobState.COMPLETED:
        assert files == ["v.mp4"]
        check = check_output(job)
        assert (check.size, check.sha256) == (job.output_size, job.output_sha256)
        assert seen.count("completed") == 1
    else:
        assert files == [] and "completed" not in seen


async def test_rate_limit_pauses_the_account_for_retry_after(tmp_path: Path) -> None:
    """The 429 row, timed: the account (not only the job) waits out Retry-After."""
    got = await run_one(tmp_path, "timed [[mock:rate_limit*1]]")
    released = next(e for e in got.ledger if e.event == "released")
    again = [e for e in got.ledger if e.event == "claimed"][1]
    assert again.at - released.at >= RETRY_AFTER - 0.05
    assert again.at - released.at < CONFIG.rate_limit_default_seconds  # the header, honoured
    paused = [e for e in got.events if getattr(e, "status", None) == "rate_limited"]
    assert paused and paused[0].cooldown_until is not None  # type: ignore[attr-defined]


async def test_timeouts_are_labelled_timed_out(tmp_path: Path) -> None:
    got = await run_one(tmp_path, "hang [[mock:create_timeout*1]]", lookup=False)
    unknown = next(e for e in got.ledger if e.event == "submit_outcome_unknown")
    # The words are plain now ("timed out waiting for a reply", not httpx's class name).
    assert "timed out" in unknown.detail["error"]
    assert got.job.error_label == "submit outcome unknown"
    assert "not resent" in got.job.error_message


@pytest.mark.parametrize("times", [1, None])
async def test_disk_full_during_download(tmp_path: Path, times: int | None) -> None:
    """ENOSPC while the video is written: the job goes to RETRY_WAIT keeping its render,
    the next attempt downloads again without a new create, the partial file is gone and
    the journal is intact. If the disk stays full the job fails after the ceiling, still
    with one create."""
    calls = {"n": 0}

    def full(handle: Any, chunk: bytes) -> None:
        if times is None or calls["n"] < times:
            calls["n"] += 1
            raise OSError(errno.ENOSPC, "No space left on device")

    got = await run_one(tmp_path, "disk [[mock:render_seconds=0.1]]", fault_hook=full)
    job, seen = got.job, [e.event for e in got.ledger]
    waits = [e for e in got.ledger if e.event == "retry_wait"]
    assert waits and all(e.detail["label"] == "disk error" and e.detail["keeps_render"]
                         for e in waits)
    assert "The disk is full" in waits[0].detail["message"]
    states = [e.state for e in got.events if isinstance(e, JobEvent) and e.job_id == 1]
    assert "RETRY_WAIT" in states
    assert got.counters["creates_by_job_key"]["fault-job"] == 1  # never rendered again
    assert not list(got.out.glob("*.part")) and not list(got.out.glob(".*.part"))
    if times == 1:
        assert job.state == JobState.COMPLETED and job.attempts == 2
        assert "resumed" in seen and seen.count("completed") == 1
        assert check_output(job).sha256 == job.output_sha256
    else:
        assert job.state == JobState.FAILED and job.attempts == 3
        assert (job.error_class, job.error_label) == ("retryable", "disk error")
        assert list(got.out.iterdir()) == []
