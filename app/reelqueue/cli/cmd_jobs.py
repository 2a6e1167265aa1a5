"""The user's commands on jobs and batches: ``retry``, ``cancel``, ``prioritize`` and
``batch pause|resume|list``."""

from __future__ import annotations

import argparse
import asyncio
import sys
import time

from reelqueue.application import jobs
from reelqueue.application.imports import find_batch
from reelqueue.application.jobs import RetryPlan
from reelqueue.application.retry_words import retry_summary
from reelqueue.application.session import Session
from reelqueue.application.words import Condition, condition_words
from reelqueue.cli.context import CliContext
from reelqueue.cli.journal import run_on_journal
from reelqueue.domain.errors import InputError
from reelqueue.domain.models import Batch

__all__ = ["batch_commands", "find_batch", "register"]


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    retry = sub.add_parser(
        "retry", help="put failed, cancelled or parked jobs back in the queue (with "
        "--new-seed, finished ones are rendered again as new jobs)",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Says what it will do and cost first; what it does depends on the row:\n"
        "  a render kept (finished, running, parked after crashes): read again, no charge;\n"
        "    created again only if the provider says the render is gone (priced, asked)\n"
        "  a create whose outcome is unknown, where the account's records can be searched:\n"
        "    looked for first, no charge; created again only if they prove it never\n"
        "    arrived (fal's history cannot prove that: not found, it stays for you)\n"
        "  a create whose outcome is unknown that cannot be looked for: left out by\n"
        "    --failed and --parked; with --include-permanent or named, it is created\n"
        "    again and may be paid twice: said with its price and asked (--yes to agree;\n"
        "    refused without --yes when no terminal can ask)\n"
        "  anything else (a failure before any render): rendered again, with its price")
    retry.add_argument("job_ids", nargs="*", type=int)
    retry.add_argument("--failed", action="store_true",
                       help="every failed and parked job (permanent failures and unknown "
                       "creates that cannot be looked for only with --include-permanent)")
    retry.add_argument("--parked", action="store_true",
                       help="every parked job: a kept render is read again and an unknown "
                       "create is looked for in the provider's records (no new render, no "
                       "charge); unknown creates that cannot be looked for are left out "
                       "(--include-permanent creates them again, asked first)")
    retry.add_argument("--include-permanent", action="store_true",
                       help="with --failed or --parked: also content-policy and "
                       "invalid-input failures, and unknown creates that cannot be looked "
                       "for (created again: may be paid twice)")
    retry.add_argument("--new-seed", type=int, default=None,
                       help="a different video: every job is rendered again (paid); a "
                       "completed job is kept and a new job beside it renders the seed "
                       "(its own file, '-seed<N>')")
    retry.add_argument("--yes", "-y", action="store_true", help="do not ask before paying")
    retry.set_defaults(handler=handle_retry)
    resolve = sub.add_parser(
        "resolve", help="settle a job whose submit outcome is unknown",
        description="A create whose answer was lost is looked for in the provider's records "
        "where the provider lists them; when that could not settle it, the job waits for "
        "you (not failed, holding no slot). Without an option: what was found. --render "
        "ID: that render is this job's (read and downloaded, never created again). "
        "--create-again: it is not there; render anew (charged again; the first create may "
        "already be charged).")
    resolve.add_argument("job_id", type=int)
    how = resolve.add_mutually_exclusive_group()
    how.add_argument("--render", metavar="ID", default=None,
                     help="the provider's id of this job's render (from its dashboard or "
                     "the candidates listed)")
    how.add_argument("--create-again", action="store_true",
                     help="render anew: the first create may already be charged")
    resolve.add_argument("--yes", "-y", action="store_true", help="do not ask before paying")
    resolve.set_defaults(handler=handle_resolve)
    cancel = sub.add_parser("cancel", help="cancel jobs (not yet finished)")
    cancel.add_argument("job_ids", nargs="+", type=int)
    cancel.set_defaults(handler=handle_cancel)
    prioritize = sub.add_parser(
        "prioritize", help="move jobs or a whole batch to the front of the queue",
        description="Claims take the highest priority first, then the oldest job. Without "
        "--priority the jobs go to the front (one above the highest waiting job).")
    prioritize.add_argument("job_ids", nargs="*", type=int)
    prioritize.add_argument("--batch", default=None, help="every unfinished job of this "
                            "batch (its number or name)")
    prioritize.add_argument("--priority", type=int, default=None,
                            help="this priority instead of the front (0 is the default; "
                            "higher goes first, negative goes last)")
    prioritize.set_defaults(handler=handle_prioritize)
    batch_commands(sub)


def batch_commands(sub: argparse._SubParsersAction) -> argparse._SubParsersAction:  # type: ignore[type-arg]
    """``reelqueue batch ACTION``: the sub-commands of one batch. Returns the ``ACTION``
    parsers so other commands on a batch can join them (created once, whoever is first)."""
    parser = sub.choices.get("batch")
    if parser is None:
        parser = sub.add_parser("batch", help="list, pause or resume a batch")
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            actions = action
            break
    else:
        actions = parser.add_subparsers(dest="batch_action", metavar="ACTION", required=True)
    for name, paused, text in (
            ("pause", True, "its waiting jobs are not started (renders in flight finish)"),
            ("resume", False, "its jobs are started again")):
        cmd = actions.add_parser(name, help=f"{name} a batch: {text}")
        cmd.add_argument("batch", help="the batch's number or name ('batch list')")
        cmd.set_defaults(handler=handle_batch_pause, paused=paused)
    listing = actions.add_parser("list", help="every batch, its jobs and whether it is paused")
    listing.set_defaults(handler=handle_batch_list)
    return actions


def handle_retry(args: argparse.Namespace, ctx: CliContext) -> int:
    variants: list[str] = []

    async def retry(session: Session) -> tuple[RetryPlan, list[int] | None]:
        ids = list(args.job_ids)
        ids += await jobs.failed_job_ids(session, failed=args.failed)
        ids += await jobs.failed_job_ids(session, failed=False, parked=args.parked)
        # Named jobs are retried as asked; --failed leaves permanent failures out unless
        # --include-permanent (they would most likely fail again, at a price).
        plan = await jobs.retry_plan(session, ids, new_seed=args.new_seed,
                                     include_permanent=args.include_permanent
                                     or not (args.failed or args.parked))
        ctx.print(f"Retry: {retry_summary(plan)}")
        if not plan.job_ids:
            return plan, []
        if plan.pays and not args.yes:
            if sys.stdin.isatty():
                ctx.out.write("Go ahead? [y/N] ")
                ctx.out.flush()
                answer = await asyncio.to_thread(sys.stdin.readline)
                if answer.strip().lower() not in ("y", "yes"):
                    ctx.print("Nothing was changed.")
                    return plan, None
            elif plan.maybe_charged:
                # A create that may already be paid is created again only on the user's
                # word: with no terminal to ask, that word is --yes (issue 32).
                ctx.print("Nothing was changed: this retry may pay twice for "
                          f"{len(plan.maybe_charged)} create(s) whose outcome is unknown; "
                          "run it again with --yes to agree, or without naming them.")
                return plan, None
        done = await jobs.retry(session, plan.job_ids, new_seed=args.new_seed,
                                create_again=plan.create_again)
        for job_id in done:
            job = await session.journal.get_job(job_id)
            if job is not None and job_id not in plan.job_ids:
                variants.append(f"New job {job.id}: job {job.metadata.get('variant_of')} "
                                f"again with seed {job.params.get('seed')}, into "
                                f"{job.output_path} (job {job.metadata.get('variant_of')} "
                                "and its video are kept).")
        return plan, done

    plan, done = run_on_journal(ctx, retry)
    if done is None:
        return 1
    if not plan.job_ids:
        return 0
    for line in variants:
        ctx.print(line)
    if len(variants) < len(plan.variants):
        n = len(plan.variants) - len(variants)
        ctx.print(f"{n} finished job{'s' if n != 1 else ''} already had a job for seed "
                  f"{args.new_seed}: nothing was added for {'them' if n != 1 else 'it'}.")
    requeued = len(done) - len(variants)
    expected = len(plan.job_ids) - len(plan.variants)
    if expected:
        ctx.print(f"{requeued} jobs queued again." + ("" if requeued == expected else
                  f" {expected - requeued} changed meanwhile and were left alone."))
    return 0


def handle_resolve(args: argparse.Namespace, ctx: CliContext) -> int:
    async def resolve(session: Session) -> int:
        if args.render is not None:
            await jobs.resolve_with_render(session, args.job_id, args.render)
            ctx.print(f"Job {args.job_id}: render {args.render} is read from the provider "
                      "(no new render, no new charge).")
            return 0
        if args.create_again:
            plan = await jobs.retry_plan(session, [args.job_id], create_again=True)
            ctx.print(f"Resolve: {retry_summary(plan)}")
            if not args.yes and sys.stdin.isatty():
                ctx.out.write("Render it again? [y/N] ")
                ctx.out.flush()
                answer = await asyncio.to_thread(sys.stdin.readline)
                if answer.strip().lower() not in ("y", "yes"):
                    ctx.print("Nothing was changed.")
                    return 1
            await jobs.resolve_by_creating_again(session, args.job_id)
            ctx.print(f"Job {args.job_id} is queued to be rendered again (a deliberate "
                      "re-render, written in the ledger with its price).")
            return 0
        unknown = await jobs.unknown_candidates(session, args.job_id)
        ctx.print(unknown.words)
        evidence = await jobs.unknown_create_evidence(session, args.job_id)
        ctx.print(evidence.words)
        for c in unknown.candidates:
            created = ("" if c.get("created_at") is None else " created "
                       + time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(c["created_at"])))
            ctx.print(f"  {c.get('id')}{created} ({c.get('status')})")
        return 0

    return int(run_on_journal(ctx, resolve))


def handle_cancel(args: argparse.Namespace, ctx: CliContext) -> int:
    done = run_on_journal(ctx, lambda session: jobs.cancel(session, args.job_ids))
    ctx.print(f"{len(done)} jobs cancelled.")
    return 0


def handle_prioritize(args: argparse.Namespace, ctx: CliContext) -> int:
    if not args.job_ids and args.batch is None:
        raise InputError("Name the jobs to move, or a batch with --batch.")

    async def prioritize(session: Session) -> None:
        if args.batch is not None:
            batch = find_batch(await jobs.batches(session), args.batch)
            result = await jobs.prioritize_batch(session, batch.id, priority=args.priority)
            ctx.print(f"Batch {batch.id} ({batch.name}): {_jobs(result.changed, 'unfinished')}"
                      f" {_moved(result.priority, front=args.priority is None)}.")
        if args.job_ids:
            result = await jobs.prioritize_jobs(session, args.job_ids, priority=args.priority)
            left = len(set(args.job_ids)) - result.changed
            ctx.print(f"{_jobs(result.changed)} "
                      f"{_moved(result.priority, front=args.priority is None)}."
                      + (f" {_jobs(left)} already finished or unknown, left alone."
                         if left else ""))

    run_on_journal(ctx, prioritize)
    return 0


def _jobs(n: int, adjective: str = "") -> str:
    return f"{n} {adjective + ' ' if adjective else ''}job{'s' if n != 1 else ''}"


def _moved(priority: int, *, front: bool) -> str:
    return (f"moved to the front (priority {priority})" if front
            else f"given priority {priority}")


def handle_batch_pause(args: argparse.Namespace, ctx: CliContext) -> int:
    async def pause(session: Session) -> Batch:
        batch = find_batch(await jobs.batches(session), args.batch)
        await jobs.set_batch_paused(session, batch.id, args.paused)
        return batch

    batch = run_on_journal(ctx, pause)
    if args.paused:
        ctx.print(f"Batch {batch.id} ({batch.name}) paused: its waiting jobs are not started; "
                  "renders already running finish. 'reelqueue batch resume "
                  f"{batch.id}' starts them again.")
    else:
        ctx.print(f"Batch {batch.id} ({batch.name}) resumed.")
    return 0


def handle_batch_list(args: argparse.Namespace, ctx: CliContext) -> int:
    summaries = run_on_journal(ctx, jobs.list_batches)
    for summary in summaries:
        batch = summary.batch
        paused = f" · {condition_words(Condition.PAUSED).name}" if summary.paused else ""
        ctx.print(f"{batch.id:>4}  {batch.name}  {summary.jobs} jobs, {summary.unfinished} "
                  f"unfinished{paused}")
    if not summaries:
        ctx.print("No batch yet: import a sheet first.")
    return 0
