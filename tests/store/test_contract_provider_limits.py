"""Store contract (SQLite, memory, PostgreSQL) for limits from the provider (issue 32 item
3): the claim counts, in its own transaction, the live renders and the day's creates of
each model on the account against the account's fresh view, beside the user's capacity."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from reelqueue.domain.account_view import AccountView, ModelLimit
from reelqueue.domain.clock import FakeClock
from reelqueue.domain.models import AccountSpec, BatchSpec, Claim, JobSpec
from reelqueue.store.base import ClaimParams, Store
from reelqueue.store.provider_limits import VIEW_FRESH_SECONDS
from reelqueue.store.queries import named_queries
from reelqueue.store.sqlite import SCHEMA_VERSION, SqliteStore
from tests.store.test_check_forms import make_journal

pytestmark = pytest.mark.unit


def jobs(tmp_path: Path, model: str | None, count: int, prefix: str) -> list[JobSpec]:
    return [JobSpec(job_key=f"{prefix}-{i}", prompt=f"p {i}", provider="runway",
                    output_path=str(tmp_path / "out" / f"{prefix}-{i}.mp4"),
                    params={} if model is None else {"model": model})
            for i in range(count)]


def setup(store: Store, tmp_path: Path, clock: FakeClock, *, capacity: int = 5,
          models: dict[str | None, int] | None = None) -> None:
    batch = store.create_batch(BatchSpec("b", "s.csv", str(tmp_path)), clock.now())
    for i, (model, count) in enumerate((models or {"gen4.5": 8}).items()):
        store.add_jobs(batch.id, jobs(tmp_path, model, count, f"m{i}"), clock.now())
    store.add_account(AccountSpec("acct-a", "runway", capacity), clock.now())


def view(clock: FakeClock, *limits: ModelLimit, read_at: float | None = None) -> AccountView:
    return AccountView("acct-a", None, limits, None,
                       clock.now() if read_at is None else read_at, "reader")


def claim(store: Store, clock: FakeClock, default_model: str | None = None) -> Claim | None:
    extra = {} if default_model is None else {"default_model": default_model}
    return store.claim_next_job(ClaimParams("acct-a", "inst", clock.now(), 600.0, 0.0,
                                            **extra))


def claims(store: Store, clock: FakeClock, most: int = 20,
           default_model: str | None = None) -> list[Claim]:
    got: list[Claim] = []
    for _ in range(most):
        c = claim(store, clock, default_model)
        if c is None:
            break
        got.append(c)
    return got


def models_of(got: list[Claim]) -> list[str | None]:
    return [c.job.params.get("model") for c in got]


def test_a_tier_allowing_two_gives_two_and_the_users_five_is_kept(
    store: Store, tmp_path: Path, clock: FakeClock,
) -> None:
    setup(store, tmp_path, clock, capacity=5)
    store.put_account_view(view(clock, ModelLimit("gen4.5", 2, None)))
    assert len(claims(store, clock)) == 2
    (account,) = store.list_accounts()
    assert account.capacity == 5


def test_a_reread_raising_the_limit_gives_more_at_once(
    store: Store, tmp_path: Path, clock: FakeClock,
) -> None:
    setup(store, tmp_path, clock, capacity=5)
    store.put_account_view(view(clock, ModelLimit("gen4.5", 2, None)))
    assert len(claims(store, clock)) == 2
    clock.advance(60)
    store.put_account_view(view(clock, ModelLimit("gen4.5", 4, None)))
    assert len(claims(store, clock)) == 2, "4 in all"
    clock.advance(60)
    store.put_account_view(view(clock, ModelLimit("gen4.5", 9, None)))
    assert len(claims(store, clock)) == 1, "the user's 5 holds"


def test_a_second_model_has_its_own_limit(
    store: Store, tmp_path: Path, clock: FakeClock,
) -> None:
    setup(store, tmp_path, clock, capacity=5, models={"gen4.5": 4, "gen4_turbo": 4})
    store.put_account_view(view(clock, ModelLimit("gen4.5", 1, None),
                                ModelLimit("gen4_turbo", 2, None)))
    assert sorted(models_of(claims(store, clock))) == ["gen4.5", "gen4_turbo", "gen4_turbo"]


def test_a_job_without_a_model_counts_as_the_default(
    store: Store, tmp_path: Path, clock: FakeClock,
) -> None:
    setup(store, tmp_path, clock, capacity=5, models={None: 3, "gen4.5": 3})
    store.put_account_view(view(clock, ModelLimit("gen4.5", 2, None)))
    assert len(claims(store, clock, default_model="gen4.5")) == 2


def test_a_view_older_than_fifteen_minutes_gates_nothing(
    store: Store, tmp_path: Path, clock: FakeClock,
) -> None:
    setup(store, tmp_path, clock, capacity=5)
    read_at = clock.now()
    store.put_account_view(view(clock, ModelLimit("gen4.5", 2, None), read_at=read_at))
    clock.advance(VIEW_FRESH_SECONDS - 1)
    assert len(claims(store, clock)) == 2, "a view of 14:59 ago still gates"
    clock.advance(2)
    assert len(claims(store, clock)) == 3, "one of 15:01 ago gates nothing: the user's 5"


def test_a_published_zero_is_unknown_and_gates_nothing(
    store: Store, tmp_path: Path, clock: FakeClock,
) -> None:
    setup(store, tmp_path, clock, capacity=5, models={"gen4.5": 2, "gen4_turbo": 4})
    store.put_account_view(view(clock, ModelLimit("gen4.5", 0, 0, "rolling_24h", 5),
                                ModelLimit("gen4_turbo", 1, None)))
    assert sorted(models_of(claims(store, clock))) == ["gen4.5", "gen4.5", "gen4_turbo"]


def test_the_daily_limit_counts_creates_since_the_read_and_claims_that_will_create(
    store: Store, tmp_path: Path, clock: FakeClock,
) -> None:
    setup(store, tmp_path, clock, capacity=5)
    store.put_account_view(view(clock, ModelLimit("gen4.5", None, 50, "rolling_24h", 47)))
    clock.advance(1)
    first = claims(store, clock, most=1)
    assert len(first) == 1
    assert store.mark_submitting(first[0].token, "ct-1", clock.now())
    assert store.record_submitted(first[0].token, "pj-1", clock.now())
    assert len(claims(store, clock)) == 2, "47 used + 1 sent + 2 claimed = 50"
    # A newer read counts the sent one itself: only what was sent since counts again.
    clock.advance(1)
    store.put_account_view(view(clock, ModelLimit("gen4.5", None, 50, "rolling_24h", 48)))
    assert len(claims(store, clock)) == 0


def test_a_model_not_in_the_view_is_held_only_by_the_capacity(
    store: Store, tmp_path: Path, clock: FakeClock,
) -> None:
    setup(store, tmp_path, clock, capacity=4, models={"gen4.5": 5, "gen3a_turbo": 5})
    store.put_account_view(view(clock, ModelLimit("gen4.5", 1, None)))
    assert sorted(models_of(claims(store, clock))) == ["gen3a_turbo"] * 3 + ["gen4.5"]


def test_two_processes_on_one_journal_never_pass_the_model_limit(
    tmp_path: Path, clock: FakeClock,
) -> None:
    path = tmp_path / "journal.sqlite3"
    one = SqliteStore.open(path, now=clock.now())
    two = SqliteStore.open(path, now=clock.now())
    try:
        setup(one, tmp_path, clock, capacity=5)
        one.put_account_view(view(clock, ModelLimit("gen4.5", 2, None)))
        got: list[Claim] = []
        lock = threading.Lock()

        def run(store: SqliteStore) -> None:
            for _ in range(10):
                c = claim(store, clock)
                if c is not None:
                    with lock:
                        got.append(c)

        threads = [threading.Thread(target=run, args=(s,)) for s in (one, two)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert len(got) == 2
    finally:
        one.close()
        two.close()


def test_a_schema_13_journal_is_migrated_to_count_creates_by_account(tmp_path: Path) -> None:
    path = tmp_path / "old.sqlite3"
    make_journal(path, 13)
    store = SqliteStore.open(path, now=2)
    try:
        assert store.migrated_from == 13 and SCHEMA_VERSION >= 14
        plan = " ".join(str(row[3]) for row in store.raw_connection().execute(
            "EXPLAIN QUERY PLAN " + named_queries()["creates_since"],
            {"account": "a", "since": 0.0, "model": "m", "default_model": None}))
        assert "ledger_creates" in plan
    finally:
        store.close()
