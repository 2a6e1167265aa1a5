"""One connection to the team database for the HTTP API's reads and tokens
(:mod:`.pg_reader`, :mod:`.pg_tokens`), with their named queries (``sql_pg/api.sql``).

Bounded: a single autocommit connection used by one thread at a time behind a lock (each
statement sees what is committed when it runs). A connection the server dropped (a
restart, a network cut) is replaced once and the read is tried again; a write is not
retried (it may have been done). The DSN's password never reaches a message, a log or a
``repr``: errors are sorted and scrubbed by :mod:`.postgres_support`.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from functools import cache
from importlib import resources
from typing import Any, TypeVar

import psycopg
from psycopg.rows import dict_row

from reelqueue.store.listing import fill_listing
from reelqueue.store.pg_sql import pg_queries
from reelqueue.store.postgres_support import (
    connection_error,
    describe_dsn,
    dsn_password,
    known_error,
    use_bounded_json,
    with_liveness,
)
from reelqueue.store.queries import parse_named

__all__ = ["PgLink", "api_queries"]

T = TypeVar("T")
Row = dict[str, Any]
Conn = psycopg.Connection[Row]

STATEMENT_TIMEOUT_MS = 30_000


@cache
def api_queries() -> dict[str, str]:
    """The ``-- name: x`` blocks of ``sql_pg/api.sql``, its lists' columns those of the
    store's listings (``listed_*_columns`` of ``sql_pg/queries.sql``: store/listing.py)."""
    text = resources.files("reelqueue.store").joinpath("sql_pg", "api.sql").read_text("utf-8")
    listed = {name: pg_queries()[name] for name in ("listed_job_columns",
                                                     "listed_ledger_columns")}
    return fill_listing({**parse_named(text), **listed})


class PgLink:
    """One connection to the team database at ``dsn`` (opened now: a refused login or TLS
    handshake is said at once); close when done."""

    def __init__(self, dsn: str, *, connect_timeout: float = 10.0,
                 application_name: str = "reelqueue-api") -> None:
        self._dsn = dsn
        self.where = describe_dsn(dsn)
        self._password = dsn_password(dsn)
        self._timeout = max(1, int(connect_timeout))
        self._name = application_name
        self._lock = threading.Lock()
        self._closed = False
        self.q = api_queries()
        self._conn: Conn | None = self._connect()

    def __repr__(self) -> str:
        return f"PgLink({self.where!r})"

    def _connect(self) -> Conn:
        try:
            conn = psycopg.connect(self._dsn, **with_liveness(self._dsn, {
                "autocommit": True, "row_factory": dict_row,
                "connect_timeout": self._timeout, "application_name": self._name,
                "options": f"-c statement_timeout={STATEMENT_TIMEOUT_MS}"}))
            use_bounded_json(conn)
            return conn
        except psycopg.Error as exc:
            raise connection_error(exc, self.where, self._password, self._dsn) from None

    def close(self) -> None:
        with self._lock:
            self._closed = True
            conn, self._conn = self._conn, None
            if conn is not None:
                conn.close()

    def run(self, work: Callable[[Conn], T], *, retry: bool = True) -> T:
        """``work`` on the connection (reconnected first if it was lost); driver errors
        come out as our JournalErrors, password-free."""
        with self._lock:
            for attempt in range(2):
                if self._closed:
                    raise known_error(psycopg.InterfaceError("the connection is closed"),
                                      self.where, self._password)
                if self._conn is None or self._conn.closed:
                    self._conn = self._connect()
                conn = self._conn
                try:
                    return work(conn)
                except psycopg.Error as exc:
                    lost = conn.closed or conn.broken or isinstance(
                        exc, psycopg.OperationalError | psycopg.InterfaceError)
                    if lost:
                        self._conn = None
                        conn.close()
                    if not (lost and retry and attempt == 0):
                        raise known_error(exc, self.where, self._password) from None
            raise AssertionError("unreachable")  # pragma: no cover

    def rows(self, name: str, args: dict[str, Any] | None = None) -> list[Row]:
        """Every row of the named query ``name``."""
        query = self.q[name].encode()
        return self.run(lambda db: db.execute(query, args or {}).fetchall())

    def one(self, name: str, args: dict[str, Any] | None = None) -> Row | None:
        found = self.rows(name, args)
        return found[0] if found else None
