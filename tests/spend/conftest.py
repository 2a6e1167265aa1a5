"""A Runway fake on loopback for cost reconciliation (issue 32 items 5 and 6): its usage
answer is tests/fixtures/runway/usage.json (the SDK's shape, SOURCE.md) with the day and
the amounts each test sets, or any body a test gives; it counts every request, so a test
can prove nothing was created. A journal whose creates went through the store's own
transitions (claim, intent with its spend, provider id or parked unknown)."""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from reelqueue.application import accounts
from reelqueue.application.accounts import AccountDraft
from reelqueue.application.context import AppContext
from reelqueue.application.session import Session
from reelqueue.cli import main as cli_main
from reelqueue.credentials import MemoryKeyring
from reelqueue.domain.errors import ErrorClass, ErrorLabel
from reelqueue.domain.models import BatchSpec, JobSpec
from reelqueue.store.base import ClaimParams, JobError
from reelqueue.store.sqlite import SqliteStore

# Every store implementation (SQLite, memory, PostgreSQL), as the store contract tests get it.
from tests.api.live_api import LiveApi
from tests.store.conftest import store as store

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "runway"
KEY = "key_" + "7" * 64
PRICE = 0.60  # gen4.5, 5 s at the table's 12 credits/s, $0.01 a credit


def today() -> str:
    return datetime.now(UTC).date().isoformat()


def usage_body(**amounts: float) -> dict[str, Any]:
    """The fixture's answer for today with these amounts per model."""
    body = json.loads((FIXTURES / "usage.json").read_text("utf-8"))
    body["models"] = sorted(amounts)
    body["results"] = [{"date": today(), "usedCredits": [
        {"amount": amount, "model": model} for model, amount in amounts.items()]}]
    return body


@dataclass
class RunwayFake:
    """What the fake answers and what it was asked."""

    usage: bytes = b'{"models": [], "results": []}'
    usage_status: int = 200
    requests: list[tuple[str, str, bytes]] = field(default_factory=list)
    url: str = ""

    def answer(self, body: Any, status: int = 200) -> None:
        self.usage = body if isinstance(body, bytes) else json.dumps(body).encode()
        self.usage_status = status

    def creates(self) -> list[tuple[str, str, bytes]]:
        return [r for r in self.requests if r[0] == "POST"
                and r[1] != "/v1/organization/usage"]


@pytest.fixture
def runway_fake() -> Iterator[RunwayFake]:
    fake = RunwayFake()
    organization = (FIXTURES / "organization.json").read_bytes()

    class Handler(BaseHTTPRequestHandler):
        def _reply(self, status: int, body: bytes) -> None:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_GET(self) -> None:
            fake.requests.append(("GET", self.path, b""))
            if self.path == "/v1/organization":
                self._reply(200, organization)
            else:
                self._reply(404, b'{"error": "not found"}')

        def do_POST(self) -> None:
            length = min(int(self.headers.get("Content-Length") or 0), 65_536)
            body = self.rfile.read(length)
            fake.requests.append(("POST", self.path, body))
            if self.path == "/v1/organization/usage":
                self._reply(fake.usage_status, fake.usage)
            else:
                self._reply(400, b'{"error": "the fake creates nothing"}')

        def log_message(self, format: str, *args: Any) -> None:
            return

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    fake.url = f"http://127.0.0.1:{server.server_address[1]}"
    try:
        yield fake
    finally:
        server.shutdown()
        server.server_close()
        thread.join(10)


@dataclass
class Journal:
    """A data folder with one Runway account on the fake."""

    ctx: AppContext

    def cli(self, *argv: str) -> int:
        return cli_main.main(["--data-dir", str(self.ctx.data_dir), "--videos-dir",
                              str(self.ctx.videos_dir), *argv])

    def store(self) -> SqliteStore:
        return SqliteStore.open(self.ctx.journal_path, now=time.time())

    def started(self, count: int, *, model: str = "gen4.5", lost: int = 0,
                price: float | None = PRICE) -> list[int]:
        """``count`` creates started and answered, then ``lost`` whose answer was lost
        (parked, outcome unknown), each through the store's own transitions."""
        store = self.store()
        try:
            batch = store.create_batch(BatchSpec(f"b{time.time_ns()}", "s.csv", "b"),
                                       time.time())
            specs = [JobSpec(f"k{batch.id}-{i}", f"a fox {i}", "runway", f"b/{i}.mp4",
                             params={"model": model, "duration": 5},
                             metadata={} if price is None else {"price": price})
                     for i in range(count + lost)]
            store.add_jobs(batch.id, specs, time.time())
            ids = []
            for i in range(count + lost):
                claim = store.claim_next_job(ClaimParams("rw", "test", time.time(), 600.0))
                assert claim is not None
                assert store.mark_submitting(claim.token, f"ct-{batch.id}-{i}", time.time())
                if i < count:
                    assert store.record_submitted(claim.token, f"task-{batch.id}-{i}",
                                                  time.time())
                else:
                    assert store.park_job(claim.token, JobError(
                        str(ErrorClass.UNKNOWN), ErrorLabel.SUBMIT_UNKNOWN.value,
                        "the create's answer was lost"), time.time())
                ids.append(claim.job.id)
            return ids
        finally:
            store.close()


@pytest.fixture
def journal(tmp_path: Path, memory_keyring: MemoryKeyring, runway_fake: RunwayFake) -> Journal:
    ctx = AppContext(data_dir=tmp_path / "data", videos_dir=tmp_path / "videos")

    async def prepare() -> None:
        session = Session(ctx)
        await session.open_journal()
        try:
            await accounts.add_account(session, AccountDraft(
                "rw", "runway", 5, KEY, runway_fake.url), check=False)
        finally:
            await session.stop()

    asyncio.run(prepare())
    return Journal(ctx)


@pytest.fixture
def live(tmp_path: Path, memory_keyring: MemoryKeyring,
         runway_fake: RunwayFake) -> Iterator[tuple[LiveApi, Journal]]:
    """A real API server (tests/api/live_api.py) on a journal with the Runway account
    ``rw`` at the fake, and that journal."""
    with LiveApi(tmp_path) as api:
        assert api.running is not None
        session = api.running.access.session
        api.call(lambda: accounts.add_account(session, AccountDraft(
            "rw", "runway", 5, KEY, runway_fake.url), check=False))
        yield api, Journal(api.ctx)
