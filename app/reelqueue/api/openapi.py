"""The OpenAPI 3.1 document served at ``/v1/openapi.json``: every route with every answer
it can give, each with a schema (tests check that the document names exactly the served
routes, that every response has a schema, and a fuzzer checks every answer it gets is
documented for its operation). Errors are RFC 9457 problems (``Problem``)."""

from __future__ import annotations

from typing import Any

from reelqueue import __version__
from reelqueue.domain.routes import RoutePolicy, Tolerance
from reelqueue.domain.states import JobState

MAX_ID = 2**63 - 1
PROBLEM_TYPE = "application/problem+json"
STATES = [state.value for state in JobState]


RENDER_ID_SCHEMA: dict[str, Any] = {
    "type": "string", "minLength": 1, "maxLength": 500, "pattern": "\\S",
    "not": {"pattern": "[\\u0000-\\u001f\\u007f-\\u009f]"}}
"""A render id: something besides spaces, and no control character (C0, DEL, C1) anywhere
(a ``not`` rather than an anchored pattern: Python's ``$`` also matches before a final
newline)."""

def _ref(name: str) -> dict[str, str]:
    return {"$ref": f"#/components/schemas/{name}"}


def _json(description: str, schema: dict[str, Any]) -> dict[str, Any]:
    return {"description": description, "content": {"application/json": {"schema": schema}}}


def _problem(description: str) -> dict[str, Any]:
    return {"description": description,
            "content": {PROBLEM_TYPE: {"schema": _ref("Problem")}}}


def _op(summary: str, scope: str | None, responses: dict[str, dict[str, Any]],
        **extra: Any) -> dict[str, Any]:
    op: dict[str, Any] = {"summary": summary, "responses": dict(responses)}
    if scope is None:
        op["security"] = []
    else:
        op["x-scope"] = scope
        op["responses"].setdefault("401", _problem("missing or unknown token"))
        op["responses"].setdefault("403", _problem("the token lacks the scope"))
        op["responses"].setdefault("429", _problem(
            "too many failed authentications are waiting; Retry-After"))
    # Refused by the HTTP parser before any route (api/parse_errors.py), for every path.
    op["responses"].setdefault("414", _problem("the request line is over 8 KiB"))
    op["responses"].setdefault("431", _problem("a header is over 8 KiB, or too many"))
    op.update(extra)
    return op


def _integer(minimum: int, maximum: int = MAX_ID, **extra: Any) -> dict[str, Any]:
    return {"type": "integer", "minimum": minimum, "maximum": maximum, **extra}


NULLABLE_STRING = {"type": ["string", "null"]}
NULLABLE_NUMBER = {"type": ["number", "null"]}
DURATION = {"type": ["string", "number"], "exclusiveMinimum": 0,
            "description": "seconds; a number must be above 0 (the import refuses 0 and "
                           "negative durations; which lengths a provider offers is its "
                           "own rule, answered 422)"}
PARAMS = {"type": "object", "additionalProperties": False, "properties": {
    name: DURATION if name == "duration" else {"type": ["string", "number"]} for name in (
        "model", "duration", "aspect_ratio", "resolution", "seed", "negative_prompt")}}

ROUTE_POLICIES = [policy.value for policy in RoutePolicy]
TOLERANCES = [tolerance.value for tolerance in Tolerance]
WHY = {"type": "object", "required": ["provider", "why"], "properties": {
    "provider": {"type": "string"}, "why": {"type": "string"}}}

SCHEMAS: dict[str, Any] = {
    "Route": {
        "type": "object", "required": ["providers", "policy", "refused"],
        "description": "where a routed job may render (issue 24): its providers best "
                       "first; 'refused' ones gave a definite refusal and are not tried "
                       "again; 'left_out' ones could not take the row at import",
        "properties": {
            "providers": {"type": "array", "items": {"type": "string"}},
            "policy": {"type": "string", "enum": ROUTE_POLICIES},
            "tolerance": {"type": "string", "enum": TOLERANCES},
            "on_policy": {"type": "boolean"},
            "refused": {"type": "array", "items": WHY},
            "left_out": {"type": "array", "items": WHY},
            "candidates": {
                "type": "array", "description": "in a batch's preview only",
                "items": {"type": "object", "properties": {
                    "provider": {"type": "string"}, "params": {"type": "object"},
                    "price_usd": {"type": ["number", "null"]},
                    "changed": {"type": "object", "description": "field -> [as written, "
                                                                 "as sent]",
                                "additionalProperties": {"type": "array"}}}}}}},
    "Problem": {
        "type": "object", "required": ["type", "title", "status", "detail"],
        "description": "RFC 9457; 'error' repeats 'detail' for older clients; 'fields' "
                       "names each refused field",
        "properties": {
            "type": {"type": "string"}, "title": {"type": "string"},
            "status": {"type": "integer"}, "detail": {"type": "string"},
            "error": {"type": "string"},
            "fields": {"type": "object", "additionalProperties": {"type": "string"}},
            "job_id": {"type": "integer"}, "waiting": {"type": "integer"},
            "limit": {"type": "integer"}}},
    "JobRequest": {
        "type": "object", "additionalProperties": False, "required": ["prompt"],
        "properties": {
            "prompt": {"type": "string", "minLength": 1, "maxLength": 20000},
            "provider": {"type": "string", "maxLength": 500,
                         "description": "provider kind (default mock)"},
            "account": {"type": "string", "maxLength": 500,
                        "description": "pin the job to this account"},
            "name": {"type": "string", "maxLength": 500},
            "batch": {"type": "string", "maxLength": 500,
                      "description": "batch name (default 'api')"},
            "priority": {"type": "integer", "minimum": -1_000_000, "maximum": 1_000_000},
            "params": PARAMS}},
    "BatchItem": {
        "type": "object", "additionalProperties": False,
        "description": "each field a string or a number; null is refused (leave the "
                       "field out)",
        "properties": {name: {"type": ["string", "number"]} for name in (
            "prompt", "provider", "account", "name", "priority", "id", "model",
            "aspect_ratio", "resolution", "seed", "negative_prompt")}
        | {"duration": DURATION, "params": PARAMS}},
    "Submitted": {"type": "object", "required": ["id", "replay"], "properties": {
        "id": {"type": "integer"}, "replay": {"type": "boolean"}}},
    "StateWords": {
        "type": "object", "required": ["name", "hint"],
        "description": "the state's (or condition's) one name, the same in the window, the "
                       "command line and this API, and one sentence of what the user can do "
                       "(issue 34); show these, never the state's code",
        "properties": {"name": {"type": "string"}, "hint": {"type": "string"}}},
    "Job": {"type": "object", "required": ["id", "state", "state_words", "prompt"],
            "properties": {
        "id": {"type": "integer"}, "batch_id": {"type": "integer"},
        "name": {"type": "string"}, "prompt": {"type": "string"},
        "provider": {"type": "string"}, "account": NULLABLE_STRING,
        "params": {"type": "object"}, "priority": {"type": "integer"},
        "state": {"type": "string", "enum": STATES}, "state_words": _ref("StateWords"),
        "attempts": {"type": "integer"}, "max_attempts": {"type": "integer"},
        "sub_status": NULLABLE_STRING, "progress": NULLABLE_NUMBER,
        "error": {"type": ["object", "null"], "properties": {
            "label": {"type": "string"}, "message": NULLABLE_STRING}},
        "output": {"type": ["object", "null"], "properties": {
            "size": {"type": ["integer", "null"]}, "sha256": NULLABLE_STRING,
            # relative to the videos folder of the machine that wrote it (issue 23)
            "path": {"type": "string"}, "host": NULLABLE_STRING}},
        "instance": {"type": ["string", "null"],
                     "description": "the instance rendering it now (its lease); null "
                                    "once it is finished"},
        "cost": NULLABLE_NUMBER, "created_at": {"type": "number"},
        "updated_at": {"type": "number"}, "finished_at": NULLABLE_NUMBER,
        "route": {"description": "null for a job bound to one provider; 'provider' is the "
                                 "one the job is with now",
                  "oneOf": [{"type": "null"}, _ref("Route")]},
        "create_evidence": {"description": "GET /v1/jobs/{job_id} only: for a create whose "
                                           "outcome is unknown, the last reading of the "
                                           "provider's counts (null: none read, or no "
                                           "unknown create)",
                            "oneOf": [{"type": "null"}, _ref("CreateEvidence")]}}},
    "CreateEvidence": {
        "type": "object", "required": ["verdict", "words"],
        "description": "what the provider's usage counts said of a lost create, as read at "
                       "read_at (issue 32 item 6): information only, it decides nothing",
        "properties": {
            "verdict": {"type": "string", "enum": ["billed", "not_counted", "not_provable",
                                                   "unavailable", "not_published"]},
            "words": {"type": "string"}, "day": NULLABLE_STRING, "unit": NULLABLE_STRING,
            "account": NULLABLE_STRING, "model": NULLABLE_STRING,
            "creates_in_window": {"type": ["integer", "null"]},
            "provider_units": NULLABLE_NUMBER, "price_units": NULLABLE_NUMBER,
            "why": NULLABLE_STRING, "read_at": NULLABLE_NUMBER, "as_of": {"type": "string"},
            "age_seconds": NULLABLE_NUMBER}},
    "JobList": {"type": "object", "required": ["jobs", "next_cursor"], "properties": {
        "jobs": {"type": "array", "items": _ref("Job")},
        "next_cursor": {"type": ["integer", "null"]}}},
    "Health": {"type": "object", "required": ["status", "journal", "engine"], "properties": {
        "status": {"type": "string", "enum": ["up", "degraded"]},
        "journal": {"type": "string"},
        "engine": {"type": "string", "enum": ["running", "paused"]},
        "active_renders": {"type": "integer"}}},
    "Cancelled": {"type": "object", "required": ["id", "cancelled"], "properties": {
        "id": {"type": "integer"}, "cancelled": {"type": "boolean"}}},
    "Requeued": {"type": "object", "required": ["id", "requeued"], "properties": {
        "id": {"type": "integer"}, "requeued": {"type": "boolean"},
        "new_seed": {"type": "integer"},
        "new_jobs": {"type": "array", "items": {"type": "integer"}},
        "estimate": NULLABLE_STRING}},
    "BatchOutcome": {
        "type": "object", "required": ["batch_name", "refused_rows", "estimate"],
        "description": "an import (batch_id, added, already_present) or a dry run / "
                       "refusal preview (dry_run, would_add, preview)",
        "properties": {
            "batch_name": {"type": "string"}, "batch_id": {"type": "integer"},
            "added": {"type": "integer"}, "already_present": {"type": "integer"},
            "dry_run": {"type": "boolean"}, "would_add": {"type": "integer"},
            "refused_rows": {"type": "array", "items": {"type": "object"}},
            "preview": {"type": "array", "items": {"type": "object", "properties": {
                "route": {"oneOf": [{"type": "null"}, _ref("Route")]}}}},
            "estimate": {"type": "object", "properties": {
                "total_usd": {"type": "number",
                              "description": "each routed job on its best candidate"},
                "worst_case_usd": {"type": ["number", "null"],
                                   "description": "each routed job on its dearest usable "
                                                  "candidate (null: a price is unknown)"},
                "routed_jobs": {"type": "integer"}}},
            "routing": {"type": "object", "properties": {
                "route": {"type": "array", "items": {"type": "string"}},
                "route_policy": {"type": "string", "enum": ROUTE_POLICIES},
                "tolerance": {"type": "string", "enum": TOLERANCES},
                "route_on_policy": {"type": "boolean"}}}}},
    "Accounts": {"type": "object", "required": ["accounts"], "properties": {
        "accounts": {"type": "array", "items": {
            "type": "object", "required": ["name", "status", "state_words"], "properties": {
            "name": {"type": "string"}, "provider": {"type": "string"},
            "capacity": {"type": "integer"}, "live": {"type": "integer"},
            "enabled": {"type": "boolean"}, "status": {"type": "string"},
            "state_words": _ref("StateWords"),
            "status_detail": NULLABLE_STRING, "cooldown_until": NULLABLE_NUMBER,
            "daily_cap": {},
            "balance": {"type": ["string", "null"],
                        "description": "the published balance as the claim reckons it, in "
                                       "words (those of credits); null where the provider "
                                       "publishes none"},
            "view": {"description": "what the provider last said of the account "
                                    "(issue 32): the same as accounts list --json",
                     "oneOf": [{"type": "null"}, _ref("AccountView")]},
            "limit_in_force": {"oneOf": [{"type": "null"}, _ref("LimitInForce")]},
            "credits": {"description": "the balance as the claim reckons it; null when no "
                                       "balance gates the account",
                        "oneOf": [{"type": "null"}, _ref("Credits")]}}}}}},
    "AccountView": {
        "type": "object", "required": ["published", "read_at", "stale", "balance", "limits",
                                       "words"],
        "description": "the provider's view of the account; older than 15 min it is "
                       "stale and gates nothing",
        "properties": {
            "published": {"type": "boolean"}, "read_at": NULLABLE_NUMBER,
            "as_of": NULLABLE_STRING, "age_seconds": NULLABLE_NUMBER,
            "stale": {"type": ["boolean", "null"]}, "read_by": NULLABLE_STRING,
            "organization_id": NULLABLE_STRING,
            "balance": {"type": ["object", "null"], "required": ["amount", "unit"],
                        "properties": {"amount": {"type": "number"},
                                       "unit": {"type": "string"}}},
            "balance_shared_with": NULLABLE_STRING,
            "limits": {"type": "array", "items": {
                "type": "object", "required": ["model", "words"], "properties": {
                    "model": {"type": "string"},
                    "concurrency": {"type": ["integer", "null"]},
                    "daily": {"type": ["integer", "null"]},
                    "daily_window": {"type": "string",
                                     "enum": ["rolling_24h", "utc_day", "unknown"]},
                    "used_today": {"type": ["integer", "null"]},
                    "words": {"type": "string"}}}},
            "problem": NULLABLE_STRING,
            "words": {"type": "array", "items": {"type": "string"}},
            "limit_in_force": _ref("LimitInForce")}},
    "LimitInForce": {
        "type": "object", "required": ["set", "applied", "models", "words"],
        "description": "the user's setting beside the provider's lower limit per model: "
                       "\"5 set · provider allows 2 for gen4.5\"",
        "properties": {
            "set": {"type": "integer"}, "applied": {"type": "boolean"},
            "words": {"type": "string"},
            "models": {"type": "array", "items": {"type": "object", "properties": {
                "model": {"type": "string"},
                "provider_allows": {"type": ["integer", "null"]},
                "in_force": {"type": "integer"}, "daily": {"type": ["integer", "null"]},
                "used_today": {"type": ["integer", "null"]},
                "applied": {"type": "boolean"}}}}}},
    "Credits": {
        "type": "object", "required": ["balance", "unit", "left", "low", "words"],
        "description": "\"credits low: 40 left, this render needs 60\": low means the "
                       "next create on the account waits",
        "properties": {
            "balance": {"type": "number"}, "unit": {"type": "string"},
            "not_included": NULLABLE_NUMBER, "left": NULLABLE_NUMBER,
            "next_needs": NULLABLE_NUMBER, "low": {"type": "boolean"},
            "price_unknown": {"type": "boolean"}, "words": {"type": "string"}}},
    "Spend": {"type": "object",
              "required": ["accounts", "batches", "spent", "to_go", "to_go_total"],
              "properties": {
        "accounts": {"type": "array", "items": {"type": "object", "properties": {
            "account": {"type": "string"}, "spent_today": {"type": "number"},
            "reserved": {"type": "number"}, "daily_cap": {},
            "waiting_for_cap": {"type": "integer"}, "removed": {"type": "boolean"}}}},
        "batches": {"type": "array", "items": {"type": "object"}},
        "spent": {"type": "object", "additionalProperties": {"type": "number"}},
        "to_go": {"type": "array", "items": {"type": "object", "properties": {
            "provider": {"type": "string"}, "account": NULLABLE_STRING,
            "usd": {"type": "number"}, "priced": {"type": "integer"},
            "unpriced": {"type": "integer"}, "words": {"type": "string"}}}},
        "to_go_total": {"type": "object", "properties": {
            "usd": {"type": "number"}, "unpriced": {"type": "integer"},
            "words": {"type": "string"}}},
        "reconcile": _ref("Reconcile")}},
    "Reconcile": {
        "type": "object", "required": ["start", "end", "accounts"],
        "description": "cost reconciliation (reconcile=1): per account, model and UTC day, "
                       "what the journal started and priced against what the provider "
                       "reports it used, each difference named; read from the providers "
                       "now, creating nothing",
        "properties": {
            "start": {"type": "string", "format": "date"},
            "end": {"type": "string", "format": "date"},
            "accounts": {"type": "array", "items": {
                "type": "object", "required": ["account", "provider", "unit", "unavailable",
                                               "days", "renders"],
                "properties": {
                    "account": {"type": "string"}, "provider": {"type": "string"},
                    "unit": NULLABLE_STRING,
                    "unavailable": {"type": ["string", "null"], "description":
                                    "why the provider's figures could not be used, or "
                                    "'usage not published by ...'"},
                    "renders": {
                        "type": ["object", "null"],
                        "description": "per-render attribution where the provider lists "
                                       "the account's renders (null: it lists none)",
                        "required": ["listed", "known", "complete", "unavailable",
                                     "unknown"],
                        "properties": {
                            "listed": {"type": "integer", "minimum": 0},
                            "known": {"type": "integer", "minimum": 0},
                            "complete": {"type": "boolean"},
                            "unavailable": NULLABLE_STRING,
                            "unknown": {"type": "array", "items": {
                                "type": "object",
                                "required": ["provider_job_id", "created_at", "status"],
                                "properties": {
                                    "provider_job_id": {"type": "string"},
                                    "created_at": NULLABLE_NUMBER,
                                    "status": {"type": "string"}}}}}},
                    "days": {"type": "array", "items": {
                        "type": "object",
                        "required": ["day", "model", "creates", "priced_usd", "unpriced",
                                     "seconds", "job_ids", "unit", "journal_units",
                                     "provider_units", "difference", "kind", "renders",
                                     "matching_per_second", "drift_also_fits", "why",
                                     "table", "words"],
                        "properties": {
                            "day": {"type": "string", "format": "date"},
                            "model": {"type": "string"},
                            "creates": {"type": "integer", "minimum": 0},
                            "priced_usd": {"type": "number"},
                            "unpriced": {"type": "integer", "minimum": 0},
                            "seconds": {"type": "number"},
                            "job_ids": {"type": "array", "items": {"type": "integer"}},
                            "unit": {"type": "string"},
                            "journal_units": NULLABLE_NUMBER,
                            "provider_units": NULLABLE_NUMBER,
                            "difference": NULLABLE_NUMBER,
                            "kind": {"enum": ["matches", "unknown_renders", "price_drift",
                                              "refund", "unavailable"]},
                            "renders": {"type": ["integer", "null"]},
                            "matching_per_second": NULLABLE_NUMBER,
                            "drift_also_fits": {"type": "boolean"},
                            "why": NULLABLE_STRING,
                            "table": {"type": ["object", "null"], "properties": {
                                "model": {"type": "string"},
                                "unit_per_second": NULLABLE_NUMBER,
                                "source": {"type": "string"},
                                "read_on": NULLABLE_STRING}},
                            "words": {"type": "string"}}}}}}}}},
    "History": {
        "type": "object", "required": ["job_id", "entries", "pruned_before"],
        "description": "a job's ledger in the window's words, oldest first; pruned_before: "
                       "the ledger was pruned and lost the entries before this time",
        "properties": {
            "job_id": {"type": "integer"}, "pruned_before": NULLABLE_NUMBER,
            "entries": {"type": "array", "items": {
                "type": "object", "required": ["seq", "at", "event", "words", "detail"],
                "properties": {
                    "seq": {"type": "integer"}, "at": {"type": "number"},
                    "event": {"type": "string"}, "words": {"type": "string"},
                    "account": NULLABLE_STRING, "detail": {"type": "string"}}}}}},
    "Batches": {"type": "object", "required": ["batches", "by_account", "state_names"],
                "properties": {
        "by_account": {"type": "object", "description": "account -> state -> jobs",
                       "additionalProperties": {"type": "object", "additionalProperties": {
                           "type": "integer"}}},
        "state_names": {"type": "object", "description": "state -> its one name",
                        "additionalProperties": {"type": "string"}},
        "batches": {"type": "array", "items": {
            "type": "object", "required": ["id", "name", "paused", "counts", "jobs"],
            "properties": {
                "id": {"type": "integer"}, "name": {"type": "string"},
                "created_at": {"type": "number"}, "paused": {"type": "boolean"},
                "counts": {"type": "object", "description": "state -> jobs",
                           "additionalProperties": {"type": "integer"}},
                "jobs": {"type": "integer"}, "max_spend": NULLABLE_NUMBER}}}}},
    "Attention": {"type": "object", "required": ["jobs"], "properties": {
        "jobs": {"type": "array", "items": {
            "type": "object",
            "required": ["id", "state", "state_words", "unknown", "what_to_do"],
            "properties": {
                "id": {"type": "integer"}, "batch_id": {"type": "integer"},
                "name": NULLABLE_STRING, "prompt": {"type": "string"},
                "state": {"type": "string", "enum": STATES},
                "state_words": _ref("StateWords"),
                "unknown": {"type": "boolean",
                            "description": "its create's outcome is unknown: resolve it"},
                "what_to_do": {"type": "string"}, "account": NULLABLE_STRING,
                "error": NULLABLE_STRING,
                "candidates": {"type": "array", "items": {"type": "object"}},
                "create_evidence": {"oneOf": [{"type": "null"},
                                              _ref("CreateEvidence")]}}}}}},
    "Machines": {"type": "object", "required": ["machines"], "properties": {
        "machines": {"type": "array", "items": {
            "type": "object", "required": ["id", "host", "state", "heartbeat_at"],
            "properties": {
                "id": {"type": "string"}, "host": {"type": "string"},
                "pid": {"type": "integer"}, "version": {"type": "string"},
                "started_at": {"type": "number"}, "heartbeat_at": {"type": "number"},
                "live_renders": {"type": "integer"},
                "state": {"type": "string", "enum": ["running", "silent", "stopped"]},
                "silent_for": {"type": "number"}, "this_machine": {"type": "boolean"},
                "clock_offset": NULLABLE_NUMBER,
                "providers": {"type": ["array", "null"], "items": {"type": "string"},
                              "maxItems": 64,
                              "description": "the provider kinds it can build; null: "
                                             "unknown"}}}}}},
    "RetryPlan": {
        "type": "object", "required": ["id", "retryable", "summary", "pays", "price"],
        "description": "what POST .../retry would do and cost; nothing is written",
        "properties": {
            "id": {"type": "integer"}, "retryable": {"type": "boolean"},
            "summary": {"type": "string"}, "pays": {"type": "boolean"},
            "price": NULLABLE_STRING, "price_usd": NULLABLE_NUMBER,
            "reread": {"type": "integer"}, "rerender": {"type": "integer"},
            "variants": {"type": "integer"}, "maybe_charged": {"type": "integer"}}},
    "Resolved": {"type": "object", "required": ["id", "resolved", "summary"], "properties": {
        "id": {"type": "integer"},
        "resolved": {"type": "string", "enum": ["render", "create_again"]},
        "summary": {"type": "string"}}},
    "BatchPaused": {"type": "object", "required": ["id", "paused"], "properties": {
        "id": {"type": "integer"}, "paused": {"type": "boolean"}}},
    "AccountEnabled": {"type": "object", "required": ["name", "enabled"], "properties": {
        "name": {"type": "string"}, "enabled": {"type": "boolean"}}},
    "FileLink": {"type": "object", "required": ["url", "kind", "job_id", "expires_at"],
                 "properties": {
        "url": {"type": "string", "description": "/links/<random>: GET and Range only, "
                                                 "for this one file, until expires_at"},
        "kind": {"type": "string", "enum": ["video", "thumbnail"]},
        "job_id": {"type": "integer"}, "expires_at": {"type": "number"}}},
    # One event of GET /v1/events, as OpenAPI 3.2 models a Server-Sent Event (and as a
    # 3.1 ``schema`` of text/event-stream is read per event): its fields, with the data a
    # ledger entry in JSON. Comments (': connected', ': keep-alive') are not events.
    "ServerSentEvent": {
        "type": "object", "required": ["id", "event", "data"], "additionalProperties": False,
        "properties": {
            "id": {"type": "string", "pattern": "^[0-9]+$", "description": "the entry's seq"},
            "event": {"type": "string", "minLength": 1},
            "data": {"type": "string", "contentMediaType": "application/json",
                     "contentSchema": _ref("LedgerEvent")}}},
    "LedgerEvent": {
        "type": "object", "additionalProperties": False,
        "required": ["seq", "at", "event", "job_id", "account", "detail"], "properties": {
            "seq": {"type": "integer", "minimum": 1}, "at": {"type": "number"},
            "event": {"type": "string"}, "job_id": {"type": ["integer", "null"]},
            "account": NULLABLE_STRING, "detail": {"type": "object"}}},
}

# -- review (issue 35 item 3): GET /v1/batches/{id}/takes, POST /v1/jobs/{id}/review -----
REVIEW_PROPERTIES: dict[str, Any] = {
    "decision": {"type": "string", "enum": ["none", "pick", "reject"]},
    "rating": {"type": ["integer", "null"], "minimum": 1, "maximum": 5},
    "decided_at": NULLABLE_NUMBER, "decided_by": NULLABLE_STRING,
    "version": {"type": "integer", "minimum": 0,
                "description": "a change names the version it saw (409 if another "
                               "reviewer changed the take since)"}}
REVIEW: dict[str, Any] = {
    "type": "object", "properties": REVIEW_PROPERTIES,
    "required": ["decision", "rating", "decided_at", "decided_by", "version"]}
REVIEW_SCHEMAS: dict[str, Any] = {
    "Review": REVIEW,
    "Take": {"type": "object", "required": ["job_id", "state", "decision", "version"],
             "properties": {
        "job_id": {"type": "integer"}, "job_key": {"type": "string"},
        "batch_id": {"type": "integer"}, "state": {"type": "string", "enum": STATES},
        "output_path": {"type": "string"}, "seed": {},
        **REVIEW_PROPERTIES, "words": {"type": "string"}}},
    "Takes": {"type": "object", "required": ["batch_id", "rows", "reviewed", "total"],
              "description": "a batch's takes by row (K, K#n, K~seed... are row K), with "
                             "its re-rolls' takes; 'progress' is '12 of 15 reviewed'",
              "properties": {
        "batch_id": {"type": "integer"}, "name": {"type": "string"},
        "rerolls": {"type": "array", "items": {"type": "integer"}},
        "reviewed": {"type": "integer"}, "total": {"type": "integer"},
        "progress": {"type": "string"}, "rows_to_reroll": {"type": "integer"},
        "rows": {"type": "array", "items": {"type": "object", "required": ["row", "takes"],
                                            "properties": {
            "row": {"type": "string"}, "row_number": {"type": ["integer", "null"]},
            "name": {"type": "string"}, "prompt": {"type": "string"},
            "state": {"type": "string"}, "picked": {"type": ["integer", "null"]},
            "needs_reroll": {"type": "boolean"},
            "takes": {"type": "array", "items": _ref("Take")}}}}}},
    "ReviewRequest": {
        "type": "object", "additionalProperties": False, "required": ["version"],
        "description": "a decision, a rating or both; version: the one the reviewer saw",
        "anyOf": [{"required": ["decision"]}, {"required": ["rating"]}],
        "properties": {
            "decision": {"type": "string", "enum": ["pick", "reject", "clear"]},
            "rating": {"type": "integer", "minimum": 0, "maximum": 5,
                       "description": "1-5; 0 removes the rating"},
            "version": {"type": "integer", "minimum": 0, "maximum": 2**31 - 1}}},
    "ReviewWritten": {
        "type": "object", "required": ["job_id", "review", "before", "moved_from"],
        "properties": {
            "job_id": {"type": "integer"}, "review": _ref("Review"),
            "before": _ref("Review"),
            "moved_from": {"type": "array", "items": {"type": "integer"},
                           "description": "takes of the row whose pick this pick took"}}},
}
BATCH_ID = {"name": "batch_id", "in": "path", "required": True, "schema": _integer(1)}


def review_paths() -> dict[str, Any]:
    return {
        "/v1/batches/{batch_id}/takes": {"get": _op(
            "A batch's takes by row, with each take's review", "read", {
                "200": _json("the rows and their takes", _ref("Takes")),
                "404": _problem("no batch with this id"),
                "422": _problem("batch_id is not a whole number from 1 to 2^63-1")},
            parameters=[BATCH_ID])},
        "/v1/jobs/{job_id}/review": {"post": _op(
            "Pick, reject or clear a take, and/or rate it (one pick per row)", "submit", {
                "200": _json("written (the token's name is the reviewer)",
                             _ref("ReviewWritten")),
                "400": _problem("malformed JSON, or nested deeper than 32 levels"),
                "404": NO_JOB,
                "409": _problem("another reviewer changed the take since 'version' "
                                "(current: its review now), or the take failed or was "
                                "cancelled (nothing to decide on)"),
                "413": _problem("the body is over 1 MiB"),
                "422": _problem("job_id out of range, or an invalid body (fields)")},
            parameters=[JOB_ID], requestBody={"required": True, "content": {
                "application/json": {"schema": _ref("ReviewRequest")}}})},
    }


JOB_ID = {"name": "job_id", "in": "path", "required": True, "schema": _integer(1)}
NOT_A_JOB_ID = _problem("job_id is not a whole number from 1 to 2^63-1 (fields.job_id)")
NO_JOB = _problem("no job with this id")
BATCH_ID = {"name": "batch_id", "in": "path", "required": True, "schema": _integer(1)}
ACCOUNT_NAME = {"name": "name", "in": "path", "required": True,
                "schema": {"type": "string", "minLength": 1}}
PNG = {"image/png": {"schema": {"type": "string", "format": "binary"}}}
MP4 = {"video/mp4": {"schema": {"type": "string", "format": "binary"}}}


def _batch_switch(summary: str) -> dict[str, Any]:
    return _op(summary, "admin", {
        "200": _json("the batch's state now", _ref("BatchPaused")),
        "404": _problem("no batch with this id"),
        "422": _problem("batch_id is not a whole number from 1 to 2^63-1")},
        parameters=[BATCH_ID])


def _account_switch(summary: str) -> dict[str, Any]:
    return _op(summary, "admin", {
        "200": _json("the account's state now", _ref("AccountEnabled")),
        "404": _problem("no account of this name"),
        "409": _problem("the account cannot be changed now"),
        "422": _problem("the name is text that cannot be stored")},
        parameters=[ACCOUNT_NAME])


def dashboard_paths() -> dict[str, Any]:
    """The web dashboard's page and routes (issue 37; api/dashboard.py)."""
    page = {"text/html": {"schema": {"type": "string"}}}
    return {
        "/": {"get": _op("The web dashboard (sign in with a token)", None, {
            "200": {"description": "the page", "content": page},
            "404": _problem("the dashboard's files are missing from this install")})},
        "/static/{name}": {"get": _op("The dashboard's scripts and styles", None, {
            "200": {"description": "the file", "content": {
                "text/javascript": {"schema": {"type": "string"}},
                "text/css": {"schema": {"type": "string"}},
                "image/svg+xml": {"schema": {"type": "string"}}}},
            "404": _problem("no such file")},
            parameters=[{"name": "name", "in": "path", "required": True,
                         "schema": {"type": "string"}}])},
        "/links/{token}": {"get": _op(
            "A short-lived link's file (no token: the link is the credential)", None, {
                "200": {"description": "the file", "content": {**MP4, **PNG}},
                "206": {"description": "one range of the video", "content": MP4},
                "304": {"description": "not modified (If-None-Match): no body"},
                "404": _problem("unknown or expired link, or the video gives no picture"),
                "409": _problem("the job has no finished video here"),
                "410": _problem("the video file is gone"),
                "416": _problem("the Range cannot be served"),
                "422": _problem("the link's job is gone")},
            parameters=[{"name": "token", "in": "path", "required": True,
                         "schema": {"type": "string"}}])},
        "/v1/batches/{batch_id}/pause": {"post": _batch_switch(
            "Pause a batch (its waiting jobs are not started)")},
        "/v1/batches/{batch_id}/resume": {"post": _batch_switch("Resume a batch")},
        "/v1/accounts/{name}/pause": {"post": _account_switch(
            "Pause an account (no new work; running renders finish)")},
        "/v1/accounts/{name}/resume": {"post": _account_switch("Resume an account")},
        "/v1/attention": {"get": _op(
            "Jobs that need the user: parked, outcome unknown, with what to do", "read", {
                "200": _json("the jobs", _ref("Attention"))})},
        "/v1/token": {"get": _op("The token's own name and scope", "read", {
            "200": _json("the token", {"type": "object", "required": ["name", "scope"],
                                       "properties": {"name": {"type": "string"},
                                                      "scope": {"type": "string"}}})})},
        "/v1/instances": {"get": _op(
            "The machines sharing the journal, with their heartbeats", "read", {
                "200": _json("the machines", _ref("Machines"))})},
        "/v1/jobs/{job_id}/history": {"get": _op(
            "A job's history in the window's words", "read", {
                "200": _json("the history", _ref("History")), "404": NO_JOB,
                "422": NOT_A_JOB_ID}, parameters=[JOB_ID])},
        "/v1/jobs/{job_id}/retry-plan": {"get": _op(
            "What a retry would do and cost, before acting", "read", {
                "200": _json("the plan", _ref("RetryPlan")), "404": NO_JOB,
                "422": _problem("job_id or new_seed out of range")},
            parameters=[JOB_ID, {"name": "new_seed", "in": "query",
                                 "schema": _integer(0, 2**31 - 1)}])},
        "/v1/jobs/{job_id}/resolve/render": {"post": _op(
            "Resolve a create of unknown outcome with the render found at the provider",
            "admin", {
                "200": _json("the job reads that render", _ref("Resolved")), "404": NO_JOB,
                "409": _problem("the job holds no create of unknown outcome, or the "
                                "render belongs to another job"),
                "422": _problem("job_id out of range, or render not 1 to 500 printable "
                                "characters")},
            parameters=[JOB_ID, {"name": "render", "in": "query", "required": True,
                                 "schema": RENDER_ID_SCHEMA}])},
        "/v1/jobs/{job_id}/resolve/create-again": {"post": _op(
            "Resolve a create of unknown outcome by creating it again (may pay twice)",
            "admin", {
                "200": _json("queued to be created again", _ref("Resolved")),
                "404": NO_JOB,
                "409": _problem("the job holds no create of unknown outcome"),
                "422": NOT_A_JOB_ID}, parameters=[JOB_ID])},
        "/v1/jobs/{job_id}/thumbnail": {"get": _op(
            "A finished video's first picture (PNG)", "read", {
                "200": {"description": "the picture", "content": PNG},
                "404": _problem("no job with this id, or its video gives no picture"),
                "409": _problem("the job has no finished video"),
                "410": _problem("the video is not on this machine"),
                "422": NOT_A_JOB_ID}, parameters=[JOB_ID])},
        "/v1/jobs/{job_id}/links": {"post": _op(
            "A short-lived link for the job's video or thumbnail (<video>/<img> send no "
            "header)", "read", {
                "201": _json("the link", _ref("FileLink")), "404": NO_JOB,
                "409": _problem("the job has no finished video"),
                "422": _problem("job_id out of range, or kind not video or thumbnail")},
            parameters=[JOB_ID, {"name": "kind", "in": "query", "schema": {
                "type": "string", "enum": ["video", "thumbnail"], "default": "video"}}])},
    }


def openapi_document() -> dict[str, Any]:
    return {
        "openapi": "3.1.0",
        "info": {"title": "ReelQueue API", "version": __version__,
                 "description": "HEAD is answered for every GET, with the GET's headers "
                                "and no body. An unknown path is a 404 problem, a method "
                                "a path does not answer a 405 problem with Allow."},
        "components": {
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}},
            "schemas": {**SCHEMAS, **REVIEW_SCHEMAS},
        },
        "security": [{"bearer": []}],
        "paths": {
            "/v1/health": {"get": _op("Up, journal readable, engine state", None, {
                "200": _json("health", _ref("Health"))})},
            "/v1/openapi.json": {"get": _op("This document", None, {
                "200": _json("the OpenAPI 3.1 document", {"type": "object"})})},
            "/v1/jobs": {
                "post": _op("Submit one job", "submit", {
                    "201": _json("created", _ref("Submitted")),
                    "200": _json("a replay of the same Idempotency-Key and body",
                                 _ref("Submitted")),
                    "400": _problem("malformed JSON, or nested deeper than 32 levels"),
                    "409": _problem("the Idempotency-Key was used with another body"),
                    "413": _problem("the body is over 1 MiB"),
                    "422": _problem("invalid fields (fields: what is wrong with each), "
                                    "text that cannot be stored (NUL, lone surrogates), "
                                    "or the provider's rules"),
                    "429": _problem("the queue is full (Retry-After; nothing written), or "
                                    "too many failed authentications")},
                    parameters=[{"name": "Idempotency-Key", "in": "header", "schema": {
                        "type": "string", "minLength": 1, "maxLength": 200}}],
                    requestBody={"required": True, "content": {"application/json": {
                        "schema": _ref("JobRequest")}}}),
                "get": _op("List jobs by id, after a cursor", "read", {
                    "200": _json("a page of jobs", _ref("JobList")),
                    "422": _problem("a query value out of its range (fields names it)")},
                    parameters=[
                        {"name": "cursor", "in": "query", "schema": _integer(0, default=0)},
                        {"name": "limit", "in": "query",
                         "schema": _integer(1, 500, default=100)},
                        {"name": "batch", "in": "query", "schema": _integer(1)},
                        {"name": "q", "in": "query", "description":
                            "words each found in the job's prompt or name (case folded); "
                            "a page reads at most 20,000 jobs, next_cursor goes on",
                         "schema": {"type": "string", "maxLength": 200}},
                        {"name": "state", "in": "query", "style": "form", "explode": True,
                         "schema": {"type": "array", "items": {
                             "type": "string", "minLength": 1, "enum": STATES}}}]),
            },
            "/v1/batches": {"get": _op(
                "Batches with their jobs counted by state", "read", {
                    "200": _json("the batches", _ref("Batches"))}),
                "post": _op(
                "Import a batch: a spreadsheet (?filename=) or a JSON list of jobs", "submit",
                {"201": _json("imported", _ref("BatchOutcome")),
                 "200": _json("a dry run (?dry_run=1), or nothing new", _ref("BatchOutcome")),
                 "400": _problem("malformed JSON, or nested too deeply"),
                 "413": _problem("over 100 MiB"),
                 "422": {"description": "refused: row errors (a BatchOutcome), or a "
                                        "problem (unusable file, bad query value, over "
                                        "100,000 items)",
                         "content": {"application/json": {"schema": _ref("BatchOutcome")},
                                     PROBLEM_TYPE: {"schema": _ref("Problem")}}},
                 "429": _problem("the rows would pass the queue limit; nothing written")},
                parameters=[
                    {"name": "filename", "in": "query", "schema": {"type": "string"}},
                    {"name": "name", "in": "query", "schema": {"type": "string"}},
                    {"name": "provider", "in": "query", "schema": {"type": "string"}},
                    {"name": "dry_run", "in": "query", "schema": {
                        "type": "string", "enum": ["0", "1", "true", "false", "yes", "no"]}},
                    {"name": "route", "in": "query", "description":
                        "providers a row without one may render on, e.g. veo,runway "
                        "(a row's provider 'veo|runway' routes that row)",
                     "schema": {"type": "string", "maxLength": 2000}},
                    {"name": "route_policy", "in": "query",
                     "schema": {"type": "string", "enum": ROUTE_POLICIES,
                                "default": "order"}},
                    {"name": "tolerance", "in": "query",
                     "description": "how far a routed row's settings may move to fit a "
                                    "provider; one that still refuses it is left out",
                     "schema": {"type": "string", "enum": TOLERANCES, "default": "exact"}},
                    {"name": "route_on_policy", "in": "query",
                     "description": "a routed job moves on after a content-policy refusal",
                     "schema": {"type": "string",
                                "enum": ["0", "1", "true", "false", "yes", "no"]}}],
                requestBody={"required": True, "content": {
                    # An empty list is refused (422): a batch of nothing is a
                    # client's mistake (every row filtered away), not a batch to make.
                    "application/json": {"schema": {"type": "array", "minItems": 1,
                                                    "items": _ref("BatchItem")}},
                    "application/octet-stream": {"schema": {"type": "string",
                                                            "format": "binary"}},
                    "text/csv": {"schema": {"type": "string"}}}})},
            "/v1/jobs/{job_id}": {"get": _op("One job", "read", {
                "200": _json("the job", _ref("Job")), "404": NO_JOB, "422": NOT_A_JOB_ID},
                parameters=[JOB_ID])},
            "/v1/jobs/{job_id}/cancel": {"post": _op("Cancel a job", "admin", {
                "200": _json("cancelled (false: it was already settled)", _ref("Cancelled")),
                "404": NO_JOB, "422": NOT_A_JOB_ID}, parameters=[JOB_ID])},
            "/v1/jobs/{job_id}/retry": {"post": _op(
                "Retry a failed/cancelled job; ?new_seed=N: a different video", "admin", {
                "200": _json("requeued (false: not failed or cancelled); with new_seed, a "
                             "completed job is kept and new_jobs names the new job that "
                             "renders the seed, estimate its price", _ref("Requeued")),
                "404": NO_JOB, "422": NOT_A_JOB_ID},
                parameters=[JOB_ID, {"name": "new_seed", "in": "query",
                                     "schema": _integer(0, 2**31 - 1)}])},
            "/v1/jobs/{job_id}/video": {"get": _op(
                "The finished video (Range, ETag=sha256)", "read", {
                    "200": {"description": "the video", "content": {"video/mp4": {
                        "schema": {"type": "string", "format": "binary"}}}},
                    "206": {"description": "one range", "content": {"video/mp4": {
                        "schema": {"type": "string", "format": "binary"}}}},
                    "304": {"description": "not modified (If-None-Match): no body"},
                    "404": NO_JOB,
                    "409": _problem("the job has no finished video, or it is on another "
                                    "machine (output_host, output_path in the body)"),
                    "410": _problem("the video file is gone"),
                    "416": _problem("the Range cannot be served (Content-Range: bytes */size)"),
                    "422": NOT_A_JOB_ID}, parameters=[JOB_ID])},
            "/v1/accounts": {"get": _op(
                "Accounts: live, capacity, status, the provider's view, the limit in force "
                "and the balance gate (no keys)", "read", {
                "200": _json("accounts", _ref("Accounts"))})},
            "/v1/spend": {"get": _op(
                "Money: each account's spend (all days, today), capped batches, and what the "
                "waiting jobs will cost ('est. $X to go'); reconcile=1 adds the cost "
                "reconciliation against the providers' usage (read now)", "read", {
                    "200": _json("the money figures", _ref("Spend")),
                    "422": _problem("reconcile is not 0 or 1, or days not a whole number "
                                    "from 1 to 90")},
                parameters=[
                    {"name": "reconcile", "in": "query", "schema": _integer(0, 1, default=0)},
                    {"name": "days", "in": "query", "schema": _integer(1, 90, default=7)}])},
            "/v1/events": {"get": _op(
                "Server-Sent Events from the ledger; resume with Last-Event-ID", "read", {
                    "200": {"description": "the stream: 'id: seq', 'event:', 'data: {json}'; "
                                           "a ': keep-alive' comment when idle",
                            "content": {"text/event-stream": {
                                "schema": _ref("ServerSentEvent")}}},
                    "400": _problem("Last-Event-ID is not a whole number from 0 to 2^63-1"),
                    "422": _problem("after is not a whole number from 0 to 2^63-1")},
                parameters=[
                    {"name": "Last-Event-ID", "in": "header", "schema": _integer(0)},
                    {"name": "after", "in": "query", "schema": _integer(0)}])},
            **dashboard_paths(),
            **review_paths(),
        },
    }
