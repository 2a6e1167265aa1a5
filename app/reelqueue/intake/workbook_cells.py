"""A workbook's cells read by python-calamine: the chosen sheet's non-empty rows. Run in
this process (a measured ZIP workbook, :mod:`.workbook`) or in a memory-limited child
(:mod:`.workbook_child`); both import it, neither the other.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import python_calamine

from reelqueue.domain.errors import InputError
from reelqueue.intake.sheet import HEADER_SEARCH_ROWS, find_header_index, raise_too_many_rows

__all__ = ["RESAVE_HINT", "choose_sheet", "load_cells"]

RESAVE_HINT = "Open it in your spreadsheet program, save it again, and import the new file."


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


def _has_content(row: Sequence[object]) -> bool:
    for cell in row:
        if cell is not None and (type(cell) is not str or (cell and not cell.isspace())):
            return True
    return False
