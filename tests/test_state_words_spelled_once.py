"""The words for states live in application/words.py only (issue 34): no front end module
(ui/, cli/, api/) spells a job state's or an account condition's name in a string it
shows, and none keeps a retired name. Read on the source, like tests/test_layers.py.

A string counts as spelling a name when, once its ends are stripped of spaces and layout
marks (" · ", ":", brackets), it *is* a name, as shown ("Completed", " parked · "): that
is a label (a state's code, "COMPLETED", is not). A name inside a longer sentence is the
sentence's own word ("retry failed jobs"), and a string compared with
(``state == "paused"``) or used as a key is a code, not a label; both are left alone.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from reelqueue.application.words import (
    _CONDITION,
    _JOB,
    _SUB_STATUS,
)

pytestmark = pytest.mark.unit

PACKAGE = Path(__file__).resolve().parents[1] / "app" / "reelqueue"
FRONT_ENDS = ("ui", "cli", "api")
LAYOUT = " \t\n·:;,.()[]—–-…"

NAMES = frozenset(name for name, _hint in
                  (*_JOB.values(), *_SUB_STATUS.values(), *_CONDITION.values()))
SHOWN = NAMES | {name.capitalize() for name in NAMES}
"""A name as a label shows it: as it is, or starting a line ("Completed"); a state's code
("COMPLETED") is not a label."""

RETIRED = ("needs you", "parked (needs attention)", "with a submit outcome unknown",
           "outcome unknown (needs", "confirm here", "retry soon")
"""Names the front ends used before issue 34 (each state now has one): not in any string."""

CODE_TAKERS = frozenset({"get", "setdefault", "pop", "add_argument", "remove",
                         "set_engine_state"})
"""Methods whose first argument is a code: a key, an option's flag, a banner's key, the
engine's state."""

ALLOWED: dict[str, set[str]] = {
    # codes, not labels: the document's schema names ("Cancelled", "Submitted") and the
    # health answer's engine state ("paused")
    "api/openapi.py": {"cancelled", "paused", "submitted"},
    "api/server.py": {"paused"},
    # "N rendering": the in-flight count (claimed to downloading), not a state's label
    "cli/cmd_run.py": {"rendering"},
    "ui/dashboard.py": {"rendering", "starting"},  # and "Starting…": the engine's start
    "ui/main_window.py": {"starting"},  # the engine's start-up, not a job's
    "cli/context.py": {"cannot be used"},  # a sentence about the videos folder
    # a thumbnail's outcome code
    "ui/thumbnails.py": {"failed"},
    "ui/gallery_thumbs.py": {"failed"},
    # recovery outcome codes and the engine's sub-status codes
    "ui/session.py": {"failed", "cancelled", "submitted"},
    # verbs of its banners ("Cancelled 3 jobs", "Queued 3 jobs again"); another
    # engineer's file during issue 34
    "ui/queue_actions.py": {"cancelled", "queued"},
}
"""module -> names it may spell, each with the reason beside it."""


def _codes(tree: ast.AST) -> set[int]:
    """ids of the string constants used as codes: compared, a key, a subscript."""
    codes: set[int] = set()

    def mark(node: ast.AST | None) -> None:
        if node is None:
            return
        for sub in ast.walk(node):
            if isinstance(sub, ast.Constant):
                codes.add(id(sub))

    for node in ast.walk(tree):
        if isinstance(node, ast.Compare):
            mark(node.left)
            for comparator in node.comparators:
                mark(comparator)
        elif isinstance(node, ast.Dict):
            for key in node.keys:
                mark(key)
        elif isinstance(node, ast.Subscript):
            mark(node.slice)
        elif isinstance(node, ast.Call):
            # .get("paused"), .setdefault(...), getattr(x, "state"), argparse's choices
            func = node.func
            if isinstance(func, ast.Attribute) and func.attr in CODE_TAKERS:
                mark(node.args[0] if node.args else None)
            for keyword in node.keywords:
                if keyword.arg in ("key", "state", "code", "dest", "choices"):
                    mark(keyword.value)
        elif isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant):
            mark(node.value)  # a docstring
    return codes


def _labels(path: Path) -> list[tuple[int, str]]:
    tree = ast.parse(path.read_text("utf-8"))
    codes = _codes(tree)
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if (isinstance(node, ast.Constant) and isinstance(node.value, str)
                and id(node) not in codes):
            bare = node.value.strip(LAYOUT)
            if bare in SHOWN:
                found.append((node.lineno, bare.lower()))
    return found


def _modules() -> list[Path]:
    return sorted(p for front in FRONT_ENDS for p in (PACKAGE / front).rglob("*.py"))


def test_no_front_end_spells_a_state_s_name() -> None:
    spelled = []
    for path in _modules():
        module = path.relative_to(PACKAGE).as_posix()
        allowed = ALLOWED.get(module, set())
        spelled += [f"{module}:{line}: {name!r}" for line, name in _labels(path)
                    if name not in allowed]
    assert not spelled, ("say it through application.words (job_state_words, "
                         "condition_words):\n" + "\n".join(spelled))


def test_no_front_end_keeps_a_retired_name() -> None:
    kept = []
    for path in _modules():
        tree = ast.parse(path.read_text("utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                text = node.value.casefold()
                kept += [f"{path.relative_to(PACKAGE)}:{node.lineno}: {old!r}"
                         for old in RETIRED if old in text]
    assert not kept, "\n".join(kept)


def test_every_allowed_name_is_still_spelled_where_it_is_allowed() -> None:
    """An allowance no longer needed is taken out (the list stays small and true)."""
    for module, names in ALLOWED.items():
        spelled = {name for _line, name in _labels(PACKAGE / module)}
        assert names <= spelled, (module, names - spelled)


def test_the_scan_finds_a_spelled_name(tmp_path: Path) -> None:
    sample = tmp_path / "sample.py"
    sample.write_text('LABELS = {"QUEUED": "Queued"}\n'
                      'TEXT = f"{n} parked · "\n'
                      'if state == "paused":\n    pass\n', "utf-8")
    assert [name for _line, name in _labels(sample)] == ["queued", "parked"]


def test_the_retry_plan_names_an_unknown_outcome_by_its_one_name() -> None:
    """The retry plan's sentence (application/retry_words.py) says the state's one name;
    the engine keeps the plan and says nothing to the user itself."""
    from reelqueue.application.retry_words import retry_summary
    from reelqueue.application.words import OUTCOME_UNKNOWN, job_state_words
    from reelqueue.domain.errors import ErrorLabel
    from reelqueue.domain.models import Job
    from reelqueue.domain.states import JobState
    from reelqueue.engine.retry_plan import RetryPlan

    unknown = Job(
        id=1, batch_id=1, job_key="k", row_number=1, name="n", prompt="p", provider="mock",
        params={}, pinned_account=None, priority=0, output_path="b/n.mp4",
        state=JobState.PARKED, attempts=1, max_attempts=3, account="a", claim_token=None,
        lease_owner=None, lease_until=None, client_token="t", provider_job_id=None,
        sub_status=None, progress=None, run_after=0.0, output_size=None,
        output_sha256=None, cost=None, error_class="unknown",
        error_label=ErrorLabel.SUBMIT_UNKNOWN.value, error_message=None, created_at=0.0,
        updated_at=0.0, started_at=None, finished_at=None, metadata={})
    plan = RetryPlan(reread=(), rerender=(), skipped_permanent=(unknown,), not_retryable=(),
                     rerender_usd=0.0, unpriced=0, reconcile=(unknown,))
    name = job_state_words(OUTCOME_UNKNOWN).name
    text = retry_summary(plan)
    assert f"1 marked “{name}” will be looked for" in text, text
    assert f"1 marked “{name}” that cannot be looked for" in text, text
    source = (PACKAGE / "engine" / "retry_plan.py").read_text("utf-8")
    assert "def summary" not in source
    for retired in RETIRED:
        assert retired not in source, retired
