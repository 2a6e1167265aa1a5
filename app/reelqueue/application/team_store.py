"""Opening the team database (issue 15): its address checked (no password in it), the
password from this machine's OS keyring, the PostgreSQL journal opened. Used by the
composition root (:mod:`.compose`) and re-exported by :mod:`.team`.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING

from reelqueue.domain.errors import InputError

if TYPE_CHECKING:
    from reelqueue.store.postgres import PostgresStore

__all__ = ["TEAM_SCHEMES", "KeyLookup", "check_team_url", "connection_string",
           "database_key_ref", "is_team_url", "keyring_lookup", "open_team_store"]

log = logging.getLogger(__name__)

TEAM_SCHEMES = ("postgresql://", "postgres://")

KeyLookup = Callable[[str], "str | None"]


def is_team_url(url: str) -> bool:
    return url.lower().startswith(TEAM_SCHEMES)


def check_team_url(url: str) -> str:
    """``url`` when it names a PostgreSQL database without a password; InputError else."""
    from reelqueue.store.postgres_support import describe_dsn, dsn_password

    if not is_team_url(url):
        raise InputError("--store takes a PostgreSQL address such as "
                         "postgresql://user@host:5432/reelqueue?sslmode=verify-full.")
    if dsn_password(url):
        raise InputError(
            f"The address of {describe_dsn(url)} carries a password; leave it out (it would "
            "show in the process list and in shell history). Save it once with "
            "'reelqueue store-password URL' (OS keyring) or in a pgpass file.")
    return url


def database_key_ref(url: str) -> str:
    """The keyring reference of the database password: ``database:user@host:port/db``."""
    from reelqueue.store.postgres_support import describe_dsn

    return f"database:{describe_dsn(url)}"


def connection_string(url: str, password: str | None) -> str:
    """``url`` with ``password`` added as a connection parameter (libpq reads a pgpass
    file itself when there is none)."""
    from psycopg import conninfo

    return conninfo.make_conninfo(url, password=password) if password else url


def open_team_store(url: str, *, now: float, key_lookup: KeyLookup | None = None,
                    schema: str | None = None) -> PostgresStore:
    """Open the team journal at ``url`` (JournalError, password-free, when it cannot)."""
    from reelqueue.store.postgres import PostgresStore

    check_team_url(url)
    password = key_lookup(database_key_ref(url)) if key_lookup is not None else None
    return PostgresStore.open(connection_string(url, password), now=now, schema=schema)


def keyring_lookup() -> KeyLookup:
    """Reads from the OS keyring; a keyring that cannot answer reads as "no key"."""
    from reelqueue.credentials.keystore import KeyStore
    from reelqueue.domain.errors import KeyringUnavailable

    keys = KeyStore()

    def lookup(ref: str) -> str | None:
        try:
            return keys.get_key(ref)
        except KeyringUnavailable as exc:
            log.info("keyring unavailable: %s", exc)
            return None

    return lookup
