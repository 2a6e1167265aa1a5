"""The main window: toolbar, banners, account cards, the filtered jobs table, status bar.

The window only shows things and emits what the user asked for (signals below); the
controller turns those into engine commands. Dropping a spreadsheet anywhere on the
window asks for an import.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from PySide6.QtCore import (
    QChildEvent,
    QEvent,
    QMargins,
    QModelIndex,
    QObject,
    QPoint,
    QRect,
    QSettings,
    QSize,
    Qt,
    QTimer,
    Signal,
)
from PySide6.QtGui import (
    QAction,
    QCloseEvent,
    QDragEnterEvent,
    QDragMoveEvent,
    QDropEvent,
    QGuiApplication,
    QKeySequence,
    QScreen,
    QShowEvent,
)
from PySide6.QtWidgets import (
    QAbstractItemView,
    QComboBox,
    QDialog,
    QFrame,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QLineEdit,
    QMainWindow,
    QMenu,
    QPushButton,
    QSizePolicy,
    QStackedWidget,
    QTableView,
    QToolBar,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from reelqueue.application.imports import TEXT_EXTENSIONS, WORKBOOK_EXTENSIONS
from reelqueue.application.words import Condition, condition_words
from reelqueue.ui import format as fmt
from reelqueue.ui import theme
from reelqueue.ui.accounts_view import AccountStrip
from reelqueue.ui.banner import BannerArea
from reelqueue.ui.gallery import GalleryView
from reelqueue.ui.jobs_data import STATE_GROUPS
from reelqueue.ui.jobs_model import (
    COL_ACCOUNT,
    COL_ATTEMPTS,
    COL_ERROR,
    COL_NAME,
    COL_OUTPUT,
    COL_PROGRESS,
    COL_PROMPT,
    COL_ROW,
    COL_STATE,
    JobFilter,
    JobIdRole,
    JobTableModel,
    MiddleElideDelegate,
    ProgressDelegate,
    StateDelegate,
)
from reelqueue.ui.qtcompat import emit
from reelqueue.ui.unreachable import UnreachablePage

SHEET_SUFFIXES = frozenset(TEXT_EXTENSIONS) | frozenset(WORKBOOK_EXTENSIONS)
PREFERRED_SIZE = QSize(1320, 860)
# The window's floor: it must fit 1280x720 (and 1920x1080 at 150 %, the same logical size)
# with a title bar and a task bar, and still show every label whole.
MINIMUM_SIZE = QSize(960, 560)
# A window manager may nudge a placed window by its frame: a move this small is not the
# user's.
AUTO_PLACE_SLACK = 40
# A first window takes this share of a screen bigger than the preferred size needs.
FIRST_SHARE = 0.85
# Before the window manager has framed the window its frame is unknown: assume a title bar.
FRAME_GUESS = QMargins(1, 32, 1, 1)
# Fold the account cards by default when the screen is shorter than this, or when there
# are more accounts than fit side by side; the user's own choice wins and is remembered.
COMPACT_BELOW_HEIGHT = 900
COMPACT_ABOVE_ACCOUNTS = 4
ROW_HEIGHT = 36
COLUMN_WIDTHS = {COL_ROW: 56, COL_NAME: 150, COL_PROMPT: 300, COL_ACCOUNT: 120,
                 COL_STATE: 150, COL_PROGRESS: 200, COL_ATTEMPTS: 76, COL_OUTPUT: 170,
                 COL_ERROR: 130}


def fit_geometry(available: QRect, wanted: QRect | None, *,
                 preferred: QSize = PREFERRED_SIZE, minimum: QSize = MINIMUM_SIZE,
                 frame: QMargins = FRAME_GUESS, saved_on: QRect | None = None) -> QRect:
    """Where the window's client area goes on a screen whose free area is ``available``.

    ``wanted`` is the saved geometry (None at first start: a :data:`FIRST_SHARE` of the
    screen, at least ``preferred`` where it has room, centred); ``saved_on`` the free area
    of the screen it was saved on: on a bigger screen the window keeps its share of it
    (saved at 1226x659 on 1280x720, it reopened at 1226x659 on 1920x1080). The result,
    with its ``frame`` around it, lies inside ``available``: never larger, never off its
    edges; it is at least ``minimum`` where the screen has room for that. Qt geometry is
    in device-independent pixels, so 1920x1080 at 150 % is simply a 1280x720
    ``available`` here: the device pixel ratio needs no term of its own.
    """
    room = available.marginsRemoved(frame)
    if wanted is None or not wanted.isValid():
        # A first window leaves a little of the desktop showing on a small screen, and
        # takes most of a big one.
        small = preferred.boundedTo(QSize(int(room.width() * 0.96), int(room.height() * 0.96)))
        size = small.expandedTo(QSize(int(room.width() * FIRST_SHARE),
                                      int(room.height() * FIRST_SHARE)))
        size = size.expandedTo(minimum).boundedTo(room.size())
        x = room.left() + (room.width() - size.width()) // 2
        y = room.top() + (room.height() - size.height()) // 2
        return QRect(QPoint(x, y), size)
    if saved_on is not None and saved_on.isValid():
        # Grow with a bigger screen (never shrink here: a smaller one clamps below).
        sx = max(1.0, available.width() / saved_on.width())
        sy = max(1.0, available.height() / saved_on.height())
        if sx > 1.0 or sy > 1.0:
            wanted = QRect(
                available.x() + round((wanted.x() - saved_on.x()) * sx),
                available.y() + round((wanted.y() - saved_on.y()) * sy),
                round(wanted.width() * sx), round(wanted.height() * sy))
    size = wanted.size().expandedTo(minimum).boundedTo(room.size())
    x = min(max(wanted.x(), room.left()), room.right() + 1 - size.width())
    y = min(max(wanted.y(), room.top()), room.bottom() + 1 - size.height())
    return QRect(QPoint(x, y), size)


def frame_margins(window: QWidget) -> QMargins:
    """The frame around ``window``, never less than a title bar (:data:`FRAME_GUESS`): a
    frame read before the window manager framed a dialog, or a thin one, left the import
    dialog 20 px too tall for 720 and its buttons cut (N5)."""
    frame = window.frameGeometry()
    inner = window.geometry()
    return QMargins(max(FRAME_GUESS.left(), inner.left() - frame.left()),
                    max(FRAME_GUESS.top(), inner.top() - frame.top()),
                    max(FRAME_GUESS.right(), frame.right() - inner.right()),
                    max(FRAME_GUESS.bottom(), frame.bottom() - inner.bottom()))


def fit_dialog(dialog: QWidget) -> None:
    """Keep a dialog inside its screen's free area (centred over the window, a tall
    dialog's buttons could end up below a 720-pixel screen)."""
    screen = dialog.screen() or QGuiApplication.primaryScreen()
    if screen is None:
        return
    inner = dialog.geometry()
    margins = frame_margins(dialog)
    fitted = fit_geometry(screen.availableGeometry(), inner, minimum=dialog.minimumSize(),
                          frame=margins)
    if fitted != inner:
        dialog.setGeometry(fitted)


def hold_text_height(dialog: QWidget) -> None:
    """Never let a dialog be squeezed below the height its contents ask for at its width
    (word-wrapped text included): a long message must grow the dialog, not crush the
    fields and buttons to a few pixels. Capped by the screen's free height."""
    layout = dialog.layout()
    if layout is None:
        return
    width = dialog.width()
    need = (layout.totalHeightForWidth(width) if layout.hasHeightForWidth()
            else layout.totalSizeHint().height())
    screen = dialog.screen() or QGuiApplication.primaryScreen()
    if screen is not None:
        room = screen.availableGeometry().marginsRemoved(frame_margins(dialog)).height()
        need = min(need, room)
    if need > 0 and dialog.minimumHeight() != need:
        dialog.setMinimumHeight(need)


def _rect_value(value: object) -> QRect | None:
    """A rectangle saved as "x,y,w,h" (None: absent or unreadable)."""
    if not isinstance(value, str):
        return None
    try:
        x, y, w, h = (int(part) for part in value.split(","))
    except ValueError:
        return None
    rect = QRect(x, y, w, h)
    return rect if rect.isValid() else None


def shortcut_text(action: QAction) -> str:
    """``action``'s shortcut as this platform writes it (Ctrl+Q, or ⌘Q on macOS)."""
    return action.shortcut().toString(QKeySequence.SequenceFormat.NativeText)


def placement_store() -> QSettings:
    """Where the window remembers its place and card mode: per user and machine (not in
    the data folder, which another machine may share)."""
    return QSettings(QSettings.Format.IniFormat, QSettings.Scope.UserScope,
                     "ReelQueue", "ReelQueue")


def sheet_paths(urls: list[object]) -> list[Path]:
    """The local spreadsheet files among dropped URLs."""
    paths = []
    for url in urls:
        local = url.toLocalFile() if hasattr(url, "toLocalFile") else ""
        if local and Path(local).suffix.lower() in SHEET_SUFFIXES:
            paths.append(Path(local))
    return paths


class EmptyState(QFrame):
    """What the jobs area shows before the first import.

    Signals:
        importClicked(): the user wants to choose a sheet.
    """

    importClicked = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("panel")
        layout = QVBoxLayout(self)
        layout.addStretch(1)
        icon = QLabel()
        self.icon_label = icon
        self._set_icon()
        icon.setAlignment(Qt.AlignmentFlag.AlignCenter)
        title = QLabel("Drop a spreadsheet of prompts here")
        title.setProperty("role", "heading")
        title.setAlignment(Qt.AlignmentFlag.AlignCenter)
        hint = QLabel("CSV, TSV, TXT, XLSX or ODS — one video per row. You can check the "
                      "column mapping, the first rows and the cost before anything runs.")
        hint.setProperty("role", "muted")
        hint.setWordWrap(True)
        hint.setAlignment(Qt.AlignmentFlag.AlignCenter)
        # A wrapped label centred in a column gets its one-line height and was cut to two
        # half lines: give it a width and the height its lines need at that width.
        hint.setFixedWidth(460)
        hint.setMinimumHeight(hint.heightForWidth(460))
        button = QPushButton("Choose a sheet…")
        button.setProperty("primary", True)
        button.clicked.connect(self.importClicked.emit)
        for widget in (icon, title):
            layout.addWidget(widget)
        layout.addWidget(hint, 0, Qt.AlignmentFlag.AlignHCenter)
        layout.addSpacing(8)
        layout.addWidget(button, 0, Qt.AlignmentFlag.AlignHCenter)
        layout.addStretch(1)

    def _set_icon(self) -> None:
        self.icon_label.setPixmap(theme.icon("import", "muted", 40).pixmap(QSize(40, 40)))

    def changeEvent(self, event: QEvent) -> None:
        # A label keeps a pixmap, not an icon: draw it again in the new theme's colour.
        if event.type() in (QEvent.Type.StyleChange, QEvent.Type.PaletteChange):
            self._set_icon()
        super().changeEvent(event)


class MainWindow(QMainWindow):
    """Signals:
        importRequested(object): a sheet path (Path), or None to choose one.
        startRequested(): hand out work. pauseRequested(): stop handing out work.
        retryFailedRequested(): retry every failed job shown.
        retryRequested(list, object): job ids and a new seed (or None).
        cancelRequested(list): job ids to cancel (the context menu: one queued job goes
            without a question).
        cancelAskRequested(list): job ids to cancel after asking, however few (the Cancel
            button and Del: a key pressed by mistake cancels nothing).
        prioritizeRequested(list): job ids to move to the front of the queue.
        batchPriorityRequested(int): a batch id whose jobs go to the front.
        batchPauseRequested(int, bool): a batch id; True pauses it, False resumes it.
        exportRequested(): export a batch's results.
        openFolderRequested(): open the output folder.
        settingsRequested(): show the settings. addAccountRequested(): connect an account.
        aboutRequested(): show the About box (version, providers, plug-ins; F1).
        costsRequested(): show the cost reconciliation (the providers' usage).
        jobActivated(int): show a job's detail.
        revealRequested(int): show the job's video in its folder.
        closeRequested(): the user closed the window; the controller decides.

    Attributes:
        model: the jobs model. banners: the banner area. accounts: the card strip.
    """

    importRequested = Signal(object)
    startRequested = Signal()
    pauseRequested = Signal()
    retryFailedRequested = Signal()
    retryRequested = Signal(list, object)
    cancelRequested = Signal(list)
    cancelAskRequested = Signal(list)
    prioritizeRequested = Signal(list)
    batchPriorityRequested = Signal(int)
    batchPauseRequested = Signal(int, bool)
    exportRequested = Signal()
    openFolderRequested = Signal()
    settingsRequested = Signal()
    instancesRequested = Signal()
    costsRequested = Signal()
    aboutRequested = Signal()
    addAccountRequested = Signal()
    jobActivated = Signal(int)
    revealRequested = Signal(int)
    closeRequested = Signal()

    def __init__(self, model: JobTableModel | None = None, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle("ReelQueue")
        self.setWindowIcon(theme.app_icon())
        self.setMinimumSize(MINIMUM_SIZE)
        self.resize(PREFERRED_SIZE)
        self.setAcceptDrops(True)
        self._placed = False
        self._auto_place: QRect | None = None  # the first placement (remember_placement)
        self._compact_choice: bool | None = None  # the user's own fold/unfold choice
        self.model = model or JobTableModel(parent=self)
        self.allow_close = False
        self.paused = True
        self.batch_names: dict[int, str] = {}  # the controller keeps these two current
        self.paused_batches: set[int] = set()
        self.banners = BannerArea()  # before the toolbar, which holds its bell
        self._build_toolbar()

        central = QWidget()
        outer = QVBoxLayout(central)
        outer.setContentsMargins(16, 12, 16, 10)
        outer.setSpacing(10)

        self.accounts = AccountStrip()
        self.accounts.addAccount.connect(self.addAccountRequested.emit)
        self.accounts.countChanged.connect(lambda _n: self._apply_compact())
        self.accounts_head = QWidget()
        head = self._build_accounts_head()
        head.setContentsMargins(0, 0, 0, 0)
        self.accounts_head.setLayout(head)
        outer.addWidget(self.accounts_head)
        outer.addWidget(self.accounts)
        self.jobs_panel = self._build_jobs_panel()
        outer.addWidget(self.jobs_panel, 1)
        # In place of the accounts and jobs while a team database cannot be opened.
        self.unreachable = UnreachablePage()
        self.unreachable.hide()
        self._enabled_before: dict[QAction, bool] = {}
        outer.addWidget(self.unreachable, 1)
        self.setCentralWidget(central)
        self.banners.overlay(central)  # floats over the content's bottom: the table stays
        self._build_status_bar()
        self._search_timer = QTimer(self)
        self._search_timer.setSingleShot(True)
        self._search_timer.setInterval(250)
        self._search_timer.timeout.connect(self._apply_filter)
        self.set_engine_state("starting")

    def show_unreachable(self, title: str, message: str) -> None:
        """The team database could not be opened: say so in place of the accounts and
        the jobs (never "No accounts yet" and "Drop a spreadsheet" over work that is
        only out of reach)."""
        self.unreachable.set_problem(title, message)
        for widget in (self.accounts_head, self.accounts, self.jobs_panel):
            widget.hide()
        self.unreachable.show()
        for action in self._journal_actions():
            self._enabled_before.setdefault(action, action.isEnabled())
            action.setEnabled(False)

    def hide_unreachable(self) -> None:
        if self.unreachable.isHidden():
            return
        self.unreachable.hide()
        for widget in (self.accounts_head, self.accounts, self.jobs_panel):
            widget.show()
        for action, enabled in self._enabled_before.items():
            action.setEnabled(enabled)
        self._enabled_before.clear()
        self._apply_compact()

    def _journal_actions(self) -> tuple[QAction, ...]:
        """The toolbar's actions that need the journal open."""
        return (self.import_action, self.start_action, self.retry_action,
                self.cancel_action, self.export_action, self.account_action)

    # -- building ------------------------------------------------------------------------
    def _build_toolbar(self) -> None:
        bar = QToolBar("Main")
        bar.setMovable(False)
        bar.setIconSize(QSize(18, 18))
        bar.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonTextBesideIcon)
        self.addToolBar(bar)
        self.toolbar = bar

        def action(text: str, icon: str, tip: str, slot: object,
                   shortcut: QKeySequence | QKeySequence.StandardKey | None = None) -> QAction:
            act = QAction(theme.icon(icon), text, self)
            act.triggered.connect(slot)
            if shortcut is not None:
                act.setShortcut(shortcut)
                tip += f" ({shortcut_text(act)})"
            act.setToolTip(tip)
            bar.addAction(act)
            return act

        self.import_action = action("Import", "import", "Import a spreadsheet of prompts",
                                    lambda: emit(self.importRequested, None),
                                    QKeySequence.StandardKey.Open)
        self.start_action = action("Start", "play", "Hand out work to the accounts",
                                   self._start_or_pause)
        start_button = bar.widgetForAction(self.start_action)
        if isinstance(start_button, QToolButton):
            start_button.setObjectName("primary")
        bar.addSeparator()
        self.retry_action = action("Retry failed", "retry", "Queue every failed job again",
                                   self.retryFailedRequested.emit)
        self.cancel_action = action("Cancel", "cancel", "Cancel the selected jobs",
                                    self._cancel_selected, QKeySequence(Qt.Key.Key_Delete))
        bar.addSeparator()
        self.export_action = action("Export", "export", "Export a batch's results to a sheet",
                                    self.exportRequested.emit)
        self.folder_action = action("Open folder", "folder", "Open the output folder",
                                    self.openFolderRequested.emit)
        spacer = QWidget()
        spacer.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Preferred)
        bar.addWidget(spacer)
        self.banners.bell.setVisible(True)  # the area keeps it hidden until placed
        bar.addWidget(self.banners.bell)  # banners that went by themselves
        self.account_action = action("Add account", "account-add",
                                     "Connect a provider account",
                                     self.addAccountRequested.emit)
        self.settings_action = action("Settings", "settings", "Folders, retries, theme",
                                      self.settingsRequested.emit)
        # A team store only (set_team): the machines sharing the queue.
        self.instances_action = QAction("Instances", self)
        self.instances_action.setToolTip("The machines sharing this team queue: their "
                                         "last heartbeat and renders")
        self.instances_action.triggered.connect(self.instancesRequested.emit)
        bar.insertAction(self.account_action, self.instances_action)
        self.instances_action.setVisible(False)
        # The journal against the providers' usage (issue 32 item 5): read on opening.
        self.costs_action = QAction("Costs", self)
        self.costs_action.setToolTip("What the journal started and priced against what the "
                                     "providers report they used, per model and day")
        self.costs_action.triggered.connect(self.costsRequested.emit)
        bar.insertAction(self.account_action, self.costs_action)
        # Keyboard only (docs/ui.md, "Keyboard shortcuts"): on the window, so they work
        # wherever the focus is in it; a text field keeps its own Del.
        # The platform's Quit (Cmd+Q on macOS); Windows and some platforms bind none:
        # Ctrl+Q there (Qt's "Ctrl" is Cmd on macOS, so the same keys everywhere).
        quit_keys = QKeySequence.keyBindings(QKeySequence.StandardKey.Quit)
        self.quit_action = self._window_action(
            "Quit ReelQueue", "Close the window (asks about running renders)",
            quit_keys[0] if quit_keys else QKeySequence("Ctrl+Q"), self.close)
        self.find_action = self._window_action(
            "Find", "Search the jobs by name, prompt or file", QKeySequence.StandardKey.Find,
            self.focus_search)
        self.retry_selected_action = self._window_action(
            "Retry selected", "Queue the selected jobs again (asks before it pays)",
            QKeySequence("Ctrl+R"), self._retry_selected)
        self.about_action = self._window_action(
            "About ReelQueue", "The version, the providers and their plug-ins",
            QKeySequence.StandardKey.HelpContents, self.aboutRequested.emit)

    def _window_action(self, text: str, tip: str,
                       shortcut: QKeySequence | QKeySequence.StandardKey,
                       slot: Callable[[], object]) -> QAction:
        act = QAction(text, self)
        act.setShortcut(shortcut)
        act.setToolTip(f"{tip} ({shortcut_text(act)})")
        act.triggered.connect(lambda _checked=False: slot())
        self.addAction(act)
        return act

    def focus_search(self) -> None:
        """Ctrl+F: the search box (the table is shown: the gallery has none)."""
        if self.gallery_button.isChecked():
            self.show_gallery(False)
        self.search.setFocus(Qt.FocusReason.ShortcutFocusReason)
        self.search.selectAll()

    def _retry_selected(self) -> None:
        if self.gallery_button.isChecked():
            self.gallery.retry_selected()
            return
        ids = self.selected_job_ids()
        if ids:
            emit(self.retryRequested, ids, None)
        else:
            self.banners.show_banner("info", "Select the jobs to retry in the table first.",
                                     key="hint:retry")

    def _build_accounts_head(self) -> QHBoxLayout:
        head = QHBoxLayout()
        head.setSpacing(8)
        title = QLabel("ACCOUNTS")
        title.setProperty("role", "section")
        head.addWidget(title)
        # The shared queue once, above the cards (each card counts only its own jobs).
        self.queue_label = QLabel()
        self.queue_label.setProperty("role", "muted")
        head.addWidget(self.queue_label)
        head.addStretch(1)
        self.compact_button = QPushButton("Fold cards")
        self.compact_button.setProperty("flat", True)
        self.compact_button.setCheckable(True)
        self.compact_button.setToolTip("Show each account as a small card (more room for "
                                       "the jobs) or with its charts and renders")
        self.compact_button.toggled.connect(self._compact_toggled)
        head.addWidget(self.compact_button)
        return head

    def _compact_toggled(self, compact: bool) -> None:
        self._compact_choice = compact
        self._apply_compact()
        store = placement_store()
        store.setValue("window/compact_cards", "on" if compact else "off")
        store.sync()

    def _apply_compact(self) -> None:
        compact = self._compact_choice
        if compact is None:
            screen = self.screen()
            short = (screen is not None
                     and screen.availableGeometry().height() < COMPACT_BELOW_HEIGHT)
            compact = short or len(self.accounts.cards) > COMPACT_ABOVE_ACCOUNTS
        if compact != self.accounts.compact:
            self.accounts.set_compact(compact)
        self.compact_button.blockSignals(True)
        self.compact_button.setChecked(compact)
        self.compact_button.setText("Unfold cards" if compact else "Fold cards")
        self.compact_button.blockSignals(False)
        # Nothing to fold before the first account is connected.
        self.compact_button.setVisible(bool(self.accounts.cards))

    # -- placement -----------------------------------------------------------------------
    def _frame_margins(self) -> QMargins:
        inner, outer = self.geometry(), self.frameGeometry()
        if inner == outer:
            return FRAME_GUESS
        return QMargins(inner.left() - outer.left(), inner.top() - outer.top(),
                        outer.right() - inner.right(), outer.bottom() - inner.bottom())

    def _target_screen(self, wanted: QRect | None) -> QScreen | None:
        if wanted is not None:
            screen = QGuiApplication.screenAt(wanted.center())
            if screen is not None:
                return screen
        return self.screen() or QGuiApplication.primaryScreen()

    def place_on_screen(self) -> None:
        """Size and move the window into its screen's free area: at first show, from the
        saved place (re-clamped: the screen may be smaller now), and on a screen change."""
        store = placement_store()
        wanted: QRect | None = None
        saved_on: QRect | None = None
        if not self._placed:
            wanted = _rect_value(store.value("window/geometry"))
            saved_on = _rect_value(store.value("window/screen"))
        else:
            wanted = self.geometry()
        choice = store.value("window/compact_cards")
        if self._compact_choice is None and choice in ("on", "off"):
            self._compact_choice = choice == "on"
        self._apply_compact()
        screen = self._target_screen(wanted)
        if screen is None or self.isMaximized() or self.isFullScreen():
            return
        self.setGeometry(fit_geometry(screen.availableGeometry(), wanted,
                                      frame=self._frame_margins(), saved_on=saved_on))
        if not self._placed:
            self._auto_place = self.geometry()
        if not self._placed and store.value("window/maximized") in (True, "true"):
            self.setWindowState(self.windowState() | Qt.WindowState.WindowMaximized)

    def remember_placement(self) -> None:
        rect = self.normalGeometry() if self.isMaximized() else self.geometry()
        store = placement_store()
        auto = self._auto_place
        if auto is not None and rect.size() == auto.size() and \
                (rect.topLeft() - auto.topLeft()).manhattanLength() <= AUTO_PLACE_SLACK:
            # Where the window put itself, untouched: keep what was saved (a place chosen
            # on a bigger screen, or nothing: a first start again). Saving the clamp of a
            # small screen made it fill a big one next time.
            store.setValue("window/maximized", self.isMaximized())
            store.sync()
            return
        store.setValue("window/geometry",
                       f"{rect.x()},{rect.y()},{rect.width()},{rect.height()}")
        store.setValue("window/maximized", self.isMaximized())
        screen = self.screen()
        if screen is not None:  # its share of this screen is kept on a bigger one
            free = screen.availableGeometry()
            store.setValue("window/screen",
                           f"{free.x()},{free.y()},{free.width()},{free.height()}")
        store.sync()

    def showEvent(self, event: QShowEvent) -> None:
        if not self._placed:
            self.place_on_screen()
            self._placed = True
            handle = self.windowHandle()
            if handle is not None:
                handle.screenChanged.connect(lambda _screen: self.place_on_screen())
        super().showEvent(event)

    def childEvent(self, event: QChildEvent) -> None:
        # Dialogs are the window's children: each is fitted to the screen when it shows.
        if event.type() == QEvent.Type.ChildPolished and isinstance(event.child(), QDialog):
            event.child().installEventFilter(self)
        super().childEvent(event)

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        if isinstance(watched, QDialog):
            if event.type() == QEvent.Type.Show:
                # After QDialog's own show handling has centred it over the window.
                QTimer.singleShot(0, watched, lambda: fit_dialog(watched))
            if event.type() in (QEvent.Type.Show, QEvent.Type.Resize,
                                QEvent.Type.LayoutRequest):
                hold_text_height(watched)
        return super().eventFilter(watched, event)

    def _build_jobs_panel(self) -> QWidget:
        panel = QWidget()
        layout = QVBoxLayout(panel)
        layout.setContentsMargins(0, 4, 0, 0)
        layout.setSpacing(8)
        filters = QHBoxLayout()
        filters.setSpacing(8)
        title = QLabel("Jobs")
        title.setProperty("role", "heading")
        filters.addWidget(title)
        filters.addSpacing(8)
        # Table or gallery (issue 23): the same jobs, as rows or as a batch's thumbnails.
        self.table_button = QPushButton("Table")
        self.gallery_button = QPushButton("Gallery")
        for button, tip in ((self.table_button, "Every job as a row (Ctrl+G: gallery)"),
                            (self.gallery_button, "A batch's videos as thumbnails (Ctrl+G)")):
            button.setCheckable(True)
            button.setAutoExclusive(True)
            button.setToolTip(tip)
            button.setStyleSheet("QPushButton:checked { background: palette(highlight); "
                                 "color: palette(highlighted-text); "
                                 "border-color: palette(highlight); }")
            filters.addWidget(button)
        self.table_button.setChecked(True)
        self.gallery_button.toggled.connect(lambda _on: self._update_empty())
        toggle = QAction("Table or gallery", self)
        toggle.setShortcut(QKeySequence("Ctrl+G"))
        toggle.triggered.connect(lambda: self.show_gallery(not self.gallery_button.isChecked()))
        self.addAction(toggle)
        filters.addSpacing(8)
        self.search = QLineEdit()
        self.search.setPlaceholderText("Search name, prompt or file…")
        self.search.addAction(theme.icon("search", "muted", 16),
                              QLineEdit.ActionPosition.LeadingPosition)
        self.search.setClearButtonEnabled(True)
        self.search.setMinimumWidth(260)
        self.search.textChanged.connect(lambda _text: self._search_timer.start())
        filters.addWidget(self.search)
        self.state_filter = QComboBox()
        for label in STATE_GROUPS:
            self.state_filter.addItem(label)
        self.batch_filter = QComboBox()
        self.batch_filter.addItem("All batches", None)
        self.account_filter = QComboBox()
        self.account_filter.addItem("All accounts", None)
        for combo in (self.state_filter, self.batch_filter, self.account_filter):
            combo.setMinimumWidth(140)
            combo.currentIndexChanged.connect(lambda _i: self._apply_filter())
            filters.addWidget(combo)
        filters.addStretch(1)
        self.shown_label = QLabel()
        self.shown_label.setProperty("role", "muted")
        filters.addWidget(self.shown_label)
        layout.addLayout(filters)

        self.table = QTableView()
        self.table.setModel(self.model)
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.setSelectionMode(QAbstractItemView.SelectionMode.ExtendedSelection)
        self.table.setShowGrid(False)
        self.table.setWordWrap(False)
        self.table.setAlternatingRowColors(True)
        self.table.setTextElideMode(Qt.TextElideMode.ElideRight)
        self.table.setHorizontalScrollMode(QAbstractItemView.ScrollMode.ScrollPerPixel)
        self.table.setVerticalScrollMode(QAbstractItemView.ScrollMode.ScrollPerPixel)
        vertical = self.table.verticalHeader()
        vertical.setVisible(False)
        vertical.setSectionResizeMode(QHeaderView.ResizeMode.Fixed)
        vertical.setDefaultSectionSize(ROW_HEIGHT)
        header = self.table.horizontalHeader()
        header.setHighlightSections(False)
        header.setStretchLastSection(True)
        header.setDefaultAlignment(Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignVCenter)
        for column, width in COLUMN_WIDTHS.items():
            header.resizeSection(column, width)
        header.setSectionResizeMode(COL_PROMPT, QHeaderView.ResizeMode.Stretch)
        header.setStretchLastSection(False)
        # A header click sorts, in the journal (jobs_model.py); a third click goes back
        # to id order. No indicator at first: the jobs come in id order.
        header.setSortIndicatorClearable(True)
        header.setSortIndicator(-1, Qt.SortOrder.AscendingOrder)
        self.table.setSortingEnabled(True)
        self.state_delegate = StateDelegate(self.table)
        self.progress_delegate = ProgressDelegate(self.model, self.table)
        self.table.setItemDelegateForColumn(COL_STATE, self.state_delegate)
        self.table.setItemDelegateForColumn(COL_PROGRESS, self.progress_delegate)
        self.output_delegate = MiddleElideDelegate(self.table)
        self.table.setItemDelegateForColumn(COL_OUTPUT, self.output_delegate)
        self.table.doubleClicked.connect(self._activated)
        self.table.setContextMenuPolicy(Qt.ContextMenuPolicy.CustomContextMenu)
        self.table.customContextMenuRequested.connect(self._context_menu)

        self.empty = EmptyState()
        self.empty.importClicked.connect(lambda: emit(self.importRequested, None))
        self.jobs_stack = QStackedWidget()
        self.jobs_stack.addWidget(self.empty)
        self.jobs_stack.addWidget(self.table)
        self.gallery = GalleryView()
        self.gallery.retryRequested.connect(self.retryRequested)
        self.jobs_stack.addWidget(self.gallery)
        layout.addWidget(self.jobs_stack, 1)
        self.model.rowsInserted.connect(lambda *_a: self._update_empty())
        self.model.modelReset.connect(self._update_empty)
        self.model.layoutChanged.connect(self._update_empty)
        self._update_empty()
        return panel

    def _build_status_bar(self) -> None:
        bar = self.statusBar()
        bar.setSizeGripEnabled(False)
        self.totals_label = QLabel()
        self.rate_label = QLabel()
        self.engine_label = QLabel()
        bar.addWidget(self.totals_label, 1)
        bar.addPermanentWidget(self.rate_label)
        bar.addPermanentWidget(self.engine_label)

    # -- state shown -----------------------------------------------------------------------
    def _update_empty(self) -> None:
        has_jobs = len(self.model.table) > 0
        gallery = self.gallery_button.isChecked()
        self.jobs_stack.setCurrentWidget(self.empty if not has_jobs
                                         else self.gallery if gallery else self.table)
        for widget in (self.search, self.state_filter, self.batch_filter, self.account_filter,
                       self.shown_label):  # the gallery has its own batch chooser
            widget.setVisible(not gallery)
        shown, total = self.model.rowCount(), len(self.model.table)
        self.shown_label.setText(fmt.count(total, "job") if shown == total
                                 else f"Showing {fmt.number(shown)} of {fmt.number(total)}")

    def set_engine_state(self, state: str, detail: str = "") -> None:
        """The Start/Pause button and the engine's word in the status bar. The queue is
        on (button "Pause") while running, waiting for a retry, stalled or done."""
        running = state in ("running", "waiting", "stalled", "done", "drained")
        self.paused = not running
        self.start_action.setText("Pause" if running else "Start")
        self.start_action.setIcon(theme.icon("pause" if running else "play",
                                             "accent_text" if not running else "text"))
        start_button = self.toolbar.widgetForAction(self.start_action)
        if isinstance(start_button, QToolButton):
            start_button.setObjectName("" if running else "primary")
            start_button.style().unpolish(start_button)
            start_button.style().polish(start_button)
        self.start_action.setEnabled(state not in ("starting", "stopping", "stopped"))
        words = {"running": "Running", "starting": "Starting…", "stopping": "Stopping…",
                 "stopped": "Stopped", "drained": "All done",
                 # the queue's conditions by their one name (application.words)
                 "paused": condition_words(Condition.PAUSED).name.capitalize(),
                 "stalled": condition_words(Condition.STALLED).name.capitalize()}
        self.engine_label.setText(words.get(state, state.title())
                                  + (f" — {detail}" if detail else ""))

    def set_engine_text(self, text: str, tooltip: str = "") -> None:
        """What the engine is doing, derived from the truth (see ui/dashboard.py)."""
        self.engine_label.setText(text)
        self.engine_label.setToolTip(tooltip)

    def set_team(self, team: bool) -> None:
        """The journal is a team database: offer the Instances view."""
        self.instances_action.setVisible(team)

    def set_shared_queue(self, text: str) -> None:
        self.queue_label.setText(text)

    def set_totals(self, text: str, rate: str) -> None:
        self.totals_label.setText(text)
        self.rate_label.setText(rate)

    def set_filter_choices(self, batches: list[tuple[int, str]],
                           accounts: list[tuple[str, str]]) -> None:
        """``batches``: (id, label); ``accounts``: (label, account name)."""
        batch_items: list[tuple[str, object]] = [(name, bid) for bid, name in batches]
        account_items: list[tuple[str, object]] = list(accounts)
        for combo, items in ((self.batch_filter, batch_items),
                             (self.account_filter, account_items)):
            current = combo.currentData()
            wanted = [(combo.itemText(0), None), *items]
            present = [(combo.itemText(i), combo.itemData(i)) for i in range(combo.count())]
            if wanted == present:
                continue
            combo.blockSignals(True)
            combo.clear()
            for text, data in wanted:
                combo.addItem(text, data)
            index = combo.findData(current) if current is not None else 0
            combo.setCurrentIndex(max(0, index))
            combo.blockSignals(False)

    def show_account(self, name: str) -> None:
        index = self.account_filter.findData(name)
        if index >= 0:
            self.account_filter.setCurrentIndex(index)

    def current_filter(self) -> JobFilter:
        return JobFilter(states=STATE_GROUPS.get(self.state_filter.currentText()),
                         batch_id=self.batch_filter.currentData(),
                         account=self.account_filter.currentData(),
                         text=self.search.text())

    def _apply_filter(self) -> None:
        self.model.set_filter(self.current_filter())
        self._update_empty()

    def selected_job_ids(self) -> list[int]:
        rows = sorted({index.row() for index in self.table.selectionModel().selectedRows()})
        return self.model.job_ids(rows)

    # -- user actions ------------------------------------------------------------------
    def _start_or_pause(self) -> None:
        if self.paused and not self.accounts.cards:
            # Start with no account would "run" and do nothing: say what to do instead.
            self.banners.show_banner(
                "info", "Connect a provider account first: Start hands the queued jobs to "
                "your accounts, and there are none yet.",
                [("Connect an account…", self.addAccountRequested.emit)], key="hint:start")
            return
        if self.paused:
            emit(self.startRequested)
        else:
            emit(self.pauseRequested)

    def no_file_opener(self, path: Path) -> None:
        """Opening a file or folder failed (no file manager or player is set up)."""
        self.banners.show_banner(
            "warning", f"Nothing on this system opens {path} (no file manager or default "
            "application is set up). The files are there: open the folder yourself.",
            key="hint:opener")

    def _cancel_selected(self) -> None:
        ids = self.selected_job_ids()
        if ids:
            emit(self.cancelAskRequested, ids)
        else:
            self.banners.show_banner("info", "Select the jobs to cancel in the table first.",
                                     key="hint:cancel")

    def _activated(self, index: QModelIndex) -> None:
        job_id = index.data(JobIdRole)
        if job_id is not None:
            emit(self.jobActivated, int(job_id))

    def _context_menu(self, point: QPoint) -> None:
        index = self.table.indexAt(point)
        if not index.isValid():
            return
        ids = self.selected_job_ids() or [int(index.data(JobIdRole))]
        menu = QMenu(self)
        menu.addAction("Details…", lambda: emit(self.jobActivated, int(index.data(JobIdRole))))
        menu.addAction("Retry", lambda: emit(self.retryRequested, ids, None))
        menu.addAction("Retry with a new seed", lambda: emit(self.retryRequested, ids, -1))
        menu.addAction("Cancel", lambda: emit(self.cancelRequested, ids))
        menu.addSeparator()
        menu.addAction("Move to the front of the queue",
                       lambda: emit(self.prioritizeRequested, ids))
        row = self.model.table.row(int(index.data(JobIdRole)))
        if row is not None:
            batch = row.batch_id
            name = self.batch_names.get(batch, f"batch {batch}")
            menu.addAction(f"Move batch “{name}” to the front",
                           lambda: emit(self.batchPriorityRequested, batch))
            paused = batch in self.paused_batches
            menu.addAction(f"{'Resume' if paused else 'Pause'} batch “{name}”",
                           lambda: emit(self.batchPauseRequested, batch, not paused))
        menu.addSeparator()
        menu.addAction("Show in folder",
                       lambda: emit(self.revealRequested, int(index.data(JobIdRole))))
        menu.popup(self.table.viewport().mapToGlobal(point))

    # -- drag and drop -------------------------------------------------------------------
    def dragEnterEvent(self, event: QDragEnterEvent) -> None:
        mime = event.mimeData()
        if mime.hasUrls() and sheet_paths(list(mime.urls())):
            event.acceptProposedAction()
        else:
            event.ignore()

    def dragMoveEvent(self, event: QDragMoveEvent) -> None:
        event.acceptProposedAction()

    def dropEvent(self, event: QDropEvent) -> None:
        paths = sheet_paths(list(event.mimeData().urls()))
        if not paths:
            event.ignore()
            return
        event.acceptProposedAction()
        for path in paths[:1]:
            emit(self.importRequested, path)
        if len(paths) > 1:
            self.banners.show_banner("info", "Drop one sheet at a time; the first one is "
                                     "being imported.", key="hint:drop")

    # -- closing -------------------------------------------------------------------------
    def closeEvent(self, event: QCloseEvent) -> None:
        if self.allow_close:
            if self._placed:
                self.remember_placement()
            event.accept()
            return
        event.ignore()
        emit(self.closeRequested)

    def show_gallery(self, shown: bool = True) -> None:
        """Show the batch gallery (True) or the jobs table (False)."""
        (self.gallery_button if shown else self.table_button).setChecked(True)
        if shown:
            self.gallery.view.setFocus()

    def stop_timers(self) -> None:
        self._search_timer.stop()
        self.gallery.stop()
        for card in self.accounts.cards.values():
            card.stop_timers()
