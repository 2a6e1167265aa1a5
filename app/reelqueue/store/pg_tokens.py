"""The HTTP API's tokens in the team database's ``api_tokens`` table (schema 7): the same
token format and hashing as the SQLite journal's (:mod:`.tokens`: a salted sha256, compared
in constant time; the token is shown once). Every machine's API reads the one table, so a
revoke made anywhere is refused everywhere at the next request.
"""

from __future__ import annotations

import psycopg

from reelqueue.store.pg_link import PgLink
from reelqueue.store.tokens import (
    TokenInfo,
    duplicate_name,
    matches_row,
    new_token,
    token_parts,
)

__all__ = ["PgTokenStore"]


class PgTokenStore:
    """The API tokens of one team database (opened at schema 7 or later by the store)."""

    def __init__(self, dsn: str) -> None:
        self._link = PgLink(dsn, application_name="reelqueue-tokens")

    def __repr__(self) -> str:
        return f"PgTokenStore({self._link.where!r})"

    def close(self) -> None:
        self._link.close()

    def add(self, name: str, scope: str, now: float) -> str:
        """Store a new token for ``name``; returns the token (the only time it exists)."""
        made = new_token(name, scope, now)
        query = self._link.q["token_insert"].encode()

        def insert(db: psycopg.Connection[dict[str, object]]) -> None:
            try:
                db.execute(query, made.row)
            except psycopg.errors.UniqueViolation:
                raise duplicate_name(name) from None

        self._link.run(insert, retry=False)
        return made.token

    def revoke(self, name: str) -> bool:
        query = self._link.q["token_delete"].encode()
        return self._link.run(lambda db: db.execute(query, {"name": name}).rowcount > 0)

    def list(self) -> list[TokenInfo]:
        return [TokenInfo(row["name"], row["scope"], row["created_at"])
                for row in self._link.rows("token_list")]

    def verify(self, token: str) -> TokenInfo | None:
        """The token's owner, or None for a malformed, unknown or revoked token."""
        parts = token_parts(token)
        if parts is None:
            return None
        token_id, secret = parts
        row = self._link.one("token_by_id", {"token_id": token_id})
        if not matches_row(secret, None if row is None else (row["salt"], row["digest"])):
            return None
        assert row is not None
        return TokenInfo(row["name"], row["scope"], row["created_at"])
