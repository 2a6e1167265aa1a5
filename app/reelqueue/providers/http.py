"""ReelQueue's own HTTP session: what a provider plug-in sends its requests through.

A plug-in (docs/providers/writing.md) is built with an :class:`HttpSession` and never sees
a type of the HTTP library the engine happens to use: the engine hands every adapter of an
account one session over that account's connection pool (its timeouts, its pool size), and
a test hands it one over a fake. The session sends each request once (no retry: that is
the engine's decision, and a create must never be sent twice), follows no redirect (the
adapter sees the 3xx and decides), and bounds what it reads.

Exceptions (one tree; the adapter converts them with :func:`transport_failure`)::

    HttpTransportError          no answer came (the request may or may not have gone out)
     ├── HttpConnectError       the connection was never made: nothing was sent
     ├── HttpTimeout            no answer in time (the request may have been sent)
     └── HttpAnswerTooLarge     the answer was longer than the caller's bound
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterable, Iterator, Mapping
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from reelqueue.domain.errors import ErrorClass, ErrorLabel, ProviderError

DEFAULT_MAX_ANSWER_BYTES = 4 * 1024 * 1024
"""What :meth:`HttpSession.request` reads of an answer at most (a JSON answer of a video
API is a few kilobytes; a video is read with :meth:`HttpSession.stream`)."""


class HttpTransportError(Exception):
    """The provider could not be reached or did not answer.
    The request may have been sent (see ``nothing_sent``)."""

    nothing_sent = False
    timed_out = False

    def __init__(self, message: str | None = None) -> None:
        super().__init__(message or " ".join((self.__doc__ or "").split()))


class HttpConnectError(HttpTransportError):
    """Could not connect to the provider (network down or address wrong).
    Nothing was sent."""

    nothing_sent = True


class HttpTimeout(HttpTransportError):
    """The provider did not answer in time.
    The request may have been sent."""

    timed_out = True


class HttpAnswerTooLarge(HttpTransportError):
    """The provider's answer was longer than ReelQueue reads.
    The request was sent and answered; the answer was not read."""


class Headers(Mapping[str, str]):
    """Response headers, looked up without regard to case (repeated headers joined by
    ", ", as HTTP allows)."""

    __slots__ = ("_items",)

    def __init__(self, items: Iterable[tuple[str, str]] = ()) -> None:
        merged: dict[str, str] = {}
        for name, value in items:
            key = name.lower()
            merged[key] = f"{merged[key]}, {value}" if key in merged else value
        self._items = merged

    def __getitem__(self, name: str) -> str:
        return self._items[name.lower()]

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and name.lower() in self._items

    def __iter__(self) -> Iterator[str]:
        return iter(self._items)

    def __len__(self) -> int:
        return len(self._items)

    def __repr__(self) -> str:  # names only: a header may carry a signed value
        return f"Headers({sorted(self._items)})"


@dataclass(frozen=True)
class HttpResponse:
    """A whole answer, read (at most the bound the request gave).

    Attributes:
        status_code: the HTTP status.
        headers: the answer's headers (case-insensitive).
        content: the body's bytes.
        url: the address that answered (a signed link may carry a credential: never log it).
    """

    status_code: int
    headers: Headers
    content: bytes = field(repr=False)
    url: str = field(repr=False)

    @property
    def text(self) -> str:
        return self.content.decode("utf-8", errors="replace")

    def json(self) -> Any:
        """The body as JSON; ValueError when it is not JSON, or nests deeper than the
        parser goes (a hostile answer: RecursionError is not left to reach a plug-in)."""
        import json

        try:
            return json.loads(self.content)
        except RecursionError:
            raise ValueError("the answer's JSON nests too deep to read") from None


class HttpStream(Protocol):
    """An answer whose body is read piece by piece (a video)."""

    @property
    def status_code(self) -> int: ...

    @property
    def headers(self) -> Headers: ...

    @property
    def url(self) -> str: ...

    def aiter_bytes(self) -> AsyncIterator[bytes]:
        """The body's pieces; raises :class:`HttpTransportError` when the connection
        breaks on the way."""
        ...


@runtime_checkable
class HttpSession(Protocol):
    """One account's connection to its provider, as ReelQueue gives it to an adapter.

    Every call may raise :class:`HttpTransportError` (and only that, for a failure of the
    connection); an HTTP error status is an answer, not an exception.
    """

    async def request(self, method: str, url: str, *,
                      headers: Mapping[str, str] | None = None,
                      params: Mapping[str, str] | None = None,
                      json: Any = None, content: bytes | None = None,
                      max_bytes: int = DEFAULT_MAX_ANSWER_BYTES) -> HttpResponse:
        """Send one request and read its whole answer (at most ``max_bytes``, else
        :class:`HttpAnswerTooLarge`)."""
        ...

    def stream(self, method: str, url: str, *,
               headers: Mapping[str, str] | None = None,
               params: Mapping[str, str] | None = None,
               ) -> AbstractAsyncContextManager[HttpStream]:
        """Send one request; the answer's body is read inside the ``async with``."""
        ...


def transport_failure(exc: HttpTransportError, *, during_create: bool) -> ProviderError:
    """The :class:`ProviderError` of a request that got no answer: retryable, and for a
    create, "may have been sent" unless the connection was never made (a create that may
    have been sent is never sent again: the engine looks for it instead)."""
    if isinstance(exc, HttpAnswerTooLarge):
        return ProviderError(str(exc), error_class=ErrorClass.PERMANENT,
                             label=ErrorLabel.SUBMIT_UNKNOWN if during_create
                             else ErrorLabel.PROVIDER_ERROR,
                             body_maybe_sent=during_create)
    return ProviderError(
        str(exc), error_class=ErrorClass.RETRYABLE,
        label=ErrorLabel.TIMED_OUT if exc.timed_out else ErrorLabel.PROVIDER_ERROR,
        body_maybe_sent=during_create and not exc.nothing_sent)
