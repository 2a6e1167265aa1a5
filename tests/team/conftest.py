"""Fixtures of the team tests: a fresh database per test on the session's server."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from tests import pgserver
from tests.team.harness import drop_database, new_database


@pytest.fixture
def own_server() -> Iterator[pgserver.Server]:
    """A server of the test's own, to stop and start (or restart) as it pleases."""
    if pgserver.DSN_ENV in os.environ:
        pytest.skip("stops its own server; a server given by DSN cannot be stopped")
    try:
        server = pgserver.start_server()
    except (RuntimeError, OSError) as exc:
        pgserver.unavailable(str(exc))
        raise
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def team_url(pg_server: pgserver.Server | str) -> Iterator[str]:
    """The address of a fresh, empty database (dropped afterwards)."""
    if isinstance(pg_server, str):
        pgserver.unavailable(pg_server)
    assert isinstance(pg_server, pgserver.Server)
    url = new_database(pg_server.dsn)
    try:
        yield url
    finally:
        drop_database(pg_server.dsn, url)
