"""MiniMax Hailuo adapter (kind ``minimax``): the V1 (Hailuo 2.3 / 02) and V2 (H3) APIs.

Facts from PROVIDERS.md section 5d ([note] only):

- V1: ``POST /v1/video_generation`` ``{model, prompt, duration 6|10, resolution,
  first_frame_image}`` → ``task_id``; ``GET /v1/query/video_generation?task_id=`` reports
  ``Preparing`` / ``Queueing`` / ``Processing`` / ``Success`` (with ``file_id``) / ``Fail``;
  ``GET /v1/files/retrieve?file_id=`` gives a ``download_url`` valid one hour (a fresh one
  each call). Errors come as ``base_resp.status_code`` — often inside an HTTP 200: 1002
  rate limit, 1004 auth, 1008 insufficient balance, 1026/1027 sensitive prompt/output,
  2013 bad parameters.
- V2: ``POST /v2/video_generation`` with a ``content[]`` array; ``GET
  /v2/query/video_generation/{task_id}`` reports ``queued`` / ``running`` / ``succeeded`` /
  ``failed`` / ``cancelled``; ``DELETE`` cancels a queued task. HTTP 401, 402
  ``insufficient_balance``, 422 sensitive content (not validation!), 429.

The job id says which API made it: ``v1:<task_id>`` or ``v2:<task_id>``. The key must match
the host (``api.minimax.io`` international, ``api.minimaxi.com`` China: set the account's
base URL). No idempotency key; the V2 list endpoint's filters are not documented in our
notes, so nothing can find a submission by our token: ``supports_lookup`` is False.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from typing import Any

import httpx

from reelqueue.domain.errors import ErrorClass, ErrorLabel, ProviderError
from reelqueue.domain.states import RemotePhase
from reelqueue.providers.adapters._common import (
    cancel_request,
    check_row,
    create_answer,
    fresh_video_link,
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
    retry_after_of,
)
from reelqueue.providers.base import ParamSpec, ProviderConfig, RemoteStatus, RenderRequest
from reelqueue.providers.registry import ProviderInfo, register

KIND = "minimax"
TITLE = "MiniMax"
DEFAULT_BASE_URL = "https://api.minimax.io"
V1_MODELS = ("MiniMax-Hailuo-2.3", "MiniMax-Hailuo-02")
V2_MODELS = ("MiniMax-H3", "MiniMax-H3-Max")
POLL_SECONDS = 10.0  # "poll about every 10 s"
PROBE_TASK_ID = "0"
_V1_PHASES = {"Preparing": RemotePhase.QUEUED, "Queueing": RemotePhase.QUEUED,
              "Processing": RemotePhase.RUNNING}
_V2_PHASES = {"queued": RemotePhase.QUEUED, "running": RemotePhase.RUNNING,
              "cancelled": RemotePhase.CANCELLED}

# base_resp.status_code -> (class, label). 1000/1001/1013/2049 are from MiniMax's API
# reference rather than PROVIDERS.md.
STATUS_CODES: dict[int, tuple[ErrorClass, ErrorLabel]] = {
    1000: (ErrorClass.RETRYABLE, ErrorLabel.PROVIDER_ERROR),    # unknown error
    1001: (ErrorClass.RETRYABLE, ErrorLabel.TIMED_OUT),         # timeout
    1002: (ErrorClass.ACCOUNT, ErrorLabel.RATE_LIMITED),
    1004: (ErrorClass.ACCOUNT, ErrorLabel.KEY_REJECTED),
    1008: (ErrorClass.ACCOUNT, ErrorLabel.OUT_OF_CREDITS),
    1013: (ErrorClass.RETRYABLE, ErrorLabel.PROVIDER_ERROR),    # internal service error
    1026: (ErrorClass.PERMANENT, ErrorLabel.CONTENT_POLICY),    # sensitive prompt
    1027: (ErrorClass.PERMANENT, ErrorLabel.CONTENT_POLICY),    # sensitive output
    2013: (ErrorClass.PERMANENT, ErrorLabel.INVALID_INPUT),
    2049: (ErrorClass.ACCOUNT, ErrorLabel.KEY_REJECTED),        # invalid api key
}

PARAMS = ParamSpec(
    models=V1_MODELS + V2_MODELS,
    durations=(6.0, 10.0),
    aspect_ratios=(),  # not a MiniMax parameter: the model / first frame decides
    resolutions=("768p", "1080p", "512p"),
    seed=False,
    negative_prompt=False,
    reference_image=True,
    max_prompt_chars=2000,  # MiniMax's API reference; PROVIDERS.md does not say
    price_per_second={},  # PROVIDERS.md gives no MiniMax prices (failures are not charged)
    price_source="none: PROVIDERS.md section 5d lists no MiniMax prices (2026)",
    # H3 allows 30 concurrent tasks; Hailuo is capped at 20 requests/min, and each
    # running job polls 6 times a minute, so about three jobs fit beside their creates.
    default_capacity=3,
)


def extra_validation(params: Mapping[str, Any]) -> list[str]:
    """MiniMax rules ParamSpec cannot say: no aspect ratio; 512p only on Hailuo-02."""
    problems: list[str] = []
    model = param_str(params, "model") or PARAMS.models[0]
    if param_str(params, "aspect_ratio"):
        problems.append("MiniMax takes no aspect ratio (the model or first frame sets it); "
                        "leave it empty")
    if (param_str(params, "resolution") or "").lower() == "512p" and model != "MiniMax-Hailuo-02":
        problems.append("512p is offered by MiniMax-Hailuo-02 only")
    return problems + whole_duration(params)


class MiniMaxProvider:
    """One MiniMax account (V1 and V2 models).

    Attributes:
        kind: "minimax".
        supports_lookup: False; no documented way to find a task by our client token.
    """

    kind: str = KIND
    supports_lookup: bool = False

    def __init__(self, client: httpx.AsyncClient, config: ProviderConfig) -> None:
        self._api = ApiClient(client, config, title=TITLE, default_base_url=DEFAULT_BASE_URL)

    def __repr__(self) -> str:
        return f"MiniMaxProvider(account={self._api.account!r})"

    async def check_key(self) -> None:
        """Query a task that does not exist (``GET /v1/query/video_generation?task_id=0``).

        MiniMax documents no account endpoint for video; the query is read-only and free:
        a bad key answers 401 or ``base_resp`` 1004/2049, a good one "not found".
        """
        response = await self._api.request("GET", "/v1/query/video_generation",
                                           params={"task_id": PROBE_TASK_ID})
        if not response.is_success:
            raise self._http_error(response)
        error = self._base_resp_error(json_or_none(response))
        if error is not None and error.error_class is ErrorClass.ACCOUNT:
            raise error

    async def submit(self, request: RenderRequest) -> str:
        check_row(TITLE, PARAMS, extra_validation, request)
        model = param_str(request.params, "model") or PARAMS.models[0]
        v2 = model in V2_MODELS
        body = await (self._v2_body(model, request) if v2 else self._v1_body(model, request))
        path = "/v2/video_generation" if v2 else "/v1/video_generation"
        answer = await create_answer(self._api, path, self._http_error, json_body=body)
        error = self._base_resp_error(answer)
        if error is not None:
            raise error  # a definite refusal (HTTP 200 with a non-zero status code)
        task_id = answer.get("task_id") or answer.get("id")
        if not isinstance(task_id, str | int) or not str(task_id):
            raise self._api.error("the create answer had no task id", ErrorClass.RETRYABLE,
                                  ErrorLabel.PROVIDER_ERROR, body_maybe_sent=True)
        return f"{'v2' if v2 else 'v1'}:{task_id}"

    async def poll(self, provider_job_id: str) -> RemoteStatus:
        version, task_id = _split(provider_job_id)
        if version == "v2":
            return await self._poll_v2(task_id)
        return await self._poll_v1(task_id)

    async def lookup(self, request: RenderRequest) -> str | None:
        return None

    async def download(self, provider_job_id: str, status: RemoteStatus) -> AsyncIterator[bytes]:
        async def fresh_link() -> str:
            # V1 download_url lives one hour; files/retrieve (via poll) signs a new one.
            return await fresh_video_link(self._api, self.poll(provider_job_id),
                                          lambda _: "the task no longer offers its video")

        async for chunk in self._api.stream_video(status.video_url, refresh=fresh_link):
            yield chunk

    async def cancel(self, provider_job_id: str) -> None:
        """V2 tasks can be cancelled while queued; V1 has no cancel."""
        version, task_id = _split(provider_job_id)
        if version != "v2":
            return
        await cancel_request(self._api, "DELETE", f"/v2/video_generation/{task_id}",
                             self._http_error, fine=(400, 404, 405, 409))

    # -- V1 -------------------------------------------------------------------------------

    async def _v1_body(self, model: str, request: RenderRequest) -> dict[str, Any]:
        params = request.params
        body: dict[str, Any] = {"model": model, "prompt": request.prompt}
        seconds = param_int(params, "duration")
        if seconds is not None:
            body["duration"] = seconds
        resolution = param_str(params, "resolution")
        if resolution:
            body["resolution"] = resolution.upper()  # MiniMax spells it "768P"
        if image_kind(params.get("image")):
            image = await load_image(params["image"], TITLE)
            body["first_frame_image"] = image.url_or_data_uri()
        return body

    async def _poll_v1(self, task_id: str) -> RemoteStatus:
        task = await self._get("/v1/query/video_generation", {"task_id": task_id})
        state = str(task.get("status", ""))
        if state == "Success":
            file_id = task.get("file_id")
            if not file_id:
                return RemoteStatus(RemotePhase.FAILED, sub_status=state, error=self._api.error(
                    "the task succeeded without a file id", ErrorClass.RETRYABLE,
                    ErrorLabel.PROVIDER_ERROR))
            file = (await self._get("/v1/files/retrieve", {"file_id": str(file_id)})).get("file")
            url = file.get("download_url") if isinstance(file, dict) else None
            return RemoteStatus(RemotePhase.SUCCEEDED, sub_status=state, progress=1.0,
                                video_url=str(url) if url else None)
        if state == "Fail":
            error = self._base_resp_error(task) or self._api.error(
                f"render failed: {self._api.shorten(provider_text(task))}",
                ErrorClass.RETRYABLE, ErrorLabel.PROVIDER_ERROR)
            return RemoteStatus(RemotePhase.FAILED, sub_status=state, error=error)
        return plain_status(state, _V1_PHASES, POLL_SECONDS)

    # -- V2 -------------------------------------------------------------------------------

    async def _v2_body(self, model: str, request: RenderRequest) -> dict[str, Any]:
        params = request.params
        content: list[dict[str, Any]] = [{"type": "text", "text": request.prompt}]
        if image_kind(params.get("image")):
            image = await load_image(params["image"], TITLE)
            content.append({"type": "image_url",
                            "image_url": {"url": image.url_or_data_uri()}})
        body: dict[str, Any] = {"model": model, "content": content}
        seconds = param_int(params, "duration")
        if seconds is not None:
            body["duration"] = seconds
        resolution = param_str(params, "resolution")
        if resolution:
            body["resolution"] = resolution.upper()
        return body

    async def _poll_v2(self, task_id: str) -> RemoteStatus:
        task = await self._get(f"/v2/query/video_generation/{task_id}", None)
        state = str(task.get("status", ""))
        if state == "succeeded":
            url = _v2_video_url(task)
            if url is None and task.get("file_id"):
                file = (await self._get("/v1/files/retrieve",
                                        {"file_id": str(task["file_id"])})).get("file")
                url = str(file["download_url"]) if isinstance(file, dict) and file.get(
                    "download_url") else None
            return RemoteStatus(RemotePhase.SUCCEEDED, sub_status=state, progress=1.0,
                                video_url=url)
        if state == "failed":
            return RemoteStatus(RemotePhase.FAILED, sub_status=state,
                                error=self._v2_failure(task))
        return plain_status(state, _V2_PHASES, POLL_SECONDS)

    def _v2_failure(self, task: Mapping[str, Any]) -> ProviderError:
        from_base = self._base_resp_error(task)
        if from_base is not None:
            return from_base
        code = error_code_of(task)
        text = self._api.shorten(provider_text(task))
        message = f"render failed ({code or 'no code'}): {text}"
        if code in ("sensitive", "sensitive_content", "content_policy") or mentions(
                f"{code} {text}", *CONTENT_POLICY_WORDS):
            return self._api.error(message, ErrorClass.PERMANENT, ErrorLabel.CONTENT_POLICY)
        if code == "insufficient_balance":
            return self._api.error(message, ErrorClass.ACCOUNT, ErrorLabel.OUT_OF_CREDITS)
        return self._api.error(message, ErrorClass.RETRYABLE, ErrorLabel.PROVIDER_ERROR)

    # -- shared ---------------------------------------------------------------------------

    async def _get(self, path: str, params: Mapping[str, str] | None) -> dict[str, Any]:
        response = await self._api.request("GET", path, params=params)
        if not response.is_success:
            raise self._http_error(response)
        answer = self._api.json_of(response)
        error = self._base_resp_error(answer)
        if error is not None and answer.get("status") not in ("Fail", "failed"):
            raise error  # the query itself was refused (bad key, rate limit...)
        return answer

    def _base_resp_error(self, body: Any) -> ProviderError | None:
        """The error of a ``base_resp`` with a non-zero ``status_code``, or None."""
        base = body.get("base_resp") if isinstance(body, dict) else None
        if not isinstance(base, dict):
            return None
        code = base.get("status_code")
        if not isinstance(code, int) or code == 0:
            return None
        text = self._api.shorten(str(base.get("status_msg") or "no message"))
        error_class, label = STATUS_CODES.get(
            code, (ErrorClass.RETRYABLE, ErrorLabel.PROVIDER_ERROR))
        return self._api.error(f"error {code}: {text}", error_class, label)

    def _http_error(self, response: httpx.Response, *, during_create: bool = False
                    ) -> ProviderError:
        status = response.status_code
        body = json_or_none(response)
        from_base = self._base_resp_error(body)
        if from_base is not None and status < 500:
            return from_base
        code = error_code_of(body)
        words = provider_words(response)
        message = self._api.message(response)
        if status == 402 or code == "insufficient_balance":
            return ProviderError(message, error_class=ErrorClass.ACCOUNT,
                                 label=ErrorLabel.OUT_OF_CREDITS, status_code=status)
        if status == 422 and (code.startswith("sensitive") or mentions(
                words, *CONTENT_POLICY_WORDS) or not code):
            # V2 answers sensitive content with 422.
            return ProviderError(message, error_class=ErrorClass.PERMANENT,
                                 label=ErrorLabel.CONTENT_POLICY, status_code=status)
        if status == 429:
            return rate_limited(message, response, retry_after_of(response))
        return self._api.http_error(response, during_create=during_create)


def provider_text(body: Mapping[str, Any]) -> str:
    error = body.get("error")
    if isinstance(error, dict):
        return str(error.get("message") or error.get("code") or "no reason given")
    for key in ("error", "message", "failure_reason", "status_msg"):
        if body.get(key):
            return str(body[key])
    return "no reason given"


def _split(provider_job_id: str) -> tuple[str, str]:
    version, sep, task_id = provider_job_id.partition(":")
    if sep and version in ("v1", "v2") and task_id:
        return version, task_id
    return "v1", provider_job_id  # a bare id is a V1 task


def _v2_video_url(task: Mapping[str, Any]) -> str | None:
    """The video link of a V2 task; the notes do not give the field, so look in the
    likely places (``video_url``, ``download_url``, ``video.url``, ``output``...)."""
    for key in ("video_url", "download_url", "url"):
        value = task.get(key)
        if isinstance(value, str) and value:
            return value
    for key in ("video", "output", "result", "file"):
        value = task.get(key)
        if isinstance(value, dict):
            found = _v2_video_url(value)
            if found:
                return found
        if isinstance(value, list):
            for item in value:
                if isinstance(item, dict):
                    found = _v2_video_url(item)
                    if found:
                        return found
                if isinstance(item, str) and item.startswith("https://"):
                    return item
    return None


def create(client: httpx.AsyncClient, config: ProviderConfig) -> MiniMaxProvider:
    return MiniMaxProvider(client, config)


register(ProviderInfo(kind=KIND, title=TITLE, factory=create, params=PARAMS,
                      default_base_url=DEFAULT_BASE_URL, requires_key=True))
