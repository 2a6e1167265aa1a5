"""CSV, TSV and TXT reading: encodings, delimiters, row numbers, refusals."""

from __future__ import annotations

import csv
import io
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from reelqueue.domain.errors import InputError
from reelqueue.intake import read_sheet
from reelqueue.intake.text_sheet import sniff_delimiter

from .conftest import write_sheet


def test_utf8_bom_crlf_and_quoted_newlines(tmp_path: Path) -> None:
    text = 'prompt,seed\r\n"two\r\nlines, one cell",42\r\nnext,7\r\n'
    sheet = read_sheet(write_sheet(tmp_path, "a.csv", "\ufeff" + text))
    assert sheet.headers == ["prompt", "seed"]  # no BOM glued to the first header
    assert [r.row_number for r in sheet.rows] == [2, 3]  # a record is one spreadsheet row
    assert sheet.rows[0].values == ["two\r\nlines, one cell", "42"]
    assert "utf-8-sig" in sheet.details


@pytest.mark.parametrize(("delimiter", "name"), [
    (",", "comma"), (";", "semicolon"), ("\t", "tab"), ("|", "pipe"),
])
def test_delimiter_is_sniffed_on_whole_records(tmp_path: Path, delimiter: str, name: str) -> None:
    # Prompts full of the *other* delimiters must not fool the sniffer.
    rows = [["prompt", "duration", "seed"],
            ["a cat, a dog; a bird | a fish", "5", "1"],
            ["rain; wind, fog", "6", "2"]]
    buffer = io.StringIO()
    csv.writer(buffer, delimiter=delimiter, lineterminator="\n").writerows(rows)
    sheet = read_sheet(write_sheet(tmp_path, "s.csv", buffer.getvalue()))
    assert sheet.headers == rows[0]
    assert [r.values for r in sheet.rows] == rows[1:]
    assert name in sheet.details


def test_delimiter_override_and_words(tmp_path: Path) -> None:
    path = write_sheet(tmp_path, "s.csv", "prompt;x\na,b;c\n")
    assert read_sheet(path, delimiter=";").rows[0].values == ["a,b", "c"]
    assert read_sheet(path, delimiter="semicolon").headers == ["prompt", "x"]
    with pytest.raises(InputError, match="Delimiter"):
        read_sheet(path, delimiter=";;")


def test_single_column_defaults_to_comma() -> None:
    assert sniff_delimiter("prompt\nhello\nworld\n", "csv") == ","
    assert sniff_delimiter("prompt\nhello\n", "tsv") == "\t"


@pytest.mark.parametrize("encoding", ["utf-16", "utf-16-le", "utf-16-be", "utf-32"])
def test_utf16_and_utf32_with_or_without_mark(tmp_path: Path, encoding: str) -> None:
    text = "prompt\tduration\nCafé crème ☕\t5\n"
    sheet = read_sheet(write_sheet(tmp_path, "u.tsv", text, encoding))
    assert sheet.rows[0].values == ["Café crème ☕", "5"]


def test_cp1252_from_european_excel(tmp_path: Path) -> None:
    sheet = read_sheet(write_sheet(tmp_path, "e.csv", "prompt;prix\nCafé à 5 €;5,5\n", "cp1252"))
    assert sheet.rows[0].values == ["Café à 5 €", "5,5"]
    assert "cp1252" in sheet.details


def test_explicit_encoding_and_wrong_encoding(tmp_path: Path) -> None:
    path = write_sheet(tmp_path, "e.csv", "prompt\nCafé\n", "cp1252")
    assert read_sheet(path, encoding="latin-1").rows[0].values == ["Café"]
    with pytest.raises(InputError, match="not valid utf-8"):
        read_sheet(path, encoding="utf-8")
    with pytest.raises(InputError, match="Unknown encoding"):
        read_sheet(path, encoding="klingon")


def test_row_numbers_count_blank_lines_and_skip_empty_rows(tmp_path: Path) -> None:
    sheet = read_sheet(write_sheet(tmp_path, "b.csv", "\nprompt,seed\n\na,1\n,\nb,2\n"))
    assert sheet.header_row_number == 2
    assert [(r.row_number, r.values[0]) for r in sheet.rows] == [(4, "a"), (6, "b")]


def test_title_rows_above_the_header_are_skipped(tmp_path: Path) -> None:
    sheet = read_sheet(write_sheet(tmp_path, "t.csv", "My campaign,\n,\nPrompt,Seed\na,1\n"))
    assert sheet.header_row_number == 3
    assert sheet.headers == ["Prompt", "Seed"]


def test_ragged_rows_widen_the_header(tmp_path: Path) -> None:
    sheet = read_sheet(write_sheet(tmp_path, "r.csv", "prompt\na,extra,more\n"))
    assert sheet.headers == ["prompt", "", ""]


def test_txt_is_one_prompt_per_line(tmp_path: Path) -> None:
    sheet = read_sheet(write_sheet(tmp_path, "p.txt", "prompt\r\nfirst\r\n\r\n  second  \rthird\n"))
    assert sheet.format == "txt"
    assert sheet.headers == ["prompt"]
    assert [(r.row_number, r.values) for r in sheet.rows] == [
        (2, ["first"]), (4, ["second"]), (5, ["third"])]


def test_txt_with_a_tab_header_is_excels_unicode_text(tmp_path: Path) -> None:
    path = write_sheet(tmp_path, "u.txt", "prompt\tseed\r\na cat\t3\r\n", "utf-16")
    sheet = read_sheet(path)
    assert sheet.format == "tsv"
    assert sheet.rows[0].values == ["a cat", "3"]


def test_identity_is_the_content_hash(tmp_path: Path) -> None:
    one = read_sheet(write_sheet(tmp_path, "1.csv", "prompt\na\n"))
    two = read_sheet(write_sheet(tmp_path, "2.csv", "prompt\na\n"))
    three = read_sheet(write_sheet(tmp_path, "3.csv", "prompt\nb\n"))
    assert one.identity == two.identity != three.identity


@pytest.mark.parametrize(("content", "message"), [
    (b"", "is empty"),
    (b"\n\r\n ,, \n", "only empty lines"),
    (b"PK\x03\x04" + bytes(range(256)) * 4, "ZIP archive"),
    (b"%PDF-1.7\n" + bytes(range(256)), "PDF"),
    (b"prompt\nhello\x00world\n", "NUL bytes .first on line 2"),
    (bytes(range(1, 32)) * 50, "does not look like text"),
    (b'prompt\n"never closed,\n' + b"x" * 10, None),
])
def test_bad_text_files_are_refused_clearly(
    tmp_path: Path, content: bytes, message: str | None
) -> None:
    path = tmp_path / "bad.csv"
    path.write_bytes(content)
    if message is None:  # an unclosed quote swallows the rest, like Excel does
        assert read_sheet(path).rows[0].values == ["never closed,\nxxxxxxxxxx"]
        return
    with pytest.raises(InputError, match=message):
        read_sheet(path)


def test_missing_file_folder_and_unknown_extension(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="no such file"):
        read_sheet(tmp_path / "nope.csv")
    with pytest.raises(InputError, match="is a folder"):
        read_sheet(tmp_path)
    with pytest.raises(InputError, match=r"does not read '\.docx'"):
        read_sheet(write_sheet(tmp_path, "x.docx", "prompt\n"))


def test_files_over_the_limit_are_refused_before_reading(tmp_path: Path) -> None:
    path = tmp_path / "huge.csv"
    with path.open("wb") as sparse:  # 200 MB without writing 200 MB
        sparse.truncate(200 * 1024 * 1024)
    with pytest.raises(InputError, match=r"is 200 MB; the limit is 100 MB"):
        read_sheet(path)
    small = write_sheet(tmp_path, "small.csv", "prompt\n" + "x" * 2000 + "\n")
    with pytest.raises(InputError, match="limit is 0 MB"):
        read_sheet(small, max_bytes=1000)


def test_a_megabyte_cell_is_read_for_validation_to_refuse(tmp_path: Path) -> None:
    # csv's default field limit (128 KiB) would stop the reader with an obscure error.
    sheet = read_sheet(write_sheet(tmp_path, "big.csv", "prompt\n" + "y" * 1_048_576 + "\n"))
    assert len(str(sheet.rows[0].values[0])) == 1_048_576


def test_a_thousand_columns(tmp_path: Path) -> None:
    header = ",".join(["prompt"] + [f"c{i}" for i in range(999)])
    row = ",".join(["hello"] + [str(i) for i in range(999)])
    sheet = read_sheet(write_sheet(tmp_path, "wide.csv", f"{header}\n{row}\n"))
    assert len(sheet.headers) == 1000


def test_wider_than_excel_is_refused(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="16,384"):
        read_sheet(write_sheet(tmp_path, "w.csv", "prompt" + ",x" * 16_400 + "\n"))


cell_text = st.text(
    alphabet=st.characters(blacklist_categories=("Cs", "Cc")),
    max_size=30,
).filter(lambda s: s.strip() != "")


@settings(max_examples=60, deadline=None)
@given(
    rows=st.lists(st.lists(cell_text, min_size=3, max_size=3), min_size=1, max_size=6),
    delimiter=st.sampled_from([",", ";", "\t", "|"]),
)
def test_any_quoted_csv_reads_back(rows: list[list[str]], delimiter: str) -> None:
    import tempfile

    buffer = io.StringIO()
    writer = csv.writer(buffer, delimiter=delimiter, quoting=csv.QUOTE_ALL)
    writer.writerow(["prompt", "name", "notes"])
    writer.writerows(rows)
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "h.csv"
        path.write_text(buffer.getvalue(), encoding="utf-8", newline="")
        sheet = read_sheet(path)
    assert sheet.headers == ["prompt", "name", "notes"]
    assert [r.values for r in sheet.rows] == rows
