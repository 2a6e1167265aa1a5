"""The way back out: a batch's rows with their original columns and their results.

Every job becomes one row: the sheet's original columns (kept as metadata at import) then
:data:`RESULT_COLUMNS` (``price_usd``: the price-table estimate of one render kept at
import, the spend caps' price; ``cost_usd``: what the provider reported; ``output_host``:
the machine that wrote the finished file, on a team store the one that holds it). Text cells
that a spreadsheet would run as a formula (starting with ``= + - @``, or a tab or
carriage return) get a leading apostrophe, the usual guard against formula injection;
numbers stay numbers. CSV is written in UTF-8 with a BOM, so Excel opens it in the right
encoding. The file is written beside its target and renamed over it, so a crash never
leaves half an export.
"""

from __future__ import annotations

import csv
import os
import re
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, Literal

from reelqueue.domain.errors import InputError, OutputNotWritable
from reelqueue.domain.models import Batch, Job
from reelqueue.intake.apply import IntakeStore

RESULT_COLUMNS: tuple[str, ...] = (
    "source_row", "status", "attempts", "output_path", "output_host", "provider", "account_used",
    "provider_job_id", "price_usd", "cost_usd", "error_class", "error_label", "error_message",
)
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")
FALLBACK_COLUMNS = ("row", "name", "prompt")
PLAIN_NUMBER = re.compile(r"-?(0|[1-9][0-9]{0,14})(\.[0-9]{1,15})?")


def escape_formula(value: str) -> str:
    """``=1+1`` -> ``'=1+1``: shown as text, never run."""
    return "'" + value if value.startswith(FORMULA_STARTS) else value


def export_results(
    store: IntakeStore, batch_id: int, path: Path, fmt: Literal["csv", "xlsx"]
) -> int:
    """Write the batch to ``path``; return the number of rows written."""
    batch = store.get_batch(batch_id)
    if batch is None:
        raise InputError(f"There is no batch {batch_id}; 'reelqueue status' lists them.")
    jobs = sorted(
        store.list_jobs(batch_id=batch_id),
        key=lambda job: (job.row_number or 0, int(job.metadata.get("repeat", 1)), job.id),
    )
    original = _original_columns(batch, jobs)
    header = original + [_result_name(name, original) for name in RESULT_COLUMNS]
    rows = [_row(job, original) for job in jobs]
    path = Path(path)
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        if fmt == "csv":
            _write_csv(temporary, header, rows)
        elif fmt == "xlsx":
            _write_xlsx(temporary, header, rows, batch.name)
        else:
            raise InputError(f"Unknown export format {fmt!r}: use csv or xlsx.")
        os.replace(temporary, path)
    except OSError as exc:
        raise OutputNotWritable(f"{path} cannot be written ({exc.strerror}).") from exc
    finally:
        temporary.unlink(missing_ok=True)
    return len(rows)


def _original_columns(batch: Batch, jobs: Sequence[Job]) -> list[str]:
    intake = batch.settings.get("intake")
    columns: list[str] = list(intake.get("columns", [])) if isinstance(intake, dict) else []
    seen = set(columns)
    for job in jobs:
        for name in job.metadata.get("columns", {}):
            if name not in seen:
                seen.add(name)
                columns.append(name)
    return columns or list(FALLBACK_COLUMNS)


def _result_name(name: str, original: Sequence[str]) -> str:
    folded = {column.casefold() for column in original}
    return f"reelqueue_{name}" if name.casefold() in folded else name


def _row(job: Job, original: Sequence[str]) -> list[Any]:
    cells = job.metadata.get("columns")
    if not isinstance(cells, dict):
        cells = {"row": job.row_number, "name": job.name, "prompt": job.prompt}
    return [cells.get(name) for name in original] + [
        job.row_number, job.state.value, job.attempts, job.output_path, job.output_host,
        job.provider, job.account,
        job.provider_job_id, job.metadata.get("price"), job.cost, job.error_class,
        job.error_label, job.error_message,
    ]


def _csv_cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    if isinstance(value, int | float):
        return str(value)
    return escape_formula(str(value))


def _write_csv(target: Path, header: list[str], rows: list[list[Any]]) -> None:
    with target.open("w", encoding="utf-8-sig", newline="") as stream:
        writer = csv.writer(stream)
        writer.writerow([escape_formula(name) for name in header])
        writer.writerows([_csv_cell(value) for value in row] for row in rows)
        stream.flush()
        os.fsync(stream.fileno())


def _xlsx_rows(header: list[str], rows: list[list[Any]]) -> Iterator[list[Any]]:
    from openpyxl.cell.cell import ILLEGAL_CHARACTERS_RE

    def cell(value: Any) -> Any:
        if isinstance(value, str):
            if PLAIN_NUMBER.fullmatch(value):
                # A CSV's "42" goes back as the number 42, not as "number stored as text";
                # "007" (leading zero) stays text.
                return float(value) if "." in value else int(value)
            return escape_formula(ILLEGAL_CHARACTERS_RE.sub("", value))
        return value

    yield [cell(name) for name in header]
    for row in rows:
        yield [cell(value) for value in row]


def _write_xlsx(target: Path, header: list[str], rows: list[list[Any]], title: str) -> None:
    from openpyxl import Workbook

    book = Workbook(write_only=True)
    sheet = book.create_sheet(title=_sheet_title(title))
    for values in _xlsx_rows(header, rows):
        sheet.append(values)
    book.save(target)


def _sheet_title(name: str) -> str:
    """Excel sheet titles: at most 31 characters, none of ``[]:*?/\\``."""
    cleaned = "".join("_" if char in "[]:*?/\\" else char for char in name).strip("'")
    return cleaned[:31] or "Results"
