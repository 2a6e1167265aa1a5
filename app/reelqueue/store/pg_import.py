"""The PostgreSQL journal's bulk import (``PostgresStore.add_jobs``' insert): the rows travel
as arrays, thousands per INSERT, and the keys already present are looked up in chunks.
Every function runs on the store's connection inside its transaction; the statements are
the named queries of ``sql_pg/queries.sql``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import psycopg

from reelqueue.domain.models import Batch, JobSpec
from reelqueue.store.postgres_support import dumps

KEYS_PER_LOOKUP = 10_000


def insert_jobs(db: psycopg.Connection[Any], q: dict[str, str], batch: Batch,
                specs: Sequence[JobSpec], now: float, *, per_insert: int) -> list[int]:
    """Insert ``specs`` as jobs of ``batch``, ``per_insert`` per statement: the ids of
    those inserted, in order. Another machine may have imported a key meanwhile: that one
    is present, and left out."""
    ids_by_key: dict[str, int] = {}
    for start in range(0, len(specs), per_insert):
        chunk = specs[start:start + per_insert]
        rows = db.execute(q["insert_jobs"], {
            "batch_id": batch.id, "max_attempts": batch.max_attempts, "now": now,
            "keys": [s.job_key for s in chunk],
            "rows": [s.row_number for s in chunk],
            "names": [s.name for s in chunk], "prompts": [s.prompt for s in chunk],
            "providers": [s.provider for s in chunk],
            "params": [dumps(s.params) for s in chunk],
            "pins": [s.pinned_account for s in chunk],
            "priorities": [s.priority for s in chunk],
            "outputs": [s.output_path for s in chunk],
            "metas": [dumps(s.metadata) for s in chunk],
            "routes": [None if s.route is None else s.route.to_json() for s in chunk],
            "route_orders": [None if s.route is None else s.route.order_key() for s in chunk],
        }).fetchall()
        ids_by_key.update((r["job_key"], r["id"]) for r in rows)
    return [ids_by_key[s.job_key] for s in specs if s.job_key in ids_by_key]


def existing_keys(db: psycopg.Connection[Any], q: dict[str, str],
                  keys: Sequence[str]) -> set[str]:
    """Which of ``keys`` the journal has."""
    found: set[str] = set()
    for start in range(0, len(keys), KEYS_PER_LOOKUP):
        chunk = list(keys[start:start + KEYS_PER_LOOKUP])
        found.update(r["job_key"] for r in db.execute(q["existing_job_keys"], {"keys": chunk}))
    return found


__all__ = ["existing_keys", "insert_jobs"]
