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

A create whose answer was lost is found again by :meth:`ReplicateProvider.search`
(docs/reconciliation/replicate.md): ``GET /v1/predictions`` lists the account's
predictions newest first, 100 a page, with a ``next`` cursor URL, bounded server-side by
``created_after`` / ``created_before`` (replicate-python-beta
``types/prediction_list_params.py``). Each record echoes its ``model`` and its ``input``
as sent, until Replicate removes API inputs after one hour; such a record cannot be
compared (``echo=None``).
"""

from __future__ import annotations

import math
import re
from collections.abc import AsyncIterator, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

import httpx2

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
    host_of,
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
    RemoteRecord,
    RemoteStatus,
    RenderRequest,
    SearchResult,
)
from reelqueue.providers.http import HttpSession
from reelqueue.providers.httpx_session import httpx_client_of
from reelqueue.providers.registry import ProviderInfo

KIND = "replicate"
TITLE = "Replicate"
DEFAULT_BASE_URL = "https://api.replicate.com/v1"
POLL_SECONDS = 5.0  # no documented cadence; the create limit is 600/min, reads 3000/min
POLLS_PER_MINUTE = 2_400.0
"""The budget an account's polls are spread within (engine/polling.py): Replicate's
documented 3,000 requests a minute for endpoints other than create (SOURCE.md, H), less a
fifth for the account's other reads (list searches, account reads, cancels)."""
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
# The list of predictions (replicate-python-beta resources/predictions.py ``list``: "It
# will return 100 records per page", "sorted with the most recent prediction first").
LIST_PAGE_SIZE = 100
SEARCH_PAGE_BUDGET = 20  # 2,000 predictions: more than a window of minutes ever holds
POLL_MANY_PAGE_BUDGET = 3  # the predictions in flight are the newest: 300 cover an account's
# How long after a create its prediction is assumed to be listed. Replicate documents no
# delay for the list; the longest it documents holding a create request open is 60 s
# (``Prefer: wait``, which we never send), so a create may still be in Replicate's hands
# that long after we sent it. Twice that covers it and any undocumented list lag.
SETTLE_SECONDS = 120.0
# API predictions' inputs are removed after an hour (replicate.com/docs/topics/predictions/
# data-retention); web predictions keep theirs, but ours are API predictions.
ECHO_KEEPS_HOURS = 1.0
# The input fields the create may set (besides the model's image field), as they are
# compared: text fields as sent, whole numbers as ints.
_ECHO_TEXTS = ("prompt", "aspect_ratio", "resolution", "negative_prompt")
_ECHO_NUMBERS = ("duration", "seed")
# An image sent inline (a data: URI, from a data: cell or a local file) is compared only as
# "an inline image": its echo is not documented, and a field echoed differently than we
# build it would rule our own render out (and pay for it again).
_INLINE_IMAGE = "inline"
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
        supports_search: True until the base URL answers the list with 404/405.
        settle_seconds: :data:`SETTLE_SECONDS`.
        echo_keeps_hours: 1.0: API predictions' inputs are removed after an hour.
        keeps_client_token: False: nothing of our token is sent to Replicate.
        polls_per_minute: :data:`POLLS_PER_MINUTE`.
    """

    kind: str = KIND
    supports_lookup: bool = False
    supports_search: bool = True
    settle_seconds: float = SETTLE_SECONDS
    echo_keeps_hours: float | None = ECHO_KEEPS_HOURS
    keeps_client_token: bool = False
    polls_per_minute: float = POLLS_PER_MINUTE

    def __init__(self, client: httpx2.AsyncClient, config: ProviderConfig) -> None:
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
        model = model_of(request)
        body = {"input": await self._input(model, request)}
        answer = await create_answer(self._api, f"/models/{model}/predictions", self._error,
                                     json_body=body)
        return created_id(self._api, answer.get("id"), "prediction id", answer)

    async def poll(self, provider_job_id: str) -> RemoteStatus:
        return self._status(await self._prediction(provider_job_id))

    @property
    def supports_poll_many(self) -> bool:
        """The engine polls the account's predictions with one list read while the API
        has the list (as long as :attr:`supports_search`)."""
        return self.supports_search

    poll_many_limit: int = POLL_MANY_PAGE_BUDGET * LIST_PAGE_SIZE

    async def poll_many(self, provider_job_ids: Sequence[str]) -> Mapping[str, RemoteStatus]:
        """``GET /v1/predictions`` newest first (then its ``next`` link, on the API's own
        host, within POLL_MANY_PAGE_BUDGET pages, until every id is found): the list's
        results are the same ``Prediction`` objects ``GET /v1/predictions/{id}`` answers
        (replicate-python-beta ``predictions.list`` -> ``CursorURLPage[Prediction]``),
        each read by :meth:`poll`'s own parser. A succeeded prediction listed without its
        output is left out (its own poll decides: a list read never ends a paid render
        for want of a file), and so is an item without a readable id. A first page that
        fails or has an undocumented shape raises as a poll would; a 404/405 (a base URL
        without the list) also ends list polling for this adapter."""
        wanted = set(provider_job_ids)
        found: dict[str, RemoteStatus] = {}
        target = "/predictions"
        for page_number in range(POLL_MANY_PAGE_BUDGET):
            try:
                response = await self._api.request("GET", target)
            except ProviderError:
                if page_number == 0:
                    raise
                break
            if not response.is_success:
                if page_number > 0:
                    break
                if response.status_code in (404, 405):
                    self.supports_search = False
                raise self._error(response)
            results, next_link = self._page(response)
            for item in results:
                prediction_id = item.get("id") if isinstance(item, dict) else None
                if not isinstance(prediction_id, str) or prediction_id not in wanted:
                    continue
                status = self._status(item)
                if status.phase is RemotePhase.SUCCEEDED and not status.video_url:
                    continue
                found[prediction_id] = status
            if wanted <= found.keys() or next_link is None:
                break
            try:
                target = self._next_page(next_link)
            except ProviderError:
                break
        return found

    async def lookup(self, request: RenderRequest) -> str | None:
        """Predictions cannot be searched by our token: never answer "there is none"."""
        raise outcome_unknown(self._api, "Replicate predictions cannot be searched by our "
                              f"client token {request.client_token}; look for it in the "
                              "Replicate dashboard")

    # -- reconciliation (issue 19): the account's predictions, searched by what they echo --

    def echo(self, request: RenderRequest) -> Mapping[str, Any]:
        """What a prediction created by :meth:`submit` for ``request`` echoes, normalised as
        :func:`echo_of` normalises a listed prediction: the model, and the create's own
        ``input`` (built by :func:`create_input`, the builder ``submit`` sends)."""
        model = model_of(request)
        value = request.params.get("image")
        kind = image_kind(value)
        # An https link is sent as given (load_image keeps the stripped text); a data: URI
        # or a file goes inline, compared as "an inline image" (see _INLINE_IMAGE).
        image = str(value).strip() if kind == "url" else ("data:" if kind else None)
        echoed = echo_of(model, create_input(model, request, image))
        if echoed is None:  # never: our own input always has a prompt and readable fields
            raise self._api.error("the create's own input cannot be compared",
                                  ErrorClass.PERMANENT, ErrorLabel.INVALID_INPUT)
        return echoed

    async def search(self, since: float, until: float) -> SearchResult:
        """The account's predictions created in [since, until] (Unix seconds), from
        ``GET /v1/predictions?created_after=..&created_before=..``, newest first, following
        each page's ``next`` link (on the API's own host only) within
        :data:`SEARCH_PAGE_BUDGET` pages.

        ``complete`` is True when paging reached the end of the list or a prediction
        created before ``since``, in the documented newest-first order. An error answer
        on the first page is raised as for any other call; one on a later page ends the
        search with what was read and ``complete=False``. A page of an undocumented shape
        raises ``outcome_unknown``. A 404/405 on the first page means the base URL (a
        gateway) does not implement the list: ``supports_search`` turns False.
        """
        target = "/predictions"
        query: dict[str, str | int] | None = {
            # created_after is "at or after", created_before is "before": whole seconds,
            # widened outwards, so the bounds never cut a prediction of the window off.
            "created_after": _iso8601(math.floor(since)),
            "created_before": _iso8601(math.floor(until) + 1),
        }
        records: list[RemoteRecord] = []
        newest_first = True
        previous: float | None = None
        for page_number in range(SEARCH_PAGE_BUDGET):
            try:
                response = await self._api.request("GET", target, params=query)
            except ProviderError:
                if page_number == 0:
                    raise
                return SearchResult(tuple(records), complete=False)
            if not response.is_success:
                if page_number > 0:
                    return SearchResult(tuple(records), complete=False)
                if response.status_code in (404, 405):
                    self.supports_search = False
                    raise outcome_unknown(
                        self._api, f"{self._api.base_url} does not list predictions "
                        f"(HTTP {response.status_code} to GET /predictions), so a create "
                        "whose answer was lost cannot be looked for; look for it in the "
                        "Replicate dashboard", status_code=response.status_code)
                raise self._error(response)
            results, next_link = self._page(response)
            reached_since = False
            for item in results:
                record = self._record(item)
                created = record.created_at
                if created is not None:
                    if previous is not None and created > previous:
                        newest_first = False  # the documented order does not hold
                    previous = created
                    if created < since:
                        reached_since = True
                        break
                records.append(record)
            if reached_since or next_link is None:
                return SearchResult(tuple(records), complete=newest_first)
            target, query = self._next_page(next_link), None
        return SearchResult(tuple(records), complete=False)

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
        image: str | None = None
        if image_kind(params.get("image")):
            loaded = await load_image(params["image"], TITLE, params.get("image_sha256"))
            image = loaded.url_or_data_uri()
        return create_input(model, request, image)

    def _page(self, response: httpx2.Response) -> tuple[list[Any], str | None]:
        """A list page's ``results`` and ``next`` link; any other shape is unknown."""
        try:
            page: Any = response.json()
        except (ValueError, UnicodeDecodeError, RecursionError):
            raise outcome_unknown(self._api, "the list of predictions was unreadable",
                                  response.text, status_code=response.status_code) from None
        results = page.get("results") if isinstance(page, dict) else None
        next_link = page.get("next") if isinstance(page, dict) else None
        if not isinstance(results, list) or not (
                next_link is None or (isinstance(next_link, str) and next_link)):
            raise outcome_unknown(self._api, "the list of predictions had an undocumented "
                                  "shape", page, status_code=response.status_code)
        return results, next_link

    def _next_page(self, link: str) -> str:
        """The ``next`` cursor URL, followed only on the API's own host (the key goes with
        it); a link anywhere else is an answer we cannot read."""
        if not self._api.is_own_origin(link):
            raise outcome_unknown(self._api, "the list of predictions pointed its next page "
                                  f"at another host ({host_of(link)})")
        return link

    def _record(self, item: Any) -> RemoteRecord:
        """One listed prediction (replicate-python-beta ``types/prediction.py``)."""
        prediction_id = item.get("id") if isinstance(item, dict) else None
        if not isinstance(prediction_id, str) or not prediction_id.strip():
            raise outcome_unknown(self._api, "the list of predictions held a prediction "
                                  "without a readable id", item)
        status = item.get("status")
        removed = item.get("data_removed") is True
        return RemoteRecord(
            provider_job_id=prediction_id,
            created_at=_unix_seconds(item.get("created_at")),
            status=status if isinstance(status, str) and status else "unknown",
            echo=None if removed else echo_of(item.get("model"), item.get("input")),
        )

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

    def _error(self, response: httpx2.Response, *, during_create: bool = False) -> ProviderError:
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


def model_of(request: RenderRequest) -> str:
    """The model a request is created on (the first official model when not given)."""
    return param_str(request.params, "model") or PARAMS.models[0]


def create_input(model: str, request: RenderRequest, image: str | None) -> dict[str, Any]:
    """The create's ``input``, as :meth:`ReplicateProvider.submit` sends it (``image``: the
    reference image's https URL or data: URI, already loaded)."""
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
    if image is not None:
        data[MODEL_IMAGE_FIELD.get(model, "image")] = image
    return data


def echo_of(model: Any, given: Any) -> dict[str, Any] | None:
    """A prediction's ``model`` and ``input``, normalised for comparison; None when they
    cannot be compared (no model, inputs removed, a field of an unreadable type).

    Only the fields a create of ours may set are kept (another client's extra fields, or
    defaults a model might echo, never rule a record out); whole numbers compare as ints;
    an inline image compares as :data:`_INLINE_IMAGE`.
    """
    if not isinstance(model, str) or not model or not isinstance(given, Mapping) or not given:
        return None
    echoed: dict[str, Any] = {"model": model}
    for name in _ECHO_TEXTS:
        value = given.get(name)
        if value is None:
            continue
        if not isinstance(value, str):
            return None
        echoed[name] = value
    for name in _ECHO_NUMBERS:
        value = given.get(name)
        if value is None:
            continue
        number = _number(value)
        if number is None:
            return None
        echoed[name] = number
    image = given.get(MODEL_IMAGE_FIELD.get(model, "image"))
    if image is not None:
        if not isinstance(image, str):
            return None
        echoed["image"] = _INLINE_IMAGE if image.startswith("data:") else image
    return echoed


def _number(value: Any) -> int | float | None:
    """A whole number as an int (8, 8.0, "8"), another number as is; None if not one."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str):
        try:
            value = float(value)
        except ValueError:
            return None
    if isinstance(value, float) and math.isfinite(value):
        return int(value) if value.is_integer() else value
    return None


def _unix_seconds(value: Any) -> float | None:
    """An ISO 8601 ``created_at`` as Unix seconds (UTC when no offset); None if unreadable
    (such a record is never ruled out by its time)."""
    if not isinstance(value, str):
        return None
    try:
        moment = datetime.fromisoformat(value.strip())
    except ValueError:
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.timestamp()


def _iso8601(seconds: float) -> str:
    """Unix seconds as the ISO 8601 UTC text the list's filters take."""
    return datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


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


def create(session: HttpSession | httpx2.AsyncClient, config: ProviderConfig) -> ReplicateProvider:
    return ReplicateProvider(httpx_client_of(session), config)


INFO = ProviderInfo(kind=KIND, title=TITLE, factory=create, params=PARAMS,
                    default_base_url=DEFAULT_BASE_URL, requires_key=True,
                    rules=extra_validation)
