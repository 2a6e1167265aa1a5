"""Issue 34 item 1: an account's base URL from the journal that cannot be read at all
(``https://gw.example＠evil.test``: ``urlsplit`` raises ValueError on a netloc whose NFKC
form holds "@") takes no machine down (DESIGN.md invariant 15). ``status``,
``accounts list`` and ``accounts confirm`` finish and say "address unreadable"; the
window's start path (the session's engine start, its account cards' reads) raises
nothing; the account is not used and its key is sent nowhere."""

from __future__ import annotations

import asyncio
import json
import sqlite3
from pathlib import Path

import pytest

from reelqueue.application import accounts, team
from reelqueue.application.accounts import AccountDraft
from reelqueue.application.context import AppContext
from reelqueue.application.session import Session
from reelqueue.cli import main as cli_main
from reelqueue.credentials import MemoryKeyring
from reelqueue.engine.config import EngineConfig
from reelqueue.providers.registry import check_base_url, is_loopback_url

pytestmark = [pytest.mark.integration]

UNREADABLE = "https://gw.example\uff20evil.test/v1"
ADDRESS_UNREADABLE = "address unreadable"  # the word every front end shows
KEY = "sk-gateway-5b1e93c0a7d24f86"


@pytest.fixture
def ctx(tmp_path: Path, memory_keyring: MemoryKeyring) -> AppContext:
    """A local journal whose account "gw" (key bound here to gw.example) had its row's
    base_url changed to an unreadable one behind this machine's back."""
    ctx = AppContext(data_dir=tmp_path / "data", videos_dir=tmp_path / "videos")

    async def prepare() -> None:
        session = Session(ctx)
        await session.open_journal()
        try:
            await accounts.add_account(session, AccountDraft(
                "gw", "openai-compat", 2, KEY, "https://gw.example/v1", {"model": "m"}),
                check=False)
            await accounts.add_account(session, AccountDraft(
                "keyless", "mock", 1, None, "http://127.0.0.1:9/"), check=False)
        finally:
            await session.stop()

    asyncio.run(prepare())
    with sqlite3.connect(ctx.journal_path) as db:
        db.execute("UPDATE accounts SET base_url = ?", [UNREADABLE])
    return ctx


def cli(ctx: AppContext, *argv: str) -> int:
    return cli_main.main(["--data-dir", str(ctx.data_dir), "--videos-dir",
                          str(ctx.videos_dir), *argv])


def test_the_url_checks_refuse_it_as_a_known_error() -> None:
    assert is_loopback_url(UNREADABLE) is False
    with pytest.raises(Exception, match="cannot be read") as raised:
        check_base_url(UNREADABLE)
    assert type(raised.value).__name__ == "InputError"


def test_status_and_accounts_say_address_unreadable(
        ctx: AppContext, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli(ctx, "status") == 0
    out = capsys.readouterr().out
    assert out.count(ADDRESS_UNREADABLE) == 2, out  # both accounts, keyed or not

    assert cli(ctx, "status", "--json") == 0
    data = json.loads(capsys.readouterr().out)
    assert all(ADDRESS_UNREADABLE in a["this_machine"] for a in data["accounts"])

    assert cli(ctx, "accounts", "list") == 0
    out = capsys.readouterr().out
    assert out.count(ADDRESS_UNREADABLE) == 2, out

    assert cli(ctx, "accounts", "list", "--json") == 0
    listed = json.loads(capsys.readouterr().out)
    assert [a["name"] for a in listed] == ["gw", "keyless"]
    assert all(ADDRESS_UNREADABLE in a["this_machine"] for a in listed)
    assert listed[0]["base_url"] == UNREADABLE

    assert cli(ctx, "accounts", "confirm", "gw", "--expect-url", UNREADABLE) == 1  # refused
    captured = capsys.readouterr()
    assert ADDRESS_UNREADABLE in captured.out and "Nothing was confirmed" in captured.out
    assert "unexpected error" not in captured.err


@pytest.mark.expect_warnings("account keyless cannot be used: .*cannot be read")
def test_the_window_start_path_raises_nothing_and_sends_no_key(
        ctx: AppContext, memory_keyring: MemoryKeyring) -> None:
    async def run() -> None:
        session = Session(ctx)
        try:
            await session.start(EngineConfig(), paused=True)
            listed = await session.journal.list_accounts()
            words = team.keys_to_confirm(session, listed)
            assert set(words) == {"gw", "keyless"}
            assert all(w.startswith(ADDRESS_UNREADABLE) for w in words.values()), words
            assert team.keys_not_here(session, listed) == set()
            answer = await accounts.key_answer(session, listed[0])
            assert answer.key is None and ADDRESS_UNREADABLE in answer.detail
        finally:
            await session.stop()

    asyncio.run(run())
