"""How the engine asks for an account's key (issue 21's trust boundary).

The engine never finds a key by the ``key_ref`` of an account row: it hands the row to an
:class:`AccountKeys` (the application layer's ``application.trust.TrustedKeys``), which
derives this machine's keyring entry from the account's name and the database's
identity, and answers with the key only when the row's provider kind and API host are
the ones this machine bound that key to. Otherwise the answer names the problem and the
account is not rendered here.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal, Protocol

from reelqueue.domain.models import Account

__all__ = ["CONFIRM", "NO_KEY", "NO_KEYS", "AccountKeys", "KeyAnswer", "confirm_words"]

NO_KEY: Literal["no_key"] = "no_key"
"""No key for the account in this machine's keyring (or not read yet)."""
CONFIRM: Literal["confirm"] = "confirm"
"""The account's provider kind or API host is not the one its key is bound to here."""


def confirm_words(name: str) -> str:
    """What every front end says of an account waiting for :data:`CONFIRM`."""
    return ("changed on the team database — confirm on this machine "
            f"(reelqueue accounts confirm {name})")


@dataclass(frozen=True)
class KeyAnswer:
    """The key of an account, or why there is none to send.

    Attributes:
        key: the key (None: none, or none that may be sent); never in a ``repr``.
        problem: None (use ``key``; None means render without one), :data:`NO_KEY` or
            :data:`CONFIRM`.
        detail: the words for the user (never the key).
    """

    key: str | None = field(default=None, repr=False)
    problem: Literal["no_key", "confirm"] | None = None
    detail: str = ""


class AccountKeys(Protocol):
    """Answers the engine's "which key, if any, may this account's requests carry"."""

    def key_for(self, account: Account, official_url: str | None) -> KeyAnswer:
        """``official_url``: the adapter's own base URL (from the code, not the row)."""
        ...


class _NoKeys:
    def key_for(self, account: Account, official_url: str | None) -> KeyAnswer:
        return KeyAnswer(problem=NO_KEY, detail="key not on this machine")


NO_KEYS: AccountKeys = _NoKeys()
"""The engine's default: no account has a key here."""
