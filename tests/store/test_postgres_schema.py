"""The PostgreSQL journal: fresh schema equals a migrated one, refusals, CHECKs, the
instances registry, claims from several connections at once, and no password in any
message (issue 15)."""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest

from reelqueue.domain.clock import FakeClock
from reelqueue.domain.errors import JournalCorrupt, JournalError
from reelqueue.domain.models import AccountSpec, BatchSpec
from reelqueue.store.base import ClaimParams
from reelqueue.store.postgres import SCHEMA_VERSION, PostgresStore, pg_migration_sql
from reelqueue.store.postgres_support import describe_dsn, dsn_password, scrub
from tests import pgserver
from tests.conftest import make_specs

pytestmark = pytest.mark.unit


@pytest.fixture
def schemas(pg_dsn: str) -> Iterator[list[str]]:
    """Fresh schema names for a test; dropped at its end."""
    made: list[str] = []
    yield made
    for schema in made:
        pgserver.drop_schema(pg_dsn, schema)


def new_schema(schemas: list[str]) -> str:
    schemas.append(pgserver.new_schema_name())
    return schemas[-1]


def catalog_of(dsn: str, schema: str) -> dict[str, list[tuple[Any, ...]]]:
    """Everything a schema defines, as text that does not name the schema."""
    with psycopg.connect(dsn) as db:
        def rows(sql: str) -> list[tuple[Any, ...]]:
            return [tuple(str(v).replace(f"{schema}.", "") for v in r)
                    for r in db.execute(sql, {"s": schema}).fetchall()]

        return {
            "columns": rows(
                "SELECT table_name, column_name, data_type, is_nullable, column_default, "
                "is_identity, identity_generation FROM information_schema.columns "
                "WHERE table_schema = %(s)s ORDER BY table_name, column_name"),
            "constraints": rows(
                "SELECT c.conrelid::regclass::text, c.conname, pg_get_constraintdef(c.oid) "
                "FROM pg_constraint c JOIN pg_namespace n ON n.oid = c.connamespace "
                "WHERE n.nspname = %(s)s ORDER BY 1, 2"),
            "indexes": rows("SELECT tablename, indexname, indexdef FROM pg_indexes "
                            "WHERE schemaname = %(s)s ORDER BY 1, 2"),
            "triggers": rows(
                "SELECT event_object_table, trigger_name, action_timing, event_manipulation, "
                "action_statement FROM information_schema.triggers "
                "WHERE trigger_schema = %(s)s ORDER BY 1, 2, 4"),
            "functions": rows(
                "SELECT p.proname, pg_get_functiondef(p.oid) FROM pg_proc p "
                "JOIN pg_namespace n ON n.oid = p.pronamespace WHERE n.nspname = %(s)s "
                "ORDER BY 1"),
        }


def make_v1(dsn: str, schema: str) -> None:
    with psycopg.connect(dsn) as db:
        db.execute(f'CREATE SCHEMA "{schema}"')
        db.execute(f'SET search_path TO "{schema}"')
        db.execute(pg_migration_sql(1).encode())
        db.execute("INSERT INTO reelqueue_meta (key, value) VALUES ('schema_version', '1')")
        db.execute("INSERT INTO batches (name, source_path, output_dir, created_at) "
                   "VALUES ('old', 's.csv', '/tmp', 1)")


def test_fresh_schema_equals_a_migrated_one(pg_dsn: str, schemas: list[str]) -> None:
    fresh, old = new_schema(schemas), new_schema(schemas)
    PostgresStore.open(pg_dsn, now=1, schema=fresh).close()
    make_v1(pg_dsn, old)
    store = PostgresStore.open(pg_dsn, now=2, schema=old)
    assert store.migrated_from == 1
    assert [b.name for b in store.list_batches()] == ["old"], "data survives the migration"
    assert [e.event for e in store.ledger()] == ["migrated"]
    store.close()
    fresh_catalog, old_catalog = catalog_of(pg_dsn, fresh), catalog_of(pg_dsn, old)
    assert fresh_catalog["columns"], "the catalog query sees the tables"
    assert fresh_catalog == old_catalog
    again = PostgresStore.open(pg_dsn, now=3, schema=old)
    assert again.migrated_from is None, "an up-to-date journal is not migrated again"
    again.close()


def test_a_journal_from_a_newer_version_is_refused(pg_dsn: str, schemas: list[str]) -> None:
    schema = new_schema(schemas)
    PostgresStore.open(pg_dsn, now=1, schema=schema).close()
    with psycopg.connect(pg_dsn) as db:
        db.execute(f'UPDATE "{schema}".reelqueue_meta SET value = %s '
                   "WHERE key = 'schema_version'", (str(SCHEMA_VERSION + 1),))
    with pytest.raises(JournalError, match="newer ReelQueue"):
        PostgresStore.open(pg_dsn, now=2, schema=schema)


def test_foreign_tables_are_refused_untouched(pg_dsn: str, schemas: list[str]) -> None:
    schema = new_schema(schemas)
    with psycopg.connect(pg_dsn) as db:
        db.execute(f'CREATE SCHEMA "{schema}"')
        db.execute(f'CREATE TABLE "{schema}".invoices (n int)')
        db.execute(f'INSERT INTO "{schema}".invoices VALUES (7)')
    with pytest.raises(JournalCorrupt, match="not a ReelQueue journal"):
        PostgresStore.open(pg_dsn, now=1, schema=schema)
    with psycopg.connect(pg_dsn) as db:
        tables = db.execute("SELECT table_name FROM information_schema.tables "
                            "WHERE table_schema = %s", (schema,)).fetchall()
        assert tables == [("invoices",)]


def test_check_constraints_and_the_append_only_ledger(
    pg_dsn: str, schemas: list[str]
) -> None:
    store = PostgresStore.open(pg_dsn, now=1, schema=new_schema(schemas))
    store.note("something", 1.0)
    insert = ("INSERT INTO jobs (batch_id, job_key, prompt, provider, output_path, state, "
              "created_at, updated_at, finished_at) VALUES (1, %s, 'p', 'mock', '/o', %s, "
              "1, 1, %s)")
    with store.raw_connection() as db:
        db.execute("INSERT INTO batches (name, source_path, output_dir, created_at) "
                   "VALUES ('b', 's', '/tmp', 1)")
    for key, state, finished in (("a", "DONE", None), ("b", "FAILED", None),
                                 ("c", "COMPLETED", 5), ("d", "RENDERING", None)):
        with pytest.raises(psycopg.errors.CheckViolation), store.raw_connection() as db:
            db.execute(insert, (key, state, finished))
    with store.raw_connection() as db:
        db.execute(insert, ("e", "QUEUED", None))
    with pytest.raises(psycopg.errors.IntegrityConstraintViolation, match="append-only"), \
            store.raw_connection() as db:
        db.execute("UPDATE ledger SET event = 'rewritten'")
    assert [e.event for e in store.ledger()] == ["something"]
    store.close()


def test_the_heartbeat_renews_leases_and_writes_the_instances_registry(
    pg_dsn: str, schemas: list[str], tmp_path: Path
) -> None:
    server = FakeClock(100)  # stands in for the server's clock
    store = PostgresStore.open(pg_dsn, now=100, schema=new_schema(schemas),
                               server_clock=server)
    batch = store.create_batch(BatchSpec("b", "s.csv", str(tmp_path)), 100)
    store.add_jobs(batch.id, make_specs(tmp_path, 3), 100)
    store.add_account(AccountSpec("acct-a", "mock", 2), 100)
    store.register_instance("inst-1", host="box-1", pid=4242, version="1.2.3")
    for _ in range(2):
        assert store.claim_next_job(ClaimParams("acct-a", "inst-1", 100, 30)) is not None
    server.advance(10)
    assert store.renew_leases("inst-1", 110, 30) == 2
    assert {j.lease_until for j in store.list_jobs() if j.lease_owner} == {140}
    (row,) = store.list_instances()
    assert (row.host, row.pid, row.version, row.started_at) == ("box-1", 4242, "1.2.3", 100)
    assert (row.heartbeat_at, row.live_renders, row.stopped_at) == (110, 2, None)
    server.advance(10)
    store.stop_instance("inst-1")
    assert store.list_instances()[0].stopped_at == 120
    store.close()


def test_claims_from_many_connections_never_pass_the_limit(
    pg_dsn: str, schemas: list[str], tmp_path: Path
) -> None:
    """Four stores (four connections, as four machines would have) claim and complete
    on two accounts of one provider at once. What the workers hold is a subset of what
    the journal counts live, so a worker set above the limit proves an over-claim."""
    schema = new_schema(schemas)
    setup = PostgresStore.open(pg_dsn, now=1, schema=schema)
    batch = setup.create_batch(BatchSpec("b", "s.csv", str(tmp_path)), 1)
    setup.add_jobs(batch.id, make_specs(tmp_path, 120), 1)
    limits = {"acct-a": 2, "acct-b": 3}
    for name, capacity in limits.items():
        setup.add_account(AccountSpec(name, "mock", capacity), 1)
    held: dict[str, set[int]] = {name: set() for name in limits}
    peak = Counter[str]()
    guard = threading.Lock()
    errors: list[BaseException] = []

    def worker(number: int) -> None:
        store = PostgresStore.open(pg_dsn, now=1, schema=schema)
        try:
            idle = 0
            while idle < 3:
                name = list(limits)[number % 2] if idle == 0 else list(limits)[idle % 2]
                claim = store.claim_next_job(ClaimParams(name, f"inst-{number}", 2, 60))
                if claim is None:
                    idle += 1
                    continue
                idle = 0
                with guard:
                    held[name].add(claim.job.id)
                    peak[name] = max(peak[name], len(held[name]))
                assert store.mark_submitting(claim.token, f"ct-{claim.job.id}", 2)
                assert store.record_submitted(claim.token, f"pj-{claim.job.id}", 2)
                assert store.mark_downloading(claim.token, 2)
                with guard:
                    held[name].discard(claim.job.id)
                assert store.mark_completed(claim.token, size=1, sha256="ab" * 32,
                                            cost=None, now=3)
        except BaseException as exc:  # reported by the main thread
            errors.append(exc)
        finally:
            store.close()

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert not errors, errors
    assert all(peak[name] <= limits[name] for name in limits), (peak, limits)
    assert sum(peak.values()) >= 2, "the workers really ran at the same time"
    completed = Counter(e.job_id for e in setup.ledger() if e.event == "completed")
    claimed = Counter(e.job_id for e in setup.ledger() if e.event == "claimed")
    assert len(completed) == 120 and set(completed.values()) == {1}
    assert set(claimed.values()) == {1}, "no job was handed out twice"
    assert setup.doctor_queries(instance_alive=False)["over_capacity"] == []
    setup.close()


def test_no_password_in_messages_or_repr(pg_dsn: str) -> None:
    secret = "s3cret-Pa55word"
    port = pgserver._free_port()  # nothing listens there
    for dsn in (f"postgresql://alice:{secret}@127.0.0.1:{port}/team",
                f"host=127.0.0.1 port={port} user=alice password={secret} dbname=team"):
        with pytest.raises(JournalError) as caught:
            PostgresStore.open(dsn, now=1, connect_timeout=2)
        text = str(caught.value)
        assert "cannot be reached" in text and "alice@127.0.0.1" in text
        assert secret not in text and secret not in repr(caught.value)
        assert caught.value.__cause__ is None, "the driver's error is not chained along"
    store = PostgresStore.open(pg_dsn.replace("reelqueue@", f"reelqueue:{secret}@"), now=1,
                               schema=pgserver.new_schema_name())
    try:
        assert secret not in repr(store) and secret not in store.where
    finally:
        store.close()
        assert store.schema is not None
        pgserver.drop_schema(pg_dsn, store.schema)


@pytest.mark.expect_warnings("the connection was lost")  # the restart is the point
def test_the_store_comes_back_after_the_server_restarts(
    pg_server: pgserver.Server | str, pg_dsn: str, schemas: list[str], tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """pg_ctl restart between two operations of an open store (its connection used just
    before, so the pool hands it out unchecked): the operation meets the dead connection
    before its COMMIT, the server rolled it back, and it runs again on a new connection:
    no error reaches the caller and nothing is written twice."""
    if not isinstance(pg_server, pgserver.Server) or pg_server.folder is None:
        pytest.skip("needs the throwaway server (not one given by DSN)")
    store = PostgresStore.open(pg_dsn, now=1, schema=new_schema(schemas))
    try:
        batch = store.create_batch(BatchSpec("b", "s.csv", str(tmp_path)), 1)
        store._recently_used.fresh_seconds = 3600  # as under load: handed out unchecked
        restarted = pg_server.restart()
        assert restarted.returncode == 0, restarted.stderr
        caplog.set_level("WARNING", logger="reelqueue.store.postgres")
        result = store.add_jobs(batch.id, make_specs(tmp_path, 2), 2)
        assert result.added == 2
        assert [j.job_key for j in store.list_jobs()] == ["key-00000", "key-00001"]
        assert [e.event for e in store.ledger()] == ["batch_created", "imported"]
        assert any("connection was lost" in r.getMessage() for r in caplog.records), (
            "the dead connection was met (else this test proves nothing)")
    finally:
        store.close()


def test_a_failed_commit_is_not_run_again(pg_dsn: str, schemas: list[str]) -> None:
    """A connection lost while COMMIT was under way may have committed: that error goes to
    the caller ("cannot be reached"), the operation is not run a second time."""
    store = PostgresStore.open(pg_dsn, now=1, schema=new_schema(schemas))
    calls: list[int] = []
    pool = store._pool
    original_get, original_put = pool.getconn, pool.putconn

    class CommitFails:
        def __init__(self, db: psycopg.Connection[Any]) -> None:
            self._db = db

        def __getattr__(self, name: str) -> Any:
            return getattr(self._db, name)

        def commit(self) -> None:  # the COMMIT never arrives; its answer is an error
            calls.append(1)
            self._db.rollback()
            raise psycopg.OperationalError("server closed the connection unexpectedly")

    def getconn(*args: Any, **kwargs: Any) -> Any:
        return CommitFails(original_get(*args, **kwargs))

    def putconn(db: Any) -> None:
        original_put(db._db if isinstance(db, CommitFails) else db)

    store._kept.give_back()  # the connection kept from opening: the next one is the pool's
    pool.getconn = getconn  # type: ignore[method-assign]
    pool.putconn = putconn  # type: ignore[method-assign]
    try:
        with pytest.raises(JournalError, match="cannot be reached"):
            store.note("once", 1.0)
        assert calls == [1], "the operation ran once, not again after its COMMIT failed"
    finally:
        pool.getconn, pool.putconn = original_get, original_put  # type: ignore[method-assign]
        store.close()


def test_no_server_is_a_skip_or_when_required_a_failure(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv(pgserver.REQUIRE_ENV, raising=False)
    with pytest.raises(pytest.skip.Exception, match="need a server: no binaries"):
        pgserver.unavailable("no binaries")
    monkeypatch.setenv(pgserver.REQUIRE_ENV, "1")
    with pytest.raises(pytest.fail.Exception, match="REELQUEUE_REQUIRE_POSTGRES=1"):
        pgserver.unavailable("no binaries")


def test_dsn_helpers_keep_the_password_out() -> None:
    url = "postgresql://bob:hunter2@db.example:6543/reels?sslmode=verify-full"
    assert describe_dsn(url) == "bob@db.example:6543/reels"
    assert dsn_password(url) == "hunter2"
    assert scrub(f"failed for {url}") == (
        "failed for postgresql://bob:***@db.example:6543/reels?sslmode=verify-full")
    assert scrub("host=x password='a b' user=y") == "host=x password=*** user=y"
    assert scrub("said hunter2 twice: hunter2", "hunter2") == "said *** twice: ***"
    assert dsn_password("host=x user=y") is None
