"""The trust boundary between the journal and this machine's keys (issue 21, DESIGN.md
invariant 15).

A row of the journal (above all the team database, which anyone with write access to it
can change) says which provider an account uses, at which address, and whether it has a
key. It never says *where the key is* and never decides *where the key may go*:

* this machine's keyring entry of an account's key is derived from the account's name
  and the database's identity (:func:`team_identity`, asked of the journal's mode:
  application/team_seam.py; ``credentials/binding.py``),
  never from the row's ``key_ref``, so no row can point at the database password or at
  another account's key;
* beside each key the keyring keeps its binding, the (provider kind, API host) this
  machine agreed to send it to (``accounts add``, ``accounts set --base-url``,
  ``team-key``, ``accounts confirm``). :class:`TrustedKeys` hands the engine a key only
  for a row whose kind and host match that binding; any other row waits, shown as
  "changed on the team database — confirm on this machine";
* a key stored before bindings existed (no binding entry) is bound automatically, at its
  first use, only to its adapter's own API (an account row without a base URL, or with
  the adapter's official one); a gateway's address needs ``accounts confirm``.

For a team database the entry is ``team:DATABASE_ID/account:NAME``; the key a machine
kept under the old ``account:NAME`` for a team (``team-key`` before this change) is taken
over by the same rule as any unbound key (copied to the new entry, bound to the
adapter's own API), unless that old entry is already bound (it then belongs to the
local journal's account of the same name).

What a window needs (no Qt here): :func:`machine_words` / :func:`account_trust` for the
words of each account, and ``application.accounts.confirm_account`` for its Confirm
button.
"""

from __future__ import annotations

import hashlib
import logging
import re
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, Protocol
from urllib.parse import urlsplit

from reelqueue.credentials.binding import (
    OWN_HOST,
    KeyBinding,
    api_origin,
    binding_ref,
    team_key_ref,
)
from reelqueue.credentials.keystore import key_ref_for
from reelqueue.domain.errors import KnownError
from reelqueue.domain.models import Account
from reelqueue.engine.account_keys import CONFIRM, NO_KEY, KeyAnswer, confirm_words

log = logging.getLogger(__name__)

__all__ = ["ADDRESS_UNREADABLE", "AccountTrust", "DirectKeys", "KeyReader", "TrustedKeys",
           "account_trust", "address_unreadable", "carry_keys_to_team", "describe_binding",
           "keep_key", "machine_words", "team_identity", "unreadable_words"]

ADDRESS_UNREADABLE = "address unreadable"
"""What is shown of an account whose base URL in the journal cannot be read."""

RECHECK_SECONDS = 10.0
"""How often an account waiting for confirmation has its binding read again (a confirm
made by another process of this machine reaches a running engine within this)."""


def team_identity(value: object) -> str:
    """The team database's identity as the namespace of this machine's key bindings (its
    ``database_id``, 32 hex digits). The local journal has none (its keys keep their
    ``account:NAME`` entries): the journal's mode says which (application/team_seam.py)."""
    text = value if isinstance(value, str) else ""
    if re.fullmatch(r"[0-9a-f]{32}", text):
        return text
    # Anything else (a row changed by hand): still a team namespace, never the local one.
    return hashlib.sha256(text.encode("utf-8", "replace")).hexdigest()[:32]


def address_unreadable(base_url: str | None) -> bool:
    """The account row's ``base_url`` cannot be read as an address at all (``urlsplit``
    raises ValueError: e.g. a host holding U+FF20 FULLWIDTH COMMERCIAL AT, which NFKC
    turns into "@"). Such a row is never used and its key never sent (invariant 15)."""
    if not base_url:
        return False
    try:
        urlsplit(base_url.strip())
    except ValueError:
        return True
    return False


def unreadable_words(name: str) -> str:
    """What every front end says of an account whose address cannot be read."""
    return (f"{ADDRESS_UNREADABLE}: the journal's base URL of this account cannot be read; "
            "it is not used here and its key is sent nowhere (give it a valid one: "
            f"reelqueue accounts set {name} --base-url https://…)")


def _row_says(account: Account) -> str:
    if address_unreadable(account.base_url):
        return f"{account.provider} at an {ADDRESS_UNREADABLE}"
    return KeyBinding.of(account.provider, account.base_url).describe()


class KeyReader(Protocol):
    """This machine's keyring as :class:`TrustedKeys` reads it (never blocking on a loop).

    ``peek`` gives what is known of an entry (None: absent or not read yet); ``ready``
    says whether it was read at all (and asks for it if not); ``keep`` writes one;
    ``recheck`` asks for a fresh read of an entry (rate-limited)."""

    def peek(self, ref: str) -> str | None: ...

    def ready(self, ref: str) -> bool: ...

    def keep(self, ref: str, value: str) -> None: ...

    def recheck(self, ref: str) -> None: ...


class DirectKeys:
    """A :class:`KeyReader` on the OS keyring itself, for a headless worker: reads block
    (as the worker's key lookups always did) and are kept for ``ttl`` seconds.

    Attributes:
        keystore: a ``credentials.keystore.KeyStore`` (or a test's equivalent).
    """

    def __init__(self, keystore: Any, ttl: float = 5.0) -> None:
        self.keystore = keystore
        self._ttl = ttl
        self._lock = threading.Lock()
        self._cache: dict[str, tuple[float, str | None]] = {}

    def __repr__(self) -> str:
        return f"DirectKeys({self.keystore!r})"

    def peek(self, ref: str) -> str | None:
        now = time.monotonic()
        with self._lock:
            hit = self._cache.get(ref)
        if hit is not None and now - hit[0] < self._ttl:
            return hit[1]
        try:
            value = self.keystore.get_key(ref)
        except KnownError as exc:
            # A keyring that fails for a moment (a D-Bus hiccup) changes nothing: what was
            # read before stands (a key must not vanish and hand its renders back).
            log.info("keyring: %s", exc)
            value = hit[1] if hit is not None else None
        with self._lock:
            self._cache[ref] = (now, value or None)
        return value or None

    def ready(self, ref: str) -> bool:
        return True

    def keep(self, ref: str, value: str) -> None:
        try:
            self.keystore.set_key(ref, value)
        except KnownError as exc:
            log.warning("keyring: %s", exc)
            return
        with self._lock:
            self._cache[ref] = (time.monotonic(), value)

    def recheck(self, ref: str) -> None:
        with self._lock:
            self._cache.pop(ref, None)


@dataclass(frozen=True)
class _Found:
    key: str | None
    binding: KeyBinding | None
    bound_text: str | None
    adopt_from: str | None  # an unbound key of the old team entry, to be copied
    ready: bool


class TrustedKeys:
    """The engine's :class:`~reelqueue.engine.account_keys.AccountKeys`: an account's key,
    only for the kind and host this machine bound it to.

    Attributes:
        reader: this machine's keyring (:class:`KeyReader`).
        database_id: the team database's identity; None for the local journal.
    """

    def __init__(self, reader: KeyReader, database_id: str | None) -> None:
        self.reader = reader
        self.database_id = database_id

    def __repr__(self) -> str:
        return f"TrustedKeys(database_id={self.database_id!r})"

    # -- names -------------------------------------------------------------------------
    def key_ref(self, name: str) -> str:
        """This machine's keyring entry of the key of account ``name``."""
        if self.database_id is None:
            return key_ref_for(name)
        return team_key_ref(self.database_id, name)

    def _old_team_ref(self, name: str) -> str | None:
        return key_ref_for(name) if self.database_id is not None else None

    def refs_to_read(self, accounts: Iterable[Account]) -> list[str]:
        """Every entry :meth:`key_for` may read for ``accounts`` (to read them ahead)."""
        refs: list[str] = []
        for account in accounts:
            for ref in (self.key_ref(account.name), self._old_team_ref(account.name)):
                if ref is not None:
                    refs += [ref, binding_ref(ref)]
        return refs

    # -- the answer --------------------------------------------------------------------
    def _find(self, name: str) -> _Found:
        reader = self.reader
        ref = self.key_ref(name)
        bref = binding_ref(ref)
        key, bound_text = reader.peek(ref), reader.peek(bref)
        ready = reader.ready(ref) and reader.ready(bref)
        adopt_from = None
        old = self._old_team_ref(name)
        if key is None and old is not None:
            old_key, old_bound = reader.peek(old), reader.peek(binding_ref(old))
            ready = ready and reader.ready(old) and reader.ready(binding_ref(old))
            if old_key is not None and old_bound is None:
                key, adopt_from = old_key, old
        return _Found(key, KeyBinding.from_text(bound_text), bound_text, adopt_from, ready)

    def key_for(self, account: Account, official_url: str | None) -> KeyAnswer:
        if address_unreadable(account.base_url):
            # Checked before the keyring: nothing can be bound to, or sent to, it.
            return KeyAnswer(problem=CONFIRM, detail=unreadable_words(account.name))
        found = self._find(account.name)
        if not found.ready:
            return KeyAnswer(problem=NO_KEY, detail="reading the keyring")
        if found.key is None:
            return KeyAnswer(problem=NO_KEY, detail="key not on this machine")
        wanted = KeyBinding.of(account.provider, account.base_url)
        if found.bound_text is None:
            if _own_api(account, official_url):
                # A key stored before bindings: bound now, to its adapter's own API only.
                self._keep(account.name, found, KeyBinding(account.provider, OWN_HOST))
                return KeyAnswer(found.key)
            self.reader.recheck(binding_ref(self.key_ref(account.name)))
            return KeyAnswer(problem=CONFIRM, detail=(
                f"its address ({wanted.describe()}) is not confirmed on this machine "
                f"(reelqueue accounts confirm {account.name})"))
        if found.binding is not None and (
                found.binding == wanted
                or (found.binding.host == OWN_HOST and found.binding.kind == account.provider
                    and _own_api(account, official_url))):
            return KeyAnswer(found.key)
        self.reader.recheck(binding_ref(self.key_ref(account.name)))
        return KeyAnswer(problem=CONFIRM, detail=confirm_words(account.name))

    def binding(self, name: str) -> KeyBinding | None:
        """The binding this machine keeps for account ``name``'s key (None: none)."""
        return self._find(name).binding

    def _keep(self, name: str, found: _Found, binding: KeyBinding) -> None:
        ref = self.key_ref(name)
        if found.adopt_from is not None and found.key is not None:
            self.reader.keep(ref, found.key)
        self.reader.keep(binding_ref(ref), binding.to_text())


def _own_api(account: Account, official_url: str | None) -> bool:
    """The row names no address (its adapter's own API) or exactly the adapter's own."""
    if not account.base_url:
        return True
    return official_url is not None and api_origin(account.base_url) == api_origin(
        official_url)


def keep_key(keystore: Any, ref: str, key: str, kind: str, base_url: str | None
             ) -> KeyBinding:
    """Keep ``key`` under ``ref`` in this machine's keyring, bound to ``kind`` at
    ``base_url`` (the user's own word on this machine). Blocking keyring calls."""
    binding = KeyBinding.of(kind, base_url)
    keystore.set_key(ref, key)
    keystore.set_key(binding_ref(ref), binding.to_text())
    return binding


def describe_binding(kind: str, base_url: str | None) -> str:
    """Where a key bound to ``kind`` at ``base_url`` goes, in the user's words."""
    if address_unreadable(base_url):
        return f"{kind} at an {ADDRESS_UNREADABLE}"
    return KeyBinding.of(kind, base_url).describe()


def carry_keys_to_team(names: Iterable[str], database_id: str,
                       keystore: Any | None = None) -> int:
    """``migrate-to``: this machine's keys of the accounts copied from its local journal,
    kept again under the team database's entries, each with the binding it had here (a
    key without one keeps the rule of unbound keys). Blocking keyring calls; returns how
    many keys were carried. The local entries stay (the local journal keeps its own)."""
    if keystore is None:
        from reelqueue.credentials.keystore import KeyStore

        keystore = KeyStore()
    carried = 0
    for name in names:
        old = key_ref_for(name)
        key = keystore.get_key(old)
        if not key:
            continue
        new = team_key_ref(database_id, name)
        keystore.set_key(new, key)
        bound = keystore.get_key(binding_ref(old))
        if bound:
            keystore.set_key(binding_ref(new), bound)
        carried += 1
    return carried


# -- what a front end shows -------------------------------------------------------------
@dataclass(frozen=True)
class AccountTrust:
    """This machine's view of one account's key (for the window and the command line).

    Attributes:
        name: the account.
        problem: None (renders here), ``no_key`` or ``confirm``.
        words: what to show (empty when it renders here).
        bound_to: what its key is bound to on this machine, if anything.
        row_says: the kind and host the journal's row names now.
    """

    name: str
    problem: str | None
    words: str
    bound_to: str | None
    row_says: str


def account_trust(keys: TrustedKeys, accounts: Iterable[Account],
                  official_url: Callable[[str], str | None]) -> list[AccountTrust]:
    """Each account as this machine sees it (``official_url``: the kind's own base URL,
    or None for an unknown kind). Reads only what ``keys.reader`` already holds."""
    out = []
    for account in accounts:
        try:
            official = official_url(account.provider)
        except KnownError:
            official = None
        # An unreadable address is the account's problem with or without a key.
        answer = (keys.key_for(account, official)
                  if account.key_ref or address_unreadable(account.base_url) else KeyAnswer())
        bound = keys.binding(account.name) if account.key_ref else None
        out.append(AccountTrust(
            account.name, answer.problem,
            answer.detail if answer.problem is not None else "",
            bound.describe() if bound is not None else None,
            _row_says(account)))
    return out


def machine_words(trust: Iterable[AccountTrust]) -> dict[str, str]:
    """Name -> this machine's words, for the accounts waiting for ``accounts confirm``."""
    return {t.name: t.words for t in trust if t.problem == CONFIRM}
