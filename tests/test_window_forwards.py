"""No forwarding layer between the window and the application layer (issue 36 item 5),
checked on the source: ``ui/session.py`` keeps only what is the window's own (its settings,
the clean-exit marker, the recovery banner's follow-up, the served API), and none of its
functions only hands one call (or one attribute) on to :mod:`reelqueue.application`.

A forward is a function or property whose body, its docstring aside, is one ``return``
or expression statement of (an ``await`` of) a call of something the module imported from
``reelqueue.application`` (``jobs.cancel(self.app, ids)``, ``reconcile_spend(self.app)``)
or of the application ``Session`` the window holds as ``self.app`` (``self.app.spawn(...)``),
or just ``return self.app.<attribute>``. The window's parts call the application layer
themselves instead: ``jobs.cancel(session.app, ids)``. A new forward fails here with its
line; where a command needs several steps, they belong in a function of the application
layer, not in the window."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit

WINDOW_SESSION = (Path(__file__).resolve().parents[1] / "app" / "reelqueue" / "ui"
                  / "session.py")
APPLICATION = "reelqueue.application"


def _application_names(tree: ast.Module) -> set[str]:
    """The names the module binds to the application layer (modules and their members)."""
    names: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.ImportFrom) and node.module is not None and (
                node.module == APPLICATION or node.module.startswith(APPLICATION + ".")):
            names.update(alias.asname or alias.name for alias in node.names)
        elif isinstance(node, ast.Import):
            names.update(alias.asname or alias.name.split(".")[0] for alias in node.names
                         if alias.name.startswith(APPLICATION + "."))
    return names


def _root(node: ast.expr) -> ast.expr:
    while isinstance(node, ast.Attribute):
        node = node.value
    return node


def _on_app(node: ast.expr) -> bool:
    """``self.app`` or something reached through it (``self.app.engine.pause``)."""
    while isinstance(node, ast.Attribute):
        if (node.attr == "app" and isinstance(node.value, ast.Name)
                and node.value.id == "self"):
            return True
        node = node.value
    return False


def _forwards(target: ast.expr, application: set[str]) -> bool:
    if isinstance(target, ast.Await):
        target = target.value
    if isinstance(target, ast.Call):
        func = target.func
        root = _root(func)
        return (isinstance(root, ast.Name) and root.id in application) or _on_app(func)
    return isinstance(target, ast.Attribute) and _on_app(target)


def forwarders(source: str) -> list[str]:
    """``name (line n)`` of each function of ``source`` that only forwards one call (or
    one attribute) to the application layer."""
    tree = ast.parse(source)
    application = _application_names(tree)
    found: list[str] = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        body = list(node.body)
        if (body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant)
                and isinstance(body[0].value.value, str)):
            body = body[1:]  # the docstring
        if len(body) != 1:
            continue
        statement = body[0]
        value = (statement.value if isinstance(statement, ast.Return | ast.Expr) else None)
        if value is not None and _forwards(value, application):
            found.append(f"{node.name} (line {node.lineno})")
    return found


def test_the_window_session_forwards_nothing_to_the_application_layer() -> None:
    source = WINDOW_SESSION.read_text(encoding="utf-8")
    assert "class WindowSession" in source  # the checked class is where it was
    assert forwarders(source) == [], (
        "ui/session.py forwards to the application layer; call it from the window's part "
        "instead (e.g. jobs.cancel(session.app, ids))")


PLANTED_IMPORTS = ("from reelqueue.application import jobs, team\n"
                   "from reelqueue.application.spend_reconcile import reconcile_spend\n"
                   "import reelqueue.application.accounts\n")
PLANTED_HEAD = PLANTED_IMPORTS + "\nclass WindowSession:\n"


@pytest.mark.parametrize("method", [
    "    async def cancel(self, ids):\n        return await jobs.cancel(self.app, ids)\n",
    "    async def cancel(self, ids):\n        '''Cancel.'''\n"
    "        await jobs.cancel(self.app, ids)\n",
    "    async def spend(self):\n        return await reconcile_spend(self.app)\n",
    "    @property\n    def team(self):\n        return team.is_team_session(self.app)\n",
    "    def mark(self, name):\n"
    "        return reelqueue.application.accounts.mark_ready(self.app, name)\n",
    "    def pause(self):\n        self.app.pause()\n",
    "    def spawn(self, coro, name):\n        return self.app.spawn(coro, name)\n",
    "    @property\n    def engine(self):\n        return self.app.engine\n",
])
def test_a_planted_forward_is_found(method: str) -> None:
    source = WINDOW_SESSION.read_text(encoding="utf-8")
    planted = source.replace("class WindowSession:\n", "class WindowSession:\n" + method,
                             1) + PLANTED_IMPORTS  # the imports a forward would bring
    assert planted != source
    assert len(forwarders(planted)) == 1
    assert len(forwarders(PLANTED_HEAD + method)) == 1


def test_what_is_the_windows_own_is_left_alone() -> None:
    source = PLANTED_HEAD + (
        "    def status(self):\n        return 'Serving' if self.api else 'Not serving.'\n"
        "    def options(self):\n        return parse_listen(self.settings.api_listen)\n"
        "    async def close(self):\n        self.closed = True\n"
        "        return await self.app.stop()\n")
    assert forwarders(source) == []
