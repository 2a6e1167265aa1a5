"""Opening the team database (issue 15): its address checked (no password in it), the
password from this machine's OS keyring, the PostgreSQL journal opened. Used by the
composition root (:mod:`.compose`) and re-exported by :mod:`.team`.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from reelqueue.domain.errors import InputError

if TYPE_CHECKING:
    from reelqueue.store.postgres import PostgresStore

__all__ = [
    "TEAM_SCHEMES",
    "KeyLookup",
    "all_loopback",
    "check_team_url",
    "connection_string",
    "connection_warnings",
    "database_key_ref",
    "is_team_url",
    "keyring_lookup",
    "open_team_store",
    "team_dsn",
    "tls_defaults",
]

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


_LOOPBACK_NAMES = ("localhost", "localhost.localdomain", "ip6-localhost")


def _is_loopback(host: str) -> bool:
    import ipaddress

    if not host or host.startswith("/"):
        return True  # a Unix socket: never leaves the machine
    if host.lower() in _LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def all_loopback(params: Mapping[str, object]) -> bool:
    """Every host of a libpq address is this machine (loopback or a Unix socket)."""
    hosts = str(params.get("host") or params.get("hostaddr") or "").split(",")
    return all(_is_loopback(h.strip()) for h in hosts)


def tls_defaults(url: str) -> dict[str, str]:
    """What a team database on another machine is opened with when its address says
    nothing of TLS (issue 21): ``sslmode=verify-full`` — encrypted, and the server proven
    to be the one named — with the system's trust store (``sslrootcert=system``, libpq
    16 and later) unless a CA is given (``sslrootcert`` in the address, ``PGSSLROOTCERT``,
    or libpq's own ``~/.postgresql/root.crt``). ``require`` and ``disable`` apply only
    when given (``team.connection_warnings`` says what they leave open); a loopback
    address or a Unix socket never leaves the machine and keeps libpq's default."""
    from psycopg import conninfo, pq

    try:
        params = conninfo.conninfo_to_dict(url)
    except Exception:
        return {}  # libpq refuses the address itself when it opens it, in its own words
    if params.get("sslmode") or os.environ.get("PGSSLMODE") or all_loopback(params):
        return {}
    extra = {"sslmode": "verify-full"}
    has_ca = (params.get("sslrootcert") or os.environ.get("PGSSLROOTCERT")
              or (Path.home() / ".postgresql" / "root.crt").exists())
    if not has_ca and pq.version() >= 160000:
        extra["sslrootcert"] = "system"
    return extra


def connection_string(url: str, password: str | None) -> str:
    """``url`` with :func:`tls_defaults` and ``password`` added as connection parameters
    (libpq reads a pgpass file itself when there is none)."""
    from psycopg import conninfo

    extra: dict[str, str] = dict(tls_defaults(url))
    if password:
        extra["password"] = password
    return conninfo.make_conninfo(url, **extra) if extra else url


def open_team_store(url: str, *, now: float, key_lookup: KeyLookup | None = None,
                    schema: str | None = None) -> PostgresStore:
    """Open the team journal at ``url`` (JournalError, password-free, when it cannot)."""
    from reelqueue.store.postgres import PostgresStore

    check_team_url(url)
    password = key_lookup(database_key_ref(url)) if key_lookup is not None else None
    return PostgresStore.open(connection_string(url, password), now=now, schema=schema)


def team_dsn(url: str, key_lookup: KeyLookup | None = None) -> str:
    """The connection string of the team database at ``url`` as :func:`open_team_store`
    opens it (its address checked, the password from ``key_lookup``, by default this
    machine's keyring, or else libpq's pgpass file; the TLS defaults): for the API's own
    connections (its reads and tokens). Never shown: it may hold the password."""
    check_team_url(url)
    lookup = key_lookup if key_lookup is not None else keyring_lookup()
    return connection_string(url, lookup(database_key_ref(url)))


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


class OpenedStore(Protocol):
    """What :func:`connection_warnings` reads of the open team store."""

    @property
    def encrypted(self) -> bool | None: ...


def connection_warnings(url: str | None, store: OpenedStore | None = None) -> list[str]:
    """What ``run``, ``worker``, ``serve`` and ``doctor`` say about the team database's
    connection (issue 21): nothing for a verified connection (a server on another
    machine is verified unless the address says otherwise: :func:`tls_defaults`); a
    plain warning (never an error) when it is not encrypted (``sslmode=disable``, or
    ``prefer``/``allow`` given), with how to require it; a word when it is encrypted
    without the server being verified (``require``). ``store``: the open store,
    which knows whether its connection really is encrypted (``encrypted``)."""
    from psycopg import conninfo

    from reelqueue.store.postgres_support import describe_dsn

    if url is None or not is_team_url(url):
        return []
    try:
        params = conninfo.conninfo_to_dict(url)
    except Exception:
        return []
    sslmode = str(params.get("sslmode") or os.environ.get("PGSSLMODE")
                  or tls_defaults(url).get("sslmode") or "")
    local = all_loopback(params)
    encrypted = store.encrypted if store is not None else None
    where = describe_dsn(url)
    example = f"postgresql://{where}?sslmode=require"
    if sslmode in ("verify-full", "verify-ca"):
        return []
    if sslmode == "require":
        return [] if local else [
            f"warning: the connection to the team database {where} is encrypted but the "
            "server is not verified (sslmode=require): use sslmode=verify-full with "
            "sslrootcert=/path/team-ca.pem to be sure it is your server."]
    said = "sslmode=disable" if sslmode == "disable" else (
        f"sslmode={sslmode}" if sslmode else "no sslmode in its address")
    if encrypted:
        if local:
            return []
        return [f"warning: the connection to the team database {where} happens to be "
                f"encrypted, but nothing requires it ({said}): someone in the way could "
                f"make it plain text. Add sslmode=require to the address ({example}), or "
                "verify-full with sslrootcert to check the server too."]
    if encrypted is None and sslmode != "disable":
        line = (f"warning: the connection to the team database {where} is not required to "
                f"be encrypted ({said}): it is plain text unless the server offers TLS.")
    else:
        line = (f"warning: the connection to the team database {where} is not encrypted "
                f"({said}).")
    if local:
        return [line + " It stays on this machine (loopback), so nothing crosses the "
                "network."]
    return [line + " Jobs, prompts and the login cross the network readable. Once the "
            f"server has TLS, add sslmode=require to the address ({example}), or "
            "sslmode=verify-full&sslrootcert=/path/team-ca.pem to check the server too."]
