"""Replicate predictions adapter (kind ``replicate``).

Facts from PROVIDERS.md section 5a: ``POST /v1/models/{owner}/{name}/predictions`` with
``{input}`` answers a prediction (we never send ``Prefer: wait``: holding the create open
only widens the window in which an answer can be lost); ``GET /v1/predictions/{id}``
reports ``starting`` / ``processing`` / ``succeeded`` / ``failed`` / ``canceled`` (and
``aborted`` when a ``Cancel-After`` deadline passed before start, which we never set).
Outputs of API predictions are **deleted after one hour** (``data_removed``), so a video
not fetched by then is gone. 429 bodies say "Your rate limit resets in ~30s", or in the
older wording of the HTTP reference "Request was throttled. Expected available in 1
second."; both give the wait. A failed prediction's ``error`` text goes through
:data:`FAILURE_RULES` (replicate.com/docs/reference/error-codes): only the codes documented
as worth a retry are retried. No idempotency key and no lookup by our token, so ``lookup``
never answers "there is none".
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator, Mapping
from typing import Any

import httpx

from reelqueue.domain.errors import ErrorClass, ErrorLabel, ProviderError
from reelqueue.domain.states import RemotePhase
from reelqueue.providers.adapters._client import ApiClient
from reelqueue.providers.adapters._common import (
    FailureRules,
    cancel_request,
    check_row,
    create_answer,
    created_id,
    get_json,
    outcome_unknown,
    plain_status,
    rate_limited,
    whole_duration,
)
from reelqueue.providers.adapters._errors import (
    CONTENT_POLICY_WORDS,
    gone_is_permanent,
    mentions,
    provider_words,
    retry_after_of,
)
from reelqueue.providers.adapters._images import image_kind, load_image
from reelqueue.providers.adapters._params import param_int, param_str
from reelqueue.providers.base import (
    ParamProblem,
    ParamSpec,
    ProviderConfig,
    RemoteStatus,
    RenderRequest,
)
from reelqueue.providers.registry import ProviderInfo

KIND = "replicate"
TITLE = "Replicate"
DEFAULT_BASE_URL = "https://api.replicate.com/v1"
POLL_SECONDS = 5.0  # no documented cadence; the create limit is 600/min, reads 3000/min
# Official models and the input field each takes its first-frame image in. Other video
# models on Replicate (kling, hailuo, gen-4.5, ray-3.2, seedance) name their inputs
# differently; add them here with their field names once checked.
MODEL_IMAGE_FIELD: dict[str, str] = {
    "google/veo-3.1": "image",
    "google/veo-3.1-fast": "image",
    "google/veo-3.1-lite": "image",
}
_PHASES = {"starting": RemotePhase.QUEUED, "processing": RemotePhase.RUNNING,
           "canceled": RemotePhase.CANCELLED}
_RESETS_IN = re.compile(r"resets in ~?\s*(\d+(?:\.\d+)?)\s*s", re.IGNORECASE)
# The older wording (replicate.com/docs/reference/http, "Rate limits"):
# {"detail":"Request was throttled. Expected available in 1 second."}
_AVAILABLE_IN = re.compile(r"available in\s*~?\s*(\d+(?:\.\d+)?)\s*(?:seconds?|s\b)",
                           re.IGNORECASE)

# A failed prediction's ``error`` text (replicate.com/docs/reference/error-codes: "E####"
# codes inside the text). E1000 "Unknown Error: try retrying your prediction" and E6716
# "Timeout Starting Prediction" are the documented retries; "please retry" is Replicate's
# own instruction in an interrupted prediction ("Prediction interrupted; please retry (code:
# PA)"). Everything else, including a model's own exception text, is permanent.
FAILURE_RULES = FailureRules(
    retryable={"E1000": ErrorLabel.PROVIDER_ERROR,
               "E6716": ErrorLabel.TIMED_OUT,
               "please retry": ErrorLabel.PROVIDER_ERROR},
    account={},  # credit and rate limits come as HTTP 402/429 answers (``_error``)
    permanent={"E005": ErrorLabel.CONTENT_POLICY,   # "flagged as sensitive"
               "flagged as sensitive": ErrorLabel.CONTENT_POLICY,
               "E1001": ErrorLabel.INVALID_INPUT},  # out of memory: the input is too big
    source="replicate.com/docs/reference/error-codes (2026); prediction texts in "
           "tests/fixtures/replicate",
)

PARAMS = ParamSpec(
    models=tuple(MODEL_IMAGE_FIELD),
    durations=(4.0, 6.0, 8.0),
    aspect_ratios=("16:9", "9:16"),
    resolutions=("720p", "1080p"),
    seed=True,
    negative_prompt=True,
    reference_image=True,
    max_prompt_chars=4000,
    # No price: the stored copies of replicate.com/google/veo-3.1(-fast, -lite) searched
    # on 2026-12-01 show no price (only resellers quote one). Set the account's own price.
    price_per_second={},
    price_source="none found: replicate.com's model pages showed no price (looked up "
    "2026-12-01); set the account's own price",
    # Without a payment method Replicate allows 6 requests a minute (polls included), so
    # one render at a time; raise it once billing is set up.
    default_capacity=1,
)


def extra_validation(params: Mapping[str, Any]) -> list[ParamProblem]:
    return whole_duration(params, PARAMS)


class ReplicateProvider:
    """One Replicate account.

    Attributes:
        kind: "replicate".
        supports_lookup: False; predictions cannot be found by our client token.
    """

    kind: str = KIND
    supports_lookup: bool = False

    def __init__(self, client: httpx.AsyncClient, config: ProviderConfig) -> None:
        self._api = ApiClient(client, config, title=TITLE, default_base_url=DEFAULT_BASE_URL)

    def __repr__(self) -> str:
        return f"ReplicateProvider(account={self._api.account!r})"

    async def check_key(self) -> None:
        """``GET /v1/account``: read-only, the key's own account."""
        response = await self._api.request("GET", "/account")
        if not response.is_success:
            raise self._error(response)

    async def submit(self, request: RenderRequest) -> str:
        check_row(TITLE, PARAMS, extra_validation, request)
        model = param_str(request.params, "model") or PARAMS.models[0]
        body = {"input": await self._input(model, request)}
        answer = await create_answer(self._api, f"/models/{model}/predictions", self._error,
                                     json_body=body)
        return created_id(self._api, answer.get("id"), "prediction id", answer)

    async def poll(self, provider_job_id: str) -> RemoteStatus:
        return self._status(await self._prediction(provider_job_id))

    async def lookup(self, request: RenderRequest) -> str | None:
        """Predictions cannot be searched by our token: never answer "there is none"."""
        raise outcome_unknown(self._api, "Replicate predictions cannot be searched by our "
                              f"client token {request.client_token}; look for it in the "
                              "Replicate dashboard")

    async def download(self, provider_job_id: str, status: RemoteStatus) -> AsyncIterator[bytes]:
        async def fresh_link() -> str:
            prediction = await gone_is_permanent(self._prediction(provider_job_id))
            latest = self._status(prediction)
            if prediction.get("data_removed"):
                raise self._api.error(
                    "the video was deleted (Replicate keeps API outputs for one hour); "
                    "retry the row to render it again", ErrorClass.PERMANENT,
                    ErrorLabel.DOWNLOAD_FAILED)
            if not latest.video_url:
                raise self._api.error(
                    "the prediction finished without an output; it was not created again "
                    "(look for it in the Replicate dashboard)", ErrorClass.PERMANENT,
                    ErrorLabel.DOWNLOAD_FAILED)
            return latest.video_url

        async for chunk in self._api.stream_video(status.video_url, refresh=fresh_link):
            yield chunk

    async def cancel(self, provider_job_id: str) -> None:
        await cancel_request(self._api, "POST", f"/predictions/{provider_job_id}/cancel",
                             self._error, fine=(404,))

    # -- internals ------------------------------------------------------------------------

    async def _input(self, model: str, request: RenderRequest) -> dict[str, Any]:
        params = request.params
        data: dict[str, Any] = {"prompt": request.prompt}
        for name in ("aspect_ratio", "resolution", "negative_prompt"):
            value = param_str(params, name)
            if value:
                data[name] = value
        for name in ("duration", "seed"):
            number = param_int(params, name)
            if number is not None:
                data[name] = number
        if image_kind(params.get("image")):
            image = await load_image(params["image"], TITLE, params.get("image_sha256"))
            data[MODEL_IMAGE_FIELD.get(model, "image")] = image.url_or_data_uri()
        return data

    async def _prediction(self, prediction_id: str) -> dict[str, Any]:
        return await get_json(self._api, f"/predictions/{prediction_id}", self._error)

    def _status(self, prediction: Mapping[str, Any]) -> RemoteStatus:
        state = str(prediction.get("status", ""))
        if state == "succeeded":
            return RemoteStatus(RemotePhase.SUCCEEDED, sub_status=state, progress=1.0,
                                video_url=_output_url(prediction.get("output")))
        if state == "failed":
            return RemoteStatus(RemotePhase.FAILED, sub_status=state,
                                error=self._failure(prediction))
        if state == "aborted":
            # Only a Cancel-After deadline aborts; nobody asked to cancel, nothing billed.
            return RemoteStatus(RemotePhase.FAILED, sub_status=state, error=self._api.error(
                "the prediction was aborted before it started (not billed)",
                ErrorClass.RETRYABLE, ErrorLabel.PROVIDER_ERROR))
        return plain_status(state, _PHASES, POLL_SECONDS)

    def _failure(self, prediction: Mapping[str, Any]) -> ProviderError:
        return FAILURE_RULES.classify(self._api, prediction.get("error"),
                                      what="prediction failed")

    def _error(self, response: httpx.Response, *, during_create: bool = False) -> ProviderError:
        status = response.status_code
        words = provider_words(response)
        message = self._api.message(response)
        if status == 429:
            wait = retry_after_of(response)
            if wait is None:
                found = _RESETS_IN.search(words) or _AVAILABLE_IN.search(words)
                wait = float(found.group(1)) if found else None
            return rate_limited(message, response, wait)
        if status == 402 or (status in (400, 403) and mentions(words, "insufficient credit",
                                                              "billing")):
            return ProviderError(message, error_class=ErrorClass.ACCOUNT,
                                 label=ErrorLabel.OUT_OF_CREDITS, status_code=status)
        if status in (400, 422) and ("E005" in words or mentions(words,
                                                                *CONTENT_POLICY_WORDS)):
            return ProviderError(message, error_class=ErrorClass.PERMANENT,
                                 label=ErrorLabel.CONTENT_POLICY, status_code=status)
        return self._api.http_error(response, during_create=during_create)


def _output_url(output: Any) -> str | None:
    if isinstance(output, str) and output:
        return output
    if isinstance(output, list):
        for item in output:
            if isinstance(item, str) and item:
                return item
    if isinstance(output, dict):
        for key in ("video", "url", "output"):
            value = output.get(key)
            if isinstance(value, str) and value:
                return value
    return None


def create(client: httpx.AsyncClient, config: ProviderConfig) -> ReplicateProvider:
    return ReplicateProvider(client, config)


INFO = ProviderInfo(kind=KIND, title=TITLE, factory=create, params=PARAMS,
                    default_base_url=DEFAULT_BASE_URL, requires_key=True,
                    rules=extra_validation)
