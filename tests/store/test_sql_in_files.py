"""Every SQL statement of the app lives in a ``.sql`` file, none in a Python string (issue 20).

The scan reads every module under ``app/`` as a syntax tree and looks at each string it
builds: a literal, an f-string (its holes read as ``x``) or a ``+`` of those. A string is
SQL when it starts, after white space and in any case, with a statement's keyword (SELECT,
INSERT, UPDATE, DELETE, WITH, CREATE, ALTER, DROP, PRAGMA, BEGIN, COMMIT, ROLLBACK,
SAVEPOINT, LISTEN, NOTIFY, SET) followed by that statement's shape (``SELECT ... FROM``,
``INSERT INTO``, ``UPDATE t SET``, ``DELETE FROM``, ``PRAGMA name``...): a label such as
"Select the jobs to cancel" or the HTTP method "DELETE" is prose, not SQL. Docstrings and
other bare string statements are never run, so they are not looked at.

A query's *name* (``self._q["commit_write"]``) is not SQL; the text it names is in
``store/sql/queries.sql``. The files that still hold SQL are listed in ``EXEMPT``, each
with why; a listed file that no longer holds any must leave the list.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from reelqueue.store.queries import parse_named

APP = Path(__file__).resolve().parents[2] / "app"
STORE = APP / "reelqueue" / "store"

EXEMPT: dict[str, str] = {}  # none: the PostgreSQL store's SQL is in sql_pg/ too

_RESERVED = r"(?!(?:ON|TO|FOR|IN|AT|AS|AND|OR|NOT|IS|BY|OF|ALL|THE|A|AN)\b)"
_IDENT = r"(?:\"[^\"]+\"|[A-Za-z_][\w$]*)"
_SHAPES = {
    "SELECT": r"SELECT\s+(?:DISTINCT\s+|ALL\s+)?(?:\*|\d|'|\(|\{|[\w.]+\s*(?:\(|,|[-+*/|<>=]"
              r"|\bFROM\b|\bAS\b))",
    "INSERT": r"INSERT\s+(?:OR\s+\w+\s+)?INTO\s",
    "UPDATE": r"UPDATE\s+(?:OR\s+\w+\s+)?[\w.\"]+(?:\s+AS\s+\w+)?\s+SET\s",
    "DELETE": r"DELETE\s+FROM\s",
    "WITH": r"WITH\s+(?:RECURSIVE\s+)?\w+(?:\s*\([^)]*\))?\s+AS\s+(?:NOT\s+)?"
            r"(?:MATERIALIZED\s+)?\(",
    "CREATE": r"CREATE\s+(?:OR\s+REPLACE\s+)?(?:UNIQUE\s+|TEMP\s+|TEMPORARY\s+|VIRTUAL\s+)?"
              r"(?:TABLE|INDEX|VIEW|TRIGGER|SCHEMA|SEQUENCE|FUNCTION|EXTENSION|TYPE)\b",
    "ALTER": r"ALTER\s+(?:TABLE|INDEX|VIEW|SEQUENCE|SCHEMA|DATABASE|ROLE|SYSTEM|TYPE)\b",
    "DROP": r"DROP\s+(?:TABLE|INDEX|VIEW|TRIGGER|SCHEMA|SEQUENCE|FUNCTION|TYPE)\b",
    "PRAGMA": r"PRAGMA\s+[\w.]+",
    "BEGIN": r"BEGIN(?:\s+(?:IMMEDIATE|DEFERRED|EXCLUSIVE|TRANSACTION|WORK|ISOLATION\b.*))?"
             r"\s*;?\s*$",
    "COMMIT": r"COMMIT(?:\s+(?:TRANSACTION|WORK))?\s*;?\s*$",
    "ROLLBACK": r"ROLLBACK(?:\s+(?:TRANSACTION|WORK))?(?:\s+TO\s+(?:SAVEPOINT\s+)?\w+)?"
                r"\s*;?\s*$",
    "SAVEPOINT": r"SAVEPOINT\s+\w+\s*;?\s*$",
    "LISTEN": rf"LISTEN\s+{_RESERVED}{_IDENT}\s*;?\s*$",
    "NOTIFY": rf"NOTIFY\s+{_RESERVED}{_IDENT}\s*(?:,|;|$)",
    "SET": r"SET\s+(?:LOCAL\s+|SESSION\s+)?[\w.]+\s*(?:=|\bTO\b)",
}
SQL = re.compile(r"\s*(?:" + "|".join(f"(?:{shape})" for shape in _SHAPES.values()) + ")",
                 re.IGNORECASE | re.DOTALL)


def _text(node: ast.AST) -> str | None:
    """The string ``node`` builds, holes as ``x``; None when it builds no string."""
    if isinstance(node, ast.Constant):
        return node.value if isinstance(node.value, str) else None
    if isinstance(node, ast.JoinedStr):
        return "".join(v.value if isinstance(v, ast.Constant) and isinstance(v.value, str)
                       else "x" for v in node.values)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        left, right = _text(node.left), _text(node.right)
        if left is None and right is None:
            return None
        return (left if left is not None else "x") + (right if right is not None else "x")
    return None


def sql_strings(source: str, filename: str = "<source>") -> Iterator[tuple[int, str]]:
    """(line, text) of each string in ``source`` that reads as SQL."""
    tree = ast.parse(source, filename)
    unrun = {id(n.value) for n in ast.walk(tree)
             if isinstance(n, ast.Expr) and isinstance(n.value, ast.Constant)}
    # A subscript's key names a query (``self._q["begin"]``), it is not one.
    unrun.update(id(n.slice) for n in ast.walk(tree)
                 if isinstance(n, ast.Subscript) and isinstance(n.slice, ast.Constant))
    inner: set[int] = set()  # parts of a string already looked at whole
    for node in ast.walk(tree):
        if id(node) in unrun or id(node) in inner:
            continue
        text = _text(node)
        if text is None:
            continue
        inner.update(id(n) for n in ast.walk(node) if n is not node)
        if SQL.match(text):
            yield getattr(node, "lineno", 0), text


def _modules() -> list[Path]:
    return sorted(APP.rglob("*.py"))


def test_no_sql_in_a_python_string() -> None:
    found = []
    for path in _modules():
        name = path.relative_to(APP).as_posix()
        if name in EXEMPT:
            continue
        for line, text in sql_strings(path.read_text("utf-8"), str(path)):
            found.append(f"{name}:{line}: {' '.join(text.split())[:80]}")
    assert not found, ("SQL in Python strings (put it in a named block of a .sql file, "
                       "e.g. store/sql/queries.sql):\n" + "\n".join(found))


def test_each_exempt_file_exists_and_still_holds_sql() -> None:
    """An exemption ends with its reason: a file moved or cleaned up leaves the list."""
    for name, why in EXEMPT.items():
        path = APP / name
        assert why and path.is_file(), name
        assert any(sql_strings(path.read_text("utf-8"))), (
            f"{name} holds no SQL any more: remove it from EXEMPT")


def test_the_scan_fails_on_a_module_with_sql(tmp_path: Path) -> None:
    """The check can fail: each way of writing SQL into Python is found, prose is not."""
    module = tmp_path / "offender.py"
    module.write_text('''
"""SELECT * FROM jobs in a docstring is never run."""
table = "jobs"
plain = "SELECT id FROM jobs WHERE id = ?"
lower = """
    select count(*) from jobs"""
joined = ("UPDATE jobs SET state = 'QUEUED' "
          "WHERE id = :id")
formatted = f"DELETE FROM {table} WHERE id = 1"
added = "INSERT INTO " + table + " VALUES (1)"
pragma = f"PRAGMA busy_timeout = {1000}"
begin = "BEGIN IMMEDIATE"
listen = "LISTEN reelqueue_jobs"
setting = "SET lock_timeout = '5s'"
cte = "WITH due AS (SELECT 1) SELECT * FROM due"
label = "Select the jobs to cancel in the table first."
method = "DELETE"
words = "with a submit outcome unknown"
field = "Listen on"
name = "commit_write"
''', "utf-8")
    found = [line for line, _ in sql_strings(module.read_text("utf-8"))]
    assert found == [4, 5, 7, 9, 10, 11, 12, 13, 14, 15], found


@pytest.mark.parametrize("file", ["store/sql/queries.sql", "store/sql/migrate_pg.sql",
                                  "store/sql_pg/queries.sql"])
def test_every_statement_of_the_sql_files_reads_as_sql(file: str) -> None:
    """The shapes above know every statement the project writes: each named block that is
    a statement (not an expression such as a sort key) would be caught in a Python string."""
    blocks = parse_named((STORE.parent / file).read_text("utf-8"))
    statements = {name: text for name, text in blocks.items()
                  if re.match(r"\s*(" + "|".join(_SHAPES) + r")\b", text, re.IGNORECASE)}
    assert statements
    missed = [name for name, text in statements.items() if not SQL.match(text)]
    assert not missed, missed
