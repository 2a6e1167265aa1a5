"""What ``reelqueue worker``, ``store-password`` and ``team-key`` need beyond
:mod:`.team`: the team journal's type and this machine's keyring. Imported where those
commands run (it loads the PostgreSQL driver).
"""

from __future__ import annotations

from reelqueue.credentials.keystore import KeyStore
from reelqueue.store.postgres import PostgresStore

__all__ = ["KeyStore", "PostgresStore"]
