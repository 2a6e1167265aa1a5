"""The HTTP API's client tokens, for the front ends: ``reelqueue tokens add|list|revoke``
and the API's check of each request. The table and its hashing live in
:mod:`reelqueue.store.tokens` (a salted hash only; the token is shown once); this module is
how a front end reaches them without touching the journal itself.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from reelqueue.store.tokens import SCOPES, TokenInfo, TokenStore

__all__ = ["SCOPES", "ClientTokens", "TokenInfo"]


class ClientTokens:
    """The tokens of one journal (its own SQLite connection: a revoke made by another
    process is seen at the next request). Attributes: none public; close when done."""

    def __init__(self, journal: Path) -> None:
        self._tokens = TokenStore(journal)

    @classmethod
    async def open(cls, journal: Path) -> ClientTokens:
        """Open on a worker thread (from an event loop)."""
        return await asyncio.to_thread(cls, journal)

    def close(self) -> None:
        self._tokens.close()

    def add(self, name: str, scope: str, now: float) -> str:
        """Make a token; return it (the only time it is shown). Blocking."""
        return self._tokens.add(name, scope, now)

    def revoke(self, name: str) -> bool:
        return self._tokens.revoke(name)

    def list(self) -> list[TokenInfo]:
        return self._tokens.list()

    async def verify(self, token: str) -> TokenInfo | None:
        """The client a token belongs to (None: unknown or revoked); off the loop."""
        return await asyncio.to_thread(self._tokens.verify, token)
