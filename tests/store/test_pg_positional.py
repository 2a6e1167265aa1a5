"""The PostgreSQL store's one-time conversion of named placeholders (issue 20 speed-up):
every named query of ``sql_pg/`` and every one-statement fenced write converts to what
psycopg itself sends, so running it through a ``RawCursor`` changes nothing but the cost."""

from __future__ import annotations

import pytest
from psycopg._queries import _query2pg_nocache

from reelqueue.store.pg_sql import fenced_sql, pg_queries, positional

pytestmark = pytest.mark.unit

ONE_TRIPS = [("one_trip_fenced", "fenced_mark_downloading"),
             ("one_trip_submitting", "fenced_mark_submitting"),
             ("one_trip_submitted", "fenced_record_submitted"),
             ("one_trip_completed", "fenced_mark_completed")]


def _statements() -> list[tuple[str, bytes]]:
    found = [(name, text.encode()) for name, text in pg_queries().items()
             if "{" not in text]  # templates are converted once filled
    for template, update in ONE_TRIPS:
        for durable in (True, False):
            found.append((f"{template}/{update}/{durable}", fenced_sql(template, update, durable)))
    return found


@pytest.mark.parametrize(("name", "sql"), _statements(),
                         ids=lambda v: v if isinstance(v, str) else "")
def test_conversion_is_psycopgs_own(name: str, sql: bytes) -> None:
    text, names = positional(sql)
    expected, _formats, order, _parts = _query2pg_nocache(sql, "utf-8")
    assert text == expected
    assert list(names) == list(order or [])


def test_repeated_names_share_one_parameter_and_percent_signs_stay() -> None:
    text, names = positional(b"SELECT %(a)s, %(b)s, %(a)s, format('%%s', 1)")
    assert text == b"SELECT $1, $2, $1, format('%s', 1)"
    assert names == ("a", "b")


@pytest.mark.parametrize("sql", [b"SELECT %s", b"SELECT %(a)b", b"SELECT 5 % 2"])
def test_other_placeholders_are_refused(sql: bytes) -> None:
    with pytest.raises(ValueError, match="unsupported placeholder"):
        positional(sql)
