"""``reelqueue accounts``: connect, list, test, change and remove provider accounts.

The API key is read from standard input or a hidden prompt, never from the command line
(argv is visible to every user of the machine), checked against the provider with its
cheapest read-only call, and stored in the OS keyring; the journal keeps a reference only.
"""

from __future__ import annotations

import argparse
import asyncio
import getpass
import json
import sys
from dataclasses import replace

from reelqueue.application import account_views, accounts, status
from reelqueue.application.account_figures import figures_fields
from reelqueue.application.account_views import AccountViewWords
from reelqueue.application.accounts import (
    DEFAULT_MODEL_KINDS,
    AccountChange,
    AccountDraft,
    default_model_setting,
    parse_price_per_second,
)
from reelqueue.application.balance_words import BalanceWords, account_balance_words
from reelqueue.application.keys import check_key
from reelqueue.application.providers import builtin_kinds, builtin_registry
from reelqueue.application.session import Session
from reelqueue.application.views import AccountSummary
from reelqueue.application.words import StateWords, account_words
from reelqueue.cli.context import CliContext
from reelqueue.cli.journal import run_on_journal
from reelqueue.domain.errors import InputError
from reelqueue.domain.models import Account

__all__ = ["DEFAULT_MODEL_KINDS", "check_key", "default_model_setting", "register"]


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    accounts = sub.add_parser("accounts", help="provider accounts")
    commands = accounts.add_subparsers(dest="accounts_command", metavar="ACTION",
                                       required=True)
    add = commands.add_parser("add", help="connect an account (key from stdin or a prompt)")
    add.add_argument("name")
    kinds = ", ".join(builtin_kinds())
    add.add_argument("--provider", required=True,
                     help=f"one of: {kinds}, or a provider plug-in's kind (status lists them)")
    add.add_argument("--capacity", type=int, default=None,
                     help="renders at once (default: what the provider's entry tier allows)")
    add.add_argument("--base-url", default=None, help="API base URL (https, or loopback)")
    add.add_argument("--no-check", action="store_true", help="store the key without testing it")
    add.add_argument("--lookup", choices=("on", "off"), default=None,
                     help="mock only: whether the provider can be asked by client token")
    add.add_argument("--reconcile", choices=("key", "search", "none"), default=None,
                     help="mock only: how a create whose answer was lost is found again "
                     "(by client token, by searching the list of renders, or not at all)")
    add.add_argument("--settle-seconds", type=float, default=None,
                     help="mock only, with --reconcile search: how long after a create "
                     "its list shows it")
    add.add_argument("--model", default=None,
                     help="openai-compat only: the gateway's model for rows that name none")
    add.set_defaults(handler=handle_add)
    listing = commands.add_parser("list", help="list accounts")
    listing.add_argument("--json", action="store_true", help="machine-readable output")
    listing.set_defaults(handler=handle_list)
    refresh = commands.add_parser(
        "refresh", help="read the account's balance, limits and usage from its provider now")
    refresh.add_argument("name")
    refresh.add_argument("--json", action="store_true", help="machine-readable output")
    refresh.set_defaults(handler=handle_refresh)
    remove = commands.add_parser("remove", help="remove an account and its key")
    remove.add_argument("name")
    remove.set_defaults(handler=handle_remove)
    test = commands.add_parser("test", help="check an account's key again")
    test.add_argument("name")
    test.set_defaults(handler=handle_test)
    change = commands.add_parser("set", help="change an account's limit, caps or price; "
                                             "pause or resume it")
    change.add_argument("name")
    change.add_argument("--capacity", type=int, default=None)
    # "paused" is the window's word; --enable/--disable stay for scripts that use them.
    change.add_argument("--resume", "--enable", dest="enabled", action="store_true",
                        default=None, help="hand this account work again")
    change.add_argument("--pause", "--disable", dest="enabled", action="store_false",
                        help="give it no new work (running renders finish)")
    change.add_argument("--daily-cap", default=None, metavar="USD|none",
                        help="start no render once today's spend (local day) would pass "
                             "this; 'none': no cap")
    change.add_argument("--price-per-second", default=None, metavar="USD|none",
                        help="this account's own price per second of video, used for its "
                             "jobs' estimates and spend caps instead of the provider's price "
                             "list (for gateways and resource packs); 'none': the list's")
    change.add_argument("--model", default=None,
                        help="openai-compat only: the gateway's model for rows that name none")
    change.add_argument("--allow-1080p", dest="allow_1080p", action="store_true",
                        default=None, help="openai-compat only: the gateway's model "
                                           "renders 1080p")
    change.add_argument("--no-allow-1080p", dest="allow_1080p", action="store_false")
    change.add_argument("--base-url", default=None,
                        help="a new API base URL (https, or loopback); this machine's key "
                             "is sent there from now on, other machines of a team must "
                             "confirm it")
    change.set_defaults(handler=handle_set)
    confirm = commands.add_parser(
        "confirm", help="send this machine's key of an account to the provider and address "
                        "its row names now (after it changed on the team database)")
    confirm.add_argument("name")
    confirm.add_argument("--expect-url", default=None, metavar="URL",
                         help="bind only if the row names this address (else refused, "
                              "naming both); needed with --yes or without a terminal")
    confirm.add_argument("--yes", "-y", action="store_true",
                         help="do not ask (only with --expect-url)")
    confirm.set_defaults(handler=handle_confirm)


KEY_READ_LIMIT = 1 << 16
"""Characters of stdin read as a key at most: any longer key is refused anyway
(application.accounts), and a pipe that never ends must not fill the memory."""


def read_key(provider_title: str, required: bool) -> str | None:
    if sys.stdin is None:
        key = ""
    elif sys.stdin.isatty():
        hint = "" if required else " (optional, Enter to skip)"
        key = getpass.getpass(f"API key for {provider_title}{hint}: ")
    else:
        # All of it (bounded), not one line: a key with a line break inside is refused
        # with the reason instead of being stored cut at the break.
        key = sys.stdin.read(KEY_READ_LIMIT)
    key = key.strip()
    if not key and required:
        raise InputError("No API key was given. Pipe it on stdin or type it at the prompt "
                         "(it is never taken from the command line).")
    return key or None


def handle_add(args: argparse.Namespace, ctx: CliContext) -> int:
    settings: dict[str, object] = {}
    if args.lookup is not None:
        settings["lookup"] = args.lookup == "on"
    if args.reconcile is not None:
        settings["reconcile"] = args.reconcile
    if args.settle_seconds is not None:
        if args.settle_seconds < 0:
            raise InputError("--settle-seconds must not be negative.")
        settings["settle_seconds"] = args.settle_seconds
    settings.update(default_model_setting(args.provider, args.model))
    draft = AccountDraft(args.name, args.provider, args.capacity, None, args.base_url, settings)

    async def add(session: Session) -> Account:
        checked = await accounts.check_new_account(session, draft)
        info = session.providers.get(checked.provider)
        key = await asyncio.to_thread(read_key, info.title, info.requires_key)
        return await accounts.add_account(session, replace(checked, key=key),
                                          check=not args.no_check)

    account = run_on_journal(ctx, add)
    info = builtin_registry().get(account.provider)
    checked = "" if args.no_check else ", key accepted by the provider"
    ctx.print(f"Account {account.name} added ({info.title}, limit {account.capacity}{checked}"
              f"{', key in the OS keyring' if account.key_ref else ''}).")
    return 0


def _describe(account: Account, live: int, here: str | None = None,
              words: StateWords | None = None) -> str:
    # its condition's one name (application.words), as the window's card and status say
    state = (words or account_words(account, live=live)).name
    if here and here.startswith(state):  # "address unreadable: ...": the name, then why
        state = here
    elif here:  # this machine's own word: it does not render for the account
        state = f"{state}; on this machine: {here}"
    where = f" {account.base_url}" if account.base_url else ""
    own = accounts.own_price(account)
    price = f", own price ${own:g}/s" if own is not None else ""
    return (f"{account.position:>2}. {account.name} ({account.provider}{where}) "
            f"limit {account.capacity}{price}, running {live}, {state}"
            + (f": {account.status_detail}" if account.status_detail else ""))


def _as_json(account: Account, live: int, here: str | None,
             words: StateWords, view: AccountViewWords | None = None,
             credits: BalanceWords | None = None) -> dict[str, object]:
    return {"name": account.name, "provider": account.provider, "base_url": account.base_url,
            "position": account.position, "limit": account.capacity, "running": live,
            "enabled": account.enabled, "status": account.status.value,
            "state_words": words.as_dict(),
            "status_detail": account.status_detail, "own_price": accounts.own_price(account),
            "this_machine": here,
            # view, limit_in_force, credits: the names status --json and GET /v1/accounts
            # give them (issue 32)
            **figures_fields(view, credits)}


def handle_list(args: argparse.Namespace, ctx: CliContext) -> int:
    async def read(session: Session) -> tuple[list[AccountSummary], dict[str, str],
                                              dict[str, StateWords],
                                              dict[str, AccountViewWords],
                                              dict[str, BalanceWords]]:
        summaries = await accounts.list_accounts(session)
        listed = [s.account for s in summaries]
        words = await status.account_states_now(session, summaries,
                                                await status.money(session))
        return (summaries, await accounts.machine_notes(session, listed), words,
                await account_views.account_view_words(session, listed),
                await account_balance_words(session, listed))

    summaries, here, words, views, credits = run_on_journal(ctx, read, lock=False)
    if args.json:
        ctx.print(json.dumps([_as_json(s.account, s.live, here.get(s.account.name),
                                       words[s.account.name], views.get(s.account.name),
                                       credits.get(s.account.name))
                              for s in summaries], indent=2))
        return 0
    if not summaries:
        ctx.print("No accounts. Add one with 'reelqueue accounts add NAME --provider P'.")
    for summary in summaries:
        name = summary.account.name
        ctx.print(_describe(summary.account, summary.live, here.get(name), words[name]))
        view = views.get(name)
        for line in view.lines if view is not None else ():
            ctx.print(f"      {line}")
        balance = credits.get(summary.account.name)
        if balance is not None:
            ctx.print(f"      {balance.words}")
    return 0


def handle_refresh(args: argparse.Namespace, ctx: CliContext) -> int:
    # A view row is advice any process may write (the engine's reads too): no lock, so
    # "Update" works while ReelQueue runs.
    words = run_on_journal(
        ctx, lambda session: account_views.refresh_account_view(session, args.name),
        lock=False)
    if args.json:
        ctx.print(json.dumps({"name": args.name, "view": words.data}, indent=2))
        return 0
    ctx.print(f"Account {args.name}:")
    for line in words.lines:
        ctx.print(f"  {line}")
    return 0


def handle_confirm(args: argparse.Namespace, ctx: CliContext) -> int:
    """Binds the key to the address the user saw or named, never to whatever the row
    holds at the moment of the write: the team database may move the account meanwhile
    (issue 34)."""
    expect = args.expect_url
    if expect is None and (args.yes or sys.stdin is None or not sys.stdin.isatty()):
        why = "--yes" if args.yes else "standard input is not a terminal"
        raise InputError(
            f"Not confirmed ({why}): name the address you expect account {args.name} to "
            "hold, so that an address changed meanwhile on the team database is never "
            f"confirmed blind: reelqueue accounts confirm {args.name} --expect-url URL "
            f"(see the address with: reelqueue accounts list).")

    async def confirm(session: Session) -> accounts.ConfirmResult | None:
        want = expect
        if want is None:  # a terminal: show the address, then ask
            account = await accounts.get_account(session, args.name)
            trust = (await accounts.trust_of_accounts(session, [account]))[0]
            want = accounts.row_address(session, account)
            was = f" (its key here was kept for {trust.bound_to})" if trust.bound_to else ""
            ctx.out.write(f"Account {account.name} names {trust.row_says}: {want}{was}.\n"
                          "Send this machine's key there from now on? [y/N] ")
            ctx.out.flush()
            answer = await asyncio.to_thread(sys.stdin.readline, 16)
            if answer.strip().lower() not in ("y", "yes"):
                return None
        return await accounts.confirm_account(session, args.name, expect_url=want)

    # Only this machine's keyring is written: no lock, a running engine sees it at its
    # next pass (application.trust.RECHECK_SECONDS).
    result = run_on_journal(ctx, confirm, lock=False)
    if result is None:
        ctx.print("Nothing was confirmed.")
        return 1
    ctx.print(result.message)
    return 0 if result.ok else 1


def handle_remove(args: argparse.Namespace, ctx: CliContext) -> int:
    run_on_journal(ctx, lambda session: accounts.remove_account(session, args.name))
    ctx.print(f"Account {args.name} removed.")
    return 0


def handle_test(args: argparse.Namespace, ctx: CliContext) -> int:
    result = run_on_journal(ctx, lambda session: accounts.test_account(session, args.name))
    ctx.print(result.message)
    return 0 if result.ok else 1


def handle_set(args: argparse.Namespace, ctx: CliContext) -> int:
    from reelqueue.cli.cmd_spend import parse_usd

    cap = parse_usd(args.daily_cap) if args.daily_cap is not None else None
    price = (parse_price_per_second(args.price_per_second)
             if args.price_per_second is not None else None)
    change = AccountChange(capacity=args.capacity, enabled=args.enabled, daily_cap=cap,
                           clear_daily_cap=args.daily_cap is not None and cap is None,
                           price_per_second=price,
                           clear_price_per_second=(args.price_per_second is not None
                                                   and price is None),
                           model=args.model, allow_1080p=args.allow_1080p,
                           base_url=args.base_url)
    only_settings = (args.capacity is None and args.enabled is None and args.model is None
                     and args.allow_1080p is None and args.base_url is None)

    async def update(session: Session) -> tuple[Account, int]:
        account = await accounts.update_account(session, args.name, change)
        live = next(s.live for s in await accounts.list_accounts(session)
                    if s.account.name == account.name)
        return account, live

    # A cap or a price alone is one write in the journal: made even while the window or
    # 'run' holds the folder (that engine reads a cap on its next pass, within 30 s; a price
    # is read by the next import): the rule in cli/journal.py.
    account, live = run_on_journal(
        ctx, update, lock=not (only_settings and (args.daily_cap is not None
                                                  or args.price_per_second is not None)))
    ctx.print(_describe(account, live))
    if args.base_url is not None and account.key_ref:
        ctx.print(f"The key of {account.name} on this machine is sent to {account.base_url} "
                  "from now on; on a team, every other machine that renders for it waits "
                  f"until 'reelqueue accounts confirm {account.name}' is run there.")
    if args.daily_cap is not None:
        usd = account.settings.get("daily_cap")
        ctx.print(f"Daily spend cap: ${usd:.2f}." if isinstance(usd, int | float)
                  else "Daily spend cap: none.")
    if args.price_per_second is not None:
        own = accounts.own_price(account)
        ctx.print(f"Price: ${own:g} per second of video, for this account's estimates and "
                  "the spend caps of sheets imported from now on (jobs already queued keep "
                  "the price they were imported with)." if own is not None
                  else "Price: the provider's price list (no own price).")
    return 0
