"""The window on a team queue (issue 15) on a real throwaway PostgreSQL server: the
Instances view lists the machines of the registry (a silent one said to be so), and an
account whose key is not on this machine says that, never a key error."""

from __future__ import annotations

import asyncio
import re
import socket
import time
import uuid
from collections.abc import Iterator
from dataclasses import replace

import psycopg
import pytest
from PySide6.QtCore import Qt, QTimer

from reelqueue.application import team
from reelqueue.cli.context import CliContext
from reelqueue.domain.models import AccountSpec, BatchSpec, JobSpec
from reelqueue.store.base import ClaimParams
from reelqueue.store.postgres import PostgresStore
from reelqueue.ui.accounts_view import KEY_NOT_HERE
from reelqueue.ui.controller import AppController
from reelqueue.ui.instances import InstancesDialog
from reelqueue.ui.jobs_model import COL_OUTPUT
from reelqueue.ui.main_window import MainWindow
from reelqueue.ui.session import WindowSession
from reelqueue.ui.settings import Settings
from reelqueue.ui.unreachable import LOCAL_QUEUE_EXIT
from tests import pgserver
from tests.gui.conftest import WindowHarness, on_qloop, save_screenshot, until
from tests.team.harness import drop_database, new_database


@pytest.fixture
def team_ctx(pg_server: pgserver.Server | str, app_ctx: CliContext) -> Iterator[CliContext]:
    """A window context on a fresh team database (dropped afterwards)."""
    if isinstance(pg_server, str):
        pgserver.unavailable(pg_server)
    assert isinstance(pg_server, pgserver.Server)
    url = new_database(pg_server.dsn)
    try:
        yield replace(app_ctx, store_url=url)
    finally:
        drop_database(pg_server.dsn, url)


def other_machines(url: str, now: float) -> None:
    """Two machines of the team: box-a heard from 12 s ago, box-b silent for 200 s (more
    than the 60 s lease) with two renders in flight when it went quiet."""
    store = PostgresStore.open(url, now=now)
    try:
        store.register_instance("inst-a", host="box-a", pid=101, version="9.9.1",
                                providers=["mock", "sample"])
        store.register_instance("inst-b", host="box-b", pid=202, version="9.9.1")
    finally:
        store.close()
    with psycopg.connect(url, autocommit=True) as db:
        db.execute("UPDATE instances SET heartbeat_at = %s, live_renders = 1 "
                   "WHERE id = 'inst-a'", (now - 12,))
        db.execute("UPDATE instances SET heartbeat_at = %s, live_renders = 2 "
                   "WHERE id = 'inst-b'", (now - 200,))


@on_qloop
async def test_the_instances_view_says_which_provider_no_running_machine_has(
        windows: WindowHarness, team_ctx: CliContext) -> None:
    """A job of a provider no running machine has (its plug-in installed nowhere): the
    Instances view says so under its summary (issue 36)."""
    assert team_ctx.store_url is not None
    store = PostgresStore.open(team_ctx.store_url, now=time.time())
    try:
        batch = store.create_batch(BatchSpec("b", "s.csv", "out"), time.time())
        store.add_jobs(batch.id, [JobSpec("k0", "a paper boat", "not-installed",
                                          "out/0.mp4", row_number=2)], time.time())
    finally:
        store.close()
    ctl = await windows.open(team_ctx, start=False)
    ctl.window.instances_action.trigger()
    dialog = ctl.keeper.instances
    assert isinstance(dialog, InstancesDialog)
    await until(lambda: "not-installed" in dialog.summary.text())
    assert ("1 job waits for provider not-installed, which no running machine has"
            in dialog.summary.text())
    await windows.close(ctl)


@on_qloop
async def test_the_instances_view_lists_the_machines_and_says_which_went_silent(
        windows: WindowHarness, team_ctx: CliContext) -> None:
    assert team_ctx.store_url is not None
    other_machines(team_ctx.store_url, time.time())
    ctl = await windows.open(team_ctx, start=False)
    assert team.is_team_session(ctl.session.app) and ctl.window.instances_action.isVisible()

    ctl.window.instances_action.trigger()
    dialog = ctl.keeper.instances
    assert isinstance(dialog, InstancesDialog)
    await until(lambda: dialog.table.rowCount() == 3)
    rows = {dialog.cell_text(r, 0): [dialog.cell_text(r, c) for c in range(7)]
            for r in range(3)}
    this = [host for host in rows if host.endswith("(this window)")]
    assert len(this) == 1, rows  # the window registered its own engine

    box_a = rows["box-a"]
    assert box_a[1:3] == ["101", "9.9.1"]
    match = re.fullmatch(r"(\d+) s ago", box_a[4])
    assert match and 12 <= int(match.group(1)) < 60, box_a
    assert box_a[5] == "1"
    assert rows["box-b"][4] == "not heard from for 3 min — its renders are taken over"
    assert rows["box-b"][5] == "2"
    # Which machine has which provider (issue 36): box-b said none (an older version).
    assert box_a[6] == "providers mock, sample"
    assert rows["box-b"][6] == "providers unknown"
    assert rows[this[0]][6].startswith("providers ") and "mock" in rows[this[0]][6]
    assert re.fullmatch(r"just now|\d+ s ago", rows[this[0]][4]), rows[this[0]]
    # Running machines first, the silent one last; the summary counts only the running.
    assert dialog.cell_text(2, 0) == "box-b"
    assert dialog.summary.text().startswith("2 machines running, 1 render in flight")
    assert dialog.summary.text().endswith("; 1 machine not heard from.")
    save_screenshot(dialog, "team-instances")

    # Refreshed on the tick: box-b comes back.
    with psycopg.connect(team_ctx.store_url, autocommit=True) as db:
        db.execute("UPDATE instances SET heartbeat_at = %s WHERE id = 'inst-b'",
                   (time.time() - 3,))
    await until(lambda: any(dialog.cell_text(r, 0) == "box-b"
                            and dialog.cell_text(r, 4).endswith(" s ago") for r in range(3)))

    # Closing the window says goodbye in the registry.
    await windows.close(ctl)
    with psycopg.connect(team_ctx.store_url) as db:
        stopped = db.execute("SELECT host FROM instances WHERE stopped_at IS NOT NULL"
                             ).fetchall()
    assert len(stopped) == 1 and stopped[0][0] not in ("box-a", "box-b")


@on_qloop
async def test_a_team_account_whose_key_is_elsewhere_says_so(
        windows: WindowHarness, team_ctx: CliContext) -> None:
    assert team_ctx.store_url is not None
    store = PostgresStore.open(team_ctx.store_url, now=time.time())
    try:  # the team's account; its key is in another machine's keyring, not here
        store.add_account(AccountSpec(name="studio-runway", provider="runway", capacity=3,
                                      key_ref="studio-runway"), time.time())
    finally:
        store.close()
    ctl = await windows.open(team_ctx, start=True)
    await until(lambda: "studio-runway" in ctl.window.accounts.cards)
    card = ctl.window.accounts.cards["studio-runway"]
    await until(lambda: card.chip.text() == KEY_NOT_HERE)
    assert card.data is not None and not card.data.key_here and card.data.team
    assert "other machines render for it" in card.chip.toolTip()
    assert "key missing" not in card.chip.text() and "rejected" not in card.chip.text()
    assert card.team_label.text() == ("0 of 3 running across all machines · key not on "
                                      "this machine — other machines render for it")
    assert card.renders_head.text() == "CURRENT RENDERS · THIS MACHINE"
    # The engine never marked the shared account for everyone.
    with psycopg.connect(team_ctx.store_url) as db:
        (status,) = db.execute("SELECT status FROM accounts WHERE name = 'studio-runway'"
                               ).fetchone() or (None,)
    assert status == "ready"


@on_qloop
async def test_a_local_journal_offers_no_instances_view(
        windows: WindowHarness, app_ctx: CliContext) -> None:
    ctl = await windows.open(app_ctx, start=False)
    assert not team.is_team_session(ctl.session.app)
    assert not ctl.window.instances_action.isVisible()


def _unopened(windows: WindowHarness, ctx: CliContext) -> AppController:
    """A window whose opening the test drives (the harness's ``open`` waits for the jobs
    to load, which an unreachable database never does)."""
    window = MainWindow()
    controller = AppController(window, WindowSession(ctx, Settings(theme="light")))
    windows.opened.append(controller)
    window.show()
    return controller


@on_qloop
async def test_an_unreachable_team_database_is_said_so_and_opens_once_it_answers(
        windows: WindowHarness, pg_server: pgserver.Server | str, app_ctx: CliContext) -> None:
    """Issue 21: the window opened on an unreachable team database showed "No accounts
    yet" and "Drop a spreadsheet" (the work looked gone) with CLI words, and stayed so.
    Now it says which database and why in place of the queue, keeps trying, and opens the
    queue once the database answers."""
    if isinstance(pg_server, str):
        pgserver.unavailable(pg_server)
    assert isinstance(pg_server, pgserver.Server)
    name = f"team_{uuid.uuid4().hex[:12]}"  # not created yet: the server refuses it
    url = pg_server.dsn.rsplit("/", 1)[0] + f"/{name}"
    ctl = _unopened(windows, replace(app_ctx, store_url=url))
    window = ctl.window
    opening = asyncio.ensure_future(ctl.open(start=False))
    try:
        await until(lambda: window.unreachable.isVisible(), 30)
        assert not window.jobs_panel.isVisible() and not window.accounts.isVisible()
        assert not window.empty.isVisible()  # never "Drop a spreadsheet" over the work
        assert not window.import_action.isEnabled()
        page = window.unreachable
        assert page.title.text() == "The team database cannot be reached"
        assert name in page.detail.text() and "Nothing recorded there is lost" \
            in page.safe.text()
        assert "run the command again" not in page.detail.text()  # the window's words
        await until(lambda: page.status.text().startswith("Trying again in "), 10)
        save_screenshot(window, "team-unreachable")
        with psycopg.connect(pg_server.dsn, autocommit=True) as db:
            db.execute(f'CREATE DATABASE "{name}"')
        page.retry_button.click()
        report = await asyncio.wait_for(opening, 120)
        assert report is not None
        assert not page.isVisible() and window.jobs_panel.isVisible()
        assert window.import_action.isEnabled() and team.is_team_session(ctl.session.app)
        await windows.close(ctl)  # before its database goes
    finally:
        opening.cancel()
        drop_database(pg_server.dsn, url)


@on_qloop
async def test_the_local_queue_can_be_opened_instead(windows: WindowHarness,
                                                    app_ctx: CliContext) -> None:
    closed = socket.socket()
    closed.bind(("127.0.0.1", 0))
    port = closed.getsockname()[1]
    closed.close()  # nothing listens there
    ctl = _unopened(windows, replace(app_ctx,
                                     store_url=f"postgresql://rq@127.0.0.1:{port}/team"))
    codes: list[int] = []
    ctl.finished.connect(codes.append)
    opening = asyncio.ensure_future(ctl.open(start=False))
    await until(lambda: ctl.window.unreachable.isVisible(), 30)
    assert f"127.0.0.1:{port}" in ctl.window.unreachable.detail.text()
    ctl.window.unreachable.local_button.click()
    assert await asyncio.wait_for(opening, 30) is None
    assert codes == [LOCAL_QUEUE_EXIT] and ctl.session.closed
    # N2: the gallery's refresh timer ticked on (from the controller's making) after the
    # window went: two tracebacks a second about its deleted QComboBox and a red "Something
    # went wrong" banner in the local queue's window. Nothing of this window ticks now.
    ticking = [timer.objectName() or repr(timer) for timer in ctl.findChildren(QTimer)
               if timer.isActive()]
    assert ticking == []


@on_qloop
async def test_the_job_table_follows_the_other_machines_work(
        windows: WindowHarness, team_ctx: CliContext) -> None:
    """Issue 21: the window's job table showed only what its own engine did; rows another
    machine added or finished stayed as they were read. Now a team window follows the
    ledger (application.views.ChangeFollower) and shows where each file is."""
    assert team_ctx.store_url is not None
    ctl = await windows.open(team_ctx, start=False)
    table = ctl.model.table
    assert len(table) == 0
    other = PostgresStore.open(team_ctx.store_url, now=time.time())
    try:  # another machine imports a batch and renders its first job
        now = time.time()
        batch = other.create_batch(BatchSpec("elsewhere", "sheet.csv", "elsewhere"), now)
        specs = [JobSpec(job_key=f"k{i}", prompt=f"a fox {i}", provider="mock", params={},
                         output_path=f"elsewhere/{i:03}_fox.mp4", row_number=i + 2,
                         name=f"fox{i}") for i in range(3)]
        other.add_jobs(batch.id, specs, now)
        await until(lambda: len(table) == 3, 60)  # added there: shown here
        other.add_account(AccountSpec("box-b-mock", "mock", 1), now)
        claim = other.claim_next_job(ClaimParams("box-b-mock", "box-b-instance", now, 60.0))
        assert claim is not None
        token = claim.token
        assert other.mark_submitting(token, "ct-1", now)
        assert other.record_submitted(token, "mock-render-1", now)
        assert other.mark_downloading(token, now)
        assert other.mark_completed(token, size=10, sha256="ab" * 32, cost=None, now=now)
        with psycopg.connect(team_ctx.store_url, autocommit=True) as db:
            db.execute("UPDATE jobs SET output_host = 'box-b' WHERE id = %s", (token.job_id,))
        other.note("moved", time.time(), job_id=token.job_id)
    finally:
        other.close()
    await until(lambda: (row := table.row(token.job_id)) is not None
                and row.state == "COMPLETED" and row.host == "box-b", 60)
    view_row = ctl.model.view_row_of(token.job_id)
    shown = ctl.model.index(view_row, COL_OUTPUT).data()
    assert shown == "000_fox.mp4 · on box-b", shown
    tip = ctl.model.index(view_row, COL_OUTPUT).data(Qt.ItemDataRole.ToolTipRole)
    assert "another machine of the team holds this file" in tip
