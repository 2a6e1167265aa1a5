"""Workbooks (XLSX, XLSM, XLSB, XLS, ODS) read through python-calamine.

calamine gives typed cells (numbers arrive as floats: 42 is 42.0; dates as ``datetime``)
and the cached results of formulas, which is what the user saw when they last saved.
It skips the empty rows and columns before the data, so the sheet's start offset is added
back to keep row numbers as the user sees them. A formula in a file that no spreadsheet
program ever recalculated (e.g. written by a script) has no cached result and reads as
empty.
"""

from __future__ import annotations

from collections.abc import Sequence
from operator import itemgetter
from pathlib import Path
from typing import Any

import python_calamine

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
    raise_too_many_rows,
)
from reelqueue.intake.workbook_child import read_in_child

MEASURABLE = frozenset({"xlsx", "xlsm", "ods"})
"""ZIP workbooks of XML parts: measured before calamine opens them."""

RESAVE_HINT = "Open it in your spreadsheet program, save it again, and import the new file."


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


def load_cells(
    path: Path, fmt: str, *, sheet: str | None, max_rows: int
) -> tuple[str, list[tuple[int, list[Any]]]]:
    """The chosen sheet's name and its non-empty rows with their numbers as the user sees
    them, read by calamine; reading stops (InputError) once the rows pass ``max_rows``
    plus the rows the header may sit below."""
    try:
        # from_path, not the bytes: calamine picks the reader by extension, and only then
        # recognises an encrypted (password-protected) container for what it is.
        book = python_calamine.CalamineWorkbook.from_path(str(path))
        with book:
            name = choose_sheet(path, book, sheet)
            worksheet = book.get_sheet_by_name(name)
            # iter_rows starts at the sheet's first row (empty rows above the data
            # included), one row at a time: only rows with content are kept, numbered.
            rows: list[tuple[int, list[Any]]] = []
            ceiling = max_rows + HEADER_SEARCH_ROWS
            for number, row in enumerate(worksheet.iter_rows(), start=1):
                if _has_content(row):
                    rows.append((number, row))
                    if len(rows) > ceiling:
                        raise_too_many_rows(path, max_rows, len(rows))
    except python_calamine.PasswordError:
        raise InputError(
            f"{path.name} is password-protected, so ReelQueue cannot read it. Remove the "
            "password in your spreadsheet program (Excel: File > Info > Protect Workbook), "
            "save, and import again."
        ) from None
    except python_calamine.CalamineError as exc:
        raise InputError(
            f"{path.name} cannot be read as a workbook ({fmt.upper()}): it is damaged or not "
            f"really one ({exc}). {RESAVE_HINT}"
        ) from None
    except BaseException as exc:
        # A malformed file can make the Rust reader panic; pyo3 raises that as
        # PanicException, which derives from BaseException and cannot be imported by name.
        if type(exc).__name__ != "PanicException":
            raise
        raise InputError(
            f"{path.name} cannot be read as a workbook ({fmt.upper()}): it is damaged. "
            f"{RESAVE_HINT}"
        ) from None
    return name, rows


def choose_sheet(path: Path, book: python_calamine.CalamineWorkbook, wanted: str | None) -> str:
    """The sheet the user named (exact, any case, or a 1-based number); else the first
    visible worksheet with a prompt column, else the first visible worksheet."""
    names = list(book.sheet_names)
    if not names:
        raise InputError(f"{path.name} has no sheets.")
    if wanted is None:
        visible = [
            meta.name for meta in book.sheets_metadata
            if meta.visible == python_calamine.SheetVisibleEnum.Visible
            and meta.typ == python_calamine.SheetTypeEnum.WorkSheet
        ] or names
        for name in visible:
            top = book.get_sheet_by_name(name).to_python(nrows=HEADER_SEARCH_ROWS)
            if find_header_index(top, require_prompt=True) is not None:
                return name
        return visible[0]
    if wanted in names:
        return wanted
    folded = {name.casefold(): name for name in names}
    if wanted.strip().casefold() in folded:
        return folded[wanted.strip().casefold()]
    if wanted.strip().isdigit() and 1 <= int(wanted) <= len(names):
        return names[int(wanted) - 1]
    listed = ", ".join(repr(name) for name in names)
    raise InputError(f"{path.name} has no sheet named {wanted!r}. Its sheets are: {listed}.")


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


def _has_content(row: Sequence[object]) -> bool:
    for cell in row:
        if cell is not None and (type(cell) is not str or (cell and not cell.isspace())):
            return True
    return False
