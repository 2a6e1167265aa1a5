"""Bearer tokens: 401 for a missing or unknown token, 403 for a scope it lacks. Failed
authentications are slowed down per client (an IPv6 /64 counts as one client) and over
all clients; the answers wait in line, so parallel guesses are no faster than serial
ones, and past a bounded number of waiting answers the answer is 429 at once. A token is
never logged."""

from __future__ import annotations

import asyncio
import dataclasses
import ipaddress
import math
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from aiohttp import web
from aiohttp.typedefs import Middleware

from reelqueue.api.problems import problem
from reelqueue.application.tokens import ClientTokens, TokenInfo

FREE_FAILURES = 5
"""Failures a client may make in a window before its answers are delayed."""
FAILURE_WINDOW_SECONDS = 60.0
MAX_DELAY_SECONDS = 5.0
GLOBAL_FREE_FAILURES = 50
"""Failures from all clients in a window before every failure waits its turn."""
GLOBAL_INTERVAL_SECONDS = 0.2
"""Past the global allowance, at most one failed authentication is answered per 0.2 s
(5 a second over all addresses)."""
MAX_CLIENTS = 10_000
"""Clients remembered; past it the least recently failing one is forgotten (LRU)."""
MAX_WAITING = 64
"""Failed requests waiting for their delayed 401 at once; past it: 429 + Retry-After."""
MAX_WAIT_SECONDS = 3.0
"""The longest a failed request is held; one whose turn is later is answered 429 +
Retry-After at once (and takes no turn): a client never waits into its own timeout."""
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


def client_key(address: str) -> str:
    """The unit counted: the IPv4 address, or the IPv6 /64 (one host usually holds the
    whole /64, so counting single IPv6 addresses would count nothing)."""
    try:
        ip = ipaddress.ip_address(address.split("%", 1)[0])
    except ValueError:
        return address
    if isinstance(ip, ipaddress.IPv6Address):
        if ip.ipv4_mapped is not None:
            return str(ip.ipv4_mapped)
        return str(ipaddress.IPv6Network((ip, 64), strict=False))
    return str(ip)


@dataclass
class _Failures:
    count: int
    since: float
    free_at: float


class FailureThrottle:
    """Failed authentications per client and in total, in sliding windows; every failure
    reserves the next free turn, so N parallel failures from one client wait 1, 2 ... N
    delays. Attributes: waiting (answers being delayed now)."""

    def __init__(self, *, clock: Callable[[], float] = time.monotonic,
                 max_clients: int = MAX_CLIENTS, max_waiting: int = MAX_WAITING,
                 global_free: int = GLOBAL_FREE_FAILURES) -> None:
        self._clock = clock
        self._global_free = global_free
        self._max_clients = max_clients
        self._max_waiting = max_waiting
        self._clients: OrderedDict[str, _Failures] = OrderedDict()
        self._global = _Failures(0, 0.0, 0.0)
        self.waiting = 0

    def __len__(self) -> int:
        return len(self._clients)

    def failed(self, address: str) -> float | None:
        """Record a failure; the seconds its 401 must wait, or None when too many answers
        already wait (answer 429)."""
        now = self._clock()
        key = client_key(address)
        client = self._clients.pop(key, None) or _Failures(0, now, now)
        self._clients[key] = client  # most recent last: the LRU end
        while len(self._clients) > self._max_clients:
            self._clients.popitem(last=False)
        before = (dataclasses.replace(client), dataclasses.replace(self._global))
        wait = max(self._reserve(client, now, FREE_FAILURES, _step),
                   self._reserve(self._global, now, self._global_free,
                                 lambda _: GLOBAL_INTERVAL_SECONDS))
        if wait > 0 and (self.waiting >= self._max_waiting or wait > MAX_WAIT_SECONDS + 1e-6):
            # Refused at once: the turn reserved is given back (the failure still counts,
            # so a client that keeps failing keeps being refused until its turn comes).
            client.free_at, self._global.free_at = before[0].free_at, before[1].free_at
            return None
        return wait

    def retry_after(self, address: str) -> int:
        """Whole seconds until ``address``'s (or everyone's) next turn, at least 1."""
        now = self._clock()
        client = self._clients.get(client_key(address))
        free_at = max(self._global.free_at, client.free_at if client else 0.0)
        return max(1, math.ceil(free_at - now))

    @staticmethod
    def _reserve(entry: _Failures, now: float, free: int,
                 step: Callable[[int], float]) -> float:
        if now - entry.since > FAILURE_WINDOW_SECONDS:
            entry.count, entry.since, entry.free_at = 0, now, now
        entry.count += 1
        if entry.count <= free:
            return 0.0
        start = max(now, entry.free_at)
        entry.free_at = start + step(entry.count - free)
        return entry.free_at - now


def _step(over: int) -> float:
    return float(min(MAX_DELAY_SECONDS, 0.25 * 2 ** min(over - 1, 16)))


def _unauthorized() -> web.Response:
    return problem(401, "A valid token is needed: 'Authorization: Bearer <token>' "
                        "(make one with 'reelqueue tokens add NAME').",
                   headers={"WWW-Authenticate": 'Bearer realm="reelqueue"'})


def middleware(tokens: ClientTokens, throttle: FailureThrottle) -> Middleware:
    @web.middleware
    async def authenticate(request: web.Request, handler: Handler) -> web.StreamResponse:
        if request.path in PUBLIC_PATHS:
            return await handler(request)
        address = request.remote or "?"
        header = request.headers.get("Authorization", "")
        scheme, _, token = header.partition(" ")
        info = None
        if scheme.lower() == "bearer" and token and token.isascii():
            info = await tokens.verify(token.strip())
        if info is None and not header.strip():
            # No credential at all guesses nothing: answered at once, not counted (the
            # slow-down is for wrong tokens).
            return _unauthorized()
        if info is None:
            wait = throttle.failed(address)
            if wait is None:
                seconds = throttle.retry_after(address)
                return problem(429, "Too many failed authentications; try again later.",
                               headers={"Retry-After": str(seconds)})
            if wait:
                throttle.waiting += 1
                try:
                    await asyncio.sleep(wait)
                finally:
                    throttle.waiting -= 1
            return _unauthorized()
        scope = getattr(getattr(request.match_info, "handler", None), "scope", "admin")
        if not info.allows(scope):
            return problem(403, f"The token {info.name!r} has scope {info.scope!r}; this "
                                f"needs {scope!r}.")
        request[CLIENT_KEY] = info
        return await handler(request)
    return authenticate
