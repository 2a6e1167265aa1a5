"""One clock, one figure, one word (issue 34): each job state and account condition has
one name, the same in the window, the command line and the HTTP API.

A journal holds one job in each state (RENDERING with each sub-status, a create of unknown
outcome and a render parked after crashes) and one account in each condition it can be
put in without a team; each front end's own function reads it, and the names must agree
with each other and with application.words."""

from __future__ import annotations

import asyncio
import json
import sqlite3
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, TypeVar

import pytest

from reelqueue.api.server import account_json, job_json
from reelqueue.application import status, team, views
from reelqueue.application.context import AppContext
from reelqueue.application.gallery import gallery_items
from reelqueue.application.session import Session
from reelqueue.application.words import job_state_words
from reelqueue.cli import main as cli_main
from reelqueue.domain.errors import ErrorLabel
from reelqueue.domain.models import AccountSpec, BatchSpec, JobSpec
from reelqueue.domain.states import AccountStatus
from reelqueue.store.sqlite import SqliteStore
from reelqueue.ui.dashboard import compose_cards
from reelqueue.ui.gallery import badge
from reelqueue.ui.jobs_data import JobTable
from reelqueue.ui.jobs_model import COL_STATE, JobTableModel

pytestmark = pytest.mark.integration

T = TypeVar("T")
NOW = time.time()
COOL_UNTIL = NOW + 3600
LEASE = ", claim_token = 'c', lease_owner = 'gone', lease_until = 1, account = 'busy'"
# job name -> (state, the rest of its UPDATE): every state, and its special cases
JOBS: dict[str, tuple[str, str]] = {
    "queued": ("QUEUED", ""),
    "claimed": ("CLAIMED", LEASE),
    "submitting": ("SUBMITTING", LEASE + ", client_token = 't1'"),
    "rendering": ("RENDERING", LEASE + ", client_token = 't2', provider_job_id = 'g2'"),
    "at-provider": ("RENDERING", LEASE + ", client_token = 't3', provider_job_id = 'g3', "
                    "sub_status = 'queued'"),
    "throttled": ("RENDERING", LEASE + ", client_token = 't4', provider_job_id = 'g4', "
                  "sub_status = 'throttled'"),
    "running": ("RENDERING", LEASE + ", client_token = 't5', provider_job_id = 'g5', "
                "sub_status = 'running'"),
    "reattached": ("RENDERING", LEASE + ", client_token = 't6', provider_job_id = 'g6', "
                   "sub_status = 'reattached'"),
    "downloading": ("DOWNLOADING", LEASE + ", client_token = 't7', provider_job_id = 'g7'"),
    "retry-wait": ("RETRY_WAIT", ", run_after = 9e9, attempts = 1, "
                   "error_label = 'timed out', error_message = 'slow'"),
    "completed": ("COMPLETED", ", finished_at = 1, output_size = 1, output_sha256 = 'ab', "
                  "client_token = 't8', provider_job_id = 'g8'"),
    "failed": ("FAILED", ", finished_at = 1, error_label = 'content policy', "
               "error_message = 'refused'"),
    "cancelled": ("CANCELLED", ", finished_at = 1"),
    "unknown": ("PARKED", ", client_token = 't9', error_label = "
                f"'{ErrorLabel.SUBMIT_UNKNOWN.value}', error_message = 'lost'"),
    "crash-parked": ("PARKED", ", client_token = 't10', provider_job_id = 'g10', "
                     f"error_label = '{ErrorLabel.PARKED.value}', error_message = 'crashed'"),
}
ACCOUNTS = {"busy": "rendering", "idle": "ready", "cooling": "rate limited until",
            "rejected": "key rejected", "broke": "out of credits", "off": "paused",
            "capped": "daily cap reached"}


@pytest.fixture
def ctx(tmp_path: Path) -> AppContext:
    ctx = AppContext(data_dir=tmp_path / "data", videos_dir=tmp_path / "videos")
    ctx.data_dir.mkdir(parents=True)
    store = SqliteStore.open(ctx.journal_path, now=NOW)
    try:
        for name in ACCOUNTS:
            store.add_account(AccountSpec(name, "mock", 20), NOW)
        store.set_account_status("cooling", AccountStatus.RATE_LIMITED, NOW,
                                 cooldown_until=COOL_UNTIL)
        store.set_account_status("rejected", AccountStatus.KEY_REJECTED, NOW)
        store.set_account_status("broke", AccountStatus.OUT_OF_CREDITS, NOW)
        store.update_account("off", NOW, enabled=False)
        store.update_account("capped", NOW, settings={"daily_cap": 0.0})
        batch = store.create_batch(BatchSpec("shots", "s.csv", "shots"), NOW)
        store.add_jobs(batch.id, [JobSpec(name, "p", "mock", f"shots/{name}.mp4",
                                          name=name)
                                  for name in JOBS], NOW)
    finally:
        store.close()
    db = sqlite3.connect(ctx.journal_path)
    with db:
        for name, (state, rest) in JOBS.items():
            db.execute(f"UPDATE jobs SET state = '{state}'{rest} WHERE job_key = ?", (name,))
    db.close()
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


async def _window(session: Session) -> dict[str, dict[str, str]]:
    """The window's names: the table's State column, the gallery's badges, the cards'
    chips (read as its controller reads them)."""
    table = JobTable()
    table.append(await views.job_rows(session))
    model = JobTableModel(table)
    state_column = {model.row_at(i).name: model.data(model.index(i, COL_STATE))
                    for i in range(model.rowCount())}
    badges = {item.name: badge(item)[0] for item in await gallery_items(session, 1)}
    summaries = await views.accounts(session)
    rows = [s.account for s in summaries]
    cards = compose_cards(table, summaries, {}, time.time(),
                          keys_not_here=team.keys_not_here(session, rows),
                          to_confirm=team.keys_to_confirm(session, rows),
                          money=await status.money(session))
    return {"table": state_column, "gallery": badges,
            "accounts": {card.name: card.chip()[0] for card in cards}}


async def _api(session: Session) -> dict[str, dict[str, str]]:
    """The API's names: its job and account bodies, built by its own functions from what
    its services (application.remote) read."""
    jobs = await session.journal.list_jobs()
    summaries = await views.accounts(session)
    words = await status.account_states_now(session, summaries, await status.money(session))
    return {"jobs": {j.name: job_json(j)["state_words"]["name"] for j in jobs},
            "accounts": {s.account.name: account_json(s, words[s.account.name])
                         ["state_words"]["name"] for s in summaries}}


def _cli(ctx: AppContext, capsys: pytest.CaptureFixture[str]) -> tuple[dict[str, Any], str]:
    argv = ["--data-dir", str(ctx.data_dir), "--videos-dir", str(ctx.videos_dir), "status"]
    assert cli_main.main([*argv, "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert cli_main.main([*argv, "--limit", "100"]) == 0
    return data, capsys.readouterr().out


def test_the_window_the_cli_and_the_api_give_each_state_the_same_name(
        ctx: AppContext, capsys: pytest.CaptureFixture[str], qapp: Any) -> None:
    window = on_journal(ctx, _window)
    api = on_journal(ctx, _api)
    data, text = _cli(ctx, capsys)
    cli_jobs = {j["name"]: j["state_words"]["name"] for j in data["jobs"]}
    cli_accounts = {a["name"]: a["state_words"]["name"] for a in data["accounts"]}

    expected = {name: job_state_words(state, *_special(rest)).name
                for name, (state, rest) in JOBS.items()}
    # each case its own name; the provider's "running" is what "rendering" says
    assert expected["running"] == expected["rendering"] == "rendering"
    assert len(set(expected.values())) == len(JOBS) - 1
    assert expected["unknown"] == "outcome unknown" and expected["crash-parked"] == "parked"
    assert window["table"] == expected
    assert window["gallery"] == expected
    assert cli_jobs == expected
    assert api["jobs"] == expected
    job_lines = {line.split()[0]: line for line in text.splitlines()
                 if line.strip().startswith("#")}
    assert len(job_lines) == len(JOBS)
    for job in data["jobs"]:  # the text lines say the same names
        assert f" {job['state_words']['name']} " in job_lines[f"#{job['id']}"]

    assert window["accounts"] == cli_accounts == api["accounts"]
    for name, said in ACCOUNTS.items():
        assert window["accounts"][name].startswith(said), (name, window["accounts"][name])
    for name, said in cli_accounts.items():
        assert f"running, {said}" in text, (name, said)


def _special(rest: str) -> tuple[str | None, str | None, str | None]:
    """(sub_status, error_label, provider_job_id) of a job's UPDATE in :data:`JOBS`."""
    fields = dict(part.strip().split(" = ", 1) for part in rest.split(", ") if " = " in part)

    def value(key: str) -> str | None:
        return fields[key].strip("'") if key in fields else None

    return value("sub_status"), value("error_label"), value("provider_job_id")
