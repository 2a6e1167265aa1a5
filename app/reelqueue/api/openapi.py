"""The OpenAPI 3.1 document served at ``/v1/openapi.json`` (a test checks that it names
every route the server has, with the same methods)."""

from __future__ import annotations

from typing import Any

from reelqueue import __version__


def _op(summary: str, scope: str | None, responses: dict[str, str],
        **extra: Any) -> dict[str, Any]:
    op: dict[str, Any] = {"summary": summary, "responses": {
        code: {"description": text} for code, text in responses.items()}}
    if scope is None:
        op["security"] = []
    else:
        op["x-scope"] = scope
        op["responses"].setdefault("401", {"description": "missing or unknown token"})
        op["responses"].setdefault("403", {"description": "the token lacks the scope"})
    op.update(extra)
    return op


JOB_ID = {"name": "job_id", "in": "path", "required": True, "schema": {"type": "integer"}}

JOB_REQUEST = {
    "type": "object", "additionalProperties": False, "required": ["prompt"],
    "properties": {
        "prompt": {"type": "string", "maxLength": 20000},
        "provider": {"type": "string", "description": "provider kind (default mock)"},
        "account": {"type": "string", "description": "pin the job to this account"},
        "name": {"type": "string"},
        "batch": {"type": "string", "description": "batch name (default 'api')"},
        "priority": {"type": "integer"},
        "params": {"type": "object", "additionalProperties": False, "properties": {
            name: {"type": ["string", "number"]} for name in (
                "model", "duration", "aspect_ratio", "resolution", "seed",
                "negative_prompt")}},
    },
}


def openapi_document() -> dict[str, Any]:
    return {
        "openapi": "3.1.0",
        "info": {"title": "ReelQueue API", "version": __version__},
        "components": {
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}},
            "schemas": {"JobRequest": JOB_REQUEST},
        },
        "security": [{"bearer": []}],
        "paths": {
            "/v1/health": {"get": _op("Up, journal readable, engine state", None,
                                      {"200": "health"})},
            "/v1/openapi.json": {"get": _op("This document", None, {"200": "OpenAPI"})},
            "/v1/jobs": {
                "post": _op("Submit one job", "submit", {
                    "201": "created: {id, replay: false}",
                    "200": "replay of the same Idempotency-Key and body: {id, replay: true}",
                    "409": "the Idempotency-Key was used with another body",
                    "413": "body too large", "400": "malformed JSON",
                    "422": "invalid fields: {error, fields}",
                    "429": "queue full; Retry-After; nothing written"},
                    parameters=[{"name": "Idempotency-Key", "in": "header",
                                 "schema": {"type": "string", "maxLength": 200}}],
                    requestBody={"required": True, "content": {"application/json": {
                        "schema": {"$ref": "#/components/schemas/JobRequest"}}}}),
                "get": _op("List jobs by id, after a cursor", "read", {
                    "200": "{jobs, next_cursor}"}, parameters=[
                    {"name": n, "in": "query", "schema": {"type": t}}
                    for n, t in (("cursor", "integer"), ("limit", "integer"),
                                 ("batch", "integer"), ("state", "string"))]),
            },
            "/v1/batches": {"post": _op(
                "Import a batch: a spreadsheet (?filename=) or a JSON list of jobs", "submit",
                {"201": "{batch_id, added, already_present, refused_rows, estimate}",
                 "200": "dry run (?dry_run=1): {preview, would_add, estimate} / nothing new",
                 "413": "over 100 MiB", "422": "refused (row errors or unusable file)",
                 "429": "the rows would pass the queue limit; nothing written"},
                parameters=[{"name": n, "in": "query", "schema": {"type": "string"}}
                            for n in ("filename", "name", "provider", "dry_run")])},
            "/v1/jobs/{job_id}": {"get": _op("One job", "read", {"200": "job", "404": "none"},
                                             parameters=[JOB_ID])},
            "/v1/jobs/{job_id}/cancel": {"post": _op("Cancel a job", "admin", {
                "200": "{id, cancelled}", "404": "none"}, parameters=[JOB_ID])},
            "/v1/jobs/{job_id}/retry": {"post": _op("Retry a failed/cancelled job", "admin", {
                "200": "{id, requeued}", "404": "none"}, parameters=[JOB_ID])},
            "/v1/jobs/{job_id}/video": {"get": _op("The finished video (Range, ETag=sha256)",
                                                   "read", {
                "200": "video/mp4", "206": "a range", "304": "not modified",
                "409": "not finished", "416": "bad range"}, parameters=[JOB_ID])},
            "/v1/accounts": {"get": _op("Accounts: live, capacity, status (no keys)", "read",
                                        {"200": "{accounts}"})},
            "/v1/events": {"get": _op("Server-Sent Events from the ledger; resume with "
                                      "Last-Event-ID", "read", {"200": "text/event-stream"})},
        },
    }
