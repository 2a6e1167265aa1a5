"""The layers of DESIGN.md, checked on the source: dependencies point down, Qt stays in ui/,
and the front ends (ui/, cli/, api/) never import each other: both go through application/, and
only the entry module (``reelqueue/entry.py``, which decides which front end runs) imports
both."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit

PACKAGE = Path(__file__).resolve().parents[1] / "app" / "reelqueue"

BELOW_FRONT_ENDS = {"domain", "store", "providers", "credentials", "intake", "engine",
                    "mockprovider", "resources"}

# layer -> the reelqueue layers it may import (besides itself). A layer is a subpackage
# (its folder's name) or a top-level module (its name without .py).
ALLOWED: dict[str, set[str]] = {
    "domain": set(),
    "store": {"domain"},
    "credentials": {"domain"},
    "providers": {"domain", "resources"},
    "mockprovider": {"domain", "resources"},
    "intake": {"domain", "providers", "store"},
    "engine": {"domain", "store", "providers", "credentials", "intake", "resources"},
    "application": BELOW_FRONT_ENDS,
    # The front ends: never each other. ui -> store (and the layers below the application
    # layer in general) is still allowed because the window reads and writes the journal
    # through engine.store; moving those calls behind application/ is the next step of
    # issue 12, after which ui keeps only "application" and "domain".
    "cli": {"application"} | BELOW_FRONT_ENDS,
    "ui": {"application"} | BELOW_FRONT_ENDS,
    "api": {"application"} | BELOW_FRONT_ENDS,
    # Top-level modules.
    "entry": {"application", "cli", "ui", "api"},  # the one place that may import both front ends
    "__main__": {"entry"},
    "__init__": set(),
    "resources": set(),
}
QT = ("PySide6", "qasync", "PyQt5", "PyQt6", "shiboken6")
DYNAMIC_IMPORTERS = ("import_module", "find_spec", "__import__")


def module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(["reelqueue", *parts])


def imports_of(path: Path, text: str | None = None) -> set[str]:
    """Every module ``path`` imports: ``import x``, ``from x import y`` (``from reelqueue
    import ui`` counts as ``reelqueue.ui``), relative imports resolved, and a constant
    module name given to ``importlib.import_module``, ``find_spec`` or ``__import__``."""
    tree = ast.parse(path.read_text(encoding="utf-8") if text is None else text)
    own = module_name(path)
    package = own if path.name == "__init__.py" else own.rpartition(".")[0]
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[:len(base) - (node.level - 1)]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            names.add(module)
            if module == "reelqueue" or node.level:
                names.update(f"{module}.{alias.name}" for alias in node.names)
        elif isinstance(node, ast.Call) and node.args:
            func = node.func
            called = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            first = node.args[0]
            if (called in DYNAMIC_IMPORTERS and isinstance(first, ast.Constant)
                    and isinstance(first.value, str)):
                names.add(first.value)
    return names


def layer_of(path: Path) -> str:
    return path.relative_to(PACKAGE).parts[0].removesuffix(".py")


def violations(path: Path, text: str | None = None) -> list[str]:
    """What in ``path`` (or ``text`` put at ``path``) breaks the layers; empty if nothing."""
    layer = layer_of(path)
    if layer not in ALLOWED:
        return [f"{layer} is not a known layer; add it to ALLOWED"]
    found = []
    for name in sorted(imports_of(path, text)):
        top = name.split(".")[0]
        if top in QT and layer != "ui":
            found.append(f"{path.name} imports {name}: Qt belongs in ui/ only")
        if top != "reelqueue" or name == "reelqueue":
            continue
        target = name.split(".")[1]
        if not ((PACKAGE / target).is_dir() or (PACKAGE / f"{target}.py").is_file()):
            continue  # a name of reelqueue/__init__.py (__version__): imports nothing
        if target != layer and target not in ALLOWED[layer]:
            found.append(f"{path.relative_to(PACKAGE)} ({layer}) imports {name}")
    return found


def modules() -> list[Path]:
    return sorted(PACKAGE.rglob("*.py"))


@pytest.mark.parametrize("path", modules(), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_module_respects_its_layer(path: Path) -> None:
    assert violations(path) == []


def test_every_layer_and_the_entry_module_are_checked() -> None:
    checked = {layer_of(path) for path in modules()}
    assert {"application", "cli", "ui", "entry", "__main__"} <= checked


@pytest.mark.parametrize(("where", "text", "expected"), [
    ("cli/planted.py", "from reelqueue.ui.app import run_app\n", "imports reelqueue.ui.app"),
    ("cli/planted.py", "from reelqueue import ui\n", "imports reelqueue.ui"),
    ("cli/planted.py", "from ..ui import app\n", "imports reelqueue.ui.app"),
    ("cli/planted.py", "def f():\n    import reelqueue.ui.session\n",
     "imports reelqueue.ui.session"),
    ("cli/planted.py", "import importlib\nimportlib.import_module('reelqueue.ui.app')\n",
     "imports reelqueue.ui.app"),
    ("ui/planted.py", "from reelqueue.cli.main import setup_logging\n",
     "imports reelqueue.cli.main"),
    ("ui/planted.py", "from reelqueue.cli.context import CliContext\n",
     "imports reelqueue.cli.context"),
    ("cli/planted.py", "from reelqueue.api.serve import run_serve\n",
     "imports reelqueue.api.serve"),
    ("api/planted.py", "from reelqueue.cli.cmd_run import engine_config\n",
     "imports reelqueue.cli.cmd_run"),
    ("application/planted.py", "from reelqueue.api.server import ApiServer\n",
     "imports reelqueue.api.server"),
    ("application/planted.py", "from reelqueue.ui.session import EngineSession\n",
     "imports reelqueue.ui.session"),
    ("application/planted.py", "from PySide6.QtCore import QObject\n",
     "Qt belongs in ui/ only"),
    ("engine/planted.py", "from reelqueue.application.keys import check_key\n",
     "imports reelqueue.application.keys"),
    ("nowhere/planted.py", "import os\n", "nowhere is not a known layer"),
])
def test_the_check_reports_a_planted_violation(where: str, text: str, expected: str) -> None:
    """The check can fail: a module text that breaks the layers, put at a path that does
    not exist, is reported (nothing is written to the package)."""
    path = PACKAGE / where
    assert not path.exists()
    found = violations(path, text)
    assert any(expected in problem for problem in found), found


def test_only_the_entry_module_may_import_both_front_ends() -> None:
    both = "from reelqueue.cli.main import main\nfrom reelqueue.ui.app import run_app\n"
    assert violations(PACKAGE / "entry.py", both) == []
    assert len(violations(PACKAGE / "resources.py", both)) == 2


def test_domain_uses_the_standard_library_only() -> None:
    for path in (PACKAGE / "domain").glob("*.py"):
        for name in imports_of(path):
            top = name.split(".")[0]
            assert top in sys.stdlib_module_names or name.startswith("reelqueue.domain"), (
                f"{path.name} imports {name}")
