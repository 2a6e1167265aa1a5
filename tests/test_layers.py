"""The layers of DESIGN.md, checked on the source: dependencies point down, Qt stays in ui/,
and the front ends (ui/, cli/, api/) never import each other: they go through
application/, and only the entry module (``reelqueue/entry.py``, which decides which front
end runs) imports them.

What the front ends (ui/, cli/, api/) may import (issues 12, 14, 20): ``application``,
``domain`` and ``resources``, nothing below. The view types they show (the engine's events,
view rows, the retry plan, the engine's settings, the intake's types and defaults, the
provider catalogue) come re-exported through application modules, each with a checked
``__all__`` (:func:`test_front_ends_import_only_what_application_exports`). The module
import graph has no circle, imports inside functions included
(:func:`test_no_import_circle`).
"""

from __future__ import annotations

import ast
import re
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
    # The front ends: never each other (see the module docstring for ui and api).
    "cli": {"application", "domain", "resources"},
    "ui": {"application", "domain", "resources"},
    "api": {"application", "domain", "resources"},
    # Top-level modules.
    "entry": {"application", "cli", "ui", "api"},  # the one place that may import front ends
    "__main__": {"entry"},
    "__init__": set(),
    "resources": set(),
}
# layer -> {lower layer -> the only modules of it the layer may import}; "" is the lower
# layer's package itself. Empty since issue 20: front ends import application/ only.
VIEW_MODULES: dict[str, set[str]] = {}
PARTLY_ALLOWED: dict[str, dict[str, set[str]]] = {"ui": VIEW_MODULES, "cli": VIEW_MODULES,
                                                 "api": VIEW_MODULES}
# cli module -> the exact modules below the application layer it may still import, and why.
# Empty since issue 20 (selftest, run's summary, worker, migrate, tokens and mock moved
# behind application/); an entry needs a reason and is checked to be still used.
CLI_EXCEPTIONS: dict[str, set[str]] = {}
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
            subs = [f"{module}.{alias.name}" for alias in node.names]
            if module == "reelqueue" or node.level:
                names.add(module)
                names.update(subs)
            elif module.startswith("reelqueue.") and all(map(_is_module, subs)):
                names.update(subs)  # ``from reelqueue.engine import events``: that module
            else:
                names.add(module)
        elif isinstance(node, ast.Call) and node.args:
            func = node.func
            called = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            first = node.args[0]
            if (called in DYNAMIC_IMPORTERS and isinstance(first, ast.Constant)
                    and isinstance(first.value, str)):
                names.add(first.value)
    return names


def _is_module(name: str) -> bool:
    """``reelqueue.a.b`` names a module or package of the source tree."""
    where = PACKAGE.joinpath(*name.split(".")[1:])
    return where.is_dir() or where.with_suffix(".py").is_file()


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
        if not (target in ALLOWED or (PACKAGE / target).is_dir()
                or (PACKAGE / f"{target}.py").is_file()):
            continue  # a name of reelqueue/__init__.py (__version__): imports nothing
        if target == layer or target in ALLOWED[layer]:
            continue
        partly = PARTLY_ALLOWED.get(layer, {}).get(target)
        module = name.split(".")[2] if name.count(".") >= 2 else ""
        if partly is not None and module in partly:
            continue
        if name in CLI_EXCEPTIONS.get(path.relative_to(PACKAGE).as_posix(), set()):
            continue
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
    ("application/planted.py", "from reelqueue.ui.session import WindowSession\n",
     "imports reelqueue.ui.session"),
    ("application/planted.py", "from PySide6.QtCore import QObject\n",
     "Qt belongs in ui/ only"),
    ("engine/planted.py", "from reelqueue.application.keys import check_key\n",
     "imports reelqueue.application.keys"),
    # The window never touches the journal, the keyring or the engine itself.
    ("ui/planted.py", "from reelqueue.store.sqlite import SqliteStore\n",
     "imports reelqueue.store.sqlite"),
    ("ui/planted.py", "from reelqueue.store import base\n", "imports reelqueue.store.base"),
    ("ui/planted.py", "def f():\n    from reelqueue.store.base import Store\n",
     "imports reelqueue.store.base"),
    ("ui/planted.py", "from reelqueue.credentials.keystore import KeyStore\n",
     "imports reelqueue.credentials.keystore"),
    ("ui/planted.py", "from reelqueue.engine.engine import Engine\n",
     "imports reelqueue.engine.engine"),
    ("ui/planted.py", "from reelqueue.engine import async_store\n",
     "imports reelqueue.engine.async_store"),
    ("ui/planted.py", "from reelqueue.intake.apply import apply_import\n",
     "imports reelqueue.intake.apply"),
    ("ui/planted.py", "from reelqueue.api.server import serve\n", "imports reelqueue.api"),
    # The HTTP API: neither the window nor the command line, nor they it.
    ("api/planted.py", "from reelqueue.ui.session import WindowSession\n",
     "imports reelqueue.ui.session"),
    ("api/planted.py", "from reelqueue.cli.main import main\n", "imports reelqueue.cli.main"),
    ("cli/planted.py", "from reelqueue.api import server\n", "imports reelqueue.api"),
    # The command line reaches the journal, the keyring and the engine through
    # application/ only (issue 12), like the window.
    ("cli/planted.py", "from reelqueue.store.base import Store\n", "imports reelqueue.store.base"),
    ("cli/planted.py", "from reelqueue.store import sqlite\n", "imports reelqueue.store.sqlite"),
    ("cli/planted.py", "def f():\n    from reelqueue.store.lockfile import DataDirLock\n",
     "imports reelqueue.store.lockfile"),
    ("cli/planted.py", "from reelqueue.engine.attention import needs_attention\n",
     "imports reelqueue.engine.attention"),
    ("cli/planted.py", "from reelqueue.credentials.keystore import KeyStore\n",
     "imports reelqueue.credentials.keystore"),
    # ... and it reaches the journal, the tokens, the keyring and the engine only through
    # application/ (application.remote, tokens, feed).
    ("api/planted.py", "from reelqueue.store.tokens import TokenStore\n",
     "imports reelqueue.store.tokens"),
    ("api/planted.py", "from reelqueue.store.journal_reader import JournalReader\n",
     "imports reelqueue.store.journal_reader"),
    ("api/planted.py", "from reelqueue.store import base\n", "imports reelqueue.store.base"),
    ("api/planted.py", "def f():\n    from reelqueue.store.sqlite import SqliteStore\n",
     "imports reelqueue.store.sqlite"),
    ("api/planted.py", "from reelqueue.credentials.keystore import KeyStore\n",
     "imports reelqueue.credentials.keystore"),
    ("api/planted.py", "from reelqueue.engine.engine import Engine\n",
     "imports reelqueue.engine.engine"),
    ("api/planted.py", "from reelqueue.intake.planner import ImportOptions\n",
     "imports reelqueue.intake.planner"),
    ("nowhere/planted.py", "import os\n", "nowhere is not a known layer"),
])
def test_the_check_reports_a_planted_violation(where: str, text: str, expected: str) -> None:
    """The check can fail: a module text that breaks the layers, put at a path that does
    not exist, is reported (nothing is written to the package)."""
    path = PACKAGE / where
    assert not path.exists()
    found = violations(path, text)
    assert any(expected in problem for problem in found), found


@pytest.mark.parametrize("text", [
    "from reelqueue.application.events import JobEvent\n",
    "from reelqueue.application import views\n",
    "from reelqueue.application.imports import ImportPlan\n",
    "from reelqueue.application.session import Session\n",
    "from reelqueue.application.remote import RemoteAccess\n",
    "from reelqueue.domain.states import JobState\n",
])
@pytest.mark.parametrize("front_end", ["ui", "api"])
def test_the_window_and_the_api_may_import_the_application(front_end: str,
                                                           text: str) -> None:
    """The other side: what the module docstring allows the window and the API is not
    reported."""
    assert violations(PACKAGE / front_end / "planted.py", text) == []


@pytest.mark.parametrize(("text", "expected"), [
    ("from reelqueue.engine.events import JobEvent\n", "imports reelqueue.engine.events"),
    ("from reelqueue.engine import queries\n", "imports reelqueue.engine.queries"),
    ("from reelqueue.engine.retry_plan import RetryPlan\n",
     "imports reelqueue.engine.retry_plan"),
    ("from reelqueue.engine.config import EngineConfig\n", "imports reelqueue.engine.config"),
    ("from reelqueue.intake import ImportPlan\n", "imports reelqueue.intake"),
    ("from reelqueue.intake.sheet import TEXT_EXTENSIONS\n", "imports reelqueue.intake.sheet"),
    ("from reelqueue.providers.builtin import builtin_registry\n",
     "imports reelqueue.providers.builtin"),
])
@pytest.mark.parametrize("front_end", ["ui", "cli", "api"])
def test_the_former_view_modules_are_reached_through_application(
        front_end: str, text: str, expected: str) -> None:
    found = violations(PACKAGE / front_end / "planted.py", text)
    assert any(expected in problem for problem in found), found


@pytest.mark.parametrize(("where", "text", "expected"), [
    # The commands moved behind application/ have no exception.
    ("cli/cmd_run.py", "from reelqueue.store.sqlite import SqliteStore\n",
     "imports reelqueue.store.sqlite"),
    ("cli/cmd_tokens.py", "from reelqueue.store.base import Store\n",
     "imports reelqueue.store.base"),
    ("cli/cmd_selftest.py", "from reelqueue.engine.engine import Engine\n",
     "imports reelqueue.engine.engine"),
    ("cli/cmd_worker.py", "from reelqueue.store.postgres import PostgresStore\n",
     "imports reelqueue.store.postgres"),
    ("cli/main.py", "from reelqueue.mockprovider import cli\n",
     "imports reelqueue.mockprovider.cli"),
    ("cli/cmd_status.py", "from reelqueue.store.base import Store\n",
     "imports reelqueue.store.base"),
    ("cli/cmd_spend.py", "from reelqueue.store.spend import SpendSummary\n",
     "imports reelqueue.store.spend"),
    ("cli/cmd_demo.py", "from reelqueue.intake.apply import apply_import\n",
     "imports reelqueue.intake.apply"),
])
def test_the_cli_exceptions_are_exact(where: str, text: str, expected: str) -> None:
    path = PACKAGE / where
    assert path.exists()
    found = violations(path, text)
    assert any(expected in problem for problem in found), found


def test_every_cli_exception_is_still_used() -> None:
    """The list shrinks as modules move behind application/: a listed import the module
    no longer makes must be struck from it."""
    for where, names in CLI_EXCEPTIONS.items():
        assert (PACKAGE / where).is_file(), where
        assert names <= imports_of(PACKAGE / where), (where, names - imports_of(PACKAGE / where))


@pytest.mark.parametrize("text", [
    "from reelqueue.application import status\n",
    "from reelqueue.application.config import EngineConfig\n",
    "from reelqueue.application.imports import ImportOptions\n",
    "from reelqueue.application.providers import builtin_registry\n",
])
def test_the_cli_may_import_the_application(text: str) -> None:
    assert violations(PACKAGE / "cli" / "planted.py", text) == []


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


# -- no import circle (issue 20) ---------------------------------------------------------
class _DropTypeChecking(ast.NodeTransformer):
    """Empties every ``if TYPE_CHECKING:`` block (its imports never run)."""

    def visit_If(self, node: ast.If) -> ast.AST:
        test = node.test
        if ((isinstance(test, ast.Name) and test.id == "TYPE_CHECKING")
                or (isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")):
            node.body = [ast.Pass()]
        self.generic_visit(node)
        return node


def _owning_module(name: str, known: set[str]) -> str | None:
    """The package module ``name`` runs: itself, or its longest prefix that is one
    (``reelqueue.intake.ImportPlan`` runs ``reelqueue.intake``)."""
    parts = name.split(".")
    while parts:
        candidate = ".".join(parts)
        if candidate in known:
            return candidate
        parts.pop()
    return None


def import_graph(texts: dict[Path, str] | None = None) -> dict[str, set[str]]:
    """module -> the package modules it imports when it runs, at module level or inside a
    function (imports under ``if TYPE_CHECKING:`` only are left out). ``texts`` puts a
    module text at a path (a planted circle) instead of the file's."""
    texts = texts or {}
    paths = set(modules()) | set(texts)
    known = {module_name(path) for path in paths}
    graph: dict[str, set[str]] = {}
    for path in sorted(paths):
        text = texts.get(path)
        source = path.read_text(encoding="utf-8") if text is None else text
        tree = _DropTypeChecking().visit(ast.parse(source))
        own = module_name(path)
        names = imports_of(path, ast.unparse(tree))
        graph[own] = {m for n in names if (m := _owning_module(n, known)) and m != own}
    return graph


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import circle of ``graph`` (``[a, b, …, a]``), None when there is none."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return [*path[path.index(nxt):], nxt]
            if nxt not in state and (found := visit(nxt)):
                return found
        path.pop()
        state[node] = 2
        return None

    for start in sorted(graph):
        if start not in state and (found := visit(start)):
            return found
    return None


def test_no_import_circle() -> None:
    """No module imports, directly or through others, a module that imports it: not at
    module level, nor inside a function (a circle hidden in a function still ties the
    layers in a knot). Imports under ``if TYPE_CHECKING:`` only are allowed."""
    cycle = find_cycle(import_graph())
    assert cycle is None, "import circle: " + " -> ".join(cycle or [])


def test_the_circle_check_reports_a_planted_circle() -> None:
    planted = {PACKAGE / "domain" / "planted_a.py": "def f():\n    from . import planted_b\n",
               PACKAGE / "domain" / "planted_b.py": "from reelqueue.domain.planted_a import f\n"}
    cycle = find_cycle(import_graph(planted))
    assert cycle is not None and "reelqueue.domain.planted_a" in cycle, cycle
    typed = {PACKAGE / "domain" / "planted_a.py":
             "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
             "    from reelqueue.domain import planted_b\n",
             PACKAGE / "domain" / "planted_b.py": "from reelqueue.domain.planted_a import f\n"}
    graph = import_graph(typed)
    assert "reelqueue.domain.planted_b" not in graph["reelqueue.domain.planted_a"]


# -- application/ is the only face (issue 20) -----------------------------------------------
FRONT_ENDS = ("ui", "cli", "api")
APPLICATION = "reelqueue.application"


def exported(module: str) -> set[str] | None:
    """The ``__all__`` of an application module (read from its source), None if it has
    none."""
    parts = module.split(".")[1:]
    path = PACKAGE.joinpath(*parts)
    path = path / "__init__.py" if path.is_dir() else path.with_suffix(".py")
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        targets = (node.targets if isinstance(node, ast.Assign)
                   else [node.target] if isinstance(node, ast.AnnAssign) else [])
        if any(isinstance(t, ast.Name) and t.id == "__all__" for t in targets):
            value = node.value
            assert isinstance(value, (ast.List, ast.Tuple)), f"{module}.__all__ is no list"
            return {e.value for e in value.elts
                    if isinstance(e, ast.Constant) and isinstance(e.value, str)}
    return None


def unexported_imports(path: Path, text: str | None = None) -> list[str]:
    """Each name ``path`` takes from ``reelqueue.application…`` that the module it comes
    from does not list in its ``__all__``: ``from reelqueue.application.x import n``, and
    ``m.n`` after ``from reelqueue.application import m``."""
    tree = ast.parse(path.read_text(encoding="utf-8") if text is None else text)
    where = path.relative_to(PACKAGE)
    problems: list[str] = []
    modules_bound: dict[str, str] = {}

    def check(module: str, name: str) -> None:
        names = exported(module)
        if names is None:
            problems.append(f"{where}: {module} has no __all__ (it imports {name} from it)")
        elif name not in names:
            problems.append(f"{where} imports {name} from {module}, not in its __all__")

    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith(APPLICATION + "."):
                    problems.append(f"{where}: 'import {alias.name}'; use 'from … import'")
        elif (isinstance(node, ast.ImportFrom) and not node.level and node.module
              and (node.module == APPLICATION or node.module.startswith(APPLICATION + "."))):
            for alias in node.names:
                check(node.module, alias.name)
                if _is_module(f"{node.module}.{alias.name}"):
                    modules_bound[alias.asname or alias.name] = f"{node.module}.{alias.name}"
    # A module name also bound to something else in the file (a local ``status = …``)
    # is left alone: which one an attribute reads is not known without running it.
    rebound = {n.id for n in ast.walk(tree)
               if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
    rebound |= {a.arg for n in ast.walk(tree) if isinstance(n, ast.arguments)
                for a in (*n.posonlyargs, *n.args, *n.kwonlyargs)}
    for node in ast.walk(tree):
        if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
                and node.value.id in modules_bound and node.value.id not in rebound):
            check(modules_bound[node.value.id], node.attr)
    return problems


def front_end_modules() -> list[Path]:
    return [path for path in modules() if layer_of(path) in (*FRONT_ENDS, "entry")]


@pytest.mark.parametrize("path", front_end_modules(),
                         ids=lambda p: str(p.relative_to(PACKAGE)))
def test_front_ends_import_only_what_application_exports(path: Path) -> None:
    """Every name a front end (or the entry module) takes from ``reelqueue.application…``
    is in that module's ``__all__`` (the package's own ``__all__`` lists its public
    modules): the application layer's face is written down, module by module."""
    assert unexported_imports(path) == []


def test_every_application_module_says_what_it_exports() -> None:
    for path in (PACKAGE / "application").glob("*.py"):
        assert exported(module_name(path)) is not None, f"{path.name} has no __all__"


@pytest.mark.parametrize(("text", "expected"), [
    ("from reelqueue.application.jobs import _is_unknown\n",
     "imports _is_unknown from reelqueue.application.jobs"),
    ("from reelqueue.application import jobs\njobs._is_unknown\n",
     "imports _is_unknown from reelqueue.application.jobs"),
    ("from reelqueue.application import nowhere\n",
     "imports nowhere from reelqueue.application,"),
    ("import reelqueue.application.jobs\n", "use 'from … import'"),
])
def test_the_export_check_reports_a_planted_import(text: str, expected: str) -> None:
    found = unexported_imports(PACKAGE / "ui" / "planted.py", text)
    assert any(expected in problem for problem in found), found


# The window controller's parts (issue 20): each takes what it uses (the session, the
# window, the dialog keeper, a spawn callable) and, for the controller's changing state and
# callbacks, a narrow Protocol of its own module; none reaches back through the controller.
CONTROLLER_MODULES = {"controller.py", "app.py"}  # the controller, and the one who makes it
CONTROLLER_PARTS = ("account_manage_part", "close_flow", "dialogs", "gallery_part",
                    "queue_actions", "tray")
_REACHES_BACK = re.compile(r"\bAppController\b|\.ctl\b|\bctl\.")


def controller_reach(text: str) -> list[str]:
    """The lines of ``text`` that name the controller's class or reach through ``ctl``."""
    return [f"{n}: {line.strip()}" for n, line in enumerate(text.splitlines(), 1)
            if _REACHES_BACK.search(line)]


def ui_modules_beside_the_controller() -> list[Path]:
    return sorted(p for p in (PACKAGE / "ui").rglob("*.py") if p.name not in CONTROLLER_MODULES)


@pytest.mark.parametrize("path", ui_modules_beside_the_controller(),
                         ids=lambda p: p.relative_to(PACKAGE).as_posix())
def test_window_parts_do_not_reach_back_through_the_controller(path: Path) -> None:
    """No module of ui/ but the controller and app.py names ``AppController`` (not even
    under TYPE_CHECKING) or reaches through ``ctl``: a part is given its dependencies."""
    found = controller_reach(path.read_text(encoding="utf-8"))
    assert not found, f"{path.name} reaches back through the controller: {found}"


def test_the_controller_parts_are_checked() -> None:
    names = {p.stem for p in ui_modules_beside_the_controller()}
    assert set(CONTROLLER_PARTS) <= names


@pytest.mark.parametrize("text", [
    "if TYPE_CHECKING:\n    from reelqueue.ui.controller import AppController\n",
    "def f(self):\n    return self.ctl.session.app\n",
    "def __init__(self, ctl):\n    ctl.spawn(x)\n",
])
def test_the_reach_back_check_reports_a_planted_reference(text: str) -> None:
    assert controller_reach(text)


def test_the_http_client_is_httpx2_only() -> None:
    """Issue 33: ReelQueue's HTTP goes through httpx2 (httpcore2's pool; httpcore 1.0's
    walks every connection for every queued request). A module importing httpx would
    bring a second client library back, with its pool and its request-URL logging."""
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                     else [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            found += [f"{path.relative_to(PACKAGE)}: {name}" for name in names
                      if name.split(".")[0] in ("httpx", "httpcore")]
    assert found == []
