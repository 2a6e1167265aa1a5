"""``reelqueue run [SHEET]``: import a sheet (optional) and drain the queue headless.

Exit codes: 0 every job reached a final state (completed, failed or cancelled);
3 stalled (jobs wait but no usable account can take them); 4 the time budget ran out.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import signal
import time
from collections.abc import Awaitable, Callable
from dataclasses import replace
from pathlib import Path

from reelqueue.application import status, team, views
from reelqueue.application.compose import journal_mode
from reelqueue.application.config import EngineConfig
from reelqueue.application.events import EngineErrorEvent, Event, JobEvent
from reelqueue.application.session import DrainResult, Session
from reelqueue.application.words import OUTCOME_UNKNOWN, Condition, condition_words, job_state_words
from reelqueue.cli.context import CliContext
from reelqueue.domain.backoff import BackoffPolicy
from reelqueue.domain.errors import InputError
from reelqueue.domain.states import FINAL, JobState

EXIT_STALLED = 3
EXIT_BUDGET = 4
TEST_SAFETY_NET_ENV = "REELQUEUE_TEST_SAFETY_NET_SECONDS"
"""For tests only: the engine's safety-net wake-up (``EngineConfig.safety_net_seconds``),
raised by the tests of the wake-ups so that they cannot pass through it."""


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    run = sub.add_parser("run", help="import a sheet (optional) and render every job")
    run.add_argument("sheet", nargs="?", type=Path, help="CSV/XLSX/ODS/TXT of prompts")
    add_engine_arguments(run)
    run.add_argument("--provider", default="mock", help="provider of rows that name none")
    from reelqueue.cli.cmd_intake import add_route_arguments, add_takes_argument

    add_takes_argument(run)
    add_route_arguments(run)
    run.add_argument("--output-dir", type=Path, default=None, help="root folder of videos")
    run.add_argument("--allow-images-anywhere", action="store_true",
                     help="let rows name reference images outside the sheet's folder")
    run.add_argument("--max-spend", default=None, metavar="USD",
                     help="the sheet's batch starts no render past this spend in USD "
                          "('none': no cap)")
    run.set_defaults(handler=handle)


def add_engine_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--budget-seconds", type=float, default=None,
                        help="stop claiming new jobs after this many seconds")
    parser.add_argument("--max-attempts", type=int, default=3,
                        help="attempts per job for a newly imported sheet (default 3)")
    parser.add_argument("--lease-seconds", type=float, default=60.0)
    parser.add_argument("--retry-base", type=float, default=2.0,
                        help="first retry wait ceiling in seconds (full jitter)")
    parser.add_argument("--retry-cap", type=float, default=300.0)
    parser.add_argument("--max-video-mb", type=float, default=2048.0,
                        help="refuse or cut off a video download larger than this (MiB, "
                             "default 2048)")
    parser.add_argument("--download-minutes", type=float, default=30.0,
                        help="cut off one video download after this long (default 30)")
    parser.add_argument("--http-timeout", type=float, default=60.0, metavar="SECONDS",
                        help="read timeout of one provider request (default 60); a create "
                        "whose answer was lost is looked for once 2.5x this has passed")
    parser.add_argument("--no-progress", action="store_true", help="no progress display")


def engine_config(args: argparse.Namespace) -> EngineConfig:
    if args.max_video_mb <= 0 or args.download_minutes <= 0 or args.http_timeout <= 0:
        raise InputError("--max-video-mb, --download-minutes and --http-timeout must be "
                         "positive.")
    return EngineConfig(
        safety_net_seconds=_safety_net_for_tests(),
        http_timeout_seconds=args.http_timeout,
        lease_seconds=args.lease_seconds,
        heartbeat_seconds=max(0.5, args.lease_seconds / 3),
        retry_backoff=BackoffPolicy(args.retry_base, args.retry_cap),
        download_max_bytes=int(args.max_video_mb * 1024 * 1024),
        download_deadline_seconds=args.download_minutes * 60.0,
    )


def _safety_net_for_tests() -> float:
    default = EngineConfig.safety_net_seconds
    text = os.environ.get(TEST_SAFETY_NET_ENV)
    if not text:
        return default
    try:
        seconds = float(text)
    except ValueError:
        seconds = -1.0
    if not 1.0 <= seconds <= 3600.0:  # also refuses nan and inf
        raise InputError(f"{TEST_SAFETY_NET_ENV}={text!r} is not a number of seconds from "
                         "1 to 3600.")
    return seconds


def handle(args: argparse.Namespace, ctx: CliContext) -> int:
    if args.max_attempts < 1:
        raise InputError("--max-attempts must be at least 1.")
    if getattr(args, "max_spend", None) is not None:
        if args.sheet is None:
            raise InputError("--max-spend caps the batch of the sheet given to run; for a "
                             "batch already imported: 'reelqueue batch cap BATCH USD'.")
        from reelqueue.cli.cmd_spend import parse_usd

        parse_usd(args.max_spend)  # refused before anything is imported
    # This run's videos folder: --output-dir, else --videos-dir. Every job's file is
    # resolved under it (the journal keeps paths relative to it: issue 23).
    config = replace(engine_config(args),
                     videos_dir=(args.output_dir or ctx.videos_dir).expanduser().absolute())
    # On a team database: take over expired leases only (application/team_seam.py).
    config = journal_mode(ctx).engine_config(config)

    async def before(session: Session) -> None:
        for line in session.mode.connection_warnings(session.journal.sync):
            ctx.print(line)
        if args.sheet is not None:
            await import_sheet(ctx, session, args)

    return run_headless(ctx, config, budget=args.budget_seconds,
                        progress=not args.no_progress, before=before)


async def import_sheet(ctx: CliContext, session: Session, args: argparse.Namespace) -> None:
    """The same import as ``reelqueue import`` (saved column mapping, row errors, refusal
    of a whole sheet), in the journal this run already holds."""
    from reelqueue.application.imports import ImportOptions
    from reelqueue.cli.cmd_intake import import_for_run, route_options

    if not args.sheet.is_file():
        raise InputError(f"{args.sheet} does not exist or is not a file.")
    options = ImportOptions(provider=args.provider,
                            output_root=(args.output_dir or ctx.videos_dir),
                            max_attempts=args.max_attempts,
                            allow_images_anywhere=args.allow_images_anywhere,
                            takes=getattr(args, "takes", 1), **route_options(args))
    capped = getattr(args, "max_spend", None) is not None
    usd = None
    if capped:
        from reelqueue.cli.cmd_spend import parse_usd

        usd = parse_usd(args.max_spend)
    result = await import_for_run(ctx, session, args.sheet, options, max_spend=usd,
                                  set_max_spend=capped)
    if capped:
        ctx.print(f"Spend cap of batch {result.batch_id}: "
                  + ("none." if usd is None else f"${usd:.2f}."))


def run_headless(ctx: CliContext, config: EngineConfig, *, budget: float | None,
                 progress: bool, paused: bool = False,
                 before: Callable[[Session], Awaitable[None]] | None = None) -> int:
    """Open a session on the journal (holding the lock), run ``before`` (an import), drain
    the queue, print the summary; return the exit code."""

    async def main() -> int:
        session = Session(ctx)
        await session.open_journal()
        try:
            if before is not None:
                await before(session)
            result = await drive(ctx, session, config, budget=budget, progress=progress,
                                 paused=paused)
            return await finish(ctx, session, result)
        finally:
            await session.stop()

    return asyncio.run(main())


async def drive(ctx: CliContext, session: Session, config: EngineConfig, *,
                budget: float | None, progress: bool, paused: bool = False) -> DrainResult:
    """Start the engine on the session (recovery first), render until the queue is
    drained, the budget is spent or a signal comes; stop the engine (renders in flight
    are reattached next time)."""
    await status.check_output_folders(
        session, config.videos_dir or ctx.videos_dir.expanduser().absolute())
    if not await session.journal.list_accounts():
        raise InputError("There is no account to render with. Add one with 'reelqueue "
                         "accounts add NAME --provider P', or try 'reelqueue demo'.")
    printer = ProgressPrinter(ctx, session, enabled=progress)
    session.bus.subscribe(printer.on_event)
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(signum, stop.set)
    report = await session.start(config, paused=paused)
    # On a team database: listed in the instances registry, and woken by the database
    # whatever another machine or process commits (application/team_seam.py).
    await team.join(session)
    for problem in session.keyring_problems:
        ctx.print(f"Keyring: {problem}")
    ctx.print(report.summary())
    engine = session.running_engine
    ticker = asyncio.create_task(printer.tick_forever())
    drain = asyncio.create_task(engine.run_until_drained(budget_seconds=budget))
    stopper = asyncio.create_task(stop.wait())
    try:
        await asyncio.wait({drain, stopper}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        ticker.cancel()
        stopper.cancel()
        drain.cancel()
        with contextlib.suppress(Exception):  # a team database gone: the lease ends it
            await team.leave(session)
        await session.stop_engine()
        await printer.tick(final=True)
    if drain.done() and not drain.cancelled():
        return drain.result()
    ctx.print("Stopped; renders in flight are reattached the next time ReelQueue starts.")
    return DrainResult("stopped")


def _name(state: str) -> str:
    return job_state_words(state).name


async def finish(ctx: CliContext, session: Session, result: DrainResult) -> int:
    journal = session.journal
    counts = (await journal.counts()).by_state
    attention = await status.needs_user(session)
    # Each state by its one name (application.words); a create of unknown outcome is
    # neither parked nor failed (it is PARKED, or FAILED by an older ReelQueue).
    unknown = len(attention.submit_unknown)
    parked = len(attention.parked)
    unknown_failed = unknown - (counts.get("PARKED", 0) - parked)
    said = [f"{counts.get(JobState.COMPLETED, 0)} {_name(JobState.COMPLETED)}",
            f"{counts.get(JobState.FAILED, 0) - unknown_failed} {_name(JobState.FAILED)}",
            f"{counts.get(JobState.CANCELLED, 0)} {_name(JobState.CANCELLED)}"]
    said += [f"{parked} {_name(JobState.PARKED)}"] if parked else []
    said += [f"{unknown} {_name(OUTCOME_UNKNOWN)}"] if unknown else []
    ctx.print(f"Finished: {', '.join(said)}.")
    # Jobs that wait on the user (parked renders, creates of unknown outcome), each with
    # what to run next: they are not plain failures to retry blindly.
    for line in status.attention_sentences(attention):
        ctx.print(f"Needs attention: {line}")
    if result.outcome == "stalled":
        if "because of a spend cap" in result.detail:
            advice = ("Raise the cap ('reelqueue batch cap BATCH USD' or 'reelqueue accounts "
                      "set NAME --daily-cap USD', 'none' to lift it) and run again")
        else:
            advice = "Fix the account ('reelqueue accounts test NAME') and run again"
        stalled = condition_words(Condition.STALLED).name.capitalize()
        ctx.print(f"{stalled}: {result.detail}. {advice}; nothing was failed.")
        return EXIT_STALLED
    if result.outcome == "budget":
        ctx.print(f"Time budget reached: {result.detail}. Run again to continue.")
        return EXIT_BUDGET
    if result.outcome == "stopped":
        return 130
    return 0


class ProgressPrinter:
    """A one-line progress display fed by events and a once-a-second count, read on the
    journal's thread through the session (never from another thread)."""

    def __init__(self, ctx: CliContext, session: Session, *, enabled: bool) -> None:
        self.ctx = ctx
        self.session = session
        self.enabled = enabled
        self.tty = enabled and ctx.out.isatty()
        self.started = time.monotonic()
        self.last_line = 0.0
        self.first_done: tuple[float, int] | None = None

    def on_event(self, event: Event) -> None:
        if isinstance(event, JobEvent) and event.state == "FAILED":
            self._line(f"job {event.job_id} {_name(JobState.FAILED)}: {event.error_label}: "
                       f"{(event.error_message or '')[:160]}")
        elif isinstance(event, EngineErrorEvent):
            self._line(f"error: {event.message}")

    def _line(self, text: str) -> None:
        if self.tty:
            self.ctx.out.write("\r\x1b[K")
        self.ctx.print(text)

    async def tick_forever(self) -> None:
        while True:
            await asyncio.sleep(1.0)
            await self.tick()

    async def tick(self, final: bool = False) -> None:
        if not self.enabled:
            return
        now = time.monotonic()
        if not self.tty and not final and now - self.last_line < 5:
            return
        self.last_line = now
        counts = await views.counts(self.session)
        by = counts.by_state
        total = sum(by.values())
        done = by.get("COMPLETED", 0)
        final_n = sum(by.get(s.value, 0) for s in FINAL)
        live = sum(counts.live_by_account.values())
        waiting = by.get("QUEUED", 0) + by.get("RETRY_WAIT", 0)
        elapsed = now - self.started
        if self.first_done is None and final_n:
            self.first_done = (now, final_n)
        eta = ""
        # An ETA from the finishing rate, only while jobs still wait for a slot: once the
        # last renders are in flight the rate says nothing about when they end (it fell
        # and the "ETA" grew while the demo's last wave rendered).
        if waiting and self.first_done and final_n > self.first_done[1]:
            rate = (final_n - self.first_done[1]) / max(1e-6, now - self.first_done[0])
            eta = f" · ETA {_duration((total - final_n) / rate)}" if rate > 0 else ""
        accounts = " ".join(f"{name}:{n}" for name, n in sorted(counts.live_by_account.items()))
        line = (f"{done}/{total} done · {by.get('FAILED', 0)} {_name(JobState.FAILED)} · "
                f"{live} rendering"
                f" · {waiting} waiting · {_duration(elapsed)}{eta}"
                + (f" · {accounts}" if accounts else ""))
        if self.tty:
            self.ctx.out.write("\r\x1b[K" + line + ("\n" if final else ""))
            self.ctx.out.flush()
        else:
            self.ctx.print(line)


def _duration(seconds: float) -> str:
    seconds = int(max(0, seconds))
    if seconds < 60:
        return f"{seconds}s"
    if seconds < 3600:
        return f"{seconds // 60}m{seconds % 60:02d}s"
    return f"{seconds // 3600}h{(seconds % 3600) // 60:02d}m"

