"""Where a key may go: the (provider kind, API host) this machine bound it to (issue 21).

The binding is kept beside the key in this machine's OS keyring, never in the journal: a
row of the team database can change an account's address, its provider or its key
reference, but not what this machine agreed to send the key to. Pure values and names
only; the keyring itself is used by :mod:`reelqueue.credentials.keystore`.

Keyring entries ("usernames" under the service ``ReelQueue``):

* ``account:NAME`` — the key of an account of the local SQLite journal (as before).
* ``team:DATABASE_ID/account:NAME`` — the key of an account of the team database whose
  ``reelqueue_meta`` row ``database_id`` is ``DATABASE_ID`` (32 hex digits).
* ``binding:REF`` — the binding of the key kept under ``REF`` (JSON: kind and host).

Every name is derived from the account's name and the database's identity, never read
from the database, so no row can point a worker at the database password
(``database:user@host:port/db``) or at another account's key.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from urllib.parse import urlsplit

from reelqueue.credentials.keystore import key_ref_for
from reelqueue.domain.errors import InputError

__all__ = ["OWN_HOST", "KeyBinding", "api_origin", "binding_ref", "team_key_ref"]

OWN_HOST = "provider's own"
"""The host of an account that names no base URL: its adapter's own (official) API,
whatever address this version of ReelQueue knows for it."""

_DATABASE_ID = re.compile(r"[0-9a-f]{32}")


def api_origin(base_url: str | None) -> str:
    """``scheme://host[:port]`` of ``base_url`` (lower case), or :data:`OWN_HOST` when the
    account names none. The path does not count: a key trusted to a host is trusted to
    all of it."""
    if not base_url:
        return OWN_HOST
    try:
        parts = urlsplit(base_url.strip())
    except ValueError:  # e.g. U+FF20 in the host, from a team database's row (issue 34)
        raise InputError(f"The address {base_url.strip()[:200]!r} cannot be read; no key "
                         "is bound to it. Give the account a valid one: 'reelqueue "
                         "accounts set NAME --base-url https://...'.") from None
    scheme = parts.scheme.lower()
    host = (parts.hostname or "").lower()
    default_port = {"https": 443, "http": 80}.get(scheme)
    try:
        port = parts.port
    except ValueError:
        port = None
    shown = f"[{host}]" if ":" in host else host
    return f"{scheme}://{shown}" + (f":{port}" if port and port != default_port else "")


@dataclass(frozen=True)
class KeyBinding:
    """The one place a key may be sent from this machine.

    Attributes:
        kind: the provider kind (``runway``, ``openai-compat``, ``mock``…).
        host: :func:`api_origin` of the account's base URL, or :data:`OWN_HOST`.
    """

    kind: str
    host: str

    @classmethod
    def of(cls, kind: str, base_url: str | None) -> KeyBinding:
        return cls(kind, api_origin(base_url))

    def to_text(self) -> str:
        return json.dumps({"kind": self.kind, "host": self.host}, sort_keys=True)

    @classmethod
    def from_text(cls, text: str | None) -> KeyBinding | None:
        """The binding written by :meth:`to_text`; None for anything else."""
        if not text:
            return None
        try:
            data = json.loads(text)
        except (ValueError, RecursionError):
            return None
        if not isinstance(data, dict):
            return None
        kind, host = data.get("kind"), data.get("host")
        if not isinstance(kind, str) or not isinstance(host, str) or not kind or not host:
            return None
        return cls(kind, host)

    def describe(self) -> str:
        where = "its provider's own API" if self.host == OWN_HOST else self.host
        return f"{self.kind} at {where}"


def binding_ref(key_ref: str) -> str:
    """The keyring entry holding the binding of the key kept under ``key_ref``."""
    return f"binding:{key_ref}"


def team_key_ref(database_id: str, account_name: str) -> str:
    """The keyring entry of a team account's key on this machine."""
    if not _DATABASE_ID.fullmatch(database_id):
        raise ValueError("the team database's identity is not 32 hex digits")
    return f"team:{database_id}/{key_ref_for(account_name)}"
