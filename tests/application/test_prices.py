"""Prices end to end (issue 19, part 5): every built-in model either has a price with its
source and date, or says how to give it one; an account's own price (``accounts set NAME
--price-per-second USD``) is used by the import's dry run, the price stamped for the spend
caps, the retry plan and the job rows, and cleared again with ``none``."""

from __future__ import annotations

import argparse
import asyncio
import csv
import io
import re
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import TypeVar

import keyring
import pytest

from reelqueue.application import accounts, imports, jobs
from reelqueue.application.accounts import AccountDraft
from reelqueue.application.retry_words import retry_summary
from reelqueue.application.session import Session
from reelqueue.cli import cmd_accounts, cmd_intake
from reelqueue.cli.context import CliContext
from reelqueue.credentials import MemoryKeyring
from reelqueue.domain.clock import FakeClock
from reelqueue.domain.errors import InputError
from reelqueue.domain.models import JobSpec
from reelqueue.engine import queries
from reelqueue.intake import ImportOptions, ImportPlan
from reelqueue.providers.builtin import builtin_registry
from reelqueue.store.base import ClaimParams, JobError

pytestmark = pytest.mark.integration

T = TypeVar("T")
ZERO = re.compile(r"\$0\.00\b")  # a price shown as nothing ("$0.0064 per pixel" is fine)
SET_IT = "price unknown — set it with `reelqueue accounts set NAME --price-per-second USD`"
# The smallest valid PNG (1 x 1), for the models that animate an image.
PNG = bytes.fromhex(
    "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
    "1f15c4890000000d49444154789c6360000002000100e221bc330000000049454e44ae426082")
# openai-compat declares no models (each gateway serves its own): any name will do.
GATEWAY_MODEL = "some-gateway-model"
# A sheet cannot render these two yet: an image row must leave aspect_ratio empty
# (kling.extra_validation) while the intake fills an empty cell with the provider's first
# ratio. Their prices are checked on a job built by hand.
KLING_IMAGE_ONLY = {("kling", "kling-v2-1"), ("kling", "kling-v1-5")}
# The models no stored pricing page could be found for (docs/providers.md, "Prices").
UNPRICED = {
    ("replicate", "google/veo-3.1"), ("replicate", "google/veo-3.1-fast"),
    ("replicate", "google/veo-3.1-lite"), ("openai-compat", GATEWAY_MODEL),
    *(("kling", model) for model in builtin_registry().get("kling").params.models
      if model != "kling-v3"),
}


@pytest.fixture
def ctx(tmp_path: Path) -> CliContext:
    return CliContext(data_dir=tmp_path / "data", videos_dir=tmp_path / "videos",
                      out=io.StringIO(), clock=FakeClock(1_700_000_000.0))


@pytest.fixture(autouse=True)
def memory_keyring() -> Iterator[MemoryKeyring]:
    previous = keyring.get_keyring()
    backend = MemoryKeyring()
    keyring.set_keyring(backend)
    yield backend
    keyring.set_keyring(previous)


def on_journal(ctx: CliContext, command: Callable[[Session], Awaitable[T]]) -> T:
    async def run() -> T:
        session = Session(ctx)
        await session.open_journal()
        try:
            return await command(session)
        finally:
            await session.stop()

    return asyncio.run(run())


def cli(ctx: CliContext, register: Callable[..., None], *argv: str) -> str:
    """Run one command in-process; its output."""
    parser = argparse.ArgumentParser()
    register(parser.add_subparsers(dest="command"))
    args = parser.parse_args(argv)
    assert isinstance(ctx.out, io.StringIO)
    ctx.out.seek(0)
    ctx.out.truncate()
    assert int(args.handler(args, ctx)) == 0, ctx.out.getvalue()
    return ctx.out.getvalue()


def every_model_sheet(folder: Path) -> Path:
    """Each model of each built-in provider, as text and with an image, at the provider's
    default duration and at 8 s (the providers' own rules refuse the rows a model cannot
    take)."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "frame.png").write_bytes(PNG)
    path = folder / "every model.csv"
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["prompt", "provider", "model", "image", "duration"])
        for info in builtin_registry():
            for model in info.params.models or (GATEWAY_MODEL,):
                for image in ("", "frame.png"):
                    for seconds in ("", "8"):
                        writer.writerow(["a quiet harbour at dawn", info.kind, model, image,
                                         seconds])
    return path


def add_account(ctx: CliContext, name: str, provider: str) -> None:
    draft = AccountDraft(name, provider, 1, key="sk-test-0123456789",
                         base_url="https://gateway.example/v1"
                         if provider == "openai-compat" else None)
    on_journal(ctx, lambda s: accounts.add_account(s, draft, check=False))


def plan(ctx: CliContext, sheet: Path) -> ImportPlan:
    options = ImportOptions(output_root=ctx.videos_dir)
    return on_journal(ctx, lambda s: imports.plan_import(s, sheet, options))


def test_every_built_in_model_has_a_sourced_price_or_says_how_to_set_one(
        ctx: CliContext, tmp_path: Path) -> None:
    sheet = every_model_sheet(tmp_path / "sheet")
    planned = plan(ctx, sheet)
    covered = {(job.provider, str(job.params["model"])) for job in planned.jobs}
    every = {(info.kind, model) for info in builtin_registry()
             for model in info.params.models or (GATEWAY_MODEL,)}
    assert every - covered == KLING_IMAGE_ONLY, f"models no row could render: {every - covered}"
    refused = {error.message for error in planned.errors
               if "kling-v2-1" in error.message or "kling-v1-5" in error.message
               or "leave aspect_ratio empty" in error.message}
    assert refused, "the Kling image-only rows are refused for their aspect ratio"
    for kind, model in KLING_IMAGE_ONLY:  # priced as such a row would be
        row = {"model": model, "duration": 5, "resolution": "720p"}
        quote = planned.price_of(JobSpec("k", "p", kind, "/o.mp4", params=row))
        assert quote is not None and quote.usd is None and quote.unknown.startswith(SET_IT)
    unknown = set()
    for row in planned.preview(None):
        price = row.price
        assert price is not None
        if price.usd is None:
            assert price.unknown.startswith(SET_IT), price
            assert f"--provider {row.provider}" in price.unknown  # no account yet
            unknown.add((row.provider, row.params["model"]))
        else:
            assert price.usd > 0 and price.source.strip(), price
            assert "20" in price.source, f"no date in {price.source!r}"
    assert unknown == UNPRICED - KLING_IMAGE_ONLY
    # The command line says the same, and never $0.00.
    out = cli(ctx, cmd_intake.register, "import", str(sheet), "--dry-run",
              "--preview-rows", "1000")
    assert not ZERO.search(out)
    estimate = out[out.index("Estimate for"):]
    for line in estimate.splitlines()[1:-2]:
        assert "(prices: " in line or SET_IT in line, line
    assert "price unknown (see above)" in estimate.splitlines()[-2]


def test_an_accounts_own_price_is_used_everywhere_and_cleared_with_none(
        ctx: CliContext, tmp_path: Path) -> None:
    folder = tmp_path / "sheet"
    folder.mkdir()
    sheet = folder / "kling.csv"
    sheet.write_text("prompt,provider,model,duration,account\n"
                     "a quiet harbour,kling,kling-v2-master,5,\n"
                     "a loud harbour,kling,kling-v2-master,10,k2\n", encoding="utf-8")
    add_account(ctx, "k1", "kling")
    add_account(ctx, "k2", "kling")
    before = plan(ctx, sheet)
    assert [row.price.unknown if row.price else None for row in before.preview()] == [
        f"{SET_IT} for accounts k1, k2", f"{SET_IT} for account k2"]

    out = cli(ctx, cmd_accounts.register, "accounts", "set", "k2", "--price-per-second",
              "0.05")
    assert "own price $0.05/s" in out and "Price: $0.05 per second" in out
    pinned_only = plan(ctx, sheet)
    assert pinned_only.estimate.lines[1].usd == 0.5                # k2's own price x 10 s
    assert pinned_only.estimate.lines[0].unknown == f"{SET_IT} for account k1"

    cli(ctx, cmd_accounts.register, "accounts", "set", "k1", "--price-per-second", "$0.08")
    after = plan(ctx, sheet)
    lines = {line.label: line for line in after.estimate.lines}
    # Unpinned: k1 and k2 differ, so the dearer of them; pinned: k2's own.
    assert lines["kling"].usd == 0.4 and lines["kling"].sources == (
        "the dearest of the kling accounts: account k1: own price, $0.08/s",)
    assert lines["kling (account k2)"].usd == 0.5
    assert after.estimate.describe_total() == "$0.90"
    assert "$0.40 (the dearest of the kling accounts" in cli(
        ctx, cmd_intake.register, "import", str(sheet), "--dry-run")

    # The price stamped for the spend caps, the job rows and the retry plan use it too.
    result = on_journal(ctx, lambda s: imports.apply_import(s, after))
    assert result.added == 2

    async def fail_the_pinned_job(session: Session) -> int:
        journal = session.journal  # k1 takes the unpinned job, k2 its own
        assert await journal.claim_next_job(ClaimParams("k1", "i", ctx.clock.now(), 60))
        claim = await journal.claim_next_job(ClaimParams("k2", "i", ctx.clock.now(), 60))
        assert claim is not None and claim.job.pinned_account == "k2"
        await journal.mark_failed(claim.token, JobError("retryable", "provider error", "500"),
                                  ctx.clock.now())
        return claim.job.id

    failed = on_journal(ctx, fail_the_pinned_job)
    stamped = on_journal(ctx, lambda s: s.journal.list_jobs())
    assert sorted(job.metadata.get("price") for job in stamped) == [0.4, 0.5]
    rows = on_journal(ctx, lambda s: queries.job_rows(s.journal))
    assert sorted(row.estimate for row in rows if row.estimate is not None) == [0.4, 0.5]
    retry = on_journal(ctx, lambda s: jobs.retry_plan(s, [failed]))
    assert (retry.rerender_usd, retry.unpriced) == (0.5, 0)
    assert "1 will be rendered again (est. $0.50)" in retry_summary(retry)

    out = cli(ctx, cmd_accounts.register, "accounts", "set", "k2", "--price-per-second",
              "none")
    assert "Price: the provider's price list (no own price)." in out
    assert "own price" not in out.splitlines()[0]
    retry = on_journal(ctx, lambda s: jobs.retry_plan(s, [failed]))
    assert (retry.rerender_usd, retry.unpriced) == (0.0, 1)
    assert retry.price_text == f"{SET_IT} for account k2"
    assert not ZERO.search(retry_summary(retry))
    cleared = plan(ctx, sheet)  # every job is in the journal: the rows still say it
    assert [row.price.unknown if row.price else None for row in cleared.preview()] == [
        f"{SET_IT} for account k2"] * 2


def test_a_price_must_be_more_than_nothing(ctx: CliContext) -> None:
    add_account(ctx, "gw", "openai-compat")
    for wrong in ("0", "-1", "cheap", "inf"):
        with pytest.raises(InputError, match="price per second"):
            cli(ctx, cmd_accounts.register, "accounts", "set", "gw", "--price-per-second", wrong)
    listed = on_journal(ctx, lambda s: accounts.get_account(s, "gw"))
    assert "price_per_second" not in listed.settings
