"""The window fits the screen: size and place clamped to the free area at first show and on
restore, dialogs kept on screen, account cards fold when room is short or accounts many.

The pure clamp is tested on the screens of issue 13; real windows are started on a
simulated 1280x720 screen (this process, see conftest) and, in a child process, on
1920x1080 at 150 % (``QT_SCALE_FACTOR``) — a QApplication's screens are fixed at birth.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from PySide6.QtCore import QMargins, QRect, QSize
from PySide6.QtWidgets import QApplication, QDialog

from reelqueue.ui.accounts_view import AccountCardData
from reelqueue.ui.main_window import (
    FIRST_SHARE,
    MINIMUM_SIZE,
    PREFERRED_SIZE,
    MainWindow,
    fit_geometry,
    placement_store,
)

HERE = Path(__file__).parent
NO_FRAME = QMargins(0, 0, 0, 0)
TITLE_BAR = QMargins(1, 32, 1, 1)


def inside(rect: QRect, frame: QMargins, available: QRect) -> bool:
    return available.contains(rect.marginsAdded(frame))


# -- the pure clamp --------------------------------------------------------------------
@pytest.mark.parametrize("available", [
    QRect(0, 0, 1280, 720),          # 1280x720 at 100 %
    QRect(0, 0, 1280, 680),          # the same with a 40 px task bar
    QRect(0, 27, 1280, 693),         # 1920x1080 at 150 % with a top panel, in logical px
    QRect(1920, 0, 1280, 720),       # a second monitor right of the first
])
def test_first_start_fits_and_is_centred(available: QRect) -> None:
    rect = fit_geometry(available, None, frame=TITLE_BAR)
    assert inside(rect, TITLE_BAR, available)
    assert rect.width() >= MINIMUM_SIZE.width() and rect.height() >= MINIMUM_SIZE.height()
    room = available.marginsRemoved(TITLE_BAR)
    assert abs(rect.center().x() - room.center().x()) <= 1


@pytest.mark.parametrize("available", [QRect(0, 0, 1920, 1080), QRect(0, 0, 2560, 1400),
                                       QRect(1920, 0, 2560, 1400)])
def test_first_start_on_a_big_screen_takes_a_good_share_of_it(available: QRect) -> None:
    # At 1920x1080 the first window was 1320x860 (the preferred size whatever the screen):
    # it now takes most of a big screen, centred, never less than the preferred size.
    rect = fit_geometry(available, None, frame=TITLE_BAR)
    assert inside(rect, TITLE_BAR, available)
    room = available.marginsRemoved(TITLE_BAR)
    assert rect.width() >= FIRST_SHARE * room.width() - 1
    assert rect.height() >= FIRST_SHARE * room.height() - 1
    assert rect.size().expandedTo(PREFERRED_SIZE) == rect.size()
    assert abs(rect.center().x() - room.center().x()) <= 1


def test_a_window_saved_on_a_smaller_screen_grows_with_a_bigger_one() -> None:
    # N: placed on 1280x720 (1226x659), the window reopened at 1226x659 on 1920x1080.
    # It keeps its share of the screen instead.
    available = QRect(0, 0, 1920, 1080)
    saved_on = QRect(0, 0, 1280, 720)
    rect = fit_geometry(available, QRect(27, 30, 1226, 659), frame=TITLE_BAR,
                        saved_on=saved_on)
    assert inside(rect, TITLE_BAR, available)
    assert rect.width() >= 1226 * 1.5 - 2 and rect.height() >= min(659 * 1.5 - 2, 1047)
    # A window the user made small stays the same share of the screen, not the same pixels.
    small = fit_geometry(available, QRect(100, 100, 1000, 600), frame=TITLE_BAR,
                         saved_on=saved_on)
    assert small.size() == QSize(1500, 900)
    # The same screen (or a smaller one): the saved place, clamped as before.
    same = fit_geometry(saved_on, QRect(100, 80, 1000, 600), frame=TITLE_BAR,
                        saved_on=saved_on)
    assert same == QRect(100, 80, 1000, 600)


def test_saved_geometry_too_big_for_this_screen_is_clamped() -> None:
    # issue 13: at 1080p and 150 % the window opened 1979x1288, status bar off screen.
    available = QRect(0, 0, 1280, 720)
    rect = fit_geometry(available, QRect(-40, 10, 1979, 1288), frame=TITLE_BAR)
    assert inside(rect, TITLE_BAR, available)
    assert rect.size() == QSize(1278, 687)


def test_saved_geometry_that_fits_is_kept_exactly() -> None:
    wanted = QRect(100, 80, 1000, 600)
    assert fit_geometry(QRect(0, 0, 1280, 720), wanted, frame=TITLE_BAR) == wanted


def test_a_window_left_on_a_monitor_that_is_gone_comes_back() -> None:
    available = QRect(0, 0, 1280, 720)
    rect = fit_geometry(available, QRect(3000, 900, 1100, 640), frame=NO_FRAME)
    assert inside(rect, NO_FRAME, available) and rect.size() == QSize(1100, 640)


def test_a_screen_smaller_than_the_floor_still_gets_the_whole_window() -> None:
    available = QRect(0, 0, 800, 600)
    rect = fit_geometry(available, QRect(0, 0, 1320, 860), frame=NO_FRAME)
    assert rect == available


# -- real windows ----------------------------------------------------------------------
def cards(n: int, name: str = "account") -> list[AccountCardData]:
    return [AccountCardData(name=f"{name} {i}", provider_title="Built-in mock",
                            status="ready", enabled=True, capacity=4, live=1)
            for i in range(n)]


def show(window: MainWindow) -> None:
    window.show()
    QApplication.processEvents()


def close(window: MainWindow) -> None:
    window.allow_close = True
    window.close()
    window.deleteLater()
    QApplication.processEvents()


def test_window_on_a_1280x720_screen_fits_and_shows_status_bar_and_settings(
        themed_app: QApplication) -> None:
    window = MainWindow()
    window.accounts.set_accounts(cards(3))
    show(window)
    try:
        available = window.screen().availableGeometry()
        assert available.size() == QSize(1280, 720)  # the simulated screen (conftest)
        assert available.contains(window.frameGeometry())
        bar = window.statusBar()
        assert bar.isVisible() and window.rect().contains(bar.geometry())
        settings = window.toolbar.widgetForAction(window.settings_action)
        assert settings is not None and settings.isVisible()
        assert window.rect().contains(
            settings.geometry().translated(window.toolbar.pos()))
        # The cards fold on a short screen, so the table keeps room for its rows.
        assert window.accounts.compact
        # Whichever is shown (the jobs table, or the empty state before any import).
        shown = window.empty if window.empty.isVisible() else window.table.parentWidget()
        assert shown.isVisible() and shown.height() >= 200, shown.height()
    finally:
        close(window)


def test_place_and_card_mode_are_remembered_and_reclamped(themed_app: QApplication) -> None:
    first = MainWindow()
    show(first)
    first.setGeometry(QRect(60, 70, 1000, 600))
    first.compact_button.setChecked(False)  # the user unfolds the cards
    assert not first.accounts.compact
    close(first)

    second = MainWindow()
    show(second)
    try:
        assert second.geometry() == QRect(60, 70, 1000, 600)
        assert not second.accounts.compact  # the user's choice beats the short screen
    finally:
        close(second)

    store = placement_store()
    store.setValue("window/geometry", "-50,-20,1979,1288")  # saved on a bigger screen
    store.sync()
    third = MainWindow()
    show(third)
    try:
        assert third.screen().availableGeometry().contains(third.frameGeometry())
    finally:
        close(third)

    # Saved on a smaller screen (853x480) than this one: the window takes the same share.
    store.setValue("window/geometry", "10,20,818,440")
    store.setValue("window/screen", "0,0,853,480")
    store.sync()
    fourth = MainWindow()
    show(fourth)
    try:
        available = fourth.screen().availableGeometry()
        assert available.contains(fourth.frameGeometry())
        assert fourth.width() >= 1200 and fourth.height() >= 640, fourth.geometry()
    finally:
        close(fourth)
    # Untouched, the place saved on the small screen stays (not this screen's clamp).
    assert store.value("window/geometry") == "10,20,818,440"
    assert store.value("window/screen") == "0,0,853,480"

    # Saved on a big screen, shown on this small one and closed untouched: the big
    # screen's place is kept, not the clamp (it came back filling the big screen).
    store.setValue("window/geometry", "60,70,1800,1000")
    store.setValue("window/screen", "0,0,2560,1440")
    store.sync()
    fifth = MainWindow()
    show(fifth)
    assert fifth.width() <= 1280
    close(fifth)
    assert store.value("window/geometry") == "60,70,1800,1000"
    # Moved or resized by the user: that is remembered, with the screen it was on.
    sixth = MainWindow()
    show(sixth)
    sixth.setGeometry(QRect(40, 50, 1000, 600))
    close(sixth)
    assert store.value("window/geometry") == "40,50,1000,600"
    assert store.value("window/screen") == "0,0,1280,720"


def test_many_accounts_become_a_strip_of_small_cards(themed_app: QApplication) -> None:
    window = MainWindow()
    window.resize(1200, 660)
    show(window)
    try:
        window.compact_button.setChecked(False)
        window._compact_choice = None  # back to automatic
        window.accounts.set_accounts(cards(2))
        window.accounts.set_accounts(cards(7))
        assert window.accounts.compact and window.compact_button.isChecked()
        QApplication.processEvents()
        folded = window.accounts.height()
        window.compact_button.setChecked(False)
        QApplication.processEvents()
        assert window.accounts.height() > folded + 120  # the full cards are much taller
    finally:
        close(window)


def test_a_tall_dialog_is_kept_on_the_screen(themed_app: QApplication) -> None:
    """Every dialog is the window's child; the window fits each one as it shows."""
    window = MainWindow()
    show(window)
    dialog = QDialog(window)
    dialog.resize(900, 1100)
    dialog.show()
    QApplication.processEvents()
    try:
        available = dialog.screen().availableGeometry()
        assert available.contains(dialog.frameGeometry())
        assert dialog.height() < 720
    finally:
        dialog.close()
        dialog.deleteLater()
        close(window)


CHILD = r"""
import json, sys
from PySide6.QtCore import QSettings
from PySide6.QtWidgets import QApplication
from reelqueue.ui import theme
app = QApplication(sys.argv[:1])
QSettings.setPath(QSettings.Format.IniFormat, QSettings.Scope.UserScope, sys.argv[1])
theme.install(app, "light")
from reelqueue.ui.accounts_view import AccountCardData
from reelqueue.ui.main_window import MainWindow, placement_store
if sys.argv[2] == "saved":
    placement_store().setValue("window/geometry", "0,0,1979,1288")
    placement_store().sync()
window = MainWindow()
window.accounts.set_accounts([AccountCardData(name=f"a{i}", provider_title="mock",
    status="ready", enabled=True, capacity=4, live=0) for i in range(3)])
window.show()
app.processEvents()
bar = window.statusBar()
settings = window.toolbar.widgetForAction(window.settings_action)
rect = lambda r: [r.x(), r.y(), r.width(), r.height()]
# The same clipping walk as test_no_clipped_text, at this scale (fonts hint differently).
from tests.gui.test_no_clipped_text import NO_KEYRING, big_cards, clipped
from reelqueue.ui.account_dialog import AccountDialog
from reelqueue.ui.settings import Settings
from reelqueue.ui.settings_dialog import SettingsDialog
window.accounts.set_accounts(big_cards())
app.processEvents()
found = clipped(window)
account = AccountDialog(set(), window)
account.set_result(False, NO_KEYRING)
settings_dialog = SettingsDialog(Settings(), "/videos", window)
for dialog in (account, settings_dialog):
    dialog.show()
    for _ in range(3):
        app.processEvents()
    found += clipped(dialog)
    dialog.close()
print(json.dumps({
    "clipped": found,
    "available": rect(window.screen().availableGeometry()),
    "dpr": window.devicePixelRatio(),
    "frame": rect(window.frameGeometry()),
    "status_bar_inside": window.rect().contains(bar.geometry()) and bar.isVisible(),
    "settings_inside": window.rect().contains(
        settings.geometry().translated(window.toolbar.pos())) and settings.isVisible(),
}))
"""


@pytest.mark.parametrize(("screen", "scale"), [((1280, 720), "1"), ((1920, 1080), "1.5")])
@pytest.mark.parametrize("start", ["first", "saved"])
def test_real_window_in_a_child_process_fits(tmp_path: Path, screen: tuple[int, int],
                                             scale: str, start: str) -> None:
    config = tmp_path / "screen.json"
    config.write_text(json.dumps({"windowFrameMargins": True, "screens": [
        {"name": "s", "x": 0, "y": 0, "width": screen[0], "height": screen[1],
         "logicalDpi": 96, "logicalBaseDpi": 96, "dpr": 1}]}))
    env = dict(os.environ, QT_QPA_PLATFORM=f"offscreen:configfile={config}",
               QT_SCALE_FACTOR=scale, QT_API="pyside6")
    done = subprocess.run([sys.executable, "-c", CHILD, str(tmp_path / "settings"), start],
                          env=env, capture_output=True, text=True, timeout=120, check=False,
                          cwd=HERE.parents[1])
    assert done.returncode == 0, done.stderr[-2000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["available"] == [0, 0, 1280, 720]  # both are 1280x720 logical pixels
    assert result["dpr"] == float(scale)
    x, y, w, h = result["frame"]
    assert x >= 0 and y >= 0 and x + w <= 1280 and y + h <= 720
    assert result["status_bar_inside"] and result["settings_inside"]
    assert result["clipped"] == []
