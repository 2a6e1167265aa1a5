"""The jobs table's server-side sort (Store.job_ids_ordered) on both stores, and against
an independent model of its order."""

from __future__ import annotations

import gc
import random
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from reelqueue.domain.clock import FakeClock
from reelqueue.domain.models import AccountSpec, BatchSpec, Job, JobSpec
from reelqueue.store.base import JOB_ORDERS, ClaimParams, JobError, Store
from reelqueue.store.sqlite import SqliteStore

pytestmark = pytest.mark.unit

# (name, row number, prompt) per job, ids 1..6 in this order.
JOBS = [
    ("beta", 7, "b prompt"),
    ("Alpha", None, "A prompt"),
    ("alpha", 3, "a prompt"),
    ("Ärger", 5, "Z prompt"),
    ("zeta", 2, "c prompt"),
    ("Beta", 7, "b prompt"),
]


def fill(store: Store, tmp_path: Path, clock: FakeClock) -> None:
    """Six jobs; then job 3 rendering at 40 % on acct-a, job 5 failed (content policy)
    after two attempts, job 6 rendering at 90 % on acct-b."""
    batch = store.create_batch(BatchSpec("b", "s.csv", str(tmp_path)), clock.now())
    specs = [JobSpec(job_key=f"k{i}", prompt=prompt, provider="mock", name=name,
                     output_path=str(tmp_path / f"{name}.mp4"), row_number=row)
             for i, (name, row, prompt) in enumerate(JOBS)]
    store.add_jobs(batch.id, specs, clock.now())
    store.add_account(AccountSpec("acct-a", "mock", 1), clock.now())
    store.add_account(AccountSpec("acct-b", "mock", 1), clock.now())

    def claim(account: str, job_id: int):  # type: ignore[no-untyped-def]
        store.prioritize_jobs([job_id], clock.now())  # to the front
        got = store.claim_next_job(ClaimParams(account, "inst", clock.now(), 60.0))
        assert got is not None and got.job.id == job_id
        return got

    three = claim("acct-a", 3)
    assert store.mark_submitting(three.token, "ct-3", clock.now())
    assert store.record_submitted(three.token, "pj-3", clock.now())
    assert store.record_progress(three.token, "running", 0.4, clock.now())
    first = claim("acct-b", 5)
    assert store.set_retry_wait(first.token, JobError("retryable", "timed out", "slow"),
                                clock.now(), clock.now(), keep_provider_job=False)
    second = claim("acct-b", 5)
    assert store.mark_failed(second.token, JobError("permanent", "content policy", "no"),
                             clock.now())
    six = claim("acct-b", 6)
    assert store.mark_submitting(six.token, "ct-6", clock.now())
    assert store.record_submitted(six.token, "pj-6", clock.now())
    assert store.record_progress(six.token, "running", 0.9, clock.now())


EXPECTED = {
    # NULL first, ties by id
    "row": [2, 5, 3, 4, 1, 6],
    # ASCII case folded, ties by id; 'Ä' (U+00C4) after every ASCII letter
    "name": [2, 3, 1, 6, 5, 4],
    "prompt": [2, 3, 1, 6, 5, 4],
    # no account yet reads "mock · any"; 'acct-…' before 'mock · any'
    "account": [3, 5, 6, 1, 2, 4],
    # queued, then rendering, then failed
    "state": [1, 2, 4, 3, 6, 5],
    "progress": [1, 2, 4, 5, 3, 6],
    "attempts": [1, 2, 4, 3, 6, 5],
    "output": [2, 3, 1, 6, 5, 4],
    "error": [1, 2, 3, 4, 6, 5],
}


@pytest.mark.parametrize("order", JOB_ORDERS)
def test_each_column_sorts_in_the_documented_order(
    store: Store, tmp_path: Path, clock: FakeClock, order: str
) -> None:
    fill(store, tmp_path, clock)
    assert store.job_ids_ordered(order) == EXPECTED[order]
    assert store.job_ids_ordered(order, descending=True) == EXPECTED[order][::-1]
    # pages: offset/limit over the same order, both directions
    assert store.job_ids_ordered(order, limit=2, offset=1) == EXPECTED[order][1:3]
    assert (store.job_ids_ordered(order, descending=True, limit=4, offset=4)
            == EXPECTED[order][::-1][4:])


def test_unknown_order_is_refused(store: Store) -> None:
    with pytest.raises(ValueError, match="unknown job order"):
        store.job_ids_ordered("id; DROP TABLE jobs")


# An independent model of queries.sql's job_order_* expressions (it used to be the memory
# store's code; the memory store now runs the SQL itself): NOCASE folds ASCII letters only,
# then compares code points as UTF-8 bytes do; no value sorts first; state in lifecycle order.
_NOCASE = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")
_STATE_RANK = {state: rank for rank, state in enumerate(
    ("QUEUED", "RETRY_WAIT", "CLAIMED", "SUBMITTING", "RENDERING", "DOWNLOADING",
     "COMPLETED", "PARKED", "FAILED", "CANCELLED"))}


def _nocase(text: str | None) -> tuple[bool, str]:
    return (text is not None, (text or "").translate(_NOCASE))


def _number(value: float | None) -> tuple[bool, float]:
    return (value is not None, value or 0.0)


MODEL_KEYS: dict[str, Callable[[Job], Any]] = {
    "row": lambda j: _number(j.row_number),
    "name": lambda j: _nocase(j.name),
    "prompt": lambda j: _nocase(j.prompt),
    "account": lambda j: _nocase(j.account if j.account is not None
                                 else f"{j.provider} · any"),
    "state": lambda j: _STATE_RANK.get(str(j.state), len(_STATE_RANK)),
    "progress": lambda j: _number(j.progress),
    "attempts": lambda j: j.attempts,
    "output": lambda j: _nocase(j.output_path),
    "error": lambda j: _nocase(j.error_label),
}


def test_the_journal_orders_random_jobs_as_the_model_does(tmp_path: Path) -> None:
    """Names, prompts and rows drawn at random (duplicates, case, accents, empty, no row):
    the journal's ORDER BY gives the ids the model's sort gives, for every column."""
    rng = random.Random(1313)
    alphabet = "aAbBzZ _-1éÉßÄ·"
    specs = []
    for i in range(300):
        name = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 4)))
        specs.append(JobSpec(job_key=f"r{i}", prompt=name[::-1] + "p", provider="mock",
                             name=name, output_path=str(tmp_path / f"{name}{i}.mp4"),
                             row_number=rng.choice([None, rng.randint(1, 40)])))
    store = SqliteStore.open(tmp_path / "j.sqlite3", now=1.0)
    try:
        batch = store.create_batch(BatchSpec("b", "s.csv", str(tmp_path)), 1.0)
        store.add_jobs(batch.id, specs, 1.0)
        jobs = [store.get_job(job_id) for job_id in range(1, 301)]
        assert set(MODEL_KEYS) == set(JOB_ORDERS)
        for order in JOB_ORDERS:
            key = MODEL_KEYS[order]
            for descending in (False, True):
                model = [j.id for j in sorted((j for j in jobs if j is not None),
                                              key=lambda j: (key(j), j.id),
                                              reverse=descending)]
                journal = store.job_ids_ordered(order, descending)
                assert journal == model, f"{order} {'desc' if descending else 'asc'}"
                assert sorted(journal) == list(range(1, 301))
    finally:
        store.close()


@pytest.mark.parametrize("store", ["sqlite", "postgresql"], indirect=True)
def test_a_long_ordered_read_leaves_nothing_for_the_garbage_collector(
        store: Store, tmp_path: Path, clock: FakeClock) -> None:
    """A sorted window re-reads the whole order every second of a live run. Read a row at
    a time, the ids are all that stays; fetched whole, every row object stayed until the
    last, and 100,000 of them started full collections on the journal thread that held
    the interpreter from the GUI thread for 10-45 ms each (docs/ui.md)."""
    batch = store.create_batch(BatchSpec("b", "s.csv", str(tmp_path)), clock.now())
    count = 5_000
    store.add_jobs(batch.id, [JobSpec(job_key=f"k{i}", prompt="p", provider="mock",
                                      name=f"n{count - i:05d}",
                                      output_path=str(tmp_path / f"{i}.mp4"))
                              for i in range(count)], clock.now())
    collections: list[int] = []

    def seen(phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            collections.append(info["generation"])

    gc.collect()  # the young generation starts empty
    gc.callbacks.append(seen)
    try:
        ids = store.job_ids_ordered("name")
    finally:
        gc.callbacks.remove(seen)
    assert ids == list(range(count, 0, -1))  # names run backwards from id 1
    assert collections == []
