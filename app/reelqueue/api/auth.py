"""Bearer tokens: 401 for a missing or unknown token, 403 for a scope it lacks; repeated
failures from one address are answered more and more slowly. A token is never logged."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from aiohttp import web
from aiohttp.typedefs import Middleware

from reelqueue.application.tokens import ClientTokens, TokenInfo

FREE_FAILURES = 5
FAILURE_WINDOW_SECONDS = 60.0
MAX_DELAY_SECONDS = 5.0
PUBLIC_PATHS = frozenset({"/v1/health", "/v1/openapi.json"})

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]
CLIENT_KEY = web.RequestKey("reelqueue.client", TokenInfo)


F = TypeVar("F", bound=Callable[..., Any])


def needs(scope: str) -> Callable[[F], F]:
    """Mark a handler with the scope a token needs to call it (unmarked: admin)."""
    def mark(handler: F) -> F:
        handler.scope = scope  # type: ignore[attr-defined]
        return handler
    return mark


class FailureThrottle:
    """Counts failed authentications per address in a sliding window."""

    def __init__(self) -> None:
        self._failures: dict[str, tuple[int, float]] = {}

    def delay(self, address: str) -> float:
        count, since = self._failures.get(address, (0, 0.0))
        if time.monotonic() - since > FAILURE_WINDOW_SECONDS or count < FREE_FAILURES:
            return 0.0
        return float(min(MAX_DELAY_SECONDS, 0.25 * 2 ** (count - FREE_FAILURES)))

    def failed(self, address: str) -> None:
        count, since = self._failures.get(address, (0, 0.0))
        now = time.monotonic()
        if now - since > FAILURE_WINDOW_SECONDS:
            count, since = 0, now
        self._failures[address] = (count + 1, since)
        if len(self._failures) > 10_000:  # bounded memory under a spray of addresses
            self._failures.clear()


def error(status: int, message: str, **extra: object) -> web.Response:
    return web.json_response({"error": message, **extra}, status=status)


def middleware(tokens: ClientTokens, throttle: FailureThrottle) -> Middleware:
    @web.middleware
    async def authenticate(request: web.Request, handler: Handler) -> web.StreamResponse:
        if request.path in PUBLIC_PATHS:
            return await handler(request)
        address = request.remote or "?"
        delay = throttle.delay(address)
        header = request.headers.get("Authorization", "")
        scheme, _, token = header.partition(" ")
        info = None
        if scheme.lower() == "bearer" and token:
            info = await tokens.verify(token.strip())
        if info is None:
            throttle.failed(address)
            if delay:
                await asyncio.sleep(delay)
            response = error(401, "A valid token is needed: 'Authorization: Bearer <token>' "
                                  "(make one with 'reelqueue tokens add NAME').")
            response.headers["WWW-Authenticate"] = 'Bearer realm="reelqueue"'
            return response
        scope = getattr(getattr(request.match_info, "handler", None), "scope", "admin")
        if not info.allows(scope):
            return error(403, f"The token {info.name!r} has scope {info.scope!r}; this "
                              f"needs {scope!r}.")
        request[CLIENT_KEY] = info
        return await handler(request)
    return authenticate
