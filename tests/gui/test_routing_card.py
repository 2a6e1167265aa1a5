"""Issue 24: the card of an account that took over routed work says from where, from the
journal's ledger, and ``reelqueue status`` and ``GET /v1/spend`` say the same."""

from __future__ import annotations

from pathlib import Path

import pytest

from reelqueue.application import status
from reelqueue.application.views import AccountSummary
from reelqueue.cli import main as cli_main
from reelqueue.domain.models import AccountSpec, BatchSpec, JobSpec
from reelqueue.domain.routes import Candidate, Route, RoutePolicy
from reelqueue.store.base import ClaimParams
from reelqueue.store.sqlite import SqliteStore
from reelqueue.ui.accounts_view import NBSP, AccountCard
from reelqueue.ui.dashboard import compose_cards
from reelqueue.ui.jobs_data import JobTable
from tests.api.live_api import LiveApi

pytestmark = [pytest.mark.gui, pytest.mark.integration]

NOW = 1_700_000_000.0
ROUTE = Route(RoutePolicy.ORDER, (Candidate("runway", {"duration": 5}, 0.25),
                                  Candidate("luma", {"duration": 5}, 0.4)))


def take_over_in(journal: Path) -> None:
    """Three routed jobs; runway's one slot takes the first, luma takes the other two."""
    store = SqliteStore.open(journal, now=NOW)
    try:
        store.add_account(AccountSpec("runway-a", "runway", 1), NOW)
        store.add_account(AccountSpec("luma-a", "luma", 2), NOW)
        batch = store.create_batch(BatchSpec("b", "s.csv", "b"), NOW)
        store.add_jobs(batch.id, [
            JobSpec(f"k{i}", f"shot {i}", "runway", f"b/{i}.mp4", params={"duration": 5},
                    metadata={"price": 0.25}, route=ROUTE) for i in range(3)], NOW)
        for name in ("runway-a", "luma-a", "luma-a"):
            assert store.claim_next_job(ClaimParams(name, "other", NOW, 600.0)) is not None
    finally:
        store.close()


def test_the_card_status_and_the_api_say_who_took_over_from_where(
    qapp: object, tmp_path: Path, capsys: pytest.CaptureFixture[str],
) -> None:
    with LiveApi(tmp_path) as api:
        take_over_in(api.ctx.journal_path)
        with api.client() as client:
            answer = client.get("/v1/spend")
        assert answer.status_code == 200, answer.text
        folders = ["--data-dir", str(api.ctx.data_dir), "--videos-dir",
                   str(api.ctx.videos_dir)]
        capsys.readouterr()
        assert cli_main.main([*folders, "status"]) == 0
        status_out = capsys.readouterr().out
        store = SqliteStore.open(api.ctx.journal_path, now=NOW)
        try:
            money = status.money_of(store, NOW)
            summaries = [AccountSummary(a, 0) for a in store.list_accounts()]
        finally:
            store.close()

    assert answer.json()["taken_over"] == {"luma-a": {"runway": 2}}
    assert "account luma-a (luma): " in status_out
    assert "; took over 2 from runway" in status_out, status_out
    cards = {c.name: c for c in compose_cards(JobTable(), summaries, {}, NOW, money=money)}
    assert cards["luma-a"].took_over == "took over 2 from runway"
    assert cards["runway-a"].took_over == ""
    card = AccountCard(cards["luma-a"])
    try:
        assert "Took over 2 from runway" in card.summary.text().replace(NBSP, " ")
    finally:
        card.stop_timers()
        card.deleteLater()
