"""For engine tests whose subject is not the trust boundary (application/trust.py): every
account gets the one key, wherever its row points. tests/team/test_hostile_accounts.py
tests the real boundary."""

from __future__ import annotations

from reelqueue.domain.models import Account
from reelqueue.engine.account_keys import KeyAnswer


class EveryAccountKey:
    def __init__(self, key: str) -> None:
        self._key = key

    def __repr__(self) -> str:
        return "EveryAccountKey(<key>)"

    def key_for(self, account: Account, official_url: str | None) -> KeyAnswer:
        return KeyAnswer(self._key)
