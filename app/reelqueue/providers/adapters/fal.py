"""fal.ai queue API adapter (kind ``fal``).

Facts from PROVIDERS.md section 5b: ``POST https://queue.fal.run/{model-id}`` with the
model's input answers ``{request_id, response_url, status_url, cancel_url,
queue_position}``; ``GET …/requests/{id}/status`` reports ``IN_QUEUE`` (with
``queue_position``), ``IN_PROGRESS`` or ``COMPLETED``; ``GET …/requests/{id}`` is the result;
``PUT …/requests/{id}/cancel`` cancels (fal-client ``projects/fal_client/src/fal_client/
client.py``: ``submit``, ``_parse_status``, ``from_request_id``). ``COMPLETED`` means
*finished*, not *succeeded*: the result (or the status) can carry an error, and
``X-Fal-Retryable`` / ``X-Fal-Needs-Retry`` says whether a retry can help; without that
header the error's ``type`` / ``error_type`` goes through :data:`FAILURE_RULES` (only the
documented transient types are retried). A result that answers 200 without a ``video`` is
a render fal finished (and billed): it is reported SUCCEEDED without a link, so the engine
reads it again and never creates it again. The Veo 3.1 endpoints make audio unless told
not to (``generate_audio``, default true, twice the price): we send ``false`` unless the
row asks for audio.

The status and result URLs name the app without its sub-path (``fal-ai/veo3.1`` for
``fal-ai/veo3.1/fast``), so the job id we keep is that path: ``{owner}/{app}/requests/{id}``.
No idempotency key and no lookup by our token. A create whose answer was lost is
searched for in fal's request history (Platform API ``GET /v1/models/requests/by-endpoint``
with ``expand=payloads``): a render whose ``json_input`` equals our create body can be
found there once it has finished, but the history may omit requests still in flight, so
it never proves that none was made (``SearchResult.complete`` is always False).
We do not send ``X-Fal-Store-IO``: fal stores payloads by default, and an account that
turned storage off keeps it off (its records cannot be compared, so never ruled out).
docs/reconciliation/fal.md says why.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import math
from collections.abc import AsyncIterator, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx2

from reelqueue.domain.errors import ErrorClass, ErrorLabel, ProviderError
from reelqueue.domain.images import ImageProblem, read_pinned_image
from reelqueue.domain.states import RemotePhase
from reelqueue.providers.adapters._client import ApiClient
from reelqueue.providers.adapters._common import (
    FailureRules,
    cancel_request,
    check_row,
    create_answer,
    created_id,
    fresh_video_link,
    outcome_unknown,
    plain_status,
    whole_duration,
)
from reelqueue.providers.adapters._errors import (
    CONTENT_POLICY_WORDS,
    json_or_none,
    mentions,
    provider_words,
    retry_after_of,
    words_of,
)
from reelqueue.providers.adapters._images import image_kind, load_image
from reelqueue.providers.adapters._params import param_bool, param_int, param_str
from reelqueue.providers.base import (
    ParamProblem,
    ParamSpec,
    PriceVariant,
    ProviderConfig,
    RemoteRecord,
    RemoteStatus,
    RenderRequest,
    SearchResult,
)
from reelqueue.providers.http import HttpSession
from reelqueue.providers.httpx_session import httpx_client_of
from reelqueue.providers.registry import ProviderInfo

KIND = "fal"
TITLE = "fal.ai"
DEFAULT_BASE_URL = "https://queue.fal.run"
TEXT_MODELS = ("fal-ai/veo3.1", "fal-ai/veo3.1/fast")
IMAGE_MODELS = ("fal-ai/veo3.1/image-to-video", "fal-ai/veo3.1/fast/image-to-video")
POLL_SECONDS = 5.0  # no documented cadence
# The request history (fal Platform API "List requests by endpoint"; SOURCE.md, key PL).
PLATFORM_URL = "https://api.fal.ai/v1"
LIST_PATH = "/models/requests/by-endpoint"
LIST_LIMIT = 100  # the documented maximum page
SEARCH_PAGES = 20  # 2,000 requests of our models from `since` on
# fal documents no delay before a request is listed, and lists it at its end (sorted by
# end time): a Veo render waits in the queue, then renders for minutes. 15 minutes covers
# that with room; as the history never proves "none", a longer render is only found later.
SETTLE_SECONDS = 900.0
# fal keeps request payloads (json_input) 30 days by default (docs "Data retention").
PAYLOAD_KEEP_HOURS = 30 * 24.0
# fal's own storage hosts: an image there may be fal's copy of one we sent inline.
FAL_STORAGE = ("fal.media", "fal.run", "fal.ai")
PROBE_REQUEST_ID = "00000000-0000-0000-0000-000000000000"
# Models whose input schema has ``generate_audio`` (boolean, default true): fal.ai model
# pages fal-ai/veo3.1[/fast][/image-to-video], "Input Schema" (tests/fixtures/fal/SOURCE.md).
AUDIO_MODELS = frozenset(TEXT_MODELS + IMAGE_MODELS)

# USD per second of video, (audio off, audio on), the same at 720p and 1080p (the only
# resolutions offered here). Read 2026-12-01 in fal's own model pages ("Pricing"):
# fal.ai/models/fal-ai/veo3.1/llms.txt gives $0.20 / $0.40 for the standard tier;
# fal.ai/models/fal-ai/veo3.1/fast/first-last-frame-to-video/llms.txt gives $0.10 / $0.15
# for the fast tier. The text-to-video fast page and both image-to-video pages were not
# readable here: their prices are their tier's (fal's Veo 3.1 page: "Standard and Fast
# tiers for every mode"; videopromptkit.com's Veo 3.1 guide: the text and image endpoints
# "cost the same"). Audio is off unless the row asks for it (_input), so the silent price
# is each model's own.
PRICES: dict[str, tuple[float, float]] = {
    "fal-ai/veo3.1": (0.20, 0.40),
    "fal-ai/veo3.1/image-to-video": (0.20, 0.40),
    "fal-ai/veo3.1/fast": (0.10, 0.15),
    "fal-ai/veo3.1/fast/image-to-video": (0.10, 0.15),
}

_INVALID, _POLICY = ErrorLabel.INVALID_INPUT, ErrorLabel.CONTENT_POLICY
# What fal documents for a failed request: model errors (docs.fal.ai/errors, the ``type``
# of each ``detail`` item) and request errors (fal.ai/docs/documentation/model-apis/
# request-errors, ``error_type``). The X-Fal-Retryable header, when present, decides first.
FAILURE_RULES = FailureRules(
    retryable={
        # Model errors documented as transient.
        "internal_server_error": ErrorLabel.PROVIDER_ERROR,
        "generation_timeout": ErrorLabel.TIMED_OUT,
        "downstream_service_error": ErrorLabel.PROVIDER_ERROR,
        "downstream_service_unavailable": ErrorLabel.PROVIDER_ERROR,
        # Request errors: the runner or the platform, not the input.
        "request_timeout": ErrorLabel.TIMED_OUT,
        "startup_timeout": ErrorLabel.TIMED_OUT,
        "runner_scheduling_failure": ErrorLabel.PROVIDER_ERROR,
        "runner_connection_timeout": ErrorLabel.PROVIDER_ERROR,
        "runner_disconnected": ErrorLabel.PROVIDER_ERROR,
        "runner_connection_refused": ErrorLabel.PROVIDER_ERROR,
        "runner_connection_error": ErrorLabel.PROVIDER_ERROR,
        "runner_incomplete_response": ErrorLabel.PROVIDER_ERROR,
        "runner_server_error": ErrorLabel.PROVIDER_ERROR,
        "internal_error": ErrorLabel.PROVIDER_ERROR,
    },
    # Account trouble reaches us as an HTTP 401/403/429 answer (``_error``), never as the
    # reason of a finished request.
    account={},
    permanent={
        "content_policy_violation": _POLICY,
        "image_load_error": _INVALID,  # an image URL fal could not fetch
        "file_download_error": _INVALID,
        "image_too_large": _INVALID,
        "image_too_small": _INVALID,
        "unsupported_image_format": _INVALID,
        "feature_not_supported": _INVALID,
        "no_media_generated": ErrorLabel.PROVIDER_ERROR,
        "bad_request": _INVALID,
        # Input validation (the docs link each to docs.fal.ai/errors#<type>).
        "literal_error": _INVALID,
        "missing": _INVALID,
        "greater_than": _INVALID,
        "greater_than_equal": _INVALID,
        "less_than": _INVALID,
        "less_than_equal": _INVALID,
        "multiple_of": _INVALID,
        "sequence_too_short": _INVALID,
        "sequence_too_long": _INVALID,
        "one_of": _INVALID,
    },
    source="docs.fal.ai/errors (model errors) and fal.ai/docs/documentation/model-apis/"
           "request-errors (request errors), read 2026-11",
)

PARAMS = ParamSpec(
    models=TEXT_MODELS + IMAGE_MODELS,
    durations=(4.0, 6.0, 8.0),
    aspect_ratios=("16:9", "9:16"),
    resolutions=("720p", "1080p"),
    seed=True,
    negative_prompt=True,
    reference_image=True,
    max_prompt_chars=4000,
    price_per_second={model: silent for model, (silent, _) in PRICES.items()},
    price_variants={model: (PriceVariant(audio, audio=True),)
                    for model, (_, audio) in PRICES.items()},
    price_source="fal.ai/models/fal-ai/veo3.1 and /veo3.1/fast/first-last-frame-to-video "
    "(Pricing; the image-to-video endpoints at their tier's price), read 2026-12-01",
    default_capacity=2,  # new accounts: 2 concurrent IN_PROGRESS; IN_QUEUE does not count
)


def extra_validation(params: Mapping[str, Any]) -> list[ParamProblem]:
    """fal rules ParamSpec cannot say: image models need an image, text models take none."""
    model = param_str(params, "model") or PARAMS.models[0]
    has_image = bool(image_kind(params.get("image")))
    problems: list[ParamProblem] = []
    if model in IMAGE_MODELS and not has_image:
        problems.append(ParamProblem.of(
            f"{model} makes video from an image: give an image", model=TEXT_MODELS, image=[]))
    if model in TEXT_MODELS and has_image:
        problems.append(ParamProblem.of(
            f"{model} is text-to-video; use {model}/image-to-video for an image",
            model=IMAGE_MODELS, image=[None]))
    return problems + whole_duration(params, PARAMS)


class FalProvider:
    """One fal.ai account.

    Attributes:
        kind: "fal".
        supports_lookup: False; queue requests cannot be found by our client token.
        supports_search: True when fal's request history can be read for this account:
            the queue is fal's own (a gateway's key is not sent to api.fal.ai), and the
            history has not answered 404/405. Its search can find a render, never rule
            one out (:meth:`search`).
        proves_absence: False: the history can find a render, never prove one absent.
        settle_seconds: :data:`SETTLE_SECONDS`.
        echo_keeps_hours: :data:`PAYLOAD_KEEP_HOURS`.
        keeps_client_token: False; nothing of our client token is sent to fal.
    """

    kind: str = KIND
    supports_lookup: bool = False
    proves_absence: bool = False  # the history lists finished requests only
    settle_seconds: float = SETTLE_SECONDS
    echo_keeps_hours: float | None = PAYLOAD_KEEP_HOURS
    keeps_client_token: bool = False

    def __init__(self, client: httpx2.AsyncClient, config: ProviderConfig) -> None:
        self._api = ApiClient(client, config, title=TITLE, default_base_url=DEFAULT_BASE_URL,
                              auth_headers=_fal_auth)
        # The request history lives on fal's platform host. Only an account on fal's own
        # queue sends its key there: a gateway's base URL means a gateway's key.
        self.supports_search: bool = self._api.base_url == DEFAULT_BASE_URL
        self._platform = ApiClient(
            client, ProviderConfig(config.account, PLATFORM_URL, config.api_key),
            title=TITLE, default_base_url=PLATFORM_URL, auth_headers=_fal_auth)

    def __repr__(self) -> str:
        return f"FalProvider(account={self._api.account!r})"

    async def check_key(self) -> None:
        """Ask the queue for the status of a request that does not exist.

        fal documents no account endpoint on the queue host; this read-only probe costs
        nothing: a bad or locked key answers 401/403, a good one 404 (or another 4xx).
        """
        app = _app_root(TEXT_MODELS[0])
        response = await self._api.request("GET", f"/{app}/requests/{PROBE_REQUEST_ID}/status")
        if response.status_code in (401, 403) or response.status_code >= 500:
            raise self._error(response)

    async def submit(self, request: RenderRequest) -> str:
        check_row(TITLE, PARAMS, extra_validation, request)
        model = param_str(request.params, "model") or PARAMS.models[0]
        body = await self._input(model, request)
        answer = await create_answer(self._api, f"/{model}", self._error, json_body=body)
        request_id = created_id(self._api, answer.get("request_id"), "request id", answer)
        return self._job_id(model, request_id, answer.get("status_url"))

    async def poll(self, provider_job_id: str) -> RemoteStatus:
        path = _job_path(provider_job_id)
        response = await self._api.request("GET", f"{path}/status", params={"logs": 1})
        if not response.is_success:
            raise self._error(response)
        status = self._api.json_of(response)
        state = str(status.get("status", ""))
        if state == "IN_QUEUE":
            position = status.get("queue_position")
            sub = f"IN_QUEUE (position {position})" if isinstance(position, int) else state
            return RemoteStatus(RemotePhase.QUEUED, sub_status=sub, poll_after=POLL_SECONDS)
        if state == "COMPLETED":
            if status.get("error") or status.get("error_type"):
                return RemoteStatus(RemotePhase.FAILED, sub_status=state,
                                    error=self._status_error(status, response))
            return await self._result_status(path)
        return plain_status(state, {"IN_PROGRESS": RemotePhase.RUNNING}, POLL_SECONDS)

    async def lookup(self, request: RenderRequest) -> str | None:
        """fal's queue cannot be searched by our token: never answer "there is none"."""
        raise outcome_unknown(self._api, "fal's queue cannot be searched for a request by our "
                              f"client token {request.client_token}; look for it in the "
                              "fal dashboard")

    async def search(self, since: float, until: float) -> SearchResult:
        """fal's request history of our models, from ``since`` on, with the inputs.

        ``GET https://api.fal.ai/v1/models/requests/by-endpoint`` with every model we
        create on (``endpoint_id``, comma-separated), ``start`` = ``since`` (no ``end``:
        it defaults to now, so a render that finished after ``until`` is still read),
        ``expand=payloads`` and the largest page (``limit`` 100), following
        ``next_cursor`` while ``has_more``, at most :data:`SEARCH_PAGES` pages.

        ``complete`` is always False: the history is sorted by end time and filtered by
        finished states (success / error / user_error); nothing documents that a request
        still queued or running is listed. It can find a render, never prove there is
        none. A failure on a later page returns what was read; an answer of an
        undocumented shape raises ``outcome_unknown``; 404/405 turns the search off.
        """
        if not self.supports_search:
            raise outcome_unknown(self._api, "fal's request history is not read for this "
                                  "account (a gateway, or a history that answered 404/405)")
        params: dict[str, str | int] = {
            "endpoint_id": ",".join(PARAMS.models), "start": _iso(since),
            "expand": "payloads", "limit": LIST_LIMIT,
        }
        records: list[RemoteRecord] = []
        for page in range(SEARCH_PAGES):
            try:
                response = await self._platform.request("GET", LIST_PATH, params=params)
            except ProviderError:
                if page == 0:
                    raise
                return SearchResult(tuple(records), complete=False)
            if not response.is_success:
                if page > 0:
                    return SearchResult(tuple(records), complete=False)
                if response.status_code in (404, 405):
                    self.supports_search = False
                    raise outcome_unknown(self._api, "fal's request history is not available "
                                          f"(HTTP {response.status_code}); search turned off",
                                          status_code=response.status_code)
                raise self._error(response)
            items, cursor = self._history_page(json_or_none(response))
            records += [self._history_record(item) for item in items]
            if cursor is None:
                break
            params["cursor"] = cursor
        return SearchResult(tuple(records), complete=False)

    def echo(self, request: RenderRequest) -> Mapping[str, Any]:
        """``{"model": endpoint id, "input": the create body}``, the image as its identity
        (an https URL as given, else ``sha256:`` of its bytes), as :meth:`search` reads
        ``json_input``."""
        model = param_str(request.params, "model") or PARAMS.models[0]
        echo = _echo_of(model, _body(model, request, _request_image(request.params)))
        if echo is None:  # an identity is always comparable; never reached
            raise outcome_unknown(self._api, "the row's image has no identity to compare")
        return echo

    async def download(self, provider_job_id: str, status: RemoteStatus) -> AsyncIterator[bytes]:
        async def fresh_link() -> str:
            return await fresh_video_link(self._api,
                                          self._result_status(_job_path(provider_job_id)),
                                          lambda _: "the request finished without a video (or no "
                                          "longer offers it); it was not created again")

        async for chunk in self._api.stream_video(status.video_url, refresh=fresh_link):
            yield chunk

    async def cancel(self, provider_job_id: str) -> None:
        # 400 means it is already running or done: nothing more to ask for.
        await cancel_request(self._api, "PUT", f"{_job_path(provider_job_id)}/cancel",
                             self._error, fine=(400, 404))

    # -- internals ------------------------------------------------------------------------

    async def _input(self, model: str, request: RenderRequest) -> dict[str, Any]:
        image_url: str | None = None
        if image_kind(request.params.get("image")):
            image = await load_image(request.params["image"], TITLE,
                                     request.params.get("image_sha256"))
            image_url = image.url_or_data_uri()  # fal accepts data URIs too
        return _body(model, request, image_url)

    def _history_page(self, answer: Any) -> tuple[list[Any], str | None]:
        """The items of a history page and the cursor of the next (None: the last)."""
        items = answer.get("items") if isinstance(answer, dict) else None
        has_more = answer.get("has_more") if isinstance(answer, dict) else None
        cursor = answer.get("next_cursor") if isinstance(answer, dict) else None
        if not isinstance(items, list) or not isinstance(has_more, bool) or (
                has_more and (not isinstance(cursor, str) or not cursor)):
            raise outcome_unknown(self._api, "fal's request history answered in an "
                                  "undocumented shape", answer)
        return items, cursor if has_more else None

    def _history_record(self, item: Any) -> RemoteRecord:
        request_id = item.get("request_id") if isinstance(item, dict) else None
        endpoint = item.get("endpoint_id") if isinstance(item, dict) else None
        if not isinstance(item, dict) or not isinstance(request_id, str) or \
                not request_id.strip() or not isinstance(endpoint, str) or not endpoint.strip():
            raise outcome_unknown(self._api, "a request in fal's history has no request id "
                                  "or endpoint", item)
        payload = item.get("json_input")
        echo = None  # no payload (storage off, or deleted): never ruled out
        if isinstance(payload, dict) and not _on_fal_storage(payload.get("image_url")):
            # An image on fal's storage may be fal's copy of one sent inline: never
            # ruled out either.
            echo = _echo_of(endpoint, payload)
        ended, code = item.get("ended_at"), item.get("status_code")
        status = "COMPLETED" if ended else "listed without an end time"
        if ended and isinstance(code, int) and not isinstance(code, bool):
            status = f"COMPLETED (HTTP {code})"
        return RemoteRecord(provider_job_id=f"{_app_root(endpoint)}/requests/{request_id}",
                            created_at=_unix(item.get("sent_at")), status=status, echo=echo)

    def _job_id(self, model: str, request_id: str, status_url: Any) -> str:
        if isinstance(status_url, str) and self._api.is_own_origin(status_url):
            path = status_url[len(self._api.base_url):].split("?")[0]
            if path.endswith("/status"):
                return path[: -len("/status")].lstrip("/")
        return f"{_app_root(model)}/requests/{request_id}"

    async def _result_status(self, path: str) -> RemoteStatus:
        response = await self._api.request("GET", path)
        if not response.is_success:
            body = json_or_none(response)
            model_error = isinstance(body, dict) and "detail" in body
            if response.status_code in (401, 403, 429) or (
                response.status_code >= 500 and not model_error
                and _fal_retryable(response) is None
            ):
                # The account, or a blip of the result endpoint: poll again later rather
                # than call a render failed that may have succeeded.
                raise self._error(response)
            # The request finished with a model error: the render failed.
            return RemoteStatus(RemotePhase.FAILED, sub_status="COMPLETED",
                                error=self._result_error(response, body))
        result = self._api.json_of(response)
        video = result.get("video")
        url = video.get("url") if isinstance(video, dict) else None
        if not isinstance(url, str) or not url:
            # Finished and billed, but the answer holds no file: never FAILED (a failed
            # render may be created again); the engine reads it again instead.
            return RemoteStatus(RemotePhase.SUCCEEDED, sub_status="COMPLETED (no video in "
                                "the result)", progress=1.0, video_url=None)
        return RemoteStatus(RemotePhase.SUCCEEDED, sub_status="COMPLETED", progress=1.0,
                            video_url=url)

    def _status_error(self, status: Mapping[str, Any], response: httpx2.Response) -> ProviderError:
        error_type = str(status.get("error_type") or "")
        return self._failure(words_of(status.get("error")), {error_type} - {""}, response)

    def _result_error(self, response: httpx2.Response, body: Any) -> ProviderError:
        """The failure a result read reports for a request that finished with an error."""
        types = _detail_types(body)
        header_type = response.headers.get("x-fal-error-type")
        if header_type:
            types.add(header_type)
        error = self._failure(provider_words(response), types, response)
        label = error.label
        if label is ErrorLabel.PROVIDER_ERROR and error.error_class is ErrorClass.PERMANENT \
                and response.status_code in (400, 422):
            label = ErrorLabel.INVALID_INPUT  # fal's answer for input it refused
        return ProviderError(str(error), error_class=error.error_class, label=label,
                             status_code=response.status_code)

    def _failure(self, words: str, types: set[str], response: httpx2.Response
                 ) -> ProviderError:
        """A finished request's failure: the X-Fal-Retryable header when fal sends one,
        else the documented types (FAILURE_RULES); an undocumented type is permanent."""
        found = [FAILURE_RULES.classify(self._api, words, error_type, what="request failed")
                 for error_type in sorted(types)]
        if not found:
            found = [FAILURE_RULES.classify(self._api, words, what="request failed")]
        # One permanent reason (documented or not) is enough to stop: fail closed.
        error = next((e for e in found if e.error_class is ErrorClass.PERMANENT), found[0])
        retryable = _fal_retryable(response)
        if retryable is True and error.label is not ErrorLabel.CONTENT_POLICY:
            label = (error.label if error.error_class is ErrorClass.RETRYABLE
                     else ErrorLabel.PROVIDER_ERROR)
            return self._api.error(_after_title(str(error)), ErrorClass.RETRYABLE, label)
        if retryable is False and error.error_class is ErrorClass.RETRYABLE:
            return self._api.error(_after_title(str(error)), ErrorClass.PERMANENT,
                                   error.label)
        return error

    def _error(self, response: httpx2.Response, *, during_create: bool = False) -> ProviderError:
        status = response.status_code
        body = json_or_none(response)
        types = _detail_types(body)
        words = provider_words(response)
        message = self._api.message(response)

        def make(error_class: ErrorClass, label: ErrorLabel,
                 retry_after: float | None = None) -> ProviderError:
            return ProviderError(message, error_class=error_class, label=label,
                                 retry_after=retry_after, status_code=status)

        if "content_policy_violation" in types:
            return make(ErrorClass.PERMANENT, ErrorLabel.CONTENT_POLICY)
        if status in (401, 403):
            # 403 "User is locked. Reason: Exhausted balance" is a billing lock.
            if mentions(words, "balance", "billing", "top up", "top_up"):
                return make(ErrorClass.ACCOUNT, ErrorLabel.OUT_OF_CREDITS)
            return make(ErrorClass.ACCOUNT, ErrorLabel.KEY_REJECTED)
        if status == 402:
            return make(ErrorClass.ACCOUNT, ErrorLabel.OUT_OF_CREDITS)
        if status == 429:
            return make(ErrorClass.ACCOUNT, ErrorLabel.RATE_LIMITED, retry_after_of(response))
        retryable = _fal_retryable(response)
        if retryable is True:
            error = self._api.http_error(response, during_create=during_create)
            if error.error_class is ErrorClass.RETRYABLE:
                return error
            return make(ErrorClass.RETRYABLE, ErrorLabel.PROVIDER_ERROR,
                        retry_after_of(response))
        if retryable is False and status >= 500:
            return make(ErrorClass.PERMANENT, ErrorLabel.PROVIDER_ERROR)
        if status in (400, 422) and mentions(words, *CONTENT_POLICY_WORDS):
            return make(ErrorClass.PERMANENT, ErrorLabel.CONTENT_POLICY)
        return self._api.http_error(response, during_create=during_create)


def _body(model: str, request: RenderRequest, image_url: str | None) -> dict[str, Any]:
    """The create body of ``request`` for ``model`` (``image_url``: what is sent for the
    row's image). :meth:`FalProvider.echo` builds its echo from this same body."""
    params = request.params
    body: dict[str, Any] = {"prompt": request.prompt}
    if model in AUDIO_MODELS:
        # fal's default is true (and twice the price per second): audio only when asked.
        body["generate_audio"] = bool(param_bool(params, "audio"))
    ratio = param_str(params, "aspect_ratio")
    if ratio:
        body["aspect_ratio"] = ratio
    seconds = param_int(params, "duration")
    if seconds is not None:
        body["duration"] = f"{seconds}s"  # fal's Veo endpoints take "4s"/"6s"/"8s"
    resolution = param_str(params, "resolution")
    if resolution:
        body["resolution"] = resolution
    negative = param_str(params, "negative_prompt")
    if negative:
        body["negative_prompt"] = negative
    seed = param_int(params, "seed")
    if seed is not None:
        body["seed"] = seed
    if image_url is not None:
        body["image_url"] = image_url
    return body


def _fal_auth(key: str) -> Mapping[str, str]:
    return {"Authorization": f"Key {key}"}


def _echo_of(model: str, json_input: Mapping[str, Any]) -> dict[str, Any] | None:
    """The echo of a create body (ours, or a history record's ``json_input``): the model
    and every input as sent, ``image_url`` as :func:`_image_identity`; None when the image
    cannot be read."""
    normalised = dict(json_input)
    if "image_url" in normalised:
        identity = _image_identity(normalised["image_url"])
        if identity is None:
            return None
        normalised["image_url"] = identity
    return {"model": model.strip("/"), "input": normalised}


def _image_identity(value: Any) -> str | None:
    """A data: URI as ``sha256:`` of its bytes (what we send for a file or a data: cell);
    any other text as it is (an https URL, or an identity already). None: unreadable."""
    if not isinstance(value, str):
        return None
    if not value.startswith("data:"):
        return value
    header, comma, data = value.partition(",")
    if not comma or not header.endswith(";base64"):
        return None
    try:
        raw = base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError):
        return None
    return f"sha256:{hashlib.sha256(raw).hexdigest()}"


def _request_image(params: Mapping[str, Any]) -> str | None:
    """The identity of the image :meth:`FalProvider.submit` sends for ``params`` (what
    :func:`_image_identity` makes of it), without sending anything."""
    value = params.get("image")
    kind = image_kind(value)
    text = str(value).strip()
    if not kind:
        return None
    if kind == "url":
        return text
    if kind == "data":
        identity = _image_identity(text)
        if identity is None:
            raise ProviderError(f"{TITLE}: reference image unusable: the data: URI is not "
                                "base64 image data", error_class=ErrorClass.PERMANENT,
                                label=ErrorLabel.INVALID_INPUT)
        return identity
    pin = params.get("image_sha256")
    if isinstance(pin, str) and pin.strip():
        return f"sha256:{pin.strip().lower()}"  # submit refuses a file that differs from it
    try:
        data = read_pinned_image(Path(text).expanduser())
    except ImageProblem as problem:
        raise ProviderError(f"{TITLE}: reference image unusable: {problem}",
                            error_class=ErrorClass.PERMANENT,
                            label=ErrorLabel.INVALID_INPUT) from None
    return f"sha256:{hashlib.sha256(data).hexdigest()}"


def _on_fal_storage(value: Any) -> bool:
    """Whether an image URL is on fal's own storage (``*.fal.media``, ``*.fal.run``...)."""
    if not isinstance(value, str) or not value.startswith("https://"):
        return False
    host = (urlsplit(value).hostname or "").lower()
    return any(host == domain or host.endswith(f".{domain}") for domain in FAL_STORAGE)


def _iso(seconds: float) -> str:
    """``since`` for fal's ``start``: ISO 8601 UTC, rounded down to the second."""
    return datetime.fromtimestamp(math.floor(seconds), tz=UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _unix(value: Any) -> float | None:
    """An ISO 8601 time of the history (``sent_at``) in Unix seconds; None if unreadable."""
    if not isinstance(value, str) or not value.strip():
        return None
    try:
        when = datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
    except ValueError:
        return None
    return (when if when.tzinfo else when.replace(tzinfo=UTC)).timestamp()


def _after_title(message: str) -> str:
    prefix = f"{TITLE}: "
    return message[len(prefix):] if message.startswith(prefix) else message


def _app_root(model: str) -> str:
    """``owner/app`` of a model id: the queue's status/result paths drop the sub-path."""
    return "/".join(model.strip("/").split("/")[:2])


def _job_path(provider_job_id: str) -> str:
    path = "/" + provider_job_id.strip("/")
    if "://" in provider_job_id or "/requests/" not in path:
        raise ProviderError(f"{TITLE}: not a fal job id: {provider_job_id!r}",
                            error_class=ErrorClass.PERMANENT, label=ErrorLabel.INVALID_INPUT)
    return path


def _fal_retryable(response: httpx2.Response) -> bool | None:
    for name in ("x-fal-retryable", "x-fal-needs-retry"):
        value = response.headers.get(name)
        if value is not None:
            return value.strip().lower() in ("true", "1", "yes")
    return None


def _detail_types(body: Any) -> set[str]:
    detail = body.get("detail") if isinstance(body, dict) else None
    types: set[str] = set()
    for item in detail if isinstance(detail, list) else []:
        if isinstance(item, dict) and isinstance(item.get("type"), str):
            types.add(item["type"])
    if isinstance(body, dict) and isinstance(body.get("error_type"), str):
        types.add(body["error_type"])
    return types


def create(session: HttpSession | httpx2.AsyncClient, config: ProviderConfig) -> FalProvider:
    return FalProvider(httpx_client_of(session), config)


INFO = ProviderInfo(kind=KIND, title=TITLE, factory=create, params=PARAMS,
                    default_base_url=DEFAULT_BASE_URL, requires_key=True,
                    rules=extra_validation)
