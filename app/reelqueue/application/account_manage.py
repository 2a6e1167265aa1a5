"""What the window's "Manage account" dialog needs beyond :mod:`accounts` (issue 23): a new
key for an existing account (kept in the OS keyring as ``accounts add`` keeps one: never in
the journal, never shown or logged), what removing an account does to its jobs (said
before it is done), and whether the account waits for ``accounts confirm`` here.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from reelqueue.application.accounts import (
    AccountDraft,
    _keep_key,
    _refuse_unsendable_key,
    get_account,
    mark_ready,
    row_address,
    test_key,
    trust_of_accounts,
)
from reelqueue.application.session import Session
from reelqueue.credentials.binding import KeyBinding
from reelqueue.domain.errors import InputError, KnownError
from reelqueue.domain.states import IN_FLIGHT, WAITING, AccountStatus
from reelqueue.engine.account_keys import CONFIRM

__all__ = ["ConfirmQuestion", "RemovalEffect", "change_key", "confirm_words", "is_team",
           "removal_effect"]


def is_team(session: Session) -> bool:
    """The journal is a team database (shared by several machines)."""
    return session.mode.shared


async def change_key(session: Session, name: str, key: str, *, check: bool = True) -> str:
    """Give account ``name`` a new API key: checked with the provider first (unless
    ``check`` is False), then kept in this machine's keyring, bound to the address the
    account names. Returns what was done, in the user's words (never the key)."""
    account = await get_account(session, name)
    key = key.strip()
    if not key:
        raise InputError("Paste the new key first.")
    _refuse_unsendable_key(key)
    if not account.key_ref:
        raise InputError(f"Account {name} was added without a key (its provider needs "
                         "none); to use one, remove it and add it again with the key.")
    await asyncio.to_thread(session.keys.keystore.check_available)
    if check:
        await test_key(session, AccountDraft(account.name, account.provider,
                                             account.capacity, key, account.base_url,
                                             dict(account.settings)))
    await _keep_key(session, name, key, KeyBinding.of(account.provider, account.base_url))
    if account.status in (AccountStatus.KEY_REJECTED, AccountStatus.KEY_MISSING):
        await mark_ready(session, name)
    await session.changed(accounts=[name])
    where = "this machine's keyring"
    checked = " after the provider accepted it" if check else ""
    team = (" Other machines of the team keep their own copy until they change it too."
            if is_team(session) else "")
    return f"Account {name}: the new key is kept in {where}{checked}.{team}"


@dataclass(frozen=True)
class RemovalEffect:
    """What removing an account would do now.

    Attributes:
        name, provider_title: the account's.
        running: renders in flight on it (removal is refused while there are any).
        bound: waiting jobs only this account can take (pinned to it, or holding a render
            it started).
        shared: waiting jobs of its provider not tied to any account.
        others: the other accounts of the same provider.
        has_key: its key is in this machine's keyring (removed with it).
        team: a team database (the account goes for every machine).
    """

    name: str
    provider_title: str
    running: int
    bound: int
    shared: int
    others: tuple[str, ...]
    has_key: bool
    team: bool

    def text(self) -> str:
        """The confirmation's words: exactly what happens, to the jobs too."""
        where = "for every machine of the team" if self.team else "from ReelQueue"
        lines = [f"Removing “{self.name}” deletes the account {where}"
                 + (" and its key from this machine's keyring" if self.has_key else "")
                 + (" (other machines keep their own copy until they remove it)"
                    if self.team and self.has_key else "") + "."]
        if self.running:
            lines.append(f"It has {_jobs(self.running, 'render')} running now: ReelQueue "
                         "refuses to remove it until they finish (pause it first).")
        lines.append("No job is cancelled.")
        if self.bound:
            lines.append(f"{_jobs(self.bound, 'waiting job')} can run only on "
                         f"“{self.name}” (pinned to it, or holding a render it started): "
                         + ("it stays waiting and runs" if self.bound == 1
                            else "they stay waiting and run")
                         + " only if an account of that name is connected again; cancel "
                         + ("it" if self.bound == 1 else "them") + " if you do not want that.")
        if self.shared:
            shared = _jobs(self.shared, f"waiting {self.provider_title} job")
            if self.others:
                lines.append(f"{shared} not tied to it go to your other "
                             f"{self.provider_title} accounts ({', '.join(self.others)}).")
            else:
                lines.append(f"{shared} not tied to it wait until a "
                             f"{self.provider_title} account is connected.")
        if not self.bound and not self.shared:
            lines.append("No waiting job depends on it.")
        return "\n\n".join(lines)


def _jobs(count: int, noun: str) -> str:
    return f"{count:,} {noun}" + ("" if count == 1 else "s")


async def removal_effect(session: Session, name: str) -> RemovalEffect:
    """What :func:`~reelqueue.application.accounts.remove_account` would do now (nothing
    is changed): its running renders, the waiting jobs bound to it, the shared ones."""
    account = await get_account(session, name)
    journal = session.journal
    waiting = await journal.list_jobs(states=list(WAITING))
    running = await journal.list_jobs(states=list(IN_FLIGHT))
    bound = sum(1 for job in waiting if (job.account or job.pinned_account) == name)
    shared = sum(1 for job in waiting if job.provider == account.provider
                 and job.account is None and job.pinned_account is None)
    others = tuple(a.name for a in await journal.list_accounts()
                   if a.provider == account.provider and a.name != name)
    try:
        title = session.providers.get(account.provider).title
    except KnownError:
        title = account.provider
    return RemovalEffect(name, title, sum(1 for job in running if job.account == name),
                         bound, shared, others, bool(account.key_ref), is_team(session))


@dataclass(frozen=True)
class ConfirmQuestion:
    """What "Confirm on this machine" asks about an account.

    Attributes:
        words: why this machine does not send the key until it is confirmed.
        address: the address the row named when ``words`` were written (its
            :func:`~reelqueue.application.accounts.row_address`): Confirm passes it as
            ``expect_url``, so a key is bound only to the address the user saw.
    """

    words: str
    address: str


async def confirm_words(session: Session, name: str) -> ConfirmQuestion | None:
    """Why this machine does not send account ``name``'s key until ``accounts confirm``
    (its address or kind changed since the key was bound here), and the address it would
    be bound to; None: nothing to confirm."""
    account = await get_account(session, name)
    for trust in await trust_of_accounts(session, [account]):
        if trust.name == name and trust.problem == CONFIRM:
            address = row_address(session, account)
            if trust.bound_to is None:
                return ConfirmQuestion(trust.words, address)
            return ConfirmQuestion(
                f"Changed since this machine kept its key: the key was kept for "
                f"{trust.bound_to}; the journal now names {trust.row_says} ({address}). "
                "It is sent nowhere until you confirm (only if you trust the new address).",
                address)
    return None
