"""The layers of DESIGN.md, checked on the source: dependencies point down, Qt stays in ui/."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit

PACKAGE = Path(__file__).resolve().parents[1] / "app" / "reelqueue"

# layer -> the reelqueue layers it may import (besides itself)
ALLOWED: dict[str, set[str]] = {
    "domain": set(),
    "store": {"domain"},
    "credentials": {"domain"},
    "providers": {"domain", "resources"},
    "mockprovider": {"domain", "resources"},
    "intake": {"domain", "providers", "store"},
    "engine": {"domain", "store", "providers", "credentials", "intake", "resources"},
    "application": {"domain", "store", "providers", "credentials", "intake", "engine",
                    "mockprovider", "resources"},
    "cli": {"application", "domain", "store", "providers", "credentials", "intake", "engine",
            "mockprovider", "resources", "ui"},
    "ui": {"application", "domain", "store", "providers", "credentials", "intake", "engine",
           "mockprovider", "resources", "cli"},
}
QT = ("PySide6", "qasync", "PyQt5", "PyQt6", "shiboken6")


def imports_of(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
    return names


def modules() -> list[tuple[str, Path]]:
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(PACKAGE).parts
        layer = parts[0].removesuffix(".py") if len(parts) > 1 else None
        if layer:
            found.append((layer, path))
    return found


@pytest.mark.parametrize(("layer", "path"), modules(), ids=lambda v: str(v)[-40:])
def test_module_respects_its_layer(layer: str, path: Path) -> None:
    assert layer in ALLOWED, f"{layer} is not a known layer; add it to ALLOWED"
    for name in imports_of(path):
        top = name.split(".")[0]
        if top in QT:
            assert layer == "ui", f"{path.name} imports {name}: Qt belongs in ui/ only"
        if top != "reelqueue" or name == "reelqueue":
            continue
        target = name.split(".")[1]
        assert target == layer or target in ALLOWED[layer], (
            f"{path.relative_to(PACKAGE)} ({layer}) imports {name}")


def test_domain_uses_the_standard_library_only() -> None:
    import sys

    for path in (PACKAGE / "domain").glob("*.py"):
        for name in imports_of(path):
            top = name.split(".")[0]
            assert top in sys.stdlib_module_names or name.startswith("reelqueue.domain"), (
                f"{path.name} imports {name}")
