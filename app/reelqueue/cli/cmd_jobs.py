"""``reelqueue retry`` and ``reelqueue cancel``: the user's commands on jobs."""

from __future__ import annotations

import argparse
import sys

from reelqueue.cli.context import CliContext
from reelqueue.domain.states import JobState
from reelqueue.engine.retry_plan import plan_retry


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    retry = sub.add_parser(
        "retry", help="put failed, cancelled or parked jobs back in the queue",
        description="A job whose render may still exist at the provider is read again "
        "first (finished: downloaded, running: reattached, no charge); only a render the "
        "provider says is gone is created again. Says what it will do and cost first.")
    retry.add_argument("job_ids", nargs="*", type=int)
    retry.add_argument("--failed", action="store_true",
                       help="every failed and parked job (permanent failures only with "
                       "--include-permanent)")
    retry.add_argument("--include-permanent", action="store_true",
                       help="with --failed: also content-policy, invalid-input and "
                       "outcome-unknown failures")
    retry.add_argument("--new-seed", type=int, default=None,
                       help="a different video: every job is rendered again (paid)")
    retry.add_argument("--yes", "-y", action="store_true", help="do not ask before paying")
    retry.set_defaults(handler=handle_retry)
    cancel = sub.add_parser("cancel", help="cancel jobs (not yet finished)")
    cancel.add_argument("job_ids", nargs="+", type=int)
    cancel.set_defaults(handler=handle_cancel)


def handle_retry(args: argparse.Namespace, ctx: CliContext) -> int:
    with ctx.open_store() as store:
        ids = list(args.job_ids)
        if args.failed:
            ids += [j.id for j in store.list_jobs(states=[JobState.FAILED, JobState.PARKED])]
        jobs = {job_id: job for job_id in ids if (job := store.get_job(job_id)) is not None}
        # Named jobs are retried as asked; --failed leaves permanent failures out unless
        # --include-permanent (they would most likely fail again, at a price).
        plan = plan_retry(ids, jobs, new_seed=args.new_seed,
                          include_permanent=args.include_permanent or not args.failed)
        ctx.print(f"Retry: {plan.summary()}")
        if not plan.job_ids:
            return 0
        if plan.rerender and not args.yes and sys.stdin.isatty():
            ctx.out.write("Go ahead? [y/N] ")
            ctx.out.flush()
            if sys.stdin.readline().strip().lower() not in ("y", "yes"):
                ctx.print("Nothing was changed.")
                return 1
        done = store.requeue_jobs(plan.job_ids, ctx.clock.now(), new_seed=args.new_seed)
    ctx.print(f"{len(done)} jobs queued again." + ("" if len(done) == len(plan.job_ids) else
              f" {len(plan.job_ids) - len(done)} changed meanwhile and were left alone."))
    return 0


def handle_cancel(args: argparse.Namespace, ctx: CliContext) -> int:
    with ctx.open_store() as store:
        done = store.cancel_jobs(args.job_ids, ctx.clock.now())
    ctx.print(f"{len(done)} jobs cancelled.")
    return 0
