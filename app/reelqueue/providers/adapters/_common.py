"""Steps every job-style adapter takes the same way: check a row, create once, read a job,
map plain states to phases, refresh a video link, cancel. What a provider's answers mean
(its states, failure codes, error bodies) stays in that provider's own module; these
helpers take those decisions as arguments.
"""

from __future__ import annotations

import math
from collections.abc import Awaitable, Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import httpx2

from reelqueue.domain.errors import ErrorClass, ErrorLabel, ProviderError
from reelqueue.domain.states import RemotePhase
from reelqueue.providers.adapters._client import ApiClient
from reelqueue.providers.adapters._errors import gone_is_permanent, invalid_params
from reelqueue.providers.adapters._params import param_int, spec_problems
from reelqueue.providers.base import ParamProblem, ParamSpec, RemoteStatus, RenderRequest

# An adapter's own reading of an error answer: ``on_error(response, during_create=...)``.
ErrorReader = Callable[..., ProviderError]
Validator = Callable[[Mapping[str, Any]], list[ParamProblem]]


def check_row(title: str, spec: ParamSpec, extra: Validator, request: RenderRequest,
              more: Sequence[str] = ()) -> None:
    """Raise the invalid-input error for a row ``spec`` or ``extra`` rejects (or with the
    ``more`` problems an adapter found itself); nothing is sent."""
    problems = spec_problems(spec, request.params, request.prompt)
    problems += [problem.message for problem in extra(request.params)]
    problems += more
    if problems:
        raise invalid_params(title, problems)


def whole_seconds(spec: ParamSpec) -> tuple[int, ...]:
    """The whole numbers of seconds ``spec`` accepts, in its order."""
    if spec.durations is not None:
        return tuple(int(d) for d in spec.durations if float(d).is_integer())
    low, high = spec.duration_range
    return tuple(range(max(1, math.ceil(low)), math.floor(high) + 1))


def whole_duration(params: Mapping[str, Any], spec: ParamSpec) -> list[ParamProblem]:
    """The problem with a duration that is not a whole number of seconds, if any."""
    try:
        param_int(params, "duration")
    except ValueError as exc:
        return [ParamProblem.of(str(exc), duration=whole_seconds(spec))]
    return []


async def create_answer(
    api: ApiClient, path: str, on_error: ErrorReader, **body: Any
) -> dict[str, Any]:
    """POST a create exactly once and return its JSON answer (``body``: json_body/files)."""
    response = await api.request("POST", path, during_create=True, **body)
    if not response.is_success:
        raise on_error(response, during_create=True)
    return api.json_of(response, during_create=True)


def created_id(api: ApiClient, value: Any, what: str, raw: Any = None) -> str:
    """The job id from a create answer; a missing one may still mean a billed job.

    ``raw`` (the answer, or the part of it that should have held the id) goes into the
    error text, scrubbed and cut, so the user can look for the render in the dashboard.
    """
    if isinstance(value, int) and not isinstance(value, bool):
        value = str(value)
    if not isinstance(value, str) or not value.strip():
        raise outcome_unknown(api, f"the create answer had no readable {what}", raw)
    return value


def outcome_unknown(api: ApiClient, what: str, raw: Any = None, *,
                    status_code: int | None = None) -> ProviderError:
    """The error for an answer about money that cannot be read (DESIGN.md invariant 11).

    Money fails closed: a create answer without a readable job id, or a lookup answer of
    a shape the provider does not document, is *unknown*, never "no render exists". The
    error is permanent and ``body_maybe_sent``, so the engine never creates again by
    itself: it asks the provider by client token where it can, and otherwise fails the
    job with the label "submit outcome unknown" and the provider's raw words.
    """
    words = "" if raw is None else api.shorten(raw if isinstance(raw, str) else repr(raw))
    return api.error(f"{what}{f' (answer: {words})' if words else ''}",
                     ErrorClass.PERMANENT, ErrorLabel.SUBMIT_UNKNOWN,
                     status_code=status_code, body_maybe_sent=True)


@dataclass(frozen=True)
class FailureRules:
    """A provider's documented failure reasons, and what each one means for the job.

    The one rule every adapter goes through (DESIGN.md invariant 11): only a reason the
    provider documents as retryable is retried; a documented account-level reason pauses
    the account (the dead render is dropped); everything else, including a reason nobody
    documented, is permanent, so a render is never paid for again on a guess.

    Keys are matched case-insensitively, against the failure code exactly or (keys that
    are not numbers) as a phrase inside the failure text. Permanent entries are checked
    first, then account-level, then retryable.

    Attributes:
        retryable: code or phrase -> label, for reasons documented as worth a new render.
        account: code or phrase -> KEY_REJECTED / OUT_OF_CREDITS / RATE_LIMITED.
        permanent: code or phrase -> label (content policy, invalid input...), only to
            name the failure well: a reason missing from every table is permanent too.
        source: where the lists come from (SDK file and version, or API reference page).
    """

    retryable: Mapping[str, ErrorLabel] = field(default_factory=dict)
    account: Mapping[str, ErrorLabel] = field(default_factory=dict)
    permanent: Mapping[str, ErrorLabel] = field(default_factory=dict)
    source: str = ""

    def classify(self, api: ApiClient, reason: Any, code: Any = None, *,
                 what: str = "render failed") -> ProviderError:
        """The error for a failed render (or failed request) with this reason and code."""
        text = "" if reason is None else str(reason)
        code_text = "" if code is None or code == "" else str(code)
        shown = api.shorten(text) or "no reason given"
        message = f"{what}: {f'{code_text}: ' if code_text and code_text not in text else ''}" \
                  f"{shown}"
        for table, error_class in ((self.permanent, ErrorClass.PERMANENT),
                                   (self.account, ErrorClass.ACCOUNT),
                                   (self.retryable, ErrorClass.RETRYABLE)):
            label = _match(table, text, code_text)
            if label is not None:
                return api.error(message, error_class, label)
        return api.error(message, ErrorClass.PERMANENT, ErrorLabel.PROVIDER_ERROR)


def _match(table: Mapping[str, ErrorLabel], text: str, code: str) -> ErrorLabel | None:
    lowered, code_lowered = text.lower(), code.lower()
    for key, label in table.items():
        key_lowered = key.lower()
        # A number is a code, never a phrase: "7" must not match "retry in 17 s".
        if key_lowered == code_lowered or (
                not key_lowered.lstrip("-").isdigit() and key_lowered in lowered):
            return label
    return None


async def get_json(
    api: ApiClient, path: str, on_error: ErrorReader,
    params: Mapping[str, str | int] | None = None, *, max_bytes: int | None = None,
) -> dict[str, Any]:
    """GET ``path`` and return its JSON object; an error answer goes through ``on_error``."""
    response = await api.request("GET", path, params=params, max_bytes=max_bytes)
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


def rate_limited(message: str, response: httpx2.Response, retry_after: float | None
                 ) -> ProviderError:
    """The account-level 429 error with the wait the adapter worked out."""
    return ProviderError(message, error_class=ErrorClass.ACCOUNT,
                         label=ErrorLabel.RATE_LIMITED, retry_after=retry_after,
                         status_code=response.status_code)
