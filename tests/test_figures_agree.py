"""One figure, one word (issue 32): an account's provider view, the limit in force and the
balance gate are given under the same names with the same values by ``accounts list
--json``, ``status --json`` and ``GET /v1/accounts``, and the window's card shows the
same words (application.account_figures makes them once)."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, TypeVar

import pytest

from reelqueue.api.server import account_json
from reelqueue.application import status, views
from reelqueue.application.account_figures import read_account_figures
from reelqueue.application.context import AppContext
from reelqueue.application.session import Session
from reelqueue.cli import main as cli_main
from reelqueue.domain.account_view import AccountView, Balance, ModelLimit
from reelqueue.domain.models import AccountSpec, BatchSpec, JobSpec
from reelqueue.store.sqlite import SqliteStore
from reelqueue.ui.dashboard import compose_cards
from reelqueue.ui.jobs_data import JobTable

pytestmark = pytest.mark.integration

T = TypeVar("T")
FIELDS = ("view", "limit_in_force", "credits")


@pytest.fixture
def ctx(tmp_path: Path) -> AppContext:
    """rw (Runway: 40 credits left, a render of 60 waits), m1 (mock: the provider allows
    2 of its 5), old (mock: a view 20 minutes old) and bare (mock: never read)."""
    ctx = AppContext(data_dir=tmp_path / "data", videos_dir=tmp_path / "videos")
    ctx.data_dir.mkdir(parents=True)
    now = time.time()  # read now: a module-level time ages while other tests run
    store = SqliteStore.open(ctx.journal_path, now=now)
    try:
        store.add_account(AccountSpec("rw", "runway", 2), now)
        for name in ("m1", "old", "bare"):
            store.add_account(AccountSpec(name, "mock", 5), now)
        batch = store.create_batch(BatchSpec("b", "s.csv", "b"), now)
        store.add_jobs(batch.id, [JobSpec(
            "k1", "a fox", "runway", "b/1.mp4", params={"model": "gen4.5", "duration": 5},
            metadata={"price": 0.6})], now)
        store.put_account_view(AccountView("rw", Balance(40.0, "credits"), (), None, now,
                                           "elsewhere"))
        limits = (ModelLimit("mock-1", 2, 50, "utc_day", 12),)
        store.put_account_view(AccountView("m1", Balance(4200.0, "credits"), limits,
                                           "org-1", now, "here"))
        store.put_account_view(AccountView("old", Balance(10.0, "credits"), limits,
                                           "org-2", now - 20 * 60, "here"))
    finally:
        store.close()
    return ctx


def on_journal(ctx: AppContext, command: Callable[[Session], Awaitable[T]]) -> T:
    async def run() -> T:
        session = Session(ctx)
        await session.open_journal()
        try:
            return await command(session)
        finally:
            await session.stop()

    return asyncio.run(run())


def _cli(ctx: AppContext, capsys: pytest.CaptureFixture[str], *argv: str) -> Any:
    assert cli_main.main(["--data-dir", str(ctx.data_dir), "--videos-dir",
                          str(ctx.videos_dir), *argv]) == 0
    return json.loads(capsys.readouterr().out)


async def _api(session: Session) -> dict[str, dict[str, Any]]:
    """The API's account bodies, built by its own function from what its services
    (application.remote.RemoteAccess) read."""
    summaries = await views.accounts(session)
    words = await status.account_states_now(session, summaries, await status.money(session))
    figures = await read_account_figures(session, [s.account for s in summaries])
    return {s.account.name: account_json(s, words[s.account.name], figures[s.account.name])
            for s in summaries}


async def _cards(session: Session) -> dict[str, Any]:
    summaries = await views.accounts(session)
    figures = await read_account_figures(session, [s.account for s in summaries])
    return {card.name: card.figures
            for card in compose_cards(JobTable(), summaries, {}, time.time(),
                                      money=await status.money(session), figures=figures)}


def _comparable(fields: dict[str, Any]) -> dict[str, Any]:
    """The figures without the view's age, which grows between two reads."""
    out = {name: json.loads(json.dumps(fields[name])) for name in FIELDS}
    if out["view"] is not None:
        out["view"].pop("age_seconds", None)
    return out


def test_the_cli_status_the_api_and_the_card_give_the_same_figures(
        ctx: AppContext, capsys: pytest.CaptureFixture[str], qapp: Any) -> None:
    listed = {a["name"]: a for a in _cli(ctx, capsys, "accounts", "list", "--json")}
    stated = {a["name"]: a for a in _cli(ctx, capsys, "status", "--json")["accounts"]}
    api = on_journal(ctx, _api)
    cards = on_journal(ctx, _cards)
    assert set(listed) == set(stated) == set(api) == set(cards) == {"rw", "m1", "old", "bare"}
    for name in listed:
        assert _comparable(listed[name]) == _comparable(stated[name]) == \
            _comparable(api[name]), name

    # the words themselves, and the card saying the same ones
    rw, m1, old = api["rw"], api["m1"], api["old"]
    assert rw["credits"]["words"] == "credits low: 40 left, this render needs 60"
    assert rw["credits"]["low"] is True
    assert cards["rw"].credits == rw["credits"]["words"]
    assert m1["limit_in_force"]["words"] == "5 set · provider allows 2 for mock-1"
    assert cards["m1"].limit == m1["limit_in_force"]["words"]
    assert m1["view"]["balance"] == {"amount": 4200.0, "unit": "credits"}
    assert m1["view"]["stale"] is False
    assert cards["m1"].balance == m1["view"]["words"][0]
    assert cards["m1"].balance.startswith("balance: 4,200 credits, as of ")
    assert old["view"]["stale"] is True and cards["old"].stale
    assert cards["old"].balance == old["view"]["words"][0]
    assert cards["old"].balance.endswith(" min old, gates nothing)")
    assert old["credits"] is None, "a stale view gates nothing"
    assert api["bare"]["view"]["read_at"] is None and api["bare"]["credits"] is None
    assert cards["bare"].balance == "account figures: not read yet"
