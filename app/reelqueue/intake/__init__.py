"""Spreadsheets in, results out: the intake the window and the command line share.

Public API::

    sheet = read_sheet(path)                       # any CSV/TSV/TXT/XLSX/XLSM/XLS/ODS
    mapping = suggest_mapping(sheet.headers)       # header aliases -> fields
    plan = plan_import(path, ImportOptions(...), existing_keys=store.existing_job_keys)
    plan.preview(10); plan.errors; plan.estimate   # what the user reviews
    result = apply_import(store, plan, now)        # the batch, its jobs, its manifest
    export_results(store, batch_id, path, "csv")   # original columns + results

Every problem with the input is an :class:`~reelqueue.domain.errors.InputError` (the whole
file) or a :class:`RowError` (one cell); nothing is written before the plan is applied.
"""

from __future__ import annotations

from reelqueue.intake.apply import ImportResult, IntakeStore, apply_import
from reelqueue.intake.catalog import ProviderCatalog, RegistryCatalog, StaticCatalog
from reelqueue.intake.estimate import (
    NO_ACCOUNTS,
    UNKNOWN,
    AccountPrices,
    CostEstimate,
    CostLine,
    PriceQuote,
    money,
)
from reelqueue.intake.export import RESULT_COLUMNS, escape_formula, export_results
from reelqueue.intake.mapping import FIELDS, ColumnMapping, parse_map_options, suggest_mapping
from reelqueue.intake.planner import ImportOptions, ImportPlan, PreviewRow, plan_import
from reelqueue.intake.reader import read_sheet
from reelqueue.intake.rows import RowError
from reelqueue.intake.sheet import DEFAULT_MAX_FILE_BYTES, Sheet, SheetRow

__all__ = [
    "DEFAULT_MAX_FILE_BYTES",
    "FIELDS",
    "NO_ACCOUNTS",
    "RESULT_COLUMNS",
    "UNKNOWN",
    "AccountPrices",
    "ColumnMapping",
    "CostEstimate",
    "CostLine",
    "ImportOptions",
    "ImportPlan",
    "ImportResult",
    "IntakeStore",
    "PreviewRow",
    "PriceQuote",
    "ProviderCatalog",
    "RegistryCatalog",
    "RowError",
    "Sheet",
    "SheetRow",
    "StaticCatalog",
    "apply_import",
    "escape_formula",
    "export_results",
    "money",
    "parse_map_options",
    "plan_import",
    "read_sheet",
    "suggest_mapping",
]
