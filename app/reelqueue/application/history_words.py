"""A job's ledger entries in plain words, the one wording of its history: the window's
job detail (ui/format.py passes its locale's number and money) and the web dashboard
(``GET /v1/jobs/{id}/history``) both say a history with these."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping

from reelqueue.application.create_evidence import EVIDENCE_EVENT, evidence_line
from reelqueue.application.words import job_state_words

__all__ = ["event_words", "handover_words", "history_detail"]

Number = Callable[[float], str]
Money = Callable[[float], str]


def _plain_number(value: float) -> str:
    return f"{value:,.0f}"


def _plain_money(value: float) -> str:
    return f"${value:,.3f}" if 0 < value < 0.01 else f"${value:,.2f}"


# Ledger detail keys that are bookkeeping for the engine, not news for the user: the
# instance owning a lease, claim and client tokens, which write a fence refused.
_HIDDEN_DETAIL = frozenset({"owner", "instance", "client_token", "claim_token", "token",
                            "lease_until", "write", "batch_id"})
_DETAIL_NAMES = {"provider_job_id": "provider job id", "from": "was", "error": "error",
                 "found": "found at the provider", "path": "file", "cost": "cost",
                 "attempt": "attempt", "seed": "seed", "state": "state",
                 # a new seed of a finished video (application.jobs.add_seed_variants)
                 "variant_job": "new video in job", "original_job": "a new video of job",
                 "estimated_usd": "est.", "output_path": "file"}


def event_words(event: str) -> str:
    """A ledger event's name as the history's "Event" column says it."""
    return event.replace("_", " ")


def _detail_value(key: str, value: object, number: Number, money: Money) -> str:
    if (key in ("cost", "estimated_usd") and isinstance(value, int | float)
            and not isinstance(value, bool)):
        return money(float(value))
    if key in ("seed", "variant_job", "original_job") and isinstance(value, int):
        return str(value)  # an id or a seed, never "1,234"
    if key in ("from", "state") and isinstance(value, str):
        return job_state_words(value).name  # a state's one name, never its code reworded
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return number(value)
    return str(value)


def history_detail(event: str, detail: Mapping[str, object], *,
                   number: Number = _plain_number, money: Money = _plain_money) -> str:
    """A ledger entry's details in plain words: no owner or token ids, no "resume: False".

    ``resume`` on a claim becomes "picks up the render already submitted" when true and
    disappears when false (a fresh claim is the ordinary case).
    """
    if event == "handed_over":
        return handover_words(detail, money=money)
    if event == EVIDENCE_EVENT:  # the reading's own line, as the parked job shows it
        return evidence_line(detail, time.time()).words
    parts: list[str] = []
    for key, value in detail.items():
        if key in _HIDDEN_DETAIL or value in (None, "", [], {}):
            continue
        if key == "resume":
            if value is True:
                parts.append("picks up the render already submitted")
            continue
        name = _DETAIL_NAMES.get(key, key.replace("_", " "))
        parts.append(f"{name}: {_detail_value(key, value, number, money)}")
    return ", ".join(parts)


def handover_words(detail: Mapping[str, object], *, money: Money = _plain_money) -> str:
    """A routed job's move (issue 24) in words: "runway → luma at $0.40 · runway had no
    free slot" or "runway refused it (invalid input: …) → luma at $0.40"."""
    came, went, price = detail.get("from"), detail.get("to"), detail.get("price")
    at = (f" at {money(float(price))}" if isinstance(price, int | float)
          and not isinstance(price, bool) else ", price unknown")
    if detail.get("at") == "refusal" or detail.get("label"):
        why = detail.get("message") or detail.get("label") or "a refusal"
        return f"{came} refused it ({why}) → {went}{at}"
    why = str(detail.get("why") or "").removeprefix("taken over: ")
    return f"{came} → {went}{at}" + (f" · {why}" if why else "")
