"""The window asks before a paid re-render also when its price is unknown (issue 10)."""

from __future__ import annotations

import time

from reelqueue.cli.context import CliContext
from reelqueue.domain.models import AccountSpec, BatchSpec, JobSpec
from reelqueue.store.base import ClaimParams, JobError
from reelqueue.store.lockfile import make_private_dir
from reelqueue.store.sqlite import SqliteStore
from tests.gui.conftest import WindowHarness, on_qloop, until


def _unpriced_failure(ctx: CliContext) -> int:
    """One failed job of a model without a known price, no render kept."""
    make_private_dir(ctx.data_dir)
    store = SqliteStore.open(ctx.journal_path, now=time.time())
    batch = store.create_batch(BatchSpec("b", "s.csv", str(ctx.videos_dir)), time.time())
    store.add_jobs(batch.id, [JobSpec("k", "p", "mock", str(ctx.videos_dir / "k.mp4"),
                                      params={"model": "unpriced-model", "duration": 5})],
                   time.time())
    store.add_account(AccountSpec("acct", "mock", 1, "http://127.0.0.1:9"), time.time())
    claim = store.claim_next_job(ClaimParams("acct", "i", time.time(), 60))
    assert claim is not None
    store.mark_failed(claim.token, JobError("retryable", "provider error", "500"), time.time())
    store.close()
    return claim.job.id


@on_qloop
async def test_a_re_render_of_unknown_price_waits_for_the_button(
        windows: WindowHarness, app_ctx: CliContext) -> None:
    job_id = _unpriced_failure(app_ctx)
    controller = await windows.open(app_ctx, start=False)
    table, banners = controller.model.table, controller.window.banners
    controller.actions.retry([job_id])
    await until(lambda: banners.get("retry") is not None, 10)
    banner = banners.get("retry")
    assert "1 will be rendered again (price unknown — set it with `reelqueue accounts set " \
        "NAME --price-per-second USD` for account acct)" in banner.text, banner.text
    assert "$0.00" not in banner.text
    assert set(banner.buttons) == {"Retry (price unknown)"}
    assert table.row(job_id).state == "FAILED", "nothing changes before the click"
    banner.buttons["Retry (price unknown)"].click()
    await until(lambda: table.row(job_id).state == "QUEUED", 10)
