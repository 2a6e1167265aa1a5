"""Look and feel: the bundled font, a light and a dark palette, the style sheet, icons.

The theme follows the system's light/dark choice by default (Qt 6.5+
``styleHints().colorScheme()``) and can be forced in the settings. Widgets that paint
themselves read their colours from the palette and from :func:`tokens`, which picks the
semantic colours (success, warning, danger) that suit the palette's lightness.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from functools import cache, lru_cache
from pathlib import Path

from PySide6.QtCore import QByteArray, QLocale, QRect, QRectF, QSize, Qt
from PySide6.QtGui import (
    QColor,
    QFont,
    QFontDatabase,
    QGuiApplication,
    QIcon,
    QIconEngine,
    QPainter,
    QPalette,
    QPixmap,
)
from PySide6.QtSvg import QSvgRenderer
from PySide6.QtWidgets import QApplication

from reelqueue.resources import resources_dir
from reelqueue.ui import format as fmt

log = logging.getLogger(__name__)

FONT_FAMILY = "Inter"
FONT_FILES = ("Inter-Regular.otf", "Inter-Medium.otf", "Inter-SemiBold.otf", "Inter-Bold.otf")
BASE_POINT_SIZE = 10


@dataclass(frozen=True)
class Tokens:
    """The colours of one theme. Attributes name their use."""

    dark: bool
    window: str
    surface: str
    surface_alt: str
    text: str
    muted: str
    border: str
    accent: str
    accent_text: str
    success: str
    warning: str
    danger: str
    info: str
    neutral: str


LIGHT = Tokens(dark=False, window="#F4F5F8", surface="#FFFFFF", surface_alt="#F8F9FB",
               text="#151923", muted="#667085", border="#E2E5EB", accent="#4F46E5",
               accent_text="#FFFFFF", success="#15803D", warning="#B45309", danger="#DC2626",
               info="#2563EB", neutral="#64748B")
DARK = Tokens(dark=True, window="#12141A", surface="#1A1D25", surface_alt="#1F232C",
              text="#E6E8EE", muted="#98A2B3", border="#2C313C", accent="#8B8CF8",
              accent_text="#0E1016", success="#4ADE80", warning="#FBBF24", danger="#F87171",
              info="#60A5FA", neutral="#94A3B8")

_current = LIGHT


def tokens() -> Tokens:
    """The colours of the theme in force."""
    return _current


def color(name: str, alpha: int | None = None) -> QColor:
    value = QColor(getattr(_current, name))
    if alpha is not None:
        value.setAlpha(alpha)
    return value


def load_fonts() -> str:
    """Register the bundled Inter (the offscreen platform may have no font at all)."""
    folder = resources_dir() / "fonts"
    for name in FONT_FILES:
        if QFontDatabase.addApplicationFont(str(folder / name)) < 0:
            log.warning("could not load the bundled font %s", name)
    return FONT_FAMILY


def system_is_dark() -> bool:
    hints = QGuiApplication.styleHints()
    return hints.colorScheme() == Qt.ColorScheme.Dark


def palette_for(t: Tokens) -> QPalette:
    p = QPalette()
    roles = {
        QPalette.ColorRole.Window: t.window, QPalette.ColorRole.WindowText: t.text,
        QPalette.ColorRole.Base: t.surface, QPalette.ColorRole.AlternateBase: t.surface_alt,
        QPalette.ColorRole.Text: t.text, QPalette.ColorRole.Button: t.surface,
        QPalette.ColorRole.ButtonText: t.text, QPalette.ColorRole.ToolTipBase: t.surface,
        QPalette.ColorRole.ToolTipText: t.text, QPalette.ColorRole.Highlight: t.accent,
        QPalette.ColorRole.HighlightedText: t.accent_text, QPalette.ColorRole.Link: t.accent,
        QPalette.ColorRole.PlaceholderText: t.muted, QPalette.ColorRole.Mid: t.border,
        QPalette.ColorRole.Midlight: t.surface_alt, QPalette.ColorRole.Light: t.surface,
        QPalette.ColorRole.Dark: t.border, QPalette.ColorRole.Shadow: t.border,
    }
    for role, value in roles.items():
        p.setColor(role, QColor(value))
    for role in (QPalette.ColorRole.WindowText, QPalette.ColorRole.Text,
                 QPalette.ColorRole.ButtonText):
        p.setColor(QPalette.ColorGroup.Disabled, role, QColor(t.muted))
    return p


def style_sheet(t: Tokens) -> str:
    selection = QColor(t.accent)
    selection.setAlpha(60 if t.dark else 38)
    sel = f"rgba({selection.red()},{selection.green()},{selection.blue()},{selection.alpha()})"
    icons = icons_dir().as_posix()
    return f"""
    QMainWindow, QDialog {{ background: {t.window}; }}
    QToolBar {{ background: {t.surface}; border: none; border-bottom: 1px solid {t.border};
                padding: 6px 10px; spacing: 2px; }}
    QToolBar QToolButton {{ padding: 5px 9px; border-radius: 6px; color: {t.text}; }}
    QToolBar QToolButton:hover {{ background: {t.surface_alt}; }}
    QToolBar QToolButton:pressed {{ background: {t.border}; }}
    QToolBar QToolButton:disabled {{ color: {t.muted}; }}
    QToolBar QToolButton#primary {{ background: {t.accent}; color: {t.accent_text};
                                    font-weight: 600; }}
    QToolBar QToolButton#primary:hover {{ background: {t.accent}; }}
    QToolBar QToolButton#primary:disabled {{ background: {t.surface_alt}; color: {t.muted}; }}
    QToolBar::separator {{ background: {t.border}; width: 1px; margin: 6px 8px; }}
    QStatusBar {{ background: {t.surface}; border-top: 1px solid {t.border}; color: {t.muted}; }}
    QStatusBar QLabel {{ color: {t.muted}; padding: 0 6px; }}
    QFrame#card {{ background: {t.surface}; border: 1px solid {t.border}; border-radius: 10px; }}
    QFrame#panel {{ background: {t.surface}; border: 1px solid {t.border}; border-radius: 10px; }}
    QLabel[role="title"] {{ font-size: 11pt; font-weight: 600; color: {t.text}; }}
    QLabel[role="heading"] {{ font-size: 13pt; font-weight: 600; color: {t.text}; }}
    QLabel[role="section"] {{ font-size: 8pt; font-weight: 600; color: {t.muted};
                              letter-spacing: 0.5px; }}
    QLabel[role="muted"] {{ color: {t.muted}; }}
    QLabel[role="metric"] {{ font-size: 12pt; font-weight: 600; color: {t.text}; }}
    QLineEdit, QComboBox, QSpinBox, QDoubleSpinBox, QPlainTextEdit, QTextEdit {{
        background: {t.surface}; border: 1px solid {t.border}; border-radius: 6px;
        padding: 4px 8px; selection-background-color: {t.accent};
        selection-color: {t.accent_text}; }}
    QLineEdit:focus, QComboBox:focus, QSpinBox:focus, QDoubleSpinBox:focus,
    QPlainTextEdit:focus {{ border: 1px solid {t.accent}; }}
    QComboBox {{ padding-right: 24px; }}
    QComboBox::drop-down {{ subcontrol-origin: padding; subcontrol-position: center right;
                            width: 24px; border: none; }}
    QComboBox::down-arrow {{ image: url({icons}/chevron-down.svg); width: 12px; height: 12px; }}
    QComboBox QAbstractItemView {{ background: {t.surface}; border: 1px solid {t.border};
                                   selection-background-color: {sel};
                                   selection-color: {t.text}; outline: none; }}
    QSpinBox, QDoubleSpinBox {{ padding-right: 22px; }}
    QSpinBox::up-button, QDoubleSpinBox::up-button {{ subcontrol-origin: border;
        subcontrol-position: top right; width: 20px; border: none; background: transparent; }}
    QSpinBox::down-button, QDoubleSpinBox::down-button {{ subcontrol-origin: border;
        subcontrol-position: bottom right; width: 20px; border: none; background: transparent; }}
    QSpinBox::up-arrow, QDoubleSpinBox::up-arrow {{ image: url({icons}/chevron-up.svg);
        width: 10px; height: 10px; }}
    QSpinBox::down-arrow, QDoubleSpinBox::down-arrow {{ image: url({icons}/chevron-down.svg);
        width: 10px; height: 10px; }}
    QCheckBox {{ spacing: 8px; }}
    QPushButton {{ background: {t.surface}; border: 1px solid {t.border}; border-radius: 6px;
                   padding: 5px 14px; color: {t.text}; }}
    QPushButton:hover {{ background: {t.surface_alt}; }}
    QPushButton:disabled {{ color: {t.muted}; }}
    QPushButton[primary="true"] {{ background: {t.accent}; border-color: {t.accent};
                                   color: {t.accent_text}; font-weight: 600; }}
    QPushButton[primary="true"]:disabled {{ background: {t.surface_alt};
                                            border-color: {t.border}; color: {t.muted}; }}
    QPushButton[flat="true"] {{ border: none; background: transparent; padding: 4px 8px; }}
    QTableView {{ background: {t.surface}; alternate-background-color: {t.surface_alt};
                  border: 1px solid {t.border}; border-radius: 10px; gridline-color: {t.border};
                  selection-background-color: {sel}; selection-color: {t.text}; }}
    QHeaderView::section {{ background: {t.surface}; color: {t.muted}; border: none;
                            border-bottom: 1px solid {t.border}; padding: 6px 8px;
                            font-size: 8.5pt; font-weight: 600; }}
    QTableCornerButton::section {{ background: {t.surface}; border: none; }}
    QScrollArea {{ background: transparent; border: none; }}
    QScrollArea > QWidget > QWidget {{ background: transparent; }}
    QTabWidget::pane {{ border: 1px solid {t.border}; border-radius: 8px; top: -1px;
                        background: {t.surface}; }}
    QTabBar::tab {{ padding: 6px 14px; color: {t.muted}; border: none; }}
    QTabBar::tab:selected {{ color: {t.text}; border-bottom: 2px solid {t.accent}; }}
    QGroupBox {{ border: 1px solid {t.border}; border-radius: 8px; margin-top: 14px;
                 padding: 10px 8px 8px 8px; background: {t.surface}; }}
    QGroupBox::title {{ subcontrol-origin: margin; left: 10px; padding: 0 4px;
                        color: {t.muted}; font-weight: 600; }}
    QToolTip {{ background: {t.surface}; color: {t.text}; border: 1px solid {t.border};
                padding: 4px; }}
    QSplitter::handle {{ background: transparent; }}
    """


def apply_theme(app: QApplication, choice: str = "system") -> Tokens:
    """Apply "system", "light" or "dark"; return the tokens now in force."""
    global _current
    dark = system_is_dark() if choice == "system" else choice == "dark"
    _current = DARK if dark else LIGHT
    app.setStyle("Fusion")
    app.setPalette(palette_for(_current))
    app.setStyleSheet(style_sheet(_current))
    return _current


def install(app: QApplication, choice: str = "system") -> None:
    """Fonts, theme, window icon; re-theme when the system switches light/dark."""
    locale = QLocale()
    fmt.use_locale(locale.groupSeparator(), locale.decimalPoint())
    family = load_fonts()
    font = QFont(family, BASE_POINT_SIZE)
    font.setHintingPreference(QFont.HintingPreference.PreferNoHinting)
    app.setFont(font)
    apply_theme(app, choice)
    app.setWindowIcon(app_icon())


def icons_dir() -> Path:
    return resources_dir() / "icons"


@cache
def _svg_text(name: str) -> str | None:
    try:
        return (icons_dir() / f"{name}.svg").read_text("utf-8")
    except OSError:
        log.warning("icon %s is missing", name)
        return None


@lru_cache(maxsize=512)
def _render(name: str, colour: str, width: int, height: int, scale: float) -> QPixmap:
    """The icon ``name`` stroked in ``colour``, ``width`` x ``height`` logical pixels."""
    pixmap = QPixmap(QSize(max(1, round(width * scale)), max(1, round(height * scale))))
    pixmap.fill(Qt.GlobalColor.transparent)
    text = _svg_text(name)
    if text is not None:
        renderer = QSvgRenderer(QByteArray(text.replace("currentColor", colour).encode()))
        painter = QPainter(pixmap)
        renderer.render(painter, QRectF(0, 0, pixmap.width(), pixmap.height()))
        painter.end()
    pixmap.setDevicePixelRatio(scale)
    return pixmap


class TintedIconEngine(QIconEngine):
    """Draws an SVG icon in the colour its tint has in the theme in force *when it is
    painted*, so icons already handed to buttons and actions follow a live switch to dark
    mode (a QIcon of pixmaps kept the old colour: dark icons on a dark toolbar)."""

    def __init__(self, name: str, tint: str, size: int) -> None:
        super().__init__()
        self.name, self.tint, self.size = name, tint, size

    def clone(self) -> QIconEngine:
        return TintedIconEngine(self.name, self.tint, self.size)

    def _colour(self, mode: QIcon.Mode) -> str:
        return str(getattr(_current, "muted" if mode == QIcon.Mode.Disabled else self.tint))

    def actualSize(self, size: QSize, mode: QIcon.Mode, state: QIcon.State) -> QSize:
        return size

    def availableSizes(self, mode: QIcon.Mode = QIcon.Mode.Normal,
                       state: QIcon.State = QIcon.State.Off) -> list[QSize]:
        return [QSize(self.size, self.size)]

    def pixmap(self, size: QSize, mode: QIcon.Mode, state: QIcon.State) -> QPixmap:
        return self.scaledPixmap(size, mode, state, 1.0)

    def scaledPixmap(self, size: QSize, mode: QIcon.Mode, state: QIcon.State,
                     scale: float) -> QPixmap:
        return QPixmap(_render(self.name, self._colour(mode), size.width(), size.height(),
                               max(1.0, scale)))

    def paint(self, painter: QPainter, rect: QRect, mode: QIcon.Mode,
              state: QIcon.State) -> None:
        scale = painter.device().devicePixelRatioF() if painter.device() else 1.0
        painter.drawPixmap(rect, _render(self.name, self._colour(mode), rect.width(),
                                         rect.height(), max(1.0, scale)))


@cache
def icon(name: str, tint: str = "text", size: int = 20) -> QIcon:
    """An SVG icon from resources/icons, stroked in the theme colour ``tint`` — the colour
    of the theme in force whenever it is drawn (see :class:`TintedIconEngine`)."""
    if _svg_text(name) is None:
        return QIcon()
    return QIcon(TintedIconEngine(name, tint, size))


def app_icon() -> QIcon:
    return QIcon(str(icons_dir() / "app.svg"))
