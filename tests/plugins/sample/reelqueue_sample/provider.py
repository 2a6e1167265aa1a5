"""Sample Video API, a provider plug-in for ReelQueue in one file (docs/providers/writing.md).

The API (invented for the example, shaped like the real ones):

- ``POST /v1/videos`` ``{"prompt", "duration", "aspect_ratio", "client_token"}`` -> 201
  ``{"id", "status"}``; ``GET /v1/videos/{id}`` -> ``{"id", "status", "progress",
  "video_url", "error": {"code", "message"}}`` with status queued, running, succeeded,
  failed or cancelled; ``DELETE /v1/videos/{id}`` cancels; ``GET /v1/account`` reads the
  account (the key check).
- Errors: ``{"error": {"code", "message"}}`` with 400, 401, 402 (credits), 429 (with
  ``Retry-After``), 5xx. No lookup by client token and no list of renders: a create whose
  answer was lost stays "unknown" for the user to resolve.

It imports only ReelQueue's provider contract (``reelqueue.providers.registry``, ``.base``,
``.http``, ``.download_limits``, and the words of ``reelqueue.domain.errors`` and
``.states``): never the HTTP library the engine uses.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from typing import Any
from urllib.parse import quote

from reelqueue.domain.errors import ErrorClass, ErrorLabel, InputError, ProviderError
from reelqueue.domain.states import RemotePhase
from reelqueue.providers.base import (
    ParamSpec,
    ProviderConfig,
    RemoteStatus,
    RenderRequest,
    classify_http_status,
    parse_retry_after,
    scrub_secret,
)
from reelqueue.providers.download_limits import (
    bounded,
    current_limits,
    download_failed,
    too_large,
)
from reelqueue.providers.http import (
    HttpResponse,
    HttpSession,
    HttpTransportError,
    transport_failure,
)
from reelqueue.providers.registry import CONTRACT_VERSION, ProviderInfo

KIND = "sample"
TITLE = "Sample Video API"
DEFAULT_BASE_URL = "https://api.sample-video.example"

PARAMS = ParamSpec(
    models=("sample-1",), durations=(5.0, 10.0), aspect_ratios=("16:9", "9:16", "1:1"),
    max_prompt_chars=2000, price_per_second={"sample-1": 0.08},
    price_source="Sample Video API pricing page (example)")

STATES = {"queued": RemotePhase.QUEUED, "running": RemotePhase.RUNNING,
          "succeeded": RemotePhase.SUCCEEDED, "failed": RemotePhase.FAILED,
          "cancelled": RemotePhase.CANCELLED}

# The documented failure codes of a render; any other is permanent (never rendered, and
# paid, again on a guess).
FAILURES = {"content_policy": (ErrorClass.PERMANENT, ErrorLabel.CONTENT_POLICY),
            "invalid_input": (ErrorClass.PERMANENT, ErrorLabel.INVALID_INPUT),
            "internal": (ErrorClass.RETRYABLE, ErrorLabel.PROVIDER_ERROR)}

_DEAD_LINK = (401, 403, 404, 410)


class _Key:
    """The API key, kept out of every ``repr`` and ``vars()``."""

    __slots__ = ("value",)

    def __init__(self, value: str) -> None:
        self.value = value

    def __repr__(self) -> str:
        return "_Key([hidden])"


class SampleProvider:
    """One account of the Sample Video API.

    Attributes:
        kind: "sample"; supports_lookup: False (the API cannot find a render by our token).
        account: the account's name.
    """

    kind = KIND
    supports_lookup = False

    def __init__(self, session: HttpSession, config: ProviderConfig) -> None:
        key = config.api_key
        if not key:
            raise InputError(f"{TITLE} needs an API key: add it to the account.")
        if not key.isascii() or not key.isprintable() or " " in key:
            raise InputError(f"The {TITLE} key holds characters no key has: paste it again.")
        self.account = config.account
        self._session = session
        self._base = (config.base_url or DEFAULT_BASE_URL).rstrip("/")
        self._key = _Key(key)

    def __repr__(self) -> str:
        return f"SampleProvider(account={self.account!r})"

    # -- the calls ---------------------------------------------------------------------

    async def check_key(self) -> None:
        answer = await self._send("GET", "/v1/account", during_create=False)
        if not 200 <= answer.status_code < 300:
            raise self._error(answer, during_create=False)

    async def submit(self, request: RenderRequest) -> str:
        body: dict[str, Any] = {"prompt": request.prompt, "client_token": request.client_token}
        for name in ("duration", "aspect_ratio", "model"):
            if request.params.get(name) not in (None, ""):
                body[name] = request.params[name]
        answer = await self._send("POST", "/v1/videos", json=body, during_create=True)
        if not 200 <= answer.status_code < 300:
            raise self._error(answer, during_create=True)
        created = _json_object(answer)
        job_id = created.get("id") if created is not None else None
        if not isinstance(job_id, str) or not job_id.strip():
            raise ProviderError(
                self._scrub(f"{TITLE} took the create but its answer holds no video id "
                            f"(look for the render in the dashboard): {answer.text}"),
                error_class=ErrorClass.PERMANENT, label=ErrorLabel.SUBMIT_UNKNOWN,
                body_maybe_sent=True)
        return job_id

    async def poll(self, provider_job_id: str) -> RemoteStatus:
        answer = await self._send("GET", f"/v1/videos/{quote(provider_job_id, safe='')}",
                                  during_create=False)
        if not 200 <= answer.status_code < 300:
            raise self._error(answer, during_create=False)
        video = _json_object(answer)
        if video is None:
            raise ProviderError(self._scrub(f"{TITLE} sent an answer that is not JSON"),
                                error_class=ErrorClass.RETRYABLE,
                                label=ErrorLabel.PROVIDER_ERROR)
        state = video.get("status")
        phase = STATES.get(state) if isinstance(state, str) else None
        if phase is None or not isinstance(state, str):
            raise ProviderError(
                self._scrub(f"{TITLE} answered without a state ReelQueue knows: "
                            f"{answer.text}"),
                error_class=ErrorClass.PERMANENT, label=ErrorLabel.SUBMIT_UNKNOWN)
        progress = video.get("progress")
        fraction = (float(progress) if isinstance(progress, int | float)
                    and not isinstance(progress, bool) and 0 <= progress <= 1 else None)
        link = video.get("video_url")
        return RemoteStatus(
            phase=phase, sub_status=state, progress=fraction,
            video_url=link if phase is RemotePhase.SUCCEEDED and isinstance(link, str)
            and link.startswith(("https://", "http://127.0.0.1")) else None,
            error=self._failure(video.get("error")) if phase is RemotePhase.FAILED else None)

    async def lookup(self, request: RenderRequest) -> str | None:
        # No lookup by client token: "unknown", never "no such render" (that would create
        # the video, and bill it, again).
        raise ProviderError(f"{TITLE} cannot find a render by ReelQueue's token: look for "
                            "it in the dashboard.", error_class=ErrorClass.PERMANENT,
                            label=ErrorLabel.SUBMIT_UNKNOWN, body_maybe_sent=True)

    async def download(self, provider_job_id: str, status: RemoteStatus
                       ) -> AsyncIterator[bytes]:
        limits = current_limits()
        link = status.video_url
        for attempt in (1, 2):
            if link is None:
                raise download_failed(f"{TITLE} gave no link to the video")
            try:
                async with self._session.stream("GET", link) as answer:  # no key: a CDN
                    if answer.status_code in _DEAD_LINK and attempt == 1:
                        link = (await self.poll(provider_job_id)).video_url  # re-signed
                        continue
                    if not 200 <= answer.status_code < 300:
                        raise download_failed(
                            f"{TITLE}: the video link answered HTTP {answer.status_code}")
                    kind = answer.headers.get("content-type", "").lower()
                    if kind.startswith(("text/", "application/json")):
                        raise download_failed(f"{TITLE}: the link gave a page, not a video")
                    announced = _length(answer.headers)
                    if announced is not None and announced > limits.max_bytes:
                        raise too_large(limits, announced)
                    received = 0
                    async for chunk in bounded(answer.aiter_bytes(), limits):
                        if received == 0 and chunk.lstrip()[:15].lower().startswith(
                                (b"<!doctype", b"<html")):
                            raise download_failed(f"{TITLE}: the link gave a web page, "
                                                  "not a video")
                        received += len(chunk)
                        yield chunk
                    if announced is not None and received != announced:
                        raise download_failed(f"{TITLE}: the video ended after {received} "
                                              f"of {announced} bytes")
                    return
            except HttpTransportError as exc:
                raise download_failed(f"{TITLE}: the download broke off ({exc})") from exc
        raise download_failed(f"{TITLE}: the video link is still dead after reading the "
                              "render again")

    async def cancel(self, provider_job_id: str) -> None:
        answer = await self._send("DELETE", f"/v1/videos/{quote(provider_job_id, safe='')}",
                                  during_create=False)
        if not 200 <= answer.status_code < 300 and answer.status_code != 404:
            raise self._error(answer, during_create=False)

    # -- helpers -----------------------------------------------------------------------

    async def _send(self, method: str, path: str, *, during_create: bool,
                    json: Any = None) -> HttpResponse:
        headers = {"Authorization": f"Bearer {self._key.value}", "Accept": "application/json"}
        try:
            return await self._session.request(method, self._base + path, headers=headers,
                                               json=json)
        except HttpTransportError as exc:
            raise transport_failure(exc, during_create=during_create) from exc

    def _scrub(self, text: str) -> str:
        return scrub_secret(text, self._key.value,
                            header_values=(f"Bearer {self._key.value}",))

    def _error(self, answer: HttpResponse, *, during_create: bool) -> ProviderError:
        body = _json_object(answer)
        error = body.get("error") if body is not None else None
        code = error.get("code") if isinstance(error, dict) else None
        message = error.get("message") if isinstance(error, dict) else None
        said = message if isinstance(message, str) and message else answer.text
        text = self._scrub(f"{TITLE}: HTTP {answer.status_code}: {said}")
        if answer.status_code == 402 or code == "insufficient_credits":
            return ProviderError(text, error_class=ErrorClass.ACCOUNT,
                                 label=ErrorLabel.OUT_OF_CREDITS,
                                 status_code=answer.status_code)
        return classify_http_status(
            answer.status_code, text, during_create=during_create,
            retry_after=parse_retry_after(answer.headers.get("retry-after")))

    def _failure(self, error: Any) -> ProviderError:
        code = error.get("code") if isinstance(error, dict) else None
        message = error.get("message") if isinstance(error, dict) else None
        error_class, label = FAILURES.get(code, (ErrorClass.PERMANENT,
                                                 ErrorLabel.PROVIDER_ERROR)) \
            if isinstance(code, str) else (ErrorClass.PERMANENT, ErrorLabel.PROVIDER_ERROR)
        said = f"{code}: {message}" if isinstance(message, str) else f"{code or 'no reason'}"
        return ProviderError(self._scrub(f"{TITLE}: the render failed ({said})"),
                             error_class=error_class, label=label)


def _json_object(answer: HttpResponse) -> dict[str, Any] | None:
    try:
        body = answer.json()
    except ValueError:
        return None
    return body if isinstance(body, dict) else None


def _length(headers: Mapping[str, str]) -> int | None:
    try:
        return int(headers.get("content-length", ""))
    except ValueError:
        return None


def create(session: HttpSession, config: ProviderConfig) -> SampleProvider:
    return SampleProvider(session, config)


INFO = ProviderInfo(kind=KIND, title=TITLE, factory=create, params=PARAMS,
                    default_base_url=DEFAULT_BASE_URL, requires_key=True,
                    contract=CONTRACT_VERSION)
