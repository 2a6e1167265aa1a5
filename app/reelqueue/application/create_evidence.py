"""The evidence for an unknown create, kept on the job (issue 32 item 6): what the
provider's usage counts said of a create whose answer was lost ("the provider counted it:
billed", "not counted", "not provable: N creates in the window"), read once on the user's
word and shown, from the ledger, wherever the parked job is seen.

One source: a reading (``resolve JOB``, the window's "Read the provider's counts") is a
ledger entry ``create_evidence`` on the job, with the verdict, the figures, the UTC day,
the account, the model and when it was read (the journal's clock: the team database
server's on PostgreSQL). Every reader — ``status`` and ``status --json``, ``GET
/v1/jobs/{id}``, the web page's needs-attention list, the window's job detail — shows the
newest such entry with its age, and never reads the provider itself: a list is never a
reason to call a provider.

The engine does not read the counts by itself when it parks a create: the counting window
is the create's UTC day, still open when the create is parked, and a provider's usage is
counted with a delay, so a reading then would say "not counted" of a create the provider
bills an hour later. The user reads them when the day has settled.

Reading is all it does: nothing here creates, retries or decides anything (DESIGN.md
invariant 11); ``resolve`` offers the choices. A ledger entry is a row of the shared
journal, so it is read as hostile input (sizes, types, NaN): an unreadable one says so.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import date, datetime
from typing import Any, cast

from reelqueue.application import spend_reconcile
from reelqueue.application.session import Session
from reelqueue.domain.errors import ErrorLabel, InputError, KnownError
from reelqueue.domain.models import Job, LedgerEntry
from reelqueue.domain.spend_reconcile import ABSURD_UNITS, Evidence, Verdict
from reelqueue.domain.states import JobState
from reelqueue.engine.lost_creates import planning_adapter
from reelqueue.providers.base import usage_of

__all__ = ["EVIDENCE_EVENT", "NOT_READ", "READING", "READ_ACTION", "CreateEvidence",
           "evidence_line", "holds_unknown_create", "job_create_evidence",
           "read_create_evidence", "recorded_evidence"]

log = logging.getLogger(__name__)

EVIDENCE_EVENT = "create_evidence"
"""The ledger event of one reading of the provider's counts for a job."""
NOT_PUBLISHED = "not_published"
_VERDICTS: frozenset[str] = frozenset({"billed", "not_counted", "not_provable", "unavailable"})
READ_ACTION = "Read the provider's counts"
"""The action's name (the window's button); ``resolve JOB`` does the same."""
READING = "Provider's counts: reading…"
NOT_READ = ("Provider's counts: not read yet (they can tell whether the provider billed this "
            "create; reading them creates nothing).")
MAX_TEXT = 300
"""A reason, a unit, a model or an account name is kept (and shown) at most this long."""
MAX_CREATES = 1_000_000
_HOLD_DATE_SECONDS = 20 * 3600
"""A reading older than this says its day as well as its time ("as of 2026-12-05 14:02")."""


@dataclass(frozen=True)
class CreateEvidence:
    """The newest reading of the provider's counts for one job, as every front end shows it.

    Attributes:
        words: the one line ("Provider's counts: the provider counted it: billed (60
            credits used on …), as of 14:02.").
        data: the same for ``--json`` and the API: verdict, day, unit, account, model,
            creates_in_window, provider_units, price_units, why, read_at, as_of,
            age_seconds, words.
    """

    words: str
    data: dict[str, Any]


def holds_unknown_create(job: Job) -> bool:
    """Whether ``job`` holds a create whose outcome is unknown (the one rule ``resolve``,
    ``retry`` and this module go by)."""
    return (job.state in (JobState.PARKED, JobState.FAILED) and job.provider_job_id is None
            and job.client_token is not None
            and job.error_label == ErrorLabel.SUBMIT_UNKNOWN.value)


# -- reading a recorded entry (hostile: a row of a shared journal) -------------------------


def _text(value: object) -> str:
    """A string of the row, cut, each control or format character (a newline, a bidi
    override) shown as a space: it is one line of text wherever it goes."""
    if not isinstance(value, str):
        return ""
    return "".join(ch if ch.isprintable() else " " for ch in value[:MAX_TEXT])


def _figure(value: object) -> float | None:
    number = _instant(value)
    return number if number is not None and abs(number) <= ABSURD_UNITS else None


def _instant(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    try:
        number = float(value)
    except OverflowError:  # an int past a float's range
        return None
    return number if math.isfinite(number) else None


def _count(value: object) -> int | None:
    if isinstance(value, bool) or not isinstance(value, int):
        return None
    return value if 0 <= value <= MAX_CREATES else None


def _day(value: object) -> date | None:
    if not isinstance(value, str) or len(value) > 10:
        return None
    try:
        return date.fromisoformat(value)
    except ValueError:
        return None


def _as_of(read_at: float | None, now: float) -> str:
    if read_at is None:
        return "an unknown time"
    try:
        when = datetime.fromtimestamp(read_at)
    except (OverflowError, OSError, ValueError):
        return "an unknown time"
    shape = "%H:%M" if abs(now - read_at) < _HOLD_DATE_SECONDS else "%Y-%m-%d %H:%M"
    return when.strftime(shape)


def evidence_line(detail: Mapping[str, object], now: float) -> CreateEvidence:
    """A recorded reading (a ``create_evidence`` entry's detail) in words and data, its age
    from ``now`` (the reader's clock): the one function that makes the line every front
    end shows. A detail that cannot be read says so; it never raises."""
    read_at = _instant(detail.get("read_at"))
    as_of = _as_of(read_at, now)
    verdict_text = detail.get("verdict")
    day = _day(detail.get("day"))
    unit = _text(detail.get("unit"))[:40]
    why = _text(detail.get("why"))
    creates = _count(detail.get("creates_in_window"))
    provider_units = _figure(detail.get("provider_units"))
    price_units = _figure(detail.get("price_units"))
    verdict: str
    if verdict_text == NOT_PUBLISHED:
        verdict = NOT_PUBLISHED
        words = (f"Provider's counts: {why or 'usage not published by the provider'}, "
                 f"as of {as_of}.")
    else:
        # "billed" and "not counted" hold only for the one create of its window, with
        # the provider's figure (and, for "billed", the create's price) to show.
        readable = (isinstance(verdict_text, str) and verdict_text in _VERDICTS
                    and day is not None and creates is not None
                    and (verdict_text not in ("billed", "not_counted")
                         or (creates == 1 and provider_units is not None))
                    and (verdict_text != "billed" or price_units is not None))
        if readable:
            verdict = str(verdict_text)
            typed = cast(Verdict, verdict)  # one of _VERDICTS: checked just above
            assert day is not None and creates is not None
            evidence = Evidence(typed, day, unit, creates, provider_units, price_units,
                                why)
            words = spend_reconcile.evidence_words(evidence, as_of)
        else:
            verdict = "unavailable"
            why = "the recorded reading cannot be read"
            words = (f"Provider's counts: {spend_reconcile.UNAVAILABLE} ({why}), "
                     f"as of {as_of}.")
    age = None if read_at is None else round(max(0.0, now - read_at), 1)
    return CreateEvidence(words, {
        "verdict": verdict, "day": None if day is None else day.isoformat(),
        "unit": unit or None, "account": _text(detail.get("account")) or None,
        "model": _text(detail.get("model")) or None, "creates_in_window": creates,
        "provider_units": provider_units, "price_units": price_units, "why": why or None,
        "read_at": read_at, "as_of": as_of, "age_seconds": age, "words": words})


def _newest(ledger: Sequence[LedgerEntry]) -> LedgerEntry | None:
    for entry in reversed(ledger):
        if entry.event == EVIDENCE_EVENT and isinstance(entry.detail, Mapping):
            return entry
    return None


def recorded_evidence(ledger: Sequence[LedgerEntry], now: float) -> CreateEvidence | None:
    """The newest reading in a job's ledger (oldest first), None when there is none."""
    entry = _newest(ledger)
    return None if entry is None else evidence_line(entry.detail, now)


async def job_create_evidence(session: Session, job_id: int) -> CreateEvidence | None:
    """The newest reading recorded for ``job_id`` (the journal only; the provider is not
    asked)."""
    return recorded_evidence(await session.journal.ledger(job_id), session.clock.now())


# -- reading the provider's counts now (the user's word) -----------------------------------


async def _journal_now(session: Session) -> float:
    """The time that is compared across machines: the team database's clock where it
    decides (DESIGN.md invariant 14), else this machine's."""
    try:
        server = await session.journal.server_time()
    except Exception:  # a clock read that fails is not a reason to lose the reading
        log.warning("the journal's clock could not be read; this machine's is used",
                    exc_info=True)
        server = None
    return server if server is not None and math.isfinite(server) else session.clock.now()


def _unavailable(why: str) -> dict[str, Any]:
    return {"verdict": "unavailable", "why": why[:MAX_TEXT]}


async def _reading(session: Session, job: Job) -> dict[str, Any]:
    """What the provider's counts say now, as a ledger detail (no read_at yet)."""
    account = None if job.account is None else await session.journal.get_account(job.account)
    model = str(job.params.get("model") or "")[:MAX_TEXT]
    if account is None:
        return _unavailable("the job's account is not configured here")
    if usage_of(planning_adapter(account, session.providers)) is None:
        try:
            title = session.providers.get(account.provider).title
        except KnownError:
            title = account.provider
        return {"verdict": NOT_PUBLISHED, "account": account.name[:MAX_TEXT],
                "model": model, "why": f"usage not published by {title}"[:MAX_TEXT]}
    try:
        found = await spend_reconcile.unknown_create_evidence(session, job)
    except KnownError as exc:
        return {**_unavailable(str(exc)), "account": account.name[:MAX_TEXT], "model": model}
    except Exception as exc:  # a bug of ours or an adapter's: said, logged, never a crash
        log.exception("reading the provider's counts for job %s failed", job.id)
        return {**_unavailable(f"unexpected error: {type(exc).__name__}"),
                "account": account.name[:MAX_TEXT], "model": model}
    if found is None or found.evidence is None:
        return {**_unavailable("the create's day is unknown (no intent in the ledger)"),
                "account": account.name[:MAX_TEXT], "model": model}
    evidence = found.evidence
    return {"verdict": evidence.verdict, "day": evidence.day.isoformat(),
            "unit": evidence.unit[:40], "account": account.name[:MAX_TEXT], "model": model,
            "creates_in_window": evidence.creates_in_window,
            "provider_units": _figure(evidence.provider_units),
            "price_units": _figure(evidence.price_units), "why": evidence.why[:MAX_TEXT]}


async def read_create_evidence(session: Session, job_id: int) -> CreateEvidence:
    """Read the provider's counts for ``job_id``'s unknown create now (from this machine,
    which must hold the account's key), keep the reading on the job's ledger and say it.
    A read that fails is kept as "provider's figures unavailable (why)"; a provider that
    publishes no usage is said once (a second reading writes nothing). InputError when the
    job holds no create whose outcome is unknown."""
    job = await session.journal.get_job(job_id)
    if job is None or not holds_unknown_create(job):
        raise InputError(f"Job {job_id} holds no create with an unknown outcome; nothing "
                         "to weigh.")
    detail = await _reading(session, job)
    ledger = await session.journal.ledger(job_id)
    newest = _newest(ledger)
    if (detail["verdict"] == NOT_PUBLISHED and newest is not None
            and newest.detail.get("verdict") == NOT_PUBLISHED):
        return evidence_line(newest.detail, session.clock.now())
    detail["read_at"] = await _journal_now(session)
    await session.journal.note(EVIDENCE_EVENT, detail["read_at"], job_id=job_id,
                               account=job.account, detail=detail)
    await session.changed(jobs=[job_id])
    return evidence_line(detail, session.clock.now())
