"""Wake-ups across machines on the team database (issue 15): ``LISTEN/NOTIFY``.

The database itself says when there may be new work, whoever wrote it (the window, a
command, another machine's engine, a script): triggers send a notification on the
``reelqueue_wake`` channel when jobs are added, when a job leaves the in-flight states
(queued again, waiting for a retry, finished: a slot is free), when an account or a
batch changes (a limit, a pause, a spend cap), and when an account's view is kept (its
balance and limits as the provider last told them: ``accounts refresh``; since version
14). Each instance keeps one connection that listens and wakes its pump, so an import on
one machine starts renders on all of them at once and a cap change applies everywhere at
the next pass. NOTIFY is transactional:
listeners hear of a change only once it is committed, and identical notifications of one
transaction are folded into one.

The timer fallback: while the listening connection is down (a server restart, a dropped
network) the listener wakes the pump every ``fallback_seconds`` instead and reconnects;
the pump's own timer (next retry, lease expiry, at most its safety net, 30 s) runs either
way.

The triggers are part of the versioned schema (``sql_pg/schema.sql``, since version 3), so
every team database has them from its creation or migration on; an instance only checks
at its start that they are there (:func:`missing_wake_triggers`: one dropped by hand
leaves that instance on the timer fallback, with a warning).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

import psycopg
from psycopg import conninfo

from reelqueue.store.postgres import PostgresStore, pg_queries
from reelqueue.store.postgres_support import describe_dsn, scrub, with_liveness

log = logging.getLogger(__name__)

CHANNEL = "reelqueue_wake"

WAKE_FUNCTION = "reelqueue_notify_wake"
WAKE_TRIGGERS = {
    "reelqueue_wake_jobs_added": "jobs",
    "reelqueue_wake_jobs_settled": "jobs",
    "reelqueue_wake_accounts": "accounts",
    "reelqueue_wake_batches": "batches",
    "reelqueue_wake_account_views": "account_views",
}


def missing_wake_triggers(store: PostgresStore) -> list[str]:
    """The wake-up triggers (and their function) absent from the store's schema; empty
    when all are there, as the schema makes them."""
    with store.raw_connection() as db:
        rows = db.execute(pg_queries()["wake_triggers"].encode()).fetchall()
    present = {(r["name"], r["tab"]) for r in rows if r["func"] == WAKE_FUNCTION}
    return [name for name, table in WAKE_TRIGGERS.items() if (name, table) not in present]


def listen_conninfo(store: PostgresStore) -> tuple[str, str]:
    """The store's connection parameters (password included, for the listener's own
    connection) and the schema whose notifications count."""
    with store.raw_connection() as db:
        info = db.info
        schema = db.execute(pg_queries()["current_schema"].encode()).fetchone()
        dsn = conninfo.make_conninfo(info.dsn, password=info.password or None)
    return dsn, str(schema["s"] if schema else "public")


class WakeListener:
    """A thread that listens on :data:`CHANNEL` and calls ``on_wake`` for every
    notification about ``schema``; reconnects after a failure, calling ``on_wake`` every
    ``fallback_seconds`` while it cannot listen.

    Attributes:
        notifications: how many notifications woke the pump so far.
        listening: whether the connection listens right now.
    """

    def __init__(self, dsn: str, schema: str, on_wake: Callable[[], None], *,
                 fallback_seconds: float = 5.0) -> None:
        self._dsn = dsn
        self._schema = schema
        self._on_wake = on_wake
        self._fallback = fallback_seconds
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="team-wake", daemon=True)
        self.notifications = 0
        self.listening = threading.Event()

    def start(self) -> WakeListener:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=10)

    def _run(self) -> None:
        password = conninfo.conninfo_to_dict(self._dsn).get("password")
        while not self._stop.is_set():
            try:
                with psycopg.connect(self._dsn, **with_liveness(self._dsn, {
                        "autocommit": True, "connect_timeout": 5,
                        "application_name": "reelqueue-listen"})) as db:
                    db.execute(pg_queries()["listen_wake"].encode())
                    self.listening.set()
                    self._on_wake()  # anything committed while nobody listened
                    while not self._stop.is_set():
                        for note in db.notifies(timeout=1.0):
                            if note.payload == self._schema:
                                self.notifications += 1
                                self._on_wake()
            except psycopg.Error as exc:
                self.listening.clear()
                log.info("not listening to %s (%s); waking every %.0f s instead",
                         describe_dsn(self._dsn),
                         scrub(str(exc).strip().splitlines()[0] if str(exc).strip()
                               else type(exc).__name__, str(password or "")),
                         self._fallback)
                self._on_wake()
                self._stop.wait(self._fallback)
        self.listening.clear()


__all__ = ["CHANNEL", "WAKE_TRIGGERS", "WakeListener", "listen_conninfo", "missing_wake_triggers"]
