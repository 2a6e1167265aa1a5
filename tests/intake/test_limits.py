"""The pre-scan of workbooks and the bounds of the text readers (intake/limits.py)."""

from __future__ import annotations

import io
import os
import pickle
import sys
import zipfile
from pathlib import Path

import pytest

from reelqueue.domain.errors import InputError
from reelqueue.intake import ImportOptions, plan_import, read_sheet
from reelqueue.intake import limits as limits_module
from reelqueue.intake.limits import SheetLimits, measure_workbook
from reelqueue.intake.workbook_child import _DataOnly, read_in_child

sys.path.insert(0, str(Path(__file__).parents[1] / "fixtures"))
import make_hostile_sheets as make

HOSTILE = make.HOSTILE
SHEETS = HOSTILE.parent


def xlsx(tmp_path: Path, rows: str, name: str = "book.xlsx", root: str | None = None) -> Path:
    path = tmp_path / name
    make.write_xlsx(path, root if root is not None else make.sheet_xml(rows))
    return path


def cell(ref: str, text: str) -> str:
    return make.text_cell(ref, text)


def test_a_table_with_a_stray_cell_fits_only_once_the_limit_is_raised(tmp_path: Path) -> None:
    path = xlsx(tmp_path, f'<row r="1">{cell("A1", "prompt")}</row>'
                          f'<row r="2">{cell("A2", "a red fox")}</row>'
                          f'<row r="1000">{cell("J1000", "stray")}</row>')
    with pytest.raises(InputError, match=r"spans 1,000 rows x 10 columns \(10,000 cells, up "
                                         r"to J1000\).*at most 5,000 cells.*--max-cells"):
        read_sheet(path, limits=SheetLimits(max_cells=5_000))
    sheet = read_sheet(path, limits=SheetLimits(max_cells=10_000))
    assert [row.row_number for row in sheet.rows] == [2, 1000]


def test_namespace_prefixes_and_quoted_brackets_do_not_hide_a_cell(tmp_path: Path) -> None:
    prefixed = ('<?xml version="1.0"?><x:worksheet xmlns:x="http://schemas.openxmlformats.org/'
                'spreadsheetml/2006/main"><x:sheetData><x:row r="1"><x:c r="A1" t="inlineStr">'
                '<x:is><x:t>prompt</x:t></x:is></x:c></x:row><x:row r="1048576">'
                '<x:c r="XFD1048576" t="inlineStr"><x:is><x:t>x</x:t></x:is></x:c></x:row>'
                "</x:sheetData></x:worksheet>")
    quoted = make.sheet_xml(f'<row r="1">{cell("A1", "prompt")}</row><row r="1048576">'
                            '<c foo="a>b" r="XFD1048576" t="inlineStr"><is><t>x</t></is></c>'
                            "</row>")
    for name, root in (("prefixed.xlsx", prefixed), ("quoted.xlsx", quoted)):
        with pytest.raises(InputError, match="spans 1,048,576 rows x 16,384 columns"):
            read_sheet(xlsx(tmp_path, "", name, root))


@pytest.mark.parametrize("chunk", [1, 7, 64])
def test_tags_and_text_cut_by_a_chunk_boundary_are_still_measured(
    chunk: int, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setattr(limits_module, "READ_CHUNK", chunk)
    with pytest.raises(InputError, match="up to XFD1048576"):
        measure_workbook(HOSTILE / "sparse.xlsx", "xlsx", SheetLimits())
    long_text = xlsx(tmp_path, f'<row r="1">{cell("A1", "prompt")}</row>'
                               f'<row r="2">{cell("A2", "z" * 400)}</row>')
    with pytest.raises(InputError, match="a cell of more than 99 characters"):
        measure_workbook(long_text, "xlsx", SheetLimits(max_cell_chars=99))
    measure_workbook(long_text, "xlsx", SheetLimits(max_cell_chars=100))
    measure_workbook(SHEETS / "libreoffice_offset.xlsx", "xlsx", SheetLimits())


def test_every_sample_workbook_passes_the_prescan() -> None:
    for name, fmt in (("libreoffice_offset.xlsx", "xlsx"), ("openpyxl_offset.xlsx", "xlsx"),
                      ("libreoffice_offset.ods", "ods"), ("trailing_empty.ods", "ods")):
        folder = HOSTILE if name == "trailing_empty.ods" else SHEETS
        measure_workbook(folder / name, fmt, SheetLimits())


def test_a_part_compressed_with_another_method_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "bz.xlsx"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_BZIP2) as book:
        book.writestr("xl/worksheets/sheet1.xml", make.sheet_xml(""))
    with pytest.raises(InputError, match="ZIP method 12"):
        read_sheet(path)


def test_plan_import_the_windows_path_goes_through_the_prescan(tmp_path: Path) -> None:
    # The window's import (ui/dialogs.py) calls this same plan_import.
    with pytest.raises(InputError, match="--max-cells"):
        plan_import(HOSTILE / "sparse.xlsx", ImportOptions(output_root=tmp_path))


def test_csv_reading_stops_past_the_queue_limit(tmp_path: Path) -> None:
    sheet = tmp_path / "many.csv"
    sheet.write_text("title\nprompt\n" + "".join(f"shot {n}\n" for n in range(50)))
    with pytest.raises(InputError, match=r"more than 10 rows \(31 read so far"):
        plan_import(sheet, ImportOptions(output_root=tmp_path, max_waiting=10))
    exact = tmp_path / "exact.csv"
    exact.write_text("prompt\n" + "".join(f"shot {n}\n" for n in range(10)))
    assert len(plan_import(exact, ImportOptions(output_root=tmp_path, max_waiting=10)).jobs) == 10
    exact.write_text("prompt\n" + "".join(f"shot {n}\n" for n in range(11)))
    with pytest.raises(InputError, match=r"more than 10 rows \(11 read"):
        plan_import(exact, ImportOptions(output_root=tmp_path, max_waiting=10))


def test_txt_lines_and_rows_are_bounded(tmp_path: Path) -> None:
    text = tmp_path / "prompts.txt"
    text.write_text("prompt\nshort\n" + "w" * 300 + "\n")
    with pytest.raises(InputError, match=r"line 3: a cell is longer than 200 characters"):
        read_sheet(text, limits=SheetLimits(max_cell_chars=200))
    text.write_text("".join(f"shot {n}\r" for n in range(8)))
    with pytest.raises(InputError, match="more than 5 rows"):
        read_sheet(text, limits=SheetLimits(max_rows=5))
    assert [row.row_number for row in read_sheet(text).rows] == list(range(1, 9))


def test_csv_cells_are_bounded_in_count(tmp_path: Path) -> None:
    wide = tmp_path / "wide.csv"
    wide.write_text("prompt" + ",x" * 99 + "\n" + ("a" + ",b" * 99 + "\n") * 30)
    with pytest.raises(InputError, match=r"more than 1,000 cells.*--max-cells"):
        read_sheet(wide, limits=SheetLimits(max_cells=1_000))


def test_xls_is_read_in_a_child_and_a_child_past_its_memory_is_a_plain_refusal() -> None:
    name, rows = read_in_child(SHEETS / "libreoffice_offset.xls", "xls", sheet="Prompts",
                               max_rows=100)
    assert name == "Prompts" and rows and all(isinstance(number, int) for number, _ in rows)
    with pytest.raises(InputError, match=r"more than 0 MB of text.*--max-text-mb"):
        read_in_child(SHEETS / "libreoffice_offset.xls", "xls", sheet="Prompts", max_rows=100,
                      max_answer_bytes=100)
    if os.name != "posix":
        pytest.skip("RLIMIT_AS is POSIX only")
    # The sparse workbook makes calamine ask for 549 GB: in the child that is an abort of
    # the child alone, which the parent reports plainly.
    with pytest.raises(InputError, match="needs more than 512 MB of memory to read as XLSX"):
        read_in_child(HOSTILE / "sparse.xlsx", "xlsx", sheet=None, max_rows=100,
                      memory_bytes=512 * 1024 * 1024)


def test_the_childs_answer_may_hold_plain_data_only() -> None:
    with pytest.raises(pickle.UnpicklingError, match="posix.system is not plain data"
                       if os.name == "posix" else "not plain data"):
        _DataOnly(io.BytesIO(pickle.dumps(os.system))).load()
    import datetime

    value = ("ok", "S", [(1, [datetime.datetime(2026, 1, 1), 1.5, "x", None, True])])
    assert _DataOnly(io.BytesIO(pickle.dumps(value))).load() == value


def test_a_text_sheet_is_measured_as_decoded(tmp_path: Path) -> None:
    # cp1252 takes one byte for a euro sign; Python holds it in two: the budget is on the
    # decoded text, what the import really holds.
    sheet = tmp_path / "euros.csv"
    sheet.write_bytes(("prompt\n" + ("\u20ac" * 500 + "\n") * 20).encode("cp1252"))
    with pytest.raises(InputError, match=r"decodes to 0 MB of text.*--max-text-mb"):
        read_sheet(sheet, limits=SheetLimits(max_text_bytes=15_000))
    assert len(read_sheet(sheet, limits=SheetLimits(max_text_bytes=30_000)).rows) == 20


def test_a_sheet_part_not_named_xml_is_measured_too(tmp_path: Path) -> None:
    path = tmp_path / "renamed.xlsx"
    far = make.sheet_xml(f'<row r="1">{cell("A1", "prompt")}</row>'
                         f'<row r="1048576">{cell("XFD1048576", "x")}</row>')
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as book:
        book.writestr("[Content_Types].xml", make.CONTENT_TYPES.format(extra=""))
        book.writestr("_rels/.rels", make.ROOT_RELS)
        book.writestr("xl/workbook.xml", make.WORKBOOK)
        book.writestr("xl/_rels/workbook.xml.rels", make.WORKBOOK_RELS.format(extra="").replace(
            "worksheets/sheet1.xml", "worksheets/sheet1.bin"))
        book.writestr("xl/worksheets/sheet1.bin", far)
    # The message names the sheet: the part was found through the workbook's relationships.
    with pytest.raises(InputError, match="sheet 'Prompts' spans 1,048,576 rows x 16,384"):
        read_sheet(path)


def test_text_runs_are_measured_in_one_pass_and_a_bracket_does_not_split_them(
    tmp_path: Path,
) -> None:
    # Three million '>' between two tags: a regex like '>[^<]{N}' would rescan the run
    # from each of them (hours); the measure reads it once.
    brackets = xlsx(tmp_path, f'<row r="1">{cell("A1", "prompt")}</row>'
                              f'<row r="2">{cell("A2", ">" * 3_000_000)}</row>', "brackets.xlsx")
    measure_workbook(brackets, "xlsx", SheetLimits(max_cell_chars=1_000_000))
    with pytest.raises(InputError, match="a cell of more than 500,000 characters"):
        measure_workbook(brackets, "xlsx", SheetLimits(max_cell_chars=500_000))
    # A raw '>' inside a cell's text does not cut it into short runs.
    split = xlsx(tmp_path, f'<row r="1">{cell("A1", "x" * 300 + ">" + "x" * 300)}</row>',
                 "split.xlsx")
    with pytest.raises(InputError, match="a cell of more than 100 characters"):
        measure_workbook(split, "xlsx", SheetLimits(max_cell_chars=100))


def test_a_zip64_locator_or_an_oversized_directory_is_refused_before_zipfile_reads_it(
    tmp_path: Path,
) -> None:
    data = (HOSTILE / "trailing_empty.ods").read_bytes()
    end = data.rfind(b"PK\x05\x06")
    zip64 = tmp_path / "zip64.ods"
    zip64.write_bytes(data[:end] + b"PK\x06\x07" + bytes(16) + data[end:])
    with pytest.raises(InputError, match="ZIP64"):
        read_sheet(zip64)
    huge_directory = tmp_path / "directory.ods"
    record = bytearray(data[end:])
    record[12:16] = (64 * 1024 * 1024).to_bytes(4, "little")  # central directory size
    huge_directory.write_bytes(data[:end] + bytes(record))
    with pytest.raises(InputError, match="a directory over 4 MB"):
        read_sheet(huge_directory)


@pytest.mark.parametrize("attribute", ['office:value="1"', 'table:formula="of:=1"',
                                       'office:boolean-value="true"'])
def test_ods_cells_with_a_value_but_no_value_type_are_counted(
    attribute: str, tmp_path: Path
) -> None:
    # calamine keeps a cell with any value or formula attribute and expands its repeats.
    path = tmp_path / "values.ods"
    make.write_ods(path, f"<table:table-row>{make.ods_cell('prompt')}</table:table-row>"
                         '<table:table-row table:number-rows-repeated="1000">'
                         f'<table:table-cell {attribute} table:number-columns-repeated="1000"/>'
                         "</table:table-row>")
    with pytest.raises(InputError, match=r"spans 1,001 rows x 1,000 columns"):
        measure_workbook(path, "ods", SheetLimits(max_cells=100_000))
