"""The HTTP API's reads of the team database (schema 7): a job by its key, jobs after a
cursor, ledger entries after a sequence number. The PostgreSQL twin of
:mod:`.journal_reader`, on a connection of its own (:class:`~.pg_link.PgLink`).

The ledger's ``seq`` is handed out when an entry is inserted, not when its transaction
commits: with several machines writing, entry 11 can be committed and seen while entry 10
is still in an open transaction. A client that took 11 and resumed after it would never
see 10. So :meth:`PgJournalReader.ledger_after` hands out entries only up to the first
missing ``seq`` (a gap), and a gap is passed only once it is known to be permanent (its
transaction rolled back, or the entries were pruned): every transaction that was running
a moment after the gap was first seen has ended (the snapshot's ``xmin`` has passed that
moment's ``xmax``), and the gap is still there. The moment is ``GAP_SETTLE_SECONDS`` after
the first sight, so a transaction that drew its ``seq`` an instant before it got its
transaction id is counted too. Each entry is handed out once, in ``seq`` order, across
reconnects.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from reelqueue.domain.models import Job, LedgerEntry
from reelqueue.store.pg_link import PgLink
from reelqueue.store.postgres_support import job_from_pg, ledger_from_pg

__all__ = ["GAP_SETTLE_SECONDS", "PgJournalReader"]

GAP_SETTLE_SECONDS = 1.0
"""How long after a gap is first seen its horizon is taken: covers a backend that drew the
``seq`` and had not yet written its row (so had no transaction id) when the gap was first
seen. Only a permanent gap (a rolled-back write) waits this long; a committed one fills."""
_KEPT_GAPS = 1_000


@dataclass
class _Gap:
    first_seen: float
    xmax: int | None = None


class PgJournalReader:
    """Reads of one team database for the API; close when done."""

    def __init__(self, dsn: str, *, clock: Callable[[], float] = time.monotonic) -> None:
        self._link = PgLink(dsn, application_name="reelqueue-api")
        # The health check's own connection: it never waits behind a long listing read.
        try:
            self._health_link = PgLink(dsn, application_name="reelqueue-api-health")
        except BaseException:
            self._link.close()
            raise
        self._clock = clock
        self._gaps_lock = threading.Lock()
        self._pending: dict[int, _Gap] = {}
        self._passed: dict[int, None] = {}  # insertion-ordered: the oldest dropped first

    def __repr__(self) -> str:
        return f"PgJournalReader({self._link.where!r})"

    def close(self) -> None:
        self._link.close()
        self._health_link.close()

    def job_by_key(self, job_key: str) -> Job | None:
        row = self._link.one("job_by_key", {"job_key": job_key})
        return None if row is None else job_from_pg(row)

    def existing_keys(self, keys: Iterable[str]) -> set[str]:
        """Which of ``keys`` the journal has."""
        wanted = list(keys)
        if not wanted:
            return set()
        return {row["job_key"] for row in self._link.rows("present_job_keys",
                                                          {"keys": wanted})}

    def jobs_after(self, after_id: int, limit: int, *, batch_id: int | None = None,
                   states: Sequence[str] = ()) -> list[Job]:
        """Jobs with an id above ``after_id``, by id (keyset pagination)."""
        query = "jobs_after" if batch_id is None else "jobs_after_of_batch"
        args = {"after_id": after_id, "batch_id": batch_id, "limit": limit,
                "any_state": not states, "states": [str(s) for s in states]}
        return [job_from_pg(row) for row in self._link.rows(query, args)]

    def ledger_after(self, seq: int, limit: int) -> list[LedgerEntry]:
        """Entries about a job or an account with a sequence number above ``seq``, up to
        the first gap not yet known to be permanent (see the module's docstring)."""
        entries, resolved = self._ledger_pass(seq, limit)
        for _ in range(2):
            if not resolved:
                break
            entries, resolved = self._ledger_pass(seq, limit)
        return entries

    def _ledger_pass(self, seq: int, limit: int) -> tuple[list[LedgerEntry], bool]:
        """The entries up to the first open gap, and whether a gap was found permanent in
        this pass (then the read is made again: the gap's rows may have been committed
        between the read and the check)."""
        rows = self._link.rows("ledger_after", {"seq": seq, "limit": limit})
        entries: list[LedgerEntry] = []
        expected = seq + 1
        for row in rows:
            if row["seq"] != expected:
                passed, resolved_now = self._gap_passed(expected)
                if resolved_now:
                    return entries, True
                if not passed:
                    break
            if row["shown"]:
                entries.append(ledger_from_pg(row))
            expected = int(row["seq"]) + 1
        return entries, False

    def _gap_passed(self, start: int) -> tuple[bool, bool]:
        """Whether the gap starting at ``start`` is known permanent, and whether it was
        found so just now."""
        with self._gaps_lock:
            if start in self._passed:
                return True, False
            gap = self._pending.get(start)
            now = self._clock()
            if gap is None:
                self._pending[start] = _Gap(now)
                return False, False
            if gap.xmax is None:
                if now - gap.first_seen >= GAP_SETTLE_SECONDS:
                    gap.xmax = self._snapshot()[1]
                return False, False
            if self._snapshot()[0] < gap.xmax:
                return False, False
            del self._pending[start]
            self._passed[start] = None
            while len(self._passed) > _KEPT_GAPS:
                del self._passed[next(iter(self._passed))]
            while len(self._pending) > _KEPT_GAPS:
                del self._pending[next(iter(self._pending))]
            return True, True

    def _snapshot(self) -> tuple[int, int]:
        row = self._link.one("ledger_snapshot")
        assert row is not None
        return int(row["xmin"]), int(row["xmax"])

    def writable(self) -> str:
        """"writable" or "read-only" (a standby, a read-only session or user)."""
        row = self._health_link.one("writable")
        return "writable" if row and row["ok"] else "read-only"

    def last_ledger_seq(self) -> int:
        row = self._link.one("last_ledger_seq")
        return int(row["seq"]) if row else 0
