"""Copying a local journal into an empty team database (``reelqueue migrate-to URL``).

Row for row, in one PostgreSQL transaction: batches, accounts, jobs, then the ledger (its
history goes along: every completion and takeover stays on the record). Ids and ledger
sequence numbers are kept, then the identity counters moved past them. A database that
holds any batch, account, job or ledger row is refused and left untouched, so a second
run (or a journal pointed at the wrong team) can never mix two histories.
"""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from reelqueue.domain.errors import InputError
from reelqueue.store.postgres import PostgresStore
from reelqueue.store.queries import named_queries

# The PostgreSQL statements of this command (store/sql/migrate_pg.sql); the SQLite read of
# the source is the journal's (store/sql/queries.sql). Their {table} and {column} are
# filled from TABLES and IDENTITY below, never from outside.
_PG = "migrate_pg.sql"

__all__ = ["CopyReport", "copy_journal"]

TABLES = ("batches", "accounts", "jobs", "ledger")
IDENTITY = {"batches": "id", "jobs": "id", "ledger": "seq"}


@dataclass(frozen=True)
class CopyReport:
    """How many rows of each table were copied."""

    rows: dict[str, int]

    def summary(self) -> str:
        return ", ".join(f"{n} {table}" for table, n in self.rows.items())


def copy_journal(journal: Path, target: PostgresStore) -> CopyReport:
    """Copy the SQLite journal at ``journal`` (held by the caller, so nobody writes it
    meanwhile) into ``target``; InputError when ``target`` is not empty."""
    source = sqlite3.connect(f"file:{journal}?mode=ro", uri=True)
    source.row_factory = sqlite3.Row
    try:
        with target.raw_connection() as db:
            for table in TABLES:
                row = db.execute(named_queries(_PG)["table_used"].format(table=table)
                                 ).fetchone()
                if row and row["used"]:
                    raise InputError(
                        f"The team database {target.where} is not empty (its {table} table "
                        "holds rows); migrate-to only copies into an empty one. Nothing "
                        "was changed.")
            rows: dict[str, int] = {}
            for table in TABLES:
                rows[table] = _copy_table(source, db, table)
            for table, column in IDENTITY.items():
                db.execute(named_queries(_PG)["move_identity"].format(table=table,
                                                                       column=column))
        return CopyReport(rows)
    finally:
        source.close()


def _copy_table(source: sqlite3.Connection, db: Any, table: str) -> int:
    from psycopg.types.json import Jsonb

    types = {r["column_name"]: r["data_type"] for r in db.execute(
        named_queries(_PG)["column_types"], {"table": table}).fetchall()}
    cursor = source.execute(named_queries()["migrate_source_rows"].format(table=table))
    columns = [c[0] for c in cursor.description]
    missing = [c for c in columns if c not in types]
    if missing:  # pragma: no cover - the two schemas are kept in step by their tests
        raise InputError(f"The team database has no column {missing[0]!r} in {table}; "
                         "update ReelQueue on every machine first.")

    def value(column: str, raw: Any) -> Any:
        kind = types[column]
        if raw is None:
            return None
        if kind == "jsonb":
            if not isinstance(raw, str):
                return Jsonb(raw)
            try:
                return Jsonb(json.loads(raw))
            except (ValueError, RecursionError):
                raise InputError(
                    f"The journal's {table}.{column} holds a value that is not JSON (changed "
                    "outside ReelQueue); nothing was copied. 'reelqueue doctor' names such "
                    "rows: mend or remove them, then run migrate-to again.") from None
        if kind == "boolean":
            return bool(raw)
        return raw

    # The column names are the source's own, each found among the target's columns above.
    insert = named_queries(_PG)["copy_rows_keeping_ids" if table in IDENTITY else "copy_rows"
                                ].format(table=table, columns=", ".join(columns),
                                         values=", ".join(["%s"] * len(columns)))
    count = 0
    with db.cursor() as cur:
        while batch := cursor.fetchmany(1000):
            cur.executemany(insert, [[value(c, r[c]) for c in columns] for r in batch])
            count += len(batch)
    return count
