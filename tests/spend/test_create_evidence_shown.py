"""The evidence for an unknown create is shown wherever the parked job is seen (issue 32
item 6): one reading of the provider's counts (``resolve``, the window's "Read the
provider's counts", the same application call) is kept on the job's ledger, and
``status --json``, ``status``, ``GET /v1/jobs/{id}``, ``GET /v1/attention`` and the job's
history all carry that same verdict and figures, with its time. Reading them again there
never asks the provider; a read that fails says "unavailable"; nothing is ever created."""

from __future__ import annotations

import asyncio
import json
import math
import time
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from reelqueue.api.openapi import openapi_document
from reelqueue.application import accounts, jobs
from reelqueue.application.accounts import AccountDraft
from reelqueue.application.create_evidence import (
    EVIDENCE_EVENT,
    evidence_line,
    read_create_evidence,
)
from reelqueue.application.history_words import history_detail
from reelqueue.application.session import Session
from reelqueue.credentials import MemoryKeyring
from reelqueue.domain.states import JobState
from tests.api.live_api import LiveApi
from tests.spend.conftest import Journal, RunwayFake, today, usage_body

pytestmark = pytest.mark.integration

USAGE = "/v1/organization/usage"


def usage_reads(fake: RunwayFake) -> int:
    return sum(1 for r in fake.requests if r[1] == USAGE)


def status_json(journal: Journal, capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
    capsys.readouterr()
    assert journal.cli("status", "--json") == 0
    return json.loads(capsys.readouterr().out)  # type: ignore[no-any-return]


def job_of(data: dict[str, Any], job_id: int) -> dict[str, Any]:
    return next(j for j in data["jobs"] if j["id"] == job_id)


def evidence_entries(journal: Journal, job_id: int) -> list[dict[str, Any]]:
    store = journal.store()
    try:
        return [e.detail for e in store.ledger(job_id) if e.event == EVIDENCE_EVENT]
    finally:
        store.close()


def test_one_reading_shows_the_same_in_status_the_api_and_the_history(
        live: tuple[LiveApi, Journal], runway_fake: RunwayFake,
        capsys: pytest.CaptureFixture[str]) -> None:
    api, journal = live
    assert api.running is not None
    session = api.running.access.session
    (lost,) = journal.started(0, lost=1)
    runway_fake.answer(usage_body(**{"gen4.5": 60}))
    document = openapi_document()
    schema = {**document["components"]["schemas"]["Job"],
              "components": document["components"]}

    # Before any reading: every reader says none, and none of them asked the provider.
    assert job_of(status_json(journal, capsys), lost)["create_evidence"] is None
    with api.client() as client:
        before = client.get(f"/v1/jobs/{lost}").json()
    assert before["create_evidence"] is None
    assert usage_reads(runway_fake) == 0

    # The user's reading (the window's button and `resolve` make this one call).
    reading = api.call(lambda: jobs.unknown_create_evidence(session, lost))
    assert reading.data["verdict"] == "billed"
    assert usage_reads(runway_fake) == 1

    data = status_json(journal, capsys)
    shown = job_of(data, lost)["create_evidence"]
    with api.client() as client:
        answer = client.get(f"/v1/jobs/{lost}")
        attention = client.get("/v1/attention").json()
        history = client.get(f"/v1/jobs/{lost}/history").json()
        listed = client.get("/v1/jobs").json()
    assert answer.status_code == 200
    body = answer.json()
    jsonschema.validate(body, schema)
    served = body["create_evidence"]
    (item,) = [i for i in attention["jobs"] if i["id"] == lost]
    for said in (shown, served, item["create_evidence"]):
        assert said["verdict"] == "billed" and said["day"] == today()
        assert said["provider_units"] == 60 and said["price_units"] == pytest.approx(60)
        assert said["creates_in_window"] == 1 and said["unit"] == "credits"
        assert said["account"] == "rw" and said["model"] == "gen4.5"
        assert said["words"] == reading.words and said["as_of"] == reading.data["as_of"]
        assert said["read_at"] == reading.data["read_at"]
    assert "the provider counted it: billed (60 credits used on " + today() in reading.words
    assert reading.words.endswith(f", as of {reading.data['as_of']}.")
    # the history says the reading in the same words
    (entry,) = [e for e in history["entries"] if EVIDENCE_EVENT.replace("_", " ") in
                json.dumps(e)]
    assert "the provider counted it: billed (60 credits" in json.dumps(entry)
    # a list is never a reason to read a ledger per job, nor to call the provider
    assert all("create_evidence" not in j for j in listed["jobs"])
    capsys.readouterr()
    assert journal.cli("status") == 0
    assert reading.words in capsys.readouterr().out
    assert usage_reads(runway_fake) == 1, "a reader asked the provider"

    store = journal.store()
    try:
        job = store.get_job(lost)
        assert job is not None and job.state == JobState.PARKED  # nothing decided
        assert job.provider_job_id is None and len(store.list_jobs()) == 1
    finally:
        store.close()
    assert runway_fake.creates() == []


def test_resolve_records_its_reading_and_a_failed_read_shows_unavailable(
        journal: Journal, runway_fake: RunwayFake,
        capsys: pytest.CaptureFixture[str]) -> None:
    (lost,) = journal.started(0, lost=1)
    runway_fake.answer({"error": "internal"}, status=500)
    assert journal.cli("resolve", str(lost)) == 0
    out = capsys.readouterr().out
    assert "Provider's counts: provider's figures unavailable (" in out
    assert "--create-again" in out  # the choices are still offered
    said = job_of(status_json(journal, capsys), lost)["create_evidence"]
    assert said["verdict"] == "unavailable" and said["why"]
    assert said["provider_units"] is None
    # a later reading that works replaces it: the newest entry is shown
    runway_fake.answer(usage_body())
    assert journal.cli("resolve", str(lost)) == 0
    said = job_of(status_json(journal, capsys), lost)["create_evidence"]
    assert said["verdict"] == "not_counted" and said["provider_units"] == 0
    assert [e["verdict"] for e in evidence_entries(journal, lost)] == [
        "unavailable", "not_counted"]
    assert runway_fake.creates() == []
    store = journal.store()
    try:
        assert [j.state for j in store.list_jobs()] == [JobState.PARKED]
    finally:
        store.close()


HOSTILE = {
    "amount NaN": b'{"results": [{"date": "@", "usedCredits": [{"amount": NaN, '
                  b'"model": "gen4.5"}]}]}',
    "amount negative": b'{"results": [{"date": "@", "usedCredits": [{"amount": -60, '
                       b'"model": "gen4.5"}]}]}',
    "amount huge": b'{"results": [{"date": "@", "usedCredits": [{"amount": 1e308, '
                   b'"model": "gen4.5"}]}]}',
    "amount a string": b'{"results": [{"date": "@", "usedCredits": [{"amount": "60", '
                       b'"model": "gen4.5"}]}]}',
    "results a string": b'{"results": "lots"}',
}


@pytest.mark.parametrize("case", sorted(HOSTILE))
def test_hostile_figures_never_crash_and_are_never_billed(
        case: str, journal: Journal, runway_fake: RunwayFake,
        capsys: pytest.CaptureFixture[str]) -> None:
    (lost,) = journal.started(0, lost=1)
    runway_fake.answer(HOSTILE[case].replace(b'"@"', f'"{today()}"'.encode()))
    assert journal.cli("resolve", str(lost)) == 0
    said = job_of(status_json(journal, capsys), lost)["create_evidence"]
    assert said is not None and said["verdict"] != "billed", said
    for figure in (said["provider_units"], said["price_units"]):
        assert figure is None or (math.isfinite(figure) and abs(figure) <= 1e9)
    assert said["words"].startswith("Provider's counts: ")
    assert runway_fake.creates() == []


ROWS: list[dict[str, Any]] = [
    {},
    {"verdict": "billed"},  # no figures: not to be shown as billed
    {"verdict": "billed", "day": "2026-12-06", "creates_in_window": 1,
     "provider_units": float("nan"), "read_at": float("inf")},
    {"verdict": "not_counted", "day": "2026-13-45", "creates_in_window": 1,
     "provider_units": 0},
    {"verdict": "paid twice", "day": "2026-12-06", "creates_in_window": 1},
    {"verdict": ["billed"], "read_at": 10**400, "why": "x" * 10_000, "unit": 7},
    {"verdict": "not_provable", "day": "2026-12-06", "creates_in_window": True,
     "provider_units": "60", "price_units": -1e300, "read_at": "noon"},
    {"verdict": "not_provable", "day": "2026-12-06", "creates_in_window": 10**12},
    {"verdict": "billed", "day": "2026-12-06", "creates_in_window": 4,  # not alone
     "provider_units": 60, "price_units": 60},
    {"verdict": "billed", "day": "2026-12-06", "creates_in_window": 1,  # no price
     "provider_units": 60},
]


@pytest.mark.parametrize("row", range(len(ROWS)))
def test_a_hostile_ledger_row_reads_as_unreadable_never_a_crash(row: int) -> None:
    """A reading is a row of a shared journal: the line is made from it defensively."""
    said = evidence_line(ROWS[row], 1_800_000_000.0)
    assert said.words.startswith("Provider's counts: ")
    assert said.data["verdict"] == "unavailable"
    assert "cannot be read" in said.words and len(said.words) < 600
    assert "billed" not in said.words
    json.dumps(said.data, allow_nan=False)  # the API and --json can carry it
    assert "cannot be read" in history_detail(EVIDENCE_EVENT, ROWS[row])


def test_a_rows_text_is_one_line_of_text() -> None:
    said = evidence_line({"verdict": "unavailable", "day": "2026-12-06",
                          "creates_in_window": 1, "why": "down\nnow \u202egnp.exe"},
                         1_800_000_000.0)
    assert "down now  gnp.exe" in said.words and said.words.isprintable()


def test_a_provider_without_usage_says_so_once(tmp_path: Path,
                                               memory_keyring: MemoryKeyring) -> None:
    """A provider that publishes no usage is said once: reading again writes nothing."""
    from reelqueue.application.context import AppContext
    from reelqueue.domain.errors import ErrorClass, ErrorLabel
    from reelqueue.domain.models import BatchSpec, JobSpec
    from reelqueue.store.base import ClaimParams, JobError
    from reelqueue.store.sqlite import SqliteStore

    ctx = AppContext(data_dir=tmp_path / "data", videos_dir=tmp_path / "videos")

    async def add_account() -> None:
        session = Session(ctx)
        await session.open_journal()
        try:
            await accounts.add_account(session, AccountDraft(
                "m", "mock", 2, None, "http://127.0.0.1:9"), check=False)
        finally:
            await session.stop()

    asyncio.run(add_account())
    store = SqliteStore.open(ctx.journal_path, now=time.time())
    try:
        batch = store.create_batch(BatchSpec("b", "s.csv", "b"), time.time())
        store.add_jobs(batch.id, [JobSpec("k", "a fox", "mock", "b/0.mp4")], time.time())
        claim = store.claim_next_job(ClaimParams("m", "test", time.time(), 600.0))
        assert claim is not None and store.mark_submitting(claim.token, "ct", time.time())
        assert store.park_job(claim.token, JobError(
            str(ErrorClass.UNKNOWN), ErrorLabel.SUBMIT_UNKNOWN.value, "lost"), time.time())
    finally:
        store.close()

    async def read_thrice() -> tuple[list[str], list[int]]:
        session = Session(ctx)
        await session.open_journal()
        try:
            words = [(await read_create_evidence(session, claim.job.id)).words
                     for _ in range(3)]
            ledger = await session.journal.ledger(claim.job.id)
            return words, [e.seq for e in ledger if e.event == EVIDENCE_EVENT]
        finally:
            await session.stop()

    words, entries = asyncio.run(read_thrice())
    assert len(entries) == 1
    assert words[0] == words[2] and "usage not published by" in words[0]


def test_a_reading_is_timed_by_the_journals_clock(tmp_path: Path) -> None:
    """On a shared journal the reading's time is the database server's (DESIGN.md
    invariant 14), not this machine's: a reader on another machine ages it right."""
    from reelqueue.application.context import AppContext
    from reelqueue.domain.errors import ErrorClass, ErrorLabel
    from reelqueue.domain.models import AccountSpec, BatchSpec, JobSpec
    from reelqueue.store.base import ClaimParams, JobError
    from reelqueue.store.memory import MemoryStore

    server_clock = 1_700_000_000.25

    class ServerClockStore(MemoryStore):
        def server_time(self) -> float | None:
            return server_clock

    store = ServerClockStore()
    store.add_account(AccountSpec("m", "mock", 2, "http://127.0.0.1:9"), 1.0)
    batch = store.create_batch(BatchSpec("b", "s.csv", "b"), 1.0)
    store.add_jobs(batch.id, [JobSpec("k", "a fox", "mock", "b/0.mp4")], 1.0)
    claim = store.claim_next_job(ClaimParams("m", "test", 2.0, 600.0))
    assert claim is not None and store.mark_submitting(claim.token, "ct", 2.0)
    assert store.park_job(claim.token, JobError(
        str(ErrorClass.UNKNOWN), ErrorLabel.SUBMIT_UNKNOWN.value, "lost"), 3.0)

    async def read() -> Any:
        session = Session(AppContext(data_dir=tmp_path / "d", videos_dir=tmp_path / "v"))
        session.adopt_store(store)
        try:
            return await read_create_evidence(session, claim.job.id)
        finally:
            await asyncio.to_thread(session.journal.shutdown)

    try:
        said = asyncio.run(read())
        (entry,) = [e for e in store.ledger(claim.job.id) if e.event == EVIDENCE_EVENT]
    finally:
        store.close()
    assert said.data["read_at"] == server_clock
    assert entry.at == server_clock and entry.detail["read_at"] == server_clock
    assert said.data["verdict"] == "not_published"


def test_a_reading_is_kept_on_every_journal(store: Any, tmp_path: Path) -> None:
    """The reading is a ledger entry on SQLite and PostgreSQL alike, timed by the store's
    own clock where it has one (the server's on PostgreSQL)."""
    from reelqueue.application.context import AppContext
    from reelqueue.domain.errors import ErrorClass, ErrorLabel
    from reelqueue.domain.models import AccountSpec, BatchSpec, JobSpec
    from reelqueue.store.base import ClaimParams, JobError

    now = time.time()
    store.add_account(AccountSpec("m", "mock", 2, "http://127.0.0.1:9"), now)
    batch = store.create_batch(BatchSpec("b", "s.csv", "b"), now)
    store.add_jobs(batch.id, [JobSpec("k", "a fox", "mock", "b/0.mp4")], now)
    claim = store.claim_next_job(ClaimParams("m", "test", now, 600.0))
    assert claim is not None and store.mark_submitting(claim.token, "ct", now)
    assert store.park_job(claim.token, JobError(
        str(ErrorClass.UNKNOWN), ErrorLabel.SUBMIT_UNKNOWN.value, "lost"), now)

    async def read() -> Any:
        session = Session(AppContext(data_dir=tmp_path / "d", videos_dir=tmp_path / "v"))
        session.adopt_store(store)
        try:
            said = await read_create_evidence(session, claim.job.id)
            again = await session.journal.ledger(claim.job.id)
            return said, again, await session.journal.server_time(), session.clock.now()
        finally:
            await asyncio.to_thread(session.journal.shutdown)

    said, ledger, server, here = asyncio.run(read())
    (entry,) = [e for e in ledger if e.event == EVIDENCE_EVENT]
    assert entry.at == said.data["read_at"] == entry.detail["read_at"]
    assert abs(said.data["read_at"] - (here if server is None else server)) < 60
    assert entry.detail["verdict"] == "not_published" and entry.account == "m"
