"""Reads the job transitions out of a store's ``.sql`` text, to compare them with
``reelqueue.store.transitions.TRANSITIONS``.

Point :func:`transition_mismatches` at any store's SQL (SQLite's queries.sql, PostgreSQL's;
either parameter style) to check it. Only the shapes the stores use are understood:
``UPDATE jobs SET a = ..., ... WHERE ...`` with ``state IN (...)`` /
``state NOT IN (...)`` / ``state = '...'``, ``provider_job_id IS [NOT] NULL`` and
``claim_token = :token`` / ``IS :old_token``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from reelqueue.domain.states import JobState
from reelqueue.store.transitions import ALL_STATES, Transition

_NAME = re.compile(r"^-- name: (\w+)\s*$", re.MULTILINE)
_STATES = r"\(([^)]*)\)"


@dataclass(frozen=True)
class ParsedTransition:
    """What one UPDATE statement says, in the terms of :class:`Transition`."""

    from_states: frozenset[JobState] | None
    to_states: frozenset[JobState] | None
    sets: frozenset[str]
    clears: frozenset[str]
    may_clear: frozenset[str]
    render: bool | None
    fenced: bool


def named_statements(sql: str) -> dict[str, str]:
    """Statement text by name, comments dropped, parameters written ``:name`` whatever
    the driver's style (psycopg's ``%(name)s``), ``IS NOT DISTINCT FROM`` as ``IS``."""
    sql = re.sub(r"%\((\w+)\)s", r":\1", sql).replace("IS NOT DISTINCT FROM", "IS")
    parts = _NAME.split(sql)
    statements = {}
    for name, body in zip(parts[1::2], parts[2::2], strict=True):
        lines = [line.split("--", 1)[0] for line in body.splitlines()]
        statements[name] = " ".join(" ".join(lines).split())
    return statements


def _split_top_level(text: str) -> list[str]:
    """Split at commas outside parentheses and quotes."""
    pieces, depth, quote, start = [], 0, False, 0
    for i, char in enumerate(text):
        if char == "'":
            quote = not quote
        elif not quote and char == "(":
            depth += 1
        elif not quote and char == ")":
            depth -= 1
        elif not quote and depth == 0 and char == ",":
            pieces.append(text[start:i].strip())
            start = i + 1
    pieces.append(text[start:].strip())
    return pieces


def _states(listing: str) -> frozenset[JobState]:
    return frozenset(JobState(name) for name in re.findall(r"'(\w+)'", listing))


def parse_transition(statement: str) -> ParsedTransition:
    match = re.fullmatch(r"UPDATE jobs SET (.*) WHERE (.*?);?", statement, re.IGNORECASE)
    if match is None:
        raise ValueError(f"not an UPDATE of jobs: {statement[:60]}")
    assignments, where = match.groups()
    to_states: frozenset[JobState] | None = frozenset()
    sets, clears, may_clear = set(), set(), set()
    for assignment in _split_top_level(assignments):
        column, _, value = (part.strip() for part in assignment.partition("="))
        upper = value.upper()
        if column in ("updated_at", "route_order"):
            # route_order is the route's own order_key (domain/routes.py), kept beside it
            # for the claim's filter: not a field of Job, set wherever route is
            continue
        if column == "state":
            to_states = None if value.startswith(":") else _states(value)
        elif upper == "NULL":
            clears.add(column)
        elif upper.startswith("CASE") and (" THEN NULL" in upper or " ELSE NULL" in upper
                                           or " ELSE " not in upper):
            may_clear.add(column)
        else:
            sets.add(column)
    from_states: frozenset[JobState] | None = None
    if found := re.search(r"\bstate NOT IN " + _STATES, where):
        from_states = ALL_STATES - _states(found.group(1))
    elif found := (re.search(r"\bstate IN " + _STATES, where)
                   or re.search(r"\bstate = ('\w+')", where)):
        from_states = _states(found.group(1))
    render = None
    if re.search(r"\bprovider_job_id IS NOT NULL", where):
        render = True
    elif re.search(r"\bprovider_job_id IS NULL", where):
        render = False
    fenced = re.search(r"\bclaim_token (=|IS) :\w+", where) is not None
    return ParsedTransition(from_states, to_states, frozenset(sets), frozenset(clears),
                            frozenset(may_clear), render, fenced)


def transition_mismatches(sql: str, table: dict[str, Transition]) -> list[str]:
    """Every way the SQL's statements and the table differ (empty: they agree). Each row
    of the table must be a statement of the SQL, and each ``fenced_*`` statement a row."""
    statements = named_statements(sql)
    problems = [f"{name}: not in the table" for name in statements
                if name.startswith("fenced_") and name not in table]
    for name, row in table.items():
        if name not in statements:
            problems.append(f"{name}: no such statement in the SQL")
            continue
        parsed = parse_transition(statements[name])
        for field in ("from_states", "to_states", "sets", "clears", "may_clear", "render",
                      "fenced"):
            want, got = getattr(row, field), getattr(parsed, field)
            if want != got:
                problems.append(f"{name}: {field} is {_show(got)} in the SQL, "
                                f"{_show(want)} in the table")
    return problems


def _show(value: object) -> str:
    if isinstance(value, frozenset):
        return "{" + ", ".join(sorted(str(v) for v in value)) + "}"
    return repr(value)
