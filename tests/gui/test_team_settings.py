"""Settings -> "Team queue" (issue 15): the address is kept in the window's settings
without a password (one in the address is refused), a password typed goes to this
machine's keyring only, and the next start opens the team queue."""

from __future__ import annotations

import json
from dataclasses import replace

from PySide6.QtWidgets import QLabel

from reelqueue.application import team
from reelqueue.application.context import AppContext
from reelqueue.application.team import database_key_ref
from reelqueue.cli.context import CliContext
from reelqueue.credentials import MemoryKeyring
from reelqueue.credentials.keystore import SERVICE
from reelqueue.store.postgres_support import describe_dsn
from reelqueue.ui.app import window_context
from reelqueue.ui.settings import SETTINGS_NAME, Settings, load_settings
from reelqueue.ui.settings_dialog import SettingsDialog
from tests import pgserver
from tests.gui.conftest import WindowHarness, on_qloop, until
from tests.team.harness import drop_database, new_database

SECRET = "s3cret-pw-8841"


def test_an_address_with_a_password_is_refused_and_not_saved(qtbot: object) -> None:
    dialog = SettingsDialog(Settings(theme="light"), "/videos")
    saved: list[Settings] = []
    dialog.saved.connect(saved.append)
    dialog.team_store.setText(f"postgresql://team:{SECRET}@db.example/reelqueue")
    dialog._save()
    assert saved == []
    assert "carries a password" in dialog.team_note.text()
    assert SECRET not in dialog.team_note.text()
    dialog.team_store.setText("mysql://db.example/reelqueue")
    dialog._save()
    assert saved == [] and "PostgreSQL address" in dialog.team_note.text()
    # A bad value in a hand-edited file falls back to this machine's journal.
    assert Settings(team_store="postgresql://a:b@h/db").checked().team_store == ""
    dialog.deleteLater()


def test_the_note_says_it_applies_after_a_restart(qtbot: object) -> None:
    dialog = SettingsDialog(Settings(theme="light"), "/videos")
    sections = [label.text() for label in dialog.findChildren(QLabel)
                if label.property("role") == "section"]
    assert "TEAM QUEUE · APPLIES AFTER A RESTART" in sections
    assert "Applies after a restart" in dialog.team_store.toolTip()
    assert dialog.team_note.isHidden()  # only an address that cannot be saved shows it
    dialog.team_store.setText("postgresql://team@db.example:5433/reelqueue?sslmode=verify-full")
    assert dialog.values().team_store == ("postgresql://team@db.example:5433/reelqueue"
                                          "?sslmode=verify-full")
    dialog.deleteLater()


@on_qloop
async def test_the_team_queue_is_saved_and_opened_at_the_next_start(
        windows: WindowHarness, app_ctx: CliContext, memory_keyring: MemoryKeyring,
        pg_server: pgserver.Server | str) -> None:
    if isinstance(pg_server, str):
        pgserver.unavailable(pg_server)
    assert isinstance(pg_server, pgserver.Server)
    url = new_database(pg_server.dsn)
    try:
        ctl = await windows.open(app_ctx, start=False)
        assert not team.is_team_session(ctl.session.app)
        dialog = ctl.keeper.show_settings()
        dialog.team_store.setText(url)
        dialog.team_password.setText(SECRET)
        dialog._save()
        await until(lambda: ctl.window.banners.get("team") is not None)
        banner = ctl.window.banners.get("team")
        assert banner is not None and banner.text == (
            f"Saved the password of {describe_dsn(url)} in this machine's keyring.")
        assert SECRET not in banner.text
        raw = json.loads((app_ctx.data_dir / SETTINGS_NAME).read_text("utf-8"))
        assert raw["team_store"] == url
        assert SECRET not in (app_ctx.data_dir / SETTINGS_NAME).read_text("utf-8")
        assert memory_keyring.get_password(SERVICE, database_key_ref(url)) == SECRET
        restart = ctl.window.banners.get("team-restart")
        assert restart is not None and "next time ReelQueue starts" in restart.text
        assert not team.is_team_session(ctl.session.app)  # this run stays on the journal it opened
        await windows.close(ctl)

        # The next start: the window opens the team queue from its settings.
        settings = load_settings(app_ctx.data_dir)
        ctx = window_context(app_ctx, settings)
        assert isinstance(ctx, AppContext) and ctx.store_url == url
        assert window_context(replace(app_ctx, store_url="postgresql://x@elsewhere/db"),
                              settings).store_url == "postgresql://x@elsewhere/db"
        again = await windows.open(ctx, start=False, settings=settings)
        assert team.is_team_session(again.session.app) and again.window.instances_action.isVisible()
        await windows.close(again)
    finally:
        drop_database(pg_server.dsn, url)
