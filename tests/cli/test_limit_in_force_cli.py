"""Issue 32 item 3 on the command line: the user's setting is kept and shown beside the
provider's lower limit, "5 set · provider allows 2 for mock-1", in ``accounts list``
(text and --json) and ``status --json``."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from reelqueue.application import accounts
from reelqueue.application.accounts import AccountDraft
from reelqueue.application.context import AppContext
from reelqueue.application.session import Session
from reelqueue.cli import main as cli_main
from reelqueue.credentials import MemoryKeyring
from reelqueue.mockprovider import MockOptions, MockProviderServer

pytestmark = [pytest.mark.integration]

VIEW = {"balance": {"amount": 4200, "unit": "credits"},
        "models": {"mock-1": {"concurrency": 2, "daily": 50, "used_today": 12}}}
WORDS = "5 set · provider allows 2 for mock-1"


@pytest.fixture
def ctx(tmp_path: Path, memory_keyring: MemoryKeyring) -> Iterator[AppContext]:
    with MockProviderServer(MockOptions(seed=1, account_view=VIEW)) as server:
        ctx = AppContext(data_dir=tmp_path / "data", videos_dir=tmp_path / "videos")

        async def prepare() -> None:
            session = Session(ctx)
            await session.open_journal()
            try:
                await accounts.add_account(session, AccountDraft("m1", "mock", 5, None,
                                                                 server.url))
            finally:
                await session.stop()

        asyncio.run(prepare())
        yield ctx


def cli(ctx: AppContext, *argv: str) -> int:
    return cli_main.main(["--data-dir", str(ctx.data_dir), "--videos-dir",
                          str(ctx.videos_dir), *argv])


def test_the_setting_and_the_provider_limit_are_both_shown(
        ctx: AppContext, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli(ctx, "accounts", "list", "--json") == 0
    (listed,) = json.loads(capsys.readouterr().out)
    assert listed["limit"] == 5
    in_force = listed["limit_in_force"]
    assert in_force["words"] == WORDS and in_force["set"] == 5 and in_force["applied"]
    assert in_force["models"][0] == {"model": "mock-1", "provider_allows": 2, "in_force": 2,
                                     "daily": 50, "used_today": 12, "applied": True}
    assert cli(ctx, "accounts", "list") == 0
    assert f"limit: {WORDS}" in capsys.readouterr().out
    assert cli(ctx, "status", "--json") == 0
    (account,) = json.loads(capsys.readouterr().out)["accounts"]
    assert account["limit"] == 5 and account["limit_in_force"]["words"] == WORDS
