"""Dark mode switched live: icons already on the toolbar and in the window take the new
theme's colours (issue 13 item 10: toolbar icons stayed dark on dark)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from PySide6.QtCore import QSize
from PySide6.QtGui import QColor, QIcon, QPixmap
from PySide6.QtWidgets import QApplication

from reelqueue.ui import theme
from reelqueue.ui.main_window import MainWindow


def ink(pixmap: QPixmap) -> QColor:
    """The colour of the most opaque pixel (the icon's stroke)."""
    image = pixmap.toImage()
    best = QColor(0, 0, 0, 0)
    for y in range(image.height()):
        for x in range(image.width()):
            pixel = image.pixelColor(x, y)
            if pixel.alpha() > best.alpha():
                best = pixel
    assert best.alpha() > 200, "the icon drew nothing"
    return QColor(best.red(), best.green(), best.blue())


@pytest.fixture
def window(themed_app: QApplication) -> Iterator[MainWindow]:
    win = MainWindow()
    win.show()
    QApplication.processEvents()
    yield win
    theme.apply_theme(themed_app, "light")  # the session's theme for the other tests
    win.allow_close = True
    win.close()
    win.deleteLater()
    QApplication.processEvents()


def test_toolbar_and_empty_state_icons_follow_a_live_theme_switch(
        themed_app: QApplication, window: MainWindow) -> None:
    actions = (window.import_action, window.settings_action, window.folder_action)
    held = [action.icon() for action in actions]  # the QIcons the toolbar already holds
    for icon in held:
        assert ink(icon.pixmap(QSize(18, 18))) == QColor(theme.LIGHT.text)
    empty_before = ink(window.empty.icon_label.pixmap())
    assert empty_before == QColor(theme.LIGHT.muted)

    theme.apply_theme(themed_app, "dark")
    QApplication.processEvents()
    for icon in held:
        assert ink(icon.pixmap(QSize(18, 18))) == QColor(theme.DARK.text)
        assert ink(icon.pixmap(QSize(18, 18), QIcon.Mode.Disabled)) == QColor(theme.DARK.muted)
    assert ink(window.empty.icon_label.pixmap()) == QColor(theme.DARK.muted)
    button = window.toolbar.widgetForAction(window.settings_action)
    shot = button.grab().toImage()  # what the toolbar paints now: light on a dark bar
    icon_area = [shot.pixelColor(x, y).lightness() for x in range(4, 30)
                 for y in range(shot.height())]  # the icon sits left of the label
    assert max(icon_area) > QColor(theme.DARK.window).lightness() + 100


def test_a_disabled_start_button_does_not_look_pressable(window: MainWindow) -> None:
    """The unreachable-team screen disables Start, but it kept its accent fill (a new
    user clicked it and nothing happened): disabled, it is drawn greyed."""
    start = window.toolbar.widgetForAction(window.start_action)
    assert start is not None
    accent = QColor(theme.tokens().accent)

    def fill() -> QColor:
        QApplication.processEvents()
        image = start.grab().toImage()
        return image.pixelColor(3, image.height() // 2)

    window.start_action.setEnabled(True)  # the journal is open
    assert fill() == accent  # enabled: the accent
    window.show_unreachable("The team database cannot be reached", "why")
    assert not window.start_action.isEnabled()
    assert fill() != accent
