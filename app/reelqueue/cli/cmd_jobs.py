"""The user's commands on jobs and batches: ``retry``, ``cancel``, ``prioritize`` and
``batch pause|resume|list``."""

from __future__ import annotations

import argparse
import sys

from reelqueue.cli.context import CliContext
from reelqueue.domain.errors import InputError
from reelqueue.domain.models import Batch
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
    retry.add_argument("--parked", action="store_true",
                       help="every parked job: its render is read again (no new render)")
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
    with ctx.open_store() as store:
        ids = list(args.job_ids)
        if args.failed:
            ids += [j.id for j in store.list_jobs(states=[JobState.FAILED, JobState.PARKED])]
        if args.parked:
            ids += [j.id for j in store.list_jobs(states=[JobState.PARKED])]
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


def find_batch(batches: list[Batch], ref: str) -> Batch:
    """A batch by its number, else by its name (case-insensitive, must be unique)."""
    if ref.strip().isdigit():
        for batch in batches:
            if batch.id == int(ref):
                return batch
    named = [b for b in batches if b.name.casefold() == ref.strip().casefold()]
    if len(named) == 1:
        return named[0]
    if named:
        raise InputError(f"{len(named)} batches are named {ref!r} (numbers "
                         f"{', '.join(str(b.id) for b in named)}): give the number.")
    raise InputError(f"There is no batch {ref!r}; 'reelqueue batch list' shows them.")


def handle_prioritize(args: argparse.Namespace, ctx: CliContext) -> int:
    if not args.job_ids and args.batch is None:
        raise InputError("Name the jobs to move, or a batch with --batch.")
    with ctx.open_store() as store:
        now = ctx.clock.now()
        if args.batch is not None:
            batch = find_batch(store.list_batches(), args.batch)
            result = store.prioritize_batch(batch.id, now, priority=args.priority)
            ctx.print(f"Batch {batch.id} ({batch.name}): {_jobs(result.changed, 'unfinished')}"
                      f" {_moved(result.priority, front=args.priority is None)}.")
        if args.job_ids:
            result = store.prioritize_jobs(args.job_ids, now, priority=args.priority)
            left = len(set(args.job_ids)) - result.changed
            ctx.print(f"{_jobs(result.changed)} "
                      f"{_moved(result.priority, front=args.priority is None)}."
                      + (f" {_jobs(left)} already finished or unknown, left alone."
                         if left else ""))
    return 0


def _jobs(n: int, adjective: str = "") -> str:
    return f"{n} {adjective + ' ' if adjective else ''}job{'s' if n != 1 else ''}"


def _moved(priority: int, *, front: bool) -> str:
    return (f"moved to the front (priority {priority})" if front
            else f"given priority {priority}")


def handle_batch_pause(args: argparse.Namespace, ctx: CliContext) -> int:
    with ctx.open_store() as store:
        batch = find_batch(store.list_batches(), args.batch)
        store.set_batch_paused(batch.id, args.paused, ctx.clock.now())
    if args.paused:
        ctx.print(f"Batch {batch.id} ({batch.name}) paused: its waiting jobs are not started; "
                  "renders already running finish. 'reelqueue batch resume "
                  f"{batch.id}' starts them again.")
    else:
        ctx.print(f"Batch {batch.id} ({batch.name}) resumed.")
    return 0


def handle_batch_list(args: argparse.Namespace, ctx: CliContext) -> int:
    with ctx.open_store() as store:
        batches = store.list_batches()
        for batch in batches:
            jobs = store.list_jobs(batch_id=batch.id)
            open_jobs = sum(1 for j in jobs if j.state not in (
                JobState.COMPLETED, JobState.FAILED, JobState.CANCELLED))
            paused = " · paused" if batch.settings.get("paused") else ""
            ctx.print(f"{batch.id:>4}  {batch.name}  {len(jobs)} jobs, {open_jobs} "
                      f"unfinished{paused}")
    if not batches:
        ctx.print("No batch yet: import a sheet first.")
    return 0
