"""The import dialog: defaults, column mapping, a preview as rendered, row errors, cost.

Non-modal (a modal dialog inside an async slot breaks qasync). It never plans by itself:
it emits :attr:`ImportDialog.replanRequested` with new options whenever the user changes
something (debounced), the controller plans on worker threads and calls
:meth:`ImportDialog.set_plan`. :attr:`ImportDialog.importRequested` carries the plan the
user saw and how many of its rows to import (None: all of them).
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

from PySide6.QtCore import (
    QAbstractTableModel,
    QModelIndex,
    QObject,
    QPersistentModelIndex,
    Qt,
    QTimer,
    Signal,
)
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QDialog,
    QDoubleSpinBox,
    QFileDialog,
    QFormLayout,
    QFrame,
    QGridLayout,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QLineEdit,
    QPushButton,
    QScrollArea,
    QSizePolicy,
    QSpinBox,
    QTableView,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

from reelqueue.application.imports import (
    FIELDS,
    ColumnMapping,
    ImportOptions,
    ImportPlan,
    PreviewRow,
    RowError,
    display_headers,
    money,
)
from reelqueue.application.providers import ProviderRegistry, builtin_registry
from reelqueue.domain.routes import Route, RoutePolicy, Tolerance, split_route
from reelqueue.ui import format as fmt
from reelqueue.ui import theme
from reelqueue.ui.list_model import ListTableModel
from reelqueue.ui.qtcompat import emit

ModelIndex = QModelIndex | QPersistentModelIndex
PREVIEW_ROWS = 10
ROUTE_COLUMN_MAX = 300
"""The widest the preview's Provider column grows for routed rows (pixels)."""
KEEP = "(extra column)"
IGNORE = "ignore"


class PreviewModel(ListTableModel[PreviewRow]):
    """The first rows of a plan as they will be rendered."""

    HEADERS = ("Row", "Name", "Prompt", "Provider", "Parameters", "File", "Status")
    #: the Provider column of a routed row: its candidates best first, each with its price
    #: (issue 24); the tooltip adds what the tolerance moved and who was left out, and why
    #: A preview row past a test run's rows: what Import will leave out.
    LEFT_OUT = "not in this test run"

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._test_rows: int | None = None

    def set_rows(self, rows: list[PreviewRow]) -> None:
        self.set_items(rows)

    def set_test_rows(self, count: int | None) -> None:
        """A test run of the first ``count`` rows (None: the whole sheet): the preview says
        which rows Import will add and which it leaves out."""
        if count == self._test_rows:
            return
        self._test_rows = count
        if self.items:
            self.dataChanged.emit(self.index(0, 6), self.index(len(self.items) - 1, 6))

    def status(self, position: int) -> str:
        """The Status column of the preview's ``position``-th row (0-based)."""
        if self._test_rows is not None and position >= self._test_rows:
            return self.LEFT_OUT
        return "already imported" if self.items[position].already_present else "new"

    @property
    def rows(self) -> list[PreviewRow]:
        return self.items

    def data(self, index: ModelIndex, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if not index.isValid():
            return None
        row = self.items[index.row()]
        column = index.column()
        if role in (Qt.ItemDataRole.DisplayRole, Qt.ItemDataRole.ToolTipRole):
            params = ", ".join(f"{k} {v}" for k, v in row.params.items() if v not in (None, ""))
            provider = row.provider
            if row.route is not None:
                provider = route_text(row.route)
                if role == Qt.ItemDataRole.ToolTipRole and column == 3:
                    return route_tooltip(row.route)
            values = ("" if row.row_number is None else str(row.row_number), row.name,
                      row.prompt, provider, params, row.file_name,
                      self.status(index.row()))
            return values[column]
        if role == Qt.ItemDataRole.ForegroundRole and column == 6:
            return theme.color("success" if self.status(index.row()) == "new" else "muted")
        return None


def _price(usd: float | None) -> str:
    return money(usd) if usd is not None else "price unknown"


def route_text(route: Route) -> str:
    """A routed row in the preview: "luma $0.30 → runway $0.84 → veo $3.20" (best first;
    the CLI's preview lists the same)."""
    return " → ".join(f"{c.provider} {_price(c.price)}" for c in route.usable())


def route_tooltip(route: Route) -> str:
    """What the tolerance moved for each candidate, and who was left out and why."""
    lines = [f"Route ({POLICY_WORDS[route.policy]}; {TOLERANCE_WORDS[route.tolerance]}):"]
    for rank, c in enumerate(route.usable(), start=1):
        moved = ", ".join(f"{name.replace('_', ' ')} {written} → {sent}"
                          for name, (written, sent) in c.changed.items())
        lines.append(f"{rank}. {c.provider}: {_price(c.price)}"
                     + (f" ({moved})" if moved else ""))
    lines += [f"left out: {provider}: {why}" for provider, why in route.left_out]
    return "\n".join(lines)


POLICY_WORDS = {
    RoutePolicy.ORDER: "in the order given",
    RoutePolicy.CHEAPEST: "cheapest available now",
    RoutePolicy.FASTEST: "fastest, by this journal's render times",
    RoutePolicy.SPREAD: "spread over every free account",
}
TOLERANCE_WORDS = {
    Tolerance.EXACT: "exact: a provider that does not take the row as written is left out",
    Tolerance.NEAREST_DURATION: "nearest duration",
    Tolerance.NEAREST: "nearest duration, aspect ratio and resolution",
}


class RowErrorModel(ListTableModel[RowError]):
    """Row-level errors: where, what, and what would be accepted."""

    HEADERS = ("Row", "Column", "Problem", "Accepted")

    def set_errors(self, errors: list[RowError]) -> None:
        self.set_items(errors)

    @property
    def errors(self) -> list[RowError]:
        return self.items

    def data(self, index: ModelIndex, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if not index.isValid():
            return None
        error = self.items[index.row()]
        if role in (Qt.ItemDataRole.DisplayRole, Qt.ItemDataRole.ToolTipRole):
            values = ("defaults" if error.row_number is None else str(error.row_number),
                      error.column, error.message, error.accepted)
            return values[index.column()]
        return None


def _table(model: QAbstractTableModel, stretch: int) -> QTableView:
    view = QTableView()
    view.setModel(model)
    view.verticalHeader().setVisible(False)
    view.verticalHeader().setDefaultSectionSize(30)
    view.setShowGrid(False)
    view.setWordWrap(False)
    view.setAlternatingRowColors(True)
    view.setSelectionBehavior(QTableView.SelectionBehavior.SelectRows)
    header = view.horizontalHeader()
    header.setDefaultAlignment(Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignVCenter)
    header.setSectionResizeMode(QHeaderView.ResizeMode.Interactive)
    header.setSectionResizeMode(stretch, QHeaderView.ResizeMode.Stretch)
    return view


DEFAULTS_WIDTH = 360
"""The batch defaults form's width (it scrolls when the screen is short)."""


class ImportDialog(QDialog):
    """Signals:
        replanRequested(object): ImportOptions to plan the same file with.
        importRequested(object, object): the ImportPlan and the number of rows (or None).

    Attributes:
        path: the sheet.
        plan: the plan on show (None while planning or after a refusal).
    """

    replanRequested = Signal(object)
    importRequested = Signal(object, object)

    def __init__(self, path: Path, options: ImportOptions, parent: QWidget | None = None,
                 providers: ProviderRegistry | None = None) -> None:
        super().__init__(parent)
        self._providers = providers or builtin_registry()
        self.setWindowTitle(f"Import {path.name}")
        self.setModal(False)
        self.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose, False)
        self.resize(1200, 720)
        # Narrower, its wrapped header and estimate need more height than a 720-pixel
        # screen has.
        self.setMinimumWidth(940)
        self.path = path
        self.options = options
        self.plan: ImportPlan | None = None
        self._headers: list[str] = []
        self._mapping_boxes: dict[str, QComboBox] = {}
        self._replan_timer = QTimer(self)
        self._replan_timer.setSingleShot(True)
        self._replan_timer.setInterval(300)
        self._replan_timer.timeout.connect(self._emit_replan)

        layout = QVBoxLayout(self)
        layout.setContentsMargins(20, 18, 20, 16)
        layout.setSpacing(12)
        title = QLabel(f"Import {path.name}")
        title.setProperty("role", "heading")
        self.source_label = QLabel("Reading the sheet…")
        self.source_label.setProperty("role", "muted")
        # A long file name or output folder wraps instead of widening the dialog off a
        # small screen.
        for label in (title, self.source_label):
            label.setWordWrap(True)
        layout.addWidget(title)
        layout.addWidget(self.source_label)

        body = QHBoxLayout()
        body.setSpacing(16)
        # The form scrolls rather than hold the dialog taller than a 720-pixel screen
        # (with row errors and a long estimate its buttons were cut off, N5).
        defaults = QScrollArea()
        defaults.setObjectName("defaults-area")
        defaults.setFrameShape(QFrame.Shape.NoFrame)
        defaults.setWidgetResizable(True)
        defaults.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        defaults.setWidget(self._build_defaults())
        defaults.setFixedWidth(DEFAULTS_WIDTH + defaults.verticalScrollBar().sizeHint().width())
        defaults.setMinimumHeight(160)
        body.addWidget(defaults, 0)
        self.tabs = QTabWidget()
        self.preview_model = PreviewModel(self)
        self.errors_model = RowErrorModel(self)
        self.preview_view = _table(self.preview_model, 2)
        header = self.preview_view.horizontalHeader()
        for column, width in enumerate((40, 110, 0, 56, 150, 140, 84)):
            if width:  # never narrower than its title ("Provider" showed as "Provide")
                header.resizeSection(column, max(width, header.sectionSizeHint(column)))
        self.errors_view = _table(self.errors_model, 2)
        # What would be accepted is as long as the problem: the two share the width.
        self.errors_view.horizontalHeader().setSectionResizeMode(
            3, QHeaderView.ResizeMode.Stretch)
        self.tabs.addTab(self.preview_view, "Preview")
        self.mapping_area = QScrollArea()
        self.mapping_area.setWidgetResizable(True)
        self.tabs.addTab(self.mapping_area, "Columns")
        self.tabs.addTab(self.errors_view, "Errors")
        self.tabs.addTab(self._build_routing(), "Routing")
        body.addWidget(self.tabs, 1)
        layout.addLayout(body, 1)

        summary = QFrame()
        summary.setObjectName("panel")
        summary_layout = QHBoxLayout(summary)
        summary_layout.setContentsMargins(14, 10, 14, 10)
        self.summary_label = QLabel()
        self.summary_label.setWordWrap(True)
        self.estimate_label = QLabel()
        self.estimate_label.setWordWrap(True)
        self.estimate_label.setProperty("role", "muted")
        # Rows pinned to an account not configured here: imported, but they wait for it
        # (issue 34, N1); said before Import, never refused.
        self.pinned_label = QLabel()
        self.pinned_label.setWordWrap(True)
        self.pinned_label.setStyleSheet(f"color: {theme.tokens().warning};")
        self.pinned_label.hide()
        texts = QVBoxLayout()
        texts.addWidget(self.summary_label)
        texts.addWidget(self.pinned_label)
        texts.addWidget(self.estimate_label)
        summary_layout.addLayout(texts, 1)
        layout.addWidget(summary)

        buttons = QHBoxLayout()
        self.error_label = QLabel()
        self.error_label.setWordWrap(True)
        self.error_label.setStyleSheet(f"color: {theme.tokens().danger};")
        buttons.addWidget(self.error_label, 1)
        cancel = QPushButton("Cancel")
        cancel.clicked.connect(self.reject)
        self.import_button = QPushButton("Import")
        self.import_button.setProperty("primary", True)
        self.import_button.setDefault(True)
        self.import_button.setEnabled(False)
        self.import_button.clicked.connect(self._import)
        buttons.addWidget(cancel)
        buttons.addWidget(self.import_button)
        layout.addLayout(buttons)
        self._provider_changed()

    # -- the defaults form -----------------------------------------------------------------
    def _build_defaults(self) -> QWidget:
        box = QFrame()
        box.setObjectName("panel")
        box.setFixedWidth(DEFAULTS_WIDTH)
        # Its fields never shrink below their height (the preview table gives way instead).
        box.setSizePolicy(QSizePolicy.Policy.Fixed, QSizePolicy.Policy.Minimum)
        form = QFormLayout(box)
        form.setContentsMargins(16, 14, 16, 14)
        form.setVerticalSpacing(7)  # one row more (images from other folders) fits 720 px
        form.setLabelAlignment(Qt.AlignmentFlag.AlignLeft)
        heading = QLabel("BATCH DEFAULTS")
        heading.setProperty("role", "section")
        form.addRow(heading)
        self.batch_name = QLineEdit()
        self.batch_name.setPlaceholderText(self.path.stem)
        self.provider = QComboBox()
        for kind in self._providers.kinds():
            self.provider.addItem(self._providers.get(kind).title, kind)
        self.provider.setCurrentIndex(max(0, self.provider.findData(self.options.provider)))
        self.model = QComboBox()
        self.duration = QDoubleSpinBox()
        self.duration.setRange(0, 600)
        self.duration.setDecimals(1)
        self.duration.setSuffix(" s")
        self.duration.setSpecialValueText("from the sheet / 5 s")
        self.aspect = QComboBox()
        self.resolution = QComboBox()
        self.output = QLineEdit(str(self.options.output_root))
        browse = QPushButton("Browse…")
        browse.clicked.connect(self._browse)
        output_row = QHBoxLayout()
        output_row.addWidget(self.output, 1)
        output_row.addWidget(browse)
        self.template = QLineEdit(self.options.filename_template)
        self.template.setToolTip("Fields: {row}, {name}, {seed}, {model}, {provider}, {date}, "
                                 "{n}, {id}, {batch}")
        self.max_spend = QDoubleSpinBox()
        self.max_spend.setRange(0, 1_000_000)
        self.max_spend.setDecimals(2)
        self.max_spend.setPrefix("$")
        self.max_spend.setSpecialValueText("no limit")
        self.max_spend.setToolTip(
            "The batch stops starting renders once their estimated prices would pass this "
            "sum; the rest wait (nothing fails). Change it later with 'reelqueue batch cap'.")
        # Takes (issue 35 item 1): the repeat of rows that give none, each with its own
        # seed. Beside "Stop at": the panel has no height left for a row of its own.
        self.takes = QSpinBox()
        self.takes.setRange(1, 100)
        self.takes.setValue(self.options.takes)
        self.takes.setPrefix("× ")
        self.takes.setToolTip(
            "Takes: how many renders of each row (rows with their own repeat keep it). "
            "Each take has its own seed (the row's seed + n, or drawn) and is paid for; "
            "above 10 the estimate says so. Pick the takes to keep in the gallery.")
        self.takes.valueChanged.connect(lambda _v: self._changed())
        spend_row = QHBoxLayout()
        spend_row.addWidget(self.max_spend, 1)
        takes_label = QLabel("Takes")
        takes_label.setBuddy(self.takes)
        spend_row.addWidget(takes_label)
        spend_row.addWidget(self.takes)
        self.test_run = QCheckBox("Test run: only the first")
        self.test_rows = QSpinBox()
        self.test_rows.setRange(1, 100_000)
        self.test_rows.setValue(3)
        self.test_rows.setSuffix(" rows")
        self.test_rows.setEnabled(False)
        self.test_run.toggled.connect(self.test_rows.setEnabled)
        self.test_run.toggled.connect(lambda _on: self._update_summary())
        self.test_rows.valueChanged.connect(lambda _v: self._update_summary())
        test_row = QHBoxLayout()
        test_row.addWidget(self.test_run)
        test_row.addWidget(self.test_rows)
        self.images_anywhere = QCheckBox("Allow images from other folders")
        self.images_anywhere.setChecked(self.options.allow_images_anywhere)
        self.images_anywhere.setToolTip(
            f"Reference images are taken from {self.path.parent} and its subfolders. "
            "Tick to also take images the sheet names elsewhere (what "
            "--allow-images-anywhere does on the command line); a symbolic link is "
            "still refused.")
        self.images_anywhere.toggled.connect(lambda _on: self._changed())
        form.addRow("Batch name", self.batch_name)
        form.addRow("Provider", self.provider)
        form.addRow("Model", self.model)
        form.addRow("Duration", self.duration)
        form.addRow("Aspect ratio", self.aspect)
        form.addRow("Resolution", self.resolution)
        form.addRow("Output folder", output_row)
        form.addRow("File names", self.template)
        form.addRow("Stop at", spend_row)
        form.addRow(test_row)
        form.addRow(self.images_anywhere)
        self.provider.currentIndexChanged.connect(lambda _i: self._provider_changed())
        for combo in (self.model, self.aspect, self.resolution):
            combo.currentIndexChanged.connect(lambda _i: self._changed())
        self.duration.valueChanged.connect(lambda _v: self._changed())
        for line in (self.batch_name, self.output, self.template):
            line.textEdited.connect(lambda _t: self._changed())
        return box

    def _build_routing(self) -> QWidget:
        """Routes across providers (issue 24, docs/routing.md): the batch's route for rows
        whose provider cell is empty, how candidates are ranked, how far a row may change."""
        area = QScrollArea()
        area.setWidgetResizable(True)
        inner = QWidget()
        form = QFormLayout(inner)
        form.setContentsMargins(14, 12, 14, 12)
        form.setVerticalSpacing(8)
        intro = QLabel(
            "A row may render on whichever of several providers can take it. Name them in "
            "a providers column (veo|runway|luma) or below for the whole batch. An account "
            "takes a routed row when no better-ranked provider has a free slot now; the "
            "row moves on when a provider runs out of credits, rejects its key, reaches a "
            "cap or refuses the row — never while a render of it may exist.")
        intro.setWordWrap(True)
        intro.setProperty("role", "muted")
        form.addRow(intro)
        self.route = QLineEdit(", ".join(self.options.route))
        self.route.setPlaceholderText("none (e.g. veo, runway, luma)")
        self.route.setToolTip("Providers, best first, for rows whose provider cell is empty. "
                              "Kinds: " + ", ".join(self._providers.kinds()))
        self.route_policy = QComboBox()
        for policy in RoutePolicy:
            self.route_policy.addItem(POLICY_WORDS[policy].capitalize(), policy.value)
        self.route_policy.setCurrentIndex(
            max(0, self.route_policy.findData(self.options.route_policy)))
        self.tolerance = QComboBox()
        for tolerance in Tolerance:
            self.tolerance.addItem(TOLERANCE_WORDS[tolerance].split(":")[0].capitalize(),
                                   tolerance.value)
        self.tolerance.setToolTip("How far a row's duration, aspect ratio and resolution may "
                                  "move to fit a provider; every move is shown per row.")
        self.tolerance.setCurrentIndex(max(0, self.tolerance.findData(self.options.tolerance)))
        self.route_on_policy = QCheckBox("Move on after a content-policy refusal")
        self.route_on_policy.setChecked(self.options.route_on_policy)
        form.addRow("Route", self.route)
        form.addRow("Rank", self.route_policy)
        form.addRow("Tolerance", self.tolerance)
        form.addRow(self.route_on_policy)
        self.route.textEdited.connect(lambda _t: self._changed())
        for combo in (self.route_policy, self.tolerance):
            combo.currentIndexChanged.connect(lambda _i: self._changed())
        self.route_on_policy.toggled.connect(lambda _on: self._changed())
        area.setWidget(inner)
        return area

    def _provider_changed(self) -> None:
        kind = self.provider.currentData()
        params = self._providers.get(kind).params
        for combo, values in ((self.model, params.models),
                              (self.aspect, params.aspect_ratios),
                              (self.resolution, params.resolutions)):
            combo.blockSignals(True)
            combo.clear()
            combo.addItem("provider default", None)
            for value in values:
                combo.addItem(value, value)
            combo.setEnabled(bool(values))
            combo.blockSignals(False)
        self._changed()

    def _folder_chosen(self, folder: str) -> None:
        self.output.setText(folder)
        self._changed()

    def _browse(self) -> None:
        dialog = QFileDialog(self, "Output folder", self.output.text())
        dialog.setFileMode(QFileDialog.FileMode.Directory)
        dialog.fileSelected.connect(self._folder_chosen)
        dialog.open()

    def _changed(self) -> None:
        self._replan_timer.start()

    def current_options(self) -> ImportOptions:
        mapping = self._mapping_from_boxes()
        return replace(
            self.options,
            provider=self.provider.currentData(),
            model=self.model.currentData(),
            duration=self.duration.value() or None,
            aspect_ratio=self.aspect.currentData(),
            resolution=self.resolution.currentData(),
            output_root=Path(self.output.text().strip() or str(self.options.output_root)),
            filename_template=self.template.text().strip() or self.options.filename_template,
            batch_name=self.batch_name.text().strip() or None,
            mapping=mapping,
            allow_images_anywhere=self.images_anywhere.isChecked(),
            takes=self.takes.value(),
            route=tuple(split_route(self.route.text())),
            route_policy=self.route_policy.currentData(),
            tolerance=self.tolerance.currentData(),
            route_on_policy=self.route_on_policy.isChecked(),
        )

    def _emit_replan(self) -> None:
        emit(self.replanRequested, self.current_options())

    # -- mapping -------------------------------------------------------------------------
    def _mapping_from_boxes(self) -> ColumnMapping | None:
        if not self._mapping_boxes:
            return self.options.mapping
        by_field: dict[str, str] = {}
        ignored: set[str] = set()
        for header, box in self._mapping_boxes.items():
            value = box.currentData()
            if value == IGNORE:
                ignored.add(header)
            elif value and value not in by_field:
                by_field[value] = header
        return ColumnMapping(by_field=by_field, ignored=frozenset(ignored))

    def _build_mapping(self, plan: ImportPlan) -> None:
        headers = display_headers(plan.sheet.headers)
        if headers == self._headers:
            for header, box in self._mapping_boxes.items():
                self._select(box, plan.mapping, header)
            return
        self._headers = headers
        inner = QWidget()
        grid = QGridLayout(inner)
        grid.setContentsMargins(14, 12, 14, 12)
        grid.setHorizontalSpacing(16)
        grid.setVerticalSpacing(8)
        for column, text in enumerate(("COLUMN IN THE SHEET", "USED AS")):
            label = QLabel(text)
            label.setProperty("role", "section")
            grid.addWidget(label, 0, column)
        self._mapping_boxes = {}
        for row, header in enumerate(headers, start=1):
            grid.addWidget(QLabel(header), row, 0)
            box = QComboBox()
            box.addItem(KEEP, None)
            for name in FIELDS:
                box.addItem(name.replace("_", " "), name)
            box.addItem("ignore (not even exported)", IGNORE)
            self._select(box, plan.mapping, header)
            box.currentIndexChanged.connect(lambda _i: self._changed())
            grid.addWidget(box, row, 1)
            self._mapping_boxes[header] = box
        grid.setRowStretch(len(headers) + 1, 1)
        grid.setColumnStretch(2, 1)
        self.mapping_area.setWidget(inner)

    @staticmethod
    def _select(box: QComboBox, mapping: ColumnMapping, header: str) -> None:
        wanted: str | None = None
        for field_name, mapped in mapping.by_field.items():
            if mapped == header:
                wanted = field_name
        if header in mapping.ignored:
            wanted = IGNORE
        box.blockSignals(True)
        box.setCurrentIndex(max(0, box.findData(wanted)) if wanted else 0)
        box.blockSignals(False)

    # -- results -------------------------------------------------------------------------
    def set_plan(self, plan: ImportPlan) -> None:
        self.plan = plan
        self.error_label.setText("")
        sheet = plan.sheet
        where = f" · sheet {sheet.sheet_name}" if sheet.sheet_name else ""
        self.source_label.setText(
            f"{sheet.format.upper()}{where} · header on row {sheet.header_row_number} · "
            f"{plan.valid_rows + len({e.row_number for e in plan.errors}):,} rows · "
            f"batch “{plan.batch.name}” in {plan.batch.output_dir}")
        self.preview_model.set_rows(plan.preview(PREVIEW_ROWS))
        if any(row.route is not None for row in self.preview_model.rows):
            # routed rows list their candidates and prices in the Provider column: wide
            # enough to read them, the prompt giving way (it has its own tooltip)
            self.preview_view.resizeColumnToContents(3)
            header = self.preview_view.horizontalHeader()
            header.resizeSection(3, min(ROUTE_COLUMN_MAX, header.sectionSize(3)))
        self.errors_model.set_errors(plan.errors)
        self.tabs.setTabText(2, f"Errors ({len(plan.errors)})" if plan.errors else "Errors")
        self._build_mapping(plan)
        self._update_summary()

    def set_error(self, message: str) -> None:
        self.plan = None
        self.error_label.setText(message)
        self.import_button.setEnabled(False)
        self.import_button.setText("Import")

    def rows_to_import(self) -> int | None:
        return self.test_rows.value() if self.test_run.isChecked() else None

    def spend_cap(self) -> float | None:
        """The batch's spend cap in dollars; None when "no limit"."""
        value = self.max_spend.value()
        return value if value > 0 else None

    def _update_summary(self) -> None:
        whole = self.plan
        if whole is None:
            return
        count = self.rows_to_import()
        self.preview_model.set_test_rows(count)
        # A test run's summary and estimate count only its rows (what Import will add).
        plan = whole.first_rows(count) if count is not None else whole
        new = len(plan.new_jobs)
        refused_rows = len({e.row_number for e in plan.errors})
        parts = [f"<b>{fmt.count(new, 'new job')}</b>"]
        if count is not None:
            parts[0] = (f"<b>{fmt.count(new, 'new job')}</b> (a test run of the first "
                        f"{fmt.count(count, 'row')} of {fmt.number(whole.valid_rows)})")
        if plan.already_present:
            parts.append(f"{fmt.number(plan.already_present)} already imported (skipped)")
        if refused_rows:
            parts.append(f"<span style='color:{theme.tokens().danger}'>"
                         f"{fmt.count(refused_rows, 'row refused', 'rows refused')} "
                         "— see Errors</span>")
        if plan.unmapped:
            parts.append(f"kept as extra columns: {', '.join(plan.unmapped)}")
        self.summary_label.setText(" · ".join(parts))
        pinned = " ".join(p.describe() for p in whole.pinned_elsewhere)
        self.pinned_label.setText(pinned)
        self.pinned_label.setVisible(bool(pinned))
        estimate = plan.estimate
        # The intake's words (the command line says the same): a line without a price says
        # "price unknown — set it with ..." and how, never $0.00.
        lines = [line.describe(with_sources=False) for line in estimate.lines]
        text = f"Estimated cost {estimate.describe_total()}"
        takes = plan.takes_words()
        if takes is not None:  # over 10 takes of a row: their price said first
            text = f"{takes} {text}"
        if lines:
            text += " — " + "; ".join(lines)
        worst = plan.worst_case
        if worst.routed_jobs:  # routed rows may end on a dearer provider than their first
            text += (f". Worst case, every routed row on its dearest provider: "
                     f"{worst.describe()}")
        if estimate.sources:
            text += f". Prices: {'; '.join(estimate.sources)}; an estimate, not an invoice."
        self.estimate_label.setText(text)
        to_add = new
        self.import_button.setEnabled(not whole.refused and (to_add > 0 or count is not None))
        self.import_button.setText(f"Test run {fmt.count(count, 'row')}" if count is not None
                                   else f"Import {fmt.count(to_add, 'job')}" if to_add
                                   else "Nothing new")

    def _import(self) -> None:
        if self.plan is not None:
            self.import_button.setEnabled(False)
            emit(self.importRequested, self.plan, self.rows_to_import())

    def stop_timers(self) -> None:
        self._replan_timer.stop()
