"""The named SQL of the PostgreSQL store (``sql_pg/``): its queries with their templates
filled (the server's clock, the claim's candidate, the checks of an untrusted row), the
one-statement fenced writes, the schema and its migrations.
"""

from __future__ import annotations

import re
from functools import cache, lru_cache
from importlib import resources

from reelqueue.store.listing import fill_listing
from reelqueue.store.queries import parse_named


def _sql_file(name: str) -> str:
    return resources.files("reelqueue.store").joinpath("sql_pg", name).read_text("utf-8")


@cache
def pg_queries() -> dict[str, str]:
    """The ``-- name: x`` blocks of ``sql_pg/queries.sql`` (comment lines dropped), with
    ``{server_now}`` replaced by the ``server_now`` expression (the server's clock)."""
    queries = fill_listing(parse_named(_sql_file("queries.sql")))
    server_now = f"({queries['server_now']})"
    # next_claimable is also claim_fast's candidate, there gated by the account's room.
    claimable = queries["next_claimable"].rstrip().rstrip(";")
    queries["next_claimable"] = claimable.replace("{gate}", "").replace(
        "{provider}", "%(provider)s")
    queries["claim_fast"] = queries["claim_fast"].replace(
        "{claimable}", claimable.replace("{gate}", queries["claim_gate"]).replace(
            "{provider}", queries["claim_provider"])).replace(
        "{commit_async}", queries["commit_async"])
    problem, refuse = queries["row_problem_expr"], queries["refuse_set"]
    return {name: text.replace("{server_now}", server_now).replace("{row_problem}", problem)
            .replace("{refuse_set}", refuse) for name, text in queries.items()}


@cache
@lru_cache(maxsize=64)
def fenced_sql(template: str, update: str, durable: bool = True) -> bytes:
    """A fenced write in one statement: ``template`` (``one_trip_*``) around the
    fenced update ``update`` (``fenced_*``), both from ``sql_pg/queries.sql``; committed
    durably, or (``durable`` False) without waiting for the WAL's flush. A template may
    name ``{render_holder}`` (the named query, once for both). Made once per statement."""
    queries = pg_queries()
    return queries[template].replace(
        "{update}", queries[update].rstrip().rstrip(";")).replace(
        "{render_holder}", queries["render_holder"].rstrip().rstrip(";")).replace(
        "{commit}", queries["commit_durable" if durable else "commit_async"]).encode()


_PLACEHOLDER = re.compile(rb"%(?:\(([^)]*)\))?(.?)")


@lru_cache(maxsize=256)
def positional(sql: bytes) -> tuple[bytes, tuple[str, ...]]:
    """``sql`` with its named placeholders (``%(name)s``) made PostgreSQL's own (``$1``...)
    and ``%%`` made ``%``, and the parameter names in ``$n`` order: the statement as
    psycopg's ``RawCursor`` sends it, converted once per statement (issue 20).

    psycopg converts a query on every execution and keeps its conversion only for queries
    up to 4,096 bytes; the claim's statement (``claim_fast``, about 7 KB) was converted on
    every claim, 0.4 ms of the client's CPU each time. Any other ``%`` form is refused
    (ValueError), as it would have to be converted by psycopg."""
    names: list[str] = []

    def one(match: re.Match[bytes]) -> bytes:
        name, kind = match.group(1), match.group(2)
        if name is None and kind == b"%":
            return b"%"
        if name is None or kind != b"s":
            raise ValueError(f"unsupported placeholder {match.group(0)!r} in a statement")
        key = name.decode()
        if key not in names:
            names.append(key)
        return b"$%d" % (names.index(key) + 1)

    return _PLACEHOLDER.sub(one, sql), tuple(names)


def pg_schema_sql() -> str:
    return _sql_file("schema.sql")


def pg_migration_sql(version: int) -> str:
    return _sql_file(f"migrations/{version:04d}.sql")


__all__ = ["fenced_sql", "pg_migration_sql", "pg_queries", "pg_schema_sql", "positional"]
