"""Review and re-roll in the application layer (issue 35 items 2 and 4): rows grouped in
sheet order, the "reviewed" count, which rows a re-roll takes, its price and cap, a
provider without a seed, and a quote that changed before it was confirmed."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from reelqueue.application import review
from reelqueue.application.context import AppContext
from reelqueue.domain.clock import FakeClock
from reelqueue.domain.errors import InputError
from reelqueue.domain.models import AccountSpec, BatchSpec, JobSpec
from reelqueue.domain.review import Decision, ReviewChange
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


def rendered(ctx: AppContext, rows: dict[str, str], takes: int = 2) -> list[int]:
    """A batch of ``rows`` (key -> provider), ``takes`` each, every take completed through
    the store's own transitions; the job ids in row order."""
    make_private_dir(ctx.data_dir)
    store = SqliteStore.open(ctx.journal_path, now=NOW)
    try:
        batch = store.create_batch(BatchSpec("shots", "s.csv", "shots"), NOW)
        specs = [JobSpec(key if n == 1 else f"{key}#{n}", f"a shot of {key}", provider,
                         f"shots/{key}_{n}.mp4", params={"duration": 5, "seed": n},
                         row_number=10 - i, name=key, metadata={"price": PRICE})
                 for i, (key, provider) in enumerate(rows.items())
                 for n in range(1, takes + 1)]
        ids = list(store.add_jobs(batch.id, specs, NOW).job_ids)
        for provider in set(rows.values()):
            store.add_account(AccountSpec(f"acct-{provider}", provider, 50,
                                          "http://127.0.0.1:9"), NOW)
            while (claim := store.claim_next_job(
                    ClaimParams(f"acct-{provider}", "i", NOW, 60))) is not None:
                token = claim.token
                assert store.mark_submitting(token, f"ct-{claim.job.id}", NOW)
                assert store.record_submitted(token, f"pj-{claim.job.id}", NOW)
                assert store.mark_downloading(token, NOW)
                assert store.mark_completed(token, size=1, sha256="ab" * 32, cost=None,
                                            now=NOW)
        return ids
    finally:
        store.close()


def decide(ctx: AppContext, decisions: dict[int, Decision]) -> None:
    store = SqliteStore.open(ctx.journal_path, now=NOW)
    try:
        for job_id, decision in decisions.items():
            store.set_review(ReviewChange(job_id, decision, None, 0, "t", NOW))
    finally:
        store.close()


def test_rows_in_sheet_order_their_counts_and_which_to_reroll(ctx: AppContext) -> None:
    ids = rendered(ctx, {"a": "mock", "b": "mock", "c": "mock"})
    decide(ctx, {ids[0]: Decision.REJECT, ids[1]: Decision.REJECT,   # a: re-roll
                 ids[2]: Decision.REJECT,                           # b: one left to see
                 ids[4]: Decision.PICK})                            # c: picked
    takes = on_journal(ctx, lambda s: review.batch_takes(s, 1))
    # row numbers were written 10, 9, 8: sheet order is by row number
    assert [g.key for g in takes.groups] == ["c", "b", "a"]
    assert [g.state_words for g in takes.groups] == ["picked", "to review", "to re-roll"]
    assert takes.progress_words == "4 of 6 reviewed"
    assert [g.key for g in takes.to_reroll] == ["a"]
    plan = on_journal(ctx, lambda s: review.reroll_plan(s, 1, per_row=2,
                                                        rng=random.Random(3)))
    assert plan.jobs == 2 and [r.key for r in plan.rows] == ["a"]
    assert all(s.job_key.startswith("a~seed") for s in plan.specs)
    assert len({s.params["seed"] for s in plan.specs}) == 2
    usd = plan.usd
    assert usd == pytest.approx(sum(float(s.metadata["price"]) for s in plan.specs)) and usd > 0

    with pytest.raises(InputError, match="more than the"):
        on_journal(ctx, lambda s: review.reroll(s, 1, confirmed_usd=usd / 2, per_row=2))
    done = on_journal(ctx, lambda s: review.reroll(s, 1, confirmed_usd=usd, per_row=2,
                                                   by="ana"))
    assert len(done.job_ids) == 2 and done.cap == usd
    store = SqliteStore.open(ctx.journal_path, now=NOW)
    try:
        batch = store.get_batch(done.batch_id or 0)
        assert batch is not None
        assert batch.settings == {"reroll_of": 1, "max_spend": usd}
        (entry,) = [e for e in store.ledger() if e.event == "reroll"]
        assert entry.detail["confirmed_usd"] == usd and entry.detail["by"] == "ana"
    finally:
        store.close()
    again = on_journal(ctx, lambda s: review.batch_takes(s, done.batch_id or 0))
    assert again.batch.id == 1, "a re-roll's id reads its batch's rows"
    assert [len(g.takes) for g in again.groups] == [2, 2, 4]
    assert again.groups[2].state_words == "rendering", "not re-rolled twice while it renders"
    nothing = on_journal(ctx, lambda s: review.reroll_plan(s, 1))
    assert nothing.jobs == 0 and "no row to re-roll" in nothing.words


def test_a_provider_without_a_seed_is_said_and_rendered_again_only_when_asked(
        ctx: AppContext) -> None:
    ids = rendered(ctx, {"a": "luma"}, takes=1)
    decide(ctx, {ids[0]: Decision.REJECT})
    plan = on_journal(ctx, lambda s: review.reroll_plan(s, 1))
    assert plan.seedless == ("a",) and plan.jobs == 0
    assert "takes no seed" in plan.words and "--same-request" in plan.words
    same = on_journal(ctx, lambda s: review.reroll_plan(s, 1, same_request=True))
    assert same.jobs == 1 and same.rows[0].seedless and not same.unpriced
    (spec,) = same.specs
    assert spec.job_key == "a~seed-again1"
    assert spec.params == {"duration": 5, "seed": 1}, "the same request again"
    assert spec.output_path.endswith("-again1.mp4")
