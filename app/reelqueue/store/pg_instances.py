"""The instances registry of a team's journal (PostgreSQL only): who shares the database,
their heartbeats (written by ``renew_leases``), clock offsets and lease lengths. Its times
are the server's.
"""

from __future__ import annotations

from dataclasses import dataclass

from reelqueue.store.sql_journal import SqlJournal


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


class InstancesRegistry(SqlJournal):
    """The registry's operations, over the journal's primitives (``PostgresStore`` is one)."""

    def register_instance(self, instance_id: str, *, host: str, pid: int, version: str,
                          clock_offset: float | None = None,
                          lease_seconds: float | None = None) -> None:
        """Say hello: this instance shares the database from now on (the registry's
        times are the server's; ``clock_offset`` is its clock minus the server's)."""
        with self._write():
            self._exec("register_instance", id=instance_id, host=host, pid=pid,
                       version=version, clock_offset=clock_offset,
                       lease_seconds=lease_seconds)

    def stop_instance(self, instance_id: str) -> None:
        """Say goodbye on a clean exit (its leases are released by then)."""
        with self._write():
            self._exec("stop_instance", id=instance_id)

    def list_instances(self) -> list[Instance]:
        return [Instance(id=r["id"], host=r["host"], pid=r["pid"], version=r["version"],
                         started_at=r["started_at"], heartbeat_at=r["heartbeat_at"],
                         live_renders=r["live_renders"], stopped_at=r["stopped_at"],
                         silent_for=max(0.0, float(r["silent_for"])),
                         clock_offset=r["clock_offset"], lease_seconds=r["lease_seconds"])
                for r in self._all("list_instances")]


__all__ = ["Instance", "InstancesRegistry"]
