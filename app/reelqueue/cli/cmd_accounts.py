"""``reelqueue accounts``: connect, list, test, change and remove provider accounts.

The API key is read from standard input or a hidden prompt, never from the command line
(argv is visible to every user of the machine), checked against the provider with its
cheapest read-only call, and stored in the OS keyring; the journal keeps a reference only.
"""

from __future__ import annotations

import argparse
import asyncio
import getpass
import sys

from reelqueue.application.builtin_mock import running_mock
from reelqueue.application.keys import check_key
from reelqueue.cli.context import CliContext
from reelqueue.domain.errors import ErrorLabel, InputError, ProviderError
from reelqueue.domain.models import Account, AccountSpec
from reelqueue.domain.states import AccountStatus
from reelqueue.providers.builtin import builtin_registry
from reelqueue.providers.registry import check_base_url


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    accounts = sub.add_parser("accounts", help="provider accounts")
    commands = accounts.add_subparsers(dest="accounts_command", metavar="ACTION",
                                       required=True)
    add = commands.add_parser("add", help="connect an account (key from stdin or a prompt)")
    add.add_argument("name")
    kinds = ", ".join(builtin_registry().kinds())
    add.add_argument("--provider", required=True, help=f"one of: {kinds}")
    add.add_argument("--capacity", type=int, default=None,
                     help="renders at once (default: what the provider's entry tier allows)")
    add.add_argument("--base-url", default=None, help="API base URL (https, or loopback)")
    add.add_argument("--no-check", action="store_true", help="store the key without testing it")
    add.add_argument("--lookup", choices=("on", "off"), default=None,
                     help="mock only: whether the provider can be asked by client token")
    add.add_argument("--model", default=None,
                     help="openai-compat only: the gateway's model for rows that name none")
    add.set_defaults(handler=handle_add)
    commands.add_parser("list", help="list accounts").set_defaults(handler=handle_list)
    remove = commands.add_parser("remove", help="remove an account and its key")
    remove.add_argument("name")
    remove.set_defaults(handler=handle_remove)
    test = commands.add_parser("test", help="check an account's key again")
    test.add_argument("name")
    test.set_defaults(handler=handle_test)
    change = commands.add_parser("set", help="change an account's limit, pause or resume it")
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
    change.add_argument("--model", default=None,
                        help="openai-compat only: the gateway's model for rows that name none")
    change.add_argument("--allow-1080p", dest="allow_1080p", action="store_true",
                        default=None, help="openai-compat only: the gateway's model "
                                           "renders 1080p")
    change.add_argument("--no-allow-1080p", dest="allow_1080p", action="store_false")
    change.set_defaults(handler=handle_set)


def read_key(provider_title: str, required: bool) -> str | None:
    if sys.stdin is None:
        key = ""
    elif sys.stdin.isatty():
        hint = "" if required else " (optional, Enter to skip)"
        key = getpass.getpass(f"API key for {provider_title}{hint}: ")
    else:
        key = sys.stdin.readline()
    key = key.strip()
    if not key and required:
        raise InputError("No API key was given. Pipe it on stdin or type it at the prompt "
                         "(it is never taken from the command line).")
    return key or None


def _check(name: str, provider: str, base_url: str | None, key: str | None,
           settings: dict[str, object]) -> None:
    if provider == "mock" and not base_url:
        with running_mock() as url:
            asyncio.run(check_key(name, provider, url, key, settings))
    else:
        asyncio.run(check_key(name, provider, base_url, key, settings))


DEFAULT_MODEL_KINDS = ("openai-compat",)
"""Providers whose account names a default model (a gateway serves whatever it serves)."""


def default_model_setting(provider: str, model: str | None) -> dict[str, object]:
    """The account setting for ``--model``; refused for providers that have no default."""
    if model is None:
        return {}
    if provider not in DEFAULT_MODEL_KINDS:
        raise InputError(f"--model sets the default model of an OpenAI-compatible gateway; "
                         f"{provider!r} takes the model per row.")
    if not model.strip():
        raise InputError("--model needs a model name.")
    return {"model": model.strip()}


def handle_add(args: argparse.Namespace, ctx: CliContext) -> int:
    from reelqueue.credentials.keystore import KeyStore, key_ref_for

    info = builtin_registry().get(args.provider)
    capacity = args.capacity if args.capacity is not None else info.params.default_capacity
    if capacity < 1:
        raise InputError("--capacity must be at least 1.")
    base_url = check_base_url(args.base_url) if args.base_url else None
    if info.default_base_url is None and base_url is None and args.provider != "mock":
        raise InputError(f"Provider {args.provider!r} needs --base-url.")
    settings: dict[str, object] = {}
    if args.lookup is not None:
        settings["lookup"] = args.lookup == "on"
    settings.update(default_model_setting(args.provider, args.model))
    with ctx.open_store() as store:
        if store.get_account(args.name) is not None:
            raise InputError(f"An account named {args.name!r} already exists.")
        key = read_key(info.title, info.requires_key)
        keys = KeyStore()
        if key is not None:
            keys.check_available()
        if not args.no_check:
            _check(args.name, args.provider, base_url, key, settings)
        key_ref = None
        if key is not None:
            key_ref = key_ref_for(args.name)
            keys.set_key(key_ref, key)
        store.add_account(AccountSpec(args.name, args.provider, capacity, base_url, key_ref,
                                      settings), ctx.clock.now())
    checked = "" if args.no_check else ", key accepted by the provider"
    ctx.print(f"Account {args.name} added ({info.title}, limit {capacity}{checked}"
              f"{', key in the OS keyring' if key_ref else ''}).")
    return 0


def _describe(account: Account, live: int) -> str:
    state = account.status.value if account.enabled else "paused"  # the window's word too
    where = f" {account.base_url}" if account.base_url else ""
    return (f"{account.position:>2}. {account.name} ({account.provider}{where}) "
            f"limit {account.capacity}, running {live}, {state}"
            + (f": {account.status_detail}" if account.status_detail else ""))


def handle_list(args: argparse.Namespace, ctx: CliContext) -> int:
    with ctx.open_store(lock=False) as store:
        accounts = store.list_accounts()
        if not accounts:
            ctx.print("No accounts. Add one with 'reelqueue accounts add NAME --provider P'.")
        for account in accounts:
            ctx.print(_describe(account, store.live_count(account.name)))
    return 0


def handle_remove(args: argparse.Namespace, ctx: CliContext) -> int:
    from reelqueue.credentials.keystore import KeyStore

    with ctx.open_store() as store:
        account = store.get_account(args.name)
        if account is None:
            raise InputError(f"There is no account named {args.name!r}.")
        store.remove_account(args.name, ctx.clock.now())
        if account.key_ref:
            KeyStore().delete_key(account.key_ref)
    ctx.print(f"Account {args.name} removed.")
    return 0


def handle_test(args: argparse.Namespace, ctx: CliContext) -> int:
    from reelqueue.credentials.keystore import KeyStore

    with ctx.open_store() as store:
        account = store.get_account(args.name)
        if account is None:
            raise InputError(f"There is no account named {args.name!r}.")
        key = KeyStore().get_key(account.key_ref) if account.key_ref else None
        info = builtin_registry().get(account.provider)
        if info.requires_key and not key:
            store.set_account_status(args.name, AccountStatus.KEY_MISSING, ctx.clock.now(),
                                     detail="no key in the OS keyring")
            ctx.print(f"Account {args.name}: no key found in the OS keyring. Remove and add "
                      "the account again.")
            return 1
        try:
            _check(account.name, account.provider, account.base_url, key,
                   dict(account.settings))
        except ProviderError as exc:
            status = {ErrorLabel.KEY_REJECTED: AccountStatus.KEY_REJECTED,
                      ErrorLabel.OUT_OF_CREDITS: AccountStatus.OUT_OF_CREDITS}.get(exc.label)
            if status is not None:
                store.set_account_status(args.name, status, ctx.clock.now(), detail=str(exc))
            ctx.print(f"Account {args.name}: {exc.label.value}: {exc}")
            return 1
        store.set_account_status(args.name, AccountStatus.READY, ctx.clock.now())
    ctx.print(f"Account {args.name}: key accepted; the account is ready.")
    return 0


def handle_set(args: argparse.Namespace, ctx: CliContext) -> int:
    from reelqueue.cli.cmd_spend import parse_usd

    settings: dict[str, object] = {}
    if args.daily_cap is not None:
        settings["daily_cap"] = parse_usd(args.daily_cap)
    only_cap = (args.capacity is None and args.enabled is None and args.model is None
                and args.allow_1080p is None)
    # A cap alone is one write in the journal: made even while 'run' holds the folder
    # (that engine reads it on its next pass, within 30 s).
    with ctx.open_store(lock=not (only_cap and settings)) as store:
        current = store.get_account(args.name)
        if current is None:
            raise InputError(f"There is no account named {args.name!r}.")
        if args.model is not None:
            settings.update(default_model_setting(current.provider, args.model))
        if args.allow_1080p is not None:
            if current.provider not in DEFAULT_MODEL_KINDS:
                raise InputError("--allow-1080p is an openai-compat setting (whether the "
                                 f"gateway's model renders 1080p); {current.provider!r} "
                                 "has none.")
            settings["allow_1080p"] = True if args.allow_1080p else None
        account = store.update_account(args.name, ctx.clock.now(), capacity=args.capacity,
                                       enabled=args.enabled, settings=settings or None)
        ctx.print(_describe(account, store.live_count(account.name)))
        cap = account.settings.get("daily_cap")
        if args.daily_cap is not None:
            ctx.print(f"Daily spend cap: ${cap:.2f}." if isinstance(cap, int | float)
                      else "Daily spend cap: none.")
    return 0
