"""``reelqueue tokens add|list|revoke``: the HTTP API's client tokens.

Works while ``serve`` runs (the journal is opened without the data-folder lock; SQLite
serialises the writes), so a revoked token is refused at its next request. With
``--store postgresql://…`` the tokens are the team database's: every machine's API
accepts them, and refuses a revoked one at its next request.
"""

from __future__ import annotations

import argparse

from reelqueue.application.tokens import SCOPES, ClientTokens
from reelqueue.cli.context import CliContext


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    tokens = sub.add_parser("tokens", help="tokens of the HTTP API (reelqueue serve)")
    actions = tokens.add_subparsers(dest="tokens_command", metavar="ACTION", required=True)
    add = actions.add_parser("add", help="make a token and print it once")
    add.add_argument("name")
    add.add_argument("--scope", choices=SCOPES, default="submit",
                     help="read, submit (read + submit jobs) or admin (everything); "
                          "default submit")
    actions.add_parser("list", help="the tokens' names and scopes")
    revoke = actions.add_parser("revoke", help="refuse a token from now on")
    revoke.add_argument("name")
    tokens.set_defaults(handler=handle)


def handle(args: argparse.Namespace, ctx: CliContext) -> int:
    # Creates or migrates the journal (SQLite schema 5+, the team database's 7+).
    with ctx.open_store(lock=False):
        pass
    tokens = ClientTokens.of(ctx)
    try:
        if args.tokens_command == "add":
            token = tokens.add(args.name, args.scope, ctx.clock.now())
            ctx.print(f"Token {args.name!r} ({args.scope}); it is shown only now:")
            ctx.print(token)
        elif args.tokens_command == "list":
            rows = tokens.list()
            if not rows:
                ctx.print("No tokens. Make one with 'reelqueue tokens add NAME'.")
            for info in rows:
                ctx.print(f"{info.name}\t{info.scope}")
        else:
            if not tokens.revoke(args.name):
                ctx.print(f"There is no token named {args.name!r}.")
                return 2
            ctx.print(f"Token {args.name!r} revoked.")
    finally:
        tokens.close()
    return 0
