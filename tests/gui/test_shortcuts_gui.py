"""The window's keyboard shortcuts (issue 34): Quit (Ctrl+Q, Cmd+Q on macOS), Import a
sheet (Ctrl+O), Find (Ctrl+F: the search box), Del (cancel the selected jobs; the cancel
flow asks), Ctrl+R (retry the selected jobs), Ctrl+G (table or gallery); each is named in
docs/ui.md."""

from __future__ import annotations

from pathlib import Path

import pytest
from PySide6.QtCore import QItemSelectionModel, Qt
from PySide6.QtGui import QKeySequence
from PySide6.QtWidgets import QApplication

from reelqueue.ui.jobs_data import stats_of
from reelqueue.ui.main_window import MainWindow
from tests.gui.test_models import make_row

DOCS = Path(__file__).resolve().parents[2] / "docs" / "ui.md"


def key(standard: QKeySequence.StandardKey) -> QKeySequence:
    return QKeySequence(standard)


@pytest.fixture
def window(themed_app: QApplication, qtbot):  # type: ignore[no-untyped-def]
    window = MainWindow()
    qtbot.addWidget(window)
    rows = [make_row(i, "FAILED" if i % 2 else "QUEUED") for i in range(1, 6)]
    window.model.add_rows(rows, stats_of(rows))
    window.show()
    window.activateWindow()
    qtbot.waitUntil(lambda: QApplication.activeWindow() is window)
    yield window
    window.allow_close = True


def test_each_action_has_its_shortcut(window: MainWindow) -> None:
    expected = {
        # The platform's Quit where it has one (offscreen and Windows have none).
        "quit": (window.quit_action, key(QKeySequence.StandardKey.Quit)
                 if QKeySequence.keyBindings(QKeySequence.StandardKey.Quit)
                 else QKeySequence("Ctrl+Q")),
        "import": (window.import_action, key(QKeySequence.StandardKey.Open)),
        "find": (window.find_action, key(QKeySequence.StandardKey.Find)),
        "cancel": (window.cancel_action, QKeySequence(Qt.Key.Key_Delete)),
        "retry selected": (window.retry_selected_action, QKeySequence("Ctrl+R")),
    }
    for name, (action, sequence) in expected.items():
        assert action.shortcut() == sequence, name
        assert action.isEnabled(), name
        # Reachable: a toolbar button or added to the window (a hidden action fires not).
        assert action in window.actions() or action in window.toolbar.actions(), name
        shown = sequence.toString(QKeySequence.SequenceFormat.NativeText)
        assert shown in action.toolTip(), name  # the tooltip teaches it


def test_the_shortcuts_do_what_they_say(window: MainWindow, qtbot) -> None:  # type: ignore[no-untyped-def]
    window.table.setFocus()
    qtbot.keyClick(window.table, Qt.Key.Key_F, Qt.KeyboardModifier.ControlModifier)
    qtbot.waitUntil(lambda: window.search.hasFocus())

    selection = window.table.selectionModel()
    for row in (0, 2):
        selection.select(window.model.index(row, 0), QItemSelectionModel.SelectionFlag.Select
                         | QItemSelectionModel.SelectionFlag.Rows)
    chosen = window.selected_job_ids()
    assert len(chosen) == 2
    window.table.setFocus()
    with qtbot.waitSignal(window.cancelAskRequested) as cancelled:  # it asks first
        qtbot.keyClick(window.table, Qt.Key.Key_Delete)
    assert cancelled.args == [chosen]
    with qtbot.waitSignal(window.retryRequested) as retried:
        qtbot.keyClick(window.table, Qt.Key.Key_R, Qt.KeyboardModifier.ControlModifier)
    assert retried.args == [chosen, None]
    with qtbot.waitSignal(window.importRequested):
        qtbot.keyClick(window.table, Qt.Key.Key_O, Qt.KeyboardModifier.ControlModifier)
    # Del in the search box deletes a character, never cancels jobs.
    window.search.setText("abc")
    window.search.setFocus()
    window.search.setCursorPosition(0)
    with qtbot.assertNotEmitted(window.cancelAskRequested):
        qtbot.keyClick(window.search, Qt.Key.Key_Delete)
    assert window.search.text() == "bc"
    with qtbot.waitSignal(window.closeRequested):
        qtbot.keyClick(window.table, Qt.Key.Key_Q, Qt.KeyboardModifier.ControlModifier)


def test_the_shortcuts_are_in_the_docs() -> None:
    text = DOCS.read_text(encoding="utf-8")
    for shortcut in ("Ctrl+Q", "Cmd+Q", "Ctrl+O", "Ctrl+F", "Del", "Ctrl+R", "Ctrl+G"):
        assert f"**{shortcut}**" in text, shortcut
