"""The transition table (store/transitions.py) and the SQL statements agree, and the
check fails when they do not (planted mismatches)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from reelqueue.domain.models import Job
from reelqueue.domain.states import IN_FLIGHT, JobState
from reelqueue.store.transitions import TRANSITIONS
from tests.store.sql_transitions import (
    named_statements,
    parse_transition,
    transition_mismatches,
)

pytestmark = pytest.mark.unit

SQL = Path(__file__).resolve().parents[2] / "app" / "reelqueue" / "store"
QUERIES = (SQL / "sql" / "queries.sql").read_text(encoding="utf-8")


@pytest.mark.parametrize("folder", ["sql", "sql_pg"])
def test_each_stores_sql_agrees_with_the_table(folder: str) -> None:
    """SQLite's queries.sql and PostgreSQL's (psycopg parameters) say the same."""
    assert transition_mismatches((SQL / folder / "queries.sql").read_text(encoding="utf-8"),
                                 TRANSITIONS) == []


def test_every_fenced_statement_is_in_the_table() -> None:
    fenced = {name for name in named_statements(QUERIES) if name.startswith("fenced_")}
    assert len(fenced) == 13  # with fenced_record_download (22), fenced_hand_over (24)
    assert fenced <= set(TRANSITIONS)


def test_the_parser_reads_a_statement_as_written() -> None:
    parsed = parse_transition(named_statements(QUERIES)["fenced_set_retry_wait"])
    assert parsed.from_states == IN_FLIGHT
    assert parsed.to_states == {JobState.RETRY_WAIT}
    assert parsed.clears == {"claim_token", "lease_owner", "lease_until", "sub_status",
                             "progress"}
    assert parsed.may_clear == {"account", "provider_job_id", "client_token"}
    assert parsed.sets == {"run_after", "error_class", "error_label", "error_message"}
    assert parsed.fenced and parsed.render is None


@pytest.mark.parametrize(("planted", "expected"), [
    # a from-state dropped from the SQL
    (("AND state IN ('CLAIMED', 'SUBMITTING', 'RENDERING')",
      "AND state IN ('CLAIMED', 'RENDERING')"),
     "fenced_mark_rendering: from_states is {CLAIMED, RENDERING} in the SQL, "
     "{CLAIMED, RENDERING, SUBMITTING} in the table"),
    # a cleared column forgotten
    (("UPDATE jobs SET state = 'FAILED', finished_at = :now, updated_at = :now,\n"
      "       claim_token = NULL, lease_owner = NULL, lease_until = NULL,\n"
      "       provider_job_id",
      "UPDATE jobs SET state = 'FAILED', finished_at = :now, updated_at = :now,\n"
      "       claim_token = NULL, lease_owner = NULL,\n"
      "       provider_job_id"),
     "fenced_mark_failed: clears is {claim_token, lease_owner} in the SQL, "
     "{claim_token, lease_owner, lease_until} in the table"),
    # the fence itself removed
    (("WHERE id = :id AND claim_token = :token AND state = 'DOWNLOADING'",
      "WHERE id = :id AND state = 'DOWNLOADING'"),
     "fenced_mark_completed: fenced is False in the SQL, True in the table"),
    # a conditional clear made unconditional
    (("provider_job_id = CASE WHEN :drop_render THEN NULL ELSE provider_job_id END",
      "provider_job_id = NULL"),
     "fenced_mark_failed: clears is {claim_token, lease_owner, lease_until, provider_job_id}"
     " in the SQL, {claim_token, lease_owner, lease_until} in the table"),
    # the render condition lost
    (("AND state = 'CLAIMED'\n   AND provider_job_id IS NULL\n", "AND state = 'CLAIMED'\n"),
     "fenced_mark_submitting: render is None in the SQL, False in the table"),
    # a new fenced statement without a row
    (("-- name: front_priority", "-- name: fenced_new\nUPDATE jobs SET state = 'QUEUED' "
      "WHERE id = :id AND claim_token = :token;\n\n-- name: front_priority"),
     "fenced_new: not in the table"),
])
def test_a_planted_mismatch_is_found(planted: tuple[str, str], expected: str) -> None:
    old, new = planted
    assert QUERIES.count(old) == 1
    assert expected in transition_mismatches(QUERIES.replace(old, new), TRANSITIONS)


def test_a_table_row_that_differs_is_found() -> None:
    table = dict(TRANSITIONS)
    table["cancel_job"] = replace(TRANSITIONS["cancel_job"], to_states=frozenset(
        {JobState.FAILED}))
    assert transition_mismatches(QUERIES, table) == [
        "cancel_job: to_states is {CANCELLED} in the SQL, {FAILED} in the table"]


def _job(**changes: object) -> Job:
    job = Job(id=1, batch_id=1, job_key="k", row_number=1, name="n", prompt="p",
              provider="mock", params={}, pinned_account=None, priority=0, output_path="o",
              state=JobState.RENDERING, attempts=1, max_attempts=3, account="a",
              claim_token="t", lease_owner="me", lease_until=9.0, client_token="c",
              provider_job_id="r1", sub_status="running", progress=0.5, run_after=0.0,
              output_size=None, output_sha256=None, cost=None, error_class=None,
              error_label=None, error_message=None, created_at=0.0, updated_at=0.0,
              started_at=0.0, finished_at=None, metadata={})
    return replace(job, **changes)
