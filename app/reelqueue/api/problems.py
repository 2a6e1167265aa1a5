"""One error body for every answer that is not a success: RFC 9457
``application/problem+json`` with ``type``, ``title``, ``status`` and ``detail``.

``error`` repeats ``detail`` (the body's member before issue 22, kept so that clients
written against it go on working; RFC 9457 allows extension members), and a refusal may
add its own members (``fields`` per field, ``job_id``, ``waiting`` and ``limit``...).
aiohttp's own refusals (404 no route, 405 with ``Allow``, 413 past ``client_max_size``)
are turned into the same body by :func:`problem_errors`. See docs/api.md.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Callable
from http import HTTPStatus

from aiohttp import hdrs, web

log = logging.getLogger(__name__)

PROBLEM_TYPE = "application/problem+json"
Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def problem(status: int, detail: str, *, headers: dict[str, str] | None = None,
            **extra: object) -> web.Response:
    """A problem+json answer; ``extra`` members are added to the body."""
    try:
        title = HTTPStatus(status).phrase
    except ValueError:
        title = "Error"
    body = {"type": "about:blank", "title": title, "status": status, "detail": detail,
            "error": detail, **extra}
    return web.Response(text=json.dumps(body), status=status, content_type=PROBLEM_TYPE,
                        headers=headers)


class Refused(Exception):
    """A request refused with ``status`` (4xx) and a message naming what is wrong; the
    middleware answers it as a problem. Attributes: status, detail, extra, headers."""

    def __init__(self, status: int, detail: str, *, headers: dict[str, str] | None = None,
                 **extra: object) -> None:
        super().__init__(detail)
        self.status = status
        self.detail = detail
        self.extra = extra
        self.headers = headers


# Headers of aiohttp's HTTPException kept on the problem answer (405's Allow above all).
_KEPT_HEADERS = (hdrs.ALLOW, hdrs.RETRY_AFTER, hdrs.WWW_AUTHENTICATE, hdrs.CONTENT_RANGE)


@web.middleware
async def problem_errors(request: web.Request, handler: Handler) -> web.StreamResponse:
    """The outermost middleware: :class:`Refused` and aiohttp's HTTP errors become
    problems; a bug is logged (with its traceback, in the log only) and answered 500."""
    try:
        return await handler(request)
    except Refused as exc:
        return problem(exc.status, exc.detail, headers=exc.headers, **exc.extra)
    except web.HTTPException as exc:
        if exc.status < 400:
            raise
        if exc.content_type == PROBLEM_TYPE:
            raise
        kept = {str(name): exc.headers[name] for name in _KEPT_HEADERS if name in exc.headers}
        if exc.status == 405:
            kept.setdefault(str(hdrs.ALLOW), "")
        return problem(exc.status, _words(exc), headers=kept)
    except Exception:
        log.exception("API request %s %s failed", request.method, request.path)
        return problem(500, "Internal error; details are in the server's log.")


def _words(exc: web.HTTPException) -> str:
    if exc.status == 404:
        return "There is no such path in this API (see /v1/openapi.json)."
    if exc.status == 405:
        allowed = exc.headers.get(hdrs.ALLOW, "")
        return f"This path answers only {allowed or 'no method'}."
    if exc.status == 413:
        return f"The body is too large: {exc.text or exc.reason}"
    return exc.reason
