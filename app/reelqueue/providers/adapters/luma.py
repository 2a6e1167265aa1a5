"""Luma Agents API adapter (kind ``luma``): Ray 3.2 video generations.

Facts from the luma-agents SDK (lumalabs/luma-agents-python 0.3.0, commit 38837df:
``.stats.yml`` "configured_endpoints: 2", ``api.md``, ``types/``) and Luma's Agents docs
(docs.agents.lumalabs.ai guides/error-handling, guides/videos/generation). Only two
endpoints exist, so the key check asks for a generation that cannot exist (a documented
404 means the key was accepted). ``POST /generations``
with ``type: "video"``, ``model``, ``prompt``, top-level ``aspect_ratio`` and a nested
``video`` object (``duration`` "5s"/"10s", ``resolution``, ``start_frame`` as ``{url}`` or
``{data, media_type}``) answers a Generation; ``GET /generations/{id}`` reports ``state``
``queued`` / ``processing`` / ``completed`` / ``failed`` with ``failure_code`` and
``failure_reason``; ``output[]`` holds ``{type, url}`` with a presigned URL that expires in
one hour, and every GET hands out a fresh one. No progress number, no idempotency key, no
lookup by our token (``user_id`` is for abuse attribution only). ``failure_code`` goes
through ``FAILURE_RULES``: ``rate_limited`` and ``budget_exhausted`` are account-level (the
engine drops the dead render and pauses the account once). An answer without a readable
id or state is an unknown outcome, never "absent".
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Mapping
from typing import Any

import httpx2

from reelqueue.domain.errors import ErrorClass, ErrorLabel, ProviderError
from reelqueue.domain.states import RemotePhase
from reelqueue.providers.adapters._client import ApiClient
from reelqueue.providers.adapters._common import (
    FailureRules,
    check_row,
    create_answer,
    created_id,
    fresh_video_link,
    get_json,
    outcome_unknown,
    plain_status,
    rate_limited,
    whole_duration,
)
from reelqueue.providers.adapters._errors import (
    CONTENT_POLICY_WORDS,
    json_or_none,
    mentions,
    provider_words,
    rate_limit_reset_of,
    retry_after_of,
)
from reelqueue.providers.adapters._images import image_kind, load_image
from reelqueue.providers.adapters._params import param_int, param_str
from reelqueue.providers.base import (
    ParamProblem,
    ParamSpec,
    PriceVariant,
    ProviderConfig,
    RemoteStatus,
    RenderRequest,
)
from reelqueue.providers.http import HttpSession
from reelqueue.providers.httpx_session import httpx_client_of
from reelqueue.providers.registry import ProviderInfo

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
    resolutions=("720p", "1080p", "540p"),  # the SDK's VideoResolution (no 360p)
    seed=False,
    negative_prompt=False,
    reference_image=True,
    max_prompt_chars=4000,  # not documented
    # Per 5 s clip at 720p $0.30 ($0.06/s), at 1080p $1.20 ($0.24/s); a 10 s clip costs 3x
    # the 5 s one ($0.09/s, $0.36/s). 540p has no price in the notes: it is quoted at the
    # 720p rates (the default resolution's, the dearer guess).
    price_per_second={"ray-3.2": 0.06},
    price_variants={"ray-3.2": (
        PriceVariant(0.09, seconds=10.0),
        PriceVariant(0.24, resolution="1080p"),
        PriceVariant(0.36, resolution="1080p", seconds=10.0),
    )},
    price_source="lumalabs.ai pricing (SDR, per 5 s block), quoted in PROVIDERS.md section 4b "
    "[note] (compiled late 2026); read 2026-12-01",
    default_capacity=1,  # no published concurrency limit
)

# The SDK's GenerationFailureCode (types/generation_failure_code.py), classified by the
# "Retryable?" column of docs.agents.lumalabs.ai/guides/error-handling. A code missing
# here (a newer one) is permanent: it is never rendered again on a guess.
FAILURE_RULES = FailureRules(
    retryable={"generation_failed": ErrorLabel.PROVIDER_ERROR,   # "retry same request"
               "output_not_found": ErrorLabel.PROVIDER_ERROR},   # "retry same request"
    account={"budget_exhausted": ErrorLabel.OUT_OF_CREDITS,      # "add funds, then retry"
             "rate_limited": ErrorLabel.RATE_LIMITED},
    permanent={"content_moderated": ErrorLabel.CONTENT_POLICY,
               "image_too_large": ErrorLabel.INVALID_INPUT,
               "unsupported_format": ErrorLabel.INVALID_INPUT,
               "corrupt_input": ErrorLabel.INVALID_INPUT,
               "invalid_request": ErrorLabel.INVALID_INPUT},
    source="lumalabs/luma-agents-python 0.3.0 types/generation_failure_code.py; "
           "docs.agents.lumalabs.ai/guides/error-handling (2026)",
)


def extra_validation(params: Mapping[str, Any]) -> list[ParamProblem]:
    """Ray 3.2 rules ParamSpec cannot say: an anchor image only with 5 s, whole seconds."""
    problems = whole_duration(params, PARAMS)
    if not problems and image_kind(params.get("image")) and param_int(params, "duration") == 10:
        # Luma's video guide: image-to-video (start/end frame) is not supported with 10s.
        problems.append(ParamProblem.of(
            "Luma Ray 3.2 takes a start image only with a 5 second duration",
            duration=[5], image=[None]))
    return problems


class LumaProvider:
    """One Luma Agents account.

    Attributes:
        kind: "luma".
        supports_lookup: False; generations cannot be found by our client token.
    """

    kind: str = KIND
    supports_lookup: bool = False

    def __init__(self, client: httpx2.AsyncClient, config: ProviderConfig) -> None:
        self._api = ApiClient(client, config, title=TITLE, default_base_url=DEFAULT_BASE_URL)

    def __repr__(self) -> str:
        return f"LumaProvider(account={self._api.account!r})"

    async def check_key(self) -> None:
        """``GET /generations/{an id that cannot exist}``: the only read the API has.

        A 404 in the API's JSON error shape means the key was accepted and no such
        generation exists; 401/403 mean the key was refused. A 404 that is not the API's
        own answer (an HTML page: a wrong base URL) proves nothing and is an error.
        """
        response = await self._api.request("GET", f"/generations/{uuid.uuid4()}")
        if response.is_success:
            return
        if response.status_code == 404:
            if isinstance(json_or_none(response), dict):
                return
            raise self._api.error(
                "the base URL did not answer like the Luma Agents API (HTTP 404 without its "
                "JSON error); check the base URL", ErrorClass.PERMANENT,
                ErrorLabel.PROVIDER_ERROR, status_code=404)
        raise self._error(response)

    async def submit(self, request: RenderRequest) -> str:
        check_row(TITLE, PARAMS, extra_validation, request)
        body = await self._create_body(request)
        answer = await create_answer(self._api, "/generations", self._error, json_body=body)
        return created_id(self._api, answer.get("id"), "generation id", answer)

    async def poll(self, provider_job_id: str) -> RemoteStatus:
        return self._status(await self._generation(provider_job_id))

    async def lookup(self, request: RenderRequest) -> str | None:
        """Luma generations cannot be searched by our token: never answer "there is none"."""
        raise outcome_unknown(self._api, "Luma generations cannot be searched by our client token "
                              f"{request.client_token}; look for it in the Luma dashboard")

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
            image = await load_image(params["image"], TITLE, params.get("image_sha256"))
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
        state = generation.get("state")
        if not isinstance(state, str) or not state:
            # A Generation always has a state: an answer without one is not about it.
            raise outcome_unknown(self._api, "the answer about the generation has no state",
                                  generation)
        if state == "completed":
            return RemoteStatus(RemotePhase.SUCCEEDED, sub_status=state, progress=1.0,
                                video_url=_video_url(generation.get("output")))
        if state == "failed":
            return RemoteStatus(RemotePhase.FAILED, sub_status=state,
                                error=self._failure(generation))
        return plain_status(state, _PHASES, POLL_SECONDS)

    def _failure(self, generation: Mapping[str, Any]) -> ProviderError:
        code = generation.get("failure_code")
        return FAILURE_RULES.classify(
            self._api, generation.get("failure_reason"),
            code if isinstance(code, str) and code else None, what="generation failed")

    def _error(self, response: httpx2.Response, *, during_create: bool = False) -> ProviderError:
        # Synchronous errors are told apart by HTTP status (guides/error-handling: "branch
        # on the status code, then read detail"): 402 balance, 413/422 bad media, 429
        # rate limit (RPM or concurrent jobs) with Retry-After, 502/503 retry.
        status = response.status_code
        words = provider_words(response)
        message = self._api.message(response)
        if status == 429:
            wait = retry_after_of(response)
            return rate_limited(message, response,
                                wait if wait is not None else rate_limit_reset_of(response))
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


def create(session: HttpSession | httpx2.AsyncClient, config: ProviderConfig) -> LumaProvider:
    return LumaProvider(httpx_client_of(session), config)


INFO = ProviderInfo(kind=KIND, title=TITLE, factory=create, params=PARAMS,
                    default_base_url=DEFAULT_BASE_URL, requires_key=True,
                    rules=extra_validation)
