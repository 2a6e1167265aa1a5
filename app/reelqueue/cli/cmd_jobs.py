"""``reelqueue retry`` and ``reelqueue cancel``: the user's commands on jobs."""

from __future__ import annotations

import argparse

from reelqueue.cli.context import CliContext
from reelqueue.domain.states import JobState


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    retry = sub.add_parser("retry", help="put failed or cancelled jobs back in the queue")
    retry.add_argument("job_ids", nargs="*", type=int)
    retry.add_argument("--failed", action="store_true", help="every failed job")
    retry.add_argument("--new-seed", type=int, default=None)
    retry.set_defaults(handler=handle_retry)
    cancel = sub.add_parser("cancel", help="cancel jobs (not yet finished)")
    cancel.add_argument("job_ids", nargs="+", type=int)
    cancel.set_defaults(handler=handle_cancel)


def handle_retry(args: argparse.Namespace, ctx: CliContext) -> int:
    with ctx.open_store() as store:
        ids = list(args.job_ids)
        if args.failed:
            ids += [j.id for j in store.list_jobs(states=[JobState.FAILED])]
        done = store.requeue_jobs(ids, ctx.clock.now(), new_seed=args.new_seed)
    ctx.print(f"{len(done)} jobs queued again." + ("" if len(done) == len(ids) else
              f" {len(ids) - len(done)} were not failed or cancelled and were left alone."))
    return 0


def handle_cancel(args: argparse.Namespace, ctx: CliContext) -> int:
    with ctx.open_store() as store:
        done = store.cancel_jobs(args.job_ids, ctx.clock.now())
    ctx.print(f"{len(done)} jobs cancelled.")
    return 0
