"""Luma Dream Machine (legacy) API adapter (kind ``luma-legacy``).

Facts from the lumaai SDK (lumalabs/lumaai-python 1.18.1, ``api.md``,
``resources/generations/video.py``, ``types/generation.py``) and Luma's error page
(docs.lumalabs.ai/docs/errors): ``POST /generations/video`` (the SDK's path since
2025-05-28; the docs' curl still shows ``/generations``) with ``prompt`` (3 to 5,000
characters), ``model`` (``ray-2``, ``ray-flash-2``, ``ray-1-6``), ``aspect_ratio``,
``resolution``, ``duration`` ("5s"/"9s"), ``keyframes.frame0 = {type: "image", url}``
answers a Generation; ``GET /generations/{id}`` reports ``state`` ``queued`` /
``dreaming`` / ``completed`` / ``failed`` with the free-text ``failure_reason`` and
``assets.video``. Failure texts go through ``FAILURE_RULES`` (the documented list): only
"Job failed" is retried; moderation and unreadable keyframes are permanent. An answer
without a readable id or state is an unknown outcome, never "absent". Luma calls this API
deprecated; new work goes to the Agents API (``luma``). No progress number, no
idempotency key, no lookup by our token.

A create whose answer was lost is found again by ``search``: ``GET /generations`` with
``limit`` / ``offset`` (``generation_list_params.py``) answers ``{generations, count,
has_more, limit, offset}`` (``generation_list_response.py``), each Generation echoing its
whole create ``request`` and its ``created_at``. Neither the SDK nor the OpenAPI file states
the list's order, so the search pages to the end of the list (or its page budget) and
calls the listing complete only when it reached the end. See
docs/reconciliation/luma-legacy.md.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from datetime import datetime
from typing import Any

import httpx2

from reelqueue.domain.errors import ErrorClass, ErrorLabel, ProviderError
from reelqueue.domain.states import RemotePhase
from reelqueue.providers.adapters._account import (
    Figures,
    KeyCheckAnswer,
    answer_json,
    read_at_of,
    scrubbed,
)
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
    mentions,
    provider_words,
    rate_limit_reset_of,
    retry_after_of,
)
from reelqueue.providers.adapters._images import image_kind
from reelqueue.providers.adapters._params import param_int, param_str
from reelqueue.providers.base import (
    AccountView,
    Charging,
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

KIND = "luma-legacy"
TITLE = "Luma Dream Machine"
DEFAULT_BASE_URL = "https://api.lumalabs.ai/dream-machine/v1"
CREATE_PATH = "/generations/video"  # lumaai-python api.md: "post /generations/video"
MODELS = ("ray-2", "ray-flash-2", "ray-1-6")
POLL_SECONDS = 5.0  # no documented cadence
MIN_PROMPT_CHARS = 3  # "Prompt is too short, minimum length is 3 characters"
MAX_PROMPT_CHARS = 5000  # "Prompt is too long, maximum length is 5000 characters"
_PHASES = {"queued": RemotePhase.QUEUED, "dreaming": RemotePhase.RUNNING}

LIST_PATH = "/generations"  # lumaai-python api.md: "get /generations"
# The OpenAPI file's default page size (lumalabs/lumaai-api openapi.yaml, listGenerations:
# ``limit`` default 100); sent explicitly so a short page can be recognised as the last.
LIST_PAGE_SIZE = 100
LIST_PAGE_BUDGET = 20  # 2,000 generations; an account with more is never "complete"
# Nothing documents how soon a created generation is listed. The create answers the
# stored Generation (id, created_at, state "queued"), so the list most likely shows it at
# once; 120 s also covers a create the server was still taking in while our 60 s read
# timeout ran, and a list served from a lagging replica.
SETTLE_SECONDS = 120.0
# AspectRatio's documented default (openapi.yaml ``AspectRatio: default: '16:9'``): an
# absent ratio and "16:9" are the same render, whether or not the echo fills it in.
DEFAULT_ASPECT_RATIO = "16:9"
# Requests that act on an existing generation (``POST /generations/{id}/upscale`` and
# ``/audio``): if such a request replaced the echo of the render it acted on, that
# render's create can no longer be read, so its record is never ruled out.
_ACTS_ON_A_GENERATION = frozenset({"upscale_video", "add_audio"})
# Creates of another kind than ours (image, reframe, modify): never our video create.
_OTHER_CREATES = frozenset({"image", "reframe_image", "reframe_video", "modify_video"})

# A failed generation's ``failure_reason`` (docs.lumalabs.ai/docs/errors, "After
# submission"), matched as phrases. Only the generic "Job failed" is documented as worth
# another render; every other reason, listed or not, is permanent (DESIGN.md invariant 11).
# The "before submission" texts come back on a refused create; they are listed so a
# failure_reason that repeats one is named as bad input.
FAILURE_RULES = FailureRules(
    retryable={"Job failed": ErrorLabel.PROVIDER_ERROR},
    account={},  # no credit or rate failure_reason is documented (credits: a create 400)
    permanent={
        "Contains blacklisted words": ErrorLabel.CONTENT_POLICY,
        "Advanced prompt moderation failed": ErrorLabel.CONTENT_POLICY,
        "Frame moderation failed": ErrorLabel.CONTENT_POLICY,
        "Failed to read user input frames": ErrorLabel.INVALID_INPUT,
        "Prompt is too short": ErrorLabel.INVALID_INPUT,
        "Prompt is too long": ErrorLabel.INVALID_INPUT,
        "Prompt is required": ErrorLabel.INVALID_INPUT,
        "Loop is not supported": ErrorLabel.INVALID_INPUT,
        "No keyframes provided": ErrorLabel.INVALID_INPUT,
        "Unknown request type": ErrorLabel.INVALID_INPUT,
        # "Our language system ran into issues processing the prompt": not documented
        # as retryable, so a new render is the user's call.
        "Prompt processing failed": ErrorLabel.PROVIDER_ERROR,
    },
    source="docs.lumalabs.ai/docs/errors (Before submission / After submission), 2026",
)

# Luma bills the Dream Machine API by pixels generated: USD per million pixels, ray-2
# 0.0064, ray-flash-2 0.0022, ray-1-6 0.0032 (Comfy-Org/docs tutorials/api-nodes/pricing.mdx,
# read 2026-12-01: Comfy's API nodes charge the model maker's list price; its per-clip
# table matches, e.g. ray-2 720p 5 s $0.71 = 1280 x 720 x 24 fps x 5 s x 0.0064 / 1e6).
# Per second of video that is the frame's pixels x 24 fps x the rate, so the price grows
# with the resolution and not with anything else; frames are taken at 16:9 (other ratios
# have about as many pixels). Luma's own pricing page was not readable here.
USD_PER_MILLION_PIXELS = {"ray-2": 0.0064, "ray-flash-2": 0.0022, "ray-1-6": 0.0032}
FRAME_PIXELS = {"540p": 960 * 540, "720p": 1280 * 720, "1080p": 1920 * 1080,
                "4k": 3840 * 2160}
FPS = 24


def _per_second(model: str, resolution: str) -> float:
    return round(FRAME_PIXELS[resolution] * FPS * USD_PER_MILLION_PIXELS[model] / 1e6, 6)


PARAMS = ParamSpec(
    models=MODELS,
    durations=(5.0, 9.0),
    aspect_ratios=("16:9", "9:16", "1:1", "4:3", "3:4", "21:9", "9:21"),
    resolutions=("720p", "540p", "1080p", "4k"),
    seed=False,
    negative_prompt=False,
    reference_image=True,
    max_prompt_chars=MAX_PROMPT_CHARS,
    min_prompt_chars=MIN_PROMPT_CHARS,
    price_per_second={model: _per_second(model, "720p") for model in MODELS},
    price_variants={model: tuple(PriceVariant(_per_second(model, resolution),
                                              resolution=resolution)
                                 for resolution in FRAME_PIXELS)
                    for model in MODELS},
    price_source="Luma's per-pixel API rates (ray-2 $0.0064, ray-flash-2 $0.0022, ray-1-6 "
    "$0.0032 per million pixels, 24 fps, 16:9 frames) as listed by Comfy-Org/docs "
    "api-nodes/pricing.mdx; read 2026-12-01",
    default_capacity=1,  # no published concurrency limit
    # The balance is read in USD (its cents converted), the unit of the prices above; when
    # a generation is charged is not in the documents read (issue 32 item 4).
    charging=Charging("unknown", "USD", 1.0),
)


def extra_validation(params: Mapping[str, Any]) -> list[ParamProblem]:
    """Legacy rules ParamSpec cannot say: keyframes are links, not files."""
    problems: list[ParamProblem] = []
    kind = image_kind(params.get("image"))
    if kind and kind != "url":
        problems.append(ParamProblem.of(
            "Luma Dream Machine takes the image as an https link, not a file", image=[None]))
    return problems + whole_duration(params, PARAMS)


def prompt_problems(prompt: str) -> list[str]:
    """The documented 3-character minimum (``PARAMS.min_prompt_chars``, also checked at
    import); ``submit`` checks it again before anything is sent."""
    length = len(prompt.strip())
    if 0 < length < MIN_PROMPT_CHARS:
        return [f"the prompt is {length} characters; Luma Dream Machine needs at least "
                f"{MIN_PROMPT_CHARS}"]
    return []


CREDITS_PATH = "/credits"


def credits_view(account: str, response: httpx2.Response, cut: bool) -> AccountView:
    """The account view of a ``GET /credits`` answer: ``credit_balance`` in USD cents,
    checked (``_account.Figures``) and shown in USD."""
    read_at = read_at_of(response)
    body, problem = answer_json(response, cut)
    figures = Figures()
    if body is None:
        figures.refuse(problem or "unreadable answer")
        return figures.view(account, None, [], None, read_at)
    balance = figures.balance(body.get("credit_balance"), "credit balance", "USD",
                              scale=0.01, currency=body.get("currency"),
                              expected_currency="USD")
    return figures.view(account, balance, [], None, read_at)


class LumaLegacyProvider:
    """One Luma Dream Machine (legacy API) account.

    Attributes:
        kind: "luma-legacy".
        supports_lookup: False; generations cannot be found by our client token.
        supports_search: True until the address answers the list with 404/405 (a gateway
            that does not implement ``GET /generations``).
        settle_seconds: how long after a create the list is assumed to show it.
        echo_keeps_hours: None; a generation echoes its ``request`` while it is listed.
    """

    kind: str = KIND
    supports_lookup: bool = False
    supports_search: bool
    keeps_client_token: bool = False  # nothing of ours beyond the create body is kept
    settle_seconds: float = SETTLE_SECONDS
    echo_keeps_hours: float | None = None  # ``request`` stays as long as the generation

    def __init__(self, client: httpx2.AsyncClient, config: ProviderConfig) -> None:
        self._api = ApiClient(client, config, title=TITLE, default_base_url=DEFAULT_BASE_URL)
        # False once the address answered the list with 404/405 (a gateway without it).
        self.supports_search = True
        # The key check's answer, kept a minute for account_view.
        self._credits = KeyCheckAnswer(self._api.get_bounded, CREDITS_PATH, self._error)

    def __repr__(self) -> str:
        return f"LumaLegacyProvider(account={self._api.account!r})"

    async def check_key(self) -> None:
        """``GET /credits``: read-only, the account's credit balance. The answer is kept a
        minute for :meth:`account_view` (the key check's own answer)."""
        await self._credits.read(keep=True)

    async def account_view(self) -> AccountView:
        """The balance from ``GET /credits`` (``types/credit_get_response.py`` of
        lumalabs/lumaai-python: ``credit_balance``, a number, "Available credits balance
        in USD cents"), shown in USD. Luma publishes no per-model limit, usage or
        organization id there."""
        response, cut = await self._credits.for_view()
        return scrubbed(credits_view(self._api.account, response, cut), self._api.scrub)

    async def submit(self, request: RenderRequest) -> str:
        check_row(TITLE, PARAMS, extra_validation, request,
                  more=prompt_problems(request.prompt))
        answer = await create_answer(self._api, CREATE_PATH, self._error,
                                     json_body=self._create_body(request))
        return created_id(self._api, answer.get("id"), "generation id", answer)

    async def poll(self, provider_job_id: str) -> RemoteStatus:
        return self._status(await self._generation(provider_job_id))

    async def lookup(self, request: RenderRequest) -> str | None:
        """Generations cannot be searched by our token: never answer "there is none"."""
        raise outcome_unknown(self._api, "Dream Machine generations cannot be searched by "
                              f"our client token {request.client_token}; look for it in "
                              "the Luma dashboard")

    async def search(self, since: float, until: float) -> SearchResult:
        """The account's generations created in [since, until], from ``GET /generations``.

        The order of the list is not documented, so every page is read until the end of
        the list (``has_more`` false, or a short or empty page) or ``LIST_PAGE_BUDGET``
        pages; only the end of the list makes the result complete. An error answer on the
        first page is raised (404/405 also turn ``supports_search`` off); one on a later
        page ends the search incomplete. An answer of an undocumented shape is an unknown
        outcome.
        """
        records: dict[str, RemoteRecord] = {}
        offset = 0
        for page in range(LIST_PAGE_BUDGET):
            try:
                answer = await self._list_page(offset)
            except ProviderError as error:
                if page == 0 or error.label is ErrorLabel.SUBMIT_UNKNOWN:
                    raise
                return _window(records, since, until, complete=False)
            generations = answer.get("generations")
            if not isinstance(generations, list):
                raise outcome_unknown(self._api, "the list of generations has no "
                                      "'generations' list", answer)
            fresh = 0
            for item in generations:
                record = self._record(item)
                if record.provider_job_id not in records:
                    records[record.provider_job_id] = record
                    fresh += 1
            more = answer.get("has_more")
            if more is not None and not isinstance(more, bool):
                raise outcome_unknown(self._api, "the list of generations has an unreadable "
                                      "'has_more'", answer)
            limit = answer.get("limit")
            size = limit if isinstance(limit, int) and limit > 0 else LIST_PAGE_SIZE
            if more is False or (more is None and len(generations) < size):
                return _window(records, since, until, complete=True)
            if not generations or not fresh:
                # "More" but nothing (new) on this page: the paging cannot be trusted.
                return _window(records, since, until, complete=False)
            offset += len(generations)
        return _window(records, since, until, complete=False)

    def echo(self, request: RenderRequest) -> Mapping[str, Any]:
        """What a generation created from ``request`` echoes, normalised as in ``search``:
        built from the very body ``submit`` sends."""
        echoed = echo_of(self._create_body(request))
        if echoed is None:  # our own body is always readable
            raise ValueError("the create body could not be normalised")
        return echoed

    async def download(self, provider_job_id: str, status: RemoteStatus) -> AsyncIterator[bytes]:
        async def fresh_link() -> str:
            return await fresh_video_link(self._api, self.poll(provider_job_id),
                                          lambda _: "the generation no longer offers its video")

        async for chunk in self._api.stream_video(status.video_url, refresh=fresh_link):
            yield chunk

    async def cancel(self, provider_job_id: str) -> None:
        """No cancel is documented (DELETE removes a generation's record, not its render)."""
        return None

    # -- internals ------------------------------------------------------------------------

    def _create_body(self, request: RenderRequest) -> dict[str, Any]:
        params = request.params
        body: dict[str, Any] = {"prompt": request.prompt,
                                "model": param_str(params, "model") or MODELS[0]}
        for name in ("aspect_ratio", "resolution"):
            value = param_str(params, name)
            if value:
                body[name] = value
        seconds = param_int(params, "duration")
        if seconds is not None:
            body["duration"] = f"{seconds}s"
        image = param_str(params, "image")
        if image:
            body["keyframes"] = {"frame0": {"type": "image", "url": image}}
        return body

    async def _list_page(self, offset: int) -> dict[str, Any]:
        response = await self._api.request(
            "GET", LIST_PATH, params={"limit": LIST_PAGE_SIZE, "offset": offset})
        if not response.is_success:
            if offset == 0 and response.status_code in (404, 405):
                self.supports_search = False  # this address does not list generations
            raise self._error(response)
        try:
            data = response.json()
        except (ValueError, UnicodeDecodeError, RecursionError):
            data = None
        if not isinstance(data, dict):
            raise outcome_unknown(self._api, "the list of generations was unreadable",
                                  response.text, status_code=response.status_code)
        answered = data.get("offset")
        if isinstance(answered, int) and answered != offset:
            raise outcome_unknown(self._api, f"the list of generations answered offset "
                                  f"{answered} when asked for {offset}", data)
        return data

    def _record(self, item: Any) -> RemoteRecord:
        if not isinstance(item, dict):
            raise outcome_unknown(self._api, "the list of generations holds an unreadable "
                                  "entry", item)
        generation_id = item.get("id")
        if not isinstance(generation_id, str) or not generation_id.strip():
            # It may be the very render we look for: it cannot be set aside unread.
            raise outcome_unknown(self._api, "the list of generations holds one without "
                                  "a readable id", item)
        state = item.get("state")
        model = item.get("model")
        return RemoteRecord(
            provider_job_id=generation_id,
            created_at=_timestamp(item.get("created_at")),
            status=state if isinstance(state, str) and state else "unknown",
            echo=echo_of(item.get("request"), fallback_model=model,
                         record_type=item.get("generation_type")))

    async def _generation(self, generation_id: str) -> dict[str, Any]:
        return await get_json(self._api, f"/generations/{generation_id}", self._error)

    def _status(self, generation: Mapping[str, Any]) -> RemoteStatus:
        state = generation.get("state")
        if not isinstance(state, str) or not state:
            # A Generation always has a state: an answer without one is not about it.
            raise outcome_unknown(self._api, "the answer about the generation has no state",
                                  generation)
        if state == "completed":
            assets = generation.get("assets")
            video = assets.get("video") if isinstance(assets, dict) else None
            return RemoteStatus(RemotePhase.SUCCEEDED, sub_status=state, progress=1.0,
                                video_url=str(video) if video else None)
        if state == "failed":
            return RemoteStatus(RemotePhase.FAILED, sub_status=state,
                                error=self._failure(generation))
        return plain_status(state, _PHASES, POLL_SECONDS)

    def _failure(self, generation: Mapping[str, Any]) -> ProviderError:
        # The legacy API gives only free text: the documented list decides.
        return FAILURE_RULES.classify(self._api, generation.get("failure_reason"),
                                      what="generation failed")

    def _error(self, response: httpx2.Response, *, during_create: bool = False) -> ProviderError:
        status = response.status_code
        words = provider_words(response)
        message = self._api.message(response)
        if status == 429:
            wait = retry_after_of(response)
            return rate_limited(message, response,
                                wait if wait is not None else rate_limit_reset_of(response))
        if status in (400, 402, 403) and mentions(words, "credit", "balance"):
            return ProviderError(message, error_class=ErrorClass.ACCOUNT,
                                 label=ErrorLabel.OUT_OF_CREDITS, status_code=status)
        if status in (400, 422) and mentions(words, *CONTENT_POLICY_WORDS):
            return ProviderError(message, error_class=ErrorClass.PERMANENT,
                                 label=ErrorLabel.CONTENT_POLICY, status_code=status)
        return self._api.http_error(response, during_create=during_create)


def echo_of(request: Any, *, fallback_model: Any = None,
            record_type: Any = None) -> dict[str, Any] | None:
    """A video create request (our body, or the ``request`` a Generation echoes) as the
    mapping searches compare; None when it cannot be compared (never ruled out).

    ``fallback_model``: the Generation's own ``model``, for echoes without one (the
    OpenAPI example's ``request`` has none). ``record_type``: its ``generation_type``.
    """
    if not isinstance(request, dict):
        return None
    kind = request.get("generation_type")
    if kind is None:
        kind = "image" if record_type == "image" else "video"
    if kind in _OTHER_CREATES:
        return {"generation_type": kind}  # never equal to a video create
    if kind != "video":
        return None  # an upscale / audio request, or a kind newer than our notes
    prompt = request.get("prompt")
    model = request.get("model") or fallback_model
    ratio = request.get("aspect_ratio")
    loop = request.get("loop")
    if not isinstance(prompt, str) or not isinstance(model, str) or not model.strip():
        return None
    if ratio is not None and not isinstance(ratio, str):
        return None
    if loop is not None and not isinstance(loop, bool):
        return None
    resolution = _optional_word(request.get("resolution"))
    duration = _duration(request.get("duration"))
    keyframes = _keyframes(request.get("keyframes"))
    if resolution is False or duration is False or keyframes is None:
        return None
    return {"generation_type": "video", "prompt": prompt.strip(), "model": model.strip(),
            "aspect_ratio": (ratio or "").strip() or DEFAULT_ASPECT_RATIO,
            "resolution": resolution, "duration": duration, "loop": loop is True,
            "keyframes": keyframes}


def _optional_word(value: Any) -> str | bool | None:
    """A lower-cased word, None when absent, False when unreadable."""
    if value is None:
        return None
    if not isinstance(value, str):
        return False
    return value.strip().lower() or None


def _duration(value: Any) -> str | bool | None:
    """"5s", "5" and "5.0s" alike as "5s"; None when absent, False when unreadable."""
    word = _optional_word(value)
    if not isinstance(word, str):
        return word
    number = word.removesuffix("s").strip()
    try:
        seconds = float(number)
    except ValueError:
        return word  # a duration word we do not know: compared as it is
    return f"{int(seconds)}s" if seconds.is_integer() else f"{seconds}s"


def _keyframes(value: Any) -> dict[str, Any] | None:
    """frame0 / frame1 by identity (image URL or generation id); None when unreadable."""
    if value is None:
        return {}
    if not isinstance(value, dict):
        return None
    frames: dict[str, Any] = {}
    for name in ("frame0", "frame1"):
        frame = value.get(name)
        if frame is None:
            continue
        if not isinstance(frame, dict):
            return None
        kind = frame.get("type")
        key = {"image": "url", "generation": "id"}.get(kind) if isinstance(kind, str) else None
        identity = frame.get(key) if key else None
        if not isinstance(identity, str) or not identity.strip():
            return None
        frames[name] = {"type": kind, key: identity.strip()}
    return frames


def _timestamp(value: Any) -> float | None:
    """``created_at`` (ISO 8601 with a zone) as Unix seconds; None when unreadable or
    without a zone (a guessed zone could move our render out of the window)."""
    if not isinstance(value, str):
        return None
    try:
        when = datetime.fromisoformat(value.strip())
    except ValueError:
        return None
    if when.tzinfo is None:
        return None
    return when.timestamp()


def _window(records: Mapping[str, RemoteRecord], since: float, until: float, *,
            complete: bool) -> SearchResult:
    """The records created in [since, until], and those whose time cannot be read."""
    kept = tuple(record for record in records.values()
                 if record.created_at is None or since <= record.created_at <= until)
    return SearchResult(kept, complete)


def create(session: HttpSession | httpx2.AsyncClient, config: ProviderConfig) -> LumaLegacyProvider:
    return LumaLegacyProvider(httpx_client_of(session), config)


INFO = ProviderInfo(kind=KIND, title=TITLE, factory=create, params=PARAMS,
                    default_base_url=DEFAULT_BASE_URL, requires_key=True,
                    rules=extra_validation)
