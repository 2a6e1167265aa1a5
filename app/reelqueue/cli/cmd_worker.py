"""``reelqueue worker``: render for a team database headless, forever (issue 15), and
``reelqueue store-password URL``: keep the team database's password in the OS keyring.

The worker stops cleanly on SIGTERM or SIGINT: it stops claiming, leaves its renders in
flight (each with a ``stopped_in_flight`` ledger entry, so the resume is not counted as a
crash) and says goodbye in the instances registry; another instance takes the renders
over once their leases run out, by provider job id, never creating them again.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import getpass
import signal
import sys
from dataclasses import replace
from typing import TYPE_CHECKING

from reelqueue.application.compose import journal_mode
from reelqueue.application.config import EngineConfig
from reelqueue.application.events import EngineErrorEvent, Event, JobEvent
from reelqueue.application.providers import check_base_url
from reelqueue.application.session import Engine
from reelqueue.application.team import (
    check_team_url,
    clock_for_tests,
    clock_lines,
    database_key_ref,
    key_availability,
    run_worker,
    worker_keys,
)
from reelqueue.application.team_seam import TeamMode
from reelqueue.application.trust import TrustedKeys, describe_binding, keep_key
from reelqueue.application.words import job_state_words
from reelqueue.cli.cmd_run import add_engine_arguments, engine_config
from reelqueue.cli.context import CliContext
from reelqueue.cli.database_wait import add_wait_argument, wait_for_database
from reelqueue.domain.errors import InputError
from reelqueue.domain.states import JobState

if TYPE_CHECKING:
    from reelqueue.application.worker import PostgresStore


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    worker = sub.add_parser(
        "worker", help="render for the team database (--store URL) until SIGTERM")
    add_engine_arguments(worker)
    add_wait_argument(worker)
    worker.set_defaults(handler=handle_worker)
    password = sub.add_parser(
        "store-password",
        help="save the team database's password in the OS keyring (read from stdin)")
    password.add_argument("url", help="postgresql://user@host:port/db (no password in it)")
    password.set_defaults(handler=handle_store_password)
    key = sub.add_parser(
        "team-key", help="keep a team account's key in this machine's keyring (from stdin)")
    key.add_argument("name", help="the account, as the team database names it")
    key.set_defaults(handler=handle_team_key)


def handle_worker(args: argparse.Namespace, ctx: CliContext) -> int:
    if not journal_mode(ctx).shared:
        raise InputError("A worker renders for a team database: give --store "
                         "postgresql://user@host/db or set REELQUEUE_STORE.")
    # Every file this worker writes goes under its own videos folder (issue 23).
    config = replace(engine_config(args), videos_dir=ctx.videos_dir)
    with contextlib.ExitStack() as held:
        opened = wait_for_database(ctx, lambda: held.enter_context(ctx.open_store()),
                                   args.wait_for_database)
        if opened is None:
            ctx.print("Worker stopped while waiting for the team database; nothing was "
                      "claimed.")
            return 0
        store = TeamMode.team_store(opened)  # --store: compose opened the team database
        keys = worker_keys(store)
        ctx.print(f"Team database: {store.where}; videos under {ctx.videos_dir}")
        for line in journal_mode(ctx).connection_warnings(store):
            ctx.print(line)
        for item in key_availability(store.list_accounts(), keys):
            ctx.print(f"  account {item.name} ({item.provider}): "
                      + ("renders here" if item.usable else item.reason))
        return asyncio.run(_work(ctx, store, config, keys, quiet=args.no_progress))


async def _work(ctx: CliContext, store: PostgresStore, config: EngineConfig,
                keys: TrustedKeys, *, quiet: bool) -> int:
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(signum, stop.set)

    def on_event(event: Event) -> None:
        if isinstance(event, JobEvent) and event.state == "FAILED":
            failed = job_state_words(JobState.FAILED).name
            ctx.print(f"job {event.job_id} {failed}: {event.error_label}")
        elif isinstance(event, EngineErrorEvent):
            ctx.print(f"error: {event.message}")
        elif not quiet and isinstance(event, JobEvent) and event.state == "COMPLETED":
            ctx.print(f"job {event.job_id} {job_state_words(JobState.COMPLETED).name}")

    def on_started(engine: Engine) -> None:
        report = engine.recovery
        ctx.print(f"Worker {engine.instance_id} running"
                  + (f"; {report.summary()}" if report is not None else "")
                  + ". Stop with Ctrl+C or SIGTERM.")
        for line in clock_lines(engine, store.where):
            ctx.print(line)

    await run_worker(store, config, keys=keys, stop=stop, on_event=on_event,
                     on_started=on_started, clock=clock_for_tests())
    ctx.print("Worker stopped; its renders in flight go on with the next instance.")
    return 0


def handle_store_password(args: argparse.Namespace, ctx: CliContext) -> int:
    from reelqueue.application.worker import KeyStore

    url = check_team_url(args.url)
    if sys.stdin.isatty():
        password = getpass.getpass("Database password: ")
    else:
        password = sys.stdin.readline().rstrip("\n")
    if not password:
        raise InputError("The password is empty; nothing was saved.")
    KeyStore().set_key(database_key_ref(url), password)
    ctx.print(f"Saved the password of {database_key_ref(url)[len('database:'):]} in the "
              "keyring.")
    return 0


def handle_team_key(args: argparse.Namespace, ctx: CliContext) -> int:
    """The account row is the team's; its key lives in each machine's own keyring, under
    an entry named after the account and the team database (never the row's key_ref),
    bound to the provider kind and API host the row names now (printed, so the user sees
    what the key is trusted to). Nothing is written to the database."""
    from reelqueue.application.worker import KeyStore

    if not journal_mode(ctx).shared:
        raise InputError("team-key stores a key for an account of a team database: give "
                         "--store postgresql://user@host/db or set REELQUEUE_STORE.")
    with ctx.open_store(lock=False) as store:
        account = store.get_account(args.name)
        ref = worker_keys(TeamMode.team_store(store), keystore=None).key_ref(args.name)
    if account is None:
        raise InputError(f"The team database has no account named {args.name!r}.")
    if not account.key_ref:
        raise InputError(f"Account {args.name!r} was added without a key; it needs none.")
    if account.base_url:
        check_base_url(account.base_url)
    where = describe_binding(account.provider, account.base_url)
    key = (getpass.getpass(f"API key for {args.name} ({where}): ")
           if sys.stdin.isatty() else sys.stdin.readline()).strip()
    if not key:
        raise InputError("No API key was given. Pipe it on stdin or type it at the prompt "
                         "(it is never taken from the command line).")
    keys = KeyStore()
    keys.check_available()
    binding = keep_key(keys, ref, key, account.provider, account.base_url)
    ctx.print(f"Account {args.name}: key kept in this machine's keyring, sent only to "
              f"{binding.describe()}; this machine renders for it from its next start.")
    return 0
