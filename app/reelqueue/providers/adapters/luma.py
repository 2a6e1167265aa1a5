"""Luma Agents API adapter (kind ``luma``): Ray 3.2 video generations.

Facts from PROVIDERS.md section 4b and the luma-agents SDK types: ``POST /generations``
with ``type: "video"``, ``model``, ``prompt``, top-level ``aspect_ratio`` and a nested
``video`` object (``duration`` "5s"/"10s", ``resolution``, ``start_frame`` as ``{url}`` or
``{data, media_type}``) answers a Generation; ``GET /generations/{id}`` reports ``state``
``queued`` / ``processing`` / ``completed`` / ``failed`` with ``failure_code`` and
``failure_reason``; ``output[]`` holds ``{type, url}`` with a presigned URL that expires in
one hour, and every GET hands out a fresh one. No progress number, no idempotency key, no
lookup by our token (``user_id`` is for abuse attribution only).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from typing import Any

import httpx

from reelqueue.domain.errors import ErrorClass, ErrorLabel, ProviderError
from reelqueue.domain.states import RemotePhase
from reelqueue.providers.adapters._common import (
    check_row,
    create_answer,
    created_id,
    fresh_video_link,
    get_json,
    plain_status,
    rate_limited,
    whole_duration,
)
from reelqueue.providers.adapters._http import (
    CONTENT_POLICY_WORDS,
    ApiClient,
    error_code_of,
    image_kind,
    json_or_none,
    load_image,
    mentions,
    param_int,
    param_str,
    provider_words,
    rate_limit_reset_of,
    retry_after_of,
)
from reelqueue.providers.base import ParamSpec, ProviderConfig, RemoteStatus, RenderRequest
from reelqueue.providers.registry import ProviderInfo, register

KIND = "luma"
TITLE = "Luma"
DEFAULT_BASE_URL = "https://agents.lumalabs.ai/v1"
MODELS = ("ray-3.2",)
POLL_SECONDS = 5.0  # no documented cadence; renders take minutes, links last an hour
_PHASES = {"queued": RemotePhase.QUEUED, "processing": RemotePhase.RUNNING}

PARAMS = ParamSpec(
    models=MODELS,
    durations=(5.0, 10.0),
    # The SDK lists more (3:1 ... 1:3) and says the server checks per model; these are
    # the common video ratios.
    aspect_ratios=("16:9", "9:16", "1:1", "4:3", "3:4", "21:9"),
    resolutions=("720p", "1080p", "540p", "360p"),
    seed=False,
    negative_prompt=False,
    reference_image=True,
    max_prompt_chars=4000,  # not documented
    # Per 5 s block at 720p $0.30 ($0.06/s); 10 s costs 3x the 5 s price ($0.09/s) and
    # 1080p $1.20 per 5 s. One number per model: the 720p 5 s rate.
    price_per_second={"ray-3.2": 0.06},
    price_source="lumalabs.ai pricing, quoted in PROVIDERS.md section 4b [note]; notes "
    "compiled late 2026 (720p, per 5 s block)",
    default_capacity=1,  # no published concurrency limit
)

# failure_code -> (class, label), from the SDK's GenerationFailureCode and PROVIDERS.md.
FAILURE_CODES: dict[str, tuple[ErrorClass, ErrorLabel]] = {
    "content_moderated": (ErrorClass.PERMANENT, ErrorLabel.CONTENT_POLICY),
    "budget_exhausted": (ErrorClass.ACCOUNT, ErrorLabel.OUT_OF_CREDITS),
    "rate_limited": (ErrorClass.ACCOUNT, ErrorLabel.RATE_LIMITED),
    "image_too_large": (ErrorClass.PERMANENT, ErrorLabel.INVALID_INPUT),
    "unsupported_format": (ErrorClass.PERMANENT, ErrorLabel.INVALID_INPUT),
    "corrupt_input": (ErrorClass.PERMANENT, ErrorLabel.INVALID_INPUT),
    "invalid_request": (ErrorClass.PERMANENT, ErrorLabel.INVALID_INPUT),
    "generation_failed": (ErrorClass.RETRYABLE, ErrorLabel.PROVIDER_ERROR),
    "output_not_found": (ErrorClass.RETRYABLE, ErrorLabel.PROVIDER_ERROR),
}


def extra_validation(params: Mapping[str, Any]) -> list[str]:
    """Ray 3.2 rules ParamSpec cannot say: none known beyond whole-second durations."""
    return whole_duration(params)


class LumaProvider:
    """One Luma Agents account.

    Attributes:
        kind: "luma".
        supports_lookup: False; generations cannot be found by our client token.
    """

    kind: str = KIND
    supports_lookup: bool = False

    def __init__(self, client: httpx.AsyncClient, config: ProviderConfig) -> None:
        self._api = ApiClient(client, config, title=TITLE, default_base_url=DEFAULT_BASE_URL)

    def __repr__(self) -> str:
        return f"LumaProvider(account={self._api.account!r})"

    async def check_key(self) -> None:
        """``GET /files?limit=1``: the cheapest read-only list the Agents API offers."""
        response = await self._api.request("GET", "/files", params={"limit": 1})
        if not response.is_success:
            raise self._error(response)

    async def submit(self, request: RenderRequest) -> str:
        check_row(TITLE, PARAMS, extra_validation, request)
        body = await self._create_body(request)
        answer = await create_answer(self._api, "/generations", self._error, json_body=body)
        return created_id(self._api, answer.get("id"), "generation id")

    async def poll(self, provider_job_id: str) -> RemoteStatus:
        return self._status(await self._generation(provider_job_id))

    async def lookup(self, request: RenderRequest) -> str | None:
        return None

    async def download(self, provider_job_id: str, status: RemoteStatus) -> AsyncIterator[bytes]:
        async def fresh_link() -> str:
            # Presigned for one hour; each GET of the generation signs a new one.
            return await fresh_video_link(self._api, self.poll(provider_job_id),
                                          lambda _: "the generation no longer offers its video")

        async for chunk in self._api.stream_video(status.video_url, refresh=fresh_link):
            yield chunk

    async def cancel(self, provider_job_id: str) -> None:
        """The Agents API documents no cancel; the render runs to its end."""
        return None

    # -- internals ------------------------------------------------------------------------

    async def _create_body(self, request: RenderRequest) -> dict[str, Any]:
        params = request.params
        video: dict[str, Any] = {}
        seconds = param_int(params, "duration")
        if seconds is not None:
            video["duration"] = f"{seconds}s"
        resolution = param_str(params, "resolution")
        if resolution:
            video["resolution"] = resolution
        if image_kind(params.get("image")):
            image = await load_image(params["image"], TITLE)
            video["start_frame"] = ({"url": image.url} if image.url else
                                    {"data": image.b64(), "media_type": image.mime_type})
        body: dict[str, Any] = {"type": "video", "prompt": request.prompt,
                                "model": param_str(params, "model") or MODELS[0]}
        ratio = param_str(params, "aspect_ratio")
        if ratio:
            body["aspect_ratio"] = ratio
        if video:
            body["video"] = video
        return body

    async def _generation(self, generation_id: str) -> dict[str, Any]:
        return await get_json(self._api, f"/generations/{generation_id}", self._error)

    def _status(self, generation: Mapping[str, Any]) -> RemoteStatus:
        state = str(generation.get("state", ""))
        if state == "completed":
            return RemoteStatus(RemotePhase.SUCCEEDED, sub_status=state, progress=1.0,
                                video_url=_video_url(generation.get("output")))
        if state == "failed":
            return RemoteStatus(RemotePhase.FAILED, sub_status=state,
                                error=self._failure(generation))
        return plain_status(state, _PHASES, POLL_SECONDS)

    def _failure(self, generation: Mapping[str, Any]) -> ProviderError:
        code = str(generation.get("failure_code") or "")
        reason = self._api.shorten(str(generation.get("failure_reason") or "no reason given"))
        error_class, label = FAILURE_CODES.get(code, (ErrorClass.RETRYABLE,
                                                      ErrorLabel.PROVIDER_ERROR))
        if not code and mentions(reason, *CONTENT_POLICY_WORDS):
            error_class, label = ErrorClass.PERMANENT, ErrorLabel.CONTENT_POLICY
        return self._api.error(f"generation failed ({code or 'no code'}): {reason}",
                               error_class, label)

    def _error(self, response: httpx.Response, *, during_create: bool = False) -> ProviderError:
        status = response.status_code
        code = error_code_of(json_or_none(response))
        words = provider_words(response)
        message = self._api.message(response)
        if status == 429 or code == "rate_limited":
            wait = retry_after_of(response)
            return rate_limited(message, response,
                                wait if wait is not None else rate_limit_reset_of(response))
        if code in FAILURE_CODES and status < 500:
            error_class, label = FAILURE_CODES[code]
            return ProviderError(message, error_class=error_class, label=label,
                                 status_code=status)
        if status in (400, 402, 403) and mentions(words, "credit", "balance", "budget"):
            return ProviderError(message, error_class=ErrorClass.ACCOUNT,
                                 label=ErrorLabel.OUT_OF_CREDITS, status_code=status)
        if status in (400, 422) and mentions(words, *CONTENT_POLICY_WORDS):
            return ProviderError(message, error_class=ErrorClass.PERMANENT,
                                 label=ErrorLabel.CONTENT_POLICY, status_code=status)
        return self._api.http_error(response, during_create=during_create)


def _video_url(output: Any) -> str | None:
    if not isinstance(output, list):
        return None
    for item in output:
        if isinstance(item, dict) and item.get("type") == "video" and item.get("url"):
            return str(item["url"])
    for item in output:
        if isinstance(item, dict) and item.get("url"):
            return str(item["url"])
    return None


def create(client: httpx.AsyncClient, config: ProviderConfig) -> LumaProvider:
    return LumaProvider(client, config)


register(ProviderInfo(kind=KIND, title=TITLE, factory=create, params=PARAMS,
                      default_base_url=DEFAULT_BASE_URL, requires_key=True))
