"""Connections are bounded: TLS handshakes in progress and open connections are capped
(strangers still before or in their handshake are evicted first), a handshake and an
idle connection time out, SSE streams are exempt from the idle timeout and send
keep-alive comments. Every wait is bounded by what the server does, not a fixed sleep."""

from __future__ import annotations

import contextlib
import socket
import ssl
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from pathlib import Path

import httpx2
import pytest

from reelqueue.api.connections import ConnectionLimits, Connections, fitted
from reelqueue.api.serve import connection_limits
from reelqueue.application.serving import ServeOptions
from tests.api.live_api import LiveApi
from tests.api.serve_harness import ServeProcess, free_port
from tests.proof.harness import cli

pytestmark = pytest.mark.integration


def wait_until(condition: Callable[[], bool], seconds: float, what: str) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.02)


def connections(live: LiveApi) -> Connections:
    assert live.running is not None
    return live.running.server.connections


def silent_socket(live: LiveApi) -> socket.socket:
    """A TCP connection that never sends a byte (no ClientHello)."""
    return socket.create_connection(("127.0.0.1", live.port), timeout=10)


def closed_by_server(sock: socket.socket, seconds: float) -> bool:
    sock.settimeout(seconds)
    try:
        return sock.recv(1) == b""
    except ConnectionResetError:
        return True
    except TimeoutError:
        return False


@pytest.fixture
def live(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[LiveApi]:
    limits = getattr(request, "param", ConnectionLimits())
    with LiveApi(tmp_path, tls=True, limits=limits) as api:
        yield api


def health(live: LiveApi) -> int:
    with httpx2.Client(base_url=live.url, verify=live.pinned(), timeout=10) as client:
        return client.get("/v1/health").status_code


def test_every_new_tls_connection_is_answered(live: LiveApi) -> None:
    """TLS 1.3 clients send their request with the handshake's end: it must not be lost
    between the handshake and the hand-over to aiohttp (each request on a new
    connection, with a short timeout)."""
    context = live.pinned()
    for _ in range(150):
        with httpx2.Client(base_url=live.url, verify=context, timeout=5) as client:
            assert client.get("/v1/health").status_code == 200


@pytest.mark.parametrize("live", [ConnectionLimits(max_connections=40, max_handshakes=8)],
                         indirect=True)
def test_handshakes_in_progress_are_capped_and_the_oldest_evicted(live: LiveApi) -> None:
    with ExitStack() as stack:
        sockets = [stack.enter_context(silent_socket(live)) for _ in range(30)]
        wait_until(lambda: connections(live).evicted >= 22, 20, "evictions")
        assert len(connections(live).handshaking()) <= 8
        assert closed_by_server(sockets[0], 10)  # the oldest went first
        assert health(live) == 200  # a real client is served meanwhile


@pytest.mark.parametrize("live", [ConnectionLimits(max_connections=6, max_handshakes=6)],
                         indirect=True)
def test_at_the_connection_cap_strangers_are_evicted_before_clients(live: LiveApi) -> None:
    context = live.pinned()
    with ExitStack() as stack:
        clients = [stack.enter_context(httpx2.Client(base_url=live.url, verify=context,
                                                    timeout=10)) for _ in range(4)]
        for client in clients:  # four established keep-alive connections
            assert client.get("/v1/health").status_code == 200
        strangers = [stack.enter_context(silent_socket(live)) for _ in range(2)]
        wait_until(lambda: len(connections(live).gates) == 6, 10, "six connections")
        with httpx2.Client(base_url=live.url, verify=context, timeout=10) as newcomer:
            assert newcomer.get("/v1/health").status_code == 200  # a stranger made room
        assert closed_by_server(strangers[0], 10)
        for client in clients:  # nobody who finished a handshake was dropped
            assert client.get("/v1/health").status_code == 200
        wait_until(lambda: len(connections(live).gates) <= 6, 10, "the cap")


@pytest.mark.parametrize("live", [ConnectionLimits(max_connections=3, max_handshakes=3)],
                         indirect=True)
def test_past_the_cap_with_only_clients_a_new_connection_is_refused(live: LiveApi) -> None:
    context = live.pinned()
    with ExitStack() as stack:
        clients = [stack.enter_context(httpx2.Client(base_url=live.url, verify=context,
                                                    timeout=10)) for _ in range(3)]
        for client in clients:
            assert client.get("/v1/health").status_code == 200
        with pytest.raises(httpx2.TransportError):
            health(live)
        assert clients[0].get("/v1/health").status_code == 200


@pytest.mark.parametrize("live", [ConnectionLimits(handshake_seconds=0.5)], indirect=True)
def test_a_handshake_that_does_not_come_times_out(live: LiveApi) -> None:
    with silent_socket(live) as sock:
        started = time.monotonic()
        assert closed_by_server(sock, 10)
        assert time.monotonic() - started < 8


@pytest.mark.parametrize("live", [ConnectionLimits(idle_seconds=0.5)], indirect=True)
def test_an_idle_connection_is_closed_but_an_event_stream_is_not(live: LiveApi) -> None:
    context = live.pinned()
    with socket.create_connection(("127.0.0.1", live.port), timeout=10) as raw, \
            context.wrap_socket(raw, server_hostname="127.0.0.1") as idle:
        started = time.monotonic()
        assert closed_by_server(idle, 10)  # handshake done, then nothing sent
        assert time.monotonic() - started < 8
    with httpx2.Client(base_url=live.url, verify=context, timeout=10,
                      headers={"Authorization": f"Bearer {live.token}"}) as client, \
            client.stream("GET", "/v1/events") as stream:
        started = time.monotonic()
        lines = stream.iter_lines()
        comments: list[str] = []
        for line in lines:
            if line.startswith(": keep-alive"):
                comments.append(line)
            if len(comments) >= 3:
                break
        assert time.monotonic() - started > 3 * 0.5  # outlived the idle timeout


def test_the_connection_cap_fits_the_open_files_limit() -> None:
    assert fitted(ConnectionLimits(max_connections=1024), 100_000).max_connections == 1024
    small = fitted(ConnectionLimits(max_connections=1024, max_handshakes=64), 512)
    assert small.max_connections == 256 and small.max_handshakes == 64
    assert fitted(ConnectionLimits(), 100).max_connections == 16


def test_the_serve_output_states_the_limits(live: LiveApi) -> None:
    assert live.running is not None
    line = live.running.limits_line()
    assert "Open files: limit" in line and "1024 connections" in line, line
    assert live.running.open_files[1] >= live.running.open_files[0]


def tls_socket(live: LiveApi, address: str = "127.0.0.1") -> ssl.SSLSocket:
    """A connection from ``address`` that completes TLS and sends nothing."""
    raw = socket.create_connection(("127.0.0.1", live.port), timeout=10,
                                   source_address=(address, 0))
    return live.pinned().wrap_socket(raw, server_hostname="127.0.0.1")


def held_by(live: LiveApi, client: str) -> int:
    return sum(1 for gate in list(connections(live).gates) if gate.client == client)


@pytest.mark.parametrize("live", [ConnectionLimits(max_per_address=3, max_per_subnet=5)],
                         indirect=True)
def test_untrusted_connections_are_capped_per_address_and_per_subnet(
        live: LiveApi) -> None:
    with ExitStack() as stack:
        for _ in range(5):  # the fourth and fifth are refused before their handshake
            with contextlib.suppress(OSError):
                stack.enter_context(tls_socket(live, "127.0.0.2"))
        wait_until(lambda: held_by(live, "127.0.0.2") == 3, 10, "three from .2")
        for _ in range(2):
            stack.enter_context(tls_socket(live, "127.0.0.3"))
        wait_until(lambda: held_by(live, "127.0.0.3") == 2, 10, "two from .3")
        # The /24 holds 5: a newcomer from a third address evicts one of the address
        # holding the most (.2), not the smaller .3.
        stack.enter_context(tls_socket(live, "127.0.0.4"))
        wait_until(lambda: held_by(live, "127.0.0.4") == 1, 10, "one from .4")
        assert held_by(live, "127.0.0.2") == 2 and held_by(live, "127.0.0.3") == 2
        # Another /24 is not counted with it; a client with a token is served meanwhile.
        stack.enter_context(tls_socket(live, "127.0.1.1"))
        with httpx2.Client(base_url=live.url, verify=live.pinned(), timeout=10,
                          headers={"Authorization": f"Bearer {live.token}"}) as client:
            assert client.get("/v1/jobs").status_code == 200


@pytest.mark.parametrize("live", [ConnectionLimits(
    max_connections=8, max_handshakes=8, trusted_reserve=3, max_per_address=100,
    max_per_subnet=100)], indirect=True)
def test_trusted_connections_keep_their_reserve_and_are_never_evicted(
        live: LiveApi) -> None:
    context = live.pinned()
    with ExitStack() as stack:
        trusted = [stack.enter_context(httpx2.Client(
            base_url=live.url, verify=context, timeout=10,
            headers={"Authorization": f"Bearer {live.token}"})) for _ in range(2)]
        for client in trusted:
            assert client.get("/v1/jobs").status_code == 200
        wait_until(lambda: sum(g.trusted for g in list(connections(live).gates)) == 2, 10,
                   "two trusted connections")
        strangers = []
        for _ in range(12):
            with contextlib.suppress(OSError):
                strangers.append(stack.enter_context(tls_socket(live, "127.0.0.2")))
        # Untrusted ones stop at 8 - 3 = 5, the two trusted ones count apart.
        wait_until(lambda: len(connections(live).untrusted()) <= 5, 10, "the untrusted cap")
        assert len(connections(live).untrusted()) <= 5
        for client in trusted:  # never evicted for a newcomer
            assert client.get("/v1/jobs").status_code == 200
        # A new client with a token still gets in: its newcomer evicts a stranger.
        with httpx2.Client(base_url=live.url, verify=context, timeout=10,
                          headers={"Authorization": f"Bearer {live.token}"}) as newcomer:
            assert newcomer.get("/v1/jobs").status_code == 200


@pytest.mark.parametrize("live", [ConnectionLimits(first_request_seconds=0.5)],
                         indirect=True)
def test_an_untrusted_connection_must_send_its_first_request_in_time(
        live: LiveApi) -> None:
    with tls_socket(live) as silent:
        started = time.monotonic()
        assert closed_by_server(silent, 10)  # idle_seconds is 60: the deadline closed it
        assert time.monotonic() - started < 8
    with httpx2.Client(base_url=live.url, verify=live.pinned(), timeout=10,
                      headers={"Authorization": f"Bearer {live.token}"}) as client:
        assert client.get("/v1/jobs").status_code == 200
        gates = list(connections(live).gates)
        wait_until(lambda: any(g.trusted for g in gates), 10, "trust")
        time.sleep(1.5)  # past the deadline (not the assertion): a trusted one stays
        assert client.get("/v1/jobs").status_code == 200
        assert connections(live).timed_out == 1


def test_the_serve_output_states_the_trust_limits(live: LiveApi) -> None:
    assert live.running is not None
    line = live.running.limits_line()
    assert "128 kept for connections trusted" in line, line
    assert "32 per address and 128 per /24" in line and "within 10 s" in line, line


def test_every_connection_limit_is_a_serve_option_printed_at_start(tmp_path: Path) -> None:
    options = ("--max-connections", "900", "--max-handshakes", "40", "--handshake-seconds",
               "7", "--idle-seconds", "50", "--trusted-reserve", "200",
               "--max-per-address", "9", "--max-per-subnet", "30",
               "--first-request-seconds", "4")
    with ServeProcess(tmp_path / "data", tmp_path / "videos", "--paused",
                      *options) as server:
        output = server.output()
    assert ("at most 900 connections, 40 TLS handshakes at once (7 s each), idle "
            "connections closed after 50 s") in output, output
    assert ("200 kept for connections trusted after a request with a valid token; "
            "untrusted ones at most 9 per address and 30 per /24 (IPv6 /64), their first "
            "request within 4 s") in output, output


def test_a_connection_limit_not_allowed_is_refused_with_its_name(tmp_path: Path) -> None:
    done = cli(tmp_path / "data", "serve", "--listen", f"127.0.0.1:{free_port()}",
               "--paused", "--max-per-subnet", "0", "--trusted-reserve", "5000")
    assert done.returncode == 2, done.stdout + done.stderr
    assert "--max-per-subnet must be at least 1" in done.stderr, done.stderr
    assert "--trusted-reserve must be at least 0 and below --max-connections" in done.stderr
    assert "Traceback" not in done.stderr
    assert connection_limits(ServeOptions("127.0.0.1", 0)) == ConnectionLimits()
    assert connection_limits(ServeOptions("127.0.0.1", 0, connections={
        "max_per_address": 5})).max_per_address == 5
