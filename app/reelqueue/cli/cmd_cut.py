"""``reelqueue cut BATCH``: the batch's picked takes, in sheet order, as
``<batch folder>/cut/<batch>-cut-<n>.mp4`` with its ``.otio``, FCP XML and EDL
(application/cut.py). Reads the journal only, so it runs beside the window or ``run``.

Exit codes: 0 written; 2 nothing could be cut (no pick, a refused pick: said why).
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from reelqueue.application.cut import (
    INSTALL_HINT,
    CutOptions,
    CutRow,
    batch_rows,
    have_timeline,
    plan_cut,
    write_cut,
)
from reelqueue.application.session import Session
from reelqueue.cli.context import CliContext
from reelqueue.cli.journal import run_on_journal
from reelqueue.domain.models import Batch


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    cut = sub.add_parser(
        "cut", help="join the batch's picked takes, in sheet order, into one MP4 and a "
        "timeline (.otio, FCP XML, EDL) in <batch folder>/cut",
        description="Writes <batch folder>/cut/<batch>-cut-<n>.mp4 (a new n each time) and "
        "its .otio, .xml (FCP XML) and .edl (CMX 3600). A row without a pick is a gap "
        "(black). The MP4 is a stream copy when every pick is alike, else re-encoded "
        "(said before it starts). The timeline files need " + INSTALL_HINT + ".")
    cut.add_argument("batch", help="the batch's number or name ('batch list')")
    cut.add_argument("--pick", action="append", default=[], metavar="JOB",
                     help="the take to use for its row: a job id or key (repeatable, one "
                          "per row); without it, the review's picks ('reelqueue review')")
    cut.add_argument("--skip-gaps", action="store_true",
                     help="leave rows without a pick out instead of black gaps")
    cut.add_argument("--use-changed", action="store_true",
                     help="use a picked file even if it changed since it was rendered")
    cut.add_argument("--from-api", default=None, metavar="URL",
                     help="fetch takes held by another machine of the team through its "
                          "API (a read token in $REELQUEUE_API_TOKEN)")
    cut.add_argument("--api-cert", type=Path, default=None, metavar="FILE",
                     help="with --from-api: that machine's certificate to trust (its "
                          "self-signed one from 'reelqueue serve')")
    cut.set_defaults(handler=handle)


def handle(args: argparse.Namespace, ctx: CliContext) -> int:
    async def read(session: Session) -> tuple[Batch, list[CutRow]]:
        return await batch_rows(session, args.batch, args.pick)

    batch, rows = run_on_journal(ctx, read, lock=False)
    fetcher = None
    if args.from_api:
        from reelqueue.application.cut_fetch import TOKEN_VARIABLE, ApiFetcher

        fetcher = ApiFetcher(args.from_api, os.environ.get(TOKEN_VARIABLE),
                             certificate=args.api_cert)
    try:
        plan = plan_cut(batch, rows, ctx.videos_dir,
                        CutOptions(skip_gaps=args.skip_gaps, use_changed=args.use_changed,
                                   fetch=fetcher))
    finally:
        if fetcher is not None:
            fetcher.close()
    for line in plan.left_out + plan.notes:
        ctx.print(f"Note: {line}.")
    ctx.print(f"Batch {batch.id} ({batch.name}): {plan.picks} pick"
              f"{'s' if plan.picks != 1 else ''}, {plan.gaps} gap"
              f"{'s' if plan.gaps != 1 else ''}, {plan.duration:.1f} s.")
    ctx.print(plan.method_words())
    if not have_timeline():
        ctx.print(f"Only the MP4 is written: the timeline files need {INSTALL_HINT}.")
    result = write_cut(plan)
    ctx.print(result.summary())
    for line in result.missing:
        ctx.print(f"Not written: {line}.")
    ctx.print(f"In {result.mp4.parent}")
    return 0
