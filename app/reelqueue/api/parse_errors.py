"""A request aiohttp's parser refuses (before any route or middleware sees it) answered as
the API's problem document, not aiohttp's ``text/plain``: a request line over
:data:`MAX_REQUEST_LINE` bytes is 414, a header over :data:`MAX_HEADER_FIELD` bytes (or
too many headers) 431, any other malformed request 400. The bytes of the request are never
quoted back (they may hold a token)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from aiohttp import web
from aiohttp.http_exceptions import BadHttpMessage, HttpProcessingError, LineTooLong
from aiohttp.web_protocol import RequestHandler
from aiohttp.web_request import BaseRequest

from reelqueue.api.problems import problem

MAX_REQUEST_LINE = 8192
"""The longest request line (method, target, version) taken: 8 KiB."""
MAX_HEADER_FIELD = 8190
"""The longest header line taken (aiohttp's default). It differs from
:data:`MAX_REQUEST_LINE` on purpose: the parser's error carries only the limit it
passed, which tells a long request line (414) from a long header (431)."""


def parse_error_status(exc: BaseException | None, status: int, max_line: int) -> int:
    """The status for a request the parser refused with ``exc`` (aiohttp's ``status``)."""
    if isinstance(exc, LineTooLong):
        return 414 if len(exc.args) > 1 and exc.args[1] == max_line else 431
    if isinstance(exc, BadHttpMessage) and "headers" in str(exc.message).lower():
        return 431  # "Too many headers"
    if isinstance(exc, HttpProcessingError) and 400 <= exc.code < 500:
        return exc.code
    return status


_WORDS = {
    414: f"The request line is longer than {MAX_REQUEST_LINE:,} bytes: shorten the path "
         "and query (send long values in a JSON body).",
    431: f"A request header is longer than {MAX_HEADER_FIELD:,} bytes, or there are too "
         "many headers: send fewer or shorter ones.",
    400: "The request is not well-formed HTTP/1.1.",
}


class ProblemRequestHandler(RequestHandler):
    """aiohttp's handler whose parse errors are answered as problem documents."""

    __slots__ = ()

    def handle_error(self, request: BaseRequest, status: int = 500,
                     exc: BaseException | None = None,
                     message: str | None = None) -> web.StreamResponse:
        # The base class logs (through the API's filter: one line, no bytes quoted) and
        # refuses when a response was already sent; its text/plain answer is dropped.
        super().handle_error(request, status, exc, message)
        status = parse_error_status(exc, status, self.max_line_size)
        if status >= 500:
            answer = problem(status, "Internal error; details are in the server's log.")
        else:
            answer = problem(status, _WORDS.get(status, _WORDS[400]))
        answer.force_close()
        return answer


def problem_handlers(server: web.Server) -> Callable[[], RequestHandler]:
    """A factory like ``server`` itself (``server()`` makes aiohttp's handler) making
    :class:`ProblemRequestHandler` with the same arguments."""
    kwargs: dict[str, Any] = dict(server._kwargs)  # the runner's handler arguments
    loop: asyncio.AbstractEventLoop = server._loop

    def make() -> RequestHandler:
        return ProblemRequestHandler(server, loop=loop, **kwargs)
    return make
