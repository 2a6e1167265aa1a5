"""Kling adapter (kind ``kling``) on Kling's official task API, the "classic" ``/v1`` one.

Sources (tests/fixtures/kling/SOURCE.md has the page and section of every fact and fixture):
Kling's API reference, pages General Info (domain, JWT auth, error codes), Concurrency
Rules (1303), Text to Video and Image to Video (create, query single, query list).

- ``POST /v1/videos/text2video`` or ``/v1/videos/image2video`` with a flat body:
  ``model_name``, ``prompt``, ``negative_prompt``, ``cfg_scale``, ``mode`` (std/pro),
  ``sound`` (on/off, V2.6 and later), ``aspect_ratio`` (text only), ``duration`` as a
  **string**, ``external_task_id``; image-to-video adds ``image`` (https URL or raw base64
  without a ``data:`` prefix).
- ``GET /v1/videos/{text2video|image2video}/{id}``: the id is the task id *or* our
  ``external_task_id`` ("choose one of the two"), so ``lookup`` asks by client token.
- Every answer is ``{code, message, request_id, data}``; ``code != 0`` is a failure even in
  an HTTP 200. States: ``submitted``, ``processing``, ``succeed``, ``failed``
  (+ ``task_status_msg``); the video is ``data.task_result.videos[0].url`` (kept 30 days).
- Auth: an HS256 JWT (iss = access key, exp = now + 1800 s, nbf = now - 5 s) signed with
  the secret key, sent as Bearer. The account stores both halves in one keyring entry as
  ``ACCESS_KEY:SECRET_KEY``; a value without ``:`` is sent as it is (Kling's newer API-key
  auth), which keeps the convention of the earlier adapter.

Our ``provider_job_id`` is ``"<endpoint>/<task_id>"`` (``text2video/8672...``): a task can
only be read back on the endpoint that created it, and the id alone does not say which.

Money fails closed (DESIGN.md invariant 11): a create answer without a readable task id, and
a query answer of an undocumented shape, are ``outcome_unknown``; ``lookup`` returns None
only when Kling answers the documented "resource does not exist" (1203) *and* the task list
of that endpoint, read whole, does not hold our external id.

No list poll (issue 33 item 3: no ``poll_many``, so each render is polled on its own). The
Query Task (List) carries each task's state and video, but its reference states no order
(only "query a list of tasks with pagination", ``pageNum``/``pageSize``, no sort and no
filter by id; SOURCE.md, T2V/I2V "Query Task (List)"): a bounded read cannot be promised to
hold the renders in flight, and a round that finds none costs a list read on top of every
render's own poll. The same reason as Luma legacy's (docs/providers.md).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import time
from collections.abc import AsyncIterator, Callable, Mapping
from typing import Any

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
)
from reelqueue.providers.adapters._errors import json_or_none, retry_after_of
from reelqueue.providers.adapters._images import image_kind, load_image
from reelqueue.providers.adapters._params import param_bool, param_int, param_str
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

KIND = "kling"
TITLE = "Kling"
DEFAULT_BASE_URL = "https://api-singapore.klingai.com"
TEXT, IMAGE = "text2video", "image2video"
V3 = "kling-v3"
# model_name enums of the two create pages; kling-v1-5 and kling-v2-1 animate images only.
TEXT_MODELS = (V3, "kling-v2-6", "kling-v2-5-turbo", "kling-v2-1-master", "kling-v2-master",
               "kling-v1-6", "kling-v1")
IMAGE_MODELS = (*TEXT_MODELS, "kling-v2-1", "kling-v1-5")
SOUND_MODELS = frozenset({V3, "kling-v2-6"})  # "sound: only V2.6 and later"
CFG_MODELS = frozenset({"kling-v1", "kling-v1-5", "kling-v1-6"})  # "not supported by v2.x"
CLASSIC_DURATIONS = (5, 10)  # every model before kling-v3: "5" or "10"
MODES = {"720p": "std", "1080p": "pro"}  # std = standard (720p), pro = professional (1080p)
MAX_PROMPT_CHARS = 2500  # prompt and negative_prompt: "cannot exceed 2500 characters"
MAX_IMAGE_BYTES = 10 * 1024 * 1024  # image: .jpg/.jpeg/.png, at most 10 MB
IMAGE_TYPES = frozenset({"image/jpeg", "image/png"})
LIST_PAGE_SIZE = 500  # query list: pageSize 1..500
POLL_SECONDS = 10.0  # no documented cadence
CONCURRENCY_BACKOFF = 1.0  # 1303: "exponential backoff, initial delay >= 1 second"
JWT_LIFETIME = 1800
JWT_RENEW_BEFORE = 300
_PHASES = {"submitted": RemotePhase.QUEUED, "processing": RemotePhase.RUNNING}
_DONE, _FAILED = "succeed", "failed"

# The error-code table of General Info, sorted by what it means for the job. Codes 5000 and
# 5001 are documented as "try again later"; every code missing here is permanent.
CODES = FailureRules(
    retryable={"5000": ErrorLabel.PROVIDER_ERROR,   # server internal error
               "5001": ErrorLabel.PROVIDER_ERROR,   # temporarily unavailable (maintenance)
               "5002": ErrorLabel.TIMED_OUT},       # internal timeout (backlog)
    account={"1000": ErrorLabel.KEY_REJECTED,       # authentication failed
             "1001": ErrorLabel.KEY_REJECTED,       # Authorization is empty
             "1002": ErrorLabel.KEY_REJECTED,       # Authorization is invalid
             "1003": ErrorLabel.KEY_REJECTED,       # Authorization not yet valid
             "1004": ErrorLabel.KEY_REJECTED,       # Authorization has expired
             "1100": ErrorLabel.KEY_REJECTED,       # abnormal account status
             "1101": ErrorLabel.OUT_OF_CREDITS,     # account in arrears (postpaid)
             "1102": ErrorLabel.OUT_OF_CREDITS,     # resource pack exhausted or expired
             "1103": ErrorLabel.KEY_REJECTED,       # no access to this API / model
             "1302": ErrorLabel.RATE_LIMITED,       # too many requests
             "1303": ErrorLabel.RATE_LIMITED,       # parallel tasks over the pack's limit
             "1304": ErrorLabel.KEY_REJECTED},      # IP whitelist policy
    permanent={"1200": ErrorLabel.INVALID_INPUT,    # invalid request parameters
               "1201": ErrorLabel.INVALID_INPUT,    # invalid parameter (key or value)
               "1202": ErrorLabel.INVALID_INPUT,    # invalid request method
               "1203": ErrorLabel.INVALID_INPUT,    # resource does not exist (model, task)
               "1300": ErrorLabel.CONTENT_POLICY,   # blocked by platform policy
               "1301": ErrorLabel.CONTENT_POLICY},  # content security policy
    source="Kling API reference, General Info > Error Code (klingai.com document-api)",
)
NOT_FOUND = 1203

# A failed task's ``task_status_msg`` is free text and Kling documents no list of them, so
# every failed render is permanent (invariant 11); these phrases only name it better.
RENDER_FAILURES = FailureRules(
    permanent={"content security": ErrorLabel.CONTENT_POLICY,
               "risk control": ErrorLabel.CONTENT_POLICY,
               "sensitive": ErrorLabel.CONTENT_POLICY,
               "policy": ErrorLabel.CONTENT_POLICY},
    source="none published: Kling's query pages only say task_status_msg gives the reason",
)

# kling-v3's list price, USD per second: kling.ai/dev/pricing ("Video API Pricing, 1 Unit =
# $0.14 (list price)"; Kling 3.0: 720P 0.6 units/s without native audio, 0.9 with; 1080P
# 0.8 / 1.2; failed renders deduct nothing), as read from the page's embedded data on
# 2026-09-28 by a published price check (the stored copy here loads it by script).
# std = 720P, pro = 1080P (MODES). An account that pays through resource packs pays the
# pack's rate, not this: its owner sets it with `accounts set NAME --price-per-second`.
# A row that says nothing about audio sends no ``sound`` (Kling's default applies, which
# its reference does not state): it is priced with audio, the dearer, so a spend cap is
# not passed by a guess. The other models are not on that page: price unknown.
UNIT_USD = 0.14
V3_UNITS = {("720p", False): 0.6, ("720p", True): 0.9, ("1080p", False): 0.8,
            ("1080p", True): 1.2}


def _v3_prices() -> tuple[PriceVariant, ...]:
    """Each resolution with and without audio; a row that says nothing pays with audio."""
    variants: list[PriceVariant] = []
    for (resolution, audio), units in V3_UNITS.items():
        usd = round(units * UNIT_USD, 6)
        variants.append(PriceVariant(usd, resolution=resolution, audio=audio))
        if audio:
            variants.append(PriceVariant(usd, resolution=resolution))
    return tuple(variants)


PARAMS = ParamSpec(
    models=IMAGE_MODELS,
    durations=None,
    duration_range=(3.0, 15.0),
    aspect_ratios=("16:9", "9:16", "1:1"),
    resolutions=tuple(MODES),
    seed=False,
    negative_prompt=True,
    reference_image=True,
    max_prompt_chars=MAX_PROMPT_CHARS,
    price_per_second={V3: round(V3_UNITS[("720p", True)] * UNIT_USD, 6)},
    price_variants={V3: _v3_prices()},
    price_source="kling.ai/dev/pricing (list price, 1 unit = $0.14; kling-v3 only), as "
    "read on 2026-09-28 by a published price check; read 2026-12-01. Resource packs: "
    "set the account's own price",
    default_capacity=1,  # the pack's concurrency is not readable; 1303 says when it is hit
)


def extra_validation(params: Mapping[str, Any]) -> list[ParamProblem]:
    """What the ParamSpec cannot say: models per endpoint, durations and sound per model."""
    problems: list[ParamProblem] = []
    model = param_str(params, "model") or V3
    has_image = bool(image_kind(params.get("image")))
    if not has_image and model in IMAGE_MODELS and model not in TEXT_MODELS:
        problems.append(ParamProblem.of(
            f"{model} only animates an image; give an image or another model",
            model=TEXT_MODELS, image=[]))
    try:
        seconds = param_int(params, "duration")
    except ValueError as exc:
        problems.append(ParamProblem.of(str(exc), duration=CLASSIC_DURATIONS))
    else:
        if seconds is not None and model != V3 and seconds not in CLASSIC_DURATIONS:
            problems.append(ParamProblem.of(
                f"{model} makes 5 or 10 second videos ({V3}: 3-15)",
                model=[V3], duration=CLASSIC_DURATIONS))
    if param_bool(params, "audio") and model not in SOUND_MODELS:
        problems.append(ParamProblem.of(
            f"{model} makes no sound (only {', '.join(sorted(SOUND_MODELS))})",
            model=sorted(SOUND_MODELS)))
    if has_image and param_str(params, "aspect_ratio"):
        problems.append(ParamProblem.of(
            "an image row takes its frame from the image; leave aspect_ratio empty",
            aspect_ratio=[None], image=[None]))
    negative = param_str(params, "negative_prompt")
    if negative and len(negative) > MAX_PROMPT_CHARS:
        problems.append(ParamProblem.of(
            f"the negative prompt is {len(negative)} characters; the limit is "
            f"{MAX_PROMPT_CHARS}", negative_prompt=[]))
    cfg = params.get("cfg_scale")
    if cfg not in (None, ""):
        if model not in CFG_MODELS:
            problems.append(ParamProblem.of(
                f"{model} takes no cfg_scale (only the kling-v1 models)",
                model=sorted(CFG_MODELS & set(IMAGE_MODELS))))
        elif _cfg_scale(cfg) is None:
            problems.append(ParamProblem.of("cfg_scale must be a number from 0 to 1"))
    return problems


class KlingProvider:
    """One Kling account.

    Attributes:
        kind: "kling".
        supports_lookup: True; a task is found by ``external_task_id`` = our client token.

    No ``poll_many``: the task list states no order (see the module text).
    """

    kind: str = KIND
    supports_lookup: bool = True

    def __init__(self, client: httpx2.AsyncClient, config: ProviderConfig, *,
                 clock: Callable[[], float] = time.time) -> None:
        self._clock = clock  # wall-clock seconds: the JWT's exp and nbf are Unix times
        self._jwt: tuple[str, float] | None = None
        self._api = ApiClient(client, config, title=TITLE, default_base_url=DEFAULT_BASE_URL,
                              auth_headers=self._auth_headers)
        _, sep, secret = (config.api_key or "").partition(":")
        if sep and secret:
            self._api.add_secret(secret)  # never sent, but never shown either

    def __repr__(self) -> str:
        return f"KlingProvider(account={self._api.account!r})"

    async def check_key(self) -> None:
        """The task list with one row: read-only, costs nothing, needs a valid token."""
        response = await self._api.request("GET", f"/v1/videos/{TEXT}",
                                           params={"pageNum": 1, "pageSize": 1})
        if not isinstance(self._data(response, what="the key check", money=False), list):
            raise self._api.error("the key check got an answer of an unknown shape",
                                  ErrorClass.RETRYABLE, ErrorLabel.PROVIDER_ERROR)

    async def submit(self, request: RenderRequest) -> str:
        check_row(TITLE, PARAMS, extra_validation, request)
        endpoint = _endpoint(request)
        body = await self._body(request, endpoint)
        response = await self._api.request("POST", f"/v1/videos/{endpoint}", json_body=body,
                                           during_create=True)
        data = self._data(response, what="the create answer", during_create=True)
        task = data if isinstance(data, dict) else {}
        task_id = created_id(self._api, task.get("task_id"), "task id",
                             data if task else json_or_none(response) or response.text)
        external = _external_id(task)
        if external not in (None, request.client_token):
            raise outcome_unknown(self._api, "the create answer names another "
                                  f"external_task_id than ours ({request.client_token})", data)
        return f"{endpoint}/{task_id}"

    async def poll(self, provider_job_id: str) -> RemoteStatus:
        endpoint, task_id = _split_job_id(self._api, provider_job_id)
        response = await self._api.request("GET", f"/v1/videos/{endpoint}/{task_id}")
        task = self._data(response, what=f"the answer about task {task_id}")
        if not isinstance(task, dict) or str(task.get("task_id")) != task_id:
            raise outcome_unknown(self._api, f"the answer about task {task_id} is not that "
                                  "task", task)
        return self._status(task)

    async def lookup(self, request: RenderRequest) -> str | None:
        """The task created with ``external_task_id == request.client_token``, if any."""
        endpoint, token = _endpoint(request), request.client_token
        response = await self._api.request("GET", f"/v1/videos/{endpoint}/{token}")
        code = _code_of(json_or_none(response))
        if code == NOT_FOUND:
            return await self._find_in_list(endpoint, token)
        data = self._data(response, what=f"the answer about external id {token}")
        if not isinstance(data, dict):
            raise outcome_unknown(self._api, f"the answer about external id {token} has no "
                                  "task", data)
        return self._ours(endpoint, data, token)

    async def download(self, provider_job_id: str, status: RemoteStatus) -> AsyncIterator[bytes]:
        async def fresh_link() -> str:
            return await fresh_video_link(
                self._api, self.poll(provider_job_id),
                lambda _: "the task no longer offers its video (kept 30 days)")

        async for chunk in self._api.stream_video(status.video_url, refresh=fresh_link):
            yield chunk

    async def cancel(self, provider_job_id: str) -> None:
        """Kling documents no cancel; the render runs to its end."""
        return None

    # -- internals ------------------------------------------------------------------------

    def _auth_headers(self, key: str) -> Mapping[str, str]:
        access, sep, secret = key.partition(":")
        if not sep:
            return {"Authorization": f"Bearer {key}"}
        now = self._clock()
        if self._jwt is None or self._jwt[1] - now < JWT_RENEW_BEFORE:
            self._jwt = (_jwt(access, secret, now), now + JWT_LIFETIME)
        return {"Authorization": f"Bearer {self._jwt[0]}"}

    async def _body(self, request: RenderRequest, endpoint: str) -> dict[str, Any]:
        params = request.params
        model = param_str(params, "model") or V3
        body: dict[str, Any] = {"model_name": model, "prompt": request.prompt}
        if endpoint == IMAGE:
            body["image"] = await self._image(params)
        negative = param_str(params, "negative_prompt")
        if negative:
            body["negative_prompt"] = negative
        cfg = _cfg_scale(params.get("cfg_scale"))
        if cfg is not None:
            body["cfg_scale"] = cfg
        resolution = param_str(params, "resolution")
        if resolution:
            body["mode"] = MODES[resolution]
        audio = param_bool(params, "audio")
        if audio is not None and model in SOUND_MODELS:  # older models make no sound at all
            body["sound"] = "on" if audio else "off"
        ratio = param_str(params, "aspect_ratio")
        if ratio and endpoint == TEXT:
            body["aspect_ratio"] = ratio
        seconds = param_int(params, "duration")
        if seconds is not None:
            body["duration"] = str(seconds)  # a string: "5", "10" (kling-v3: "3".."15")
        body["external_task_id"] = request.client_token
        return body

    async def _image(self, params: Mapping[str, Any]) -> str:
        """An https URL as given, or the raw base64 of the bytes (no ``data:`` prefix)."""
        image = await load_image(params["image"], TITLE, params.get("image_sha256"))
        if image.url:
            return image.url
        problem = ""
        if image.mime_type not in IMAGE_TYPES:
            problem = f"Kling takes .jpg/.jpeg/.png images, not {image.mime_type}"
        elif len(image.data or b"") > MAX_IMAGE_BYTES:
            problem = "Kling takes images of at most 10 MB"
        if problem:
            raise self._api.error(f"reference image unusable: {problem}",
                                  ErrorClass.PERMANENT, ErrorLabel.INVALID_INPUT)
        return image.b64()

    async def _find_in_list(self, endpoint: str, token: str) -> str | None:
        """Confirm a 1203 against the endpoint's newest tasks: None only when provably absent.

        A list page that is full cannot prove the task is not on a later one, so that is
        unknown too, not "no".
        """
        response = await self._api.request("GET", f"/v1/videos/{endpoint}",
                                           params={"pageNum": 1, "pageSize": LIST_PAGE_SIZE})
        tasks = self._data(response, what="the task list")
        if not isinstance(tasks, list) or not all(
                isinstance(t, dict) and _readable_id(t.get("task_id")) for t in tasks):
            raise outcome_unknown(self._api, "the task list has an unknown shape", tasks)
        for task in tasks:
            if _external_id(task) == token:
                return self._ours(endpoint, task, token)
        if len(tasks) >= LIST_PAGE_SIZE:
            raise outcome_unknown(self._api, f"external id {token} is not among the newest "
                                  f"{LIST_PAGE_SIZE} tasks, which cannot prove it was never "
                                  "created")
        return None

    def _ours(self, endpoint: str, task: Mapping[str, Any], token: str) -> str:
        task_id = task.get("task_id")
        if not _readable_id(task_id) or _external_id(task) not in (None, token):
            raise outcome_unknown(self._api, f"the answer about external id {token} is not "
                                  "a task of ours", task)
        return f"{endpoint}/{task_id}"

    def _data(self, response: httpx2.Response, *, what: str, during_create: bool = False,
              money: bool = True) -> Any:
        """The envelope's ``data``; a non-zero ``code`` (even in an HTTP 200) raises.

        A 2xx answer without a readable envelope is an unknown outcome when it is about
        money (``money``: a create, a task, a lookup): it may be about a task that exists
        and is paid for.
        """
        body = json_or_none(response)
        code = _code_of(body)
        if code is not None and code != 0:
            raise self._code_error(code, body, response, during_create)
        if not response.is_success:
            error = self._api.http_error(response, during_create=during_create)
            # Kling's own server errors carry a code (5000-5002, handled above); a bare 5xx
            # page comes from something in between, after which the create may have run.
            error.body_maybe_sent = error.body_maybe_sent or (
                during_create and response.status_code >= 500)
            raise error
        if (code is None or "data" not in body) and not money:
            raise self._api.error(f"{what} is not a Kling envelope", ErrorClass.RETRYABLE,
                                  ErrorLabel.PROVIDER_ERROR, status_code=response.status_code)
        if code is None or "data" not in body:
            raise outcome_unknown(self._api, f"{what} is not a Kling envelope (HTTP "
                                  f"{response.status_code})",
                                  body if body is not None else response.text,
                                  status_code=response.status_code)
        return body["data"]

    def _code_error(self, code: int, body: Mapping[str, Any], response: httpx2.Response,
                    during_create: bool) -> ProviderError:
        error = CODES.classify(self._api, body.get("message"), code, what="refused")
        error.status_code = response.status_code
        error.retry_after = retry_after_of(response)
        if code == 1303 and error.retry_after is None:
            error.retry_after = CONCURRENCY_BACKOFF
        # A server timeout (5002) leaves a create's outcome open; every other code is a
        # definite refusal. lookup() settles the open case by external_task_id.
        error.body_maybe_sent = during_create and code == 5002
        return error

    def _status(self, task: Mapping[str, Any]) -> RemoteStatus:
        state = task.get("task_status")
        if not isinstance(state, str) or not state:
            raise outcome_unknown(self._api, "the task answer has no task_status", task)
        if state == _DONE:
            result = task.get("task_result")
            videos = result.get("videos") if isinstance(result, dict) else None
            first = videos[0] if isinstance(videos, list) and videos else None
            url = first.get("url") if isinstance(first, dict) else None
            # Finished is paid: without its file it is still SUCCEEDED (the engine reads it
            # again, never creates it again).
            return RemoteStatus(RemotePhase.SUCCEEDED, sub_status=state, progress=1.0,
                                video_url=url if isinstance(url, str) and url else None)
        if state == _FAILED:
            error = RENDER_FAILURES.classify(self._api, task.get("task_status_msg"))
            return RemoteStatus(RemotePhase.FAILED, sub_status=state, error=error)
        return plain_status(state, _PHASES, POLL_SECONDS)


def _endpoint(request: RenderRequest) -> str:
    return IMAGE if image_kind(request.params.get("image")) else TEXT


def _split_job_id(api: ApiClient, provider_job_id: str) -> tuple[str, str]:
    endpoint, sep, task_id = provider_job_id.partition("/")
    if not sep or endpoint not in (TEXT, IMAGE) or not task_id or "/" in task_id:
        raise api.error(f"{provider_job_id!r} is not a task id this version of the Kling "
                        "adapter made (text2video/ID or image2video/ID)",
                        ErrorClass.PERMANENT, ErrorLabel.INVALID_INPUT)
    return endpoint, task_id


def _code_of(body: Any) -> int | None:
    code = body.get("code") if isinstance(body, dict) else None
    if isinstance(code, bool):
        return None
    if isinstance(code, int):
        return code
    if isinstance(code, str) and code.isascii() and code.isdigit():  # "¹" is a digit to isdigit()
        return int(code)
    return None


def _readable_id(value: Any) -> bool:
    return (isinstance(value, str) and bool(value.strip())) or (
        isinstance(value, int) and not isinstance(value, bool))


def _external_id(task: Mapping[str, Any]) -> Any:
    info = task.get("task_info")
    return (info.get("external_task_id") or None) if isinstance(info, dict) else None


def _cfg_scale(value: Any) -> float | None:
    if value is None or value == "" or isinstance(value, bool):
        return None
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if 0.0 <= number <= 1.0 else None


def _b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def _jwt(access_key: str, secret_key: str, now: float) -> str:
    """Kling's API token: HS256, iss = access key, exp = now + 1800 s, nbf = now - 5 s."""
    header = _b64url(json.dumps({"alg": "HS256", "typ": "JWT"}, separators=(",", ":")).encode())
    payload = _b64url(json.dumps({"iss": access_key, "exp": int(now) + JWT_LIFETIME,
                                  "nbf": int(now) - 5}, separators=(",", ":")).encode())
    signing_input = f"{header}.{payload}".encode("ascii")
    signature = hmac.new(secret_key.encode(), signing_input, hashlib.sha256).digest()
    return f"{header}.{payload}.{_b64url(signature)}"


def create(session: HttpSession | httpx2.AsyncClient, config: ProviderConfig) -> KlingProvider:
    return KlingProvider(httpx_client_of(session), config)


INFO = ProviderInfo(kind=KIND, title=TITLE, factory=create, params=PARAMS,
                    default_base_url=DEFAULT_BASE_URL, requires_key=True,
                    rules=extra_validation)
