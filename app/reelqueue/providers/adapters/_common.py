"""Steps every job-style adapter takes the same way: check a row, create once, read a job,
map plain states to phases, refresh a video link, cancel. What a provider's answers mean
(its states, failure codes, error bodies) stays in that provider's own module; these
helpers take those decisions as arguments.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Collection, Mapping
from typing import Any

import httpx

from reelqueue.domain.errors import ErrorClass, ErrorLabel, ProviderError
from reelqueue.domain.states import RemotePhase
from reelqueue.providers.adapters._http import (
    ApiClient,
    gone_is_permanent,
    invalid_params,
    param_int,
    spec_problems,
)
from reelqueue.providers.base import ParamSpec, RemoteStatus, RenderRequest

# An adapter's own reading of an error answer: ``on_error(response, during_create=...)``.
ErrorReader = Callable[..., ProviderError]
Validator = Callable[[Mapping[str, Any]], list[str]]


def check_row(title: str, spec: ParamSpec, extra: Validator, request: RenderRequest) -> None:
    """Raise the invalid-input error for a row ``spec`` or ``extra`` rejects; nothing is sent."""
    problems = spec_problems(spec, request.params, request.prompt)
    problems += extra(request.params)
    if problems:
        raise invalid_params(title, problems)


def whole_duration(params: Mapping[str, Any]) -> list[str]:
    """The problem with a duration that is not a whole number of seconds, if any."""
    try:
        param_int(params, "duration")
    except ValueError as exc:
        return [str(exc)]
    return []


async def create_answer(
    api: ApiClient, path: str, on_error: ErrorReader, **body: Any
) -> dict[str, Any]:
    """POST a create exactly once and return its JSON answer (``body``: json_body/files)."""
    response = await api.request("POST", path, during_create=True, **body)
    if not response.is_success:
        raise on_error(response, during_create=True)
    return api.json_of(response, during_create=True)


def created_id(api: ApiClient, value: Any, what: str) -> str:
    """The job id from a create answer; a missing one may still mean a billed job."""
    if not isinstance(value, str) or not value:
        raise api.error(f"the create answer had no {what}", ErrorClass.RETRYABLE,
                        ErrorLabel.PROVIDER_ERROR, body_maybe_sent=True)
    return value


async def get_json(
    api: ApiClient, path: str, on_error: ErrorReader,
    params: Mapping[str, str | int] | None = None,
) -> dict[str, Any]:
    """GET ``path`` and return its JSON object; an error answer goes through ``on_error``."""
    response = await api.request("GET", path, params=params)
    if not response.is_success:
        raise on_error(response)
    return api.json_of(response)


async def cancel_request(
    api: ApiClient, method: str, path: str, on_error: ErrorReader, *, fine: Collection[int]
) -> None:
    """Ask for a cancel; statuses in ``fine`` (gone, already started...) need nothing more."""
    response = await api.request(method, path)
    if not response.is_success and response.status_code not in fine:
        raise on_error(response)


def plain_status(state: str, phases: Mapping[str, RemotePhase], poll_after: float | None
                 ) -> RemoteStatus:
    """The status of a state that needs nothing more from the answer.

    ``phases`` maps the provider's waiting and cancelled states to phases; a state newer
    than our notes keeps polling as RUNNING rather than guess an outcome.
    """
    phase = phases.get(state, RemotePhase.RUNNING)
    if phase is RemotePhase.CANCELLED:
        return RemoteStatus(phase, sub_status=state)
    return RemoteStatus(phase, sub_status=state or "unknown", poll_after=poll_after)


def fraction(value: Any, scale: float = 1.0) -> float | None:
    """A progress number (out of ``scale``) as 0..1, or None when it is not a number."""
    if not isinstance(value, int | float):
        return None
    return min(1.0, max(0.0, float(value) / scale))


async def fresh_video_link(api: ApiClient, latest_status: Awaitable[RemoteStatus],
                           gone: Callable[[RemoteStatus], str]) -> str:
    """A fresh video link from a re-poll; a job that no longer offers one is permanent.

    ``gone`` words the error from the latest status.
    """
    latest = await gone_is_permanent(latest_status)
    if latest.phase is not RemotePhase.SUCCEEDED or not latest.video_url:
        raise api.error(gone(latest), ErrorClass.PERMANENT, ErrorLabel.DOWNLOAD_FAILED)
    return latest.video_url


def rate_limited(message: str, response: httpx.Response, retry_after: float | None
                 ) -> ProviderError:
    """The account-level 429 error with the wait the adapter worked out."""
    return ProviderError(message, error_class=ErrorClass.ACCOUNT,
                         label=ErrorLabel.RATE_LIMITED, retry_after=retry_after,
                         status_code=response.status_code)
