"""Reading a provider's error answers: its own words, codes, wait hints, and the
:class:`ProviderError` for a row refused before sending or a video the provider dropped."""

from __future__ import annotations

import time
from collections.abc import Awaitable
from typing import Any, TypeVar
from urllib.parse import urlsplit

import httpx2

from reelqueue.domain.errors import ErrorClass, ErrorLabel, ProviderError
from reelqueue.providers.base import parse_retry_after

T = TypeVar("T")


def retry_after_of(response: httpx2.Response) -> float | None:
    """Seconds the provider asked us to wait: ``retry-after-ms`` or ``Retry-After``."""
    millis = response.headers.get("retry-after-ms")
    if millis:
        try:
            return max(0.0, float(millis) / 1000.0)
        except ValueError:
            pass
    return parse_retry_after(response.headers.get("retry-after"))


def rate_limit_reset_of(response: httpx2.Response, now: float | None = None) -> float | None:
    """Seconds until ``X-RateLimit-Reset``: epoch seconds when large, else a delay."""
    value = response.headers.get("x-ratelimit-reset")
    if not value:
        return None
    try:
        number = float(value)
    except ValueError:
        return None
    if number > 1_000_000_000:  # an epoch time, not a delay
        return max(0.0, number - (time.time() if now is None else now))
    return max(0.0, number)


def provider_words(response: httpx2.Response) -> str:
    """The provider's own explanation in an error answer: unscrubbed and UNCUT (cut it only
    after scrubbing, e.g. with ``ApiClient.shorten``), possibly empty."""
    try:
        body: Any = response.json()
    except (ValueError, UnicodeDecodeError, RecursionError):
        text = response.text.strip()
        if not text or text.startswith("<"):
            return response.reason_phrase
        return text
    return words_of(body).strip() or response.reason_phrase


def words_of(body: Any) -> str:
    """The human words in a JSON error value (a string, an object, a list of details)."""
    if isinstance(body, str):
        return body
    if isinstance(body, list):
        return "; ".join(w for w in (words_of(item) for item in body[:3]) if w)
    if not isinstance(body, dict):
        return ""
    for key in ("message", "error", "detail", "msg", "failure", "title", "status_msg",
                "base_resp"):
        value = body.get(key)
        if value:
            words = words_of(value)
            if words:
                code = body.get("code") or body.get("status")
                if isinstance(code, str) and code and code not in words:
                    return f"{code}: {words}"
                return words
    return ""


def error_code_of(body: Any) -> str:
    """A machine-readable error code from a JSON error body (``error.code``, ``code``...)."""
    if not isinstance(body, dict):
        return ""
    error = body.get("error")
    if isinstance(error, dict):
        for key in ("code", "type", "status"):
            value = error.get(key)
            if isinstance(value, str) and value:
                return value
    for key in ("code", "type", "error_code"):
        value = body.get(key)
        if isinstance(value, str) and value:
            return value
    return ""


def json_or_none(response: httpx2.Response) -> Any:
    try:
        return response.json()
    except (ValueError, UnicodeDecodeError, RecursionError):
        return None


def mentions(text: str, *words: str) -> bool:
    lowered = text.lower()
    return any(word in lowered for word in words)


CONTENT_POLICY_WORDS = ("content policy", "content_policy", "moderation", "moderated",
                        "safety", "sensitive", "nsfw", "flagged", "inappropriate")


def host_of(url: httpx2.URL | str) -> str:
    return urlsplit(str(url)).hostname or "?"


async def gone_is_permanent(fetch: Awaitable[T]) -> T:
    """Await a re-poll made to refresh a link; a 404/410 there means the provider dropped
    the job and its video, which no retry of the download can bring back."""
    try:
        return await fetch
    except ProviderError as exc:
        if exc.status_code in (404, 410):
            raise ProviderError(
                f"{exc} (the provider no longer holds this job's video)",
                error_class=ErrorClass.PERMANENT, label=ErrorLabel.DOWNLOAD_FAILED,
                status_code=exc.status_code,
            ) from exc
        raise


def invalid_params(title: str, problems: list[str]) -> ProviderError:
    """The error for a row the provider would reject; raised before anything is sent."""
    return ProviderError(f"{title}: " + "; ".join(problems),
                         error_class=ErrorClass.PERMANENT, label=ErrorLabel.INVALID_INPUT)
