"""Tokens of the HTTP API, kept in the journal's ``api_tokens`` table (schema 5).

A token reads ``rq_<id>_<secret>``: ``id`` (public, 8 bytes of hex) finds the row by its
index; the row holds a per-token random salt and ``sha256(salt + secret)``, compared with
:func:`hmac.compare_digest`. A fast hash is enough here: the secret is 32 random bytes
(``secrets.token_urlsafe(32)``), so there is no dictionary to guess from and a slow hash
(scrypt) would only cost every request its milliseconds. The token itself is returned once,
by :meth:`TokenStore.add`, and stored nowhere.

The table is reached through its own connection (WAL: readers never wait on the engine's
writes), so ``reelqueue tokens revoke`` in another process takes effect at the next request.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
import sqlite3
import threading
from dataclasses import dataclass
from pathlib import Path

from reelqueue.domain.errors import InputError
from reelqueue.store.queries import named_queries

SCOPES = ("read", "submit", "admin")
"""Each scope includes the ones before it: submit can read, admin can do everything."""

TOKEN_PREFIX = "rq_"


@dataclass(frozen=True)
class TokenInfo:
    """Attributes:
    name: the client's name, chosen by the user.
    scope: one of :data:`SCOPES`.
    created_at: epoch seconds.
    """

    name: str
    scope: str
    created_at: float

    def allows(self, needed: str) -> bool:
        return SCOPES.index(self.scope) >= SCOPES.index(needed)


def _digest(salt: bytes, secret: str) -> bytes:
    return hashlib.sha256(salt + secret.encode("utf-8")).digest()


@dataclass(frozen=True)
class NewToken:
    """A token being made: the row to store (``row``) and the token itself (``token``,
    shown once). Shared by the SQLite and the PostgreSQL tables (store/pg_tokens.py)."""

    row: dict[str, object]
    token: str


def new_token(name: str, scope: str, now: float) -> NewToken:
    """A fresh token for ``name`` (checked: 1 to 100 characters, a known scope)."""
    name = name.strip()
    if not name or len(name) > 100:
        raise InputError("A token's name must be 1 to 100 characters.")
    if scope not in SCOPES:
        raise InputError(f"Unknown scope {scope!r}: use one of {', '.join(SCOPES)}.")
    token_id = secrets.token_hex(8)
    secret = secrets.token_urlsafe(32)
    salt = secrets.token_bytes(16)
    row: dict[str, object] = {"name": name, "token_id": token_id, "salt": salt,
                              "digest": _digest(salt, secret), "scope": scope, "now": now}
    return NewToken(row, f"{TOKEN_PREFIX}{token_id}_{secret}")


def token_parts(token: str) -> tuple[str, str] | None:
    """``(token_id, secret)`` of a well-formed token, else None."""
    if not token.startswith(TOKEN_PREFIX):
        return None
    token_id, sep, secret = token[len(TOKEN_PREFIX):].partition("_")
    if not sep or len(token_id) != 16 or not secret:
        return None
    return token_id, secret


def matches(secret: str, salt: bytes, digest: bytes) -> bool:
    """Whether ``secret`` is the one stored as ``salt``/``digest`` (constant time)."""
    return hmac.compare_digest(_digest(bytes(salt), secret), bytes(digest))


_ABSENT_SALT = secrets.token_bytes(16)
_ABSENT_DIGEST = secrets.token_bytes(32)


def matches_row(secret: str, row: tuple[bytes, bytes] | None) -> bool:
    """:func:`matches` against a token row's ``(salt, digest)``, or against a random pair
    when there is no such row (issue 34): the digest is computed either way, so the
    answer takes the same time whether the token id exists or not."""
    salt, digest = row if row is not None else (_ABSENT_SALT, _ABSENT_DIGEST)
    return matches(secret, salt, digest) and row is not None


def duplicate_name(name: str) -> InputError:
    return InputError(f"There is already a token named {name.strip()!r}; revoke it first "
                      "or choose another name.")


class TokenStore:
    """The API tokens of one journal (the journal must exist at schema 5 or later)."""

    def __init__(self, journal: Path, *, busy_timeout_ms: int = 10_000) -> None:
        self._db = sqlite3.connect(str(journal), isolation_level=None,
                                   timeout=busy_timeout_ms / 1000, check_same_thread=False)
        self._q = named_queries()
        self._db.execute(self._q["set_busy_timeout"].format(ms=int(busy_timeout_ms)))
        self._lock = threading.Lock()

    def close(self) -> None:
        self._db.close()

    def add(self, name: str, scope: str, now: float) -> str:
        """Store a new token for ``name``; returns the token (the only time it exists)."""
        made = new_token(name, scope, now)
        with self._lock:
            try:
                self._db.execute(self._q["token_insert"], made.row)
            except sqlite3.IntegrityError as exc:
                raise duplicate_name(name) from exc
        return made.token

    def revoke(self, name: str) -> bool:
        with self._lock:
            cursor = self._db.execute(self._q["token_delete"], {"name": name})
        return cursor.rowcount > 0

    def list(self) -> list[TokenInfo]:
        with self._lock:
            rows = self._db.execute(self._q["token_list"]).fetchall()
        return [TokenInfo(name, scope, created) for name, scope, created in rows]

    def verify(self, token: str) -> TokenInfo | None:
        """The token's owner, or None for a malformed, unknown or revoked token."""
        parts = token_parts(token)
        if parts is None:
            return None
        token_id, secret = parts
        with self._lock:
            row = self._db.execute(self._q["token_by_id"], {"token_id": token_id}).fetchone()
        if not matches_row(secret, None if row is None else (row[1], row[2])):
            return None
        name, _, _, scope, created = row
        return TokenInfo(name, scope, created)
