"""The one shape every spreadsheet is read into: headers and rows numbered as the user sees them.

Also the limits shared by the readers (file size, width) and small helpers they use.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple, NoReturn

from reelqueue.domain.errors import InputError
from reelqueue.intake.mapping import ALIAS_TO_FIELD, normalise_header

if TYPE_CHECKING:
    from reelqueue.intake.limits import SheetLimits

DEFAULT_MAX_FILE_BYTES = 100 * 1024 * 1024
"""Files above this are refused before being read (configurable per import)."""

HEADER_SEARCH_ROWS = 20
"""The header is looked for among this many rows at the top (titles may sit above it)."""

MAX_COLUMNS = 16_384
"""Excel's own column limit; a wider sheet is refused rather than guessed at."""

TEXT_EXTENSIONS = {".csv": "csv", ".tsv": "tsv", ".tab": "tsv", ".txt": "txt"}
WORKBOOK_EXTENSIONS = {
    ".xlsx": "xlsx", ".xlsm": "xlsm", ".xlsb": "xlsb", ".xls": "xls", ".ods": "ods",
}

ZIP_MAGIC = b"PK\x03\x04"
OLE_MAGIC = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"
BINARY_MAGICS: dict[bytes, str] = {
    ZIP_MAGIC: "a ZIP archive (an Excel or LibreOffice workbook?)",
    OLE_MAGIC: "an old-style Office file (an .xls workbook, or a password-protected one?)",
    b"%PDF": "a PDF document",
    b"\x89PNG": "a PNG image",
    b"\xff\xd8\xff": "a JPEG image",
    b"\x1f\x8b": "a gzip archive",
    b"\x7fELF": "a program",
}


class SheetRow(NamedTuple):
    """One non-empty row (a named tuple: a sheet may have a hundred thousand of them).

    Attributes:
        row_number: the number the user sees in their spreadsheet program (1-based).
        values: the cells, typed where the format types them (str for CSV and TXT).
    """

    row_number: int
    values: list[Any]


@dataclass(frozen=True)
class Sheet:
    """A sheet as read, before any mapping.

    Attributes:
        headers: the header row, as text ("" for an empty header cell).
        rows: the data rows below the header, empty rows left out.
        format: "csv", "tsv", "txt", "xlsx", "xlsm", "xlsb", "xls" or "ods".
        sheet_name: the worksheet read, for workbooks.
        identity: sha256 of the file's bytes.
        header_row_number: where the header is, as the user sees it.
        source_path: the file, absolute.
        details: how it was read (encoding, delimiter), for messages.
    """

    headers: list[str]
    rows: list[SheetRow]
    format: str
    sheet_name: str | None
    identity: str
    header_row_number: int = 1
    source_path: str = ""
    details: str = ""


def check_width(path: Path, width: int) -> None:
    if width > MAX_COLUMNS:
        raise InputError(
            f"{path.name} has {width:,} columns; ReelQueue reads at most {MAX_COLUMNS:,} "
            "(Excel's own limit). Is it really a table of prompts?"
        )


def check_rows(path: Path, rows: int, limits: SheetLimits) -> None:
    """Refuse a sheet with more data rows than could ever be queued."""
    if rows > limits.max_rows:
        raise_too_many_rows(path, limits.max_rows, rows)


def raise_too_many_rows(path: Path, max_rows: int, seen: int) -> NoReturn:
    raise InputError(
        f"{path.name} has more than {max_rows:,} rows ({seen:,} read so far, then ReelQueue "
        f"stopped reading); the queue takes at most {max_rows:,} jobs, so nothing was "
        "imported. Split the sheet, or raise the limit with --max-waiting."
    )


def header_text(value: object) -> str:
    """A header cell as text: 2024.0 reads as "2024", None as ""."""
    if value is None:
        return ""
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value).strip()


def find_header_index(
    rows: Sequence[Sequence[object]], *, require_prompt: bool = False
) -> int | None:
    """The index of the first of the top rows that names a known column (a prompt column
    when ``require_prompt``); None when none does."""
    for index, row in enumerate(rows[:HEADER_SEARCH_ROWS]):
        fields = {
            ALIAS_TO_FIELD.get(normalise_header(cell)) for cell in row if isinstance(cell, str)
        }
        if ("prompt" in fields) if require_prompt else (fields - {None}):
            return index
    return None
