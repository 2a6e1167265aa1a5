"""``reelqueue migrate-to URL``: copy this machine's journal into an empty team database."""

from __future__ import annotations

import argparse
from dataclasses import replace

from reelqueue.cli.context import CliContext
from reelqueue.domain.errors import InputError


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    migrate = sub.add_parser(
        "migrate-to", help="copy the local journal into an EMPTY PostgreSQL database")
    migrate.add_argument("url", help="postgresql://user@host:port/db (no password in it)")
    migrate.set_defaults(handler=handle)


def handle(args: argparse.Namespace, ctx: CliContext) -> int:
    from reelqueue.application.migrate import copy_journal
    from reelqueue.application.team import keyring_lookup, open_team_store
    from reelqueue.application.trust import carry_keys_to_team, team_identity
    from reelqueue.domain.errors import KnownError

    if not ctx.journal_path.exists():
        raise InputError(f"There is no journal in {ctx.data_dir} to copy.")
    # The local journal is opened (migrated to the current schema, its folder locked so
    # nothing writes it meanwhile), then read row for row.
    with replace(ctx, store_url=None).open_store() as source:
        target = open_team_store(args.url, now=ctx.clock.now(), key_lookup=keyring_lookup())
        try:
            copied = copy_journal(ctx.journal_path, target)
            keyed = [a.name for a in source.list_accounts() if a.key_ref]
            tokens = _local_tokens(ctx)
            database_id: str | None = team_identity(target.database_id)
        finally:
            target.close()
    ctx.print(f"Copied {copied.summary()} into {target.where}. Start the team with "
              f"'reelqueue --store {args.url} worker'.")
    if keyed and database_id is not None:
        # This machine's keys (and where it lets each go) follow its accounts: the team
        # database's entries are named after it (application/trust.py).
        try:
            carried = carry_keys_to_team(keyed, database_id)
        except KnownError as exc:
            ctx.print(f"warning: the keys could not be kept for the team on this machine "
                      f"({exc}); keep each with 'reelqueue --store URL team-key NAME'.")
        else:
            ctx.print(f"Kept {carried} account key(s) for the team on this machine, each "
                      "sent only where it was before; other machines: "
                      "'reelqueue --store URL team-key NAME'.")
    if tokens:
        # Not copied on purpose: a token of the team database opens the team's queue on
        # every machine that serves it, which this machine's token never did.
        ctx.print(f"This machine's API tokens were not copied ({', '.join(tokens)}): a "
                  "team token opens the team's queue on every machine that serves it, so "
                  f"make each on purpose with 'reelqueue --store {args.url} tokens add NAME "
                  "--scope read|submit|admin'.")
    return 0


def _local_tokens(ctx: CliContext) -> list[str]:
    """The names of the SQLite journal's API tokens (read only)."""
    from reelqueue.application.tokens import ClientTokens

    tokens = ClientTokens(ctx.journal_path)
    try:
        return [t.name for t in tokens.list()]
    finally:
        tokens.close()
