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
``lookup`` never answers "there is none". A create whose answer was lost is found again by
:meth:`~OpenAICompatProvider.search`: ``GET /videos`` newest first (``order``, ``limit``,
``after``), compared on the prompt and model each video echoes
(docs/reconciliation/openai-compat.md).

Row resolution -> size: ``720p`` = 1280x720 / 720x1280 and ``1024p`` = 1792x1024 /
1024x1792 (the SDK's sizes, by aspect ratio); ``1080p`` = 1920x1080 / 1080x1920 is not in
the SDK and is sent only when the account's setting ``allow_1080p`` says the gateway's
model takes it. The account's setting ``model`` (``accounts add/set --model``) is the
default model.
"""

from __future__ import annotations

import math
import re
import time
import unicodedata
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import httpx2

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
    RemoteRecord,
    RemoteStatus,
    RenderRequest,
    SearchResult,
)
from reelqueue.providers.http import HttpSession
from reelqueue.providers.httpx_session import httpx_client_of
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

# Reconciliation: ``GET /videos`` (SDK resources/videos.py ``list``; SOURCE.md
# "Reconciliation"; docs/reconciliation/openai-compat.md).
LIST_PAGE_SIZE = 100  # the API reference's maximum for ``limit`` (minimum 0, maximum 100)
LIST_PAGE_BUDGET = 20  # 2,000 videos: far more than one account creates around one intent
POLL_MANY_PAGE_BUDGET = 3  # the videos in flight are the newest: 300 covers an account's
# Nobody documents when a created video shows in the list. A gateway answers a create only
# after relaying it upstream (we wait up to a minute for that answer), and may write its
# own list row later than that; five minutes is that minute with a wide margin.
SETTLE_SECONDS = 300.0
# OpenAI lists "recently generated videos" without saying how recent; a gateway documents
# "jobs submitted in the last 24 hours" (Merge). A list that ends before reaching ``since``
# proves nothing for a window older than that.
LIST_KEEPS_HOURS = 24.0
_NO_LIST = (404, 405)  # a gateway without the list: search unavailable, never "none"
_SNAPSHOT = re.compile(r"-\d{4}-\d{2}-\d{2}$")  # "sora-2-2025-10-06": a dated snapshot

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
        supports_search: True until the gateway answers ``GET /videos`` with 404/405 (it
            has no list): then False for this adapter's life, and nothing is concluded.
        settle_seconds: how long after a create the list is assumed to show it.
        echo_keeps_hours: how far back the list is assumed to reach (LIST_KEEPS_HOURS).
        keeps_client_token: False; the create has no field the gateway keeps for us.
    """

    kind: str = KIND
    supports_lookup: bool = False
    supports_search: bool = True
    settle_seconds: float = SETTLE_SECONDS
    echo_keeps_hours: float | None = LIST_KEEPS_HOURS
    keeps_client_token: bool = False

    def __init__(self, client: httpx2.AsyncClient, config: ProviderConfig, *,
                 clock: Callable[[], float] = time.time) -> None:
        self._api = ApiClient(client, config, title=TITLE, default_base_url=None)
        self._model = str(config.settings.get("model") or "").strip() or None
        self._allow_1080p = config.settings.get("allow_1080p") is True
        self._clock = clock

    def __repr__(self) -> str:
        return f"OpenAICompatProvider(account={self._api.account!r})"

    async def check_key(self) -> None:
        """``GET /videos?limit=1`` (read-only); ``GET /models`` if the gateway has no list."""
        response = await self._api.request("GET", "/videos", params={"limit": 1})
        if response.status_code in _NO_LIST:
            self.supports_search = False
            response = await self._api.request("GET", "/models")
        if not response.is_success:
            raise self._error(response)

    async def submit(self, request: RenderRequest) -> str:
        problems = spec_problems(PARAMS, request.params, request.prompt)
        problems += [problem.message for problem in extra_validation(request.params)]
        model = self._model_for(request)
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

    @property
    def supports_poll_many(self) -> bool:
        """The engine polls the account's videos with one list read while the gateway has
        the list (as long as :attr:`supports_search`)."""
        return self.supports_search

    poll_many_limit: int = POLL_MANY_PAGE_BUDGET * LIST_PAGE_SIZE

    async def poll_many(self, provider_job_ids: Sequence[str]) -> Mapping[str, RemoteStatus]:
        """``GET /videos?order=desc&limit=100`` (then ``after=<last_id>``, within
        POLL_MANY_PAGE_BUDGET pages, until every id is found): the list's items are the
        same ``Video`` objects ``GET /videos/{id}`` answers (SDK ``Videos.list`` ->
        ``ConversationCursorPage[Video]``, ``Videos.retrieve`` -> ``Video``), each read by
        :meth:`poll`'s own parser with the page's ``openai-poll-after-ms``. Only the ids
        found are returned; an item that is not a video object is left out. A first page
        that fails or has an undocumented shape raises as a poll would; a 404/405 (a
        gateway without the list) also ends list polling for this adapter."""
        wanted = set(provider_job_ids)
        found: dict[str, RemoteStatus] = {}
        cursor: str | None = None
        for _ in range(POLL_MANY_PAGE_BUDGET):
            response = await self._videos_page(cursor)
            if response is None:
                break
            if not response.is_success:
                if response.status_code in _NO_LIST:
                    self.supports_search = False
                raise self._error(response)
            videos, has_more, last_id = self._list_page(response)
            for video in videos:
                video_id = video["id"]
                if video_id in wanted:
                    found[video_id] = self._status(video_id, video, response)
            if wanted <= found.keys() or not has_more or not videos:
                break
            cursor = last_id or str(videos[-1]["id"])
        return found

    async def lookup(self, request: RenderRequest) -> str | None:
        """The list cannot be searched by our token: never answer "there is none"."""
        raise outcome_unknown(self._api, "the gateway's video list cannot be searched by our "
                              f"client token {request.client_token}; look for the video in "
                              "the gateway's dashboard")

    async def search(self, since: float, until: float) -> SearchResult:
        """``GET /videos?order=desc&limit=100``, then ``after=<last_id>``, newest first, until
        a video created before ``since`` or the end of the list, within LIST_PAGE_BUDGET
        pages. The list has no time filter, so videos newer than ``until`` come back too.

        A gateway without the list (404/405 on the first page) makes search unavailable
        (``supports_search`` False) and raises ``outcome_unknown``; a page of an undocumented
        shape raises ``outcome_unknown``; an error after the first page ends the search
        with what was read, ``complete=False``.
        """
        listing = _Listing(since)
        cursor: str | None = None
        for _ in range(LIST_PAGE_BUDGET):
            response = await self._videos_page(cursor)
            if response is None:
                return listing.result(complete=False)
            if not response.is_success:
                if response.status_code in _NO_LIST:
                    self.supports_search = False
                    raise outcome_unknown(
                        self._api, f"the gateway has no list of videos (GET /videos answered "
                        f"HTTP {response.status_code}), so a create whose answer was lost "
                        "cannot be looked for; look for the video in the gateway's dashboard",
                        status_code=response.status_code)
                raise self._error(response)
            videos, has_more, last_id = self._list_page(response)
            if videos and not listing.add(videos):
                return listing.result(complete=False)  # the same page again: `after` ignored
            if listing.passed_since():
                return listing.result(complete=True)
            if has_more is False or not videos:
                if has_more:
                    raise outcome_unknown(self._api, "the list of videos said there were more "
                                          "but gave none", response.text)
                # The whole list was read: it covers the window if it holds a video older
                # than ``since``, or if ``since`` is within what the list keeps.
                reach = self._clock() - LIST_KEEPS_HOURS * 3600.0
                return listing.result(complete=listing.reaches_back() or since >= reach)
            cursor = last_id or str(videos[-1]["id"])
            if not listing.use_cursor(cursor):
                return listing.result(complete=False)
        return listing.result(complete=False)

    def echo(self, request: RenderRequest) -> Mapping[str, Any]:
        """The prompt and model as a listed video echoes them (:func:`_echo`), from the
        fields :meth:`submit` sends."""
        fields = _create_fields(self._model_for(request) or "", request)
        return _echo(fields["prompt"], fields["model"])

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

    def _model_for(self, request: RenderRequest) -> str | None:
        return param_str(request.params, "model") or self._model

    async def _form(self, model: str, request: RenderRequest) -> list[tuple[str, Any]]:
        params = request.params
        form: list[tuple[str, Any]] = [
            (name, (None, value)) for name, value in _create_fields(model, request).items()]
        if image_kind(params.get("image")):
            image = await load_image(params["image"], TITLE, params.get("image_sha256"))
            name = "reference." + (image.mime_type.split("/")[-1] or "png")
            form.append(("input_reference", (name, image.data or b"", image.mime_type)))
        return form

    async def _videos_page(self, cursor: str | None) -> httpx2.Response | None:
        """``GET /videos``, newest first, the page after ``cursor`` (None: the first).

        The first page's answer is returned whatever its status, and its request's failure
        raises, as a poll's would; a later page that fails either way is None: the read
        ends with what the earlier pages gave."""
        params: dict[str, str | int] = {"limit": LIST_PAGE_SIZE, "order": "desc"}
        if cursor is not None:
            params["after"] = cursor
        try:
            response = await self._api.request("GET", "/videos", params=params)
        except ProviderError:
            if cursor is None:
                raise
            return None
        return response if cursor is None or response.is_success else None

    def _list_page(self, response: httpx2.Response
                   ) -> tuple[list[dict[str, Any]], bool | None, str | None]:
        """``data``, ``has_more`` and ``last_id`` of a list page (the SDK's
        ``ConversationCursorPage``); any other shape is an unknown outcome."""
        try:
            body = response.json()
        except (ValueError, UnicodeDecodeError, RecursionError):
            body = None
        if isinstance(body, dict):
            videos, has_more, last_id = body.get("data"), body.get("has_more"), \
                body.get("last_id")
            if (isinstance(videos, list)
                    and all(isinstance(v, dict) and isinstance(v.get("id"), str) and v["id"]
                            for v in videos)
                    and (has_more is None or isinstance(has_more, bool))
                    and (last_id is None or isinstance(last_id, str))):
                return videos, has_more, last_id
        raise outcome_unknown(self._api, "the list of videos came back in a shape the API "
                              "does not document", response.text)

    def _content_url(self, video_id: str) -> str:
        return self._api.url(f"/videos/{video_id}/content")

    def _status(self, video_id: str, video: Mapping[str, Any],
                response: httpx2.Response) -> RemoteStatus:
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

    def _error(self, response: httpx2.Response, *, during_create: bool = False) -> ProviderError:
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


def _create_fields(model: str, request: RenderRequest) -> dict[str, str]:
    """The create's text fields (the form also carries ``input_reference``, a file): what
    :meth:`OpenAICompatProvider.submit` sends and what :meth:`~OpenAICompatProvider.echo`
    is built from, so the two cannot drift."""
    params = request.params
    fields = {"prompt": request.prompt, "model": model}
    seconds = param_int(params, "duration")
    if seconds is not None:
        fields["seconds"] = str(seconds)  # a string enum in this shape
    ratio = param_str(params, "aspect_ratio")
    resolution = param_str(params, "resolution")
    if ratio or resolution:
        size = _SIZES.get((ratio or "16:9", resolution or "720p"))
        if size:
            fields["size"] = size
    return fields


def _echo(prompt: str, model: str) -> dict[str, str]:
    """What is compared between a request and a listed video: the prompt (spaces collapsed,
    NFC) and the model family (case, a ``vendor/`` prefix and a dated-snapshot suffix
    dropped: the API may name the snapshot that rendered an alias).

    ``seconds`` and ``size`` are not compared: the create sends them only when the row
    sets them, and a gateway fills in its model's own default otherwise, which a request
    cannot predict; comparing them would rule out our own render. The reference image is
    not echoed at all. Rows differing only in these come back as several candidates.
    """
    name = model.strip().lower().rsplit("/", 1)[-1]
    return {"prompt": " ".join(unicodedata.normalize("NFC", prompt).split()),
            "model": _SNAPSHOT.sub("", name)}


def _record(video: Mapping[str, Any]) -> RemoteRecord:
    """One listed video (SDK ``types/video.py``); without a readable prompt and model (a
    gateway that does not echo them) it cannot be compared: ``echo=None``."""
    created = video.get("created_at")
    created_at: float | None = None
    if isinstance(created, int | float) and not isinstance(created, bool) \
            and math.isfinite(created):
        created_at = float(created)
    prompt, model, status = video.get("prompt"), video.get("model"), video.get("status")
    echo: dict[str, str] | None = None
    if isinstance(prompt, str) and prompt.strip() and isinstance(model, str):
        echo = _echo(prompt, model)
    return RemoteRecord(str(video["id"]), created_at,
                        status if isinstance(status, str) else "", echo)


@dataclass
class _Listing:
    """The videos read so far, and what they prove about the window from ``since`` on.

    Stopping at a video older than ``since`` is proof only if the list really is newest
    first (a gateway may ignore ``order``): the times read must never rise and must show
    at least two different values; otherwise paging goes on to the end of the list.
    """

    since: float
    records: dict[str, RemoteRecord] = field(default_factory=dict)
    times: list[float] = field(default_factory=list)
    cursors: set[str] = field(default_factory=set)

    def add(self, videos: list[dict[str, Any]]) -> bool:
        """Take a page; False when it held no video not read before."""
        fresh = False
        for video in videos:
            record = _record(video)
            if record.provider_job_id in self.records:
                continue
            fresh = True
            self.records[record.provider_job_id] = record
            if record.created_at is not None:
                self.times.append(record.created_at)
        return fresh

    def passed_since(self) -> bool:
        """True when the list, proven newest first, went past a video older than ``since``."""
        newest_first = all(a >= b for a, b in zip(self.times, self.times[1:], strict=False))
        return newest_first and len(set(self.times)) >= 2 and self.reaches_back()

    def reaches_back(self) -> bool:
        """True when a video created before ``since`` was read."""
        return any(t < self.since for t in self.times)

    def use_cursor(self, cursor: str) -> bool:
        """False when ``cursor`` was used before (paging would go round in circles)."""
        if cursor in self.cursors:
            return False
        self.cursors.add(cursor)
        return True

    def result(self, *, complete: bool) -> SearchResult:
        return SearchResult(tuple(self.records.values()), complete)


def _poll_after(response: httpx2.Response) -> float:
    value = response.headers.get("openai-poll-after-ms")
    if value:
        try:
            return max(0.0, float(value) / 1000.0)
        except ValueError:
            pass
    return POLL_SECONDS


def create(session: HttpSession | httpx2.AsyncClient,
           config: ProviderConfig) -> OpenAICompatProvider:
    return OpenAICompatProvider(httpx_client_of(session), config)


INFO = ProviderInfo(kind=KIND, title=TITLE, factory=create, params=PARAMS,
                    default_base_url=None, requires_key=True,
                    rules=extra_validation)
