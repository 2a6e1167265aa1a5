"""Every JSON read of outside input survives a document nested past Python's parser.

``json.loads('[' * 5000)`` raises RecursionError, which is not a ValueError: a reader that
caught only ValueError let it out, and a hostile answer, row or file stopped the window,
a command or a render (fixed 2026-12-07 in a dozen places: the adapters' create, poll and
error readers, the mock server, the journal's row readers, the window's settings, the
team's instance and account-view rows, key bindings, migrate-to). This test reads the
package's source: each ``json.loads(...)`` and each ``<answer>.json()`` sits in a ``try``
one of whose handlers names RecursionError, or is one of the reads listed below, whose
input is not outside input.
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "app" / "reelqueue"

OWN_INPUT = {
    ("providers/mock.py", "_wire"): "json.loads(json.dumps(...)) of the row's own params",
    ("store/sql_journal.py", "put_account_view"): "its own limits_to_json, just written",
    ("intake/workbook_child.py", "main"): "the request its parent process wrote",
    ("mockprovider/cli.py", "_account_view"): "the mock's own command line",
    ("mockprovider/cli.py", "_foreign"): "the mock's own command line",
}
"""(module, function): why its JSON read is not of outside input."""


def _is_json_read(call: ast.Call) -> bool:
    func = call.func
    if not isinstance(func, ast.Attribute):
        return False
    if func.attr == "loads" and isinstance(func.value, ast.Name) and func.value.id == "json":
        return True
    return func.attr == "json" and not call.args and not call.keywords


def _catches_recursion(handler: ast.ExceptHandler) -> bool:
    kinds = handler.type
    names = kinds.elts if isinstance(kinds, ast.Tuple) else [kinds]
    return any(isinstance(n, ast.Name) and n.id in ("RecursionError", "Exception",
                                                   "BaseException") for n in names)


def unguarded_reads(path: Path, root: Path = PACKAGE) -> list[str]:
    tree = ast.parse(path.read_text("utf-8"))
    found: list[str] = []

    def visit(node: ast.AST, guarded: bool, function: str) -> None:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            function = node.name
        if isinstance(node, ast.Try):
            inner = guarded or any(_catches_recursion(h) for h in node.handlers)
            for child in node.body:
                visit(child, inner, function)
            for child in (*node.handlers, *node.orelse, *node.finalbody):
                visit(child, guarded, function)
            return
        if isinstance(node, ast.Call) and _is_json_read(node) and not guarded:
            where = str(path.relative_to(root))
            if (where, function) not in OWN_INPUT:
                found.append(f"{where}:{node.lineno} ({function})")
        for child in ast.iter_child_nodes(node):
            visit(child, guarded, function)

    visit(tree, False, "<module>")
    return found


def test_every_json_read_of_outside_input_catches_recursion_error() -> None:
    problems = [p for path in sorted(PACKAGE.rglob("*.py")) for p in unguarded_reads(path)]
    assert problems == [], ("a JSON read that lets a RecursionError out (catch it with the "
                            f"ValueError, or list the read in OWN_INPUT): {problems}")


def test_the_check_sees_an_unguarded_read(tmp_path: Path) -> None:
    planted = tmp_path / "planted.py"
    planted.write_text("import json\n\ndef read(text, answer):\n    try:\n"
                       "        return json.loads(text), answer.json()\n"
                       "    except ValueError:\n        return None\n", "utf-8")
    assert unguarded_reads(planted, tmp_path) == ["planted.py:5 (read)", "planted.py:5 (read)"]
    planted.write_text(planted.read_text("utf-8").replace(
        "except ValueError", "except (ValueError, RecursionError)"), "utf-8")
    assert unguarded_reads(planted, tmp_path) == []
