"""``reelqueue SHEET`` (how desktops "Open with" a file) is told apart from commands."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from reelqueue.cli.main import _opened_sheet

pytestmark = pytest.mark.unit


def test_a_lone_existing_sheet_is_opened(tmp_path: Path) -> None:
    sheet = tmp_path / "shots.xlsx"
    sheet.write_bytes(b"x")
    assert _opened_sheet([str(sheet)]) == sheet
    assert _opened_sheet(["--data-dir", str(tmp_path), str(sheet)]) == sheet
    assert _opened_sheet(["run", str(sheet)]) is None
    assert _opened_sheet([str(tmp_path / "missing.csv")]) is None
    assert _opened_sheet(["--data-dir", str(tmp_path)]) is None
    notes = tmp_path / "notes.pdf"
    notes.write_bytes(b"x")
    assert _opened_sheet([str(notes)]) is None


def test_without_a_display_it_says_what_to_do(tmp_path: Path) -> None:
    sheet = tmp_path / "s.csv"
    sheet.write_text("prompt\nhello\n")
    env = {k: v for k, v in __import__("os").environ.items()
           if k not in ("DISPLAY", "WAYLAND_DISPLAY")}
    result = subprocess.run([sys.executable, "-m", "reelqueue", str(sheet)],
                            capture_output=True, text=True, env=env, timeout=60, check=False)
    assert result.returncode == 2
    assert f"reelqueue run {sheet}" in result.stdout
