"""The window's About box: ReelQueue's version, the provider kinds it renders with, and
the provider plug-ins (issue 36 item 2): each one in use with its version, each skipped
one with the reason, or that they are off (``--no-plugins``). F1 opens it."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QDialog, QDialogButtonBox, QPlainTextEdit, QVBoxLayout, QWidget

from reelqueue import __version__
from reelqueue.application.providers import PluginReport, ProviderRegistry


def about_lines(providers: ProviderRegistry, plugins: PluginReport) -> list[str]:
    """What the box says, one line each (the same plug-in lines as ``status``)."""
    return [f"ReelQueue {__version__}",
            "Providers: " + ", ".join(info.title for info in providers),
            *plugins.lines()]


class AboutDialog(QDialog):
    """Attributes:
    text: the lines, read-only and selectable (for a bug report); it scrolls, so any
        number of plug-ins with long reasons fits the screen.
    """

    def __init__(self, providers: ProviderRegistry, plugins: PluginReport,
                 parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle("About ReelQueue")
        layout = QVBoxLayout(self)
        self.text = QPlainTextEdit("\n".join(about_lines(providers, plugins)))
        self.text.setReadOnly(True)
        self.text.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.text.setMinimumSize(520, 220)
        layout.addWidget(self.text)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close)
        buttons.rejected.connect(self.reject)
        layout.addWidget(buttons)
