"""Loads the named queries of the SQLite store's ``.sql`` files (``-- name: x`` blocks).

Every SQL statement of the SQLite store lives in ``sql/`` (issue 20; checked by
``tests/store/test_sql_in_files.py``): ``queries.sql`` for the journal, its readers and
its API tokens; ``migrate_pg.sql`` for ``reelqueue migrate-to`` (PostgreSQL statements:
they belong to that command, not to the PostgreSQL store). A few blocks are templates
with ``{placeholders}`` for what SQL cannot bind (a PRAGMA's value, a table name from a
fixed list); the Python that fills them says where each value comes from.
"""

from __future__ import annotations

from functools import cache
from importlib import resources

from reelqueue.store.listing import fill_listing


def _read(name: str) -> str:
    return resources.files("reelqueue.store").joinpath("sql", name).read_text("utf-8")


def parse_named(text: str) -> dict[str, str]:
    """The ``-- name: x`` blocks of ``text``, comment lines dropped."""
    queries: dict[str, str] = {}
    current: str | None = None
    lines: list[str] = []
    for line in text.splitlines():
        if line.startswith("-- name:"):
            if current:
                queries[current] = "\n".join(lines).strip()
            current = line.split(":", 1)[1].strip()
            lines = []
        elif current is not None and not line.startswith("--"):
            lines.append(line)
    if current:
        queries[current] = "\n".join(lines).strip()
    return queries


@cache
def named_queries(file: str = "queries.sql") -> dict[str, str]:
    queries = fill_listing(parse_named(_read(file)))
    problem = queries.get("row_problem_expr")
    if problem is None:
        return queries
    # {row_problem}: the checks of an untrusted job row (domain/row_limits.py), inlined.
    return {name: text.replace("{row_problem}", problem) for name, text in queries.items()}


def schema_sql() -> str:
    return _read("schema.sql")


def migration_sql(version: int) -> str:
    return _read(f"migrations/{version:04d}.sql")
