"""What the PostgreSQL store needs besides its queries: the database's name without its
password, the sorting of psycopg errors into ours, and rows turned into domain values.

A DSN may carry a password (``postgresql://user:secret@host/db`` or ``password=...``). It
never reaches a log, an exception text or a ``repr``: every message names the database by
:func:`describe_dsn` (user, host, port, database) and every driver message is passed
through :func:`scrub` first.
"""

from __future__ import annotations

import json
import re
import time
from contextlib import suppress
from typing import Any

import psycopg
import psycopg.types.json
from psycopg import conninfo
from psycopg.rows import dict_row
from psycopg_pool import ConnectionPool, PoolTimeout, TooManyRequests

from reelqueue.domain.errors import (
    JournalBug,
    JournalBusy,
    JournalCorrupt,
    JournalError,
    JournalFull,
    JournalLoginRefused,
    JournalReadOnly,
    JournalTlsRefused,
    JournalUnreachable,
)
from reelqueue.domain.models import Account, Batch, Job, LedgerEntry
from reelqueue.store.rows import (
    account_from_mapping,
    batch_from_mapping,
    job_from_mapping,
    ledger_from_mapping,
    loads_or_unreadable,
)

_URL_PASSWORD = re.compile(r"(postgres(?:ql)?://[^:/@\s]*:)[^@\s]*@", re.IGNORECASE)
_KV_PASSWORD = re.compile(r"(password\s*=\s*)('(?:[^'\\]|\\.)*'|\S+)", re.IGNORECASE)


def dsn_password(dsn: str) -> str | None:
    """The password written in ``dsn`` (None when it has none or cannot be parsed)."""
    try:
        value = conninfo.conninfo_to_dict(dsn).get("password")
    except psycopg.Error:
        return None
    return str(value) if value else None


def describe_dsn(dsn: str) -> str:
    """``user@host:port/dbname``: what a message may say about the database."""
    try:
        parts = conninfo.conninfo_to_dict(dsn)
    except psycopg.Error:
        return "the team database (its address could not be read)"
    host = str(parts.get("host") or parts.get("hostaddr") or "localhost")
    port = str(parts.get("port") or 5432)
    user = f"{parts['user']}@" if parts.get("user") else ""
    dbname = str(parts.get("dbname") or "")
    return f"{user}{host}:{port}/{dbname}"


def scrub(text: str, *secrets: str | None) -> str:
    """``text`` without any password: URL and keyword forms, and each of ``secrets``."""
    text = _URL_PASSWORD.sub(r"\1***@", text)
    text = _KV_PASSWORD.sub(r"\1***", text)
    for secret in secrets:
        if secret:
            text = text.replace(secret, "***")
    return text


def known_error(exc: BaseException, where: str, password: str | None) -> Exception:
    """Sort a driver error into the environment's fault (a :class:`JournalError` with a
    plain message) or ours (:class:`JournalBug`), by SQLSTATE class, never by words."""
    detail = scrub(str(exc).strip().splitlines()[0] if str(exc).strip() else
                   type(exc).__name__, password)
    state = getattr(exc, "sqlstate", None) or ""
    if state == "53100":
        return JournalFull(f"The disk of the team database ({where}) is full; the last "
                           "change was not written. Ask its administrator to free space: "
                           "nothing recorded before was lost.")
    if state in ("25006", "42501") or state.startswith("28"):
        what = ("refused the login" if state.startswith("28")
                else "does not let this user write")
        return JournalReadOnly(f"The team database ({where}) {what} ({detail}). Check the "
                               "user and its password (keyring or pgpass file) and its "
                               "rights.")
    if state in ("40001", "40P01", "55P03", "57014"):
        return JournalBusy(f"The team database ({where}) is busy ({detail}). Run the "
                           "command again.")
    if state.startswith("XX"):
        return JournalCorrupt(f"The team database ({where}) reports damage ({detail}). "
                              "Ask its administrator to restore it from a backup.")
    if (isinstance(exc, psycopg.OperationalError | psycopg.InterfaceError)
            or state.startswith(("08", "53", "57P"))
            or type(exc).__name__ == "PoolTimeout"):
        return JournalUnreachable(f"The team database ({where}) cannot be reached ({detail}). "
                            "Check that the server runs and the network, then run the "
                            "command again: nothing recorded before was lost.")
    return JournalBug(f"The team database refused a request: {detail}. This is a bug in "
                      "ReelQueue; please report it with the log file.")


def connection_error(exc: BaseException, where: str, password: str | None,
                     dsn: str) -> JournalError:
    """Why a new connection to the team database failed, in three kinds (issue 21): the
    login refused (wrong or missing password, or no pg_hba entry), the TLS handshake
    refused or its certificate not verified, or the server not reached at all.

    libpq gives a failed connection no SQLSTATE, so the kind is read from the failed
    connection's own flags (``needs_password``, ``used_password``) first, then from
    libpq's words (English: libpq's and the server's messages at this stage are not
    translated unless their LC_MESSAGES say so; an unknown one falls to "cannot be
    reached", the old message).
    """
    detail = scrub(" ".join(str(exc).split()) or type(exc).__name__, password)
    pgconn = getattr(exc, "pgconn", None)
    needs_password = bool(getattr(pgconn, "needs_password", False))
    used_password = bool(getattr(pgconn, "used_password", False))
    text = detail.lower()
    try:
        sslmode = str(conninfo.conninfo_to_dict(dsn).get("sslmode") or "")
    except psycopg.Error:
        sslmode = ""
    if needs_password:
        return JournalLoginRefused(
            f"The team database ({where}) asks for a password and this machine has none "
            "saved for it. Save it with 'reelqueue store-password URL' (OS keyring) or in "
            "a pgpass file.")
    if used_password and ("password" in text or "authentication" in text):
        return JournalLoginRefused(
            f"The team database ({where}) refused the password: wrong password ({detail})."
            " Save the right one with 'reelqueue store-password URL' (or in the pgpass "
            "file); nothing recorded before was lost.")
    if any(word in text for word in ("ssl", "tls", "certificate")):
        asked = f"sslmode={sslmode}" if sslmode else "the connection's TLS settings"
        return JournalTlsRefused(
            f"The team database ({where}) refused or failed the encrypted connection "
            f"asked for by {asked} ({detail}). If the server has no TLS, ask its "
            "administrator to turn it on; if its certificate does not verify, give the "
            "team's CA in the address (sslrootcert=/path/ca.pem) and use the server's "
            "own name as host.")
    if ("authentication" in text or "pg_hba.conf" in text
            or ("role" in text and "does not exist" in text)):
        return JournalLoginRefused(
            f"The team database ({where}) refused the login ({detail}). Check the user, "
            "its password (keyring or pgpass file) and the server's pg_hba.conf.")
    return JournalUnreachable(
        f"The team database ({where}) cannot be reached ({detail}). Check that the server "
        "runs and the network, then run the command again: nothing recorded before was "
        "lost.")


def bounded_json_loads(data: str | bytes) -> Any:
    """jsonb as Python, without the interpreter's recursion limit as a way to crash a
    reader: PostgreSQL keeps documents nested thousands deep, Python's parser stops near
    a thousand (RecursionError). Such a document (written by no ReelQueue; a claim refuses
    its row, domain/row_limits.py) reads as ``{"unreadable": why}``
    (:func:`~reelqueue.store.rows.loads_or_unreadable`, the SQLite journal's reader too)."""
    return loads_or_unreadable(data)


def use_bounded_json(conn: psycopg.Connection[Any]) -> None:
    """A connection's jsonb/json loads through :func:`bounded_json_loads`."""
    psycopg.types.json.set_json_loads(bounded_json_loads, conn)


_ENCODE = json.JSONEncoder(sort_keys=True, separators=(",", ":"), default=str).encode


def dumps(value: Any) -> str:
    # One encoder for every call: json.dumps with options builds a new one each time
    # (two per fenced write: its detail and its fenced_out detail).
    return _ENCODE(value)


def _json(value: Any) -> dict[str, Any]:
    if isinstance(value, str):
        value = loads_or_unreadable(value) if value else {}
    return value if isinstance(value, dict) else {}


def job_from_pg(row: dict[str, Any]) -> Job:
    return job_from_mapping(row, _json)


def account_from_pg(row: dict[str, Any]) -> Account:
    return account_from_mapping(row, _json)


def batch_from_pg(row: dict[str, Any]) -> Batch:
    return batch_from_mapping(row, _json)


def ledger_from_pg(row: dict[str, Any]) -> LedgerEntry:
    return ledger_from_mapping(row, _json)


# -- the driver's connections ------------------------------------------------------------
DRIVER_ERRORS: tuple[type[BaseException], ...] = (psycopg.Error, PoolTimeout, TooManyRequests)
"""What the driver and its pool raise (the pool's errors are psycopg's OperationalError
today; named anyway so a change there cannot leak a raw error)."""


class RecentlyUsed:
    """The pool's check before it hands a connection out: an empty query (one round trip)
    finds a connection the server dropped (a restart, a network cut) and the pool replaces
    it, but a connection that completed a transaction within the last ``fresh_seconds`` is
    handed out unchecked: under load that saves a round trip per transaction, and a server
    dying meanwhile fails that one operation as "cannot be reached" all the same."""

    def __init__(self, fresh_seconds: float = 1.0) -> None:
        self.fresh_seconds = fresh_seconds
        self._last: dict[int, float] = {}

    def mark(self, conn: psycopg.Connection[Any]) -> None:
        self._last[id(conn)] = time.monotonic()

    def check(self, conn: psycopg.Connection[Any]) -> None:
        last = self._last.pop(id(conn), None)
        if last is None or time.monotonic() - last > self.fresh_seconds:
            ConnectionPool.check_connection(conn)


def first_line(exc: BaseException, password: str | None) -> str:
    text = str(exc).strip()
    return scrub(text.splitlines()[0] if text else type(exc).__name__, password)


def rollback_quietly(db: psycopg.Connection[Any]) -> None:
    """Roll back after a failed step; a connection that died cannot (the server rolled
    the transaction back itself) and the pool replaces it."""
    if db.closed:
        return
    with suppress(psycopg.Error):
        db.rollback()


TCP_LIVENESS: dict[str, int] = {"keepalives": 1, "keepalives_idle": 15,
                                 "keepalives_interval": 5, "keepalives_count": 3,
                                 "tcp_user_timeout": 30_000}
"""libpq's TCP settings for every connection to the team database (those the address does
not set itself). Without them a connection whose network went away silently (a cut VPN, a
server host powered off: no reset ever comes) waits for an answer forever: the store's one
journal thread, so the whole engine, would hang, and the wake-up listener would believe it
still listens. With them a dead peer is found within about 30 s (15 s idle, 3 probes 5 s
apart; data unacknowledged for 30 s: ``tcp_user_timeout``, where the system has it) and
the operation fails as "cannot be reached", as a server restart does."""


def with_liveness(dsn: str, kwargs: dict[str, Any]) -> dict[str, Any]:
    """``kwargs`` with :data:`TCP_LIVENESS`'s settings the address does not give."""
    try:
        given = conninfo.conninfo_to_dict(dsn)
    except psycopg.Error:
        given = {}
    return {**{k: v for k, v in TCP_LIVENESS.items() if k not in given}, **kwargs}


def open_pool(dsn: str, *, schema: str | None, max_size: int, connect_timeout: float,
              idle_in_transaction_ms: int) -> tuple[ConnectionPool, RecentlyUsed, bool]:
    """The PostgreSQL store's pool of connections to ``dsn`` (dict rows, not in
    autocommit, ``search_path`` set to ``schema``), opened; its check
    (:class:`RecentlyUsed`) and whether the connection is encrypted. JournalError
    (password-free) when the server cannot be reached or refuses the login."""
    where, password = describe_dsn(dsn), dsn_password(dsn)
    kwargs: dict[str, Any] = {"row_factory": dict_row, "autocommit": False,
                              "connect_timeout": max(1, int(connect_timeout)),
                              "application_name": "reelqueue"}
    # A transaction of ours never waits on anything but the server: one left open by a
    # client that vanished (its COMMIT lost on the way) is ended by the server, so its
    # row locks cannot hold a job away from a takeover for longer than this.
    options = [f"-c idle_in_transaction_session_timeout={idle_in_transaction_ms}"]
    if schema is not None:
        options.append(f"-c search_path={schema}")
    kwargs["options"] = " ".join(options)
    kwargs = with_liveness(dsn, kwargs)
    recently_used = RecentlyUsed()
    # One plain connection first: a refused password or TLS handshake is said as
    # such at once (the pool would retry until its timeout, then say only that it
    # timed out), and it tells whether the connection is encrypted (issue 21).
    try:
        with psycopg.connect(dsn, **{k: v for k, v in kwargs.items()
                                     if k != "row_factory"}) as probe:
            encrypted = bool(probe.pgconn.ssl_in_use)
    except DRIVER_ERRORS as exc:
        raise connection_error(exc, where, password, dsn) from None
    try:
        pool: ConnectionPool = ConnectionPool(
            dsn, kwargs=kwargs, min_size=1, max_size=max_size, open=False,
            check=recently_used.check, configure=use_bounded_json,
            timeout=connect_timeout, name="reelqueue")
        pool.open(wait=True, timeout=connect_timeout)
    except DRIVER_ERRORS as exc:
        raise known_error(exc, where, password) from None
    return pool, recently_used, encrypted


def _connection_lost(exc: BaseException) -> bool:
    state = getattr(exc, "sqlstate", None) or ""
    return not state or state.startswith("08") or state in ("57P01", "57P02", "57P03")


def lost_before_commit(exc: BaseException, committing: bool) -> bool:
    """The connection died (a server restart, a cut network) before the transaction's
    COMMIT was sent (``committing`` False): the server rolled it back, so running the
    operation again on a new connection cannot apply it twice. A failure during COMMIT is
    never retried (it may have committed), nor a pool timeout (the wait already happened)."""
    if committing or isinstance(exc, PoolTimeout | TooManyRequests):
        return False
    return isinstance(exc, psycopg.OperationalError) and _connection_lost(exc)


def commit_unknown(exc: BaseException, committing: bool) -> bool:
    """The COMMIT was sent (``committing``) and its answer lost (the connection failed
    during it): the transaction may have committed or not. A COMMIT the server refused
    with a reason (a serialization failure, a constraint) was rolled back: that is known."""
    if not committing or isinstance(exc, PoolTimeout | TooManyRequests):
        return False
    return (isinstance(exc, psycopg.OperationalError | psycopg.InterfaceError)
            and _connection_lost(exc))
