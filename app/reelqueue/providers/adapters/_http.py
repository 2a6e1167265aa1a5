"""Plumbing shared by the provider adapters: one HTTP attempt, error texts, downloads.

Every adapter builds one :class:`ApiClient` from its account's config. It:

- refuses a base URL that is not https (loopback http is allowed for fakes and the mock);
- sends each request exactly once; retrying is the engine's decision, and a create whose
  body may have gone out is never retried (``transport_error(exc, during_create=True)``);
- turns a provider's error body into a short text with the API key scrubbed out, even when
  the provider echoes our request headers back at us: the whole text is scrubbed first
  (any spelling, any case, any run of 8+ characters of the key), then cut (:func:`redact`);
- streams a finished video while checking that it is one (not an HTML error page), that
  it is complete (Content-Length) and not over the byte cap (``download_limits``), checking
  every link and redirect hop (https, or http on loopback only when the API itself is on
  loopback), and re-fetches a fresh link once when the old one has expired and the adapter
  knows how to get another.

Nothing here logs a header, a body or a URL query (signed links carry credentials too).
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import hashlib
import json
import mimetypes
import re
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import quote, urljoin, urlsplit

import httpx

from reelqueue.domain.errors import ErrorClass, ErrorLabel, InputError, ProviderError
from reelqueue.domain.images import ImageProblem, read_pinned_image
from reelqueue.providers import download_limits
from reelqueue.providers.base import (
    ParamProblem,
    ParamSpec,
    ProviderConfig,
    classify_http_status,
    parse_retry_after,
    transport_error,
)
from reelqueue.providers.registry import check_base_url, is_loopback_url

REDACTED = "[redacted]"
MAX_MESSAGE_CHARS = 300
# A run of this many characters of a secret is scrubbed wherever it appears (a prefix, a
# suffix, the key one character short...); shorter fragments carry too little to matter.
SECRET_FRAGMENT_CHARS = 8
MAX_REDIRECTS = 5
SNIFF_BYTES = 64
# Statuses a download link answers with once it has expired or was revoked: S3/CloudFront
# say 403, GCS says 400 (ExpiredToken) or 403, deleted objects 404/410.
DEAD_LINK_STATUSES = frozenset({400, 403, 404, 410})
# Content types that are never a video: an error page, a JSON error, an XML S3 error.
NOT_VIDEO_TYPES = ("text/", "application/json", "application/xml", "application/xhtml",
                   "application/problem+json")

T = TypeVar("T")
AuthHeaders = Callable[[str], Mapping[str, str]]
LinkRefresher = Callable[[], Awaitable[str]]


def bearer(key: str) -> Mapping[str, str]:
    return {"Authorization": f"Bearer {key}"}


class ApiClient:
    """One account's connection details for one provider, and the calls every adapter makes.

    Attributes:
        title: the provider's human name, used at the start of every error text.
        account: the account name (shown in reprs, never the key).
        base_url: the checked base URL, without a trailing slash.
    """

    def __init__(
        self,
        client: httpx.AsyncClient,
        config: ProviderConfig,
        *,
        title: str,
        default_base_url: str | None,
        auth_headers: AuthHeaders = bearer,
        require_key: bool = True,
    ) -> None:
        base = config.base_url or default_base_url
        if not base:
            raise InputError(
                f"{title} needs a base URL: give the account one (https://...)."
            )
        self.base_url = check_base_url(base)
        self.title = title
        self.account = config.account
        self._client = client
        if not config.api_key and require_key:
            raise ProviderError(
                f"{title}: no API key is stored for account {config.account!r}; "
                "add one with 'reelqueue accounts add'.",
                error_class=ErrorClass.ACCOUNT,
                label=ErrorLabel.KEY_REJECTED,
            )
        self._key = config.api_key or ""
        self._auth_headers = auth_headers
        self._secrets: tuple[str, ...] = ()
        if self._key:
            self._secrets = _secret_variants(self._key, auth_headers(self._key).values())

    def __repr__(self) -> str:
        return f"ApiClient({self.title!r}, account={self.account!r}, base_url={self.base_url!r})"

    # -- secrets --------------------------------------------------------------------------

    def scrub(self, text: str) -> str:
        """``text`` with every spelling of the key we know of, and every run of 8+ of its
        characters, replaced (in any case). Scrub the whole text before cutting it."""
        return redact(text, self._secrets)

    def auth(self) -> dict[str, str]:
        if not self._key:
            return {}  # a keyless account (the local mock)
        headers = dict(self._auth_headers(self._key))
        for value in headers.values():
            if value and value not in self._secrets:
                self.add_secret(value)  # a token derived from the key (a fresh JWT)
        return headers

    def add_secret(self, value: str) -> None:
        """Also scrub ``value`` (a token derived from the key, e.g. a signed JWT)."""
        self._secrets = _secret_variants(value, (), self._secrets)

    # -- requests -------------------------------------------------------------------------

    def url(self, path: str) -> str:
        if path.startswith(("https://", "http://")):
            return path
        return f"{self.base_url}{path}"

    def is_own_origin(self, url: str) -> bool:
        """True when ``url`` is on the provider's API host, the only one that gets the key."""
        a, b = urlsplit(url), urlsplit(self.base_url)
        return (a.scheme, a.hostname, a.port) == (b.scheme, b.hostname, b.port)

    async def request(
        self,
        method: str,
        path: str,
        *,
        during_create: bool = False,
        headers: Mapping[str, str] | None = None,
        json_body: Any = None,
        params: Mapping[str, str | int] | None = None,
        files: Any = None,
        with_key: bool = True,
    ) -> httpx.Response:
        """Send one request, once. Transport failures become :class:`ProviderError`."""
        merged = self.auth() if with_key else {}
        if headers:
            merged.update(headers)
        try:
            # Never follow a redirect with the key attached: httpx drops Authorization on a
            # cross-origin hop but keeps other auth headers (x-goog-api-key).
            return await self._client.request(
                method, self.url(path), headers=merged, json=json_body, params=params,
                files=files, follow_redirects=False,
            )
        except httpx.HTTPError as exc:
            raise transport_error(exc, during_create=during_create) from exc

    # -- responses ------------------------------------------------------------------------

    def message(self, response: httpx.Response, what: str = "") -> str:
        """A short, key-free text for an error answer: provider, status, provider's words."""
        detail = self.shorten(provider_words(response))
        head = f"{self.title}: {what + ': ' if what else ''}HTTP {response.status_code}"
        return f"{head}: {detail}" if detail else head

    def shorten(self, text: str) -> str:
        """A provider's free text (failure reasons), scrubbed whole, then cut to a sane
        length: cutting first could leave a piece of the key the scrub no longer knows."""
        return _truncate(self.scrub(text.strip()))

    def http_error(
        self, response: httpx.Response, *, during_create: bool = False, what: str = ""
    ) -> ProviderError:
        """The default mapping of an error answer (PROVIDERS.md 6d), Retry-After included."""
        return classify_http_status(
            response.status_code,
            self.message(response, what),
            retry_after=retry_after_of(response),
            during_create=during_create,
        )

    def json_of(self, response: httpx.Response, *, during_create: bool = False) -> dict[str, Any]:
        """The JSON object of a 2xx answer; an unreadable one is a retryable provider error.

        An unreadable answer to a create may still mean the job was accepted (and billed),
        so it is marked ``body_maybe_sent``.
        """
        try:
            data = response.json()
        except (ValueError, UnicodeDecodeError):
            data = None
        if not isinstance(data, dict):
            raise ProviderError(
                f"{self.title}: unreadable answer (HTTP {response.status_code}, "
                f"{response.headers.get('content-type', 'no content type')})",
                error_class=ErrorClass.RETRYABLE,
                label=ErrorLabel.PROVIDER_ERROR,
                status_code=response.status_code,
                body_maybe_sent=during_create,
            )
        return data

    def error(
        self,
        message: str,
        error_class: ErrorClass,
        label: ErrorLabel,
        *,
        retry_after: float | None = None,
        status_code: int | None = None,
        body_maybe_sent: bool = False,
    ) -> ProviderError:
        """A :class:`ProviderError` whose text starts with the provider's name, key-free."""
        return ProviderError(
            self.scrub(f"{self.title}: {message}"),
            error_class=error_class,
            label=label,
            retry_after=retry_after,
            status_code=status_code,
            body_maybe_sent=body_maybe_sent,
        )

    # -- downloads ------------------------------------------------------------------------

    async def stream_video(
        self,
        url: str | None,
        *,
        refresh: LinkRefresher | None = None,
        send_key_to_api_host: bool = False,
        accept: str | None = None,
    ) -> AsyncIterator[bytes]:
        """Yield the video at ``url``; on a dead link ask ``refresh`` once for a fresh one.

        Redirects are followed by hand so the key goes only to the provider's own API host
        (``send_key_to_api_host``), never to the storage host a redirect points at.
        """
        refreshed = False
        if url is None:
            if refresh is None:
                raise self.error("the finished job has no video link", ErrorClass.RETRYABLE,
                                 ErrorLabel.DOWNLOAD_FAILED)
            url, refreshed = await refresh(), True
        while True:
            response = await self._open_download(url, send_key_to_api_host, accept)
            try:
                if response.is_success:
                    async for chunk in self._checked_body(response):
                        yield chunk
                    return
                if refresh is None or refreshed or not self._link_is_dead(response,
                                                                           send_key_to_api_host):
                    raise self._download_status_error(response, send_key_to_api_host)
            finally:
                await response.aclose()
            url, refreshed = await refresh(), True

    def _link_is_dead(self, response: httpx.Response, send_key_to_api_host: bool) -> bool:
        if send_key_to_api_host and self.is_own_origin(str(response.url)) and (
            response.status_code == 401
        ):
            return False  # our key was refused: a fresh link will not help
        return response.status_code in DEAD_LINK_STATUSES

    def _download_status_error(
        self, response: httpx.Response, send_key_to_api_host: bool
    ) -> ProviderError:
        status = response.status_code
        if send_key_to_api_host and self.is_own_origin(str(response.url)) and status == 401:
            return self.http_error(response, what="download")
        dead = " (link expired or revoked)" if status in DEAD_LINK_STATUSES else ""
        return self.error(
            f"download failed: HTTP {status} from {_host(response.url)}{dead}",
            ErrorClass.RETRYABLE,
            ErrorLabel.DOWNLOAD_FAILED,
            retry_after=retry_after_of(response),
            status_code=status,
        )

    async def _open_download(
        self, url: str, send_key_to_api_host: bool, accept: str | None
    ) -> httpx.Response:
        for _ in range(MAX_REDIRECTS + 1):
            self._check_download_url(url)
            # Identity: a compressed body could decode to far more than it announced (a
            # gzip bomb). A server that compresses anyway is still counted decoded.
            headers: dict[str, str] = {"Accept-Encoding": "identity"}
            if accept:
                headers["Accept"] = accept
            if send_key_to_api_host and self.is_own_origin(url):
                headers.update(self.auth())
            request = self._client.build_request("GET", url, headers=headers)
            try:
                response = await self._client.send(request, stream=True, follow_redirects=False)
            except httpx.HTTPError as exc:
                raise self._download_transport_error(exc) from exc
            if not response.is_redirect:
                return response
            location = response.headers.get("location", "")
            await response.aclose()
            url = urljoin(url, location)
        raise self.error("download failed: too many redirects", ErrorClass.RETRYABLE,
                         ErrorLabel.DOWNLOAD_FAILED)

    def _check_download_url(self, url: str) -> None:
        """Every link and every redirect hop: https, or plain http to loopback only when
        the API itself is on loopback (a fake or the local mock)."""
        parts = urlsplit(url)
        if parts.scheme == "https" and parts.hostname:
            return
        if parts.scheme == "http" and is_loopback_url(url) and is_loopback_url(self.base_url):
            return
        raise self.error(
            f"refusing to download from a non-https link ({parts.scheme or 'no'} scheme)",
            ErrorClass.RETRYABLE, ErrorLabel.DOWNLOAD_FAILED,
        )

    async def _checked_body(self, response: httpx.Response) -> AsyncIterator[bytes]:
        content_type = response.headers.get("content-type", "").lower()
        if content_type.startswith(NOT_VIDEO_TYPES):
            raise self.error(
                f"download failed: got {content_type.split(';')[0]} instead of a video "
                f"from {_host(response.url)}",
                ErrorClass.RETRYABLE, ErrorLabel.DOWNLOAD_FAILED,
                status_code=response.status_code,
            )
        limits = download_limits.current_limits()
        expected = response.headers.get("content-length")
        if expected and expected.isdigit() and int(expected) > limits.max_bytes:
            raise self._too_large(limits, int(expected))
        received = 0
        held = b""  # the first bytes, kept back until they are known not to be a text page
        sniffed = False
        try:
            async for chunk in response.aiter_bytes():
                if not chunk:
                    continue
                received += len(chunk)  # decoded bytes, whatever the Content-Encoding
                if received > limits.max_bytes:
                    raise self._too_large(limits)
                if sniffed:
                    yield chunk
                    continue
                held += chunk
                if len(held) >= SNIFF_BYTES:
                    self._sniff(held, response)
                    sniffed = True
                    yield held
                    held = b""
        except httpx.HTTPError as exc:
            raise self._download_transport_error(exc) from exc
        if held:
            # The whole body was shorter than the sniff window.
            self._sniff(held, response)
            yield held
        if received == 0:
            raise self.error("download failed: the provider sent an empty file",
                             ErrorClass.RETRYABLE, ErrorLabel.DOWNLOAD_FAILED)
        encoding = response.headers.get("content-encoding", "identity").lower()
        # Content-Length counts encoded bytes; only an unencoded body can be compared.
        if expected and expected.isdigit() and encoding == "identity" and int(expected) != received:
            raise self.error(
                f"download truncated: got {received} of {expected} bytes",
                ErrorClass.RETRYABLE, ErrorLabel.DOWNLOAD_FAILED,
            )

    def _too_large(self, limits: download_limits.DownloadLimits,
                   announced: int | None = None) -> ProviderError:
        reason = download_limits.too_large(limits, announced)
        return self.error(str(reason), reason.error_class, reason.label)

    def _sniff(self, head: bytes, response: httpx.Response) -> None:
        start = head.lstrip()[:1]
        if start in (b"<", b"{", b"["):
            raise self.error(
                f"download failed: got a text page instead of a video from "
                f"{_host(response.url)}",
                ErrorClass.RETRYABLE, ErrorLabel.DOWNLOAD_FAILED,
                status_code=response.status_code,
            )

    def _download_transport_error(self, exc: httpx.HTTPError) -> ProviderError:
        return self.error(
            f"download failed: {type(exc).__name__}", ErrorClass.RETRYABLE,
            ErrorLabel.DOWNLOAD_FAILED,
        )


# -- helpers ------------------------------------------------------------------------------


def retry_after_of(response: httpx.Response) -> float | None:
    """Seconds the provider asked us to wait: ``retry-after-ms`` or ``Retry-After``."""
    millis = response.headers.get("retry-after-ms")
    if millis:
        try:
            return max(0.0, float(millis) / 1000.0)
        except ValueError:
            pass
    return parse_retry_after(response.headers.get("retry-after"))


def rate_limit_reset_of(response: httpx.Response, now: float | None = None) -> float | None:
    """Seconds until ``X-RateLimit-Reset``: epoch seconds when large, else a delay."""
    value = response.headers.get("x-ratelimit-reset")
    if not value:
        return None
    try:
        number = float(value)
    except ValueError:
        return None
    if number > 1_000_000_000:  # an epoch time, not a delay
        return max(0.0, number - (time.time() if now is None else now))
    return max(0.0, number)


def provider_words(response: httpx.Response) -> str:
    """The provider's own explanation in an error answer: unscrubbed and UNCUT (cut it only
    after scrubbing, e.g. with ``ApiClient.shorten``), possibly empty."""
    try:
        body: Any = response.json()
    except (ValueError, UnicodeDecodeError):
        text = response.text.strip()
        if not text or text.startswith("<"):
            return response.reason_phrase
        return text
    return words_of(body).strip() or response.reason_phrase


def words_of(body: Any) -> str:
    """The human words in a JSON error value (a string, an object, a list of details)."""
    if isinstance(body, str):
        return body
    if isinstance(body, list):
        return "; ".join(w for w in (words_of(item) for item in body[:3]) if w)
    if not isinstance(body, dict):
        return ""
    for key in ("message", "error", "detail", "msg", "failure", "title", "status_msg",
                "base_resp"):
        value = body.get(key)
        if value:
            words = words_of(value)
            if words:
                code = body.get("code") or body.get("status")
                if isinstance(code, str) and code and code not in words:
                    return f"{code}: {words}"
                return words
    return ""


def error_code_of(body: Any) -> str:
    """A machine-readable error code from a JSON error body (``error.code``, ``code``...)."""
    if not isinstance(body, dict):
        return ""
    error = body.get("error")
    if isinstance(error, dict):
        for key in ("code", "type", "status"):
            value = error.get(key)
            if isinstance(value, str) and value:
                return value
    for key in ("code", "type", "error_code"):
        value = body.get(key)
        if isinstance(value, str) and value:
            return value
    return ""


def json_or_none(response: httpx.Response) -> Any:
    try:
        return response.json()
    except (ValueError, UnicodeDecodeError):
        return None


def mentions(text: str, *words: str) -> bool:
    lowered = text.lower()
    return any(word in lowered for word in words)


CONTENT_POLICY_WORDS = ("content policy", "content_policy", "moderation", "moderated",
                        "safety", "sensitive", "nsfw", "flagged", "inappropriate")


def _truncate(text: str) -> str:
    text = " ".join(text.split())
    if len(text) > MAX_MESSAGE_CHARS:
        return text[: MAX_MESSAGE_CHARS - 1] + "…"
    return text


def redact(text: str, secrets: Iterable[str]) -> str:
    """``text`` with every secret, and every run of 8+ consecutive characters of one,
    replaced by ``[redacted]``; letter case is ignored.

    The one scrub every adapter (``ApiClient.scrub``) and the mock adapter use. It covers a
    provider quoting our header back cut short, upper-cased, or one character short. Run it
    over the whole text, then cut: a cut first can leave a fragment it no longer knows.
    """
    grams: dict[int, set[str]] = {}
    for secret in secrets:
        lowered = secret.lower()
        if 0 < len(lowered) < SECRET_FRAGMENT_CHARS and not lowered.isspace():
            grams.setdefault(len(lowered), set()).add(lowered)  # a tiny key: whole only
        # A header value ("Bearer <key>") is cut at its spaces, so "bearer" alone is kept.
        for piece in lowered.split():
            size = SECRET_FRAGMENT_CHARS
            grams.setdefault(size, set()).update(
                piece[i: i + size] for i in range(len(piece) - size + 1))
    grams = {size: wanted for size, wanted in grams.items() if wanted}
    if not grams or not text:
        return text
    lowered = text.lower()
    if len(lowered) != len(text):  # a rare case mapping changes length (e.g. 'İ')
        lowered = "".join(c if len(c.lower()) != 1 else c.lower() for c in text)
    hidden = bytearray(len(text))
    for size, wanted in grams.items():
        alphabet = "".join(sorted({c for gram in wanted for c in gram}))
        # Only runs made of the secrets' characters can hold a fragment: find them at C
        # speed, then look inside the few that can.
        runs = re.compile(f"[{re.escape(alphabet)}]{{{size},}}")
        for run in runs.finditer(lowered):
            for i in range(run.start(), run.end() - size + 1):
                if lowered[i: i + size] in wanted:
                    hidden[i: i + size] = b"\x01" * size
    out: list[str] = []
    kept = 0
    for span in re.finditer(rb"\x01+", hidden):
        out.append(text[kept: span.start()])
        out.append(REDACTED)
        kept = span.end()
    out.append(text[kept:])
    return "".join(out)


def _host(url: httpx.URL | str) -> str:
    return urlsplit(str(url)).hostname or "?"


def _secret_variants(
    key: str, header_values: Iterable[str], existing: tuple[str, ...] = ()
) -> tuple[str, ...]:
    """Every spelling of a secret a provider might echo: raw, url-quoted, JSON-escaped,
    base64 (Basic auth), and the full header values. Longest first, so a header value is
    replaced whole before the key inside it."""
    variants = set(existing)
    variants.add(key)
    variants.add(quote(key, safe=""))
    variants.add(json.dumps(key)[1:-1])
    variants.add(base64.b64encode(key.encode()).decode())
    variants.update(v for v in header_values if v)
    return tuple(sorted((v for v in variants if v), key=len, reverse=True))


# -- parameters -----------------------------------------------------------------------------


def param_int(params: Mapping[str, Any], name: str) -> int | None:
    """An integer parameter; spreadsheets send 8.0 or "8". None when absent."""
    value = params.get(name)
    if value is None or value == "":
        return None
    if isinstance(value, bool):
        raise ValueError(f"{name} must be a number")
    number = float(value)
    if not number.is_integer():
        raise ValueError(f"{name} must be a whole number, not {value!r}")
    return int(number)


def param_str(params: Mapping[str, Any], name: str) -> str | None:
    value = params.get(name)
    if value is None:
        return None
    text = str(value).strip()
    return text or None


def param_bool(params: Mapping[str, Any], name: str) -> bool | None:
    value = params.get(name)
    if value is None or value == "":
        return None
    if isinstance(value, bool):
        return value
    if isinstance(value, int | float):
        return bool(value)
    return str(value).strip().lower() in ("1", "true", "yes", "y", "on")


def duration_problem(params: Mapping[str, Any], allowed: Iterable[int] | None = None,
                     lo: int | None = None, hi: int | None = None,
                     **also: Iterable[Any]) -> list[ParamProblem]:
    """Problems with ``params['duration']`` against a set or an integer range; ``also``:
    other fields whose values would fix it (e.g. a model that takes this duration)."""
    choices = tuple(allowed) if allowed is not None else tuple(range(lo or 1, (hi or 0) + 1))
    try:
        seconds = param_int(params, "duration")
    except ValueError as exc:
        return [ParamProblem.of(str(exc), duration=choices)]
    if seconds is None:
        return []
    if allowed is not None and seconds not in choices:
        return [ParamProblem.of(
            f"duration must be one of {', '.join(map(str, choices))} seconds",
            **also, duration=choices)]
    if lo is not None and hi is not None and not lo <= seconds <= hi:
        return [ParamProblem.of(f"duration must be {lo}-{hi} seconds", **also,
                                duration=choices)]
    return []


@dataclass(frozen=True)
class ImageInput:
    """A reference image: a public https URL as given, or bytes (from a path or data: URI).

    Attributes:
        url: the https URL, when the row gave one.
        data: the image bytes, when it gave a file or a data: URI.
        mime_type: the image's type, guessed from the name when not stated.
    """

    url: str | None
    data: bytes | None
    mime_type: str

    def b64(self) -> str:
        return base64.b64encode(self.data or b"").decode("ascii")

    def data_uri(self) -> str:
        return f"data:{self.mime_type};base64,{self.b64()}"

    def url_or_data_uri(self) -> str:
        return self.url or self.data_uri()


def image_kind(value: Any) -> str:
    """"url", "data" or "file" for a reference-image cell; "" when empty."""
    if value is None or str(value).strip() == "":
        return ""
    text = str(value).strip()
    if text.startswith("https://"):
        return "url"
    if text.startswith("data:"):
        return "data"
    return "file"


_DATA_URI = re.compile(r"^data:(?P<mime>[\w.+-]+/[\w.+-]+)?(?P<b64>;base64)?,(?P<data>.*)$",
                       re.DOTALL)


async def load_image(value: Any, title: str, pin: Any = None) -> ImageInput:
    """Read a reference image cell (https URL, data: URI or local file path).

    A local file is read once with the import's checks (a regular file, not through a
    link, an image signature, a size cap: intake/images.py) and, when the job recorded its
    sha256 at import (``params["image_sha256"]``, passed as ``pin``), refused if its bytes
    changed since: a file swapped after import is never sent to the provider.
    """
    text = str(value).strip()
    kind = image_kind(text)
    if kind == "url":
        mime = mimetypes.guess_type(urlsplit(text).path)[0] or "image/jpeg"
        return ImageInput(url=text, data=None, mime_type=mime)
    if kind == "data":
        match = _DATA_URI.match(text)
        if not match or not match.group("b64"):
            raise _bad_image(title, "the data: URI is not base64 image data")
        try:
            data = base64.b64decode(match.group("data"), validate=True)
        except (binascii.Error, ValueError):
            raise _bad_image(title, "the data: URI is not valid base64") from None
        return ImageInput(url=None, data=data, mime_type=match.group("mime") or "image/png")
    path = Path(text).expanduser()
    try:
        data = await asyncio.to_thread(read_pinned_image, path)
    except ImageProblem as problem:
        raise _bad_image(title, str(problem)) from None
    if isinstance(pin, str) and pin and hashlib.sha256(data).hexdigest() != pin.lower():
        raise _bad_image(title, f"{path.name!r} changed after the sheet was imported; "
                                "nothing of it was sent. Import the sheet again to use the "
                                "new file")
    mime = mimetypes.guess_type(path.name)[0] or "image/png"
    return ImageInput(url=None, data=data, mime_type=mime)


def _bad_image(title: str, why: str) -> ProviderError:
    return ProviderError(f"{title}: reference image unusable: {why}",
                         error_class=ErrorClass.PERMANENT, label=ErrorLabel.INVALID_INPUT)


async def gone_is_permanent(fetch: Awaitable[T]) -> T:
    """Await a re-poll made to refresh a link; a 404/410 there means the provider dropped
    the job and its video, which no retry of the download can bring back."""
    try:
        return await fetch
    except ProviderError as exc:
        if exc.status_code in (404, 410):
            raise ProviderError(
                f"{exc} (the provider no longer holds this job's video)",
                error_class=ErrorClass.PERMANENT, label=ErrorLabel.DOWNLOAD_FAILED,
                status_code=exc.status_code,
            ) from exc
        raise


def invalid_params(title: str, problems: list[str]) -> ProviderError:
    """The error for a row the provider would reject; raised before anything is sent."""
    return ProviderError(f"{title}: " + "; ".join(problems),
                         error_class=ErrorClass.PERMANENT, label=ErrorLabel.INVALID_INPUT)


def spec_problems(spec: ParamSpec, params: Mapping[str, Any], prompt: str) -> list[str]:
    """What ``spec`` alone says is wrong with a row; ``submit`` checks it before sending.

    The intake checks the same earlier (with the row number); this is the adapter's own
    guard so a row that skipped the intake cannot burn an attempt on a certain 400.
    """
    problems: list[str] = []
    model = param_str(params, "model")
    if model and spec.models and model not in spec.models:
        problems.append(f"unknown model {model!r} (known: {', '.join(spec.models)})")
    raw = params.get("duration")
    if raw not in (None, ""):
        try:
            if isinstance(raw, bool):
                raise TypeError
            seconds = float(raw)
        except (TypeError, ValueError):
            problems.append(f"duration must be a number, not {raw!r}")
        else:
            if spec.durations is not None:
                if seconds not in spec.durations:
                    allowed = ", ".join(f"{d:g}" for d in spec.durations)
                    problems.append(f"duration must be one of {allowed} seconds")
            elif not spec.duration_range[0] <= seconds <= spec.duration_range[1]:
                lo, hi = spec.duration_range
                problems.append(f"duration must be {lo:g}-{hi:g} seconds")
    ratio = param_str(params, "aspect_ratio")
    if ratio and spec.aspect_ratios and ratio not in spec.aspect_ratios:
        problems.append(f"aspect ratio must be one of {', '.join(spec.aspect_ratios)}")
    resolution = param_str(params, "resolution")
    if resolution and resolution not in spec.resolutions:
        if spec.resolutions:
            problems.append(f"resolution must be one of {', '.join(spec.resolutions)}")
        else:
            problems.append("this provider does not take a resolution")
    if params.get("seed") not in (None, "") and not spec.seed:
        problems.append("this provider takes no seed")
    if param_str(params, "negative_prompt") and not spec.negative_prompt:
        problems.append("this provider takes no negative prompt")
    if image_kind(params.get("image")) and not spec.reference_image:
        problems.append("this provider takes no reference image")
    if len(prompt) > spec.max_prompt_chars:
        problems.append(f"the prompt is {len(prompt)} characters; the limit is "
                        f"{spec.max_prompt_chars}")
    if not prompt.strip():
        problems.append("the prompt is empty")
    elif len(prompt.strip()) < spec.min_prompt_chars:
        problems.append(f"the prompt is {len(prompt.strip())} characters; the minimum is "
                        f"{spec.min_prompt_chars}")
    return problems
