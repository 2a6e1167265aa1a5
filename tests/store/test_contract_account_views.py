"""The store contract (SQLite, memory, PostgreSQL) for account views (issue 32 item 2):
one row per account that every process sees, an older reading never replacing a newer
one, the limits bounded, the row gone with its account, and the migration that adds the
table on SQLite (schema 13) and PostgreSQL (schema 10)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from reelqueue.domain.account_view import (
    MAX_LIMITS,
    MAX_MODEL_CHARS,
    AccountView,
    Balance,
    ModelLimit,
    unavailable_view,
)
from reelqueue.domain.clock import FakeClock
from reelqueue.domain.models import AccountSpec
from reelqueue.store.base import Store
from reelqueue.store.sqlite import SCHEMA_VERSION, SqliteStore
from tests.store.test_check_forms import make_journal

pytestmark = pytest.mark.unit

VIEW = AccountView("acct-a", Balance(4200.0, "credits"),
                   (ModelLimit("gen4.5", 2, 50, "rolling_24h", 12),
                    ModelLimit("veo3.1", 0, None, "unknown", None)),
                   "org-1", 1_000.5, "instance-1", "veo3.1 daily limit missing")


def _account(store: Store, name: str, now: float) -> None:
    store.add_account(AccountSpec(name, "runway", 2), now)


def test_a_view_is_kept_whole_and_read_back(store: Store, clock: FakeClock) -> None:
    _account(store, "acct-a", clock.now())
    assert store.account_views() == []
    assert store.put_account_view(VIEW)
    assert store.account_views() == [VIEW]
    empty = unavailable_view("acct-b", "Runway: HTTP 503", 1_001.0, "instance-2")
    assert store.put_account_view(empty)
    assert store.account_views() == [VIEW, empty]


def test_an_older_reading_never_replaces_a_newer_one(store: Store, clock: FakeClock) -> None:
    _account(store, "acct-a", clock.now())
    store.put_account_view(VIEW)
    older = AccountView("acct-a", Balance(1.0, "credits"), (), None, VIEW.read_at - 60)
    assert not store.put_account_view(older)
    assert store.account_views() == [VIEW]
    newer = AccountView("acct-a", None, (), None, VIEW.read_at + 60, "instance-2",
                        "provider's figures unavailable")
    assert store.put_account_view(newer)
    assert store.account_views() == [newer]


def test_the_limits_are_bounded(store: Store, clock: FakeClock) -> None:
    _account(store, "acct-a", clock.now())
    many = tuple(ModelLimit(f"model-{i}-" + "x" * 200, i, i, "utc_day", 0) for i in range(500))
    store.put_account_view(AccountView("acct-a", None, many, None, 5.0))
    (kept,) = store.account_views()
    assert 0 < len(kept.limits) <= MAX_LIMITS
    assert all(len(limit.model) <= MAX_MODEL_CHARS for limit in kept.limits)
    assert kept.limits[0] == ModelLimit("model-0-" + "x" * (MAX_MODEL_CHARS - 8), 0, 0,
                                        "utc_day", 0)


def test_removing_the_account_removes_its_view(store: Store, clock: FakeClock) -> None:
    _account(store, "acct-a", clock.now())
    store.put_account_view(VIEW)
    store.remove_account("acct-a", clock.now())
    assert store.account_views() == []


def test_another_process_on_the_same_journal_sees_the_view(tmp_path: Path) -> None:
    path = tmp_path / "journal.sqlite3"
    writer = SqliteStore.open(path, now=1)
    reader = SqliteStore.open(path, now=1)
    try:
        writer.put_account_view(VIEW)
        assert reader.account_views() == [VIEW]
    finally:
        writer.close()
        reader.close()


def test_a_schema_12_journal_is_migrated_to_hold_views(tmp_path: Path) -> None:
    path = tmp_path / "old.sqlite3"
    make_journal(path, 12)
    store = SqliteStore.open(path, now=2)
    try:
        assert store.migrated_from == 12 and SCHEMA_VERSION >= 13
        assert store.put_account_view(VIEW)
        assert store.account_views() == [VIEW]
    finally:
        store.close()
    db = sqlite3.connect(path)
    try:
        with pytest.raises(sqlite3.IntegrityError):  # CHECK: a balance has its unit
            db.execute("INSERT INTO account_views (account, balance_amount, read_at) "
                       "VALUES ('x', 1.0, 1.0)")
        with pytest.raises(sqlite3.IntegrityError):  # CHECK: never negative
            db.execute("INSERT INTO account_views (account, balance_amount, balance_unit, "
                       "read_at) VALUES ('x', -1.0, 'USD', 1.0)")
    finally:
        db.close()


def test_a_views_text_is_kept_plain(store: Store, clock: FakeClock) -> None:
    """What a view says is printed by the front ends: no escape or control character."""
    _account(store, "acct-a", clock.now())
    store.put_account_view(AccountView(
        "acct-a", Balance(-1.0, "credits"), (ModelLimit("m\x1b[2J", 1, 1),),
        "org\x1b]0;owned\x07", 5.0, "inst\nance", "why\u202e"))
    (kept,) = store.account_views()
    assert kept.balance is None, "a negative balance is no balance"
    assert (kept.organization_id, kept.read_by, kept.problem) == (
        "org?]0;owned?", "inst?ance", "why?")
    assert kept.limits[0].model == "m?[2J"


def test_a_hostile_row_of_the_journal_is_read_plain(tmp_path: Path) -> None:
    path = tmp_path / "journal.sqlite3"
    SqliteStore.open(path, now=1).close()
    with sqlite3.connect(path) as db:
        db.execute("INSERT INTO account_views (account, organization_id, balance_amount, "
                   "balance_unit, limits, read_at, problem) VALUES ('a', ?, 1.0, ?, ?, 2.0, ?)",
                   ["o\x1b[31m", "cr\x07", '[{"model": "x\\u001b", "concurrency": "2"}, 7]',
                    "p\x00"])
    store = SqliteStore.open(path, now=3)
    try:
        (view,) = store.account_views()
    finally:
        store.close()
    assert view.organization_id == "o?[31m" and view.balance == Balance(1.0, "cr?")
    assert view.limits == (ModelLimit("x?", None, None, "unknown", None),)
    assert view.problem == "p?"
