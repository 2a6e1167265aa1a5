"""The HTTP API's client tokens, for the front ends: ``reelqueue tokens add|list|revoke``
and the API's check of each request. The table and its hashing live in
:mod:`reelqueue.store.tokens` (a salted hash only; the token is shown once); this module is
how a front end reaches them without touching the journal itself.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from reelqueue.store.tokens import SCOPES, TokenInfo

if TYPE_CHECKING:
    from reelqueue.application.context import AppContext

__all__ = ["SCOPES", "ClientTokens", "TokenInfo", "TokenTable"]


class TokenTable(Protocol):
    def close(self) -> None: ...
    def add(self, name: str, scope: str, now: float) -> str: ...
    def revoke(self, name: str) -> bool: ...
    def list(self) -> list[TokenInfo]: ...
    def verify(self, token: str) -> TokenInfo | None: ...


class ClientTokens:
    """The tokens of one journal: the SQLite file's, or the team database's (every
    machine's API reads the same table). Each has its own connection, so a revoke made by
    another process, or on another machine, is seen at the next request. Attributes: none
    public; close when done."""

    def __init__(self, journal: Path | TokenTable) -> None:
        if isinstance(journal, Path):
            from reelqueue.store.tokens import TokenStore

            journal = TokenStore(journal)
        self._tokens: TokenTable = journal

    @classmethod
    async def open(cls, journal: Path) -> ClientTokens:
        """Open on a worker thread (from an event loop)."""
        return await asyncio.to_thread(cls, journal)

    @classmethod
    def of(cls, ctx: AppContext) -> ClientTokens:
        """The tokens of ``ctx``'s journal: the team database's with ``ctx.store_url``
        (schema 7 or later: open the store first), else the SQLite file's. Blocking."""
        from reelqueue.application.team_seam import journal_mode

        return cls(journal_mode(ctx).token_table(ctx))

    @classmethod
    async def open_for(cls, ctx: AppContext) -> ClientTokens:
        """:meth:`of`, on a worker thread (from an event loop)."""
        return await asyncio.to_thread(cls.of, ctx)

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
