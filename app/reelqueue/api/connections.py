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
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import ssl
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
    handshakes in progress), handshake_seconds, idle_seconds (nothing received)."""

    max_connections: int = 1024
    max_handshakes: int = 64
    handshake_seconds: float = 10.0
    idle_seconds: float = 60.0


def open_files_limit() -> tuple[int, int, int]:
    """RLIMIT_NOFILE: (soft before, soft now, hard); the soft limit is raised to the hard
    one where the OS allows it (an unlimited hard limit: to 65,536). Without the
    resource module (Windows): 8192 for all three (the socket limit select() does not
    bind on the Proactor loop)."""
    if resource is None:
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
    return ConnectionLimits(room, min(limits.max_handshakes, room),
                            limits.handshake_seconds, limits.idle_seconds)


class Connections:
    """The gates of one listener. Attributes: limits, gates (accepted, not yet closed),
    evicted (how many were closed to make room), timed_out (idle or handshake)."""

    def __init__(self, limits: ConnectionLimits) -> None:
        self.limits = limits
        self.gates: dict[Gate, None] = {}  # insertion order: oldest first
        self.evicted = 0
        self.timed_out = 0
        self._streaming: weakref.WeakSet[asyncio.BaseTransport] = weakref.WeakSet()
        self._sweeper: asyncio.Task[None] | None = None

    def handshaking(self) -> list[Gate]:
        return [gate for gate in self.gates if not gate.opened]

    def admit(self, gate: Gate) -> bool:
        """Count ``gate``; evict to stay under the caps. False: ``gate`` itself is refused.

        The one evicted is the oldest handshake of the client (an address, an IPv6 /64)
        that holds the most handshakes: a flood from one place evicts its own sockets,
        not the handshake of another client arriving meanwhile."""
        if gate.tls and len(self.handshaking()) >= self.limits.max_handshakes:
            self._evict_one()
        if len(self.gates) >= self.limits.max_connections and not self._evict_one():
            self.evicted += 1
            return False
        self.gates[gate] = None
        return True

    def _evict_one(self) -> bool:
        by_client: dict[str, list[Gate]] = {}
        for waiting in self.handshaking():
            by_client.setdefault(waiting.client, []).append(waiting)
        if not by_client:
            return False
        busiest = max(by_client.values(), key=len)
        busiest[0].close(evicted=True)
        return True

    def forget(self, gate: Gate) -> None:
        self.gates.pop(gate, None)

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
        period = max(0.05, min(1.0, self.limits.idle_seconds / 4))
        while True:
            await asyncio.sleep(period)
            now = loop.time()
            for gate in list(self.gates):
                if (gate.opened and now - gate.last_read > self.limits.idle_seconds
                        and not self.is_streaming(gate.transport)):
                    self.timed_out += 1
                    gate.close()


class Gate(asyncio.Protocol):
    """One accepted socket: counted, secured (TLS), then relayed to aiohttp's handler.
    Attributes: tls, opened (handshake done), transport (the one aiohttp writes to),
    last_read (loop time of the last bytes received), client (its address or /64)."""

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
        self.client = "?"

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        loop = asyncio.get_running_loop()
        self._raw = transport
        self.last_read = loop.time()
        peer = transport.get_extra_info("peername")
        self.client = client_key(str(peer[0])) if peer else "?"
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
        self.last_read = asyncio.get_running_loop().time()
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
