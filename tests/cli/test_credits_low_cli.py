"""Issue 32 item 4 on the command line: an account whose published balance, less what it
does not include yet, cannot pay for its next render reads "credits low: 40 left, this
render needs 60" in ``accounts list`` (text and --json) and ``status --json``; a job
without a price reads "price unknown: set it"."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path

import pytest

from reelqueue.application import accounts
from reelqueue.application.accounts import AccountDraft
from reelqueue.application.context import AppContext
from reelqueue.application.session import Session
from reelqueue.cli import main as cli_main
from reelqueue.credentials import MemoryKeyring
from reelqueue.domain.account_view import AccountView, Balance
from reelqueue.domain.models import BatchSpec, JobSpec
from reelqueue.store.sqlite import SqliteStore

pytestmark = [pytest.mark.integration]

LOW = "credits low: 40 left, this render needs 60"


def _ctx(tmp_path: Path, price: float | None) -> AppContext:
    ctx = AppContext(data_dir=tmp_path / "data", videos_dir=tmp_path / "videos")

    async def prepare() -> None:
        session = Session(ctx)
        await session.open_journal()
        try:
            await accounts.add_account(session, AccountDraft(
                "rw", "runway", 2, "key_" + "0" * 64, None), check=False)
        finally:
            await session.stop()

    asyncio.run(prepare())
    store = SqliteStore.open(ctx.journal_path, now=time.time())
    try:
        batch = store.create_batch(BatchSpec("b", "s.csv", "b"), time.time())
        store.add_jobs(batch.id, [JobSpec(
            "k1", "a fox", "runway", "b/1.mp4", params={"model": "gen4.5", "duration": 5},
            metadata={} if price is None else {"price": price})], time.time())
        store.put_account_view(AccountView("rw", Balance(40.0, "credits"), (), None,
                                           time.time(), "elsewhere"))
    finally:
        store.close()
    return ctx


def cli(ctx: AppContext, *argv: str) -> int:
    return cli_main.main(["--data-dir", str(ctx.data_dir), "--videos-dir",
                          str(ctx.videos_dir), *argv])


def test_credits_low_says_what_is_left_and_what_the_render_needs(
        tmp_path: Path, memory_keyring: MemoryKeyring,
        capsys: pytest.CaptureFixture[str]) -> None:
    ctx = _ctx(tmp_path, 0.6)
    assert cli(ctx, "accounts", "list", "--json") == 0
    (listed,) = json.loads(capsys.readouterr().out)
    assert listed["credits"]["words"] == LOW
    assert listed["credits"]["low"] and listed["credits"]["unit"] == "credits"
    assert listed["credits"]["next_needs"] == pytest.approx(60.0)
    assert cli(ctx, "accounts", "list") == 0
    assert LOW in capsys.readouterr().out
    assert cli(ctx, "status", "--json") == 0
    (account,) = json.loads(capsys.readouterr().out)["accounts"]
    assert account["credits"]["words"] == LOW


def test_a_job_without_a_price_reads_price_unknown(
        tmp_path: Path, memory_keyring: MemoryKeyring,
        capsys: pytest.CaptureFixture[str]) -> None:
    ctx = _ctx(tmp_path, None)
    assert cli(ctx, "accounts", "list", "--json") == 0
    (listed,) = json.loads(capsys.readouterr().out)
    assert listed["credits"]["price_unknown"]
    assert listed["credits"]["words"].startswith("price unknown: set it")
    assert "reelqueue accounts set rw --price-per-second" in listed["credits"]["words"]
