"""The PostgreSQL store's connection (``postgres.py``): the pool connection it keeps
between operations, and statements sent raw (``$n`` placeholders converted once)."""

from __future__ import annotations

import functools
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from typing import Any, cast

import psycopg
from psycopg_pool import ConnectionPool

from reelqueue.store.pg_sql import positional
from reelqueue.store.postgres_support import RecentlyUsed, rollback_quietly

Row = dict[str, Any]
_IDLE = psycopg.pq.TransactionStatus.IDLE


def send_raw(db: psycopg.Connection[Row], sql: bytes, clock: float | None,
             params: dict[str, Any]) -> psycopg.Cursor[Row]:
    """``db.execute`` of ``sql`` (named placeholders) with ``params`` and ``clock``, sent
    as a raw statement (a ``RawCursor``: ``$n`` placeholders), converted to ``$n`` once
    (:func:`~reelqueue.store.pg_sql.positional`) instead of by psycopg on every execution
    (its cache stops at 4 KB; the claim's statement is 7 KB)."""
    text, names = positional(sql)
    values = [params[name] if name in params or name != "clock" else clock
              for name in names]
    factory = db.cursor_factory
    db.cursor_factory = cast("type[psycopg.Cursor[Row]]", psycopg.RawCursor)
    try:
        return db.execute(text, values)
    finally:
        db.cursor_factory = factory


@functools.cache
def encoded(sql: str) -> bytes:
    """A named query as the bytes :func:`send_raw` sends, encoded once: the same bytes
    object every time, so :func:`~reelqueue.store.pg_sql.positional`'s cache finds it by its
    kept hash (the claim's statement is 7 KB, encoded and hashed on every claim before)."""
    return sql.encode()


class KeptConnection:
    """The one pool connection a store uses at a time, kept from one operation to the next.

    Attributes:
        pool: the store's pool; recently_used: its check (:class:`RecentlyUsed`).
        held: the connection kept since the last operation (None: none), taken from the
            pool at ``held_since`` and last used at ``held_used`` (``time.monotonic``).
    """

    def __init__(self, pool: ConnectionPool, recently_used: RecentlyUsed) -> None:
        self.pool = pool
        self.recently_used = recently_used
        self.held: psycopg.Connection[Row] | None = None
        self.held_since = self.held_used = 0.0

    HOLD_SECONDS = 30.0
    """The longest a connection is kept out of the pool (:meth:`connection`): then it goes
    back, so the pool's own rules (its connections' lifetime) apply to it too."""

    @contextmanager
    def connection(self) -> Iterator[psycopg.Connection[Row]]:
        """The connection for one operation (inside its store's lock): the one kept from the
        last operation while that was less than the pool check's ``fresh_seconds`` ago
        (the check the pool skips for it all the same, :class:`RecentlyUsed`) and it has
        been out of the pool for under :attr:`HOLD_SECONDS`; else one from the pool, which
        checks it. Every operation of a store holds its lock, so it uses one connection at
        a time: keeping it saves the pool's hand-out and return (its locks, its check,
        its log calls) on every operation.

        An operation that raises gives its connection back to the pool (rolled back
        first, as the pool's own ``connection()`` does), which replaces it if it died; so
        does one that leaves a transaction open (committed first, as before)."""
        now = time.monotonic()
        db = self.held
        self.held = None
        if db is not None and (now - self.held_used > self.recently_used.fresh_seconds
                               or now - self.held_since > self.HOLD_SECONDS):
            self.put(db)
            db = None
        if db is None:
            db = cast("psycopg.Connection[Row]", self.pool.getconn())
            self.held_since = now
        try:
            yield db
        except BaseException:
            rollback_quietly(db)
            self.put(db)
            raise
        if db.closed or db.pgconn.transaction_status != _IDLE:
            try:
                if not db.closed:
                    db.commit()
            finally:
                self.put(db)
            return
        self.held, self.held_used = db, time.monotonic()

    def put(self, db: psycopg.Connection[Row]) -> None:
        """``db`` back to the pool, out of autocommit as the pool made it (a kept
        connection stays in the mode of its last operation: the store's ``_single`` and
        ``_tx`` each set the one they need, so a run of one-statement writes does not
        switch it twice per write)."""
        if not db.closed and db.autocommit:
            with suppress(psycopg.Error):
                db.autocommit = False
        self.pool.putconn(cast("psycopg.Connection[Any]", db))

    def give_back(self) -> None:
        """The kept connection back to the pool (its store closes)."""
        db, self.held = self.held, None
        if db is not None:
            self.put(db)
