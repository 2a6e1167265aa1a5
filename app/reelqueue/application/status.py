"""What ``status`` and ``doctor`` report: the journal's counts, accounts, jobs, the jobs
that need the user, the spend against the caps, and whether the invariants of DESIGN.md
hold over the whole history. Read-only; built on the journal's thread.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from reelqueue.application.context import AppContext
from reelqueue.application.create_evidence import recorded_evidence
from reelqueue.application.session import Session
from reelqueue.application.trust import AccountTrust
from reelqueue.application.words import (
    OUTCOME_UNKNOWN,
    StateWords,
    account_words,
    job_state_words,
)
from reelqueue.domain.errors import DataDirLocked
from reelqueue.domain.models import Account
from reelqueue.domain.states import FINAL, JobState
from reelqueue.engine.account_keys import CONFIRM, NO_KEY
from reelqueue.engine.attention import NeedsAttention, needs_attention
from reelqueue.engine.outputs import check_output, ensure_writable, located_output
from reelqueue.engine.queries import AccountSummary
from reelqueue.store.base import Store, this_host
from reelqueue.store.spend import AccountSpend, SpendSummary, ToGo, local_day_start, to_go_words

__all__ = ["Money", "NeedsAttention", "SpendSummary", "StatusReport", "ToGo",
           "account_states", "account_states_now", "attention_sentences",
           "check_output_folders", "doctor",
           "doctor_checks", "money", "money_of", "needs_user", "other_instance_probe",
           "spend", "status", "status_data", "team_connection", "to_go_words"]


MAX_EVIDENCE = 200
"""At most this many unknown creates carry their reading of the provider's counts in
``status`` (each is one ledger read)."""


@dataclass(frozen=True)
class StatusReport:
    """``data``: the JSON of ``status --json``; ``attention``, ``spend`` and ``money``
    (the same read as the window's cards) for its text."""

    data: dict[str, Any]
    attention: NeedsAttention
    spend: SpendSummary
    money: Money | None = None


def status_data(store: Store, batch: int | None = None) -> dict[str, Any]:
    counts = store.counts()
    accounts = [{
        "name": a.name, "provider": a.provider, "running": counts.live_by_account.get(a.name, 0),
        "limit": a.capacity, "enabled": a.enabled, "status": a.status.value,
        "cooldown_until": a.cooldown_until,
    } for a in store.list_accounts()]  # (their state_words: :func:`status`, which knows
    # this machine's keys and today's spend)
    jobs = [{
        "id": j.id, "batch": j.batch_id, "row": j.row_number, "name": j.name,
        "state": j.state.value, "sub_status": j.sub_status, "attempts": j.attempts,
        # The provider the job is with (for a routed job: the candidate it was routed to,
        # as the export's "provider" column), and the route's providers, if any.
        "provider": j.provider, "route": j.route.providers() if j.route is not None else None,
        "account": j.account, "provider_job_id": j.provider_job_id,
        "output_path": j.output_path if j.state == JobState.COMPLETED else None,
        "output_host": j.output_host if j.state == JobState.COMPLETED else None,
        "error_label": j.error_label, "last_error": j.error_message,
        "price": j.metadata.get("price"), "cost": j.cost,
        "state_words": job_state_words(j.state.value, j.sub_status, j.error_label,
                                       j.provider_job_id).as_dict(),
    } for j in store.list_jobs(batch_id=batch)]
    # Parked renders (their resume kept killing the process) and creates of unknown
    # outcome wait for the user (engine/attention.py says what to do about each).
    now = time.time()  # spend caps: what each capped batch and account has spent
    spent = store.spend_summary(now, local_day_start(now))
    return {"by_state": counts.by_state, "accounts": accounts, "jobs": jobs,
            "needs_attention": needs_attention(store, batch).as_dict(),
            "spend": spent.as_dict()}


async def status(session: Session, batch: int | None = None) -> StatusReport:
    """Everything ``status`` shows, from one visit to the journal's thread."""
    now = session.clock.now()

    def read(store: Store) -> tuple[StatusReport, list[Account]]:
        data = status_data(store, batch)
        figures = money_of(store, now)
        data["money"] = figures.as_dict()
        attention = needs_attention(store, batch)
        # Each unknown create's last reading of the provider's counts, from its ledger
        # (issue 32 item 6): recorded when read, never read from the provider here.
        evidence = {job_id: found for job_id in attention.submit_unknown[:MAX_EVIDENCE]
                    if (found := recorded_evidence(store.ledger(job_id=job_id), now))
                    is not None}
        for job in data["jobs"]:
            found = evidence.get(job["id"])
            job["create_evidence"] = None if found is None else found.data
        report = StatusReport(data, attention, figures.today, figures)
        return report, store.list_accounts()

    journal = session.journal
    report, rows = await journal.call(read, journal.sync)
    # This machine's own word on each account (issue 21): "key not on this machine", or
    # its address changed on the team database and waits for `accounts confirm`.
    from reelqueue.application.account_figures import figures_fields
    from reelqueue.application.account_views import account_view_words
    from reelqueue.application.accounts import machine_trust
    from reelqueue.application.balance_words import account_balance_words

    trust = await machine_trust(session, rows)
    views = await account_view_words(session)
    assert report.money is not None
    states = account_states(rows, {a["name"]: a["running"] for a in report.data["accounts"]},
                            report.money, trust)
    credits = await account_balance_words(session)
    for account in report.data["accounts"]:
        mine = trust.get(account["name"])
        account["this_machine"] = mine.words if mine is not None else None
        account["state_words"] = states[account["name"]].as_dict()
        account.update(figures_fields(views.get(account["name"]),
                                      credits.get(account["name"])))
    report.data["team_connection"] = team_connection(session)
    return report


def account_states(accounts: list[Account], live: Mapping[str, int], money: Money,
                   trust: Mapping[str, AccountTrust]) -> dict[str, StateWords]:
    """Name -> each account's condition in the one set of words (application.words), from
    its row, its ``live`` renders, today's spend (``money``) and this machine's view of its
    key (``trust``: :func:`~.accounts.machine_trust`): what ``status`` and the API's
    ``GET /v1/accounts`` say (the window's cards call the same words)."""
    return {a.name: account_words(
        a, live=live.get(a.name, 0), today=money.account_today(a.name),
        key_here=getattr(trust.get(a.name), "problem", None) != NO_KEY,
        confirm=getattr(trust.get(a.name), "problem", None) == CONFIRM) for a in accounts}


async def account_states_now(session: Session, summaries: list[AccountSummary],
                             money: Money) -> dict[str, StateWords]:
    """:func:`account_states` of ``summaries`` (the API's accounts, with their live
    renders), this machine's view of their keys read now."""
    from reelqueue.application.accounts import machine_trust

    rows = [s.account for s in summaries]
    return account_states(rows, {s.account.name: s.live for s in summaries}, money,
                          await machine_trust(session, rows))


def team_connection(session: Session) -> dict[str, Any] | None:
    """Whether this machine's connection to the team database is encrypted, as its
    connection says (libpq's ``ssl_in_use`` of the store's first connection: what the
    ``sslmode`` asked for is not what ``prefer`` got), with the warnings of
    ``application.team.connection_warnings``; None for the local journal."""
    mode = session.mode
    if not mode.shared:
        return None
    store = session.journal.sync
    return {"encrypted": mode.encrypted(store), "warnings": mode.connection_warnings(store)}


async def spend(session: Session) -> SpendSummary:
    """What each capped batch has spent, and each account today (since local midnight)."""
    now = session.clock.now()
    return await session.journal.spend_summary(now, local_day_start(now))


@dataclass(frozen=True)
class Money:
    """The money figures a front end shows, from one read of the journal's spend entries
    (issue 23: the window tallied its own and disagreed with ``status``).

    Attributes:
        today: each account's spend since local midnight (with the renders being
            started, its daily cap and what the cap holds back) and each capped batch's.
        spent: each account's spend since it was added: the same entries, all days.
        to_go: what the waiting jobs will cost, per provider and pinned account, from the
            job rows' stored prices (:class:`~reelqueue.store.spend.ToGo`: which jobs
            count and why).
    """

    today: SpendSummary
    spent: dict[str, float]
    to_go: tuple[ToGo, ...] = ()
    #: account -> provider -> routed jobs it took over from that provider (issue 24)
    taken_over: dict[str, dict[str, int]] = field(default_factory=dict)
    #: accounts no longer configured whose spend ``spent`` still counts (issue 34)
    removed: frozenset[str] = frozenset()

    def took_over_words(self, account: str) -> str:
        """"took over 3 from runway, 1 from veo" ("" when none): the card's, status's and
        the API's words."""
        mine = self.taken_over.get(account) or {}
        return ("took over " + ", ".join(f"{n} from {provider}" for provider, n
                                         in sorted(mine.items()))) if mine else ""

    def removed_accounts(self) -> list[str]:
        """The removed accounts that spent something, any day, by name."""
        return sorted(self.removed)

    def account_today(self, name: str) -> AccountSpend | None:
        return next((a for a in self.today.accounts if a.account == name), None)

    def provider_to_go(self, provider: str) -> ToGo | None:
        """The waiting jobs of ``provider`` that any of its accounts may take (not pinned);
        None when there are none."""
        return next((t for t in self.to_go
                     if t.provider == provider and t.account is None), None)

    def account_to_go(self, account: str) -> ToGo | None:
        """The waiting jobs only ``account`` may render (pinned or bound to it)."""
        groups = [t for t in self.to_go if t.account == account]
        if not groups:
            return None
        return ToGo(groups[0].provider, account, round(sum(t.usd for t in groups), 6),
                    sum(t.priced for t in groups), sum(t.unpriced for t in groups))

    @property
    def total_to_go(self) -> tuple[float, int]:
        """(USD, jobs without a price) over every waiting job."""
        return (round(sum(t.usd for t in self.to_go), 6),
                sum(t.unpriced for t in self.to_go))

    def to_go_lines(self) -> list[str]:
        """``status``'s and ``spend``'s lines, one per provider and pinned account:
        "Waiting jobs (runway): est. $3.00 to go", "Waiting jobs for account a1 (runway):
        est. $0.50 to go, 2 without a price"."""
        lines = []
        for t in self.to_go:
            only = f" for account {t.account}" if t.account else ""
            lines.append(f"Waiting jobs{only} ({t.provider}): {t.describe()}")
        return lines

    def as_dict(self) -> dict[str, Any]:
        """The API's ``GET /v1/spend`` and ``status --json``'s ``money``."""
        usd, unpriced = self.total_to_go
        return {
            **self.today.as_dict(),
            "spent": {name: round(usd, 4) for name, usd in self.spent.items()},
            "to_go": [{"provider": t.provider, "account": t.account,
                       "usd": round(t.usd, 4), "priced": t.priced, "unpriced": t.unpriced,
                       "words": t.describe()} for t in self.to_go],
            "to_go_total": {"usd": round(usd, 4), "unpriced": unpriced,
                            "words": to_go_words(usd, unpriced)},
            "taken_over": {name: dict(sorted(by.items()))
                           for name, by in sorted(self.taken_over.items())},
        }


async def money(session: Session) -> Money:
    """:class:`Money`, read on the journal's thread."""
    now = session.clock.now()

    return await session.journal.call(money_of, session.journal.sync, now)


def money_of(store: Store, now: float) -> Money:
    """:class:`Money` from ``store`` (on the journal's thread)."""
    today = store.spend_summary(now, local_day_start(now))
    ever = store.spend_summary(now, 0.0)
    return Money(today, {a.account: a.spent_today for a in ever.accounts}, store.to_go(),
                 store.takeovers(),
                 frozenset(a.account for a in ever.accounts if a.removed))


def doctor_checks(store: Store, instance_alive: bool,
                  videos_dir: Path | None = None) -> dict[str, list[Any]]:
    """The invariant queries, plus every completed job's file with its size and hash:
    each file this machine wrote (or whose machine is not known), under ``videos_dir``
    (the journal's paths are relative to it; a file another machine wrote is there)."""
    results = store.doctor_queries(instance_alive)
    bad_files: list[Any] = []
    here = this_host()
    for job in store.list_jobs(states=[JobState.COMPLETED]):
        if job.output_host not in (None, here):
            continue
        check = check_output(job, videos_dir)
        if not check.exists:
            bad_files.append((job.id, job.output_path, "missing"))
        elif check.size != job.output_size or check.sha256 != job.output_sha256:
            bad_files.append((job.id, job.output_path, "size or sha256 differs"))
    results["completed_file_mismatch"] = bad_files
    outputs: dict[str, list[int]] = {}
    for job in store.list_jobs():
        outputs.setdefault(str(Path(job.output_path)), []).append(job.id)
    results["shared_output_paths"] = [(p, ids) for p, ids in outputs.items() if len(ids) > 1]
    return results


async def doctor(session: Session, instance_alive: bool) -> dict[str, list[Any]]:
    """:func:`doctor_checks` on the journal's thread."""
    journal = session.journal
    return await journal.call(doctor_checks, journal.sync, instance_alive,
                              session.ctx.videos_dir.expanduser().absolute())


@contextmanager
def other_instance_probe(ctx: AppContext) -> Iterator[bool]:
    """Hold the data-folder lock while the body checks, if it is free; yields whether
    another ReelQueue may hold live claims (it holds the folder, or the journal is a team
    database where other machines' claims are legitimate: the team journal's doctor then
    checks them by their leases and their instances' heartbeats instead)."""
    from reelqueue.application.compose import journal_mode
    from reelqueue.store.lockfile import DataDirLock

    lock = DataDirLock(ctx.data_dir)
    try:
        lock.acquire()
        alive = journal_mode(ctx).shared
    except DataDirLocked:
        alive = True
    try:
        yield alive
    finally:
        lock.release()


async def needs_user(session: Session) -> NeedsAttention:
    """The jobs that wait on the user (parked renders, creates of unknown outcome), each
    with what to run next (``run``'s end-of-run summary)."""
    journal = session.journal
    return await journal.call(needs_attention, journal.sync)


def attention_sentences(attention: NeedsAttention) -> list[str]:
    """One plain sentence per kind of job that waits on the user, each kind by its one name
    (application.words), saying what to run next (``status`` and ``run``'s last lines)."""
    lines = []
    if attention.parked:
        n = len(attention.parked)
        lines.append(f"{n} {job_state_words(JobState.PARKED).name}: "
                     f"{'its render exists' if n == 1 else 'their renders exist'}"
                     "; run 'reelqueue retry --parked' (read again, no charge) or see "
                     "'reelqueue status'.")
    if attention.submit_unknown:
        n = len(attention.submit_unknown)
        ids = ", ".join(f"#{i}" for i in attention.submit_unknown[:5])
        more = f" and {n - 5} more" if n > 5 else ""
        lines.append(f"{n} {job_state_words(OUTCOME_UNKNOWN).name} ({ids}{more}): the create "
                     "may have reached the provider and was not sent again (not a failure); "
                     "'reelqueue resolve ID' shows what to look for and the candidates, "
                     "then '--render RID' if the render is there, or '--create-again' "
                     "(paid again) if it is not.")
    return lines


async def check_output_folders(session: Session, videos_dir: Path) -> None:
    """Refuse (an error naming the folder) when a batch with open jobs cannot write its
    folder under ``videos_dir`` (this machine's): ``run`` checks before it starts. A job
    whose path is refused (``..``, an absolute path outside the folder) is not checked
    here: it fails alone, saying why. Read on the journal thread."""
    journal = session.journal
    await journal.call(_check_output_folders, journal.sync, videos_dir)


def _check_output_folders(store: Store, videos_dir: Path) -> None:
    open_states = [s for s in JobState if s not in FINAL]
    folders: set[Path] = set()
    page, offset = 5000, 0
    while True:  # in pages: a queue of 100k jobs must not be held in memory at once
        jobs = store.list_jobs(states=open_states, limit=page, offset=offset)
        folders.update(path.parent for job in jobs
                       if (path := located_output(job.output_path, videos_dir)) is not None)
        if len(jobs) < page:
            break
        offset += page
    for folder in sorted(folders):
        ensure_writable(folder)
