"""Every index of the PostgreSQL journal's jobs and ledger earns its writes (issue 20,
schema 9), as tests/store/test_index_use.py says of the SQLite journal's.

A job's update changes its state, which partial indexes name, so no transition is a HOT
update: each index whose condition the new row meets takes an entry at every transition.
Here every named query is planned as it runs once prepared (its generic plan) on a journal
filled like a team's (mostly finished jobs, a long ledger): each index that is not a
uniqueness rule is chosen for at least one query, the fenced writes find their row by its
key (not by walking every row in the same state), a claim counts its account's live
renders through an index of the live rows only (not every job the account ever ran), and
the one-job-per-render check seeks its whole key (not every render of the provider)."""

from __future__ import annotations

import re
from collections.abc import Iterator

import psycopg
import pytest

from reelqueue.store.pg_sql import fenced_sql, pg_queries, positional
from reelqueue.store.postgres import PostgresStore
from tests import pgserver

pytestmark = pytest.mark.integration

JOBS = 20_000
LIVE = "'CLAIMED', 'SUBMITTING', 'RENDERING', 'DOWNLOADING'"
FILL = [
    "INSERT INTO batches (name, source_path, output_dir, created_at) "
    "SELECT 'b' || i, 's.csv', 'b' || i, 1 FROM generate_series(1, 20) i",
    "INSERT INTO accounts (name, provider, capacity, position, created_at) "
    "SELECT 'a' || i, 'mock', 5, i, 1 FROM generate_series(1, 10) i",
    "INSERT INTO instances (id, host, pid, version, started_at, heartbeat_at) "
    "SELECT 'inst' || i, 'h', 1, 'v', 1, 1 FROM generate_series(1, 5) i",
    f"""INSERT INTO jobs (batch_id, job_key, prompt, provider, output_path, state, created_at,
                      updated_at, finished_at, output_size, output_sha256, account, claim_token,
                      lease_owner, lease_until, client_token, provider_job_id, run_after)
    SELECT 1 + i % 20, 'k' || i, 'p', 'mock', 'o/' || i, s, 1, 1,
           CASE WHEN s IN ('COMPLETED', 'FAILED', 'CANCELLED') THEN 2 END,
           CASE WHEN s = 'COMPLETED' THEN 10 END, CASE WHEN s = 'COMPLETED' THEN 'ab' END,
           CASE WHEN s NOT IN ('QUEUED', 'RETRY_WAIT') THEN 'a' || (i % 10 + 1) END,
           CASE WHEN s IN ({LIVE}) THEN 't' || i END,
           CASE WHEN s IN ({LIVE}) THEN 'inst' || (i % 5 + 1) END,
           CASE WHEN s IN ({LIVE}) THEN 1e12 END,
           CASE WHEN s IN ('PARKED', 'SUBMITTING', 'RENDERING', 'DOWNLOADING', 'COMPLETED')
                THEN 'ct' || i END,
           CASE WHEN s IN ('RENDERING', 'DOWNLOADING', 'COMPLETED') THEN 'pj' || i END,
           CASE WHEN s = 'RETRY_WAIT' THEN 5 ELSE 0 END
      FROM (SELECT i, CASE WHEN i % 100 < 85 THEN 'COMPLETED' WHEN i % 100 < 93 THEN 'QUEUED'
                           WHEN i % 100 = 93 THEN 'CLAIMED' WHEN i % 100 = 94 THEN 'RENDERING'
                           WHEN i % 100 = 95 THEN 'RETRY_WAIT' WHEN i % 100 = 96 THEN 'FAILED'
                           WHEN i % 100 = 97 THEN 'PARKED' WHEN i % 100 = 98 THEN 'CANCELLED'
                           ELSE 'SUBMITTING' END AS s
              FROM generate_series(1, {JOBS}) i) AS g""",
    f"""INSERT INTO ledger (at, event, job_id, account, claim_token, detail)
    SELECT i, (ARRAY['claimed', 'submitting', 'submitted', 'downloading', 'completed', 'spend',
                     'requeued', 'handed_over'])[1 + i % 8],
           1 + i / 5, 'a' || (i % 10 + 1), 't', '{{}}' FROM generate_series(1, {5 * JOBS}) i""",
]
# Parameters whose type the server cannot infer from the statement alone.
FLOATS = {"now", "before", "run_after", "clock", "day_start", "lease_seconds", "min_lease"}
JSONB = {"detail", "fenced_detail"}
# The one-statement fenced writes of a job's life, as sent (postgres.PostgresStore._one_trip).
ONE_TRIPS = {"one_trip_submitting": "fenced_mark_submitting",
             "one_trip_submitted": "fenced_record_submitted",
             "one_trip_fenced": "fenced_mark_downloading",
             "one_trip_completed": "fenced_mark_completed"}
SKIPPED = ("begin", "commit", "settle_lock_timeout", "create_schema", "lock_accounts",
           "listen_wake")


@pytest.fixture(scope="module")
def plans(pg_server: pgserver.Server | str) -> Iterator[tuple[dict[str, str], list[str]]]:
    """(each named query's generic plan, the non-unique indexes of jobs and ledger)."""
    if isinstance(pg_server, str):
        pgserver.unavailable(pg_server)
    assert isinstance(pg_server, pgserver.Server)
    dsn, schema = pg_server.dsn, pgserver.new_schema_name()
    PostgresStore.open(dsn, now=1, schema=schema).close()
    try:
        with psycopg.connect(dsn, autocommit=True, prepare_threshold=None) as db:
            db.execute(f'SET search_path TO "{schema}"')
            for statement in FILL:
                db.execute(statement.encode())
            db.execute("VACUUM ANALYZE jobs")
            db.execute("VACUUM ANALYZE ledger")
            indexes = [r[0] for r in db.execute(
                "SELECT i.indexname FROM pg_indexes i JOIN pg_index x "
                "ON x.indexrelid = (quote_ident(i.schemaname) || '.' || "
                "quote_ident(i.indexname))::regclass "
                "WHERE i.schemaname = %s AND i.tablename IN ('jobs', 'ledger') "
                "AND NOT x.indisunique ORDER BY 1", (schema,))]
            db.execute("SET plan_cache_mode = force_generic_plan")
            yield _plans(db), indexes
    finally:
        pgserver.drop_schema(dsn, schema)


def _plans(db: psycopg.Connection[tuple[object, ...]]) -> dict[str, str]:
    found: dict[str, str] = {}
    statements = dict(pg_queries())
    for template, update in ONE_TRIPS.items():
        statements[template] = fenced_sql(template, update).decode()
    for name, sql in statements.items():
        if name in SKIPPED or re.search(r"\{[a-z_]+\}", sql):
            continue  # not planned, or a template (filled into the statements below)
        text, names = positional(sql.encode())
        if not text.strip() or not text.lstrip()[:1].isalpha():
            continue  # an expression, not a statement
        types = ", ".join("float8" if n in FLOATS else "jsonb" if n in JSONB else "unknown"
                          for n in names)
        try:
            db.execute(f"PREPARE q ({types}) AS ".encode() + text if names
                       else b"PREPARE q AS " + text)
        except psycopg.Error:
            continue  # DDL and other statements that cannot be prepared
        try:
            nulls = ", ".join(["NULL"] * len(names))
            rows = db.execute(f"EXPLAIN (COSTS OFF) EXECUTE q({nulls})" if names
                              else "EXPLAIN (COSTS OFF) EXECUTE q").fetchall()
            found[name] = "\n".join(str(r[0]) for r in rows)
        finally:
            db.execute("DEALLOCATE q")
    return found


def _uses(plan: str, index: str) -> bool:
    return re.search(rf"\b{re.escape(index)}\b", plan) is not None


def test_every_index_of_jobs_and_ledger_is_used_by_a_query(
        plans: tuple[dict[str, str], list[str]]) -> None:
    found, indexes = plans
    assert {"claim_fast", "renew_leases", "in_flight_all", "prune_ledger",
            "spend_of_account", "unresolved_submissions", *ONE_TRIPS} <= set(found)
    unused = [i for i in indexes if not any(_uses(p, i) for p in found.values())]
    assert unused == [], f"indexes no named query uses: {unused}"


@pytest.mark.parametrize("name", ["fenced_mark_submitting", "fenced_record_submitted",
                                  "fenced_mark_downloading", "fenced_record_download",
                                  "fenced_mark_completed", "fenced_set_retry_wait",
                                  "fenced_mark_failed", "claim_job", *ONE_TRIPS])
def test_a_transition_finds_its_row_by_its_key(
        plans: tuple[dict[str, str], list[str]], name: str) -> None:
    plan = plans[0][name]
    assert _uses(plan, "jobs_pkey"), plan
    assert "Seq Scan" not in plan, plan


@pytest.mark.parametrize("name", ["claim_fast", "claim_room", "live_count", "accounts_room"])
def test_a_claim_counts_live_renders_only(
        plans: tuple[dict[str, str], list[str]], name: str) -> None:
    plan = plans[0][name]
    assert _uses(plan, "jobs_live"), plan


@pytest.mark.parametrize("name", ["render_holder", "one_trip_submitted"])
def test_the_render_holder_is_sought_on_the_whole_key(
        plans: tuple[dict[str, str], list[str]], name: str) -> None:
    """A render goes to one job: the check seeks (provider, account, provider job id), not
    every render of the provider (IS NOT DISTINCT FROM on the account is no index
    condition; a seek on the provider alone grew with every render ever recorded)."""
    plan = plans[0][name]
    lines = plan.splitlines()
    seeks = [lines[i + 1] for i, line in enumerate(lines[:-1])
             if "using jobs_render_once" in line]
    assert seeks, plan
    for seek in seeks:
        assert "Index Cond" in seek and all(
            column in seek for column in ("provider =", "account", "provider_job_id =")), plan
