"""A new seed of a finished video (issue 23, the gallery's "Retry with a new seed"): a new
job beside the kept one, its own key and file, priced in the retry's plan before it
starts, the ledger of both saying what it is. The finished job is never touched."""

from __future__ import annotations

from pathlib import Path

import pytest

from reelqueue.application import jobs
from reelqueue.application.context import AppContext
from reelqueue.application.retry_words import retry_summary
from reelqueue.domain.clock import FakeClock
from reelqueue.domain.models import AccountSpec, BatchSpec, Job, JobSpec
from reelqueue.domain.states import JobState
from reelqueue.engine.retry_plan import seeded_path
from reelqueue.store.base import ClaimParams
from reelqueue.store.lockfile import make_private_dir
from reelqueue.store.sqlite import SqliteStore
from tests.application.test_commands import on_journal

pytestmark = pytest.mark.integration

NOW = 1_700_000_000.0
PRICE = 0.05


@pytest.fixture
def ctx(tmp_path: Path) -> AppContext:
    return AppContext(data_dir=tmp_path / "data", videos_dir=tmp_path / "videos",
                      clock=FakeClock(NOW + 100))


def finished(ctx: AppContext, provider: str = "mock", seed: int | None = 7) -> Job:
    """One job rendered, downloaded and completed through the store's own transitions."""
    make_private_dir(ctx.data_dir)
    store = SqliteStore.open(ctx.journal_path, now=NOW)
    try:
        batch = store.create_batch(BatchSpec("shots", "s.csv", "shots"), NOW)
        params = {"model": "mock-1", "duration": 5, **({"seed": seed} if seed else {})}
        store.add_jobs(batch.id, [JobSpec("row-2", "a lighthouse", provider,
                                          "shots/lighthouse.mp4", params=params,
                                          row_number=2, name="lighthouse",
                                          metadata={"price": PRICE})], NOW)
        store.add_account(AccountSpec("acct", provider, 2, "http://127.0.0.1:9"), NOW)
        claim = store.claim_next_job(ClaimParams("acct", "i", NOW, 60))
        assert claim is not None
        token = claim.token
        assert store.mark_submitting(token, "ct-1", NOW)
        assert store.record_submitted(token, "pj-1", NOW)
        assert store.mark_rendering(token, NOW)
        assert store.mark_downloading(token, NOW)
        assert store.record_download(token, size=10, sha256="ab" * 32, now=NOW)
        assert store.mark_completed(token, size=10, sha256="ab" * 32, cost=PRICE, now=NOW)
        job = store.get_job(claim.job.id)
        assert job is not None and job.state == JobState.COMPLETED
        return job
    finally:
        store.close()


def read(ctx: AppContext) -> tuple[list[Job], list[tuple[int | None, str, dict]]]:
    store = SqliteStore.open(ctx.journal_path, now=NOW)
    try:
        return store.list_jobs(), [(e.job_id, e.event, e.detail) for e in store.ledger()]
    finally:
        store.close()


def test_a_new_seed_of_a_completed_job_is_a_new_job_and_the_finished_one_is_untouched(
        ctx: AppContext) -> None:
    original = finished(ctx)
    _jobs, before = read(ctx)
    plan = on_journal(ctx, lambda s: jobs.retry_plan(s, [original.id], new_seed=42))
    # Priced before it starts, like any re-render: the UI's and CLI's confirmation.
    assert [j.id for j in plan.variants] == [original.id] and plan.rerender == ()
    assert plan.pays and plan.rerender_usd == pytest.approx(PRICE) and plan.unpriced == 0
    assert plan.not_retryable == ()
    assert retry_summary(plan) == ("1 job: 1 finished video is kept and rendered again as a new "
                              "job with the new seed (est. $0.05).")

    done = on_journal(ctx, lambda s: jobs.retry(s, plan.job_ids, new_seed=42))
    listed, ledger = read(ctx)
    assert len(listed) == 2 and len(done) == 1
    kept, = (j for j in listed if j.id == original.id)
    new, = (j for j in listed if j.id == done[0])
    # The finished job: exactly as it was (state, file, seed, render, cost, time).
    assert kept == original
    assert [e for e in ledger if e[0] == original.id and e[1] == "spend"] == \
        [e for e in before if e[0] == original.id and e[1] == "spend"], "never billed again"
    # The new job: same prompt and parameters, the new seed, its own key and file.
    assert new.state == JobState.QUEUED and new.batch_id == original.batch_id
    assert new.prompt == original.prompt and new.row_number == original.row_number
    assert new.params == {**original.params, "seed": 42}
    assert new.job_key == "row-2~seed42" != original.job_key
    assert new.output_path == "shots/lighthouse-seed42.mp4" != original.output_path
    assert new.provider_job_id is None and new.client_token is None and new.cost is None
    assert new.metadata["price"] == PRICE and new.metadata["variant_of"] == original.id
    # The ledger of both says what it is, with the price.
    made = [d for job_id, event, d in ledger if job_id == original.id
            and event == "seed_variant"]
    assert made == [{"variant_job": new.id, "seed": 42, "estimated_usd": PRICE,
                     "output_path": new.output_path}]
    origin = [d for job_id, event, d in ledger if job_id == new.id
              and event == "seed_variant_of"]
    assert len(origin) == 1 and origin[0]["original_job"] == original.id

    # The same seed again makes nothing new; re-importing the sheet's row neither.
    again = on_journal(ctx, lambda s: jobs.retry(s, [original.id], new_seed=42))
    assert again == []
    store = SqliteStore.open(ctx.journal_path, now=NOW)
    try:
        result = store.add_jobs(original.batch_id, [JobSpec(
            "row-2", "a lighthouse", "mock", "shots/lighthouse.mp4")], NOW)
        assert (result.added, result.already_present) == (0, 1)
        assert len(store.list_jobs()) == 2
    finally:
        store.close()
    # Another seed of the variant: the original's key and file name, the new seed.
    third = on_journal(ctx, lambda s: jobs.retry(s, [new.id, original.id], new_seed=43))
    listed, _ledger = read(ctx)
    paths = sorted(j.output_path for j in listed)
    assert len(third) == 1 and len(listed) == 3, "one per seed: 43 once"
    assert paths == ["shots/lighthouse-seed42.mp4", "shots/lighthouse-seed43.mp4",
                     "shots/lighthouse.mp4"]


def test_without_a_new_seed_or_a_seed_parameter_a_finished_job_is_left_alone(
        ctx: AppContext) -> None:
    original = finished(ctx, provider="kling", seed=None)
    plan = on_journal(ctx, lambda s: jobs.retry_plan(s, [original.id], new_seed=42))
    assert plan.variants == () and plan.not_retryable == (original.id,) and not plan.pays
    assert on_journal(ctx, lambda s: jobs.retry(s, [original.id], new_seed=42)) == []
    plain = on_journal(ctx, lambda s: jobs.retry_plan(s, [original.id]))
    assert plain.variants == () and plain.not_retryable == (original.id,)
    listed, _ledger = read(ctx)
    assert listed == [original]


@pytest.mark.parametrize(("stored", "seed", "expected"), [
    ("b/clip.mp4", 42, "b/clip-seed42.mp4"),
    ("b/clip-seed7.mp4", 9, "b/clip-seed9.mp4"),  # a variant's suffix replaced, not stacked
    ("clip", 1, "clip-seed1"),
    ("b\\c\\clip.final.mov", 3, "b\\c\\clip.final-seed3.mov"),
    ("b/" + "x" * 300 + ".mp4", 5, "b/" + "x" * 245 + "-seed5.mp4"),
])
def test_a_variants_file_is_beside_the_original_and_never_its_name(
        stored: str, seed: int, expected: str) -> None:
    assert seeded_path(stored, seed) == expected
