"""``reelqueue review``: a batch's takes by row, a decision on a take, and the re-roll of
the rows whose takes were all rejected (issue 35 items 3 and 4; docs/review.md).

- ``reelqueue review BATCH [--json]``
- ``reelqueue review set JOB pick|reject|clear [--rating N] [--by NAME]``
- ``reelqueue review reroll BATCH [--per-row N] [--same-request] [--yes] [--json]``

A decision changes nothing an engine keeps in memory, so ``review`` and ``review set`` run
beside a window or ``run`` holding the folder (``lock=False``); a re-roll adds jobs and
follows the folder's rule (cli/journal.py).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys

from reelqueue.application import review
from reelqueue.application.imports import find_batch
from reelqueue.application.jobs import batches
from reelqueue.application.review_words import decided_words, decision_words
from reelqueue.application.session import Session
from reelqueue.application.words import job_state_words
from reelqueue.cli.context import CliContext
from reelqueue.cli.journal import run_on_journal
from reelqueue.domain.errors import InputError
from reelqueue.domain.review import ReviewWritten

__all__ = ["register"]

USAGE = ("reelqueue review BATCH [--json] | review set JOB pick|reject|clear [--rating N] | "
         "review reroll BATCH [--per-row N] [--yes]")


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    parser = sub.add_parser(
        "review", help="the takes of a batch by row; pick, reject or re-roll them",
        usage=USAGE, formatter_class=argparse.RawDescriptionHelpFormatter,
        description="review BATCH: each row's takes and their decisions (12 of 15 reviewed)\n"
        "review set JOB pick|reject|clear [--rating N]: decide on one take (one pick per\n"
        "  row: picking another take moves the pick; failed or cancelled takes are refused)\n"
        "review reroll BATCH: a new take (new seed) of each row with no pick, a reject and\n"
        "  no take left to review; priced first, and the amount you confirm is its spend\n"
        "  cap (a crash and a restart cannot pass it). See docs/review.md.")
    parser.add_argument("words", nargs="+", metavar="BATCH | set JOB DECISION | reroll BATCH")
    parser.add_argument("--json", action="store_true", help="the answer as JSON")
    parser.add_argument("--rating", type=int, default=None,
                        help="review set: a rating 1-5 (0 removes it)")
    parser.add_argument("--by", default=None,
                        help="review set / reroll: the reviewer's name (default: your "
                        "user name)")
    parser.add_argument("--per-row", type=int, default=1,
                        help=f"review reroll: new takes per row (1-{review.MAX_PER_ROW})")
    parser.add_argument("--same-request", action="store_true",
                        help="review reroll: rows whose provider takes no seed are "
                        "rendered again as they are (the same request, paid again)")
    parser.add_argument("--yes", "-y", action="store_true",
                        help="review reroll: do not ask before paying")
    parser.set_defaults(handler=handle_review)


def handle_review(args: argparse.Namespace, ctx: CliContext) -> int:
    words = list(args.words)
    if words[0] == "set":
        if len(words) != 3:
            raise InputError(f"Say: {USAGE.split(' | ')[1]}.")
        return _set(args, ctx, _job_id(words[1]), words[2])
    if words[0] == "reroll":
        if len(words) != 2:
            raise InputError("Say: reelqueue review reroll BATCH [--per-row N] [--yes].")
        return _reroll(args, ctx, words[1])
    if len(words) != 1:
        raise InputError(f"Say: {USAGE}.")
    return _show(args, ctx, words[0])


def _job_id(text: str) -> int:
    if not text.strip().isdigit():
        raise InputError(f"{text!r} is not a job number.")
    return int(text)


async def _batch_id(session: Session, ref: str) -> int:
    return find_batch(await batches(session), ref).id


def _show(args: argparse.Namespace, ctx: CliContext, ref: str) -> int:
    async def show(session: Session) -> review.BatchTakes:
        return await review.batch_takes(session, await _batch_id(session, ref))

    # Reading only: beside a window or a run holding the folder.
    takes = run_on_journal(ctx, show, lock=False)
    if args.json:
        ctx.print(json.dumps(takes.as_dict(), indent=2))
        return 0
    batch = takes.batch
    reroll = len(takes.to_reroll)
    ctx.print(f"Batch {batch.id} ({batch.name}): {takes.progress_words}"
              + (f"; {reroll} row{'s' if reroll != 1 else ''} to re-roll "
                 f"('reelqueue review reroll {batch.id}')" if reroll else ""))
    for group in takes.groups:
        first = group.first
        row = f"row {first.row_number}" if first.row_number is not None else "row"
        ctx.print(f"{row} ({first.name}): {group.state_words}")
        for take in group.takes:
            state = job_state_words(str(take.state), take.sub_status,
                                    take.error_label).name
            by = decided_words(take.review)
            ctx.print(f"  take {take.id}  {state:<12} {decision_words(take.review)}"
                      + (f"  {by}" if by else ""))
    return 0


def _set(args: argparse.Namespace, ctx: CliContext, job_id: int, word: str) -> int:
    decision = review.parse_decision(word)
    rating = review.rating_arg(args.rating)

    async def decide(session: Session) -> ReviewWritten:
        return await review.set_decision(session, job_id, decision, rating=rating,
                                         by=args.by)

    # A decision is no engine's state: written beside a window or a run (lock=False).
    written = run_on_journal(ctx, decide, lock=False)
    if args.json:
        ctx.print(json.dumps(written.as_dict(), indent=2))
        return 0
    moved = "".join(f" (the pick moved from take {m})" for m in written.moved_from)
    ctx.print(f"Take {job_id}: {decision_words(written.review)}{moved}.")
    return 0


def _reroll(args: argparse.Namespace, ctx: CliContext, ref: str) -> int:
    async def reroll(session: Session) -> tuple[review.RerollPlan, review.RerollDone | None]:
        batch_id = await _batch_id(session, ref)
        plan = await review.reroll_plan(session, batch_id, per_row=args.per_row,
                                        same_request=args.same_request)
        if not args.json:
            ctx.print(f"Re-roll: {plan.words}")
        if not plan.specs:
            return plan, None
        if not args.yes:
            if not sys.stdin.isatty():
                ctx.print("Nothing was changed: say --yes to pay for the re-roll.")
                return plan, None
            ctx.out.write(f"Re-roll for up to est. ${plan.usd:.2f}? [y/N] ")
            ctx.out.flush()
            answer = await asyncio.to_thread(sys.stdin.readline)
            if answer.strip().lower() not in ("y", "yes"):
                ctx.print("Nothing was changed.")
                return plan, None
        done = await review.reroll(session, batch_id, confirmed_usd=plan.usd,
                                   per_row=args.per_row, same_request=args.same_request,
                                   by=args.by)
        return plan, done

    plan, done = run_on_journal(ctx, reroll)
    if args.json:
        ctx.print(json.dumps(done.as_dict() if done is not None else plan.as_dict(),
                             indent=2))
    elif done is not None and done.batch_id is not None:
        ctx.print(f"Re-roll: batch {done.batch_id}, {len(done.job_ids)} new takes queued, "
                  f"spend cap ${done.cap:.2f}; 'reelqueue run' renders them.")
    return 0 if done is not None or not plan.specs else 1
