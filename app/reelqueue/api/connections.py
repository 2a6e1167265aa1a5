"""Bounded connections for the API's listener: a cap on open connections and on TLS
handshakes in progress, a handshake timeout and an idle timeout.

aiohttp's ``TCPSite`` hands every accepted socket to ``loop.create_server(ssl=...)``, which
gives the application no view of a connection until its handshake is done, so 4,000
sockets that never send a ClientHello cost memory and nothing caps them. Here each
accepted socket first meets a :class:`Gate` (a small protocol in front of aiohttp's
``RequestHandler``): it counts the socket, starts TLS itself (``loop.start_tls``, with a
timeout), then hands the secured transport to aiohttp and relays the protocol calls.

Past a cap the connections still before or in their handshake are evicted first (the
oldest of the client holding the most): a client that finished its handshake is never
dropped for a newer stranger, and a flood from one address evicts its own sockets. A
connection that sent nothing for ``idle_seconds`` is closed, unless its response streams
(SSE, a video: :meth:`Connections.exempt`); aiohttp's own keep-alive timeout closes one
idle between requests.

Trust (issue 34): a TLS handshake needs no token, so 1,024 handshakes from five loopback
addresses once filled the cap and a client with a valid token was refused 36 times in 37.
A connection becomes *trusted* after one request with a valid token
(:meth:`Connections.notice`). Untrusted connections never take the ``trusted_reserve``
share of the cap, are capped per address (``max_per_address``; an IPv6 /64 is one
address) and per subnet (``max_per_subnet``: IPv4 /24, IPv6 /64), must send a first
request within ``first_request_seconds`` of their handshake, and are the ones evicted at
a cap: those still in their handshake first, then the oldest of the address holding the
most. A newcomer whose own address holds the most is refused before its handshake
(cheap) rather than evicting another's. Trusted connections are exempt from the
per-address and per-subnet caps and are never evicted for a newcomer.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import ipaddress
import logging
import ssl
import sys
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from aiohttp import web

from reelqueue.api.auth import client_key
from reelqueue.api.parse_errors import problem_handlers

try:
    import resource
except ImportError:  # Windows: no RLIMIT_NOFILE (the C runtime's own limit applies)
    resource = None  # type: ignore[assignment]

log = logging.getLogger(__name__)

FD_RESERVE = 256
"""Descriptors kept for the journal, logs, videos being read and the engine's clients."""


@dataclass(frozen=True)
class ConnectionLimits:
    """Attributes: max_connections (open, SSE streams included), max_handshakes (TLS
    handshakes in progress), handshake_seconds, idle_seconds (nothing received),
    trusted_reserve (connections only trusted ones may hold: untrusted ones stop at
    max_connections - trusted_reserve; None: an eighth of max_connections),
    max_per_address and max_per_subnet (untrusted
    connections of one address, an IPv6 /64, and of one IPv4 /24 or IPv6 /64),
    first_request_seconds (an untrusted connection sends its first request within this
    long after its handshake, or is closed)."""

    max_connections: int = 1024
    max_handshakes: int = 64
    handshake_seconds: float = 10.0
    idle_seconds: float = 60.0
    trusted_reserve: int | None = None
    max_per_address: int = 32
    max_per_subnet: int = 128
    first_request_seconds: float = 10.0

    def reserve(self) -> int:
        """Connections kept for trusted ones (default: an eighth of the cap, 128 of
        1,024)."""
        if self.trusted_reserve is None:
            return self.max_connections // 8
        return self.trusted_reserve

    def untrusted_cap(self) -> int:
        """Open untrusted connections at most (at least 1)."""
        return max(1, self.max_connections - self.reserve())

    def problems(self) -> list[str]:
        """What is wrong with these numbers, as the serve options' words."""
        found = []
        for name in ("max_connections", "max_handshakes", "max_per_address",
                     "max_per_subnet"):
            if getattr(self, name) < 1:
                found.append(f"--{name.replace('_', '-')} must be at least 1")
        if not 0 <= self.reserve() < max(1, self.max_connections):
            found.append("--trusted-reserve must be at least 0 and below "
                         "--max-connections")
        for name in ("handshake_seconds", "idle_seconds", "first_request_seconds"):
            value = getattr(self, name)
            if not 0 < value <= 3600:
                found.append(f"--{name.replace('_', '-')} must be above 0 and at most 3600")
        return found


def open_files_limit() -> tuple[int, int, int]:
    """RLIMIT_NOFILE: (soft before, soft now, hard); the soft limit is raised to the hard
    one where the OS allows it (an unlimited hard limit: to 65,536). Without the
    resource module (Windows): 8192 for all three (the socket limit select() does not
    bind on the Proactor loop)."""
    if sys.platform == "win32" or resource is None:
        return 8192, 8192, 8192
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    wanted = hard if hard != resource.RLIM_INFINITY else max(soft, 65_536)
    now = soft
    if soft != resource.RLIM_INFINITY and soft < wanted:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (wanted, hard))
            now = wanted
        except (ValueError, OSError):
            log.info("the open-files limit stays at %s", soft)
    return soft, now, hard


def fitted(limits: ConnectionLimits, open_files: int) -> ConnectionLimits:
    """``limits`` with the connection cap lowered to what the open-files limit allows."""
    room = max(16, open_files - FD_RESERVE)
    if limits.max_connections <= room:
        return limits
    return dataclasses.replace(limits, max_connections=room,
                               max_handshakes=min(limits.max_handshakes, room),
                               trusted_reserve=min(limits.reserve(), room // 4))


def subnet_key(client: str) -> str:
    """The subnet a client (an IPv4 address, an IPv6 /64) is counted in: its IPv4 /24, or
    the /64 itself."""
    try:
        ip = ipaddress.ip_address(client)
    except ValueError:
        return client  # an IPv6 /64 (already a network) or "?"
    return str(ipaddress.ip_network((ip, 24), strict=False))


class Connections:
    """The gates of one listener. Attributes: limits, gates (accepted, not yet closed),
    evicted (how many were closed to make room), timed_out (idle or handshake)."""

    def __init__(self, limits: ConnectionLimits) -> None:
        self.limits = limits
        self.gates: dict[Gate, None] = {}  # insertion order: oldest first
        self.evicted = 0
        self.timed_out = 0
        self._streaming: weakref.WeakSet[asyncio.BaseTransport] = weakref.WeakSet()
        self._by_transport: weakref.WeakKeyDictionary[asyncio.BaseTransport, Gate] = (
            weakref.WeakKeyDictionary())
        self._sweeper: asyncio.Task[None] | None = None

    def handshaking(self) -> list[Gate]:
        return [gate for gate in self.gates if not gate.opened]

    def untrusted(self) -> list[Gate]:
        return [gate for gate in self.gates if not gate.trusted]

    def admit(self, gate: Gate) -> bool:
        """Count ``gate`` (a newcomer: untrusted); evict to stay under the caps. False:
        ``gate`` itself is refused (before any handshake).

        At the handshake cap the one evicted is the oldest handshake of the client (an
        address, an IPv6 /64) that holds the most handshakes: a flood from one place
        evicts its own sockets, not the handshake of another client arriving meanwhile.
        At the per-address cap the newcomer is refused; at the per-subnet and the
        untrusted caps an untrusted connection of the address holding the most is
        evicted (its handshakes first), unless that is the newcomer's own address and
        it has no handshake to lose: then the newcomer is refused (before its handshake:
        cheap). A trusted connection is never evicted."""
        limits = self.limits
        if gate.tls and len(self.handshaking()) >= limits.max_handshakes:
            self._evict_one(self.handshaking(), None)
        untrusted = self.untrusted()
        own = [other for other in untrusted if other.client == gate.client]
        if len(own) >= limits.max_per_address:
            return self._refuse()
        same_subnet = [other for other in untrusted if other.subnet == gate.subnet]
        if len(same_subnet) >= limits.max_per_subnet \
                and not self._evict_one(same_subnet, gate.client):
            return self._refuse()
        if (len(self.untrusted()) >= limits.untrusted_cap()
                or len(self.gates) >= limits.max_connections) \
                and not self._evict_one(self.untrusted(), gate.client):
            return self._refuse()
        self.gates[gate] = None
        return True

    def _refuse(self) -> bool:
        self.evicted += 1
        return False

    def _evict_one(self, candidates: list[Gate], newcomer: str | None) -> bool:
        """Close one of ``candidates`` (untrusted ones only) held by the client that holds
        the most of them, its oldest still in a handshake first, else its oldest. With
        ``newcomer`` (the arriving client): when that is the newcomer's own client, only
        one of its handshakes goes (a flood from one place evicts its own sockets, never
        a connection of its that already finished); a client holding no more than the
        newcomer loses nothing, so a flood's newcomers never evict a smaller client's
        handshake. False: nothing was closed."""
        by_client: dict[str, list[Gate]] = {}
        for candidate in candidates:
            if not candidate.trusted:
                by_client.setdefault(candidate.client, []).append(candidate)
        if not by_client:
            return False
        held = by_client.get(newcomer, []) if newcomer is not None else []
        if newcomer is not None and held and len(held) >= max(map(len, by_client.values())):
            victims = held
            waiting = [gate for gate in victims if not gate.opened]
            if not waiting:
                return False
        else:
            victims = max(by_client.values(), key=len)
            if newcomer is not None and len(held) >= len(victims):
                return False
            waiting = [gate for gate in victims if not gate.opened]
        (waiting or victims)[0].close(evicted=True)
        return True

    def notice(self, request: web.BaseRequest, trusted: bool) -> None:
        """A request came on ``request``'s connection (it met its first-request
        deadline); ``trusted``: with a valid token (the connection is trusted from now)."""
        gate = self._by_transport.get(request.transport) if request.transport else None
        if gate is not None:
            gate.requested = True
            gate.trusted = gate.trusted or trusted

    def forget(self, gate: Gate) -> None:
        self.gates.pop(gate, None)

    def opened(self, gate: Gate, transport: asyncio.BaseTransport) -> None:
        """``gate``'s handshake is done: its requests come on ``transport``."""
        self._by_transport[transport] = gate

    def exempt(self, request: web.Request) -> None:
        """The request's response streams: its connection is not closed as idle."""
        if request.transport is not None:
            self._streaming.add(request.transport)

    def is_streaming(self, transport: asyncio.BaseTransport | None) -> bool:
        return transport is not None and transport in self._streaming

    def start(self) -> None:
        self._sweeper = asyncio.get_running_loop().create_task(self._sweep())

    async def close(self) -> None:
        if self._sweeper is not None:
            self._sweeper.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._sweeper
        for gate in list(self.gates):
            gate.close()

    async def _sweep(self) -> None:
        loop = asyncio.get_running_loop()
        limits = self.limits
        period = max(0.05, min(1.0, limits.idle_seconds / 4,
                               limits.first_request_seconds / 4))
        while True:
            await asyncio.sleep(period)
            now = loop.time()
            for gate in list(self.gates):
                if not gate.opened:
                    continue
                if (now - gate.last_read > limits.idle_seconds
                        and not self.is_streaming(gate.transport)) \
                        or (not gate.requested and not gate.trusted
                            and now - gate.opened_at > limits.first_request_seconds):
                    self.timed_out += 1
                    gate.close()


class Gate(asyncio.Protocol):
    """One accepted socket: counted, secured (TLS), then relayed to aiohttp's handler.
    Attributes: tls, opened (handshake done), transport (the one aiohttp writes to),
    last_read (loop time of the last bytes received), opened_at (of the handshake's end),
    client (its address or /64), subnet (its /24 or /64), trusted (a request with a
    valid token came on it), requested (a request came on it)."""

    def __init__(self, connections: Connections, handler_factory: Callable[[], Any],
                 ssl_context: ssl.SSLContext | None) -> None:
        self._connections = connections
        self._factory = handler_factory
        self._ssl = ssl_context
        self.tls = ssl_context is not None
        self.opened = False
        self.closed = False
        self._raw: asyncio.Transport | None = None
        self.transport: asyncio.BaseTransport | None = None
        self._handler: asyncio.Protocol | None = None
        self._task: asyncio.Task[None] | None = None
        # Bytes (and an EOF) that arrive between the handshake's end and start_tls
        # returning: TLS 1.3 clients send their request with their Finished message, and
        # the TLS protocol delivers it before our coroutine resumes.
        self._early: list[bytes] = []
        self._early_eof = False
        self.last_read = 0.0
        self.opened_at = 0.0
        self.client = "?"
        self.subnet = "?"
        self.trusted = False
        self.requested = False

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        loop = asyncio.get_running_loop()
        self._raw = transport
        self.last_read = loop.time()
        peer = transport.get_extra_info("peername")
        self.client = client_key(str(peer[0])) if peer else "?"
        self.subnet = subnet_key(self.client)
        if not self._connections.admit(self):
            self.closed = True
            transport.abort()
            return
        if self._ssl is None:
            self._open(transport)
            return
        transport.pause_reading()  # nothing read before start_tls takes the socket over
        self._task = loop.create_task(self._handshake(loop, transport, self._ssl))

    async def _handshake(self, loop: asyncio.AbstractEventLoop, raw: asyncio.Transport,
                         context: ssl.SSLContext) -> None:
        if self.closed or raw.is_closing():
            # Evicted before its turn came: start_tls on a closed socket would keep a
            # TLS protocol (and its 256 KiB read buffer) alive until the handshake timeout.
            self.close()
            return
        try:
            secured = await loop.start_tls(
                raw, self, context, server_side=True,
                ssl_handshake_timeout=self._connections.limits.handshake_seconds)
        except (OSError, ssl.SSLError, TimeoutError, ConnectionError, RuntimeError):
            self._connections.timed_out += 1
            self.close()
            return
        if secured is None or self.closed:
            self.close()
            return
        self._open(secured)

    def _open(self, transport: asyncio.BaseTransport) -> None:
        self.opened = True
        self.transport = transport
        self.last_read = self.opened_at = asyncio.get_running_loop().time()
        self._connections.opened(self, transport)
        handler = self._handler = self._factory()
        handler.connection_made(transport)
        early, self._early = self._early, []
        for data in early:
            handler.data_received(data)
        if self._early_eof:
            handler.eof_received()

    def close(self, *, evicted: bool = False) -> None:
        if evicted:
            self._connections.evicted += 1
        if not self.closed:
            self.closed = True
            for transport in (self.transport, self._raw):
                if transport is not None and not transport.is_closing():
                    transport.abort()  # type: ignore[attr-defined]
        self._connections.forget(self)

    def data_received(self, data: bytes) -> None:
        self.last_read = asyncio.get_running_loop().time()
        if self._handler is not None:
            self._handler.data_received(data)
        else:
            self._early.append(data)

    def eof_received(self) -> bool | None:
        if self._handler is not None:
            return self._handler.eof_received()
        self._early_eof = True
        return True  # keep the transport open until the handler has read what came

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        self._connections.forget(self)
        if self._task is not None and not self._task.done():
            self._task.cancel()
        handler, self._handler = self._handler, None
        if handler is not None:
            handler.connection_lost(exc)

    def pause_writing(self) -> None:
        if self._handler is not None:
            self._handler.pause_writing()

    def resume_writing(self) -> None:
        if self._handler is not None:
            self._handler.resume_writing()


class GatedSite(web.BaseSite):
    """A TCP site whose sockets pass a :class:`Gate` first. Attributes: port (bound)."""

    __slots__ = ("_connections", "_host", "_port")

    def __init__(self, runner: web.BaseRunner, host: str, port: int,
                 connections: Connections, *, ssl_context: ssl.SSLContext | None,
                 backlog: int = 512) -> None:
        super().__init__(runner, ssl_context=ssl_context, backlog=backlog)
        self._host = host
        self._port = port
        self._connections = connections

    @property
    def name(self) -> str:
        scheme = "https" if self._ssl_context else "http"
        return f"{scheme}://{self._host}:{self._port}"

    @property
    def port(self) -> int:
        return self._port

    async def start(self) -> None:
        await super().start()
        server = self._runner.server
        assert server is not None
        factory = problem_handlers(server)  # parse errors answered as problem documents
        connections, context = self._connections, self._ssl_context
        self._server = await asyncio.get_running_loop().create_server(
            lambda: Gate(connections, factory, context), self._host, self._port,
            backlog=self._backlog)
        if self._server.sockets:
            self._port = self._server.sockets[0].getsockname()[1]
        connections.start()
