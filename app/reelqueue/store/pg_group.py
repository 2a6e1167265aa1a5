"""Group commit of the render transitions on PostgreSQL (issue 33 item 5).

The engine's journal thread hands the transitions that arrived together to
``write_group`` (engine/async_store.py). Here they run in one transaction on the store's
connection, each write as it runs alone (the one-statement fenced writes are steps of the
open transaction), and the transaction commits once: one WAL flush for the group instead of
one per write. No caller is answered before that COMMIT returned.

No savepoints: each would cost two round trips per write, more than the group saves on a
fast disk. A write that raises is rare (a render another job holds, an error of the
server), so the group is then rolled back whole and every write runs again alone, each in
its own transaction, each answered by its own outcome: a rolled-back transaction wrote
nothing, and the store's writes keep no state outside the journal, so running them again
cannot apply anything twice. The same when the connection is lost before the COMMIT was
sent, or the server refused the COMMIT with a reason.

When the COMMIT was sent and its answer lost, the group's transaction id (read first) is
asked about on a new connection (``txid_status``): committed, every caller has its answer;
aborted, every write runs again alone (fenced by its claim token, so a job taken over
meanwhile is refused, as alone); still running or unreadable for ``SETTLE_SECONDS``, the
outcome stays unknown and the whole group fails with a JournalError (nothing assumed: the
jobs' leases run out and a run takes them over, as for a single write whose answer was
lost).

Durability: a group commits durably unless none of its writes needs it (``durable``, from
``GROUPED_TRANSITIONS``); a durable write met in a group opened without waiting for the
flush raises inside the group (:meth:`PgGroupCommit._refuse_undurable`), which sends the
group to the writes-alone path: never left undurable.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from typing import Any

import psycopg
from psycopg_pool import PoolTimeout, TooManyRequests

from reelqueue.domain.errors import JournalError
from reelqueue.store.base import write_each_alone
from reelqueue.store.postgres_support import (
    DRIVER_ERRORS,
    commit_unknown,
    first_line,
    lost_before_commit,
)

log = logging.getLogger(__name__)

SETTLE_SECONDS = 15.0
"""How long a group whose COMMIT answer was lost is asked about while its transaction still
runs (as ``settle_lock_timeout`` for a single write): longer, the outcome stays unknown."""


class _Undone(Exception):
    """The group's transaction was rolled back, or never committed: nothing of it is
    written; its writes run again alone."""


class PgGroupCommit:
    """``write_group`` of :class:`~reelqueue.store.postgres.PostgresStore` (a mixin: the
    store gives the transaction, the named reads and the settlement flags)."""

    _lock: threading.RLock
    _conn: psycopg.Connection[Any] | None
    _committing: bool
    _password: str | None
    where: str
    #: while a group runs: whether it commits durably (None: no group is open)
    _group_durable: bool | None = None

    def _tx(self) -> AbstractContextManager[psycopg.Connection[Any]]:
        raise NotImplementedError

    def _scalar(self, query: str, /, **params: Any) -> Any:
        raise NotImplementedError

    def write_group(self, writes: Sequence[Callable[[], Any]], *, durable: bool
                    ) -> list[Any]:
        """``writes`` in one transaction with one COMMIT (the module's docstring): one
        answer per write, in order, its result or the exception it raised. A group of one
        runs alone. Raises JournalError when the COMMIT's outcome cannot be learnt."""
        if len(writes) < 2:
            return write_each_alone(writes)
        with self._lock:
            if self._conn is not None:
                raise JournalError("A group commit cannot start inside an open transaction.")
            try:
                return self._group_once(writes, durable)
            except _Undone:
                return write_each_alone(writes)

    def _group_once(self, writes: Sequence[Callable[[], Any]], durable: bool) -> list[Any]:
        xid: int | None = None
        answers: list[Any] = []
        self._group_durable = durable
        try:
            with self._tx():
                xid = int(self._scalar("group_begin" if durable else "group_begin_async"))
                answers = [write() for write in writes]
            return answers
        except (PoolTimeout, TooManyRequests):
            raise  # no connection was given: nothing was sent (the group fails whole)
        except DRIVER_ERRORS as exc:
            if xid is None or not commit_unknown(exc, self._committing):
                # Before the COMMIT (rolled back), or a COMMIT refused with a reason.
                raise _Undone from exc
            what = first_line(exc, self._password)
        except Exception as exc:  # a write raised: _tx rolled the group back
            raise _Undone from exc
        finally:
            self._group_durable = None
        log.warning("team database %s: the answer to the COMMIT of a group of %d writes "
                    "was lost (%s); asking whether it was written", self.where, len(writes),
                    what)
        if self._group_landed(xid, len(writes), what):
            return answers
        raise _Undone

    def _group_landed(self, xid: int, size: int, what: str) -> bool:
        """Whether the group's transaction committed, asked on a new connection: True or
        False, else a JournalError (still running after :data:`SETTLE_SECONDS`, or the
        server cannot be asked)."""
        deadline = time.monotonic() + SETTLE_SECONDS
        pause, lost_reads = 0.05, 0
        while True:
            try:
                with self._tx():
                    status = self._scalar("group_status", xid=xid)
            except DRIVER_ERRORS as exc:
                lost_reads += 1
                if lost_reads > 1 or not lost_before_commit(exc, False):
                    raise self._unknown(size, what, first_line(exc, self._password)) from None
                continue  # a read: asking again on a new connection cannot change anything
            if status in ("committed", "aborted"):
                log.warning("team database %s: the group of %d writes %s", self.where, size,
                            "was written" if status == "committed" else
                            "was not written; each write runs again alone")
                return bool(status == "committed")
            if status is None or time.monotonic() + pause > deadline:
                raise self._unknown(size, what, f"its transaction is {status or 'unknown'}")
            time.sleep(pause)
            pause = min(pause * 2, 1.0)

    def _unknown(self, size: int, what: str, why: str) -> JournalError:
        return JournalError(
            f"The team database ({self.where}) lost the answer to the last {size} changes "
            f"({what}) and could not say whether they were written ({why}). Nothing is "
            "assumed: the jobs' leases run out and another run takes them over.")

    def _refuse_undurable(self, durable: bool) -> None:
        """Inside a group opened without waiting for the WAL's flush, a write that needs it
        is refused (the group then runs each write alone), never left undurable."""
        if durable and self._group_durable is False:
            raise JournalError("A durable write was sent in a group committed without "
                               "waiting for the disk; it was not recorded.")


__all__ = ["SETTLE_SECONDS", "PgGroupCommit"]
