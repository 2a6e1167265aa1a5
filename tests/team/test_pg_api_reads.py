"""The HTTP API's reads and tokens on a team database (store/pg_reader.py,
store/pg_tokens.py), against a real PostgreSQL: the event stream's order when entries are
committed out of ``seq`` order, a rolled-back entry's gap passed, the tokens' hashing and
revoke, and no password in any message."""

from __future__ import annotations

import time
from collections.abc import Iterator

import psycopg
import pytest

from reelqueue.domain.clock import FakeClock
from reelqueue.domain.errors import InputError, JournalError
from reelqueue.store import pg_reader
from reelqueue.store.pg_reader import PgJournalReader
from reelqueue.store.pg_tokens import PgTokenStore
from reelqueue.store.postgres import PostgresStore

pytestmark = pytest.mark.integration

LEDGER = "INSERT INTO ledger (at, event, job_id) VALUES (1, 'test', %s)"


@pytest.fixture
def store(team_url: str) -> Iterator[PostgresStore]:
    opened = PostgresStore.open(team_url, now=FakeClock(1000.0).now())
    try:
        yield opened
    finally:
        opened.close()


def wait_for_entries(reader: PgJournalReader, after: int, count: int) -> list[int]:
    """The seqs after ``after`` once ``count`` are handed out (a gap is passed once it is
    known permanent: a few reads apart)."""
    seqs: list[int] = []
    for _ in range(200):
        seqs = [e.seq for e in reader.ledger_after(after, 100)]
        if len(seqs) >= count:
            return seqs
        time.sleep(0.05)
    raise AssertionError(f"only {seqs} after {after}")


def test_an_entry_committed_late_is_not_skipped(team_url: str, store: PostgresStore) -> None:
    reader = PgJournalReader(team_url)
    try:
        start = reader.last_ledger_seq()
        with psycopg.connect(team_url) as slow, psycopg.connect(team_url) as fast:
            slow.execute(LEDGER, (1,))  # seq start+1, not committed yet
            fast.execute(LEDGER, (2,))  # seq start+2, committed first
            fast.commit()
            for _ in range(10):  # held at the gap for as long as its transaction runs
                assert reader.ledger_after(start, 100) == []
                time.sleep(pg_reader.GAP_SETTLE_SECONDS / 2)
            slow.commit()
        entries = reader.ledger_after(start, 100)
        assert [(e.seq, e.job_id) for e in entries] == [(start + 1, 1), (start + 2, 2)]
    finally:
        reader.close()


def test_a_rolled_back_entry_is_a_gap_passed_once(team_url: str, store: PostgresStore) -> None:
    reader = PgJournalReader(team_url)
    try:
        start = reader.last_ledger_seq()
        with psycopg.connect(team_url) as db:
            db.execute(LEDGER, (1,))
            db.rollback()
            db.execute(LEDGER, (2,))
            db.commit()
        assert wait_for_entries(reader, start, 1) == [start + 2]
        assert [e.seq for e in reader.ledger_after(start, 100)] == [start + 2]  # at once
    finally:
        reader.close()


def test_tokens_on_the_team_database(team_url: str, store: PostgresStore) -> None:
    tokens, other = PgTokenStore(team_url), PgTokenStore(team_url)  # two machines
    try:
        token = tokens.add("script", "submit", 5.0)
        assert token.startswith("rq_")
        info = other.verify(token)
        assert info is not None and (info.name, info.scope) == ("script", "submit")
        assert other.verify(token[:-1] + ("A" if token[-1] != "A" else "B")) is None
        assert other.verify("rq_nonsense") is None
        with pytest.raises(InputError, match="already a token named"):
            other.add("script", "read", 6.0)
        assert [t.name for t in other.list()] == ["script"]
        assert tokens.revoke("script") and not tokens.revoke("script")
        assert other.verify(token) is None  # seen by the other machine at once
    finally:
        tokens.close()
        other.close()


def test_no_password_in_any_message(team_url: str) -> None:
    host_port = team_url.split("@", 1)[1].split("/", 1)[0]
    port = int(host_port.rsplit(":", 1)[1])
    wrong = f"postgresql://reelqueue:s3cr3t-pw@127.0.0.1:{port + 1}/none?connect_timeout=2"
    for opener in (PgJournalReader, PgTokenStore):
        with pytest.raises(JournalError) as refused:
            opener(wrong)
        assert "s3cr3t-pw" not in str(refused.value)
        assert "s3cr3t-pw" not in repr(refused.value)
