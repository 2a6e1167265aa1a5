"""Kling 3.x adapter (kind ``kling``), the one provider that can find our submission again.

Facts from PROVIDERS.md section 5c ([note] for 3.x): base ``https://api-singapore.klingai.com``,
Bearer API key (an HS256 JWT signed with an access/secret key pair is still accepted: give
the key as ``ACCESS_KEY:SECRET_KEY``); the model version is in the path
(``POST /text-to-video/kling-3.0``); the body is ``{contents[], settings{resolution,
aspect_ratio, duration 3-15, audio}, options{callback_url, external_task_id,
watermark_info}}``; every answer is an envelope ``{code, message, request_id, data}`` and
**HTTP 200 with ``code != 0`` is a failure**. ``GET /tasks?task_ids=`` or
``?external_task_ids=`` reports ``submitted`` / ``processing`` / ``succeeded`` (legacy
``succeed``) / ``failed``. Results are kept 30 days. No RPM limit, only package
concurrency: code 1303 means too many parallel tasks (back off from 1 s).

``external_task_id`` is our client token, so after a crash inside the submit window
:meth:`KlingProvider.lookup` finds the task by it: ``supports_lookup`` is True.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import time
from collections.abc import AsyncIterator, Mapping
from typing import Any

import httpx

from reelqueue.domain.errors import ErrorClass, ErrorLabel, ProviderError
from reelqueue.domain.states import RemotePhase
from reelqueue.providers.adapters._common import (
    check_row,
    fresh_video_link,
    plain_status,
    whole_duration,
)
from reelqueue.providers.adapters._http import (
    CONTENT_POLICY_WORDS,
    ApiClient,
    image_kind,
    json_or_none,
    load_image,
    mentions,
    param_bool,
    param_int,
    param_str,
    retry_after_of,
)
from reelqueue.providers.base import ParamSpec, ProviderConfig, RemoteStatus, RenderRequest
from reelqueue.providers.registry import ProviderInfo, register

KIND = "kling"
TITLE = "Kling"
DEFAULT_BASE_URL = "https://api-singapore.klingai.com"
MODELS = ("kling-3.0",)
POLL_SECONDS = 10.0  # no documented cadence
_PHASES = {"submitted": RemotePhase.QUEUED, "processing": RemotePhase.RUNNING}
CONCURRENCY_BACKOFF = 1.0  # code 1303: "back off from >= 1 s"
JWT_LIFETIME = 1800  # exp = now + 1800 s, nbf = now - 5 s (legacy v1 auth)
KEY_CHECK_TOKEN = "reelqueue-key-check"

# Envelope ``code`` -> (class, label). 1303 is in PROVIDERS.md; the rest is Kling's
# published error table (kept for the 3.x API, which uses the same envelope).
CODES: dict[int, tuple[ErrorClass, ErrorLabel]] = {
    1000: (ErrorClass.ACCOUNT, ErrorLabel.KEY_REJECTED),    # authentication failed
    1001: (ErrorClass.ACCOUNT, ErrorLabel.KEY_REJECTED),    # authorization empty
    1002: (ErrorClass.ACCOUNT, ErrorLabel.KEY_REJECTED),    # authorization invalid
    1003: (ErrorClass.ACCOUNT, ErrorLabel.KEY_REJECTED),    # token not yet valid
    1004: (ErrorClass.ACCOUNT, ErrorLabel.KEY_REJECTED),    # token expired
    1100: (ErrorClass.ACCOUNT, ErrorLabel.KEY_REJECTED),    # account exception
    1101: (ErrorClass.ACCOUNT, ErrorLabel.OUT_OF_CREDITS),  # account in arrears
    1102: (ErrorClass.ACCOUNT, ErrorLabel.OUT_OF_CREDITS),  # resource pack used up/expired
    1103: (ErrorClass.ACCOUNT, ErrorLabel.KEY_REJECTED),    # no access to this resource
    1200: (ErrorClass.PERMANENT, ErrorLabel.INVALID_INPUT),
    1201: (ErrorClass.PERMANENT, ErrorLabel.INVALID_INPUT),
    1202: (ErrorClass.PERMANENT, ErrorLabel.INVALID_INPUT),
    1203: (ErrorClass.PERMANENT, ErrorLabel.INVALID_INPUT),  # resource (model) not found
    1300: (ErrorClass.PERMANENT, ErrorLabel.PROVIDER_ERROR),  # platform policy
    1301: (ErrorClass.PERMANENT, ErrorLabel.CONTENT_POLICY),  # content security policy
    1302: (ErrorClass.ACCOUNT, ErrorLabel.RATE_LIMITED),     # requests too fast
    1303: (ErrorClass.ACCOUNT, ErrorLabel.RATE_LIMITED),     # too many parallel tasks
    1304: (ErrorClass.ACCOUNT, ErrorLabel.KEY_REJECTED),     # IP not allowed
    5000: (ErrorClass.RETRYABLE, ErrorLabel.PROVIDER_ERROR),
    5001: (ErrorClass.RETRYABLE, ErrorLabel.PROVIDER_ERROR),  # service unavailable
    5002: (ErrorClass.RETRYABLE, ErrorLabel.TIMED_OUT),       # server timeout
}

PARAMS = ParamSpec(
    models=MODELS,
    durations=None,
    duration_range=(3.0, 15.0),
    aspect_ratios=("16:9", "9:16", "1:1"),
    resolutions=("720p", "1080p"),
    seed=False,
    negative_prompt=False,
    reference_image=True,
    max_prompt_chars=2500,  # Kling's published limit; PROVIDERS.md does not say
    price_per_second={},  # PROVIDERS.md gives no Kling prices
    price_source="none: PROVIDERS.md section 5c lists no Kling prices (2026)",
    default_capacity=1,  # package concurrency is not published; 1303 says when it is hit
)


def extra_validation(params: Mapping[str, Any]) -> list[str]:
    return whole_duration(params)


class KlingProvider:
    """One Kling account.

    Attributes:
        kind: "kling".
        supports_lookup: True; a task is found by ``external_task_id`` = our client token.
    """

    kind: str = KIND
    supports_lookup: bool = True

    def __init__(self, client: httpx.AsyncClient, config: ProviderConfig) -> None:
        self._jwt: tuple[str, float] | None = None
        self._api = ApiClient(client, config, title=TITLE, default_base_url=DEFAULT_BASE_URL,
                              auth_headers=self._auth_headers)
        _, sep, secret = (config.api_key or "").partition(":")
        if sep and secret:
            self._api.add_secret(secret)  # never sent, but never shown either

    def __repr__(self) -> str:
        return f"KlingProvider(account={self._api.account!r})"

    async def check_key(self) -> None:
        """``GET /tasks?external_task_ids=…``: a read-only query that finds nothing."""
        await self._tasks({"external_task_ids": KEY_CHECK_TOKEN})

    async def submit(self, request: RenderRequest) -> str:
        check_row(TITLE, PARAMS, extra_validation, request)
        model = param_str(request.params, "model") or MODELS[0]
        has_image = bool(image_kind(request.params.get("image")))
        path = f"/{'image' if has_image else 'text'}-to-video/{model}"
        response = await self._api.request("POST", path, json_body=await self._body(request),
                                           during_create=True)
        data = self._data(response, during_create=True)
        task_id = data.get("task_id") if isinstance(data, dict) else None
        if not isinstance(task_id, str | int) or not str(task_id):
            raise self._api.error("the create answer had no task id", ErrorClass.RETRYABLE,
                                  ErrorLabel.PROVIDER_ERROR, body_maybe_sent=True)
        return str(task_id)

    async def poll(self, provider_job_id: str) -> RemoteStatus:
        tasks = await self._tasks({"task_ids": provider_job_id})
        task = next((t for t in tasks if str(t.get("task_id")) == provider_job_id), None)
        if task is None:
            raise self._api.error(f"task {provider_job_id} is unknown (results are kept "
                                  "30 days)", ErrorClass.PERMANENT, ErrorLabel.INVALID_INPUT,
                                  status_code=404)
        return self._status(task)

    async def lookup(self, request: RenderRequest) -> str | None:
        """The task created with ``external_task_id == request.client_token``, if any."""
        tasks = await self._tasks({"external_task_ids": request.client_token})
        for task in tasks:
            info = task.get("task_info")
            external = info.get("external_task_id") if isinstance(info, dict) else None
            if external in (None, request.client_token) and task.get("task_id"):
                return str(task["task_id"])
        return None

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
        now = time.time()
        if self._jwt is None or self._jwt[1] - now < 300:
            self._jwt = (_jwt(access, secret, now), now + JWT_LIFETIME)
        return {"Authorization": f"Bearer {self._jwt[0]}"}

    async def _body(self, request: RenderRequest) -> dict[str, Any]:
        params = request.params
        contents: list[dict[str, Any]] = [{"type": "text", "text": request.prompt}]
        if image_kind(params.get("image")):
            image = await load_image(params["image"], TITLE)
            # Kling takes an image URL or raw base64 (no data: prefix).
            contents.append({"type": "image", "image": image.url or image.b64()})
        settings: dict[str, Any] = {}
        for name in ("resolution", "aspect_ratio"):
            value = param_str(params, name)
            if value:
                settings[name] = value
        seconds = param_int(params, "duration")
        if seconds is not None:
            settings["duration"] = seconds
        audio = param_bool(params, "audio")
        if audio is not None:
            settings["audio"] = audio
        return {"contents": contents, "settings": settings,
                "options": {"external_task_id": request.client_token}}

    async def _tasks(self, query: Mapping[str, str]) -> list[dict[str, Any]]:
        response = await self._api.request("GET", "/tasks", params=query)
        data = self._data(response)
        if isinstance(data, dict):
            for key in ("tasks", "items", "list", "data"):
                if isinstance(data.get(key), list):
                    data = data[key]
                    break
            else:
                data = [data] if data.get("task_id") else []
        return [t for t in data if isinstance(t, dict)] if isinstance(data, list) else []

    def _data(self, response: httpx.Response, *, during_create: bool = False) -> Any:
        """The envelope's ``data``; any non-zero ``code`` (even in an HTTP 200) raises."""
        body = json_or_none(response)
        code = body.get("code") if isinstance(body, dict) else None
        if response.is_success and code in (0, "0"):
            return body.get("data") if isinstance(body, dict) else None
        if isinstance(code, int | str) and str(code).isdigit() and int(code) != 0:
            raise self._code_error(int(code), body, response, during_create)
        if not response.is_success:
            raise self._api.http_error(response, during_create=during_create)
        raise self._api.error(
            f"unreadable answer (HTTP {response.status_code}, no envelope code)",
            ErrorClass.RETRYABLE, ErrorLabel.PROVIDER_ERROR,
            status_code=response.status_code, body_maybe_sent=during_create)

    def _code_error(self, code: int, body: Mapping[str, Any], response: httpx.Response,
                    during_create: bool) -> ProviderError:
        text = self._api.shorten(str(body.get("message") or "no message"))
        error_class, label = CODES.get(code, _class_by_status(response.status_code))
        retry_after = retry_after_of(response)
        if code == 1303 and retry_after is None:
            retry_after = CONCURRENCY_BACKOFF
        if error_class is ErrorClass.PERMANENT and mentions(text, *CONTENT_POLICY_WORDS):
            label = ErrorLabel.CONTENT_POLICY
        # A server timeout (5002) leaves the create's outcome unknown; other codes are a
        # definite refusal. lookup() can settle the unknown case by external_task_id.
        maybe_sent = during_create and code == 5002
        return self._api.error(f"error {code}: {text}", error_class, label,
                               retry_after=retry_after, status_code=response.status_code,
                               body_maybe_sent=maybe_sent)

    def _status(self, task: Mapping[str, Any]) -> RemoteStatus:
        state = str(task.get("task_status", ""))
        if state in ("succeeded", "succeed"):
            result = task.get("task_result")
            videos = result.get("videos") if isinstance(result, dict) else None
            first = videos[0] if isinstance(videos, list) and videos else None
            url = first.get("url") if isinstance(first, dict) else None
            return RemoteStatus(RemotePhase.SUCCEEDED, sub_status=state, progress=1.0,
                                video_url=str(url) if url else None)
        if state == "failed":
            reason = self._api.shorten(str(task.get("task_status_msg") or "no reason given"))
            if mentions(reason, *CONTENT_POLICY_WORDS, "risk", "violat"):
                error = self._api.error(f"render failed: {reason}", ErrorClass.PERMANENT,
                                        ErrorLabel.CONTENT_POLICY)
            else:
                error = self._api.error(f"render failed: {reason}", ErrorClass.RETRYABLE,
                                        ErrorLabel.PROVIDER_ERROR)
            return RemoteStatus(RemotePhase.FAILED, sub_status=state, error=error)
        return plain_status(state, _PHASES, POLL_SECONDS)


def _class_by_status(status: int) -> tuple[ErrorClass, ErrorLabel]:
    if status in (401, 403):
        return ErrorClass.ACCOUNT, ErrorLabel.KEY_REJECTED
    if status == 429:
        return ErrorClass.ACCOUNT, ErrorLabel.RATE_LIMITED
    if 400 <= status < 500:
        return ErrorClass.PERMANENT, ErrorLabel.INVALID_INPUT
    return ErrorClass.RETRYABLE, ErrorLabel.PROVIDER_ERROR


def _b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def _jwt(access_key: str, secret_key: str, now: float) -> str:
    """Kling's legacy auth token: HS256, iss = access key, exp now+1800 s, nbf now-5 s."""
    header = _b64url(json.dumps({"alg": "HS256", "typ": "JWT"}, separators=(",", ":")).encode())
    payload = _b64url(json.dumps({"iss": access_key, "exp": int(now) + JWT_LIFETIME,
                                  "nbf": int(now) - 5}, separators=(",", ":")).encode())
    signing_input = f"{header}.{payload}".encode("ascii")
    signature = hmac.new(secret_key.encode(), signing_input, hashlib.sha256).digest()
    return f"{header}.{payload}.{_b64url(signature)}"


def create(client: httpx.AsyncClient, config: ProviderConfig) -> KlingProvider:
    return KlingProvider(client, config)


register(ProviderInfo(kind=KIND, title=TITLE, factory=create, params=PARAMS,
                      default_base_url=DEFAULT_BASE_URL, requires_key=True))
