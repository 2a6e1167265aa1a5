"""Team mode behind one seam (issue 36 item 3), checked on the source: above the store,
nothing reads the team flag (``store_url``: compared, or tested for truth) except where
the mode is chosen (``application/team_seam.py``'s ``journal_mode``, re-exported by
``application/compose.py``), and nothing asks the store what it is (``hasattr``,
``getattr`` or ``isinstance`` on a store or journal, or ``isinstance`` against a store
class). A new probe fails here with its file and line; the fix is a method of the mode
(``JournalMode``) with its two answers, in ``SoloMode`` and ``TeamMode``."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit

PACKAGE = Path(__file__).resolve().parents[1] / "app" / "reelqueue"
# Where the mode is chosen and answered: the only places the flag may be read.
SEAM = {"application/team_seam.py", "application/compose.py"}
PROBES = {"hasattr", "getattr", "isinstance"}


def _above_the_store() -> list[Path]:
    return sorted(p for p in PACKAGE.rglob("*.py")
                  if p.relative_to(PACKAGE).parts[0] != "store")


STORE_WORDS = re.compile(r"(^|_)store$|^journal$|^sync$")
"""A name or attribute that holds the journal's store (``store``, ``self._store``,
``session.journal``, ``journal.sync``); a key store is not the journal."""


def _names_store(node: ast.AST) -> bool:
    return any(STORE_WORDS.search(n.id if isinstance(n, ast.Name) else n.attr)
               for n in ast.walk(node) if isinstance(n, ast.Name | ast.Attribute))


def _flag_reads(tree: ast.AST) -> list[int]:
    """Lines that read ``store_url`` as a flag: in a comparison, or as a condition."""
    lines = []
    for node in ast.walk(tree):
        tests: list[ast.AST] = []
        if isinstance(node, ast.Compare):
            tests = [node.left, *node.comparators]
        elif isinstance(node, (ast.If, ast.IfExp, ast.While, ast.Assert)):
            tests = [node.test]
        elif isinstance(node, ast.BoolOp):
            tests = list(node.values)
        elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
            tests = [node.operand]
        lines += [node.lineno for t in tests  # type: ignore[attr-defined]
                  if isinstance(t, ast.Attribute) and t.attr == "store_url"]
    return lines


def _store_probes(tree: ast.AST) -> list[int]:
    lines = []
    for node in ast.walk(tree):
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
                and node.func.id in PROBES and node.args):
            if node.func.id == "isinstance":  # against a store class
                probe = len(node.args) > 1 and ast.unparse(node.args[1]).endswith("Store")
            else:  # asking a store what it has
                probe = _names_store(node.args[0])
            if probe:
                lines.append(node.lineno)
    return lines


def test_no_team_flag_read_outside_the_seam() -> None:
    found = []
    for path in _above_the_store():
        rel = path.relative_to(PACKAGE).as_posix()
        if rel in SEAM:
            continue
        found += [f"{rel}:{n}" for n in _flag_reads(ast.parse(path.read_text("utf-8")))]
    assert found == [], "ask the journal's mode (application/team_seam.py) instead"


def test_no_probe_of_the_store_above_the_store() -> None:
    found = []
    for path in _above_the_store():
        rel = path.relative_to(PACKAGE).as_posix()
        found += [f"{rel}:{n}" for n in _store_probes(ast.parse(path.read_text("utf-8")))]
    assert found == [], "a store is what compose opened: ask the mode, not the store"


@pytest.mark.parametrize("source", [
    "if ctx.store_url is not None:\n    pass\n",
    "team = session.ctx.store_url is not None\n",
    "x = 1 if ctx.store_url else 2\n",
])
def test_a_planted_flag_read_is_found(source: str) -> None:
    assert _flag_reads(ast.parse(source)) == [1]


@pytest.mark.parametrize("source", [
    "ok = hasattr(store, 'list_instances')\n",
    "ok = isinstance(opened, PostgresStore)\n",
    "ok = getattr(session.journal.sync, 'database_id', None)\n",
])
def test_a_planted_store_probe_is_found(source: str) -> None:
    assert _store_probes(ast.parse(source)) == [1]


def test_what_is_not_a_probe_is_left_alone() -> None:
    assert _store_probes(ast.parse("ok = hasattr(dialog, 'stop_timers')\n")) == []
    assert _store_probes(ast.parse("ok = isinstance(journal, Path)\n")) == []
    assert _store_probes(ast.parse("ok = getattr(keystore, 'get', None)\n")) == []
    assert _flag_reads(ast.parse("other = replace(ctx, store_url=None)\n")) == []
