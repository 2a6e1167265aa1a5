"""Checking request bodies: JSON types, unknown fields, sizes. Problems are collected per
field and answered 422, never 500 (the server never writes part of a refused request)."""

from __future__ import annotations

from typing import Any

from reelqueue.application.submit import API_BATCH_DEFAULT, JOB_PARAM_FIELDS, JobRequest

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
