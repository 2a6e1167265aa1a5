"""Issue 24: "fastest" ranks a routed row's candidates by the journal's figures — each
render kind's typical time from its finished renders (the window's ETAs' figures), the
given order for kinds with fewer than five."""

from __future__ import annotations

from pathlib import Path

import pytest

from reelqueue.application.context import AppContext
from reelqueue.application.imports import plan_import
from reelqueue.domain.clock import FakeClock
from reelqueue.domain.models import AccountSpec, BatchSpec, JobSpec
from reelqueue.intake.planner import ImportOptions
from reelqueue.store.base import ClaimParams
from reelqueue.store.lockfile import make_private_dir
from reelqueue.store.sqlite import SqliteStore
from tests.application.test_commands import on_journal

pytestmark = pytest.mark.integration

NOW = 1_700_000_000.0


def rendered(ctx: AppContext, times: dict[str, list[float]]) -> None:
    """Finished renders of each provider's default kind taking the given seconds."""
    make_private_dir(ctx.data_dir)
    store = SqliteStore.open(ctx.journal_path, now=NOW)
    try:
        batch = store.create_batch(BatchSpec("earlier", "e.csv", "earlier"), NOW)
        for provider, seconds in times.items():
            store.add_account(AccountSpec(f"{provider}-a", provider, 1), NOW)
            for n, took in enumerate(seconds):
                store.add_jobs(batch.id, [JobSpec(f"{provider}-{n}", "x", provider,
                                                  f"earlier/{provider}{n}.mp4",
                                                  params=dict(PARAMS[provider]))], NOW)
                claim = store.claim_next_job(ClaimParams(f"{provider}-a", "i", NOW, 600))
                assert claim is not None
                t = claim.token
                assert store.mark_submitting(t, f"ct-{provider}-{n}", NOW)
                assert store.record_submitted(t, f"pj-{provider}-{n}", NOW)
                assert store.mark_downloading(t, NOW)
                assert store.mark_completed(t, size=1, sha256="ab" * 32, cost=None,
                                            now=NOW + took)
    finally:
        store.close()


PARAMS: dict[str, dict[str, object]] = {}


def test_fastest_ranks_by_the_journals_render_times(tmp_path: Path) -> None:
    sheet = tmp_path / "shots.csv"
    sheet.write_text("prompt,providers\na lighthouse at dusk,runway|luma|veo\n",
                     encoding="utf-8")
    ctx = AppContext(data_dir=tmp_path / "data", videos_dir=tmp_path / "videos",
                     clock=FakeClock(NOW + 10_000))
    options = ImportOptions(route_policy="fastest", output_root=ctx.videos_dir)
    # the kinds the plan will ask about: each provider's default model and duration
    first = on_journal(ctx, lambda s: plan_import(s, sheet, options))
    (job,) = first.jobs
    assert job.route is not None
    assert [c.provider for c in job.route.candidates] == ["runway", "luma", "veo"], \
        "no figures yet: the given order"
    PARAMS.update({c.provider: dict(c.params) for c in job.route.candidates})
    rendered(ctx, {"runway": [90.0] * 6, "luma": [20.0, 25.0, 30.0, 22.0, 28.0],
                   "veo": [10.0] * 4})  # veo: only four, no figure yet
    plan = on_journal(ctx, lambda s: plan_import(s, sheet, options))
    (job,) = plan.jobs
    assert job.route is not None
    assert [c.provider for c in job.route.candidates] == ["luma", "runway", "veo"]
    assert job.provider == "luma"
