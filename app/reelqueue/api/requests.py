"""Checking request bodies: JSON types, unknown fields, sizes. Problems are collected per
field and answered 422, never 500 (the server never writes part of a refused request)."""

from __future__ import annotations

from typing import Any

from reelqueue.application.submit import API_BATCH_DEFAULT, JOB_PARAM_FIELDS, JobRequest
from reelqueue.domain.review import Decision

MAX_PROMPT_CHARS = 20_000
"""A bound before the provider's own limit is checked, so a huge prompt is refused cheaply."""
MAX_TEXT_CHARS = 500
JOB_FIELDS = {"prompt", "provider", "account", "name", "batch", "params", "priority"}


class BodyInvalid(Exception):
    """The request body is not a job; ``problems`` maps each field to what is wrong."""

    def __init__(self, problems: dict[str, str]) -> None:
        super().__init__("; ".join(f"{k}: {v}" for k, v in problems.items()))
        self.problems = problems


def _text(body: dict[str, Any], name: str, problems: dict[str, str], *, limit: int,
          required: bool = False) -> str | None:
    value = body.get(name)
    if value is None:
        if required:
            problems[name] = "required"
        return None
    if not isinstance(value, str):
        problems[name] = "must be a string"
        return None
    if len(value) > limit:
        problems[name] = f"longer than {limit} characters"
        return None
    return value


def parse_job(body: object) -> JobRequest:
    if not isinstance(body, dict):
        raise BodyInvalid({"body": "must be a JSON object"})
    problems: dict[str, str] = {}
    for name in sorted(set(body) - JOB_FIELDS):
        problems[name] = "unknown field"
    prompt = _text(body, "prompt", problems, limit=MAX_PROMPT_CHARS, required=True)
    provider = _text(body, "provider", problems, limit=MAX_TEXT_CHARS)
    account = _text(body, "account", problems, limit=MAX_TEXT_CHARS)
    name = _text(body, "name", problems, limit=MAX_TEXT_CHARS) or ""
    batch = _text(body, "batch", problems, limit=MAX_TEXT_CHARS) or API_BATCH_DEFAULT
    priority = body.get("priority", 0)
    if isinstance(priority, bool) or not isinstance(priority, int) or abs(priority) > 10**6:
        problems["priority"] = "must be a whole number between -1000000 and 1000000"
        priority = 0
    params = body.get("params", {})
    if not isinstance(params, dict):
        problems["params"] = "must be a JSON object"
        params = {}
    for key, value in params.items():
        if key not in JOB_PARAM_FIELDS:
            problems[f"params.{key}"] = "unknown parameter; known: " + ", ".join(
                JOB_PARAM_FIELDS)
        elif not isinstance(value, str | int | float) or isinstance(value, bool):
            problems[f"params.{key}"] = "must be a string or a number"
        elif isinstance(value, str) and len(value) > MAX_PROMPT_CHARS:
            problems[f"params.{key}"] = "too long"
    if problems or prompt is None:
        raise BodyInvalid(problems)
    return JobRequest(prompt=prompt, provider=provider.lower() if provider else None,
                      account=account, name=name, batch=batch, params=dict(params),
                      priority=priority)


# -- review (issue 35 item 3) --------------------------------------------------------------
REVIEW_FIELDS = {"decision", "rating", "version"}
DECISIONS = {"pick": Decision.PICK, "reject": Decision.REJECT, "clear": Decision.NONE}
MAX_REVIEW_VERSION = 2**31 - 1


def _whole(value: object) -> object:
    """A JSON number with no fraction as an int (JSON Schema's integer takes ``4.0``)."""
    if isinstance(value, float) and value.is_integer() and abs(value) < 2**53:
        return int(value)
    return value


def review_body(body: object) -> tuple[Decision | None, int | None, int]:
    """``POST /v1/jobs/{id}/review``'s body: ``{"decision": "pick"|"reject"|"clear",
    "rating": 1-5 (0 removes it), "version": the version the reviewer saw}``; a decision or
    a rating, and the version, are required. BodyInvalid (422) names each bad field."""
    if not isinstance(body, dict):
        raise BodyInvalid({"body": "must be a JSON object"})
    problems: dict[str, str] = {}
    for name in sorted(set(body) - REVIEW_FIELDS):
        problems[name] = "unknown field"
    # A field given is checked as given: null is not "keep" (leave the field out).
    decision: Decision | None = None
    word = body.get("decision")
    if "decision" in body:
        if not isinstance(word, str) or word not in DECISIONS:
            problems["decision"] = "must be pick, reject or clear"
        else:
            decision = DECISIONS[word]
    rating = _whole(body.get("rating"))
    if "rating" in body and (isinstance(rating, bool) or not isinstance(rating, int)
                             or not 0 <= rating <= 5):
        problems["rating"] = "must be a whole number from 1 to 5 (0 removes the rating)"
        rating = None
    version = _whole(body.get("version"))
    if isinstance(version, bool) or not isinstance(version, int) or not (
            0 <= version <= MAX_REVIEW_VERSION):
        problems["version"] = ("required: the version of the take's review you saw "
                               "(GET /v1/batches/{id}/takes)")
        version = 0
    if not problems and "decision" not in body and "rating" not in body:
        problems["decision"] = "give a decision, a rating or both"
    if problems:
        raise BodyInvalid(problems)
    return decision, rating if isinstance(rating, int) else None, version
