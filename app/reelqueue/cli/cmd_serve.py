"""``reelqueue serve``: the engine and the HTTP API in one headless process (issue 14).

Binds to loopback by default; TLS always (a self-signed certificate is made in the data
folder on first start and its SHA-256 fingerprint printed, for clients to pin), except
``--no-tls``, which only a loopback address may use. The server itself is the ``api``
front end, reached through the runner :mod:`reelqueue.entry` puts in the context.

On a team database (``--store``) a serve started while the database cannot be reached
waits for it, as ``reelqueue worker`` does (``--wait-for-database``, cli/database_wait.py).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from reelqueue.application.compose import journal_mode
from reelqueue.application.imports import DEFAULT_MAX_WAITING
from reelqueue.application.serving import (
    DEFAULT_LISTEN,
    ServeOptions,
    check_options,
    parse_listen,
)
from reelqueue.cli.cmd_run import add_engine_arguments, engine_config
from reelqueue.cli.context import CliContext
from reelqueue.cli.database_wait import add_wait_argument, wait_for_database
from reelqueue.domain.errors import InputError

CONNECTION_FLAGS: tuple[tuple[str, type, str, str], ...] = (
    ("--max-connections", int, "1024, lowered to fit the open-files limit",
     "open connections at most"),
    ("--max-handshakes", int, "64", "TLS handshakes in progress at most"),
    ("--handshake-seconds", float, "10", "a TLS handshake's time limit"),
    ("--idle-seconds", float, "60", "a connection that sends nothing is closed after this"),
    ("--trusted-reserve", int, "an eighth of --max-connections",
     "connections only trusted ones may hold"),
    ("--max-per-address", int, "32",
     "untrusted connections of one address (IPv6: one /64) at most"),
    ("--max-per-subnet", int, "128",
     "untrusted connections of one IPv4 /24 or IPv6 /64 at most"),
    ("--first-request-seconds", float, "10",
     "an untrusted connection's first request comes within this after its handshake"),
)
"""The API's connection limits: flag, type, default (words), help."""


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    serve = sub.add_parser("serve", help="run the engine and the HTTP API (docs/api.md)")
    serve.add_argument("--listen", default=DEFAULT_LISTEN, metavar="HOST:PORT",
                       help=f"address to bind (default {DEFAULT_LISTEN}; port 0: any free)")
    serve.add_argument("--tls-cert", type=Path, default=None, help="PEM certificate")
    serve.add_argument("--tls-key", type=Path, default=None, help="PEM private key")
    serve.add_argument("--tls-key-insecure-ok", action="store_true",
                       help="serve a key file other users can read (refused otherwise)")
    serve.add_argument("--no-tls", action="store_true",
                       help="plain HTTP (refused for a non-loopback address)")
    serve.add_argument("--max-waiting", type=int, default=DEFAULT_MAX_WAITING, metavar="N",
                       help="submits get 429 while this many jobs wait (default "
                            f"{DEFAULT_MAX_WAITING}, as import)")
    serve.add_argument("--paused", action="store_true", help="start with the pump paused")
    limits = serve.add_argument_group(
        "connections", "how many connections the API holds and for how long; a connection "
                       "is trusted after one request with a valid token (docs/api.md)")
    for flag, kind, default, words in CONNECTION_FLAGS:
        limits.add_argument(flag, type=kind, default=None, metavar="N" if kind is int else "S",
                            help=f"{words} (default {default})")
    add_engine_arguments(serve)
    add_wait_argument(serve)
    serve.set_defaults(handler=handle)


def connection_limits(args: argparse.Namespace) -> dict[str, int | float]:
    """The connection limits given on the command line (the others keep defaults)."""
    given = {flag[2:].replace("-", "_"): getattr(args, flag[2:].replace("-", "_"))
             for flag, _, _, _ in CONNECTION_FLAGS}
    return {name: value for name, value in given.items() if value is not None}


def handle(args: argparse.Namespace, ctx: CliContext) -> int:
    host, port = parse_listen(args.listen)
    options = ServeOptions(host=host, port=port, tls=not args.no_tls, cert=args.tls_cert,
                           key=args.tls_key, key_insecure_ok=args.tls_key_insecure_ok,
                           max_waiting=args.max_waiting,
                           paused=args.paused, engine=engine_config(args),
                           connections=connection_limits(args))
    if ctx.serve_api is None:
        raise InputError("This build of ReelQueue has no HTTP API.")
    check_options(options)  # refused at once, not after a wait for the database
    mode = journal_mode(ctx)
    for line in mode.connection_warnings():
        ctx.print(line)
    if mode.shared and wait_for_database(ctx, lambda: _reached(ctx),
                                         args.wait_for_database) is None:
        ctx.print("Serve stopped while waiting for the team database; the API was not "
                  "started.")
        return 0
    return ctx.serve_api(ctx, options)


def _reached(ctx: CliContext) -> bool:
    """Open the team database and close it again. The serve's session opens its own on its
    loop's journal thread, which the runner's signature gives no way to hand a store to; a
    database gone again in between is said as it was before the wait (exit 2)."""
    with ctx.open_store(lock=False):
        return True
