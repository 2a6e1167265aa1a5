"""The window's job detail shows the evidence for an unknown create (issue 32 item 6): the
ledger's last reading of the provider's counts, and "Read the provider's counts", which
reads them in the background and updates the line. It says what ``status --json`` says,
and creates nothing."""

from __future__ import annotations

import asyncio
import json

import pytest
from PySide6.QtCore import Qt

from reelqueue.application import accounts
from reelqueue.application.accounts import AccountDraft
from reelqueue.application.create_evidence import NOT_READ, READ_ACTION
from reelqueue.application.session import Session
from reelqueue.cli.context import CliContext
from reelqueue.domain.states import JobState
from tests.gui.conftest import WindowHarness, on_qloop, until
from tests.spend.conftest import KEY, Journal, RunwayFake, today, usage_body
from tests.spend.conftest import runway_fake as runway_fake

pytestmark = pytest.mark.gui


@on_qloop
async def test_the_job_detail_reads_the_counts_and_says_what_status_says(
        windows: WindowHarness, app_ctx: CliContext, runway_fake: RunwayFake,
        capsys: pytest.CaptureFixture[str]) -> None:
    session = Session(app_ctx)
    await session.open_journal()
    try:
        await accounts.add_account(session, AccountDraft(
            "rw", "runway", 5, KEY, runway_fake.url), check=False)
    finally:
        await session.stop()
    journal = Journal(app_ctx)
    (lost,) = journal.started(0, lost=1)
    runway_fake.answer(usage_body(**{"gen4.5": 60}))

    controller = await windows.open(app_ctx, start=False)
    dialog = controller.keeper.show_job(lost)
    await until(lambda: dialog.job is not None, 10)
    assert dialog.resolve_box.isVisible()
    assert dialog.evidence_text.text() == NOT_READ
    assert dialog.evidence_text.textFormat() == Qt.TextFormat.PlainText  # a row's text
    assert dialog.read_counts.text() == READ_ACTION and dialog.read_counts.isEnabled()
    assert runway_fake.requests == [], "opening the detail asked the provider"

    dialog.read_counts.click()
    assert not dialog.read_counts.isEnabled()  # one reading at a time
    await until(lambda: "billed" in dialog.evidence_text.text(), 15)
    await until(dialog.read_counts.isEnabled, 10)
    shown = dialog.evidence_text.text()
    assert "the provider counted it: billed (60 credits used on " + today() in shown

    capsys.readouterr()
    # the command line in its own thread: it runs its own event loop
    assert await asyncio.to_thread(journal.cli, "status", "--json") == 0
    data = json.loads(capsys.readouterr().out)
    said = next(j for j in data["jobs"] if j["id"] == lost)["create_evidence"]
    assert said["words"] == shown and said["verdict"] == "billed"
    assert said["provider_units"] == 60 and said["creates_in_window"] == 1

    # a failed read says so, and the line follows the newest reading
    runway_fake.answer({"error": "down"}, status=503)
    dialog.read_counts.click()
    await until(lambda: "unavailable" in dialog.evidence_text.text(), 15)
    assert runway_fake.creates() == []
    store = journal.store()
    try:
        job = store.get_job(lost)
        assert job is not None and job.state == JobState.PARKED
        assert job.provider_job_id is None and len(store.list_jobs()) == 1
    finally:
        store.close()
