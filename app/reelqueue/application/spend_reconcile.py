"""Cost reconciliation (issue 32 item 5) and the evidence for an unknown create (item 6),
for every front end: ``reelqueue spend --reconcile``, ``GET /v1/spend?reconcile=1`` and
``reelqueue resolve JOB``; the one place their words are made.

Per account, model and UTC day, what the journal started and priced (the ledger's
``submitting`` and ``spend`` entries) is lined up against what the provider reports it
used (an adapter's ``usage_report``, read now from this machine, which must hold the key),
and each difference is named (``domain.spend_reconcile``). Reading is all it does: nothing
here starts, stops or creates a render (DESIGN.md invariant 11).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from typing import Any

import httpx2

from reelqueue.application.accounts import key_answer
from reelqueue.application.session import Session
from reelqueue.domain.errors import InputError, KnownError, ProviderError
from reelqueue.domain.models import Account, Job, LedgerEntry
from reelqueue.domain.spend_reconcile import (
    MAX_USAGE_DAYS,
    DayLine,
    Evidence,
    JournalDay,
    TableEntry,
    UsageReport,
    compare_day,
    evidence_of,
)
from reelqueue.engine.account_keys import CONFIRM
from reelqueue.engine.lost_creates import planning_adapter
from reelqueue.providers.base import SearchableProvider, usage_of
from reelqueue.providers.httpx_session import session_of
from reelqueue.providers.registry import build_provider
from reelqueue.store.provider_limits import job_model
from reelqueue.store.spend import SPEND_EVENT

__all__ = ["DEFAULT_DAYS", "MAX_DAYS", "UNAVAILABLE", "AccountReconciliation", "EvidenceWords",
           "JournalTally", "Listed", "RenderAttribution",
           "SpendReconciliation", "day_line_words", "evidence_words", "price_read_on",
           "reconcile_spend", "unknown_create_evidence"]

log = logging.getLogger(__name__)

UNAVAILABLE = "provider's figures unavailable"
DEFAULT_DAYS = 7
MAX_DAYS = MAX_USAGE_DAYS
"""At most this many days are reconciled at once (Runway's own bound on a usage query)."""
LEDGER_PAGE = 5_000
MAX_LEDGER_ENTRIES = 2_000_000
"""The ledger is read at most this far (a journal's whole history, pruned by age)."""


@dataclass(frozen=True)
class AccountReconciliation:
    """One account reconciled.

    Attributes:
        account: its name. provider: its provider's title.
        unit: the provider's unit ("credits"), "" when it publishes no usage.
        lines: each model and day with a figure on either side, oldest first.
        unavailable: why the provider's figures could not be used ("" when they could);
            "not published by Fal" when the provider publishes no usage.
        usd_per_unit: what a unit is worth (None: not convertible).
        renders: per-render attribution where the provider lists renders (None: not).
    """

    account: str
    provider: str
    unit: str
    lines: tuple[DayLine, ...]
    unavailable: str = ""
    usd_per_unit: float | None = None
    renders: RenderAttribution | None = None


@dataclass(frozen=True)
class SpendReconciliation:
    """Every account's reconciliation over ``start`` .. ``end`` (not included), UTC days."""

    start: date
    end: date
    accounts: tuple[AccountReconciliation, ...] = field(default_factory=tuple)

    def lines(self) -> list[str]:
        out = [f"Cost reconciliation, UTC days {self.start.isoformat()} to "
               f"{(self.end - timedelta(days=1)).isoformat()} (the journal against the "
               "provider's usage):"]
        for account in self.accounts:
            renders = ([] if account.renders is None else
                       account.renders.words(account.provider))
            if account.unavailable:
                out.append(f"Account {account.account} ({account.provider}): "
                           f"{account.unavailable}")
                for line in account.lines:
                    out.append(f"  {_journal_words(line.journal)}")
            elif not account.lines:
                out.append(f"Account {account.account} ({account.provider}): no usage "
                           "and no creates in these days")
            else:
                out.append(f"Account {account.account} ({account.provider}):")
                out.extend(f"  {day_line_words(line)}" for line in account.lines)
            out.extend(renders)
        if not self.accounts:
            out.append("No accounts.")
        return out

    def as_dict(self) -> dict[str, Any]:
        return {"start": self.start.isoformat(),
                "end": (self.end - timedelta(days=1)).isoformat(),
                "accounts": [{
                    "account": a.account, "provider": a.provider, "unit": a.unit or None,
                    "unavailable": a.unavailable or None,
                    "days": [_line_dict(line) for line in a.lines],
                    "renders": None if a.renders is None else a.renders.as_dict()}
                    for a in self.accounts]}


def price_read_on(source: str) -> str | None:
    """The last date (YYYY-MM-DD) a price-table source says it was read, or None."""
    found = re.findall(r"\d{4}-\d{2}-\d{2}", source)
    return found[-1] if found else None


def _number(value: float) -> str:
    return f"{value:,.0f}" if float(value).is_integer() else f"{value:,.2f}"


def _journal_words(journal: JournalDay) -> str:
    priced = f"${journal.priced_usd:.2f}"
    unpriced = f", {journal.unpriced} unpriced" if journal.unpriced else ""
    return (f"{journal.day.isoformat()} {journal.model}: the journal started "
            f"{journal.creates} create{'s' if journal.creates != 1 else ''} priced "
            f"{priced}{unpriced}")


def _table_words(line: DayLine) -> str:
    table = line.table
    if table is None or table.unit_per_second is None:
        return f"no price in {line.unit} in the table for {line.journal.model}"
    read = price_read_on(table.source)
    return (f"the table's {table.model} price, {_number(table.unit_per_second)} "
            f"{line.unit}/s (source: {table.source}{'' if read else ', date unknown'})")


def day_line_words(line: DayLine) -> str:
    """One model and day in words (the journal's figure, the provider's, the name)."""
    head = _journal_words(line.journal)
    if line.kind == "unavailable":
        return f"{head}; {UNAVAILABLE} ({line.why})"
    assert line.provider_units is not None and line.journal_units is not None
    unit = line.unit
    figures = (f"{head} = {_number(line.journal_units)} {unit}; the provider used "
               f"{_number(line.provider_units)} {unit}")
    difference = line.difference or 0.0
    if line.kind == "matches":
        return f"{figures}: matches"
    if line.kind == "unknown_renders":
        if line.journal.creates == 0:
            return (f"{figures}: {_number(difference)} {unit} of renders the journal does "
                    "not know (another tool on the key, or a lost create that was billed)")
        words = (f"{figures}: {line.renders} render{'s' if line.renders != 1 else ''} "
                 "the journal does not know (another tool on the key, or a lost create "
                 f"that was billed), {_number(difference)} {unit}")
        if line.drift_also_fits and line.matching_per_second is not None:
            words += (f"; if there were none, a price drift: {_table_words(line)} would "
                      f"have to be {_number(line.matching_per_second)} {unit}/s")
        return words
    if line.kind == "refund":
        worth = (f"{line.renders} render{'s' if line.renders != 1 else ''}' worth"
                 if line.renders else f"{_number(-difference)} {unit}")
        return (f"{figures}: refunds, {worth} less (renders that failed and were not "
                "charged, or credits given back)")
    more = "more" if difference > 0 else "less"
    share = abs(difference) / line.journal_units * 100 if line.journal_units else 0.0
    matching = ("" if line.matching_per_second is None else
                f"; the price that would match: {_number(line.matching_per_second)} "
                f"{unit}/s")
    return (f"{figures}: price drift, the provider charged {share:.0f} % {more} than "
            f"{_table_words(line)}{matching}")


def _line_dict(line: DayLine) -> dict[str, Any]:
    table = line.table
    return {
        "day": line.journal.day.isoformat(), "model": line.journal.model,
        "creates": line.journal.creates, "priced_usd": round(line.journal.priced_usd, 6),
        "unpriced": line.journal.unpriced, "seconds": line.journal.seconds,
        "job_ids": list(line.journal.job_ids), "unit": line.unit,
        "journal_units": line.journal_units, "provider_units": line.provider_units,
        "difference": line.difference, "kind": line.kind, "renders": line.renders,
        "matching_per_second": line.matching_per_second,
        "drift_also_fits": line.drift_also_fits, "why": line.why or None,
        "table": None if table is None else {
            "model": table.model, "unit_per_second": table.unit_per_second,
            "source": table.source, "read_on": price_read_on(table.source)},
        "words": day_line_words(line)}


# -- the journal's side -------------------------------------------------------------------


def _day_of(at: float) -> date:
    return datetime.fromtimestamp(at, UTC).date()


def _seconds(job: Job) -> float:
    value = job.params.get("duration")
    if isinstance(value, bool) or not isinstance(value, int | float) or not value > 0:
        return 0.0
    return float(min(value, 3_600))


@dataclass
class _Bucket:
    creates: set[tuple[int, str]] = field(default_factory=set)
    usd: float = 0.0
    unpriced: int = 0
    seconds: float = 0.0
    jobs: list[int] = field(default_factory=list)


class JournalTally:
    """What the journal started per account, model and UTC day, from its jobs and ledger
    entries fed in order: each create once (an intent's ``submitting`` entry, by client
    token: the same intent again, an unresolved create re-entering SUBMITTING to be looked
    up, sends nothing; an intent withdrawn before it left is not one), and the spend
    ledger's prices (refunds and the provider's reported costs included). A job naming no
    model counts under the model it renders with, ``default_models[account]`` (as the
    claim counts it), "" where that is unknown. Pure: every store's entries are read the
    same way."""

    def __init__(self, jobs: Iterable[Job], start: date, end: date,
                 default_models: Mapping[str, str | None] | None = None) -> None:
        self._jobs = {job.id: job for job in jobs}
        self._defaults = dict(default_models or {})
        self._begin = datetime(start.year, start.month, start.day, tzinfo=UTC).timestamp()
        self._stop = datetime(end.year, end.month, end.day, tzinfo=UTC).timestamp()
        self._sent: dict[tuple[int, str], tuple[str, str, date]] = {}
        self._tokens: dict[tuple[int, str], str] = {}
        self._spends: list[tuple[int, str, float, date]] = []

    def add(self, entries: Iterable[LedgerEntry]) -> None:
        for entry in entries:
            if entry.job_id is None or not self._begin <= entry.at < self._stop:
                continue
            job = self._jobs.get(entry.job_id)
            account = entry.account or (job.account if job else None)
            if job is None or account is None:
                continue
            model = self._model(job, account)
            day = _day_of(entry.at)
            if entry.event == "submitting":
                client = str(entry.detail.get("client_token") or entry.claim_token or "")
                self._sent.setdefault((job.id, client), (account, model, day))
                self._tokens[(job.id, entry.claim_token or "")] = client
            elif entry.event == "intent_withdrawn":
                client = self._tokens.get((job.id, entry.claim_token or ""), "")
                self._sent.pop((job.id, client), None)
            elif entry.event == SPEND_EVENT:
                usd = entry.detail.get("usd")
                if isinstance(usd, int | float) and not isinstance(usd, bool):
                    self._spends.append((job.id, account, float(usd), day))

    def _model(self, job: Job, account: str) -> str:
        return job_model(job.params.get("model"), self._defaults.get(account))

    def buckets(self) -> dict[tuple[str, str, date], _Bucket]:
        buckets: dict[tuple[str, str, date], _Bucket] = {}
        for (job_id, token), key in self._sent.items():
            job = self._jobs[job_id]
            bucket = buckets.setdefault(key, _Bucket())
            bucket.creates.add((job_id, token))
            bucket.seconds += _seconds(job)
            bucket.jobs.append(job_id)
            price = job.metadata.get("price")
            if isinstance(price, bool) or not isinstance(price, int | float):
                bucket.unpriced += 1
        for job_id, account, usd, day in self._spends:
            model = self._model(self._jobs[job_id], account)
            buckets.setdefault((account, model, day), _Bucket()).usd += usd
        return buckets

    def days(self) -> dict[tuple[str, str, date], JournalDay]:
        """(account, model, day) -> what the journal started."""
        return {(account, model, day): _journal_day(account, model, day, bucket)
                for (account, model, day), bucket in self.buckets().items()}


async def _journal_days(session: Session, start: date, end: date
                        ) -> dict[tuple[str, str, date], _Bucket]:
    """:class:`JournalTally` over the session's journal, its ledger read in pages."""
    journal = session.journal
    tally = JournalTally(await journal.list_jobs(), start, end,
                         _default_models(session, await journal.list_accounts()))
    seq, read = 0, 0
    while read < MAX_LEDGER_ENTRIES:
        page = await journal.ledger_after(seq, LEDGER_PAGE)
        if not page:
            break
        read += len(page)
        seq = page[-1].seq
        tally.add(page)
    return tally.buckets()


def _default_models(session: Session, accounts: Iterable[Account]) -> dict[str, str | None]:
    """Each account's model for the jobs naming none (the claim's, engine.Engine)."""
    return {a.name: session.providers.default_model(a.provider, a.settings)
            for a in accounts}


# -- the provider's side ------------------------------------------------------------------


async def _usage(session: Session, account: Account, start: date, end: date
                 ) -> UsageReport | str:
    """The provider's usage for ``account``, or why not (words)."""
    async with httpx2.AsyncClient(timeout=30.0, follow_redirects=False) as client:
        adapter = await _adapter(session, account, client)
        if isinstance(adapter, str):
            return adapter
        reader = usage_of(adapter)
        if reader is None:
            return f"usage not published by {session.providers.get(account.provider).title}"
        try:
            return await reader.usage_report(start, end)
        except ProviderError as exc:
            return str(exc)
        except Exception as exc:  # an adapter's bug: said, logged, never a crash
            log.exception("reading the usage of %s failed", account.name)
            return f"unexpected error: {type(exc).__name__}"


async def _adapter(session: Session, account: Account, client: httpx2.AsyncClient
                   ) -> object | str:
    """The account's adapter with its key from this machine, or why none (words)."""
    info = session.providers.get(account.provider)
    answer = await key_answer(session, account)
    if answer.problem == CONFIRM:
        return f"{answer.detail}; nothing was sent"
    if answer.key is None and (info.requires_key or account.key_ref):
        return ("key not on this machine; reconcile where the key is (a machine of the "
                "team that renders for it)")
    base_url = account.base_url
    if account.provider == "mock" and not base_url:
        base_url = await session.ensure_mock()
    try:
        return build_provider(info, session_of(client), account=account.name,
                              base_url=base_url, api_key=answer.key,
                              settings=account.settings)
    except ValueError as exc:
        return f"its address cannot be used ({exc})"


@dataclass(frozen=True)
class Listed:
    """One render the provider lists that no job of the journal holds."""

    provider_job_id: str
    created_at: float | None
    status: str


@dataclass(frozen=True)
class RenderAttribution:
    """Per-render attribution where the provider lists the account's renders (fal's
    request history, Replicate's predictions, Luma's generations, an OpenAI-compatible
    list, the mock): each listed render is a job's, or one the journal does not know.

    Attributes:
        listed: renders listed in the days reconciled.
        known: of them, those a job of the journal holds.
        unknown: the others (another tool on the key, or a lost create that was
            billed), at most :data:`MAX_LISTED_UNKNOWN`.
        complete: the list provably covers the days (else more may exist).
        unavailable: why the list could not be read ("" when it was).
    """

    listed: int = 0
    known: int = 0
    unknown: tuple[Listed, ...] = ()
    complete: bool = False
    unavailable: str = ""

    def words(self, title: str) -> list[str]:
        if self.unavailable:
            return [f"  renders listed by {title}: {UNAVAILABLE} ({self.unavailable})"]
        more = "" if self.complete else " (the list may be incomplete: more may exist)"
        lines = [f"  renders listed by {title} in these days: {self.listed}, {self.known} "
                 f"of them the journal's; {len(self.unknown)} the journal does not know"
                 + (" (another tool on the key, or a lost create that was billed)"
                    if self.unknown else "") + more]
        for record in self.unknown:
            created = ("created at an unknown time" if record.created_at is None else
                       "created " + datetime.fromtimestamp(record.created_at, UTC).strftime(
                           "%Y-%m-%d %H:%M UTC"))
            lines.append(f"    {record.provider_job_id} ({created}, {record.status})")
        return lines

    def as_dict(self) -> dict[str, Any]:
        return {"listed": self.listed, "known": self.known, "complete": self.complete,
                "unavailable": self.unavailable or None,
                "unknown": [{"provider_job_id": r.provider_job_id,
                             "created_at": r.created_at, "status": r.status}
                            for r in self.unknown]}


MAX_LISTED_UNKNOWN = 50


async def _attribution(session: Session, account: Account, start: date, end: date
                       ) -> RenderAttribution | None:
    """The account's listed renders in ``start`` .. ``end``, each attributed (None: its
    provider lists none that can be read for this account)."""
    if not _searchable(planning_adapter(account, session.providers)):
        return None
    since = datetime(start.year, start.month, start.day, tzinfo=UTC).timestamp()
    until = min(datetime(end.year, end.month, end.day, tzinfo=UTC).timestamp(),
                session.clock.now())
    async with httpx2.AsyncClient(timeout=30.0, follow_redirects=False) as client:
        adapter = await _adapter(session, account, client)
        if isinstance(adapter, str):
            return RenderAttribution(unavailable=adapter)
        if not _searchable(adapter):
            return None
        assert isinstance(adapter, SearchableProvider)
        try:
            result = await adapter.search(since, until)
        except ProviderError as exc:
            return RenderAttribution(unavailable=str(exc))
        except Exception as exc:  # an adapter's bug: said, logged, never a crash
            log.exception("listing the renders of %s failed", account.name)
            return RenderAttribution(unavailable=f"unexpected error: {type(exc).__name__}")
    records = [r for r in result.records
               if r.created_at is None or since <= r.created_at < until]
    known = await session.journal.known_provider_job_ids(
        account.provider, account.name, [r.provider_job_id for r in records])
    unknown = [Listed(r.provider_job_id[:200], r.created_at, r.status[:40])
               for r in records if r.provider_job_id not in known]
    return RenderAttribution(len(records), len(records) - len(unknown),
                             tuple(unknown[:MAX_LISTED_UNKNOWN]), result.complete)


def _searchable(adapter: object) -> bool:
    return isinstance(adapter, SearchableProvider) and bool(adapter.supports_search)


def _publishes_usage(session: Session, account: Account) -> bool:
    return usage_of(planning_adapter(account, session.providers)) is not None


async def reconcile_spend(session: Session, days: int = DEFAULT_DAYS,
                          account_names: Sequence[str] | None = None) -> SpendReconciliation:
    """The last ``days`` UTC days (today included) of every account (or those named)."""
    if not 1 <= days <= MAX_USAGE_DAYS:
        raise InputError(f"Reconcile 1 to {MAX_USAGE_DAYS} days (the providers' own bound); "
                         f"{days} is not.")
    end = _day_of(session.clock.now()) + timedelta(days=1)
    start = end - timedelta(days=days)
    accounts = await session.journal.list_accounts()
    if account_names is not None:
        missing = set(account_names) - {a.name for a in accounts}
        if missing:
            raise InputError(f"No account named {sorted(missing)[0]!r}.")
        accounts = [a for a in accounts if a.name in account_names]
    journal = await _journal_days(session, start, end)
    out: list[AccountReconciliation] = []
    for account in accounts:
        try:
            info = session.providers.get(account.provider)
        except KnownError as exc:
            out.append(AccountReconciliation(account.name, account.provider, "", (),
                                             f"{UNAVAILABLE} ({exc})"))
            continue
        mine = {(model, day): bucket for (name, model, day), bucket in journal.items()
                if name == account.name}
        charging = info.params.charging
        unit = charging.unit or ""
        renders = await _attribution(session, account, start, end)
        if not _publishes_usage(session, account):
            lines = tuple(_unread_line(model, day, bucket, account.name, unit)
                          for (model, day), bucket in sorted(mine.items(),
                                                             key=lambda kv: (kv[0][1], kv[0][0])))
            out.append(AccountReconciliation(account.name, info.title, unit, lines,
                                             f"usage not published by {info.title}",
                                             renders=renders))
            continue
        report = await _usage(session, account, start, end)
        why = report if isinstance(report, str) else (report.problem or "")
        if why:
            lines = tuple(_unread_line(model, day, bucket, account.name, unit)
                          for (model, day), bucket in sorted(mine.items(),
                                                             key=lambda kv: (kv[0][1], kv[0][0])))
            out.append(AccountReconciliation(account.name, info.title, unit, lines,
                                             f"{UNAVAILABLE} ({why})", renders=renders))
            continue
        assert isinstance(report, UsageReport)
        used = {(u.model, u.day): u.amount for u in report.days}
        keys = sorted(set(mine) | set(used), key=lambda k: (k[1], k[0]))
        compared: list[DayLine] = []
        for model, day in keys:
            bucket = mine.get((model, day), _Bucket())
            per_second = info.params.unit_price_per_second.get(model)
            table = TableEntry(model, per_second, info.params.price_source)
            compared.append(compare_day(
                _journal_day(account.name, model, day, bucket), used.get((model, day), 0.0),
                report.unit, charging.usd_per_unit, table))
        out.append(AccountReconciliation(account.name, info.title, report.unit,
                                         tuple(compared), "", charging.usd_per_unit, renders))
    return SpendReconciliation(start, end, tuple(out))


def _journal_day(account: str, model: str, day: date, bucket: _Bucket) -> JournalDay:
    return JournalDay(account, model, day, len(bucket.creates), bucket.usd, bucket.unpriced,
                      bucket.seconds, tuple(sorted(set(bucket.jobs))))


def _unread_line(model: str, day: date, bucket: _Bucket, account: str, unit: str) -> DayLine:
    return DayLine(_journal_day(account, model, day, bucket), unit, None, None, "unavailable")


# -- item 6: the evidence for one unknown create ------------------------------------------


@dataclass(frozen=True)
class EvidenceWords:
    """What the provider's counts say of a job's unknown create, in words.

    Attributes:
        words: one line for ``resolve`` ("the provider counted it: billed (...)").
        data: the same for ``--json`` and the API.
        evidence: the reading itself (application.create_evidence keeps it in the ledger).
    """

    words: str
    data: dict[str, Any]
    evidence: Evidence | None = None


def evidence_words(evidence: Evidence, as_of: str = "") -> str:
    """``evidence`` in the user's words (information: it decides nothing); ``as_of``: when
    it was read ("14:02"), for a figure shown later from the ledger."""
    words = _evidence_words(evidence)
    return f"{words.removesuffix('.')}, as of {as_of}." if as_of else words


def _evidence_words(evidence: Evidence) -> str:
    day = evidence.day.isoformat()
    unit = evidence.unit
    head = "Provider's counts:"
    if evidence.verdict == "unavailable":
        return f"{head} {UNAVAILABLE} ({evidence.why})."
    used = ("" if evidence.provider_units is None else
            f"{_number(evidence.provider_units)} {unit}")
    price = ("" if evidence.price_units is None else
             f"{_number(evidence.price_units)} {unit}")
    if evidence.verdict == "billed":
        return (f"{head} the provider counted it: billed ({used} used on "
                f"{day} UTC for this model, this create's price {price}, and it was the "
                "only create the journal started there that day; another tool on the key "
                "would make the same figure).")
    if evidence.verdict == "not_counted":
        return (f"{head} not counted (0 {unit} used on {day} UTC for this "
                "model, where this was the only create the journal started that day).")
    return (f"{head} not provable: {evidence.why} ({day} UTC"
            + (f", the provider used {used}" if used else "") + ").")


async def unknown_create_evidence(session: Session, job: Job) -> EvidenceWords | None:
    """What the provider's usage says of ``job``'s lost create (None: its provider
    publishes no usage, or the create's day is unknown). Reads only."""
    account = None if job.account is None else await session.journal.get_account(job.account)
    if account is None or not _publishes_usage(session, account):
        return None
    intent = None
    for entry in reversed(await session.journal.ledger(job.id)):
        if entry.event == "submitting" and (entry.detail.get("client_token") == job.client_token
                                            or job.client_token is None):
            intent = entry
            break
    if intent is None:
        return None
    day = _day_of(intent.at)
    info = session.providers.get(account.provider)
    model = job_model(job.params.get("model"),
                      session.providers.default_model(account.provider, account.settings))
    journal = await _journal_days(session, day, day + timedelta(days=1))
    bucket = journal.get((account.name, model, day), _Bucket())
    charging = info.params.charging
    price = job.metadata.get("price")
    price_units = (float(price) / charging.usd_per_unit
                   if isinstance(price, int | float) and not isinstance(price, bool)
                   and charging.usd_per_unit else None)
    report = await _usage(session, account, day, day + timedelta(days=1))
    if isinstance(report, str) or report.problem:
        why = report if isinstance(report, str) else (report.problem or "")
        evidence = evidence_of(day, len(bucket.creates), None, charging.unit or "", price_units,
                               why)
    else:
        amount = sum(u.amount for u in report.days if u.model == model and u.day == day)
        evidence = evidence_of(day, len(bucket.creates), amount, report.unit, price_units)
    data = {"verdict": evidence.verdict, "day": day.isoformat(), "unit": evidence.unit,
            "account": account.name, "model": model,
            "creates_in_window": evidence.creates_in_window,
            "provider_units": evidence.provider_units, "price_units": evidence.price_units,
            "why": evidence.why or None}
    words = evidence_words(evidence)
    return EvidenceWords(words, {**data, "words": words}, evidence)
