"""Turning journal rows into domain values (shared by the SQLite store and its tests)."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable
from typing import Any

from reelqueue.domain.models import Account, Batch, Job, LedgerEntry
from reelqueue.domain.review import NO_REVIEW, Decision, Review
from reelqueue.domain.routes import Route
from reelqueue.domain.states import AccountStatus, JobState

UNREADABLE = "unreadable"
"""The key of what :func:`loads_or_unreadable` gives for a text it cannot parse."""


def loads_or_unreadable(text: str | bytes) -> Any:
    """A journal column's JSON. The journal is a file on disk (a hand edit, a damaged
    page that still checks): a text that is not JSON, or nests deeper than Python's
    parser goes, reads as ``{"unreadable": why}`` rather than stopping every listing that
    meets its row (``reelqueue doctor`` names such rows)."""
    try:
        return json.loads(text)
    except RecursionError:
        return {UNREADABLE: "a JSON document nested too deep to read"}
    except ValueError:  # UnicodeDecodeError is one
        return {UNREADABLE: "not valid JSON"}


def _json(text: str | None) -> dict[str, Any]:
    if not text or text == "{}":
        return {}
    value = loads_or_unreadable(text)
    return value if isinstance(value, dict) else {}


def job_from_row(sqlite_row: sqlite3.Row) -> Job:
    # One dict per row: sqlite3.Row looks a name up by scanning its columns, which made
    # 35 lookups the biggest cost of listing 100k jobs.
    return job_from_mapping(dict(zip(sqlite_row.keys(), sqlite_row, strict=True)), _json)


def job_from_mapping(row: dict[str, Any], decode: Callable[[Any], dict[str, Any]]) -> Job:
    """A job from its columns by name (SQLite and PostgreSQL rows alike); ``decode`` turns
    the stored ``params``/``metadata`` (JSON text, or PostgreSQL's decoded jsonb) into dicts."""
    return Job(
        id=row["id"], batch_id=row["batch_id"], job_key=row["job_key"],
        row_number=row["row_number"], name=row["name"], prompt=row["prompt"],
        provider=row["provider"], params=decode(row["params"]),
        pinned_account=row["pinned_account"], priority=row["priority"],
        output_path=row["output_path"], state=JobState(row["state"]),
        attempts=row["attempts"], max_attempts=row["max_attempts"], account=row["account"],
        claim_token=row["claim_token"], lease_owner=row["lease_owner"],
        lease_until=row["lease_until"], client_token=row["client_token"],
        provider_job_id=row["provider_job_id"], sub_status=row["sub_status"],
        progress=row["progress"], run_after=row["run_after"],
        output_size=row["output_size"], output_sha256=row["output_sha256"],
        cost=row["cost"], error_class=row["error_class"], error_label=row["error_label"],
        error_message=row["error_message"], created_at=row["created_at"],
        updated_at=row["updated_at"], started_at=row["started_at"],
        finished_at=row["finished_at"], metadata=decode(row["metadata"]),
        output_host=row["output_host"], output_part=row["output_part"],
        route=None if (route := row.get("route")) is None else Route.parse(route),
        review=review_from_mapping(row),
    )


def review_from_mapping(row: dict[str, Any]) -> Review:
    """A job's review columns (v16 / v12, issue 35); a row without them (a query that
    names its columns) or with values no CHECK let in reads as no review."""
    decision = row.get("decision")
    version = row.get("decision_version")
    if version is None:
        return NO_REVIEW
    rating = row.get("rating")
    at, by = row.get("decided_at"), row.get("decided_by")
    return Review(Decision(decision) if decision in ("pick", "reject") else Decision.NONE,
                  rating if isinstance(rating, int) and 1 <= rating <= 5 else None,
                  float(at) if isinstance(at, int | float) else None,
                  by if isinstance(by, str) else None,
                  version if isinstance(version, int) and version >= 0 else 0)


def account_from_row(row: sqlite3.Row) -> Account:
    return account_from_mapping(row, _json)


def batch_from_row(row: sqlite3.Row) -> Batch:
    return batch_from_mapping(row, _json)


def ledger_from_row(row: sqlite3.Row) -> LedgerEntry:
    return ledger_from_mapping(row, _json)


# The same rows read by name, from SQLite's rows or PostgreSQL's dicts alike; ``decode``
# turns the stored JSON (text, or PostgreSQL's decoded jsonb) into a dict.
def account_from_mapping(row: Any, decode: Callable[[Any], dict[str, Any]]) -> Account:
    return Account(
        name=row["name"], provider=row["provider"], capacity=row["capacity"],
        position=row["position"], enabled=bool(row["enabled"]), base_url=row["base_url"],
        key_ref=row["key_ref"], status=AccountStatus(row["status"]),
        status_detail=row["status_detail"], cooldown_until=row["cooldown_until"],
        settings=decode(row["settings"]), created_at=row["created_at"],
    )


def batch_from_mapping(row: Any, decode: Callable[[Any], dict[str, Any]]) -> Batch:
    return Batch(
        id=row["id"], name=row["name"], source_path=row["source_path"],
        output_dir=row["output_dir"], max_attempts=row["max_attempts"],
        created_at=row["created_at"], settings=decode(row["settings"]),
    )


def ledger_from_mapping(row: Any, decode: Callable[[Any], dict[str, Any]]) -> LedgerEntry:
    return LedgerEntry(
        seq=row["seq"], at=row["at"], event=row["event"], job_id=row["job_id"],
        account=row["account"], claim_token=row["claim_token"], detail=decode(row["detail"]),
    )
