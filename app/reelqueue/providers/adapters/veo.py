"""Google Veo on the Gemini API adapter (kind ``veo``): long-running video operations.

Facts from PROVIDERS.md section 2: ``POST /models/{model}:predictLongRunning`` with
``{"instances":[{"prompt", "image"?}], "parameters":{...}}`` answers an operation
``{"name": "models/<model>/operations/<id>"}``; ``GET /v1beta/{name}`` reports it: no
``done`` yet (pending), ``done: false`` (running), ``done: true`` with a ``response`` or an
``error`` (google.rpc.Status). A finished operation with no samples but
``raiMediaFilteredCount`` is a safety block (not charged, permanent); with no samples and
no safety count it is a render Google finished without its file: reported SUCCEEDED with
no link so the engine reads it again and never creates it again (python-genai#1559). An
operation ``error`` code goes through :data:`FAILURE_RULES` (google.rpc codes: only the
transient 4, 13, 14 are retried). ``durationSeconds`` is an integer, as the google-genai
SDK declares and sends it (``types.py`` ``GenerateVideosConfig.duration_seconds:
Optional[int]``). There is no progress number.
The video ``uri`` is a Files-API link that needs the ``x-goog-api-key`` header and
redirects; files live 2 days. The key header is sent to the API host only.
No idempotency key and no lookup: ``supports_lookup`` is False. ``seed`` is Vertex-only.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
from collections.abc import AsyncIterator, Mapping
from typing import Any

import httpx2

from reelqueue.domain.errors import ErrorClass, ErrorLabel, ProviderError
from reelqueue.domain.states import RemotePhase
from reelqueue.providers.adapters import _client
from reelqueue.providers.adapters._client import ApiClient
from reelqueue.providers.adapters._common import (
    FailureRules,
    check_row,
    create_answer,
    fresh_video_link,
    get_json,
    outcome_unknown,
)
from reelqueue.providers.adapters._errors import (
    CONTENT_POLICY_WORDS,
    json_or_none,
    mentions,
    provider_words,
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

KIND = "veo"
TITLE = "Google Veo"
DEFAULT_BASE_URL = "https://generativelanguage.googleapis.com/v1beta"
MODELS = ("veo-3.1-generate-preview", "veo-3.1-fast-generate-preview",
          "veo-3.1-lite-generate-preview")
LITE = "veo-3.1-lite-generate-preview"
# The status's video_url for a video that came inline (encodedVideo): the download reads
# the operation again. Not a link; nothing but this adapter ever opens it.
INLINE_VIDEO = "inline:encodedVideo"
INLINE_VIDEO_FACTOR = 8
"""An operation's answer is read to 8 x the other answers' bound (512 MiB): room for a clip
sent inline as base64."""
POLL_SECONDS = 10.0  # the official samples poll every 10 s; Veo gives no other hint

# USD per second by resolution (audio is always on, and included): ai.google.dev/gemini-api/
# docs/pricing, Paid Tier, "video with audio price (default)" (page last updated 2026-09-24).
# The price_per_second is the 720p one (the default); the others are price variants.
PRICE_BY_RESOLUTION: dict[str, dict[str, float]] = {
    "veo-3.1-generate-preview": {"720p": 0.40, "1080p": 0.40, "4k": 0.60},
    "veo-3.1-fast-generate-preview": {"720p": 0.10, "1080p": 0.12, "4k": 0.30},
    "veo-3.1-lite-generate-preview": {"720p": 0.05, "1080p": 0.08},
}

PARAMS = ParamSpec(
    models=MODELS,
    durations=(4.0, 6.0, 8.0),
    aspect_ratios=("16:9", "9:16"),
    resolutions=("720p", "1080p", "4k"),
    seed=False,  # the SDK refuses seed in Gemini API mode (Vertex only)
    negative_prompt=True,
    reference_image=True,
    # The limit is 1,024 tokens; about 4 characters a token in English. A longer prompt in
    # a denser script may still be refused (400 INVALID_ARGUMENT, permanent).
    max_prompt_chars=4000,
    price_per_second={model: prices["720p"] for model, prices in PRICE_BY_RESOLUTION.items()},
    price_variants={model: tuple(PriceVariant(usd, resolution=resolution)
                                 for resolution, usd in prices.items())
                    for model, prices in PRICE_BY_RESOLUTION.items()},
    price_source="ai.google.dev/gemini-api/docs/pricing (Paid Tier, with audio; updated "
    "2026-09-24), as quoted in PROVIDERS.md section 2 and a price check of 2026-09-28; "
    "read 2026-12-01",
    # No concurrency limit is published; Tier 1 is a $10 spend cap per 10 minutes, about
    # three 8 s Standard clips, so one render at a time is already near the cap.
    default_capacity=1,
)

# How a finished operation's ``error.code`` (a google.rpc.Code number) is treated. The
# codes are google.rpc's (googleapis/googleapis google/rpc/code.proto); what each means on
# the Gemini API is ai.google.dev/gemini-api/docs/troubleshooting ("Backend service error
# codes"): 500 INTERNAL, 503 UNAVAILABLE and 504 DEADLINE_EXCEEDED are "retry"; 400
# FAILED_PRECONDITION is "enable billing on your project" (the account, not the row: it
# pauses the account, see _precondition_label); 403 PERMISSION_DENIED / 16 UNAUTHENTICATED
# the key; 429 RESOURCE_EXHAUSTED the quota or the 10-minute spend cap. Phrases come first
# so a refused prompt is named "content policy", not "invalid input".
_RPC_FAILED_PRECONDITION = "9"
FAILURE_RULES = FailureRules(
    retryable={"13": ErrorLabel.PROVIDER_ERROR,   # INTERNAL
               "14": ErrorLabel.PROVIDER_ERROR,   # UNAVAILABLE
               "4": ErrorLabel.TIMED_OUT},        # DEADLINE_EXCEEDED
    account={"7": ErrorLabel.KEY_REJECTED,        # PERMISSION_DENIED
             "16": ErrorLabel.KEY_REJECTED,       # UNAUTHENTICATED
             "8": ErrorLabel.RATE_LIMITED,        # RESOURCE_EXHAUSTED
             _RPC_FAILED_PRECONDITION: ErrorLabel.OUT_OF_CREDITS},  # billing not enabled
    permanent={"usage guidelines": ErrorLabel.CONTENT_POLICY,
               "responsible ai": ErrorLabel.CONTENT_POLICY,
               "safety": ErrorLabel.CONTENT_POLICY,
               "3": ErrorLabel.INVALID_INPUT,     # INVALID_ARGUMENT
               "5": ErrorLabel.INVALID_INPUT},    # NOT_FOUND (a model or file id)
    source="google/rpc/code.proto; ai.google.dev/gemini-api/docs/troubleshooting",
)


def extra_validation(params: Mapping[str, Any]) -> list[ParamProblem]:
    """Veo rules ParamSpec cannot say: 8 s for 1080p, 4k and images; no 4k on Lite."""
    model = param_str(params, "model") or MODELS[0]
    resolution = param_str(params, "resolution") or "720p"
    image = image_kind(params.get("image"))
    problems: list[ParamProblem] = []
    try:
        seconds = param_int(params, "duration")
    except ValueError as exc:
        problems.append(ParamProblem.of(str(exc), duration=[4, 6, 8]))
        seconds = None
    if seconds not in (None, 8):
        if resolution in ("1080p", "4k"):
            problems.append(ParamProblem.of(
                f"Veo renders {resolution} only at 8 seconds", duration=[8],
                resolution=["720p"] if not image else []))
        if image:
            problems.append(ParamProblem.of(
                "Veo renders from a reference image only at 8 seconds", duration=[8],
                image=[None]))
    if model == LITE and resolution == "4k":
        problems.append(ParamProblem.of(
            "veo-3.1-lite renders 720p or 1080p, not 4k",
            model=[m for m in MODELS if m != LITE],
            resolution=["720p", "1080p"] if seconds in (None, 8) else ["720p"]))
    if image == "url":
        problems.append(ParamProblem.of(
            "Veo on the Gemini API takes the image as a file (or data: URI), not a link",
            image=[None]))
    return problems


class VeoProvider:
    """One Gemini API project's Veo access.

    Attributes:
        kind: "veo".
        supports_lookup: False; operations cannot be found by our client token.
    """

    kind: str = KIND
    supports_lookup: bool = False

    def __init__(self, client: httpx2.AsyncClient, config: ProviderConfig) -> None:
        self._api = ApiClient(client, config, title=TITLE, default_base_url=DEFAULT_BASE_URL,
                              auth_headers=lambda key: {"x-goog-api-key": key})
        self._check_model = str(config.settings.get("model") or MODELS[0])

    def __repr__(self) -> str:
        return f"VeoProvider(account={self._api.account!r})"

    async def check_key(self) -> None:
        """``GET /models/{model}``: free model metadata; proves the key and the model."""
        response = await self._api.request("GET", f"/models/{self._check_model}")
        if not response.is_success:
            raise self._error(response)

    async def submit(self, request: RenderRequest) -> str:
        check_row(TITLE, PARAMS, extra_validation, request)
        model = param_str(request.params, "model") or MODELS[0]
        body = await self._create_body(request)
        answer = await create_answer(self._api, f"/models/{model}:predictLongRunning",
                                     self._error, json_body=body)
        name = answer.get("name")
        if not isinstance(name, str) or "/operations/" not in name:
            raise outcome_unknown(self._api, "the create answer had no readable operation "
                                  "name", answer)
        return name

    async def poll(self, provider_job_id: str) -> RemoteStatus:
        return self._status(await self._operation(provider_job_id))

    async def lookup(self, request: RenderRequest) -> str | None:
        """Operations cannot be listed or searched by our token: never answer "none"."""
        raise outcome_unknown(self._api, "Veo operations cannot be searched by our client "
                              f"token {request.client_token}; look for the render in AI "
                              "Studio")

    async def download(self, provider_job_id: str, status: RemoteStatus) -> AsyncIterator[bytes]:
        url = status.video_url
        if url is None or url == INLINE_VIDEO:
            operation = await self._operation(provider_job_id)
            url = self._status(operation).video_url
            if url == INLINE_VIDEO:
                # Rare: the video came inline (encodedVideo) instead of as a Files-API uri.
                yield self._inline_video(operation)
                return
            if url is None:
                raise self._api.error(
                    "the operation finished without a video; it was not created again "
                    "(look for it in AI Studio)", ErrorClass.PERMANENT,
                    ErrorLabel.DOWNLOAD_FAILED)

        async def same_or_new_uri() -> str:
            return await fresh_video_link(
                self._api, self.poll(provider_job_id),
                lambda _: "the operation no longer offers its video (files are kept 2 days)")

        async for chunk in self._api.stream_video(
            url, refresh=same_or_new_uri, send_key_to_api_host=True
        ):
            yield chunk

    async def cancel(self, provider_job_id: str) -> None:
        """Veo on the Gemini API documents no cancel; the render runs to its end."""
        return None

    # -- internals ------------------------------------------------------------------------

    async def _create_body(self, request: RenderRequest) -> dict[str, Any]:
        params = request.params
        instance: dict[str, Any] = {"prompt": request.prompt}
        if image_kind(params.get("image")):
            image = await load_image(params["image"], TITLE, params.get("image_sha256"))
            instance["image"] = {"bytesBase64Encoded": image.b64(),
                                 "mimeType": image.mime_type}
        parameters: dict[str, Any] = {}
        ratio = param_str(params, "aspect_ratio")
        if ratio:
            parameters["aspectRatio"] = ratio
        seconds = param_int(params, "duration")
        if seconds is not None:
            parameters["durationSeconds"] = seconds  # an int in the SDK (types.py)
        resolution = param_str(params, "resolution")
        if resolution:
            parameters["resolution"] = resolution
        negative = param_str(params, "negative_prompt")
        if negative:
            parameters["negativePrompt"] = negative
        return {"instances": [instance], "parameters": parameters}

    async def _operation(self, name: str) -> dict[str, Any]:
        # A finished operation may hold its video inline (encodedVideo, base64): read
        # further than other answers, still bounded.
        return await get_json(self._api, f"/{name.lstrip('/')}", self._error,
                              max_bytes=INLINE_VIDEO_FACTOR * _client.MAX_API_ANSWER_BYTES)

    def _status(self, operation: Mapping[str, Any]) -> RemoteStatus:
        if "done" not in operation:
            return RemoteStatus(RemotePhase.QUEUED, sub_status="pending",
                                poll_after=POLL_SECONDS)
        if not operation.get("done"):
            return RemoteStatus(RemotePhase.RUNNING, sub_status="running",
                                poll_after=POLL_SECONDS)
        error = operation.get("error")
        if isinstance(error, dict):
            return RemoteStatus(RemotePhase.FAILED, sub_status="error",
                                error=self._operation_error(error))
        result = _video_response(operation)
        samples = result.get("generatedSamples") or []
        video = samples[0].get("video") if samples and isinstance(samples[0], dict) else None
        if isinstance(video, dict):
            uri = video.get("uri")
            if isinstance(uri, str) and uri:
                return RemoteStatus(RemotePhase.SUCCEEDED, sub_status="done", progress=1.0,
                                    video_url=uri)
            if video.get("encodedVideo"):
                return RemoteStatus(RemotePhase.SUCCEEDED, sub_status="done (inline video)",
                                    progress=1.0, video_url=INLINE_VIDEO)
        filtered = result.get("raiMediaFilteredCount")
        if isinstance(filtered, int | float) and not isinstance(filtered, bool) \
                and filtered >= 1:
            return RemoteStatus(RemotePhase.FAILED, sub_status="done, filtered",
                                error=self._filtered_error(result))
        # Done, no sample and no safety count: Google finished (and may have billed) the
        # render but the answer holds no file (python-genai#1559). Never FAILED: a failed
        # render may be created again; the engine reads it again instead.
        return RemoteStatus(RemotePhase.SUCCEEDED, sub_status="done without video",
                            progress=1.0, video_url=None)

    def _filtered_error(self, result: Mapping[str, Any]) -> ProviderError:
        reasons = result.get("raiMediaFilteredReasons") or []
        why = "; ".join(str(r) for r in reasons[:2]) if isinstance(reasons, list) else ""
        return self._api.error(
            "the safety filter blocked the video (not charged)"
            + (f": {self._api.shorten(why)}" if why else ""),
            ErrorClass.PERMANENT, ErrorLabel.CONTENT_POLICY)

    def _operation_error(self, error: Mapping[str, Any]) -> ProviderError:
        code = error.get("code")
        code_text = str(code) if isinstance(code, int) and not isinstance(code, bool) else ""
        text = str(error.get("message") or "")
        failure = FAILURE_RULES.classify(self._api, text, code_text or None,
                                         what=f"render failed (code {code})")
        if code_text == _RPC_FAILED_PRECONDITION and failure.error_class is ErrorClass.ACCOUNT:
            # Billing not enabled, or a region without the free tier: either way the
            # account cannot render until the user acts; name it by what the text says.
            label = _precondition_label(text)
            if label is not failure.label:
                return ProviderError(str(failure), error_class=ErrorClass.ACCOUNT,
                                     label=label)
        return failure

    def _inline_video(self, operation: Mapping[str, Any]) -> bytes:
        samples = _video_response(operation).get("generatedSamples") or []
        video = samples[0].get("video") if samples and isinstance(samples[0], dict) else None
        encoded = video.get("encodedVideo") if isinstance(video, dict) else None
        if not isinstance(encoded, str) or not encoded:
            raise self._api.error("the operation no longer holds its inline video",
                                  ErrorClass.PERMANENT, ErrorLabel.DOWNLOAD_FAILED)
        try:
            data = base64.b64decode(encoded, validate=True)
        except (binascii.Error, ValueError):
            raise self._api.error("the inline video is not valid base64",
                                  ErrorClass.RETRYABLE, ErrorLabel.DOWNLOAD_FAILED) from None
        if not data or data.lstrip()[:1] in (b"<", b"{", b"["):
            raise self._api.error("the inline video is empty or not a video",
                                  ErrorClass.RETRYABLE, ErrorLabel.DOWNLOAD_FAILED)
        return data

    def _error(self, response: httpx2.Response, *, during_create: bool = False) -> ProviderError:
        body = json_or_none(response)
        error = body.get("error") if isinstance(body, dict) else None
        error = error if isinstance(error, dict) else {}
        status_word = str(error.get("status") or "")
        reasons, retry_delay = _details(error)
        words = provider_words(response)
        message = self._api.message(response)
        status = response.status_code

        def account(label: ErrorLabel, retry_after: float | None = None) -> ProviderError:
            return ProviderError(message, error_class=ErrorClass.ACCOUNT, label=label,
                                 retry_after=retry_after, status_code=status)

        # A bad key is a 400 INVALID_ARGUMENT with reason API_KEY_INVALID on the Gemini API.
        if "API_KEY_INVALID" in reasons or mentions(words, "api key not valid",
                                                    "api key expired"):
            return account(ErrorLabel.KEY_REJECTED)
        if status_word == "FAILED_PRECONDITION":
            # Billing not enabled or region not supported: the account, not the row.
            return account(_precondition_label(words))
        if status == 429 or status_word == "RESOURCE_EXHAUSTED":
            wait = retry_after_of(response)
            return account(ErrorLabel.RATE_LIMITED, wait if wait is not None else retry_delay)
        if status == 400 and mentions(words, *CONTENT_POLICY_WORDS):
            return ProviderError(message, error_class=ErrorClass.PERMANENT,
                                 label=ErrorLabel.CONTENT_POLICY, status_code=status)
        return self._api.http_error(response, during_create=during_create)


def _video_response(operation: Mapping[str, Any]) -> Mapping[str, Any]:
    response = operation.get("response")
    if not isinstance(response, dict):
        return {}
    inner = response.get("generateVideoResponse")
    return inner if isinstance(inner, dict) else response


def _details(error: Mapping[str, Any]) -> tuple[set[str], float | None]:
    """ErrorInfo reasons and a RetryInfo delay ("30s") from a google.rpc error."""
    reasons: set[str] = set()
    delay: float | None = None
    details = error.get("details")
    for item in details if isinstance(details, list) else []:
        if not isinstance(item, dict):
            continue
        if isinstance(item.get("reason"), str):
            reasons.add(item["reason"])
        retry = item.get("retryDelay")
        if isinstance(retry, str) and retry.endswith("s"):
            with contextlib.suppress(ValueError):
                delay = max(0.0, float(retry[:-1]))
    return reasons, delay


def _precondition_label(words: str) -> ErrorLabel:
    if mentions(words, "billing", "credit", "prepay", "quota"):
        return ErrorLabel.OUT_OF_CREDITS
    return ErrorLabel.KEY_REJECTED


def create(session: HttpSession | httpx2.AsyncClient, config: ProviderConfig) -> VeoProvider:
    return VeoProvider(httpx_client_of(session), config)


INFO = ProviderInfo(kind=KIND, title=TITLE, factory=create, params=PARAMS,
                    default_base_url=DEFAULT_BASE_URL, requires_key=True,
                    rules=extra_validation)
