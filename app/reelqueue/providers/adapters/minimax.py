"""MiniMax Hailuo adapter (kind ``minimax``): the V1 (Hailuo 2.3 / 02) and V2 (H3) APIs.

Built on MiniMax's own API reference (platform.minimax.io / platform.minimaxi.com, the
OpenAPI files behind ``video-generation-t2v``, ``-i2v``, ``-query``, ``-download``,
``errorcode``, ``video-generation-v2-create``, ``-v2-query``, ``-v2-delete``) and the
official MiniMax-MCP server and ``mmx`` CLI; tests/fixtures/minimax/SOURCE.md names them.

- V1: ``POST /v1/video_generation`` ``{model, prompt, first_frame_image, duration 6|10,
  resolution}`` → ``{task_id, base_resp}``; ``GET /v1/query/video_generation?task_id=``
  reports ``Preparing`` / ``Queueing`` / ``Processing`` / ``Success`` (with ``file_id``) /
  ``Fail``; ``GET /v1/files/retrieve?file_id=`` signs a ``download_url`` (valid about one
  hour; a fresh one each call). Errors come as ``base_resp.status_code``, usually inside
  an HTTP 200. Valid combinations (from the reference's tables): 1080P only at 6 s; 512P
  only for MiniMax-Hailuo-02 image-to-video; MiniMax-Hailuo-2.3-Fast image-to-video only.
- V2 (``MiniMax-H3``): ``POST /v2/video_generation`` ``{model, content[], resolution
  768P|2K, duration 4-15, ratio}`` (all but ``ratio`` required; ``ratio`` required and not
  ``adaptive`` for text-only renders) → ``{task_id}``; ``GET
  /v2/query/video_generation/{task_id}`` → ``{"task": {status, content: {url}, error:
  {code, message}}}`` with ``queued`` / ``running`` / ``succeeded`` / ``failed`` /
  ``cancelled``. Errors are real HTTP statuses with ``{type: "error", error: {type,
  message "... (code)", http_code}}``. ``DELETE`` cancels a *queued* task but deletes the
  record of a finished one, so :meth:`cancel` asks first.

Every failure code, V1 or V2, goes through :data:`FAILURE_RULES` (only documented
"retry later" codes are retried). A create answer without a readable task id, or a query
answer of an undocumented shape, is an unknown outcome: never read as "not created". A
finished render without its file (``Success`` with an empty ``file_id``, ``succeeded``
without ``content.url``) is still SUCCEEDED: the engine reads it again and never creates
it again. The job id says which API made it: ``v1:<task_id>`` or ``v2:<task_id>``. No
idempotency key and no search by our token: ``supports_lookup`` is False.

No search either (reconciliation method NONE; docs/reconciliation/minimax.md): V1 has no
list, and the V2 list (``GET /v2/query/video_generation``, paged) echoes the model,
resolution, duration, ratio and times of each H3 task but not its prompt or image, so a
listed render can never be told to be ours or not; it lists no V1 task, has no time filter
and no documented order. A lost create stays unknown for the user to check.

One list call polls many V2 renders (issue 33 item 3, :meth:`MiniMaxProvider.poll_many`):
the same V2 list asked with ``filter.task_ids`` answers exactly the tasks asked for, each
the ``VideoTask`` the V2 query answers, whatever the list's order. V1 has no list, so V1
renders are never answered by it (the engine polls each on its own).
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator, Mapping, Sequence
from typing import Any
from urllib.parse import urlencode

import httpx2

from reelqueue.domain.errors import ErrorClass, ErrorLabel, ProviderError
from reelqueue.domain.states import RemotePhase
from reelqueue.providers.adapters._client import ApiClient
from reelqueue.providers.adapters._common import (
    FailureRules,
    check_row,
    created_id,
    fresh_video_link,
    outcome_unknown,
    plain_status,
    whole_duration,
)
from reelqueue.providers.adapters._errors import invalid_params, json_or_none, retry_after_of
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

KIND = "minimax"
TITLE = "MiniMax"
DEFAULT_BASE_URL = "https://api.minimax.io"
FAST_MODEL = "MiniMax-Hailuo-2.3-Fast"
V1_MODELS = ("MiniMax-Hailuo-2.3", FAST_MODEL, "MiniMax-Hailuo-02")
V2_MODELS = ("MiniMax-H3",)  # the V2 create schema's model enum
V1_DURATIONS = (6, 10)
V2_DURATIONS = tuple(range(4, 16))
V2_RESOLUTIONS = ("768P", "2K")
V2_RATIOS = ("21:9", "16:9", "4:3", "1:1", "3:4", "9:16")
V2_DEFAULT_SECONDS = 6  # V1's documented default; V2 requires a value
V2_DEFAULT_RESOLUTION = "768P"
V2_DEFAULT_RATIO = "16:9"  # a text-only V2 render must name one (never "adaptive")
V1_PROMPT_MAX = 2000
V2_PROMPT_MAX = 7000
POLL_SECONDS = 10.0  # "poll about every 10 s"
PROBE_TASK_ID = "0"
V2_LIST = "/v2/query/video_generation"  # + "/{task_id}": the single query
V2_LIST_IDS = 20
"""Task ids one V2 list read asks for (``filter.task_ids``, ``page_size`` as many): the
reference's own example page size, as it states no maximum (SOURCE.md, V2L)."""
_NO_LIST = (404, 405)  # a host (a gateway, an older API) without the V2 list
_V1_FAILED = ("Fail", "Failed")  # the reference says Fail; the official mmx CLI checks Failed
_V1_PHASES = {"Preparing": RemotePhase.QUEUED, "Queueing": RemotePhase.QUEUED,
              "Processing": RemotePhase.RUNNING}
_V2_PHASES = {"queued": RemotePhase.QUEUED, "running": RemotePhase.RUNNING,
              "cancelled": RemotePhase.CANCELLED}
_TRAILING_CODE = re.compile(r"\((\d{3,6})\)\s*$")

# MiniMax's error codes (V1 base_resp.status_code, V2 "... (code)" and task.error.code).
FAILURE_RULES = FailureRules(
    retryable={
        "1000": ErrorLabel.PROVIDER_ERROR,  # unknown error: "retry your requests later"
        "1001": ErrorLabel.TIMED_OUT,       # request timeout: "retry later"
        "1013": ErrorLabel.PROVIDER_ERROR,  # internal service error (files/retrieve list)
        "1024": ErrorLabel.PROVIDER_ERROR,  # internal error: "retry later"
        "1033": ErrorLabel.PROVIDER_ERROR,  # system error: "retry later"
    },
    account={
        "1002": ErrorLabel.RATE_LIMITED,    # rate limit (RPM)
        "1039": ErrorLabel.RATE_LIMITED,    # token limit (TPM)
        "1041": ErrorLabel.RATE_LIMITED,    # connection limit
        "2045": ErrorLabel.RATE_LIMITED,    # rate growth limit
        "2056": ErrorLabel.RATE_LIMITED,    # usage limit, wait for the next 5-hour window
        "1004": ErrorLabel.KEY_REJECTED,    # not authorized
        "2049": ErrorLabel.KEY_REJECTED,    # invalid api key
        "1008": ErrorLabel.OUT_OF_CREDITS,  # insufficient balance
    },
    permanent={
        "1026": ErrorLabel.CONTENT_POLICY,  # sensitive input
        "1027": ErrorLabel.CONTENT_POLICY,  # sensitive output
        "2013": ErrorLabel.INVALID_INPUT,   # invalid params
        "1042": ErrorLabel.INVALID_INPUT,   # invisible character ratio limit
    },
    source="platform.minimax.io/docs/api-reference/errorcode (+ the files/retrieve and "
           "query base_resp lists, V2 OaiError examples)",
)

# MiniMax's own prices: platform.minimax.io/docs/guides/pricing-paygo, section "Video"
# (stored copy of the page's .md read 2026-12-06; tests/fixtures/minimax/SOURCE.md,
# "Prices"). MiniMax-H3: "Video Generation - Output Pricing", list price per second by
# resolution (no audio condition).
H3_PRICE_BY_RESOLUTION = {"768P": 0.08, "2K": 0.13}
# Hailuo V1: the "Legacy Models" table of the same section, USD per whole video ("$0.19
# per 768P, 6s video"); the same for text and image rows. A combination the page does not
# list (1080P at 10 s, 512P on 2.3) has no price. Failed renders are not charged.
V1_PRICE_PER_VIDEO: dict[str, dict[tuple[str, int], float]] = {
    FAST_MODEL: {("768P", 6): 0.19, ("768P", 10): 0.32, ("1080P", 6): 0.33},
    "MiniMax-Hailuo-2.3": {("768P", 6): 0.28, ("768P", 10): 0.56, ("1080P", 6): 0.49},
    "MiniMax-Hailuo-02": {("768P", 6): 0.28, ("768P", 10): 0.56, ("1080P", 6): 0.49,
                          ("512P", 6): 0.10, ("512P", 10): 0.15},
}


def _v1_prices(videos: Mapping[tuple[str, int], float]) -> tuple[PriceVariant, ...]:
    """Each listed video as a price per second of that length at that resolution. Every
    variant names both, so nothing else fits: an empty resolution cell is filled with
    768p by the intake (PARAMS.resolutions[0], MiniMax's own default) before pricing."""
    return tuple(PriceVariant(usd / seconds, resolution=resolution, seconds=seconds)
                 for (resolution, seconds), usd in videos.items())


PARAMS = ParamSpec(
    models=V1_MODELS + V2_MODELS,
    # The intake fills an empty duration cell with 5 s when 5 is listed, whatever the
    # model: that would refuse every V1 row without a duration. So 5 is left out (MiniMax-H3
    # renders 4 and 6-15 s here) and an empty cell means 6 s, valid on both APIs.
    durations=tuple(float(s) for s in (6, 10, 4, 7, 8, 9, 11, 12, 13, 14, 15)),
    # Left empty so an empty cell stays empty (V1 and image rows take none); a V2
    # text-only row's ratio is checked against V2_RATIOS by extra_validation.
    aspect_ratios=(),
    resolutions=("768p", "1080p", "512p", "2K"),
    seed=False,
    negative_prompt=False,
    reference_image=True,
    max_prompt_chars=V2_PROMPT_MAX,  # V1 allows 2000 (checked before sending)
    # V1 models have no price per second of their own: only the listed videos are priced.
    price_per_second={"MiniMax-H3": H3_PRICE_BY_RESOLUTION[V2_DEFAULT_RESOLUTION]},
    price_variants={
        "MiniMax-H3": tuple(PriceVariant(usd, resolution=resolution)
                            for resolution, usd in H3_PRICE_BY_RESOLUTION.items()),
        **{model: _v1_prices(videos) for model, videos in V1_PRICE_PER_VIDEO.items()},
    },
    price_source="platform.minimax.io/docs/guides/pricing-paygo, \"Video\" (MiniMax-H3 list "
    "price per second; Hailuo 2.3 / 2.3-Fast / 02 per video from its \"Legacy Models\" table), "
    "read 2026-12-06",
    # H3 allows 30 concurrent tasks; Hailuo is capped at 20 requests/min, and each
    # running job polls 6 times a minute, so about three jobs fit beside their creates.
    default_capacity=3,
)


def extra_validation(params: Mapping[str, Any]) -> list[ParamProblem]:
    """The per-model combinations of MiniMax's reference that ParamSpec cannot say."""
    problems = whole_duration(params, PARAMS)
    if problems:
        return problems
    model = param_str(params, "model") or PARAMS.models[0]
    image = bool(image_kind(params.get("image")))
    seconds = param_int(params, "duration")
    resolution = (param_str(params, "resolution") or "").upper()
    ratio = param_str(params, "aspect_ratio")
    if model in V2_MODELS:
        if resolution and resolution not in V2_RESOLUTIONS:
            problems.append(ParamProblem.of(
                f"{model} renders 768P or 2K only (not {resolution.lower()})",
                model=_v1_models_for(resolution, seconds, image, ratio),
                resolution=["768p", "2K"]))
        if image and ratio:
            problems.append(ParamProblem.of(
                f"{model} takes its aspect ratio from the first frame; leave aspect_ratio "
                "empty on rows with an image", aspect_ratio=[None], image=[None]))
        elif ratio and ratio not in V2_RATIOS:
            problems.append(ParamProblem.of(
                f"{model} takes the aspect ratios {', '.join(V2_RATIOS)}",
                aspect_ratio=[*V2_RATIOS, None]))
        return problems
    if model not in V1_MODELS:
        return problems  # ParamSpec names the unknown model
    v2 = [m for m in V2_MODELS if _v2_takes(resolution, seconds, image, ratio)]
    if ratio:
        problems.append(ParamProblem.of(
            f"{model} takes no aspect ratio (the model or first frame sets it); leave it empty",
            model=v2, aspect_ratio=[None]))
    if seconds is not None and seconds not in V1_DURATIONS:
        problems.append(ParamProblem.of(
            f"{model} renders 6 or 10 seconds", model=v2,
            duration=[s for s in V1_DURATIONS if not (resolution == "1080P" and s == 10)]))
    if model == FAST_MODEL and not image:
        problems.append(ParamProblem.of(
            f"{model} is image-to-video only: give the row a first-frame image",
            model=[*(m for m in V1_MODELS if m != FAST_MODEL), *v2], image=[]))
    if resolution == "2K":
        problems.append(ParamProblem.of("2K is offered by MiniMax-H3 only", model=v2,
                                        resolution=["768p", "1080p"] if seconds != 10
                                        else ["768p"]))
    if resolution == "512P" and (model != "MiniMax-Hailuo-02" or not image):
        problems.append(ParamProblem.of(
            "512p is offered by MiniMax-Hailuo-02 image-to-video only",
            model=["MiniMax-Hailuo-02"] if image else [],
            resolution=["768p", "1080p"] if seconds != 10 else ["768p"]))
    if resolution == "1080P" and seconds == 10:
        problems.append(ParamProblem.of(f"{model} renders 1080p at 6 seconds only",
                                        duration=[6], resolution=["768p"]))
    return problems


def _v2_takes(resolution: str, seconds: int | None, image: bool, ratio: str | None) -> bool:
    """Whether MiniMax-H3 takes a row with these settings (to offer it as a fix)."""
    return ((not resolution or resolution in V2_RESOLUTIONS)
            and (seconds is None or seconds in V2_DURATIONS)
            and not (image and ratio) and (not ratio or ratio in V2_RATIOS))


def _v1_models_for(resolution: str, seconds: int | None, image: bool,
                   ratio: str | None) -> list[str]:
    """The V1 models that take a row with these settings (to offer one as a fix)."""
    if ratio or (seconds is not None and seconds not in V1_DURATIONS):
        return []
    if resolution == "1080P" and seconds == 10:
        return []
    if resolution == "512P":
        return ["MiniMax-Hailuo-02"] if image else []
    return [m for m in V1_MODELS if image or m != FAST_MODEL]


class MiniMaxProvider:
    """One MiniMax account (V1 and V2 models).

    Attributes:
        kind: "minimax".
        supports_lookup: False; no documented way to find a task by our client token.
        keeps_client_token: False; nothing of our client token is sent to MiniMax.
        supports_poll_many: True until the host answers the V2 list with 404/405.
        poll_many_limit: V2 task ids one :meth:`poll_many` is asked for at most.

    No ``supports_search``: the V2 list cannot recognise a render (see the module text).
    """

    kind: str = KIND
    supports_lookup: bool = False
    keeps_client_token: bool = False
    poll_many_limit: int = V2_LIST_IDS

    def __init__(self, client: httpx2.AsyncClient, config: ProviderConfig) -> None:
        self._api = ApiClient(client, config, title=TITLE, default_base_url=DEFAULT_BASE_URL)
        self.supports_poll_many = True

    def __repr__(self) -> str:
        return f"MiniMaxProvider(account={self._api.account!r})"

    async def check_key(self) -> None:
        """Query a task that does not exist (``GET /v1/query/video_generation?task_id=0``).

        MiniMax documents no account endpoint for video; the query is read-only and free:
        a bad key answers 401 or ``base_resp`` 1004/2049, a good one "invalid params".
        """
        response = await self._api.request("GET", "/v1/query/video_generation",
                                           params={"task_id": PROBE_TASK_ID})
        if not response.is_success:
            raise self._http_error(response)
        code, text = _error_code(json_or_none(response))
        if code is not None:
            error = self._coded_error(code, text, response)
            if error.error_class is ErrorClass.ACCOUNT:
                raise error

    async def submit(self, request: RenderRequest) -> str:
        check_row(TITLE, PARAMS, extra_validation, request)
        model = param_str(request.params, "model") or PARAMS.models[0]
        if model in V2_MODELS:
            return f"v2:{await self._submit_v2(model, request)}"
        return f"v1:{await self._submit_v1(model, request)}"

    async def poll(self, provider_job_id: str) -> RemoteStatus:
        version, task_id = _split(provider_job_id)
        if version == "v2":
            return await self._poll_v2(task_id)
        return await self._poll_v1(task_id)

    def lists_render(self, provider_job_id: str) -> bool:
        """Whether the V2 list can answer this render: V2 tasks only (V1 has no list)."""
        return _split(provider_job_id)[0] == "v2"

    async def poll_many(self, provider_job_ids: Sequence[str]) -> Mapping[str, RemoteStatus]:
        """The V2 renders among ``provider_job_ids``, from ONE read of the V2 list asked
        for exactly them: ``GET /v2/query/video_generation?page_num=1&page_size=N&
        filter.task_ids=A&filter.task_ids=B`` (SOURCE.md, V2L: ``filter.task_ids`` is a
        query array, "multiple values are allowed"; sent repeated, OpenAPI's default
        ``form``/``explode`` for a query array, as the reference names no other style).
        Each listed ``VideoTask`` is read by the V2 poll's own parser.

        V1 renders are never answered here: V1 has no list, only the query by task id,
        so the engine polls each of them on its own (no request is sent when none of the
        ids is a V2 one). An item without a readable id or status is left out, and so is
        any task not asked for; a missing id is polled alone by the engine. An error
        answer raises as a poll's would; an answer that is no list raises; a 404/405 also
        ends list polling for this adapter (a host without the V2 list)."""
        asked: dict[str, str] = {}
        for job_id in provider_job_ids:
            version, task_id = _split(job_id)
            if version == "v2" and len(asked) < V2_LIST_IDS:
                asked.setdefault(task_id, job_id)
        if not asked:
            return {}
        query = urlencode([("page_num", 1), ("page_size", len(asked)),
                           *(("filter.task_ids", task_id) for task_id in asked)])
        response = await self._api.request("GET", f"{V2_LIST}?{query}")
        if not response.is_success:
            if response.status_code in _NO_LIST:
                self.supports_poll_many = False
            raise self._http_error(response)
        answer = self._api.json_of(response)
        code, text = _error_code(answer)
        if code is not None:
            raise self._coded_error(code, text, response)
        items = answer.get("items")
        if not isinstance(items, list):
            raise outcome_unknown(self._api, "the V2 task list has no items", answer)
        found: dict[str, RemoteStatus] = {}
        for item in items:
            listed = item.get("id") if isinstance(item, dict) else None
            if not isinstance(listed, str) or listed not in asked:
                continue
            try:
                found[asked[listed]] = self._v2_status(listed, item)
            except ProviderError:
                continue  # unreadable: its own poll decides
        return found

    async def lookup(self, request: RenderRequest) -> str | None:
        raise outcome_unknown(self._api, "MiniMax tasks cannot be searched by our client "
                              "token, so an interrupted create cannot be checked")

    async def download(self, provider_job_id: str, status: RemoteStatus) -> AsyncIterator[bytes]:
        async def fresh_link() -> str:
            # V1: files/retrieve (via poll) signs a new link; V2: a new query does.
            return await fresh_video_link(self._api, self.poll(provider_job_id),
                                          lambda _: "the task no longer offers its video")

        async for chunk in self._api.stream_video(status.video_url, refresh=fresh_link):
            yield chunk

    async def cancel(self, provider_job_id: str) -> None:
        """Cancel a V2 task that is still queued; V1 has no cancel.

        ``DELETE /v2/video_generation/{id}`` cancels a queued task but *deletes the record*
        of a finished one (and refuses a running one), so it is sent only after a query
        shows the task queued: a paid render is never deleted by a cancel.
        """
        version, task_id = _split(provider_job_id)
        if version != "v2":
            return
        status = await self._poll_v2(task_id)
        if status.sub_status != "queued":
            return
        response = await self._api.request("DELETE", f"/v2/video_generation/{task_id}")
        if not response.is_success and response.status_code not in (400, 404, 409):
            raise self._http_error(response)

    # -- V1 -------------------------------------------------------------------------------

    async def _submit_v1(self, model: str, request: RenderRequest) -> str:
        params = request.params
        if len(request.prompt) > V1_PROMPT_MAX:
            raise invalid_params(TITLE, [f"{model} takes prompts of up to {V1_PROMPT_MAX} "
                                         "characters"])
        body: dict[str, Any] = {"model": model, "prompt": request.prompt}
        seconds = param_int(params, "duration")
        if seconds is not None:
            body["duration"] = seconds
        resolution = param_str(params, "resolution")
        if resolution:
            body["resolution"] = resolution.upper()  # MiniMax spells it "768P"
        if image_kind(params.get("image")):
            image = await load_image(params["image"], TITLE, params.get("image_sha256"))
            body["first_frame_image"] = image.url_or_data_uri()
        answer = await self._create("/v1/video_generation", body)
        code, text = _error_code(answer)
        task_id = answer.get("task_id")
        if code is not None:
            if isinstance(task_id, str) and task_id.strip():
                # A refusal code beside a task id: whether it runs (and bills) is unknown.
                raise outcome_unknown(self._api, "the create answer has both a task id and "
                                      f"error {code}", answer)
            raise self._coded_error(code, text)  # a definite refusal: nothing was created
        return created_id(self._api, task_id, "task id", answer)

    async def _poll_v1(self, task_id: str) -> RemoteStatus:
        task = await self._get("/v1/query/video_generation", {"task_id": task_id})
        state = task.get("status")
        code, text = _error_code(task)
        if state in _V1_FAILED:
            return RemoteStatus(RemotePhase.FAILED, sub_status=str(state),
                                error=FAILURE_RULES.classify(self._api, text, code))
        if code is not None:
            raise self._coded_error(code, text)  # the query itself was refused
        if not isinstance(state, str) or not state:
            raise outcome_unknown(self._api, f"the answer about task {task_id} has no status",
                                  task)
        if state != "Success":
            return plain_status(state, _V1_PHASES, POLL_SECONDS)
        file_id = task.get("file_id")
        if file_id in (None, "", 0) or isinstance(file_id, bool):
            # Finished (and billed) without a file: never created again (engine re-reads).
            return RemoteStatus(RemotePhase.SUCCEEDED, sub_status="Success (no file id)",
                                progress=1.0, video_url=None)
        answer = await self._get("/v1/files/retrieve", {"file_id": str(file_id)})
        code, text = _error_code(answer)
        if code is not None:
            raise self._coded_error(code, text)
        file = answer.get("file")
        url = file.get("download_url") if isinstance(file, dict) else None
        if not isinstance(url, str) or not url.strip():
            return RemoteStatus(RemotePhase.SUCCEEDED, sub_status="Success (file without a "
                                "download link)", progress=1.0, video_url=None)
        return RemoteStatus(RemotePhase.SUCCEEDED, sub_status=state, progress=1.0,
                            video_url=url)

    # -- V2 -------------------------------------------------------------------------------

    async def _submit_v2(self, model: str, request: RenderRequest) -> str:
        params = request.params
        if not request.prompt.strip():
            raise invalid_params(TITLE, [f"{model} needs a prompt"])
        content: list[dict[str, Any]] = [{"type": "text", "text": request.prompt}]
        if image_kind(params.get("image")):
            image = await load_image(params["image"], TITLE, params.get("image_sha256"))
            content.append({"type": "image_url", "image_url": {"url": image.url_or_data_uri()},
                            "role": "first_frame"})
        seconds = param_int(params, "duration")
        body: dict[str, Any] = {
            "model": model,
            "content": content,
            "resolution": (param_str(params, "resolution") or V2_DEFAULT_RESOLUTION).upper(),
            "duration": V2_DEFAULT_SECONDS if seconds is None else seconds,
            # With a first frame the image decides ("adaptive"); text-only needs a ratio.
            "ratio": "adaptive" if len(content) > 1 else (
                param_str(params, "aspect_ratio") or V2_DEFAULT_RATIO),
        }
        answer = await self._create("/v2/video_generation", body)
        return created_id(self._api, answer.get("task_id"), "task id", answer)

    async def _poll_v2(self, task_id: str) -> RemoteStatus:
        answer = await self._get(f"{V2_LIST}/{task_id}", None)
        task = answer.get("task")
        if not isinstance(task, dict):
            raise outcome_unknown(self._api, f"the answer about task {task_id} has no task "
                                  "object", answer)
        return self._v2_status(task_id, task)

    def _v2_status(self, task_id: str, task: Mapping[str, Any]) -> RemoteStatus:
        """A V2 ``VideoTask`` (the query's ``task``, or an item of the list) as a status."""
        state = task.get("status")
        if not isinstance(state, str) or not state:
            raise outcome_unknown(self._api, f"the answer about task {task_id} has no status",
                                  task)
        if state == "succeeded":
            content = task.get("content")
            url = content.get("url") if isinstance(content, dict) else None
            if not isinstance(url, str) or not url.strip():
                return RemoteStatus(RemotePhase.SUCCEEDED, sub_status="succeeded (no "
                                    "content.url)", progress=1.0, video_url=None)
            return RemoteStatus(RemotePhase.SUCCEEDED, sub_status=state, progress=1.0,
                                video_url=url)
        if state == "failed":
            error = task.get("error")
            code = error.get("code") if isinstance(error, dict) else None
            text = error.get("message") if isinstance(error, dict) else None
            if code in (None, "") and isinstance(text, str):
                found = _TRAILING_CODE.search(text)
                code = found.group(1) if found else None
            return RemoteStatus(RemotePhase.FAILED, sub_status=state,
                                error=FAILURE_RULES.classify(self._api, text, code))
        return plain_status(state, _V2_PHASES, POLL_SECONDS)

    # -- shared ---------------------------------------------------------------------------

    async def _create(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        """POST a create exactly once; an answer that is not a JSON object is unknown."""
        response = await self._api.request("POST", path, during_create=True, json_body=body)
        if not response.is_success:
            raise self._http_error(response, during_create=True)
        answer = json_or_none(response)
        if not isinstance(answer, dict):
            raise outcome_unknown(self._api, "the create answer was not a JSON object",
                                  response.text, status_code=response.status_code)
        return answer

    async def _get(self, path: str, params: Mapping[str, str] | None) -> dict[str, Any]:
        response = await self._api.request("GET", path, params=params)
        if not response.is_success:
            raise self._http_error(response)
        return self._api.json_of(response)  # not JSON (a proxy page): retryable, re-polled

    def _coded_error(self, code: str, text: str | None,
                     response: httpx2.Response | None = None) -> ProviderError:
        """A MiniMax error code through :data:`FAILURE_RULES` (a definite answer)."""
        error = FAILURE_RULES.classify(self._api, text, code, what="refused")
        if response is not None:
            error.status_code = response.status_code
            error.retry_after = retry_after_of(response)
        return error

    def _http_error(self, response: httpx2.Response, *, during_create: bool = False
                    ) -> ProviderError:
        code, text = _error_code(json_or_none(response))
        if code is not None:
            # MiniMax's own error body: a definite answer, nothing was created.
            return self._coded_error(code, text, response)
        error = self._api.http_error(response, during_create=during_create)
        if response.status_code == 422:
            # V2 documents 422 as "input contains sensitive content".
            error.error_class, error.label = ErrorClass.PERMANENT, ErrorLabel.CONTENT_POLICY
        if during_create and response.status_code >= 500:
            # Not MiniMax's error body: something in between answered, the create may
            # have run.
            error.body_maybe_sent = True
        return error


def _error_code(body: Any) -> tuple[str | None, str | None]:
    """The MiniMax error code and text of an answer, or (None, None) for none.

    V1: ``base_resp.status_code`` (0 is success). V2: ``error.message`` ending in
    ``(code)``, as in ``{"type": "error", "error": {"message": "rate limit (1002)"}}``.
    """
    if not isinstance(body, dict):
        return None, None
    base = body.get("base_resp")
    if isinstance(base, dict):
        code = base.get("status_code")
        message = base.get("status_msg")
        text = message if isinstance(message, str) else None
        if isinstance(code, int) and not isinstance(code, bool) and code != 0:
            return str(code), text
    error = body.get("error")
    if body.get("type") == "error" and isinstance(error, dict):
        message = error.get("message")
        if isinstance(message, str):
            found = _TRAILING_CODE.search(message)
            if found:
                return found.group(1), message
    return None, None


def _split(provider_job_id: str) -> tuple[str, str]:
    version, sep, task_id = provider_job_id.partition(":")
    if sep and version in ("v1", "v2") and task_id:
        return version, task_id
    return "v1", provider_job_id  # a bare id is a V1 task


def create(session: HttpSession | httpx2.AsyncClient, config: ProviderConfig) -> MiniMaxProvider:
    return MiniMaxProvider(httpx_client_of(session), config)


INFO = ProviderInfo(kind=KIND, title=TITLE, factory=create, params=PARAMS,
                    default_base_url=DEFAULT_BASE_URL, requires_key=True,
                    rules=extra_validation)
