"""A token is verified in the same time whether its id exists or not (issue 34): the
digest is computed against a random pair when there is no such row, so an attacker cannot
tell a known token id from an unknown one by the answer's time. Counted, not timed."""

from __future__ import annotations

from pathlib import Path

import pytest

from reelqueue.store import tokens as token_module
from reelqueue.store.sqlite import SqliteStore
from reelqueue.store.tokens import TokenStore

pytestmark = pytest.mark.unit


def test_an_unknown_token_id_costs_one_digest_like_a_known_one(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    journal = tmp_path / "journal.sqlite3"
    SqliteStore.open(journal, now=0.0).close()
    table = TokenStore(journal)
    good = table.add("ci", "read", 0.0)
    digests: list[bytes] = []
    real = token_module._digest

    def counting(salt: bytes, secret: str) -> bytes:
        digests.append(salt)
        return real(salt, secret)

    monkeypatch.setattr(token_module, "_digest", counting)
    token_id = good[len(token_module.TOKEN_PREFIX):].split("_", 1)[0]
    wrong_secret = good.replace(good.split("_", 2)[2], "x" * 43)
    unknown_id = good.replace(token_id, "0" * 16)
    assert table.verify(good) is not None
    assert table.verify(wrong_secret) is None
    assert table.verify(unknown_id) is None
    assert len(digests) == 3, "one digest for each answer, the unknown id's too"
    table.close()
