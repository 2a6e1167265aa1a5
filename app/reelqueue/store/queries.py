"""Loads the named queries from ``sql/queries.sql`` (``-- name: x`` blocks)."""

from __future__ import annotations

from functools import cache
from importlib import resources


def _read(name: str) -> str:
    return resources.files("reelqueue.store").joinpath("sql", name).read_text("utf-8")


@cache
def named_queries() -> dict[str, str]:
    queries: dict[str, str] = {}
    current: str | None = None
    lines: list[str] = []
    for line in _read("queries.sql").splitlines():
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


def schema_sql() -> str:
    return _read("schema.sql")


def migration_sql(version: int) -> str:
    return _read(f"migrations/{version:04d}.sql")
