"""Issue 34 item 2: ``accounts confirm NAME`` binds this machine's key to the address the
user saw or named, never to whatever the row holds at the moment of the write (the team
database may have moved the account meanwhile).

* ``--expect-url URL`` binds only when the row's address is URL, else refuses naming both;
* without it, a terminal is shown the address and asked y/N (an address changed between
  the question and the answer is refused); ``--yes`` alone and a stdin that is not a
  terminal are refused, saying to pass ``--expect-url``;
* a later change of the address unbinds the key again.
"""

from __future__ import annotations

import asyncio
import io
import sqlite3
import sys
from pathlib import Path

import pytest

from reelqueue.application import accounts
from reelqueue.application.accounts import AccountDraft
from reelqueue.application.context import AppContext
from reelqueue.application.session import Session
from reelqueue.cli import main as cli_main
from reelqueue.credentials import MemoryKeyring
from reelqueue.engine.account_keys import CONFIRM, KeyAnswer

pytestmark = [pytest.mark.integration]

KEY = "sk-gateway-2c7d41e9b0a35f18"
FIRST, MOVED, AGAIN = ("https://gw-a.example/v1", "https://gw-b.example/v1",
                       "https://gw-c.example/v1")


@pytest.fixture
def ctx(tmp_path: Path, memory_keyring: MemoryKeyring) -> AppContext:
    """Account "gw", its key bound here to FIRST; then its row moved to MOVED."""
    ctx = AppContext(data_dir=tmp_path / "data", videos_dir=tmp_path / "videos")

    async def prepare() -> None:
        session = Session(ctx)
        await session.open_journal()
        try:
            await accounts.add_account(session, AccountDraft(
                "gw", "openai-compat", 2, KEY, FIRST, {"model": "m"}), check=False)
        finally:
            await session.stop()

    asyncio.run(prepare())
    move(ctx, MOVED)
    return ctx


def move(ctx: AppContext, url: str) -> None:
    """The row changed behind this machine's back (someone with write access)."""
    with sqlite3.connect(ctx.journal_path) as db:
        db.execute("UPDATE accounts SET base_url = ? WHERE name = 'gw'", [url])


def answer(ctx: AppContext) -> KeyAnswer:
    async def read() -> KeyAnswer:
        session = Session(ctx)
        await session.open_journal(lock=False)
        try:
            return await accounts.key_answer(session, await accounts.get_account(session,
                                                                                 "gw"))
        finally:
            await session.stop()

    return asyncio.run(read())


def cli(ctx: AppContext, *argv: str) -> int:
    return cli_main.main(["--data-dir", str(ctx.data_dir), "--videos-dir",
                          str(ctx.videos_dir), "accounts", "confirm", "gw", *argv])


class Terminal(io.StringIO):
    """A stdin that is a terminal; ``on_read`` runs when the answer is read."""

    def __init__(self, text: str, on_read: object = None) -> None:
        super().__init__(text)
        self.on_read = on_read

    def isatty(self) -> bool:
        return True

    def readline(self, size: int | None = -1) -> str:
        if callable(self.on_read):
            self.on_read()
        return super().readline(size)


def not_sent(ctx: AppContext) -> None:
    got = answer(ctx)
    assert (got.key, got.problem) == (None, CONFIRM)


def test_expect_url_binds_only_the_named_address_and_a_later_move_unbinds(
        ctx: AppContext, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli(ctx, "--expect-url", FIRST) == 1
    out = capsys.readouterr().out
    assert MOVED in out and FIRST in out and "nothing was confirmed" in out
    not_sent(ctx)

    assert cli(ctx, "--expect-url", MOVED + "/", "--yes") == 0
    assert "gw-b.example" in capsys.readouterr().out
    assert answer(ctx).key == KEY

    move(ctx, AGAIN)  # moved again after the confirm: the key waits again
    not_sent(ctx)


def test_without_expect_url_yes_and_a_pipe_are_refused(
        ctx: AppContext, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "stdin", Terminal("y\n"))
    assert cli(ctx, "--yes") == 2
    err = capsys.readouterr().err
    assert "--yes" in err and "--expect-url" in err
    not_sent(ctx)

    monkeypatch.setattr(sys, "stdin", io.StringIO("y\n"))  # a pipe
    assert cli(ctx) == 2
    err = capsys.readouterr().err
    assert "not a terminal" in err and "--expect-url" in err
    not_sent(ctx)


def test_a_terminal_is_shown_the_address_and_asked(
        ctx: AppContext, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "stdin", Terminal("n\n"))
    assert cli(ctx) == 1
    out = capsys.readouterr().out
    assert MOVED in out and "[y/N]" in out and "Nothing was confirmed" in out
    not_sent(ctx)

    # The row moves again while the question is on the screen: the answer was about
    # MOVED, so AGAIN is not bound.
    monkeypatch.setattr(sys, "stdin", Terminal("y\n", on_read=lambda: move(ctx, AGAIN)))
    assert cli(ctx) == 1
    out = capsys.readouterr().out
    assert AGAIN in out and MOVED in out and "nothing was confirmed" in out
    not_sent(ctx)

    monkeypatch.setattr(sys, "stdin", Terminal("y\n"))
    assert cli(ctx) == 0
    assert AGAIN in capsys.readouterr().out
    assert answer(ctx).key == KEY
