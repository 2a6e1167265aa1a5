"""One account's HTTP connection to one provider (:class:`ApiClient`): the base URL
checked, each request sent exactly once (retrying is the engine's decision; a create whose
body may have gone out is never retried), the key only in our own requests, every error
text scrubbed of it, and downloads through :class:`VideoDownload`.

Nothing here logs a header, a body or a URL query (signed links carry credentials too).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Mapping
from typing import Any
from urllib.parse import urlsplit

import httpx2

from reelqueue.domain.errors import ErrorClass, ErrorLabel, InputError, ProviderError
from reelqueue.providers.adapters._download import LinkRefresher, VideoDownload
from reelqueue.providers.adapters._errors import provider_words, retry_after_of
from reelqueue.providers.adapters._redact import redact, secret_variants, shorten_text
from reelqueue.providers.base import ProviderConfig, classify_http_status
from reelqueue.providers.http import (
    HttpAnswerTooLarge,
    HttpSession,
    HttpTimeout,
    transport_failure,
)
from reelqueue.providers.httpx_session import (
    exchange_deadline,
    httpx_client_of,
    transport_error,
)
from reelqueue.providers.key_text import header_bytes, key_text_problem
from reelqueue.providers.registry import check_base_url

AuthHeaders = Callable[[str], Mapping[str, str]]


def bearer(key: str) -> Mapping[str, str]:
    return {"Authorization": f"Bearer {key}"}



MAX_API_ANSWER_BYTES = 64 * 1024 * 1024
"""What :meth:`ApiClient.request` reads of an answer at most (decoded). An API answer is a
few KiB, but a provider may echo the row's inputs in every poll answer, a reference image
sent inline among them (the import takes images up to 20 MB: 27 MB as base64). A plug-in's
session reads 4 MiB unless the plug-in asks for more (``HttpSession.request``)."""

class ApiClient:
    """One account's connection details for one provider, and the calls every adapter makes.

    Attributes:
        title: the provider's human name, used at the start of every error text.
        account: the account name (shown in reprs, never the key).
        base_url: the checked base URL, without a trailing slash.
    """

    def __init__(
        self,
        client: httpx2.AsyncClient | HttpSession,
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
        # ReelQueue's session is unwrapped here, so an adapter class may itself be a
        # ProviderInfo's factory (the tests' subclasses are).
        self._client = httpx_client_of(client)
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
            self._secrets = secret_variants(self._key, auth_headers(self._key).values())

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
        if (problem := key_text_problem(self._key)) is not None:
            # Stored before keys were checked (issue 22): it cannot be sent, so the account
            # pauses with the reason instead of every request failing with a traceback.
            raise ProviderError(
                f"{self.title}: the key stored for account {self.account!r} cannot be sent "
                f"({problem}). Remove the account and add it again with the right key.",
                error_class=ErrorClass.ACCOUNT, label=ErrorLabel.KEY_REJECTED)
        headers = dict(self._auth_headers(self._key))
        for value in headers.values():
            if value and value not in self._secrets:
                self.add_secret(value)  # a token derived from the key (a fresh JWT)
        return headers

    def add_secret(self, value: str) -> None:
        """Also scrub ``value`` (a token derived from the key, e.g. a signed JWT)."""
        self._secrets = secret_variants(value, (), self._secrets)

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
        max_bytes: int | None = None,
    ) -> httpx2.Response:
        """Send one request, once, and read its answer: at most ``max_bytes``
        (:data:`MAX_API_ANSWER_BYTES` when None); a longer one is refused unread, so a
        broken or hostile server cannot fill the memory. Transport failures become
        :class:`ProviderError`."""
        bound = MAX_API_ANSWER_BYTES if max_bytes is None else max_bytes
        merged = self.auth() if with_key else {}
        if headers:
            merged.update(headers)
        # Latin-1, as HTTP carries it: httpx encodes str values as ASCII only, which would
        # refuse a key with an accented letter that a provider may well accept.
        sent = header_bytes(merged)
        response, cut = await self._bounded(
            method, path, bound, headers=sent, json_body=json_body,
            params=params, files=files, during_create=during_create)
        if cut:
            raise transport_failure(HttpAnswerTooLarge(
                f"{self.title}: the answer was longer than {bound:,} bytes; it was not "
                "read."), during_create=during_create)
        return response

    async def get_bounded(self, path: str, max_bytes: int) -> tuple[httpx2.Response, bool]:
        """GET ``path`` once, reading at most ``max_bytes`` of its (decoded) body.

        Returns the answer fully read (so the error readers work on it) and whether its body
        was cut: a cut answer has an empty body and must not be read as JSON. Transport
        failures become :class:`ProviderError`, as in :meth:`request`."""
        return await self.read_bounded("GET", path, max_bytes)

    async def read_bounded(self, method: str, path: str, max_bytes: int, *,
                           json_body: Any = None) -> tuple[httpx2.Response, bool]:
        """:meth:`get_bounded` with another method and a JSON body: a read-only query
        sent as a POST (Runway's ``POST /v1/organization/usage``), never a create."""
        return await self._bounded(method, path, max_bytes, headers=header_bytes(self.auth()),
                                   json_body=json_body)

    async def _bounded(self, method: str, path: str, max_bytes: int, *,
                       headers: Any, json_body: Any = None,
                       params: Mapping[str, str | int] | None = None, files: Any = None,
                       during_create: bool = False) -> tuple[httpx2.Response, bool]:
        """One request; its answer read whole when its (decoded) body is at most
        ``max_bytes``, else cut (an empty body, True).

        The whole exchange ends within the client's connect plus read timeout (the
        engine's ``create_timeout_seconds``, which a create must fit in its lease by): the
        read timeout alone is per read, so an answer trickled a byte at a time would
        stretch it without end. Past it: a timeout, which for a create may have been sent.
        """
        total = exchange_deadline(self._client)
        try:
            async with asyncio.timeout(total):
                # Never follow a redirect with the key attached: httpx drops Authorization
                # on a cross-origin hop but keeps other auth headers (x-goog-api-key).
                async with self._client.stream(method, self.url(path), headers=headers,
                                               json=json_body, params=params, files=files,
                                               follow_redirects=False) as streamed:
                    chunks: list[bytes] = []
                    size, cut = 0, False
                    async for chunk in streamed.aiter_bytes():
                        size += len(chunk)
                        if size > max_bytes:
                            cut = True
                            break
                        chunks.append(chunk)
        except httpx2.HTTPError as exc:
            raise transport_error(exc, during_create=during_create) from exc
        except TimeoutError:
            raise transport_failure(HttpTimeout(
                f"{self.title}: the answer did not end within {total:g} s (the connect and "
                "read timeouts together)"), during_create=during_create) from None
        # The body is already decoded: the copy must not claim an encoding or a length.
        kept = [(k, v) for k, v in streamed.headers.multi_items()
                if k.lower() not in ("content-encoding", "content-length",
                                     "transfer-encoding")]
        body = b"" if cut else b"".join(chunks)
        return httpx2.Response(streamed.status_code, headers=kept, content=body,
                               request=streamed.request), cut

    # -- responses ------------------------------------------------------------------------

    def message(self, response: httpx2.Response, what: str = "") -> str:
        """A short, key-free text for an error answer: provider, status, provider's words."""
        detail = self.shorten(provider_words(response))
        head = f"{self.title}: {what + ': ' if what else ''}HTTP {response.status_code}"
        return f"{head}: {detail}" if detail else head

    def shorten(self, text: str) -> str:
        """A provider's free text (failure reasons), scrubbed whole, then cut to a sane
        length: cutting first could leave a piece of the key the scrub no longer knows."""
        return shorten_text(self.scrub(text.strip()))

    def http_error(
        self, response: httpx2.Response, *, during_create: bool = False, what: str = ""
    ) -> ProviderError:
        """The default mapping of an error answer (PROVIDERS.md 6d), Retry-After included."""
        return classify_http_status(
            response.status_code,
            self.message(response, what),
            retry_after=retry_after_of(response),
            during_create=during_create,
        )

    def json_of(self, response: httpx2.Response, *, during_create: bool = False) -> dict[str, Any]:
        """The JSON object of a 2xx answer; an unreadable one is a retryable provider error.

        An unreadable answer to a create may still mean the job was accepted (and billed),
        so it is marked ``body_maybe_sent``.
        """
        try:
            data = response.json()
        except (ValueError, UnicodeDecodeError, RecursionError):
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

    def stream_video(
        self,
        url: str | None,
        *,
        refresh: LinkRefresher | None = None,
        send_key_to_api_host: bool = False,
        accept: str | None = None,
    ) -> AsyncIterator[bytes]:
        """Yield the video at ``url``; on a dead link ask ``refresh`` once for a fresh one
        (:class:`VideoDownload`: the key goes only to the provider's own API host)."""
        return VideoDownload(self, self._client).stream(
            url, refresh=refresh, send_key_to_api_host=send_key_to_api_host, accept=accept)
