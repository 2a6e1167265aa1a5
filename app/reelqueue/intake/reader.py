"""Reading any spreadsheet a user has: :func:`read_sheet` picks the reader.

The reader is chosen from the file's extension *and* its first bytes (a workbook renamed
``.csv`` is refused with a hint instead of being read as garbage). Files above a size limit
are refused before being read, and every sheet is measured against a
:class:`~.limits.SheetLimits` budget before (workbooks) or while (text) it is read.
Readers live in :mod:`.text_sheet` (CSV, TSV, TXT) and
:mod:`.workbook` (XLSX, XLSM, XLSB, XLS, ODS through python-calamine).
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from reelqueue.domain.errors import InputError
from reelqueue.intake.limits import SheetLimits, check_text_size
from reelqueue.intake.sheet import (
    BINARY_MAGICS,
    DEFAULT_MAX_FILE_BYTES,
    TEXT_EXTENSIONS,
    WORKBOOK_EXTENSIONS,
    Sheet,
)
from reelqueue.intake.text_sheet import decode_text, read_text_sheet
from reelqueue.intake.workbook import read_workbook


def read_sheet(
    path: Path,
    *,
    sheet: str | None = None,
    delimiter: str | None = None,
    encoding: str | None = None,
    max_bytes: int = DEFAULT_MAX_FILE_BYTES,
    limits: SheetLimits | None = None,
) -> Sheet:
    """Read ``path`` into a :class:`Sheet`, or raise :class:`InputError` saying why not.

    ``limits`` is the budget the sheet must fit (:class:`.limits.SheetLimits`); without
    it the defaults, with ``max_bytes`` as the file-size cap.
    """
    path = Path(path)
    limits = limits or SheetLimits(max_file_bytes=max_bytes)
    data = read_limited(path, limits.max_file_bytes)
    identity = hashlib.sha256(data).hexdigest()
    suffix = path.suffix.lower()
    if suffix in WORKBOOK_EXTENSIONS:
        del data  # the workbook is measured and read from the file
        return read_workbook(path, WORKBOOK_EXTENSIONS[suffix], sheet=sheet, identity=identity,
                             limits=limits)
    if suffix in TEXT_EXTENSIONS or suffix == "":
        fmt = TEXT_EXTENSIONS.get(suffix, "csv")
        refuse_binary(path, data)
        text = decode_text(path, data, encoding)
        del data  # from here on only the text: a 100 MB file is not held twice
        check_text_size(path, text[0], limits)
        return read_text_sheet(
            path, text, fmt, delimiter=delimiter, identity=identity, limits=limits,
        )
    known = ", ".join(sorted({*TEXT_EXTENSIONS, *WORKBOOK_EXTENSIONS}))
    raise InputError(
        f"{path.name}: ReelQueue does not read {suffix!r} files. "
        f"Save the sheet as one of: {known}."
    )


def read_limited(path: Path, max_bytes: int) -> bytes:
    """The file's bytes, after refusing a missing, empty or too-large file."""
    try:
        size = path.stat().st_size
    except FileNotFoundError:
        raise InputError(f"{path}: no such file.") from None
    except OSError as exc:
        raise InputError(f"{path}: cannot be read ({exc.strerror}).") from exc
    if not path.is_file():
        raise InputError(f"{path}: is a folder, not a spreadsheet file.")
    if size > max_bytes:
        raise InputError(
            f"{path.name} is {size / 1_048_576:.0f} MB; the limit is "
            f"{max_bytes / 1_048_576:.0f} MB. Split the sheet into smaller files "
            "(or raise the limit if you really mean it)."
        )
    if size == 0:
        raise InputError(f"{path.name} is empty: there is nothing to import.")
    try:
        return path.read_bytes()
    except OSError as exc:
        raise InputError(f"{path}: cannot be read ({exc.strerror}).") from exc


def refuse_binary(path: Path, data: bytes) -> None:
    """Refuse a file named as text whose first bytes say it is something else."""
    for magic, what in BINARY_MAGICS.items():
        if data.startswith(magic):
            raise InputError(
                f"{path.name} is named like a text sheet but is {what}, not text. "
                "Give it its real extension (.xlsx, .ods, ...) or export it as CSV."
            )
