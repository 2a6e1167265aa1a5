"""Shared fixtures: both store implementations, a fake clock, sample job specs."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
os.environ.setdefault("QT_API", "pyside6")

from reelqueue.domain.clock import FakeClock
from reelqueue.domain.models import AccountSpec, BatchSpec, JobSpec
from reelqueue.store.base import Store
from reelqueue.store.memory import MemoryStore
from reelqueue.store.sqlite import SqliteStore
from tests import pgserver


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture(params=["sqlite", "memory"])
def store(request: pytest.FixtureRequest, tmp_path: Path, clock: FakeClock) -> Iterator[Store]:
    """Every contract test runs once per store implementation."""
    if request.param == "sqlite":
        opened: Store = SqliteStore.open(tmp_path / "journal.sqlite3", now=clock.now())
    else:
        opened = MemoryStore()
    yield opened
    opened.close()


@pytest.fixture(scope="session")
def pg_server() -> Iterator[pgserver.Server | str]:
    """A throwaway PostgreSQL server for the session (tests/pgserver.py), started the first
    time a test asks for it; or the reason there is none."""
    with pgserver.session_server() as server:
        yield server


@pytest.fixture
def pg_dsn(pg_server: pgserver.Server | str) -> str:
    """The session server's DSN; skips the test (fails it when PostgreSQL is required)
    when there is no server."""
    if isinstance(pg_server, str):
        pgserver.unavailable(pg_server)
    assert isinstance(pg_server, pgserver.Server)
    return pg_server.dsn


def make_specs(
    tmp_path: Path, count: int, provider: str = "mock", **extra: object
) -> list[JobSpec]:
    return [
        JobSpec(job_key=f"key-{i:05d}", prompt=f"prompt {i}", provider=provider,
                output_path=str(tmp_path / "out" / f"{i:05d}.mp4"), row_number=i + 2,
                name=f"row{i}", **extra)  # type: ignore[arg-type]
        for i in range(count)
    ]


def seed_store(store: Store, tmp_path: Path, now: float, jobs: int = 5,
               accounts: dict[str, int] | None = None, provider: str = "mock") -> int:
    batch = store.create_batch(BatchSpec("batch", "sheet.csv", str(tmp_path / "out")), now)
    store.add_jobs(batch.id, make_specs(tmp_path, jobs, provider), now)
    for name, capacity in (accounts or {"acct-a": 2}).items():
        store.add_account(AccountSpec(name, provider, capacity), now)
    return batch.id
