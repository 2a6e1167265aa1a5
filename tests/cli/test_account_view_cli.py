"""Issue 32 item 2 on the command line: ``accounts list`` and ``status`` (text and
--json) show each account's balance with its unit and "as of HH:MM", per-model limits,
"shared with" for accounts of one organization, "not published by" a provider without
the view, stale after 15 minutes, and "provider's figures unavailable (why)";
``accounts refresh NAME`` reads it again from this machine, never crashing on a failed
read."""

from __future__ import annotations

import asyncio
import json
import sqlite3
import time
from collections.abc import Iterator
from datetime import datetime
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

VIEW = {"organization_id": "org-7", "balance": {"amount": 4200, "unit": "credits"},
        "models": {"mock-1": {"concurrency": 2, "daily": 50, "daily_window": "utc_day",
                              "used_today": 12},
                   "mock-2": {"concurrency": 0, "daily": "lots", "used_today": 1}}}


@pytest.fixture
def server() -> Iterator[MockProviderServer]:
    with MockProviderServer(MockOptions(seed=1, account_view=VIEW)) as running:
        yield running


@pytest.fixture
def ctx(tmp_path: Path, memory_keyring: MemoryKeyring,
        server: MockProviderServer) -> AppContext:
    """Two mock accounts of one organization added with their key check (their view read
    at connect), one fal account (fal publishes no view) and one on a dead address."""
    ctx = AppContext(data_dir=tmp_path / "data", videos_dir=tmp_path / "videos")

    async def prepare() -> None:
        session = Session(ctx)
        await session.open_journal()
        try:
            for name in ("m1", "m2"):
                await accounts.add_account(session, AccountDraft(
                    name, "mock", 2, None, server.url))
            await accounts.add_account(session, AccountDraft(
                "f1", "fal", 1, "fal-key-0123456789abcdef", None), check=False)
            await accounts.add_account(session, AccountDraft(
                "dead", "mock", 1, None, "http://127.0.0.1:9/"), check=False)
        finally:
            await session.stop()

    asyncio.run(prepare())
    return ctx


def cli(ctx: AppContext, *argv: str) -> int:
    return cli_main.main(["--data-dir", str(ctx.data_dir), "--videos-dir",
                          str(ctx.videos_dir), *argv])


def _hhmm(when: float) -> str:
    return datetime.fromtimestamp(when).strftime("%H:%M")


def _read_at(ctx: AppContext, account: str) -> float:
    with sqlite3.connect(ctx.journal_path) as db:
        return float(db.execute("SELECT read_at FROM account_views WHERE account = ?",
                                [account]).fetchone()[0])


def test_accounts_list_shows_the_view_read_at_connect(
        ctx: AppContext, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli(ctx, "accounts", "list") == 0
    out = capsys.readouterr().out
    as_of = _hhmm(_read_at(ctx, "m1"))
    assert f"balance: 4,200 credits, as of {as_of}" in out
    assert "mock-1: 2 at once, 50 a day (12 used, UTC day)" in out
    assert "mock-2: 0 at once, daily count unavailable (1 used)" in out, "0 is shown"
    assert ("some of the provider's figures unavailable (mock-2 daily limit is not a "
            "number)") in out
    assert "balance: shared with m1 (organization org-7)" in out
    assert "account figures: not published by fal" in out
    assert "account figures: not read yet (reelqueue accounts refresh dead)" in out
    assert cli(ctx, "accounts", "list", "--json") == 0
    listed = {a["name"]: a["view"] for a in json.loads(capsys.readouterr().out)}
    assert listed["m1"]["balance"] == {"amount": 4200.0, "unit": "credits"}
    assert listed["m1"]["stale"] is False and listed["m1"]["as_of"] == as_of
    assert listed["m1"]["organization_id"] == "org-7"
    assert listed["m1"]["limits"][0] == {
        "model": "mock-1", "concurrency": 2, "daily": 50, "daily_window": "utc_day",
        "used_today": 12, "words": "mock-1: 2 at once, 50 a day (12 used, UTC day)"}
    assert listed["m2"]["balance"] is None and listed["m2"]["balance_shared_with"] == "m1"
    assert listed["f1"]["published"] is False and listed["f1"]["balance"] is None


def test_status_shows_the_view_and_marks_it_stale_after_15_minutes(
        ctx: AppContext, capsys: pytest.CaptureFixture[str]) -> None:
    old = time.time() - 20 * 60
    with sqlite3.connect(ctx.journal_path) as db:
        db.execute("UPDATE account_views SET read_at = ? WHERE account = 'm1'", [old])
    assert cli(ctx, "status") == 0
    out = capsys.readouterr().out
    assert f"balance: 4,200 credits, as of {_hhmm(old)} (stale: 20 min old, gates nothing)" in out
    assert "balance: shared with m1 (organization org-7)" in out
    assert cli(ctx, "status", "--json") == 0
    views = {a["name"]: a["view"] for a in json.loads(capsys.readouterr().out)["accounts"]}
    assert views["m1"]["stale"] is True and views["m2"]["stale"] is False
    assert views["m1"]["balance"] == {"amount": 4200.0, "unit": "credits"}


def test_accounts_refresh_reads_again_and_a_failed_read_is_words_not_a_crash(
        ctx: AppContext, capsys: pytest.CaptureFixture[str]) -> None:
    with sqlite3.connect(ctx.journal_path) as db:
        db.execute("DELETE FROM account_views WHERE account = 'm1'")
    assert cli(ctx, "accounts", "refresh", "m1") == 0
    out = capsys.readouterr().out
    assert out.startswith("Account m1:\n  balance: 4,200 credits, as of ")
    assert abs(_read_at(ctx, "m1") - time.time()) < 60, "read again, kept in the journal"
    assert cli(ctx, "accounts", "refresh", "dead") == 0
    out = capsys.readouterr().out
    assert "account figures: provider's figures unavailable (" in out
    assert cli(ctx, "accounts", "refresh", "dead", "--json") == 0
    view = json.loads(capsys.readouterr().out)["view"]
    assert view["balance"] is None and view["problem"]
    assert cli(ctx, "accounts", "refresh", "f1") != 0
    assert "publishes no account figures" in capsys.readouterr().err
