"""The instances registry of a team's journal (PostgreSQL only): who shares the database,
their heartbeats (written by ``renew_leases``), clock offsets and lease lengths. Its times
are the server's.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass

from reelqueue.store.sql_journal import SqlJournal

MAX_PROVIDER_KINDS = 64
MAX_PROVIDER_KIND_CHARS = 80


def bounded_kinds(kinds: Iterable[object]) -> tuple[str, ...] | None:
    """A machine's provider kinds within the registry's bounds (at most 64 names of 1 to 80
    characters, each a string), sorted and without repeats; None (unknown) otherwise."""
    out: set[str] = set()
    for n, kind in enumerate(kinds):
        if (n >= MAX_PROVIDER_KINDS or not isinstance(kind, str) or not kind
                or len(kind) > MAX_PROVIDER_KIND_CHARS or not kind.isprintable()):
            return None
        out.add(kind)
    return tuple(sorted(out))


def kinds_of_row(raw: object) -> tuple[str, ...] | None:
    """The ``providers`` column of an instances row, which any machine of the team (or a
    hand edit) may have written: a JSON list of names within the bounds, else None
    ("unknown"). Never raises."""
    if not isinstance(raw, str) or len(raw) > 8192:
        return None
    try:
        value = json.loads(raw)
    except (ValueError, RecursionError):  # 8 KiB of "[" nest past Python's parser
        return None
    if not isinstance(value, list) or len(value) > MAX_PROVIDER_KINDS:
        return None
    return bounded_kinds(value)


@dataclass(frozen=True)
class Instance:
    """One ReelQueue sharing the database (the ``instances`` registry). Its times are the
    server's.

    Attributes:
        id: its boot-unique instance id (the lease owner of its claims).
        live_renders: the in-flight jobs its last heartbeat renewed.
        stopped_at: when it said goodbye (None: running, or died without saying so).
        silent_for: seconds since its last heartbeat, on the server's clock, at the read.
        clock_offset: its clock minus the server's as it last measured it (None: not yet,
            or a version before schema 4).
        lease_seconds: the lease its claims get (None: a version before schema 4).
        providers: the provider kinds it can build, as it said at hello (None: unknown: a
            version before schema 13, or a row outside the bounds).
    """

    id: str
    host: str
    pid: int
    version: str
    started_at: float
    heartbeat_at: float
    live_renders: int
    stopped_at: float | None
    silent_for: float = 0.0
    clock_offset: float | None = None
    lease_seconds: float | None = None
    providers: tuple[str, ...] | None = None


class InstancesRegistry(SqlJournal):
    """The registry's operations, over the journal's primitives (``PostgresStore`` is one)."""

    def register_instance(self, instance_id: str, *, host: str, pid: int, version: str,
                          clock_offset: float | None = None,
                          lease_seconds: float | None = None,
                          providers: Iterable[str] | None = None) -> None:
        """Say hello: this instance shares the database from now on (the registry's
        times are the server's; ``clock_offset`` is its clock minus the server's;
        ``providers``: the kinds it can build, written only within the bounds)."""
        kinds = bounded_kinds(providers) if providers is not None else None
        with self._write():
            self._exec("register_instance", id=instance_id, host=host, pid=pid,
                       version=version, clock_offset=clock_offset,
                       lease_seconds=lease_seconds,
                       providers=json.dumps(list(kinds)) if kinds is not None else None)

    def stop_instance(self, instance_id: str) -> None:
        """Say goodbye on a clean exit (its leases are released by then)."""
        with self._write():
            self._exec("stop_instance", id=instance_id)

    def list_instances(self) -> list[Instance]:
        return [Instance(id=r["id"], host=r["host"], pid=r["pid"], version=r["version"],
                         started_at=r["started_at"], heartbeat_at=r["heartbeat_at"],
                         live_renders=r["live_renders"], stopped_at=r["stopped_at"],
                         silent_for=max(0.0, float(r["silent_for"])),
                         clock_offset=r["clock_offset"], lease_seconds=r["lease_seconds"],
                         providers=kinds_of_row(r.get("providers")))
                for r in self._all("list_instances")]


__all__ = ["Instance", "InstancesRegistry", "bounded_kinds", "kinds_of_row"]
