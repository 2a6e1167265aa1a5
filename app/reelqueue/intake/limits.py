"""Sheets are measured before they are loaded: the budget, and the pre-scan of workbooks.

calamine (python-calamine) builds a *dense* range from the smallest to the largest cell of
a sheet, 32 bytes a cell, and aborts the whole process when that allocation fails (a
1,550-byte XLSX with cells A1 and XFD1048576 asks for 549 GB; no Python handler can catch
an abort). So before calamine sees an XLSX, XLSM or ODS file, :func:`measure_workbook`
reads the file the cheap way and refuses it above a :class:`SheetLimits` budget:

- the ZIP directory: at most :data:`MAX_ZIP_ENTRIES` parts, no duplicate names, only
  stored or deflated parts, the declared uncompressed total under ``max_text_bytes``;
- every part is *decompressed here*, streamed, counting the bytes that really come out (a
  directory can lie about sizes; a part that inflates past its declared size or past the
  budget is a ZIP bomb);
- every part is scanned, streamed, with a regex over the tags (whatever its name): the ``<dimension
  ref>``, each cell's reference (cells without one are placed as calamine places them),
  ODS rows and cells with their repeat counts, the longest text between two tags. The
  extent (rows x columns from the first to the last cell, what calamine allocates) and
  the declared dimension must both fit ``max_cells``; the columns ``MAX_COLUMNS``; the
  longest text ``max_cell_chars``.

Every part is measured, not only the sheet the user picked: choosing the default sheet
loads the visible sheets one by one. XLS and XLSB have no cheap pre-scan; they are read
in a child process with a memory limit (:mod:`.workbook_child`).
"""

from __future__ import annotations

import re
import struct
import sys
import zipfile
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from reelqueue.domain.errors import InputError
from reelqueue.intake.sheet import DEFAULT_MAX_FILE_BYTES, MAX_COLUMNS

DEFAULT_MAX_CELLS = 2_000_000
"""Cells in a sheet's extent (rows x columns from its first to its last cell). 100,000
rows of 20 columns; calamine holds them in 64 MB."""

DEFAULT_MAX_CELL_CHARS = 2 * 1024 * 1024
"""The longest cell (and CSV line) read: a 1 MB prompt still reaches its clear row error."""

DEFAULT_MAX_TEXT_BYTES = 100 * 1024 * 1024
"""A sheet's text once unpacked (all parts of a workbook, decompressed) or decoded (a
text sheet, as Python holds it: 1, 2 or 4 bytes a character). An import takes about
three times its text in memory, so this is what bounds an import's peak (docs/intake.md)."""

MAX_ZIP_ENTRIES = 10_000
MAX_DIRECTORY_BYTES = 4 * 1024 * 1024
"""The ZIP's central directory: 10,000 entries with long names fit in well under this."""
MAX_TAG_BYTES = 64 * 1024
"""A single XML tag longer than this is not a spreadsheet's."""
READ_CHUNK = 1024 * 1024
EXCEL_MAX_ROWS = 1_048_576
ZIP_METHODS = {zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED}


@dataclass(frozen=True)
class SheetLimits:
    """The budget a sheet must fit before it is loaded.

    Attributes:
        max_file_bytes: the file itself (checked before anything is read).
        max_cells: cells in a sheet's extent (workbooks) or in its rows (CSV).
        max_cell_chars: the longest cell; for CSV also the longest line.
        max_rows: data rows below the header (the queue limit: more could never be
            queued); reading stops as soon as a sheet passes it.
        max_text_bytes: a workbook's parts together, decompressed; a text sheet's
            text, decoded.
    """

    max_file_bytes: int = DEFAULT_MAX_FILE_BYTES
    max_cells: int = DEFAULT_MAX_CELLS
    max_cell_chars: int = DEFAULT_MAX_CELL_CHARS
    max_rows: int = 100_000
    max_text_bytes: int = DEFAULT_MAX_TEXT_BYTES


@dataclass
class PartMeasure:
    """What the scan found in one XML part.

    Attributes:
        cells: cell elements seen (a repeated ODS cell counts its repeats).
        first_row, last_row, first_col, last_col: the extent of the cells (0-based).
        farthest: the reference of the cell that set ``last_row`` or ``last_col``.
        dimension: rows x columns declared by ``<dimension ref>``, 0 without one.
        dimension_ref: that reference, as written.
        shared_strings: the ``uniqueCount`` a shared-strings part declares.
    """

    cells: int = 0
    first_row: int = -1
    last_row: int = -1
    first_col: int = -1
    last_col: int = -1
    farthest: str = ""
    dimension: int = 0
    dimension_ref: str = ""
    shared_strings: int = 0

    @property
    def rows(self) -> int:
        return 0 if self.last_row < 0 else self.last_row - self.first_row + 1

    @property
    def columns(self) -> int:
        return 0 if self.last_col < 0 else self.last_col - self.first_col + 1

    def place(self, row: int, col: int, label: str) -> None:
        self.cells += 1
        if self.last_row < 0:
            self.first_row, self.last_row, self.first_col, self.last_col = row, row, col, col
            self.farthest = label
            return
        self.first_row = min(self.first_row, row)
        self.first_col = min(self.first_col, col)
        if row > self.last_row or col > self.last_col:
            self.farthest = label
        self.last_row = max(self.last_row, row)
        self.last_col = max(self.last_col, col)


# A tag: optional namespace prefix, the local name, then its attributes (quoted values may
# hold '>'); '<' cannot appear inside a tag, so a chunk is cut safely at its last '<'.
_NAME_PREFIX = rb"(?:[A-Za-z_][\w.\-]*:)?"
_ATTRS = rb"((?:[^<>\"']|\"[^\"<]*\"|'[^'<]*')*)"
XLSX_TAG = re.compile(
    rb"<(/?)(" + _NAME_PREFIX + rb"(?:c|row|dimension))(?=[\s/>])" + _ATTRS + rb">"
)
DIMENSION_TAG = re.compile(
    rb"<()(" + _NAME_PREFIX + rb"dimension)(?=[\s/>])" + _ATTRS + rb">"
)
CELL_TAG = re.compile(rb"<" + _NAME_PREFIX + rb"c(?=[\s/>])")
SST_TAG = re.compile(rb"<" + _NAME_PREFIX + rb"sst(?=[\s/>])" + _ATTRS + rb">")
PLAIN_CELL_WITH_REF = re.compile(rb"<c r=\"([A-Za-z]{1,3})([0-9]{1,7})\"(?=[\s/>])")
CELL_WITH_REF = re.compile(
    rb"<" + _NAME_PREFIX + rb"c\s+r=\"([A-Za-z]{1,3})([0-9]{1,7})\"(?=[\s/>])"
)
ODS_TAG = re.compile(
    rb"<(/?)(table:table|table:table-row|table:table-cell|table:covered-table-cell)"
    rb"(?=[\s/>])" + _ATTRS + rb">"
)
ATTRIBUTE = re.compile(rb"([\w:.\-]+)\s*=\s*(?:\"([^\"]*)\"|'([^']*)')")
CELL_REF = re.compile(rb"^\$?([A-Za-z]{1,3})\$?([0-9]{1,7})$")


def attributes(raw: bytes) -> dict[bytes, bytes]:
    return {m.group(1): m.group(2) if m.group(2) is not None else m.group(3)
            for m in ATTRIBUTE.finditer(raw)}


def local(name: bytes) -> bytes:
    return name.rpartition(b":")[2]


def column_index(letters: bytes) -> int:
    index = 0
    for letter in letters.upper():
        index = index * 26 + (letter - 64)
    return index - 1


def column_letters(index: int) -> str:
    letters = ""
    index += 1
    while index:
        index, rest = divmod(index - 1, 26)
        letters = chr(65 + rest) + letters
    return letters


def parse_ref(ref: bytes) -> tuple[int, int] | None:
    """(row, column), 0-based, of an A1 reference; None when it is not one."""
    match = CELL_REF.match(ref.strip())
    if not match:
        return None
    return int(match.group(2)) - 1, column_index(match.group(1))


def dimension_cells(ref: bytes) -> int:
    """Rows x columns of a ``<dimension ref="A1:C10">`` (0 when unreadable)."""
    first, _, last = ref.partition(b":")
    start, end = parse_ref(first), parse_ref(last or first)
    if start is None or end is None:
        return 0
    return (abs(end[0] - start[0]) + 1) * (abs(end[1] - start[1]) + 1)


class XlsxScanner:
    """Feeds on an XLSX/XLSM part's bytes and places its cells as calamine would.

    Fast path: when every cell tag of a piece carries a plain ``r`` reference, the extent
    comes from those references with ``re.findall`` (no Python per cell). A piece with a
    cell without one (or an odd tag) goes through :meth:`tag`, which tracks rows and
    columns the way calamine's cell reader does.
    """

    def __init__(self) -> None:
        self.measure = PartMeasure()
        self.row = 0
        self.col = 0
        self.exact = True  # positions known from references only

    def feed(self, body: bytes) -> None:
        if self.measure.dimension_ref == "" and b"dimension" in body:
            for match in DIMENSION_TAG.finditer(body):
                self.tag(match)
        if not self.measure.shared_strings and b"sst" in body:
            # calamine reserves room for the declared number of shared strings up front.
            for match in SST_TAG.finditer(body):
                declared = attributes(match.group(1)).get(b"uniqueCount", b"").strip()
                if declared.isdigit():
                    self.measure.shared_strings = max(self.measure.shared_strings,
                                                      int(declared))
        if self.exact and b":c" not in body:
            # No prefixed cell can hide here: plain byte counts find every cell tag.
            tags = sum(body.count(b"<c" + end) for end in (b" ", b">", b"/", b"\t", b"\n",
                                                            b"\r"))
            if not tags:
                return
            refs = PLAIN_CELL_WITH_REF.findall(body)
        else:
            tags = len(CELL_TAG.findall(body))
            if not tags:
                return
            refs = CELL_WITH_REF.findall(body)
        if self.exact and len(refs) == tags:
            self._place_refs(refs)
            return
        self.exact = False
        for match in XLSX_TAG.finditer(body):
            self.tag(match)

    def _place_refs(self, refs: list[tuple[bytes, bytes]]) -> None:
        letter_refs, row_refs = zip(*refs, strict=True)
        rows = set(map(int, set(row_refs)))
        letters = {letters.upper() for letters in set(letter_refs)}
        widest = max(letters, key=lambda text: (len(text), text))
        narrowest = min(letters, key=lambda text: (len(text), text))
        measure = self.measure
        low_row, high_row = min(rows) - 1, max(rows) - 1
        low_col, high_col = column_index(narrowest), column_index(widest)
        measure.place(low_row, low_col, f"{narrowest.decode()}{low_row + 1}")
        measure.place(high_row, high_col, f"{widest.decode()}{high_row + 1}")
        measure.cells += len(refs) - 2
        last_letters, last_row = refs[-1]
        self.row, self.col = int(last_row) - 1, column_index(last_letters.upper()) + 1

    def tag(self, match: re.Match[bytes]) -> None:
        closing, name, raw = match.group(1), local(match.group(2)), match.group(3)
        if name == b"row":
            if closing:
                self.row, self.col = self.row + 1, 0
                return
            r = attributes(raw).get(b"r")
            if r is not None and r.strip().isdigit():
                self.row = int(r) - 1
            if raw.rstrip().endswith(b"/"):
                self.row, self.col = self.row + 1, 0
            return
        if closing:
            return
        if name == b"dimension":
            declared = attributes(raw).get(b"ref", b"")
            self.measure.dimension = dimension_cells(declared)
            self.measure.dimension_ref = declared.decode("ascii", "replace") or "?"
            return
        ref = attributes(raw).get(b"r")
        position = parse_ref(ref) if ref is not None else None
        if position is not None:
            self.row, self.col = position
        row, col = self.row, self.col
        self.measure.place(row, col, f"{column_letters(col)}{row + 1}")
        self.col += 1


class OdsScanner:
    """Feeds on an ODS ``content.xml`` and measures each table as calamine expands it:
    repeated rows and cells count every repeat, trailing empty cells and rows do not."""

    def __init__(self) -> None:
        self.tables: list[tuple[str, PartMeasure]] = []
        self._table: PartMeasure | None = None
        self._rows = 0            # rows so far in the current table (repeats expanded)
        self._row_repeats = 1
        self._row_width = 0       # columns so far in the current row (repeats expanded)
        self._row_filled = -1     # last non-empty column of the current row

    def tag(self, match: re.Match[bytes]) -> None:
        closing, name, raw = match.group(1), match.group(2), match.group(3)
        self_closing = raw.rstrip().endswith(b"/")
        if name == b"table:table":
            if not closing:
                self._table = PartMeasure()
                title = attributes(raw).get(b"table:name", b"").decode("utf-8", "replace")
                self.tables.append((title, self._table))
                self._rows = 0
            return
        if self._table is None:
            return
        if name == b"table:table-row":
            if not closing:
                self._row_repeats = _repeat(raw, b"table:number-rows-repeated", EXCEL_MAX_ROWS)
                self._row_width, self._row_filled = 0, -1
            if closing or self_closing:
                self._end_row()
            return
        if closing:
            return
        repeats = _repeat(raw, b"table:number-columns-repeated", MAX_COLUMNS)
        # calamine keeps (and expands) a cell with any value or formula attribute, or with
        # content; an attribute-less self-closing cell is an empty repeat it defers.
        filled = not self_closing or b"office:" in raw or b"table:formula" in raw
        self._row_width = min(self._row_width + repeats, MAX_COLUMNS)
        if filled:
            self._row_filled = self._row_width - 1

    def _end_row(self) -> None:
        table = self._table
        assert table is not None
        repeats = min(self._row_repeats, max(EXCEL_MAX_ROWS - self._rows, 0))
        if self._row_filled >= 0 and repeats:
            label = f"{column_letters(self._row_filled)}{self._rows + repeats}"
            table.place(self._rows, 0, label)
            table.place(self._rows + repeats - 1, self._row_filled, label)
            table.cells += repeats * (self._row_filled + 1) - 2
        self._rows += repeats
        self._row_repeats = 1


def _repeat(raw: bytes, name: bytes, ceiling: int) -> int:
    value = attributes(raw).get(name, b"1").strip()
    return min(int(value), ceiling) if value.isdigit() and value else 1


def measure_workbook(path: Path, fmt: str, limits: SheetLimits) -> None:
    """Refuse ``path`` with an InputError unless every part of it fits ``limits``."""
    with path.open("rb") as stream:
        _check_directory(path, stream)
        try:
            archive = zipfile.ZipFile(stream)
        except (zipfile.BadZipFile, OSError, ValueError, EOFError) as exc:
            raise InputError(
                f"{path.name} cannot be read as a workbook ({fmt.upper()}): its ZIP directory "
                f"is damaged ({exc}). Open it in your spreadsheet program, save it again, "
                "and import the new file."
            ) from None
        with archive:
            infos = archive.infolist()
            _check_entries(path, infos, limits)
            names = sheet_names(archive, infos, limits) if fmt != "ods" else {}
            total = 0
            for info in infos:
                # Every part, whatever its name: a workbook's relationships may point a
                # sheet at a part not named .xml, and calamine reads it as XML all the same.
                scanner: XlsxScanner | OdsScanner = (
                    OdsScanner() if fmt == "ods" else XlsxScanner())
                chunks = inflate(path, stream, info, limits, total)
                total += _scan(path, info.filename, chunks, scanner, limits)
                if isinstance(scanner, XlsxScanner):
                    _judge(path, names.get(info.filename, info.filename), scanner.measure,
                           limits)
                elif isinstance(scanner, OdsScanner):
                    for title, table in scanner.tables:
                        _judge(path, title, table, limits)


def _check_directory(path: Path, stream: BinaryIO) -> None:
    """Count the entries from the end-of-directory record before zipfile builds them all."""
    stream.seek(0, 2)
    size = stream.tell()
    tail_size = min(size, 65_557)
    stream.seek(size - tail_size)
    tail = stream.read(tail_size)
    # As zipfile finds it: a record ending the file without a comment, else the last one.
    if tail[-22:-18] == b"PK\x05\x06" and tail[-2:] == b"\x00\x00":
        at = len(tail) - 22
    else:
        at = tail.rfind(b"PK\x05\x06")
    if at < 0 or at + 22 > len(tail):
        return  # zipfile will say it is damaged
    entries, directory_bytes = struct.unpack("<HI", tail[at + 10 : at + 16])
    # zipfile trusts a ZIP64 locator just before this record over the record itself, and
    # reads the whole directory (directory_bytes) whatever the count says.
    zip64 = at >= 20 and tail[at - 20 : at - 16] == b"PK\x06\x07"
    if (zip64 or entries == 0xFFFF or entries > MAX_ZIP_ENTRIES
            or directory_bytes > MAX_DIRECTORY_BYTES):
        raise InputError(
            f"{path.name} has more parts than any workbook (ZIP64, over "
            f"{MAX_ZIP_ENTRIES:,} entries or a directory over "
            f"{MAX_DIRECTORY_BYTES // 1_048_576} MB); ReelQueue does not read it. Save the "
            "sheet again from your spreadsheet program, or export it as CSV."
        )
    stream.seek(0)


def _check_entries(path: Path, infos: list[zipfile.ZipInfo], limits: SheetLimits) -> None:
    if len(infos) > MAX_ZIP_ENTRIES:
        raise InputError(f"{path.name} has {len(infos):,} parts; a workbook has a few dozen.")
    seen: set[str] = set()
    declared = 0
    for info in infos:
        folded = info.filename.replace("\\", "/").lstrip("/").casefold()
        if folded in seen:
            raise InputError(
                f"{path.name} holds two parts named {info.filename!r}; different readers would "
                "read different ones, so ReelQueue reads neither. Save the sheet again from "
                "your spreadsheet program."
            )
        seen.add(folded)
        if info.flag_bits & 0x1:
            raise InputError(f"{path.name} has encrypted parts; remove the password and save.")
        if info.compress_type not in ZIP_METHODS:
            raise InputError(
                f"{path.name}: the part {info.filename!r} is compressed in a way spreadsheet "
                "programs do not use (ZIP method "
                f"{info.compress_type}). Save the sheet again from your spreadsheet program."
            )
        declared += info.file_size
    if declared > limits.max_text_bytes:
        raise _unzipped_too_big(path, declared, limits)


def _unzipped_too_big(path: Path, size: int, limits: SheetLimits) -> InputError:
    return InputError(
        f"{path.name} unpacks to {size / 1_048_576:,.0f} MB or more; ReelQueue unpacks at most "
        f"{limits.max_text_bytes / 1_048_576:,.0f} MB of a workbook (a ZIP bomb, or far "
        "more than a sheet of prompts). Split the sheet, or raise the limit with "
        "--max-text-mb if the file is really yours."
    )


def check_text_size(path: Path, text: str, limits: SheetLimits) -> None:
    """Refuse a decoded text sheet that takes more memory than the budget."""
    size = sys.getsizeof(text) - sys.getsizeof("")  # the characters, not the header
    if size > limits.max_text_bytes:
        raise InputError(
            f"{path.name} decodes to {size / 1_048_576:,.0f} MB of text; ReelQueue reads at "
            f"most {limits.max_text_bytes / 1_048_576:,.0f} MB of a sheet's text (about "
            "100,000 rows of 1,000-character prompts). Split the sheet, or raise the limit "
            "with --max-text-mb."
        )


def inflate(
    path: Path, stream: BinaryIO, info: zipfile.ZipInfo, limits: SheetLimits, before: int
) -> Iterator[bytes]:
    """The part's bytes, decompressed here from its raw data: never more than the budget
    (``before`` bytes of it are spent), never more than the directory declared."""
    stream.seek(info.header_offset)
    header = stream.read(30)
    if len(header) < 30 or header[:4] != b"PK\x03\x04":
        raise InputError(f"{path.name}: the part {info.filename!r} is damaged.")
    name_len, extra_len = struct.unpack("<HH", header[26:30])
    stream.seek(info.header_offset + 30 + name_len + extra_len)
    left = info.compress_size
    inflater = zlib.decompressobj(-15) if info.compress_type == zipfile.ZIP_DEFLATED else None
    produced = 0
    budget = limits.max_text_bytes - before
    while left > 0:
        raw = stream.read(min(READ_CHUNK, left))
        if not raw:
            break
        left -= len(raw)
        data = raw
        while data:
            if inflater is None:
                out, data = data, b""
            else:
                try:
                    out = inflater.decompress(data, READ_CHUNK)
                except zlib.error:
                    raise InputError(
                        f"{path.name}: the part {info.filename!r} is damaged."
                    ) from None
                data = inflater.unconsumed_tail
            produced += len(out)
            _check_produced(path, info, produced, budget, before, limits)
            if out:
                yield out
    if produced != info.file_size:
        raise InputError(
            f"{path.name}: the part {info.filename!r} unpacks to {produced:,} bytes, not the "
            f"{info.file_size:,} its directory declares (damaged, or built to fool a reader). "
            "Save the sheet again from your spreadsheet program."
        )


def _check_produced(
    path: Path, info: zipfile.ZipInfo, produced: int, budget: int, before: int,
    limits: SheetLimits,
) -> None:
    if produced > budget:
        raise _unzipped_too_big(path, before + produced, limits)
    if produced > info.file_size:
        raise InputError(
            f"{path.name}: the part {info.filename!r} unpacks to more than the "
            f"{info.file_size:,} bytes its directory declares (a ZIP bomb, or damaged). "
            "ReelQueue does not read it."
        )


def _scan(
    path: Path, part: str, chunks: Iterator[bytes], scanner: XlsxScanner | OdsScanner | None,
    limits: SheetLimits,
) -> int:
    """Feed the part's tags to ``scanner``; return the part's size."""
    size = 0
    carry = b""
    text_run = 0
    for chunk in chunks:
        size += len(chunk)
        if scanner is None:
            continue
        buffer = carry + chunk
        last_lt, last_gt = buffer.rfind(b"<"), buffer.rfind(b">")
        cut = last_lt if last_lt > last_gt else len(buffer)
        body, carry = buffer[:cut], buffer[cut:]
        if len(carry) > MAX_TAG_BYTES:
            raise InputError(
                f"{path.name}: the part {part!r} has a tag longer than "
                f"{MAX_TAG_BYTES // 1024} KB; it is not a spreadsheet's."
            )
        if isinstance(scanner, XlsxScanner):
            scanner.feed(body)
        else:
            for match in ODS_TAG.finditer(body):
                scanner.tag(match)
        text_run = _longest_text(path, part, body, text_run, limits)
    return size


def _longest_text(path: Path, part: str, body: bytes, run: int, limits: SheetLimits) -> int:
    """Refuse a run of text between two tags longer than a cell may be; return the length
    of the run still open at the end of ``body`` (``run``: the one open at its start).

    Linear in ``body`` at C speed: split at every ``<`` (each piece is a tag, then the text
    after it); only a piece longer than the limit is looked at closer. A regex such as
    ``>[^<]{N}`` would rescan a long run from each of its characters.
    """
    limit_bytes = limits.max_cell_chars * 4  # UTF-8: up to 4 bytes a character
    if run + len(body) <= limit_bytes:
        # No run can pass the limit inside this chunk: only the one left open matters.
        last_lt = body.rfind(b"<")
        if last_lt < 0:
            return run + len(body)
        return len(body) - body.find(b">", last_lt) - 1  # the text after the last tag
    pieces = body.split(b"<")
    run += len(pieces[0])  # the text continuing from the previous chunk
    if run > limit_bytes:
        raise _cell_too_long(path, part, limits)
    if len(pieces) == 1:
        return run
    if max(map(len, pieces)) > limit_bytes:
        for piece in pieces[1:]:
            if len(piece) > limit_bytes and len(piece) - piece.find(b">") - 1 > limit_bytes:
                raise _cell_too_long(path, part, limits)
    last = pieces[-1]
    return len(last) - last.find(b">") - 1


def _cell_too_long(path: Path, part: str, limits: SheetLimits) -> InputError:
    return InputError(
        f"{path.name} holds a cell of more than {limits.max_cell_chars:,} characters (in "
        f"{part!r}); ReelQueue reads cells up to that size (a prompt is a few hundred). "
        "Shorten it, or raise the limit with --max-cell-kb."
    )


def _judge(path: Path, sheet: str, measure: PartMeasure, limits: SheetLimits) -> None:
    extent = measure.rows * measure.columns
    where = f"{path.name}, sheet {sheet!r}"
    if measure.columns > MAX_COLUMNS:
        raise InputError(
            f"{where}: {measure.columns:,} columns; ReelQueue reads at most {MAX_COLUMNS:,} "
            "(Excel's own limit)."
        )
    if max(extent, measure.cells) > limits.max_cells:
        raise InputError(
            f"{where} spans {measure.rows:,} rows x {measure.columns:,} columns "
            f"({extent:,} cells, up to {measure.farthest}); ReelQueue reads at most "
            f"{limits.max_cells:,} cells of a sheet. Delete the stray cells far from the "
            "table (select the empty rows and columns after it and delete them), or raise "
            "the limit with --max-cells."
        )
    if measure.shared_strings > limits.max_cells:
        raise InputError(
            f"{path.name} declares {measure.shared_strings:,} different texts (its shared "
            f"strings); a sheet of at most {limits.max_cells:,} cells cannot have more. Save "
            "it again from your spreadsheet program, or raise the limit with --max-cells."
        )
    if measure.dimension > limits.max_cells:
        raise InputError(
            f"{where} declares the size {measure.dimension_ref} ({measure.dimension:,} cells); "
            f"ReelQueue reads at most {limits.max_cells:,} cells of a sheet. Save it again "
            "from your spreadsheet program, or raise the limit with --max-cells."
        )


SHEET_ENTRY = re.compile(rb"<(?:[\w.\-]+:)?sheet\b" + _ATTRS + rb"/?>")
RELATIONSHIP = re.compile(rb"<(?:[\w.\-]+:)?Relationship\b" + _ATTRS + rb"/?>")


def sheet_names(
    archive: zipfile.ZipFile, infos: list[zipfile.ZipInfo], limits: SheetLimits
) -> dict[str, str]:
    """Best effort, for messages: part name -> the sheet's name in the workbook."""
    by_name = {info.filename: info for info in infos}
    book, rels = by_name.get("xl/workbook.xml"), by_name.get("xl/_rels/workbook.xml.rels")
    small = 4 * 1024 * 1024
    if book is None or rels is None or book.file_size > small or rels.file_size > small:
        return {}
    try:
        book_xml, rels_xml = archive.read(book)[:small], archive.read(rels)[:small]
    except (zipfile.BadZipFile, OSError, ValueError, EOFError, zlib.error):
        return {}
    targets: dict[bytes, str] = {}
    for match in RELATIONSHIP.finditer(rels_xml):
        attrs = attributes(match.group(1))
        target = attrs.get(b"Target", b"").decode("utf-8", "replace")
        targets[attrs.get(b"Id", b"")] = target.lstrip("/") if target.startswith("/") \
            else "xl/" + target
    names: dict[str, str] = {}
    for match in SHEET_ENTRY.finditer(book_xml):
        attrs = attributes(match.group(1))
        rid = next((value for key, value in attrs.items() if local(key) == b"id"), b"")
        if rid in targets:
            names[targets[rid]] = attrs.get(b"name", b"").decode("utf-8", "replace")
    return names
