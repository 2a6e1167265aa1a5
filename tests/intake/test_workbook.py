"""Workbooks made by real spreadsheet writers: offsets, formulas, sheets, refusals."""

from __future__ import annotations

import datetime
import shutil
from pathlib import Path

import openpyxl
import pytest

from reelqueue.domain.errors import InputError
from reelqueue.intake import read_sheet

SHEETS = Path(__file__).resolve().parents[1] / "fixtures" / "sheets"
HEADERS = ["Name", "Prompt", "Seconds", "Aspect Ratio", "Seed", "Double", "Due", "Notes"]


@pytest.mark.parametrize("name", [
    "openpyxl_offset.xlsx", "libreoffice_offset.xlsx", "libreoffice_offset.ods",
    "libreoffice_offset.xls",
])
def test_offset_table_keeps_the_users_row_numbers(name: str) -> None:
    sheet = read_sheet(SHEETS / name)
    # The table starts at B4 under a title in B2 on the second sheet ("Prompts"); the
    # first sheet holds only a note, so the default is the first sheet with prompts.
    assert sheet.sheet_name == "Prompts"
    assert sheet.header_row_number == 4
    assert sheet.headers == HEADERS
    assert [row.row_number for row in sheet.rows] == [5, 6, 7, 8]
    first = sheet.rows[0].values
    assert first[:5] == ["Sunrise", "A slow aerial shot over a misty pine forest at sunrise",
                         5, "16:9", 42]
    assert first[6] == datetime.date(2026, 3, 1)
    assert sheet.rows[1].values[7] == "€ ünïcödé"


@pytest.mark.parametrize("name", [
    "libreoffice_offset.xlsx", "libreoffice_offset.ods", "libreoffice_offset.xls",
])
def test_formula_results_come_from_the_saved_values(name: str) -> None:
    sheet = read_sheet(SHEETS / name)
    assert [row.values[5] for row in sheet.rows] == [10, 8, 16, 12]


def test_formulas_never_calculated_read_as_empty() -> None:
    # openpyxl writes formulas without results; no spreadsheet program computed them.
    sheet = read_sheet(SHEETS / "openpyxl_offset.xlsx")
    assert [row.values[5] for row in sheet.rows] == ["", "", "", ""]


def test_sheet_selection_by_name_case_or_number() -> None:
    path = SHEETS / "libreoffice_offset.ods"
    assert read_sheet(path, sheet="prompts").sheet_name == "Prompts"
    assert read_sheet(path, sheet="2").sheet_name == "Prompts"
    notes = read_sheet(path, sheet="Notes")
    assert notes.headers == ["Read me: the prompts are on the next sheet."]
    with pytest.raises(InputError, match=r"no sheet named 'Budget'\. Its sheets are: 'Notes'"):
        read_sheet(path, sheet="Budget")


def test_password_protected_workbook_is_refused() -> None:
    with pytest.raises(InputError, match="password-protected"):
        read_sheet(SHEETS / "password_protected.xlsx")


def test_corrupt_workbook_is_refused() -> None:
    with pytest.raises(InputError, match="damaged"):
        read_sheet(SHEETS / "corrupt_truncated.xlsx")


def test_text_named_xlsx_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "fake.xlsx"
    path.write_text("prompt\nhello\n")
    with pytest.raises(InputError, match="cannot be read as a workbook"):
        read_sheet(path)


def test_workbook_named_csv_is_refused_with_a_hint(tmp_path: Path) -> None:
    renamed = tmp_path / "prompts.csv"
    shutil.copy(SHEETS / "libreoffice_offset.xlsx", renamed)
    with pytest.raises(InputError, match="ZIP archive"):
        read_sheet(renamed)


def test_empty_sheet_is_refused(tmp_path: Path) -> None:
    book = openpyxl.Workbook()
    path = tmp_path / "empty.xlsx"
    book.save(path)
    with pytest.raises(InputError, match="is empty"):
        read_sheet(path)


def test_excel_floats_and_large_integers_arrive_typed(tmp_path: Path) -> None:
    book = openpyxl.Workbook()
    sheet = book.active
    assert sheet is not None
    sheet.append(["prompt", "seed", "when"])
    sheet.append(["a", 2**60, datetime.datetime(2026, 1, 2, 3, 4)])
    path = tmp_path / "typed.xlsx"
    book.save(path)
    row = read_sheet(path).rows[0].values
    assert row[1] == float(2**60)  # Excel has only doubles: the seed is already rounded
    assert row[2] == datetime.datetime(2026, 1, 2, 3, 4)


def test_xlsm_reads_like_xlsx(tmp_path: Path) -> None:
    macro_enabled = tmp_path / "prompts.xlsm"
    shutil.copy(SHEETS / "libreoffice_offset.xlsx", macro_enabled)
    sheet = read_sheet(macro_enabled)
    assert sheet.format == "xlsm" and [row.row_number for row in sheet.rows] == [5, 6, 7, 8]
