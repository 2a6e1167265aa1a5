"""The user's commands on provider accounts: add (key checked, put in the OS keyring),
test the key again, remove, change (limit, pause/resume, daily cap, own price per second,
gateway settings), list. The window, the command line and the HTTP API all call these.

Keys travel in :class:`AccountDraft` (never in its ``repr``), go to the OS keyring on a
worker thread and never reach the journal, which keeps a reference only.
"""

from __future__ import annotations

import asyncio
import math
from dataclasses import dataclass, field, replace

from reelqueue.application.builtin_mock import on_builtin_mock
from reelqueue.application.keys import check_key
from reelqueue.application.session import Session
from reelqueue.application.trust import (
    AccountTrust,
    account_trust,
    address_unreadable,
    unreadable_words,
)
from reelqueue.credentials.binding import OWN_HOST, KeyBinding, binding_ref
from reelqueue.credentials.keystore import key_ref_for
from reelqueue.domain.account_view import AccountView
from reelqueue.domain.errors import InputError, KnownError, ProviderError, account_status_for
from reelqueue.domain.models import Account, AccountSpec
from reelqueue.domain.states import AccountStatus
from reelqueue.engine import queries
from reelqueue.engine.account_keys import CONFIRM, KeyAnswer
from reelqueue.engine.queries import AccountSummary
from reelqueue.intake.estimate import PRICE_SETTING, account_price
from reelqueue.providers.key_text import key_text_problem
from reelqueue.providers.registry import check_base_url
from reelqueue.store.base import this_host

__all__ = ["DEFAULT_MODEL_KINDS", "AccountChange", "AccountDraft", "ConfirmResult", "KeyTestResult",
           "add_account", "check_new_account", "confirm_account", "default_model_setting",
           "get_account", "keep_view", "key_answer", "list_accounts", "machine_notes",
           "machine_trust", "mark_ready", "own_price", "parse_price_per_second",
           "remove_account", "row_address", "test_account", "test_key", "trust_of_accounts",
           "update_account", "view_reader"]

DEFAULT_MODEL_KINDS = ("openai-compat",)
"""Providers whose account names a default model (a gateway serves whatever it serves)."""


@dataclass(frozen=True)
class AccountDraft:
    """A new account as the user described it. ``key`` is never logged or shown.

    Attributes:
        name: the account's name (unique).
        provider: the provider kind (one of ``session.providers.kinds()``).
        capacity: renders at once; None: what the provider's entry tier allows.
        key: the API key (None: none given).
        base_url: the API's base URL (None: the provider's own).
        settings: provider settings (``lookup`` for the mock, ``model`` for a gateway).
    """

    name: str
    provider: str
    capacity: int | None = None
    key: str | None = field(default=None, repr=False)
    base_url: str | None = None
    settings: dict[str, object] = field(default_factory=dict)


@dataclass(frozen=True)
class AccountChange:
    """What to change of an account; None leaves a field as it is.

    Attributes:
        capacity: renders at once.
        enabled: False pauses it (no new work; running renders finish), True resumes it.
        daily_cap: the daily spend cap in USD; ``clear_daily_cap`` removes it.
        price_per_second: the account's own price, USD per second of video, used instead of
            the provider's price table for its jobs (intake/estimate.py); for gateways and
            resource packs that publish none. ``clear_price_per_second`` removes it.
        model: openai-compat only: the gateway's model for rows that name none.
        allow_1080p: openai-compat only: the gateway's model renders 1080p.
        base_url: a new API base URL (a gateway's); this machine's key is bound to it at
            once, the other machines of a team see "confirm on this machine".
    """

    capacity: int | None = None
    enabled: bool | None = None
    daily_cap: float | None = None
    clear_daily_cap: bool = False
    price_per_second: float | None = None
    clear_price_per_second: bool = False
    model: str | None = None
    allow_1080p: bool | None = None
    base_url: str | None = None


@dataclass(frozen=True)
class KeyTestResult:
    """The outcome of :func:`test_account`.

    Attributes:
        ok: the provider accepted the key; the account is ready.
        status: the account's status now.
        message: what happened, in the user's words (never the key).
    """

    ok: bool
    status: AccountStatus | None
    message: str


def parse_price_per_second(text: str) -> float | None:
    """An account's own price: USD per second of video ('0.12', '$0.12'), or None for
    'none' (back to the provider's price table). InputError for anything else."""
    cleaned = text.strip().lstrip("$").strip().removesuffix("/s").strip()
    if cleaned.casefold() in ("none", "off", "no", "clear"):
        return None
    try:
        value = float(cleaned)
    except ValueError:
        raise InputError(f"A price per second is an amount in USD (like 0.12) or 'none'; "
                         f"{text!r} is neither.") from None
    if not 0 < value < float("inf"):
        raise InputError(f"A price per second must be more than 0 (or 'none'), not {text!r}.")
    return value


def own_price(account: Account) -> float | None:
    """The account's own price per second (``accounts set --price-per-second``), or None
    when its jobs are priced from the provider's table."""
    return account_price(account.settings)


def default_model_setting(provider: str, model: str | None) -> dict[str, object]:
    """The account setting for a default model; refused for providers that have none."""
    if model is None:
        return {}
    if provider not in DEFAULT_MODEL_KINDS:
        raise InputError(f"A default model is a setting of an OpenAI-compatible gateway; "
                         f"{provider!r} takes the model per row.")
    if not model.strip():
        raise InputError("Give the model's name.")
    return {"model": model.strip()}


async def check_new_account(session: Session, draft: AccountDraft) -> AccountDraft:
    """Refuse a draft that cannot become an account (InputError saying why), before a key
    is asked for; return it completed (name trimmed, base URL checked, capacity chosen)."""
    name = draft.name.strip()
    if not name:
        raise InputError("Give the account a name.")
    info = session.providers.get(draft.provider)
    capacity = draft.capacity if draft.capacity is not None else info.params.default_capacity
    if capacity < 1:
        raise InputError("The limit (--capacity) must be at least 1.")
    base_url = check_base_url(draft.base_url) if draft.base_url else None
    if info.default_base_url is None and base_url is None and not on_builtin_mock(
            draft.provider, None):
        raise InputError(f"{info.title} needs the API's base URL (--base-url).")
    journal = session.journal
    if await journal.get_account(name) is not None:
        raise InputError(f"An account named {name!r} already exists.")
    return replace(draft, name=name, capacity=capacity, base_url=base_url)


def view_reader(session: Session) -> str:
    """Who read an account view that a command (not an engine) read: kept with the view."""
    engine = session.live_engine
    return engine.instance_id if engine is not None else f"command on {this_host()}"


async def keep_view(session: Session, view: AccountView | None) -> None:
    """Keep an account view read by a command in the journal, for every process to see."""
    if view is not None:
        await session.journal.put_account_view(replace(view, read_by=view_reader(session)))


async def test_key(session: Session, draft: AccountDraft) -> AccountView | None:
    """Ask the provider whether the draft's key works (its cheapest read-only call); raise
    the provider's error when it does not. A ``mock`` draft without a URL is checked on
    the built-in mock (started for it). Returns the account view read with the check
    (None: the provider publishes none)."""
    # The key as it is stored (add_account strips it): the same text is checked and kept.
    key = (draft.key or "").strip() or None
    _refuse_unsendable_key(key)
    base_url = draft.base_url
    if on_builtin_mock(draft.provider, base_url):
        base_url = await session.ensure_mock()
    return await check_key(draft.name, draft.provider, base_url, key, dict(draft.settings),
                           providers=session.providers)


def _refuse_unsendable_key(key: str | None) -> None:
    """InputError (quoting none of the key) when ``key`` cannot be sent to any provider:
    refused before it reaches the keyring or the network (issue 22)."""
    text = (key or "").strip()
    if text and (problem := key_text_problem(text)) is not None:
        raise InputError(f"This API key cannot be used: {problem}. Nothing was stored.")


async def add_account(session: Session, draft: AccountDraft, *, check: bool = True) -> Account:
    """Check the draft, test the key with the provider (unless ``check`` is False), put it
    in the OS keyring, then add the account to the journal; the pump hears of it."""
    draft = await check_new_account(session, draft)
    info = session.providers.get(draft.provider)
    key = (draft.key or "").strip() or None
    if info.requires_key and key is None:
        raise InputError(f"{info.title} needs an API key.")
    _refuse_unsendable_key(key)
    if key is not None:  # no point asking the provider about a key we could not keep
        await asyncio.to_thread(session.keys.keystore.check_available)
    view = None
    if check:
        view = await test_key(session, draft)
    elif on_builtin_mock(draft.provider, draft.base_url) and session.live_engine is not None:
        await session.ensure_mock()  # the running engine renders on it
    key_ref = None
    if key is not None:
        # The journal's key_ref only says "this account has a key": where the key is kept
        # on this machine, and where it may go (what the user typed here), is this
        # machine's own (application.trust).
        key_ref = key_ref_for(draft.name)
        await _keep_key(session, draft.name, key,
                        KeyBinding.of(draft.provider, draft.base_url))
    assert draft.capacity is not None  # check_new_account chose it
    spec = AccountSpec(draft.name, draft.provider, draft.capacity, draft.base_url, key_ref,
                       dict(draft.settings))
    account = await session.journal.add_account(spec, session.clock.now())
    await keep_view(session, view)  # read from the key check's own answer, at connect
    await session.changed()
    return account


async def get_account(session: Session, name: str) -> Account:
    """The account named ``name``; InputError when there is none."""
    journal = session.journal
    account = await journal.get_account(name)
    if account is None:
        raise InputError(f"There is no account named {name!r}.")
    return account


async def list_accounts(session: Session) -> list[AccountSummary]:
    """Every account in the pump's order, with its live render count."""
    return await queries.accounts(session.journal)


async def remove_account(session: Session, name: str) -> None:
    """Remove the account from the journal, then its key from the OS keyring."""
    account = await get_account(session, name)
    journal = session.journal
    await journal.remove_account(name, session.clock.now())
    if account.key_ref:
        ref = session.trusted_keys.key_ref(name)
        await asyncio.to_thread(session.keys.forget, ref)
        await asyncio.to_thread(session.keys.forget, binding_ref(ref))
    await session.changed(accounts=[name])


async def test_account(session: Session, name: str) -> KeyTestResult:
    """Check the account's key with the provider again and record the outcome as its
    status: ready, key missing, key rejected or out of credits (a rate limit or a network
    error during the check says nothing about the key and changes nothing).

    On a team database the account's status is everyone's, and each machine holds only
    the keys it renders for: a key absent from this machine's keyring says nothing about
    the account ("key not on this machine") and changes nothing in the database."""
    account = await get_account(session, name)
    journal, now = session.journal, session.clock.now()
    info = session.providers.get(account.provider)
    key = None
    if account.key_ref:
        answer = await key_answer(session, account)
        if answer.problem == CONFIRM:
            # Nothing is sent: the key is not bound to the address the row names now.
            return KeyTestResult(False, None, f"Account {name}: {answer.detail}; nothing "
                                 "was sent and nothing changed.")
        key = answer.key
    # A key reference counts too (as for claims, application.team): a provider that can
    # go without a key still renders under this account's key elsewhere.
    needs_key = info.requires_key or bool(account.key_ref)
    if needs_key and not key and session.mode.shared:
        return KeyTestResult(False, None,
                             f"Account {name}: key not on this machine; nothing was changed "
                             "(its status is the team's; the machines that hold the key "
                             "render for it). To test or render for it here, first keep its "
                             f"key on this machine: reelqueue team-key {name}")
    if info.requires_key and not key:
        await journal.set_account_status(name, AccountStatus.KEY_MISSING,
                           now, detail="no key in the OS keyring")
        await session.changed(accounts=[name])
        return KeyTestResult(False, AccountStatus.KEY_MISSING,
                             f"Account {name}: no key found in the OS keyring. Remove and add "
                             "the account again.")
    try:
        view = await test_key(session, AccountDraft(
            account.name, account.provider, account.capacity, key, account.base_url,
            dict(account.settings)))
    except ProviderError as exc:
        status = account_status_for(exc.label)
        if status == AccountStatus.RATE_LIMITED:
            status = None
        if status is not None:
            await journal.set_account_status(name, status,
                               session.clock.now(), detail=str(exc))
            await session.changed(accounts=[name])
        return KeyTestResult(False, status, f"Account {name}: {exc.label.value}: {exc}")
    await keep_view(session, view)
    await mark_ready(session, name)
    return KeyTestResult(True, AccountStatus.READY,
                         f"Account {name}: key accepted; the account is ready.")


async def mark_ready(session: Session, name: str) -> None:
    """The user fixed the key or topped up credits: the account gets work again."""
    await session.journal.set_account_status(name, AccountStatus.READY, session.clock.now())
    await session.changed(accounts=[name])


async def update_account(session: Session, name: str, change: AccountChange) -> Account:
    """Apply ``change`` (live while the engine runs: a lower limit only stops new claims,
    a raised cap releases the jobs it held at once); return the account as it is now."""
    current = await get_account(session, name)
    settings: dict[str, object] = {}
    if change.daily_cap is not None or change.clear_daily_cap:
        settings["daily_cap"] = None if change.clear_daily_cap else change.daily_cap
    if change.price_per_second is not None or change.clear_price_per_second:
        if change.price_per_second is not None and not 0 < change.price_per_second < math.inf:
            raise InputError("A price per second must be more than 0.")
        settings[PRICE_SETTING] = (None if change.clear_price_per_second
                                   else change.price_per_second)
    if change.model is not None:
        settings.update(default_model_setting(current.provider, change.model))
    if change.allow_1080p is not None:
        if current.provider not in DEFAULT_MODEL_KINDS:
            raise InputError("Allowing 1080p is an openai-compat setting (whether the "
                             f"gateway's model renders 1080p); {current.provider!r} has none.")
        settings["allow_1080p"] = True if change.allow_1080p else None
    if change.capacity is not None and change.capacity < 1:
        raise InputError("The limit must be at least 1.")
    if change.base_url is not None:
        base_url = check_base_url(change.base_url)
        await session.journal.update_account(name, session.clock.now(), base_url=base_url)
        if current.key_ref:
            await _bind_here(session, replace(current, base_url=base_url))
        await session.changed(accounts=[name])
    account = await session.journal.update_account(
        name, session.clock.now(), capacity=change.capacity, enabled=change.enabled,
        settings=settings or None)
    await session.changed(accounts=[name])
    return account


# -- the trust boundary (issue 21) ---------------------------------------------------------
@dataclass(frozen=True)
class ConfirmResult:
    """The outcome of :func:`confirm_account`.

    Attributes:
        ok: this machine's key of the account is now bound to what its row names.
        message: what happened, in the user's words (never the key).
        bound_to: the binding now kept (None when nothing was bound).
        was: the binding it replaced, if any.
    """

    ok: bool
    message: str
    bound_to: str | None = None
    was: str | None = None


async def _keep_key(session: Session, name: str, key: str, binding: KeyBinding) -> None:
    """Put an account's key and its binding in this machine's keyring."""
    ref = session.trusted_keys.key_ref(name)
    await asyncio.to_thread(session.keys.store, ref, key)
    await asyncio.to_thread(session.keys.store, binding_ref(ref), binding.to_text())


async def _bind_here(session: Session, account: Account) -> KeyBinding | None:
    """Bind this machine's key of ``account`` to the kind and host its row names now;
    None when this machine holds no key for it."""
    trusted = session.trusted_keys
    ref = trusted.key_ref(account.name)
    key = await asyncio.to_thread(session.keys.read, ref)
    if key is None and trusted.database_id is not None:
        # A key kept for the team before bindings existed (``account:NAME``, unbound).
        old = key_ref_for(account.name)
        old_key = await asyncio.to_thread(session.keys.read, old)
        if old_key and await asyncio.to_thread(session.keys.read, binding_ref(old)) is None:
            key = old_key
            await asyncio.to_thread(session.keys.store, ref, key)
    if key is None:
        return None
    binding = KeyBinding.of(account.provider, account.base_url)
    await asyncio.to_thread(session.keys.store, binding_ref(ref), binding.to_text())
    return binding


async def key_answer(session: Session, account: Account) -> KeyAnswer:
    """The key ``account`` may use from this machine, or why none (read now, on a worker
    thread: also for a command whose engine does not run)."""
    trusted = session.trusted_keys
    refs = trusted.refs_to_read([account])
    await asyncio.to_thread(session.keys.load, refs)
    try:
        official = session.providers.get(account.provider).default_base_url
    except KnownError:
        official = None
    return trusted.key_for(account, official)


def row_address(session: Session, account: Account) -> str:
    """The API address ``account``'s row makes this machine send its key to: its
    ``base_url``, else its provider's own, else :data:`OWN_HOST` (the built-in mock)."""
    if account.base_url:
        return account.base_url
    try:
        return session.providers.get(account.provider).default_base_url or OWN_HOST
    except KnownError:
        return OWN_HOST


def _same_address(row: str, expected: str) -> bool:
    """The row's address is the one the user expects (both as check_base_url keeps
    them: a trailing "/" does not count; anything else does)."""
    if OWN_HOST in (row, expected):
        return row == expected
    try:
        return check_base_url(row.strip()) == check_base_url(expected.strip())
    except InputError:
        return False


async def confirm_account(session: Session, name: str, *,
                          expect_url: str | None = None) -> ConfirmResult:
    """``reelqueue accounts confirm NAME`` (and the window's Confirm button): bind this
    machine's key of the account to the provider kind and API host its row names now, so
    this machine renders for it again. Nothing is written to the journal.

    ``expect_url``: bind only if the row's address (:func:`row_address`) is this one;
    otherwise refuse, naming both. The binding is built from the very row that was
    compared, so an address changed by the team database in between is never bound."""
    account = await get_account(session, name)
    if not account.key_ref:
        return ConfirmResult(False, f"Account {name} has no key; there is nothing to "
                             "confirm.")
    if address_unreadable(account.base_url):
        return ConfirmResult(False, f"Account {name}: {unreadable_words(name)}. Nothing "
                             "was confirmed.")
    if expect_url is not None and not _same_address(row_address(session, account),
                                                    expect_url):
        return ConfirmResult(False, f"Account {name}: its row names "
                             f"{row_address(session, account)}, not "
                             f"{expect_url.strip()} (the address expected); nothing was "
                             "confirmed and its key is sent to neither. Check who changed "
                             "it before confirming the address it names now.")
    trusted = session.trusted_keys
    await asyncio.to_thread(session.keys.load, trusted.refs_to_read([account]))
    before = trusted.binding(name)
    if account.base_url:
        check_base_url(account.base_url)  # an address the adapters refuse is not bound
    bound = await _bind_here(session, account)
    if bound is None:
        command = "team-key" if trusted.database_id is not None else "accounts add"
        return ConfirmResult(False, f"Account {name}: key not on this machine; nothing to "
                             f"confirm (keep its key here first: reelqueue {command} "
                             f"{name}).")
    await session.changed(accounts=[name])
    was = before.describe() if before is not None and before != bound else None
    message = (f"Account {name}: this machine now sends its key to {bound.describe()}"
               + (f" (was {was})" if was else "") + ".")
    return ConfirmResult(True, message, bound.describe(), was)


async def trust_of_accounts(session: Session,
                            accounts: list[Account] | None = None) -> list[AccountTrust]:
    """This machine's view of every account's key: renders here, key not here, or waits
    for ``accounts confirm`` (for ``accounts list``, ``status`` and the window)."""
    if accounts is None:
        accounts = await session.journal.list_accounts()
    trusted = session.trusted_keys
    keyed = [a for a in accounts if a.key_ref]
    if keyed:
        await asyncio.to_thread(session.keys.load, trusted.refs_to_read(keyed))

    def official(kind: str) -> str | None:
        return session.providers.get(kind).default_base_url

    return account_trust(trusted, accounts, official)


async def machine_notes(session: Session,
                        accounts: list[Account] | None = None) -> dict[str, str]:
    """Name -> this machine's own word on the account, for those it does not render for:
    waiting for ``accounts confirm`` and, on a team database, "key not on this machine"."""
    return {name: t.words for name, t in (await machine_trust(session, accounts)).items()}


async def machine_trust(session: Session,
                        accounts: list[Account] | None = None) -> dict[str, AccountTrust]:
    """Name -> this machine's view of the accounts it does not render for (the ones
    :func:`machine_notes` words): ``problem`` is ``confirm`` or, on a team database,
    ``no_key`` (its key is not on this machine)."""
    team = session.mode.shared
    return {t.name: t for t in await trust_of_accounts(session, accounts)
            if t.problem == CONFIRM or (t.problem is not None and team)}
