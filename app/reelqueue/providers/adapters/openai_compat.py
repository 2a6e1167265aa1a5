"""OpenAI-compatible ``/v1/videos`` adapter (kind ``openai-compat``) for gateways.

OpenAI shut its own Videos API (Sora 2) down on 2026-09-24; some gateways keep the wire
shape with other models behind it (PROVIDERS.md sections 0 and 1). So there is **no
default base URL** and no default model: the account names its gateway (https) and the
row or the account setting ``model`` names the model.

Shape (openai-python ``src/openai/resources/videos.py`` and ``types/video*.py``):
``POST /videos`` as multipart form (``prompt``, ``model``, ``seconds`` one of the strings
"4", "8", "12", ``size`` one of 720x1280, 1280x720, 1024x1792, 1792x1024,
``input_reference`` a file) answers a video object ``{id, status, progress,
error{code, message}, expires_at…}``; ``GET /videos/{id}`` reports ``queued`` /
``in_progress`` (``progress`` 0-100) / ``completed`` / ``failed`` (Batch also ``expired``);
``GET /videos/{id}/content`` streams the file with the key (links last about an hour).
The ``openai-poll-after-ms`` header paces polling. A 429 is either ``rate_limit_exceeded``
(wait) or ``insufficient_quota`` (credits gone). A failed video's ``error.code`` goes
through :data:`FAILURE_RULES`: only ``server_error`` is retried. No idempotency key; the
list endpoint cannot be filtered by anything of ours, so ``supports_lookup`` is False and
``lookup`` never answers "there is none".

Row resolution -> size: ``720p`` = 1280x720 / 720x1280 and ``1024p`` = 1792x1024 /
1024x1792 (the SDK's sizes, by aspect ratio); ``1080p`` = 1920x1080 / 1080x1920 is not in
the SDK and is sent only when the account's setting ``allow_1080p`` says the gateway's
model takes it. The account's setting ``model`` (``accounts add/set --model``) is the
default model.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from typing import Any

import httpx

from reelqueue.domain.errors import ErrorClass, ErrorLabel, ProviderError
from reelqueue.domain.states import RemotePhase
from reelqueue.providers.adapters._client import ApiClient
from reelqueue.providers.adapters._common import (
    FailureRules,
    cancel_request,
    create_answer,
    created_id,
    fraction,
    fresh_video_link,
    outcome_unknown,
    plain_status,
    whole_duration,
)
from reelqueue.providers.adapters._errors import (
    CONTENT_POLICY_WORDS,
    error_code_of,
    invalid_params,
    json_or_none,
    mentions,
    provider_words,
)
from reelqueue.providers.adapters._images import image_kind, load_image
from reelqueue.providers.adapters._params import param_int, param_str, spec_problems
from reelqueue.providers.base import (
    ParamProblem,
    ParamSpec,
    ProviderConfig,
    RemoteStatus,
    RenderRequest,
)
from reelqueue.providers.registry import ProviderInfo

KIND = "openai-compat"
TITLE = "OpenAI-compatible gateway"
POLL_SECONDS = 10.0  # the guide's 10-20 s, when the gateway sends no openai-poll-after-ms
# (aspect ratio, resolution) -> size. The first four are the SDK's VideoSize literals
# (types/video_size.py); 1080p is the gateway's own, allowed per account (allow_1080p).
_SIZES = {("16:9", "720p"): "1280x720", ("9:16", "720p"): "720x1280",
          ("16:9", "1024p"): "1792x1024", ("9:16", "1024p"): "1024x1792",
          ("16:9", "1080p"): "1920x1080", ("9:16", "1080p"): "1080x1920"}
SECONDS = (4, 8, 12)  # types/video_seconds.py: Literal["4", "8", "12"]
_POLICY_CODES = ("moderation_blocked", "content_policy_violation", "content_filter")

_INVALID, _POLICY = ErrorLabel.INVALID_INPUT, ErrorLabel.CONTENT_POLICY
# A failed video's ``error.code``. OpenAI documents the codes of a failed generation for
# its Responses API (openai-python types/responses/response_error.py) and the meaning of
# each in the error-codes guide (developers.openai.com/docs/guides/error-codes):
# server_error is "retry after a brief wait"; rate_limit_exceeded / insufficient_quota are
# the account's. Everything else, including a gateway's own words, is permanent.
FAILURE_RULES = FailureRules(
    retryable={"server_error": ErrorLabel.PROVIDER_ERROR},
    account={"rate_limit_exceeded": ErrorLabel.RATE_LIMITED,
             "insufficient_quota": ErrorLabel.OUT_OF_CREDITS,
             "invalid_api_key": ErrorLabel.KEY_REJECTED,
             "unsupported_country_region_territory": ErrorLabel.KEY_REJECTED},
    permanent={**dict.fromkeys(_POLICY_CODES, _POLICY),
               "image_content_policy_violation": _POLICY,
               "bio_policy": _POLICY,
               "invalid_prompt": _INVALID,
               "invalid_image": _INVALID,
               "invalid_image_format": _INVALID,
               "invalid_base64_image": _INVALID,
               "invalid_image_url": _INVALID,
               "image_too_large": _INVALID,
               "image_too_small": _INVALID,
               "image_parse_error": _INVALID,
               "invalid_image_mode": _INVALID,
               "image_file_too_large": _INVALID,
               "unsupported_image_media_type": _INVALID,
               "empty_image_file": _INVALID,
               "failed_to_download_image": _INVALID,
               "image_file_not_found": _INVALID,
               "invalid_reference_image": _INVALID},
    source="openai-python types/responses/response_error.py (codes) and "
           "developers.openai.com/docs/guides/error-codes (what each means), 2026",
)

PARAMS = ParamSpec(
    models=(),  # whatever the gateway serves; set per row or with the account's "model"
    durations=tuple(float(n) for n in SECONDS),
    aspect_ratios=("16:9", "9:16"),
    resolutions=("720p", "1024p", "1080p"),  # 1080p only with the account's allow_1080p
    seed=False,
    negative_prompt=False,
    reference_image=True,
    max_prompt_chars=4000,
    price_per_second={},  # each gateway prices its own models: the account's own price
    price_source="none: each gateway prices its own models (OpenAI's own Videos API shut "
    "down 2026-09-24); set the account's own price",
    default_capacity=1,  # concurrency was never published, and gateways differ
)


def extra_validation(params: Mapping[str, Any]) -> list[ParamProblem]:
    """The /v1/videos shape takes the reference image as an uploaded file, not a link."""
    problems: list[ParamProblem] = []
    if image_kind(params.get("image")) == "url":
        problems.append(ParamProblem.of(
            "an OpenAI-compatible gateway takes the image as a file, not a link",
            image=[None]))
    return problems + whole_duration(params, PARAMS)


class OpenAICompatProvider:
    """One account on an OpenAI-compatible video gateway.

    Attributes:
        kind: "openai-compat".
        supports_lookup: False; the list cannot be searched by our client token.
    """

    kind: str = KIND
    supports_lookup: bool = False

    def __init__(self, client: httpx.AsyncClient, config: ProviderConfig) -> None:
        self._api = ApiClient(client, config, title=TITLE, default_base_url=None)
        self._model = str(config.settings.get("model") or "").strip() or None
        self._allow_1080p = config.settings.get("allow_1080p") is True

    def __repr__(self) -> str:
        return f"OpenAICompatProvider(account={self._api.account!r})"

    async def check_key(self) -> None:
        """``GET /videos?limit=1`` (read-only); ``GET /models`` if the gateway has no list."""
        response = await self._api.request("GET", "/videos", params={"limit": 1})
        if response.status_code in (404, 405):
            response = await self._api.request("GET", "/models")
        if not response.is_success:
            raise self._error(response)

    async def submit(self, request: RenderRequest) -> str:
        problems = spec_problems(PARAMS, request.params, request.prompt)
        problems += [problem.message for problem in extra_validation(request.params)]
        model = param_str(request.params, "model") or self._model
        if not model:
            problems.append("no model: put one in the row or give the account a default "
                            "with 'reelqueue accounts set NAME --model MODEL'")
        if param_str(request.params, "resolution") == "1080p" and not self._allow_1080p:
            problems.append("1080p is not one of the /v1/videos sizes; allow it only if the "
                            "gateway's model takes it (account setting allow_1080p)")
        if problems or not model:
            raise invalid_params(TITLE, problems)
        answer = await create_answer(self._api, "/videos", self._error,
                                     files=await self._form(model, request))
        return created_id(self._api, answer.get("id"), "video id", answer)

    async def poll(self, provider_job_id: str) -> RemoteStatus:
        response = await self._api.request("GET", f"/videos/{provider_job_id}")
        if not response.is_success:
            raise self._error(response)
        return self._status(provider_job_id, self._api.json_of(response), response)

    async def lookup(self, request: RenderRequest) -> str | None:
        """The list cannot be searched by our token: never answer "there is none"."""
        raise outcome_unknown(self._api, "the gateway's video list cannot be searched by our "
                              f"client token {request.client_token}; look for the video in "
                              "the gateway's dashboard")

    async def download(self, provider_job_id: str, status: RemoteStatus) -> AsyncIterator[bytes]:
        async def fresh_link() -> str:
            return await fresh_video_link(
                self._api, self.poll(provider_job_id),
                lambda latest: f"the video is no longer available ({latest.sub_status}); "
                "links last about an hour")

        url = status.video_url or self._content_url(provider_job_id)
        async for chunk in self._api.stream_video(url, refresh=fresh_link,
                                                  send_key_to_api_host=True,
                                                  accept="application/binary"):
            yield chunk

    async def cancel(self, provider_job_id: str) -> None:
        """``DELETE /videos/{id}``: the shape's only way to drop a job (and its files)."""
        await cancel_request(self._api, "DELETE", f"/videos/{provider_job_id}", self._error,
                             fine=(404, 405))

    # -- internals ------------------------------------------------------------------------

    async def _form(self, model: str, request: RenderRequest) -> list[tuple[str, Any]]:
        params = request.params
        form: list[tuple[str, Any]] = [("prompt", (None, request.prompt)),
                                       ("model", (None, model))]
        seconds = param_int(params, "duration")
        if seconds is not None:
            form.append(("seconds", (None, str(seconds))))  # a string enum in this shape
        ratio = param_str(params, "aspect_ratio")
        resolution = param_str(params, "resolution")
        if ratio or resolution:
            size = _SIZES.get((ratio or "16:9", resolution or "720p"))
            if size:
                form.append(("size", (None, size)))
        if image_kind(params.get("image")):
            image = await load_image(params["image"], TITLE, params.get("image_sha256"))
            name = "reference." + (image.mime_type.split("/")[-1] or "png")
            form.append(("input_reference", (name, image.data or b"", image.mime_type)))
        return form

    def _content_url(self, video_id: str) -> str:
        return self._api.url(f"/videos/{video_id}/content")

    def _status(self, video_id: str, video: Mapping[str, Any],
                response: httpx.Response) -> RemoteStatus:
        state = str(video.get("status", ""))
        poll_after = _poll_after(response)
        if state == "in_progress":
            return RemoteStatus(RemotePhase.RUNNING, sub_status=state,
                                progress=fraction(video.get("progress"), 100.0),
                                poll_after=poll_after)
        if state == "completed":
            return RemoteStatus(RemotePhase.SUCCEEDED, sub_status=state, progress=1.0,
                                video_url=self._content_url(video_id))
        if state == "failed":
            return RemoteStatus(RemotePhase.FAILED, sub_status=state,
                                error=self._failure(video))
        if state == "expired":
            return RemoteStatus(RemotePhase.FAILED, sub_status=state, error=self._api.error(
                "the video expired before it was downloaded; retry the row to render it "
                "again", ErrorClass.PERMANENT, ErrorLabel.DOWNLOAD_FAILED))
        return plain_status(state, {"queued": RemotePhase.QUEUED}, poll_after)

    def _failure(self, video: Mapping[str, Any]) -> ProviderError:
        error = video.get("error")
        error = error if isinstance(error, dict) else {}
        code = error.get("code")
        return FAILURE_RULES.classify(self._api, error.get("message"),
                                      code if isinstance(code, str) else None)

    def _error(self, response: httpx.Response, *, during_create: bool = False) -> ProviderError:
        status = response.status_code
        code = error_code_of(json_or_none(response))
        words = provider_words(response)
        message = self._api.message(response)
        if status == 429 and (code == "insufficient_quota" or mentions(
                words, "exceeded your current quota")):
            # Credits gone: waiting will not help; no Retry-After is honoured here.
            return ProviderError(message, error_class=ErrorClass.ACCOUNT,
                                 label=ErrorLabel.OUT_OF_CREDITS, status_code=status)
        if status in (400, 422) and (code in _POLICY_CODES or mentions(
                words, *CONTENT_POLICY_WORDS)):
            return ProviderError(message, error_class=ErrorClass.PERMANENT,
                                 label=ErrorLabel.CONTENT_POLICY, status_code=status)
        return self._api.http_error(response, during_create=during_create)


def _poll_after(response: httpx.Response) -> float:
    value = response.headers.get("openai-poll-after-ms")
    if value:
        try:
            return max(0.0, float(value) / 1000.0)
        except ValueError:
            pass
    return POLL_SECONDS


def create(client: httpx.AsyncClient, config: ProviderConfig) -> OpenAICompatProvider:
    return OpenAICompatProvider(client, config)


INFO = ProviderInfo(kind=KIND, title=TITLE, factory=create, params=PARAMS,
                    default_base_url=None, requires_key=True,
                    rules=extra_validation)
