"""CSV, TSV and TXT sheets: the encoding is detected, the delimiter sniffed on whole records.

Encodings, in order: the one the user names; a byte-order mark (UTF-8 as Excel writes it,
UTF-16, UTF-32); UTF-16 without a mark (NUL bytes every other byte); strict UTF-8; then
Windows-1252 (what Excel on Windows writes for "CSV", and a superset of Latin-1 for the
bytes that matter). Text that still holds NUL bytes after decoding is refused as binary.

``csv.Sniffer`` guesses wrong on prompts full of commas, so the delimiter is chosen among
``, ; TAB |`` by parsing the start of the file with each and keeping the one for which the
most records have as many fields as the header (quoted cells and their newlines included).
A TXT file is one prompt per line, unless its first line is a tab-separated header (what
Excel's "Unicode Text" export writes), in which case it is read as TSV.
"""

from __future__ import annotations

import csv
import io
import re
from collections.abc import Iterator
from operator import itemgetter
from pathlib import Path

from reelqueue.domain.errors import InputError
from reelqueue.intake.limits import SheetLimits
from reelqueue.intake.mapping import ALIAS_TO_FIELD, normalise_header
from reelqueue.intake.sheet import (
    HEADER_SEARCH_ROWS,
    Sheet,
    SheetRow,
    check_rows,
    check_width,
    find_header_index,
    raise_too_many_rows,
)

DELIMITERS: tuple[str, ...] = (",", ";", "\t", "|")
DELIMITER_NAMES = {",": "comma", ";": "semicolon", "\t": "tab", "|": "pipe"}
DELIMITER_WORDS = {"tab": "\t", "\\t": "\t", "comma": ",", "semicolon": ";", "pipe": "|"}
SNIFF_CHARS = 64 * 1024
CSV_FIELD_LIMIT = 2**31 - 1  # the C long csv uses is 32-bit on Windows

BOMS: tuple[tuple[bytes, str], ...] = (
    (b"\xff\xfe\x00\x00", "utf-32-le"),
    (b"\x00\x00\xfe\xff", "utf-32-be"),
    (b"\xef\xbb\xbf", "utf-8-sig"),
    (b"\xff\xfe", "utf-16-le"),
    (b"\xfe\xff", "utf-16-be"),
)
LINE_BREAK = re.compile(r"\r\n|\r|\n")
CONTROL_CHARS = re.compile(r"[\x01-\x08\x0e-\x1f]")
SAVE_AS_HINT = "Save it from your spreadsheet program as 'CSV UTF-8' and import it again."


def read_text_sheet(
    path: Path,
    decoded: tuple[str, str],
    fmt: str,
    *,
    delimiter: str | None,
    identity: str,
    limits: SheetLimits | None = None,
) -> Sheet:
    """Parse ``decoded`` (the text and the encoding it came from, see :func:`decode_text`)."""
    limits = limits or SheetLimits()
    text, encoding_used = decoded
    del decoded
    refuse_binary_text(path, text)
    if fmt == "txt" and not delimiter and _is_tab_separated_table(text):
        fmt = "tsv"  # Excel's "Unicode Text" export: a UTF-16 table named .txt
    if fmt == "txt":
        return _prompt_list(path, text, encoding_used, identity, limits)
    chosen = parse_delimiter(delimiter) if delimiter else sniff_delimiter(text, fmt)
    numbered = _parse_records(path, text, chosen, limits)
    del text  # the cells are all that is needed from here on
    if not numbered:
        raise InputError(f"{path.name} holds only empty lines: there is nothing to import.")
    header_index = find_header_index([row.values for row in numbered[:HEADER_SEARCH_ROWS]]) or 0
    header_row_number, header_cells = numbered[header_index]
    headers = [cell.strip() for cell in header_cells]
    rows = numbered[header_index + 1:]
    del numbered
    check_rows(path, len(rows), limits)
    width = max(len(headers), max(map(len, map(itemgetter(1), rows)), default=0))
    check_width(path, width)
    headers += [""] * (width - len(headers))
    return Sheet(
        headers=headers,
        rows=rows,
        format=fmt,
        sheet_name=None,
        identity=identity,
        header_row_number=header_row_number,
        source_path=str(path.resolve()),
        details=f"{encoding_used}, {DELIMITER_NAMES[chosen]}-separated",
    )


def decode_text(path: Path, data: bytes, encoding: str | None) -> tuple[str, str]:
    """The text and the name of the encoding it was decoded with."""
    if encoding:
        name = "utf-8-sig" if encoding.lower().replace("_", "-") in ("utf-8", "utf8") else encoding
        try:
            return data.decode(name), name
        except LookupError:
            raise InputError(f"Unknown encoding {encoding!r}.") from None
        except UnicodeDecodeError as exc:
            raise InputError(
                f"{path.name} is not valid {encoding} (byte {exc.start}). {SAVE_AS_HINT}"
            ) from None
    for mark, name in BOMS:
        if data.startswith(mark):
            try:
                return data[len(mark):].decode(name.replace("-sig", "")), name
            except UnicodeDecodeError:
                raise InputError(
                    f"{path.name} starts with a {name} byte-order mark but is not valid "
                    f"{name}. {SAVE_AS_HINT}"
                ) from None
    unmarked_utf16 = _guess_utf16(data)
    if unmarked_utf16:
        try:
            return data.decode(unmarked_utf16), unmarked_utf16
        except UnicodeDecodeError:
            pass
    for name in ("utf-8", "cp1252", "latin-1"):
        try:
            return data.decode(name), name
        except UnicodeDecodeError:
            continue
    raise AssertionError("latin-1 decodes any bytes")  # pragma: no cover


def _guess_utf16(data: bytes) -> str | None:
    """UTF-16 without a byte-order mark: mostly-ASCII text has a NUL in every other byte."""
    sample = data[:4096]
    pairs = len(sample) // 2
    if pairs < 2:
        return None
    even_nuls = sample[0 : pairs * 2 : 2].count(0)
    odd_nuls = sample[1 : pairs * 2 : 2].count(0)
    if odd_nuls > 0.6 * pairs and even_nuls < 0.1 * pairs:
        return "utf-16-le"
    if even_nuls > 0.6 * pairs and odd_nuls < 0.1 * pairs:
        return "utf-16-be"
    return None


def refuse_binary_text(path: Path, text: str) -> None:
    nul = text.find("\x00")
    if nul >= 0:
        line = text.count("\n", 0, nul) + 1
        raise InputError(
            f"{path.name} contains NUL bytes (first on line {line}): it is a binary file, or "
            f"text in an encoding ReelQueue did not recognise. {SAVE_AS_HINT}"
        )
    sample = text[:SNIFF_CHARS]
    controls = len(CONTROL_CHARS.findall(sample))
    if controls > 8 and controls > 0.02 * len(sample):
        raise InputError(
            f"{path.name} does not look like text ({controls} control characters in its "
            f"first {len(sample):,}). {SAVE_AS_HINT}"
        )


def parse_delimiter(value: str) -> str:
    """The user's --delimiter: one character, or a word such as "tab"."""
    chosen = DELIMITER_WORDS.get(value.strip().lower(), value)
    if len(chosen) != 1 or chosen in "\"\r\n":
        raise InputError(
            f"Delimiter {value!r} is not usable: give one character such as , ; | or 'tab'."
        )
    return chosen


def sniff_delimiter(text: str, fmt: str) -> str:
    """The delimiter among , ; TAB | under which the most records match the header's width."""
    sample = text[:SNIFF_CHARS]
    if len(text) > SNIFF_CHARS:
        # Cut at a line break so the last record is not a torn half.
        last_break = max(sample.rfind("\n"), sample.rfind("\r"))
        if last_break > 0:
            sample = sample[:last_break]
    order = ("\t", ",", ";", "|") if fmt == "tsv" else DELIMITERS
    best, best_score = order[0] if fmt == "tsv" else ",", (0, 0)
    for candidate in order:
        try:
            records = [r for r in csv.reader(io.StringIO(sample, newline=""),
                                             delimiter=candidate) if _has_content(r)]
        except csv.Error:
            continue
        if not records or len(records[0]) < 2:
            continue
        width = len(records[0])
        matching = sum(1 for record in records if len(record) == width)
        score = (matching, width)
        if score > best_score:
            best, best_score = candidate, score
    return best


def _parse_records(
    path: Path, text: str, delimiter: str, limits: SheetLimits
) -> list[SheetRow]:
    """The records with content, numbered as a spreadsheet program numbers them (a record
    with quoted newlines is one row; blank lines count).

    Bounded: a cell longer than ``max_cell_chars`` stops the reader (csv's own field
    limit, set to it), and so do more rows than ``max_rows`` (plus the rows the header may
    sit below) or more cells than ``max_cells``: the rest is never parsed.
    """
    # csv's field limit is process-wide; every reader sets its own before parsing.
    csv.field_size_limit(min(limits.max_cell_chars, CSV_FIELD_LIMIT))
    reader = csv.reader(lines_of(text), delimiter=delimiter)
    ceiling = limits.max_rows + HEADER_SEARCH_ROWS
    numbered: list[SheetRow] = []
    append = numbered.append
    cells = 0
    try:
        # One pass, no intermediate list: csv.reader makes a fresh list per record.
        for number, record in enumerate(reader, start=1):
            if _has_content(record):
                append(SheetRow(number, record))
                cells += len(record)
                if len(numbered) > ceiling:
                    raise_too_many_rows(path, limits.max_rows, len(numbered))
                if cells > limits.max_cells:
                    raise InputError(
                        f"{path.name} has more than {limits.max_cells:,} cells (ReelQueue "
                        f"stopped reading at line {reader.line_num:,}). Remove the empty "
                        "columns, or raise the limit with --max-cells."
                    )
    except csv.Error as exc:
        if "field larger than field limit" in str(exc):
            raise _cell_too_long(path, reader.line_num, limits) from None
        raise InputError(
            f"{path.name}, line {reader.line_num}: the CSV cannot be read ({exc}). "
            "A quote is probably not closed."
        ) from None
    return numbered


LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+\Z")


def lines_of(text: str) -> Iterator[str]:
    """The lines of ``text`` with their endings, as a file opened with ``newline=""``
    gives them, one at a time: ``io.StringIO`` would first copy the whole text into a
    buffer of 4 bytes a character."""
    return (match.group() for match in LINE.finditer(text))


def _cell_too_long(path: Path, line: int, limits: SheetLimits) -> InputError:
    return InputError(
        f"{path.name}, line {line:,}: a cell is longer than {limits.max_cell_chars:,} "
        "characters, the most ReelQueue reads (a prompt is a few hundred; a quote that is "
        "never closed makes the rest of the file one cell). Nothing was imported. Fix the "
        "cell, or raise the limit with --max-cell-kb."
    )


def _prompt_list(
    path: Path, text: str, encoding_used: str, identity: str, limits: SheetLimits
) -> Sheet:
    rows: list[SheetRow] = []
    header_skipped = False
    # Universal newlines, read lazily: \r\n, \r and \n each end a line, as LINE_BREAK.
    for number, line in enumerate(io.StringIO(text, newline=None), start=1):
        prompt = line.strip()
        if not prompt:
            continue
        if len(prompt) > limits.max_cell_chars:
            raise _cell_too_long(path, number, limits)
        if not rows and not header_skipped and prompt.lower() in ("prompt", "prompts"):
            header_skipped = True  # a header line, as a sheet exported to TXT has
            continue
        rows.append(SheetRow(row_number=number, values=[prompt]))
        if len(rows) > limits.max_rows:
            raise_too_many_rows(path, limits.max_rows, len(rows))
    if not rows:
        raise InputError(f"{path.name} holds only empty lines: there is nothing to import.")
    return Sheet(
        headers=["prompt"],
        rows=rows,
        format="txt",
        sheet_name=None,
        identity=identity,
        header_row_number=0,
        source_path=str(path.resolve()),
        details=f"{encoding_used}, one prompt per line",
    )


def _is_tab_separated_table(text: str) -> bool:
    """True when the first line is a tab-separated header naming a known column."""
    first = next((line for line in LINE_BREAK.split(text[:SNIFF_CHARS]) if line.strip()), "")
    cells = first.split("\t")
    return len(cells) >= 2 and any(normalise_header(cell) in ALIAS_TO_FIELD for cell in cells)


def _has_content(cells: list[str]) -> bool:
    """True when some cell holds more than whitespace."""
    for cell in cells:  # noqa: SIM110 - a plain loop: no generator per row
        if cell and not cell.isspace():
            return True
    return False
