"""The mock video provider: a real HTTP server on loopback that simulates renders.

``MockProviderServer`` runs it on a daemon thread inside the current process (tests, the
self-test); :func:`serve_forever` runs it as the whole process until SIGTERM/SIGINT, so
renders keep going "remotely" while a ReelQueue process is killed and restarted.

For the searched reconciliation the server lists each key's renders (``GET /v1/renders``,
see :mod:`.handler`) after a seeded delay, and tests plant other clients' renders with
:meth:`MockProviderServer.plant_foreign` (or ``POST /_mock/foreign`` across processes, or
the ``foreign_twin`` directive, or ``MockOptions.foreign_renders``).
"""

from __future__ import annotations

import contextlib
import ipaddress
import logging
import signal
import socket
import socketserver
import threading
import time
from collections.abc import Callable, Mapping
from http.server import ThreadingHTTPServer
from pathlib import Path
from types import FrameType, TracebackType
from typing import Any

from reelqueue.mockprovider.handler import MockHandler
from reelqueue.mockprovider.options import MockOptions
from reelqueue.mockprovider.state import MockState, key_id_of

log = logging.getLogger("reelqueue.mockprovider")

_Request = socket.socket | tuple[bytes, socket.socket]


def _loopback_family(host: str) -> socket.AddressFamily:
    """The address family for ``host``; raises ValueError unless it is loopback."""
    if host == "localhost":
        return socket.AF_INET
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        address = None
    if address is None or not address.is_loopback:
        raise ValueError(
            f"The mock provider only listens on loopback (127.0.0.1, ::1), not {host!r}."
        )
    return socket.AF_INET6 if address.version == 6 else socket.AF_INET


class _HTTPServer(ThreadingHTTPServer):
    """A threading HTTP server that can end every open connection when it stops."""

    daemon_threads = True
    block_on_close = False

    def __init__(
        self, address: tuple[str, int], state: MockState, family: socket.AddressFamily
    ) -> None:
        self.address_family = family
        self.state = state
        self.base_url = ""
        self._connections: dict[_Request, threading.Thread] = {}
        self._connections_lock = threading.Lock()
        super().__init__(address, MockHandler)

    def server_bind(self) -> None:
        # HTTPServer.server_bind does a reverse DNS lookup (getfqdn); skip it.
        socketserver.TCPServer.server_bind(self)
        host, port = self.server_address[:2]
        self.server_name = str(host)
        self.server_port = int(port)

    def process_request(self, request: _Request, client_address: Any) -> None:
        thread = threading.Thread(
            target=self._serve_connection,
            args=(request, client_address),
            name="mockprovider-connection",
            daemon=True,
        )
        with self._connections_lock:
            self._connections[request] = thread
        thread.start()

    def _serve_connection(self, request: _Request, client_address: Any) -> None:
        try:
            self.finish_request(request, client_address)
        except Exception:
            self.handle_error(request, client_address)
        finally:
            self.shutdown_request(request)
            with self._connections_lock:
                self._connections.pop(request, None)

    def handle_error(self, request: _Request, client_address: Any) -> None:
        log.debug("mock provider: connection from %s ended badly", client_address,
                  exc_info=True)

    def close_connections(self, timeout: float) -> None:
        """Cut every open connection, then wait (up to ``timeout``) for their threads."""
        with self._connections_lock:
            open_now = list(self._connections.items())
        for request, _thread in open_now:
            if isinstance(request, socket.socket):
                with contextlib.suppress(OSError):
                    request.shutdown(socket.SHUT_RDWR)
        deadline = time.monotonic() + timeout
        for _request, thread in open_now:
            thread.join(max(0.0, deadline - time.monotonic()))


class MockProviderServer:
    """The mock provider on a background thread of this process.

    Usage::

        with MockProviderServer(MockOptions(seed=1)) as mock:
            base_url = mock.url
    """

    def __init__(
        self, options: MockOptions | None = None, host: str = "127.0.0.1", port: int = 0,
        clock: Callable[[], float] = time.time,
    ) -> None:
        """``clock``: Unix seconds for the renders' ``created_at`` and the list's delay
        (tests inject one to pass the delay without sleeping)."""
        self._family = _loopback_family(host)
        self.options = options if options is not None else MockOptions()
        self.host = host
        self._port = port
        self._clock = clock
        self._httpd: _HTTPServer | None = None
        self._thread: threading.Thread | None = None

    def __repr__(self) -> str:
        where = self.url if self._httpd is not None else "not started"
        return f"MockProviderServer({where})"

    def start(self) -> MockProviderServer:
        """Bind and start answering; returns once the socket is listening."""
        if self._httpd is not None:
            raise RuntimeError("The mock provider is already running.")
        video = Path(self.options.video_path).read_bytes()
        httpd = _HTTPServer((self.host, self._port),
                            MockState(self.options, video, self._clock), self._family)
        port = int(httpd.server_address[1])
        shown = f"[{self.host}]" if self._family == socket.AF_INET6 else self.host
        httpd.base_url = f"http://{shown}:{port}"
        self._httpd = httpd
        self._thread = threading.Thread(
            target=httpd.serve_forever,
            kwargs={"poll_interval": 0.05},
            name="mockprovider",
            daemon=True,
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving and cut open connections (hanging faults included); idempotent."""
        httpd, thread = self._httpd, self._thread
        if httpd is None or thread is None:
            return
        self._httpd = self._thread = None
        httpd.state.stopping.set()
        httpd.shutdown()
        httpd.close_connections(timeout=2.0)
        httpd.server_close()
        thread.join(timeout=2.0)

    def _running(self) -> _HTTPServer:
        if self._httpd is None:
            raise RuntimeError("The mock provider is not running; call start() first.")
        return self._httpd

    @property
    def url(self) -> str:
        """``http://127.0.0.1:PORT``, without a trailing slash."""
        return self._running().base_url

    @property
    def port(self) -> int:
        return int(self._running().server_address[1])

    def counters(self) -> dict[str, Any]:
        """Request counts (creates per job key and client token, polls, downloads...)."""
        return self._running().state.counters()

    def reset_counters(self) -> None:
        self._running().state.reset_counters()

    def plant_foreign(self, prompt: str, params: Mapping[str, Any] | None = None, *,
                      created_at: float | None = None, ago: float = 0.0,
                      key: str | None = None) -> str:
        """Plant another client's render on API key ``key`` (None: a keyless client),
        created at ``created_at`` (Unix seconds, the server's clock) or ``ago`` seconds
        before now; returns its id. Like ``POST /_mock/foreign``."""
        state = self._running().state
        when = created_at if created_at is not None else state.now() - ago
        return state.plant_foreign(prompt, params or {}, when, key_id_of(key)).id

    def __enter__(self) -> MockProviderServer:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()


def serve_forever(
    options: MockOptions,
    port: int,
    *,
    host: str = "127.0.0.1",
    on_listening: Callable[[str], None] | None = None,
    stop_event: threading.Event | None = None,
) -> None:
    """Run the mock provider until SIGTERM/SIGINT (or ``stop_event``), then stop cleanly.

    ``on_listening`` gets the URL once the socket listens (the CLI prints it). Signal
    handlers are installed only when called from the main thread, and restored after.
    """
    stop = stop_event if stop_event is not None else threading.Event()

    def _on_signal(signum: int, frame: FrameType | None) -> None:
        stop.set()

    previous: dict[signal.Signals, Any] = {}
    if threading.current_thread() is threading.main_thread():
        for signum in (signal.SIGTERM, signal.SIGINT):
            previous[signum] = signal.signal(signum, _on_signal)
    try:
        with MockProviderServer(options, host=host, port=port) as server:
            if on_listening is not None:
                on_listening(server.url)
            while not stop.wait(0.2):
                pass
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
