"""The engine's side of :mod:`reelqueue.providers.http`: :class:`HttpxSession`, ReelQueue's
HTTP session over one account's ``httpx2.AsyncClient``, and the conversion of httpx2's
transport failures.

Only this module and the built-in adapters' shared client (``adapters/_client.py``,
``adapters/_download.py``) name the HTTP library; a plug-in sees the session protocol
only. The built-in adapters keep their httpx2 client (:func:`httpx_client_of`): moving nine
adapters and their redirect checks, byte caps and key scrubbing onto the protocol is a
rewrite with no gain for their users (docs/providers/writing.md says so).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from typing import Any
from urllib.parse import urlsplit

import httpx2

from reelqueue.domain.errors import ProviderError
from reelqueue.providers.http import (
    DEFAULT_MAX_ANSWER_BYTES,
    Headers,
    HttpAnswerTooLarge,
    HttpConnectError,
    HttpResponse,
    HttpSession,
    HttpTimeout,
    HttpTransportError,
    transport_failure,
)

# What each httpx transport failure means, in the user's words (not "ConnectError").
_TRANSPORT_WORDS = {
    "ConnectError": "Could not connect to the provider (network down or address wrong)",
    "ConnectTimeout": "The provider did not accept the connection in time",
    "ReadTimeout": "The provider stopped answering (timed out waiting for a reply)",
    "WriteTimeout": "Timed out sending the request to the provider",
    "PoolTimeout": "Timed out waiting for a free connection to the provider",
    "ReadError": "The connection to the provider broke while reading its answer",
    "WriteError": "The connection to the provider broke while sending the request",
    "RemoteProtocolError": "The provider closed the connection or sent an unreadable answer",
    "ProxyError": "The proxy refused the connection to the provider",
}


def session_error(exc: httpx2.HTTPError | httpx2.InvalidURL) -> HttpTransportError:
    """ReelQueue's transport error for an httpx2 failure: a connect error or a connect
    timeout means nothing was sent; anything later may have delivered the request."""
    words = _TRANSPORT_WORDS.get(type(exc).__name__, "The connection to the provider failed")
    if isinstance(exc, httpx2.ConnectError | httpx2.ConnectTimeout | httpx2.InvalidURL
                  | httpx2.UnsupportedProtocol):
        error: HttpTransportError = HttpConnectError(words)
        if isinstance(exc, httpx2.ConnectTimeout):
            error.timed_out = True
        return error
    if isinstance(exc, httpx2.TimeoutException):
        return HttpTimeout(words)
    return HttpTransportError(words)


def exchange_deadline(client: httpx2.AsyncClient) -> float | None:
    """The longest one request and its whole answer may take: the client's connect plus
    read timeout (None when either is unbounded). The read timeout alone is per read, so
    an answer trickled a byte at a time would stretch it without end."""
    timeout = client.timeout
    if timeout.connect is None or timeout.read is None:
        return None
    return timeout.connect + timeout.read


def _check_address(url: str) -> None:
    """HttpConnectError (nothing sent) for a URL that names no address (a bracket left
    open, a port out of range): a provider's link is outside input."""
    try:
        urlsplit(url).port  # noqa: B018 - read to raise on a port out of range
    except ValueError:
        raise HttpConnectError("The address is not a valid URL; nothing was sent.") from None


def transport_error(exc: httpx2.HTTPError, *, during_create: bool) -> ProviderError:
    """Convert an httpx transport failure, deciding whether a create body may have gone
    out (the same words and classes a plug-in gets through :func:`transport_failure`)."""
    return transport_failure(session_error(exc), during_create=during_create)


class _HttpxStream:
    """:class:`~reelqueue.providers.http.HttpStream` over an httpx2 streamed answer."""

    def __init__(self, response: httpx2.Response) -> None:
        self._response = response
        self.headers = Headers(response.headers.multi_items())

    @property
    def status_code(self) -> int:
        return self._response.status_code

    @property
    def url(self) -> str:
        return str(self._response.url)

    async def aiter_bytes(self) -> AsyncIterator[bytes]:
        try:
            async for chunk in self._response.aiter_bytes():
                yield chunk
        except httpx2.HTTPError as exc:
            raise session_error(exc) from exc


def _params(params: Mapping[str, str] | None) -> dict[str, str] | None:
    # None, not {}: httpx2 rebuilds a URL's query from any params given, and a signed
    # link's query must reach its host byte for byte.
    return dict(params) if params else None


class HttpxSession:
    """ReelQueue's :class:`~reelqueue.providers.http.HttpSession` over an httpx2 client
    (the engine's per-account client, or a test's client on a MockTransport).

    Attributes:
        client: the httpx2 client (the built-in adapters use it directly).
    """

    def __init__(self, client: httpx2.AsyncClient) -> None:
        self.client = client

    async def request(self, method: str, url: str, *,
                      headers: Mapping[str, str] | None = None,
                      params: Mapping[str, str] | None = None,
                      json: Any = None, content: bytes | None = None,
                      max_bytes: int = DEFAULT_MAX_ANSWER_BYTES) -> HttpResponse:
        # The whole exchange within the connect plus read timeout (as the built-in
        # adapters' ApiClient): an answer trickled a byte at a time would stretch the
        # per-read timeout without end.
        _check_address(url)
        total = exchange_deadline(self.client)
        try:
            async with asyncio.timeout(total), self.client.stream(
                    method, url, headers=dict(headers or {}), params=_params(params),
                    json=json, content=content) as answer:
                body = bytearray()
                async for chunk in answer.aiter_bytes():
                    body += chunk
                    if len(body) > max_bytes:
                        raise HttpAnswerTooLarge(
                            f"The provider's answer was longer than {max_bytes:,} bytes; "
                            "it was not read.")
                return HttpResponse(answer.status_code,
                                    Headers(answer.headers.multi_items()), bytes(body),
                                    str(answer.url))
        except (httpx2.HTTPError, httpx2.InvalidURL) as exc:
            raise session_error(exc) from exc
        except TimeoutError:
            raise HttpTimeout(f"The provider's answer did not end within {total:g} s (the "
                              "connect and read timeouts together).") from None

    @asynccontextmanager
    async def stream(self, method: str, url: str, *,
                     headers: Mapping[str, str] | None = None,
                     params: Mapping[str, str] | None = None,
                     ) -> AsyncIterator[_HttpxStream]:
        _check_address(url)
        try:
            async with self.client.stream(method, url, headers=dict(headers or {}),
                                          params=_params(params)) as answer:
                yield _HttpxStream(answer)
        except (httpx2.HTTPError, httpx2.InvalidURL) as exc:
            raise session_error(exc) from exc

    def __repr__(self) -> str:
        return "HttpxSession()"


def httpx_client_of(session: HttpSession | httpx2.AsyncClient) -> httpx2.AsyncClient:
    """The httpx2 client a built-in adapter sends with: the one under ReelQueue's own
    session (or a client given directly, as the built-ins' own tests do). TypeError for a
    session of another kind: the built-ins need the engine's pool."""
    if isinstance(session, httpx2.AsyncClient):
        return session
    if isinstance(session, HttpxSession):
        return session.client
    raise TypeError(f"the built-in adapters need ReelQueue's own HTTP session, "
                    f"not {type(session).__name__}")


def session_of(client: httpx2.AsyncClient) -> HttpSession:
    """The session an adapter is built with, over ``client``."""
    return HttpxSession(client)
