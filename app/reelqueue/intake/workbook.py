"""Workbooks (XLSX, XLSM, XLSB, XLS, ODS) read through python-calamine.

calamine gives typed cells (numbers arrive as floats: 42 is 42.0; dates as ``datetime``)
and the cached results of formulas, which is what the user saw when they last saved.
It skips the empty rows and columns before the data, so the sheet's start offset is added
back to keep row numbers as the user sees them. A formula in a file that no spreadsheet
program ever recalculated (e.g. written by a script) has no cached result and reads as
empty.
"""

from __future__ import annotations

from operator import itemgetter
from pathlib import Path
from typing import Any

from reelqueue.domain.errors import InputError
from reelqueue.intake.limits import SheetLimits, measure_workbook
from reelqueue.intake.sheet import (
    HEADER_SEARCH_ROWS,
    ZIP_MAGIC,
    Sheet,
    SheetRow,
    check_rows,
    check_width,
    find_header_index,
    header_text,
)
from reelqueue.intake.workbook_cells import load_cells
from reelqueue.intake.workbook_child import read_in_child

MEASURABLE = frozenset({"xlsx", "xlsm", "ods"})
"""ZIP workbooks of XML parts: measured before calamine opens them."""


def read_workbook(
    path: Path, fmt: str, *, sheet: str | None, identity: str, limits: SheetLimits
) -> Sheet:
    """Measure, then read: calamine only ever sees a workbook that fit ``limits``.

    XLSX, XLSM and ODS (ZIP containers) are measured by :func:`.limits.measure_workbook`
    and read here; XLS, XLSB and anything else (an encrypted workbook is an OLE file) are
    read by a memory-limited child process (:mod:`.workbook_child`).
    """
    with path.open("rb") as stream:
        is_zip = stream.read(4) == ZIP_MAGIC
    if is_zip and fmt in MEASURABLE:
        measure_workbook(path, fmt, limits)
        name, rows = load_cells(path, fmt, sheet=sheet, max_rows=limits.max_rows)
    else:
        name, rows = read_in_child(path, fmt, sheet=sheet, max_rows=limits.max_rows,
                                   max_answer_bytes=limits.max_text_bytes)
    return _to_sheet(path, rows, fmt, name, identity, limits)


def _to_sheet(
    path: Path,
    content_rows: list[tuple[int, list[Any]]],
    fmt: str,
    name: str,
    identity: str,
    limits: SheetLimits,
) -> Sheet:
    # calamine's rows are fresh lists: they become the rows' values without a copy.
    numbered = [SheetRow(number, values) for number, values in content_rows]
    del content_rows
    if not numbered:
        raise InputError(
            f"The sheet {name!r} of {path.name} is empty. Choose another sheet with --sheet."
        )
    header_index = find_header_index([row.values for row in numbered[:HEADER_SEARCH_ROWS]]) or 0
    header_row_number, header_cells = numbered[header_index]
    rows = numbered[header_index + 1:]
    check_rows(path, len(rows), limits)
    width = max(map(len, map(itemgetter(1), numbered)))
    check_width(path, width)
    headers = [header_text(cell) for cell in header_cells]
    headers += [""] * (width - len(headers))
    return Sheet(
        headers=headers,
        rows=rows,
        format=fmt,
        sheet_name=name,
        identity=identity,
        header_row_number=header_row_number,
        source_path=str(path.resolve()),
        details=f"sheet {name!r}",
    )
