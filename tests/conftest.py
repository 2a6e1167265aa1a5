"""Shared fixtures: both store implementations, a fake clock, sample job specs, and a guard
that fails any test during which a ``reelqueue`` logger logged an unexpected WARNING.

A test whose warning is the point declares it::

    @pytest.mark.expect_warnings("fenced out", "could not record")  # regexes, searched
    def test_...(): ...

or, when the text is only known inside the test, through the ``expect_warnings`` fixture:
``expect_warnings.add("account 'a' ...")``. Each pattern is a regular expression searched in
the record's message; an expected warning that does not come is not an error (some
parametrised cases warn and others do not).
"""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Iterator
from pathlib import Path

import keyring
import pytest

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
os.environ.setdefault("QT_API", "pyside6")

from reelqueue.credentials.keystore import MemoryKeyring
from reelqueue.domain.clock import FakeClock
from reelqueue.domain.models import AccountSpec, BatchSpec, JobSpec
from reelqueue.store.base import Store
from reelqueue.store.memory import MemoryStore
from reelqueue.store.sqlite import SqliteStore
from tests import pgserver


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "expect_warnings(*patterns): the WARNING logs this test means to cause "
        "(regular expressions searched in the message); any other fails the test")


class ExpectedWarnings(logging.Handler):
    """Records WARNING+ records of the ``reelqueue`` loggers during one test.

    Attributes:
        records: every WARNING+ record logged.
        patterns: the regular expressions of the expected ones.
    """

    def __init__(self, patterns: list[str]) -> None:
        super().__init__(logging.WARNING)
        self.records: list[logging.LogRecord] = []
        self.patterns = list(patterns)

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)

    def add(self, *patterns: str) -> None:
        """Expect warnings whose message matches any of ``patterns`` (regexes, searched)."""
        self.patterns.extend(patterns)

    def unexpected(self) -> list[logging.LogRecord]:
        return [r for r in self.records
                if not any(re.search(p, r.getMessage()) for p in self.patterns)]


@pytest.fixture(autouse=True)
def expect_warnings(request: pytest.FixtureRequest) -> Iterator[ExpectedWarnings]:
    """Fails the test at teardown when a ``reelqueue`` logger logged a WARNING (or worse)
    that the test did not declare (module docstring)."""
    patterns = [p for marker in request.node.iter_markers("expect_warnings")
                for p in marker.args]
    guard = ExpectedWarnings(patterns)
    logger = logging.getLogger("reelqueue")
    logger.addHandler(guard)
    try:
        yield guard
    finally:
        logger.removeHandler(guard)
    unexpected = guard.unexpected()
    if unexpected:
        lines = "\n".join(f"  {r.levelname} {r.name}: {r.getMessage()[:300]}"
                          for r in unexpected[:10])
        pytest.fail(f"{len(unexpected)} unexpected WARNING log(s) (declare them with "
                    f"@pytest.mark.expect_warnings(pattern) if they are the point):\n{lines}",
                    pytrace=False)


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


@pytest.fixture
def memory_keyring() -> Iterator[MemoryKeyring]:
    """An in-memory keyring for the test, the previous one put back after it."""
    previous = keyring.get_keyring()
    backend = MemoryKeyring()
    keyring.set_keyring(backend)
    yield backend
    keyring.set_keyring(previous)
