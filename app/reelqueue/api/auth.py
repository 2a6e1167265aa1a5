"""Bearer tokens: 401 for a missing or unknown token, 403 for a scope it lacks. Failed
authentications are slowed down per client (an IPv6 /64 counts as one client) and over
all clients; the answers wait in line, so parallel guesses are no faster than serial
ones, and past a bounded number of waiting answers the answer is 429 at once. A token is
never logged.

The client's throttle comes *before* its token is checked: a client past its free
failures takes its turn first (or is answered 429 without its token being looked at), so
a right guess is answered no sooner than a wrong one and a refused request checks nothing.
The all-clients throttle stays after the check: before it, anyone failing from many
addresses would hold every valid client back."""

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
from reelqueue.application.tokens import SCOPES, ClientTokens, TokenInfo

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
PUBLIC_PATHS = frozenset({"/v1/health", "/v1/openapi.json", "/"})
PUBLIC_PREFIXES = ("/static/", "/links/")
"""The dashboard's page and files (no secret in them: the page asks for a token), and
the short-lived links (the random link is the credential, for one file only)."""


def is_public(path: str) -> bool:
    """Answered without a token: health, the document, the page and the links."""
    return path in PUBLIC_PATHS or path.startswith(PUBLIC_PREFIXES)

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

    def before_check(self, address: str) -> float | None:
        """Called before ``address``'s token is checked. 0.0: check it now (the client is
        within its free failures); seconds: the client is throttled and must wait that
        turn before its token is checked (the turn counts as a failure until
        :meth:`passed` gives it back); None: answer 429 without checking the token."""
        now = self._clock()
        key = client_key(address)
        client = self._clients.get(key)
        if client is None or now - client.since > FAILURE_WINDOW_SECONDS \
                or client.count < FREE_FAILURES:
            return 0.0
        self._clients.move_to_end(key)
        before = client.free_at
        wait = self._reserve(client, now, FREE_FAILURES, _step)
        if self.waiting >= self._max_waiting or wait > MAX_WAIT_SECONDS + 1e-6:
            client.free_at = before  # the turn is given back; the failure still counts
            return None
        return wait

    def failed_in_turn(self, address: str) -> float | None:
        """A token checked in its turn (:meth:`before_check`) was wrong: the client's
        failure is already counted; the all-clients wait, or None (answer 429)."""
        del address
        now = self._clock()
        before = self._global.free_at
        wait = self._reserve(self._global, now, self._global_free,
                             lambda _: GLOBAL_INTERVAL_SECONDS)
        if wait > 0 and (self.waiting >= self._max_waiting or wait > MAX_WAIT_SECONDS + 1e-6):
            self._global.free_at = before
            return None
        return wait

    def passed(self, address: str) -> None:
        """A token checked in its turn was right: its turn is not a failure."""
        client = self._clients.get(client_key(address))
        if client is not None and client.count > 0:
            client.count -= 1

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


def _unknown_scope(info: TokenInfo) -> web.Response:
    name, scope = str(info.name)[:100], str(info.scope)[:40]
    return problem(403, f"The token {name!r} has the scope {scope!r}, which this server "
                        f"does not know (one of {', '.join(SCOPES)}), so it grants nothing: "
                        f"revoke it ('reelqueue tokens revoke NAME') and make a new one "
                        "('reelqueue tokens add NAME --scope SCOPE').")


def _too_many(throttle: FailureThrottle, address: str) -> web.Response:
    return problem(429, "Too many failed authentications; try again later.",
                   headers={"Retry-After": str(throttle.retry_after(address))})


async def _hold(throttle: FailureThrottle, seconds: float) -> None:
    if seconds <= 0:
        return
    throttle.waiting += 1
    try:
        await asyncio.sleep(seconds)
    finally:
        throttle.waiting -= 1


ConnectionNotice = Callable[[web.BaseRequest, bool], None]
"""Told of every request, and whether it came with a valid token (the connection's trust:
api/connections.py)."""


def _no_notice(request: web.BaseRequest, trusted: bool) -> None:
    del request, trusted


def middleware(tokens: ClientTokens, throttle: FailureThrottle,
               notice: ConnectionNotice = _no_notice) -> Middleware:
    @web.middleware
    async def authenticate(request: web.Request, handler: Handler) -> web.StreamResponse:
        notice(request, False)
        if is_public(request.path):
            return await handler(request)
        address = request.remote or "?"
        header = request.headers.get("Authorization", "")
        if not header.strip():
            # No credential at all guesses nothing: answered at once, not counted (the
            # slow-down is for wrong tokens).
            return _unauthorized()
        # The client's throttle first: a throttled client's token is not checked until
        # its turn, and not at all when it is refused (429).
        turn = throttle.before_check(address)
        if turn is None:
            return _too_many(throttle, address)
        await _hold(throttle, turn)
        scheme, _, token = header.partition(" ")
        info = None
        if scheme.lower() == "bearer" and token and token.isascii():
            info = await tokens.verify(token.strip())
        if info is None:
            wait = throttle.failed_in_turn(address) if turn else throttle.failed(address)
            if wait is None:
                return _too_many(throttle, address)
            await _hold(throttle, wait)
            return _unauthorized()
        if turn:
            throttle.passed(address)
        if info.scope not in SCOPES:
            # The team database is not trusted (invariant 15): a row with a scope this
            # server does not know grants nothing, and is no server error either.
            return _unknown_scope(info)
        notice(request, True)  # a valid token: its connection is trusted
        scope = getattr(getattr(request.match_info, "handler", None), "scope", "admin")
        if not info.allows(scope):
            return problem(403, f"The token {info.name!r} has scope {info.scope!r}; this "
                                f"needs {scope!r}.")
        request[CLIENT_KEY] = info
        return await handler(request)
    return authenticate
