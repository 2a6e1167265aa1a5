"""Importing a batch sent by another program (the HTTP API's ``POST /v1/batches``): a
spreadsheet in any format the import takes, or a JSON list of jobs (written as a CSV and
imported the same way). The import's own planner and apply run unchanged, so the rows,
their errors, their keys (a re-upload adds nothing twice) and the queue limit are exactly
those of ``reelqueue import``.

The upload is kept in a private folder of the data folder only while it is planned and
imported, then deleted. Reads for the plan go through the journal feed (the engine's
journal thread is not held while a sheet is parsed); the apply is the import's own
(:func:`reelqueue.application.imports.apply_import`): with an engine running, the engine's
import command, whose file work (folder, manifest) runs off the journal thread and which
wakes the pump itself.
"""

from __future__ import annotations

import asyncio
import csv
import io
import shutil
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from reelqueue.application import imports
from reelqueue.application.feed import JournalFeed
from reelqueue.application.session import Session
from reelqueue.application.submit import JOB_PARAM_FIELDS, QueueFull
from reelqueue.domain.errors import InputError
from reelqueue.intake.apply import ImportResult
from reelqueue.intake.catalog import RegistryCatalog
from reelqueue.intake.filenames import sanitise_component
from reelqueue.intake.planner import ImportOptions, ImportPlan, plan_import
from reelqueue.intake.rows import RowError

__all__ = ["JSON_COLUMNS", "SHEET_SUFFIXES", "BatchUploadOutcome", "json_rows_as_csv",
           "upload_batch"]

SHEET_SUFFIXES = (".csv", ".tsv", ".txt", ".xlsx", ".xlsm", ".xls", ".ods")
JSON_COLUMNS = ("prompt", "provider", "account", "name", "priority", "id", *JOB_PARAM_FIELDS)


@dataclass(frozen=True)
class BatchUploadOutcome:
    """Attributes:
    plan: what the import planned (preview, estimate, row errors).
    result: what it did (None for a dry run).
    """

    plan: ImportPlan
    result: ImportResult | None = None
    errors: list[RowError] = field(default_factory=list)


def json_rows_as_csv(rows: object) -> bytes:
    """A JSON list of job objects as a CSV the import reads; InputError when it is not one."""
    if not isinstance(rows, list) or not rows:
        raise InputError("A JSON batch is a non-empty list of job objects.")
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(JSON_COLUMNS)
    for number, row in enumerate(rows, start=1):
        if not isinstance(row, dict):
            raise InputError(f"Item {number} of the list is not a JSON object.")
        params = row.get("params", {})
        if not isinstance(params, dict):
            raise InputError(f"Item {number}: params must be a JSON object.")
        unknown = sorted((set(row) - {*JSON_COLUMNS, "params"}) | (set(params) -
                                                                   set(JOB_PARAM_FIELDS)))
        if unknown:
            raise InputError(f"Item {number}: unknown field {unknown[0]!r}.")
        cells: list[Any] = []
        for column in JSON_COLUMNS:
            value = params.get(column) if column in JOB_PARAM_FIELDS else row.get(column)
            if value is not None and not isinstance(value, str | int | float):
                raise InputError(f"Item {number}: {column} must be a string or a number.")
            cells.append("" if value is None else value)
        writer.writerow(cells)
    return out.getvalue().encode("utf-8")


async def upload_batch(session: Session, feed: JournalFeed, upload_root: Path,
                       content: bytes, file_name: str, options: ImportOptions, *,
                       dry_run: bool) -> BatchUploadOutcome:
    suffix = Path(file_name).suffix.lower()
    if suffix not in SHEET_SUFFIXES:
        raise InputError(f"Cannot import a {suffix or 'nameless'} file: send one of "
                         + ", ".join(SHEET_SUFFIXES) + " or a JSON list.")
    folder = upload_root / uuid.uuid4().hex
    folder.mkdir(parents=True, mode=0o700)
    path = folder / (sanitise_component(Path(file_name).stem, "upload") + suffix)
    try:
        await asyncio.to_thread(path.write_bytes, content)
        # A re-upload without route settings reuses the batch's: a routed row's key
        # hashes its policy and tolerance.
        journal = session.journal
        options = await journal.call(imports.with_saved_route, journal.sync, path, options)
        prices = await imports.account_prices(session)
        plan = await asyncio.to_thread(plan_import, path, options,
                                       existing_keys=feed.existing_keys,
                                       catalog=RegistryCatalog(session.providers),
                                       now=session.clock.now(), accounts=prices)
        if dry_run or plan.refused:
            return BatchUploadOutcome(plan, None, list(plan.errors))
        try:
            result = await imports.apply_import(session, plan)
        except InputError:
            journal = session.journal
            waiting = await journal.count_waiting()
            if waiting + len(plan.new_jobs) > options.max_waiting:
                raise QueueFull(waiting, options.max_waiting) from None
            raise
        return BatchUploadOutcome(plan, result, list(result.errors))
    finally:
        await asyncio.to_thread(shutil.rmtree, folder, True)
