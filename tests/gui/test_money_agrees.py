"""Issue 23: "est. $X to go" is one figure, the journal's (application.status.Money), and
the window's cards, ``reelqueue status``/``spend`` and the API's ``GET /v1/spend`` say the
same number in the same words for the same journal."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest

from reelqueue.application import status
from reelqueue.application.views import AccountSummary
from reelqueue.cli import main as cli_main
from reelqueue.cli.cmd_demo import prepare
from reelqueue.domain.models import AccountSpec, BatchSpec, JobSpec
from reelqueue.store.sqlite import SqliteStore
from reelqueue.ui import controller as controller_module
from reelqueue.ui.accounts_view import NBSP, AccountCard
from reelqueue.ui.controller import MONEY_SHARE, SLOW_TICKS
from reelqueue.ui.dashboard import compose_cards, shared_queue_text
from reelqueue.ui.jobs_data import JobTable
from tests.api.live_api import LiveApi
from tests.gui.conftest import WindowHarness, on_qloop, until

pytestmark = [pytest.mark.gui, pytest.mark.integration]

NOW = 1_700_000_000.0


def spec(key: str, price: object, pinned: str | None = None) -> JobSpec:
    return JobSpec(job_key=key, prompt=f"a shot {key}", provider="mock",
                   output_path=f"b/{key}.mp4", pinned_account=pinned,
                   metadata={} if price is None else {"price": price})


def fill_from_another_process(journal: Path) -> None:
    """What ``reelqueue import`` in another process (or a restart) leaves: jobs the
    window's own mirror has never seen."""
    store = SqliteStore.open(journal, now=NOW)
    try:
        store.add_account(AccountSpec("studio", "mock", 2), NOW)
        store.add_account(AccountSpec("spare", "mock", 1), NOW)
        batch = store.create_batch(BatchSpec("b", "s.csv", "b"), NOW)
        store.add_jobs(batch.id, [spec("u1", 0.5), spec("u2", 0.5), spec("u3", 0.5),
                                  spec("u4", None), spec("p1", 0.25, "studio"),
                                  spec("p2", 0.25, "studio"), spec("p3", None, "studio")],
                       NOW)
    finally:
        store.close()


def card_spend_line(qapp: object, summaries: list[AccountSummary],
                    money: status.Money, name: str) -> str:
    # The window's mirror is empty: it has not paged these jobs in (a restart, or jobs
    # added by another process). The old code priced the cards from that mirror.
    cards = compose_cards(JobTable(), summaries, {}, NOW, money=money)
    (data,) = [c for c in cards if c.name == name]
    card = AccountCard(data)
    try:
        return card.spend.text().replace(NBSP, " ")
    finally:
        card.stop_timers()
        card.deleteLater()


def test_the_window_the_cli_and_the_api_say_the_same_to_go(
    qapp: object, tmp_path: Path, capsys: pytest.CaptureFixture[str],
) -> None:
    with LiveApi(tmp_path) as api:
        fill_from_another_process(api.ctx.journal_path)
        with api.client() as client:
            answer = client.get("/v1/spend")
        assert answer.status_code == 200, answer.text
        body = answer.json()
        folders = ["--data-dir", str(api.ctx.data_dir), "--videos-dir",
                   str(api.ctx.videos_dir)]
        capsys.readouterr()
        assert cli_main.main([*folders, "spend"]) == 0
        spend_out = capsys.readouterr().out
        assert cli_main.main([*folders, "status"]) == 0
        status_out = capsys.readouterr().out
        store = SqliteStore.open(api.ctx.journal_path, now=NOW)
        try:  # the controller's refresh_money: status.money, i.e. this read
            money = status.money_of(store, NOW)
            summaries = [AccountSummary(a, 0) for a in store.list_accounts()]
        finally:
            store.close()

    shared = "est. $1.50 to go, 1 without a price"
    pinned = "est. $0.50 to go, 1 without a price"
    # The window: the pinned jobs on their account's card, the shared queue once above
    # the cards, never a capacity share of it on each card.
    # (The mock's dollars are practice prices: "Practice spend".)
    assert (card_spend_line(qapp, summaries, money, "studio")
            == f"Practice spend $0.00 · {pinned}")
    assert card_spend_line(qapp, summaries, money, "spare") == "Practice spend $0.00"
    line = shared_queue_text(JobTable(), summaries, money)
    assert line.endswith(f" · Mock provider (local) {shared}"), line
    # The API: per provider and pinned account, with the words.
    assert [(g["provider"], g["account"], g["usd"], g["unpriced"], g["words"])
            for g in body["to_go"]] == [("mock", None, 1.5, 1, shared),
                                        ("mock", "studio", 0.5, 1, pinned)]
    assert body["to_go_total"]["words"] == "est. $2.00 to go, 2 without a price"
    # The CLI: the same words in `spend` and `status`.
    for out in (spend_out, status_out):
        assert f"Waiting jobs (mock): {shared}" in out, out
        assert f"Waiting jobs for account studio (mock): {pinned}" in out, out


@on_qloop
async def test_the_money_figures_take_a_small_share_of_the_journal_thread(
        windows: WindowHarness, app_ctx, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The to-go aggregate reads every waiting job (120-220 ms with 100,000 waiting); read
    once a second during a run it took a fifth of the thread the engine writes on. The
    next read waits (1 / MONEY_SHARE - 1) times as long as the last one took."""
    sheet = tmp_path / "shots.csv"
    sheet.write_text("name,prompt\na,A scene\n", "utf-8")
    prepare(app_ctx, sheet, render_seconds=None)
    reads: list[float] = []
    real = status.money

    async def slow_money(session):  # type: ignore[no-untyped-def]
        reads.append(time.monotonic())
        await asyncio.sleep(0.5)  # as a read over a very large queue takes
        return await real(session)

    monkeypatch.setattr(controller_module.status, "money", slow_money)
    controller = await windows.open(app_ctx)
    await until(lambda: reads and controller.money is not None, 30)
    first = len(reads)
    paused_until = controller._money_not_before
    assert paused_until - time.monotonic() > 0.5 * (1 / MONEY_SHARE - 1) - 2.0
    for _ in range(SLOW_TICKS * 4):  # four slow ticks, each with something changed
        controller._money_dirty = True
        controller.tick()
    await asyncio.sleep(0)
    assert len(reads) == first, "read again inside its pause"
    controller._money_not_before = 0.0  # the pause is over
    for _ in range(SLOW_TICKS):
        controller.tick()
    await until(lambda: len(reads) == first + 1, 30)
