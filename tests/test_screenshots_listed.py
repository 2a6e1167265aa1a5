"""docs/screenshots/README.md lists each picture with what it shows; every dialog of the
window (each QDialog subclass under ui/) has at least one picture there, named by its class
in the entry, and the picture is in the folder (issue 34)."""

from __future__ import annotations

import ast
import fnmatch
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
UI = ROOT / "app" / "reelqueue" / "ui"
PICTURES = ROOT / "docs" / "screenshots"

pytestmark = pytest.mark.unit


def dialog_classes() -> set[str]:
    """Every class under ui/ that derives from QDialog (directly or through another)."""
    bases: dict[str, set[str]] = {}
    for path in UI.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ClassDef):
                bases[node.name] = {b.id if isinstance(b, ast.Name) else ast.unparse(b)
                                    for b in node.bases}
    dialogs = {"QDialog"}
    grew = True
    while grew:
        found = {name for name, of in bases.items() if of & dialogs} - dialogs
        dialogs |= found
        grew = bool(found)
    return dialogs - {"QDialog"}


def listed_entries() -> list[tuple[list[str], str]]:
    """The README's bullets: (the picture names or patterns in backticks, the whole text)."""
    entries: list[list[str]] = []
    for line in (PICTURES / "README.md").read_text(encoding="utf-8").splitlines():
        if line.startswith("- "):
            entries.append([line])
        elif entries and line.startswith("  ") and line.strip():
            entries[-1].append(line)
        elif not line.strip() and entries and entries[-1]:
            entries.append([])
    out = []
    for lines in entries:
        text = " ".join(lines)
        head = text.split(":", 1)[0]
        names = [n for n in re.findall(r"`([^`]+)`", head) if n.endswith((".png", "*"))]
        if names:
            out.append((names, text))
    return out


def test_every_dialog_has_a_screenshot_listed() -> None:
    files = sorted(p.name for p in PICTURES.glob("*.png"))
    missing = []
    for dialog in sorted(dialog_classes()):
        shown = [names for names, text in listed_entries()
                 if re.search(rf"\b{dialog}\b", text)
                 and any(fnmatch.filter(files, n) for n in names)]
        if not shown:
            missing.append(dialog)
    assert dialog_classes() >= {"ImportDialog", "JobDetailDialog", "SettingsDialog"}
    assert not missing, (f"no screenshot listed in docs/screenshots/README.md for {missing}: "
                         "take one and name the class in its entry")


def test_every_listed_picture_is_there() -> None:
    files = sorted(p.name for p in PICTURES.glob("*.png"))
    for names, text in listed_entries():
        for name in names:
            assert fnmatch.filter(files, name), f"{name} is listed ({text[:60]}…) but absent"
