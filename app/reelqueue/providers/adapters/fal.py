"""fal.ai queue API adapter (kind ``fal``).

Facts from PROVIDERS.md section 5b: ``POST https://queue.fal.run/{model-id}`` with the
model's input answers ``{request_id, response_url, status_url, cancel_url,
queue_position}``; ``GET …/requests/{id}/status`` reports ``IN_QUEUE`` (with
``queue_position``), ``IN_PROGRESS`` or ``COMPLETED``; ``GET …/requests/{id}`` is the result;
``PUT …/requests/{id}/cancel`` cancels. ``COMPLETED`` means *finished*, not *succeeded*: the
result (or the status) can carry an error, and ``X-Fal-Retryable`` / ``X-Fal-Needs-Retry``
says whether a retry can help. ``content_policy_violation`` is a 422 that never helps.

The status and result URLs name the app without its sub-path (``fal-ai/veo3.1`` for
``fal-ai/veo3.1/fast``), so the job id we keep is that path: ``{owner}/{app}/requests/{id}``.
No idempotency key and no lookup by our token.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from typing import Any

import httpx

from reelqueue.domain.errors import ErrorClass, ErrorLabel, ProviderError
from reelqueue.domain.states import RemotePhase
from reelqueue.providers.adapters._common import (
    cancel_request,
    check_row,
    create_answer,
    fresh_video_link,
    plain_status,
    whole_duration,
)
from reelqueue.providers.adapters._http import (
    CONTENT_POLICY_WORDS,
    ApiClient,
    image_kind,
    json_or_none,
    load_image,
    mentions,
    param_int,
    param_str,
    provider_words,
    retry_after_of,
    words_of,
)
from reelqueue.providers.base import ParamSpec, ProviderConfig, RemoteStatus, RenderRequest
from reelqueue.providers.registry import ProviderInfo, register

KIND = "fal"
TITLE = "fal.ai"
DEFAULT_BASE_URL = "https://queue.fal.run"
TEXT_MODELS = ("fal-ai/veo3.1", "fal-ai/veo3.1/fast")
IMAGE_MODELS = ("fal-ai/veo3.1/image-to-video", "fal-ai/veo3.1/fast/image-to-video")
POLL_SECONDS = 5.0  # no documented cadence
PROBE_REQUEST_ID = "00000000-0000-0000-0000-000000000000"

PARAMS = ParamSpec(
    models=TEXT_MODELS + IMAGE_MODELS,
    durations=(4.0, 6.0, 8.0),
    aspect_ratios=("16:9", "9:16"),
    resolutions=("720p", "1080p"),
    seed=True,
    negative_prompt=True,
    reference_image=True,
    max_prompt_chars=4000,
    price_per_second={},  # PROVIDERS.md has no fal prices; fal bills per model
    price_source="none: PROVIDERS.md section 5b lists no fal prices (2026)",
    default_capacity=2,  # new accounts: 2 concurrent IN_PROGRESS; IN_QUEUE does not count
)


def extra_validation(params: Mapping[str, Any]) -> list[str]:
    """fal rules ParamSpec cannot say: image models need an image, text models take none."""
    model = param_str(params, "model") or PARAMS.models[0]
    has_image = bool(image_kind(params.get("image")))
    problems: list[str] = []
    if model in IMAGE_MODELS and not has_image:
        problems.append(f"{model} makes video from an image: give an image")
    if model in TEXT_MODELS and has_image:
        problems.append(f"{model} is text-to-video; use {model}/image-to-video for an image")
    return problems + whole_duration(params)


class FalProvider:
    """One fal.ai account.

    Attributes:
        kind: "fal".
        supports_lookup: False; queue requests cannot be found by our client token.
    """

    kind: str = KIND
    supports_lookup: bool = False

    def __init__(self, client: httpx.AsyncClient, config: ProviderConfig) -> None:
        self._api = ApiClient(client, config, title=TITLE, default_base_url=DEFAULT_BASE_URL,
                              auth_headers=lambda key: {"Authorization": f"Key {key}"})

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
        body = await self._input(request)
        answer = await create_answer(self._api, f"/{model}", self._error, json_body=body)
        request_id = answer.get("request_id")
        if not isinstance(request_id, str) or not request_id:
            raise self._api.error("the submit answer had no request id",
                                  ErrorClass.RETRYABLE, ErrorLabel.PROVIDER_ERROR,
                                  body_maybe_sent=True)
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
            if status.get("error"):
                return RemoteStatus(RemotePhase.FAILED, sub_status=state,
                                    error=self._status_error(status, response))
            return await self._result_status(path)
        return plain_status(state, {"IN_PROGRESS": RemotePhase.RUNNING}, POLL_SECONDS)

    async def lookup(self, request: RenderRequest) -> str | None:
        return None

    async def download(self, provider_job_id: str, status: RemoteStatus) -> AsyncIterator[bytes]:
        async def fresh_link() -> str:
            return await fresh_video_link(self._api,
                                          self._result_status(_job_path(provider_job_id)),
                                          lambda _: "the request no longer offers its video")

        async for chunk in self._api.stream_video(status.video_url, refresh=fresh_link):
            yield chunk

    async def cancel(self, provider_job_id: str) -> None:
        # 400 means it is already running or done: nothing more to ask for.
        await cancel_request(self._api, "PUT", f"{_job_path(provider_job_id)}/cancel",
                             self._error, fine=(400, 404))

    # -- internals ------------------------------------------------------------------------

    async def _input(self, request: RenderRequest) -> dict[str, Any]:
        params = request.params
        body: dict[str, Any] = {"prompt": request.prompt}
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
        if image_kind(params.get("image")):
            image = await load_image(params["image"], TITLE)
            body["image_url"] = image.url_or_data_uri()  # fal accepts data URIs too
        return body

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
                                error=self._error(response))
        result = self._api.json_of(response)
        video = result.get("video")
        url = video.get("url") if isinstance(video, dict) else None
        if not isinstance(url, str) or not url:
            return RemoteStatus(RemotePhase.FAILED, sub_status="COMPLETED",
                                error=self._api.error("the result holds no video",
                                                      ErrorClass.RETRYABLE,
                                                      ErrorLabel.PROVIDER_ERROR))
        return RemoteStatus(RemotePhase.SUCCEEDED, sub_status="COMPLETED", progress=1.0,
                            video_url=url)

    def _status_error(self, status: Mapping[str, Any], response: httpx.Response) -> ProviderError:
        error_type = str(status.get("error_type") or "")
        text = self._api.shorten(words_of(status.get("error")))
        message = f"request failed ({error_type or 'no type'}): {text}"
        if "content_policy" in error_type or mentions(text, *CONTENT_POLICY_WORDS):
            return self._api.error(message, ErrorClass.PERMANENT, ErrorLabel.CONTENT_POLICY)
        retryable = _fal_retryable(response)
        if retryable is False:
            return self._api.error(message, ErrorClass.PERMANENT, ErrorLabel.INVALID_INPUT)
        return self._api.error(message, ErrorClass.RETRYABLE, ErrorLabel.PROVIDER_ERROR)

    def _error(self, response: httpx.Response, *, during_create: bool = False) -> ProviderError:
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


def _app_root(model: str) -> str:
    """``owner/app`` of a model id: the queue's status/result paths drop the sub-path."""
    return "/".join(model.strip("/").split("/")[:2])


def _job_path(provider_job_id: str) -> str:
    path = "/" + provider_job_id.strip("/")
    if "://" in provider_job_id or "/requests/" not in path:
        raise ProviderError(f"{TITLE}: not a fal job id: {provider_job_id!r}",
                            error_class=ErrorClass.PERMANENT, label=ErrorLabel.INVALID_INPUT)
    return path


def _fal_retryable(response: httpx.Response) -> bool | None:
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


def create(client: httpx.AsyncClient, config: ProviderConfig) -> FalProvider:
    return FalProvider(client, config)


register(ProviderInfo(kind=KIND, title=TITLE, factory=create, params=PARAMS,
                      default_base_url=DEFAULT_BASE_URL, requires_key=True))
