"""Floods against a real ``reelqueue serve`` over TLS (loopback, bounded in count and
time): a 99 MiB JSON batch of ``{}``, a 101 MiB upload (413, with and without a
Content-Length), and idle connections. The serve process's peak RSS growth over its
baseline stays under 200 MB, and a health probe from another loopback address
(127.0.0.2) is answered all along; its latency is printed as a figure, not asserted."""

from __future__ import annotations

import socket
import ssl
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx2
import pytest

from tests.api.serve_harness import ServeProcess, make_token

pytestmark = [pytest.mark.integration, pytest.mark.slow]

MIB = 1024 * 1024
GROWTH_LIMIT_MB = 200


def memory_kb(pid: int, field: str) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise AssertionError(f"no {field} for {pid}")


def reset_peak(pid: int) -> None:
    """Linux: writing 5 to clear_refs resets VmHWM to the current RSS."""
    Path(f"/proc/{pid}/clear_refs").write_text("5")


class HealthProbe:
    """GET /v1/health every 0.2 s from 127.0.0.2 until stopped. Attributes: latencies,
    failures (any exception or non-200)."""

    def __init__(self, server: ServeProcess) -> None:
        self._server = server
        self.latencies: list[float] = []
        self.failures: list[str] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        pinned = ssl.create_default_context(cafile=str(self._server.cert))
        transport = httpx2.HTTPTransport(verify=pinned, local_address="127.0.0.2")
        with httpx2.Client(base_url=self._server.url, transport=transport,
                          timeout=120.0) as client:
            while not self._stop.is_set():
                started = time.monotonic()
                try:
                    answer = client.get("/v1/health")
                    if answer.status_code != 200:
                        self.failures.append(str(answer.status_code))
                except httpx2.HTTPError as exc:
                    self.failures.append(repr(exc))
                self.latencies.append(time.monotonic() - started)
                self._stop.wait(0.2)

    def __enter__(self) -> HealthProbe:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(150)

    def figures(self) -> str:
        ordered = sorted(self.latencies) or [0.0]
        return (f"{len(self.latencies)} probes, p50 {ordered[len(ordered) // 2] * 1000:.0f}"
                f" ms, max {ordered[-1] * 1000:.0f} ms")


def empty_objects(total: int) -> Iterator[bytes]:
    """``[{},{},...]`` of exactly ``total`` bytes, in 1 MiB pieces."""
    assert total % 3 == 0
    yield b"["
    left = total - 3
    piece = b"{}," * (MIB // 3)
    while left > 0:
        chunk = piece[:left]
        left -= len(chunk)
        yield chunk
    yield b"{}]"


@pytest.fixture
def serving(tmp_path: Path) -> Iterator[tuple[ServeProcess, str]]:
    data = tmp_path / "data"
    token = make_token(data, "flood", "submit")
    with ServeProcess(data, tmp_path / "videos", "--paused") as server:
        yield server, token


def test_a_99_mib_json_batch_and_a_101_mib_upload_cost_little_memory(
        serving: tuple[ServeProcess, str]) -> None:
    server, token = serving
    assert server.proc is not None
    pid = server.proc.pid
    with server.client(token, timeout=300.0) as client:
        assert client.post("/v1/batches", json=[{"prompt": "warm-up"}]).status_code == 201
        baseline = memory_kb(pid, "VmRSS")
        reset_peak(pid)
        with HealthProbe(server) as probe:
            started = time.monotonic()
            big = client.post("/v1/batches", content=empty_objects(99 * MIB - 99 * MIB % 3),
                              headers={"Content-Type": "application/json"})
            took = time.monotonic() - started
            declared = client.post("/v1/batches?filename=big.csv",
                                   content=b"x" * (101 * MIB),
                                   headers={"Content-Type": "text/csv"})
            chunked = client.post("/v1/batches", content=empty_objects(101 * MIB + 1),
                                  headers={"Content-Type": "application/json"})
        peak = memory_kb(pid, "VmHWM")
    growth_mb = (peak - baseline) / 1024
    print(f"\n99 MiB JSON batch: {big.status_code} in {took:.1f} s; serve RSS baseline "
          f"{baseline / 1024:.0f} MB, peak growth {growth_mb:.0f} MB; health from "
          f"127.0.0.2: {probe.figures()}")
    assert big.status_code == 422, big.text
    assert "100,000 items" in big.json()["detail"]
    assert declared.status_code == 413 and chunked.status_code == 413
    assert probe.failures == [] and probe.latencies
    assert growth_mb < GROWTH_LIMIT_MB


def test_exactly_100_mib_is_taken_and_one_byte_more_is_not(
        serving: tuple[ServeProcess, str]) -> None:
    server, token = serving
    limit = 100 * MIB
    with server.client(token, timeout=300.0) as client:
        exact = client.post("/v1/batches?filename=s.csv&dry_run=1",
                            content=b"prompt\n" + b"#" * (limit - 7),
                            headers={"Content-Type": "text/csv"})
        over = client.post("/v1/batches?filename=s.csv&dry_run=1",
                           content=b"prompt\n" + b"#" * (limit - 6),
                           headers={"Content-Type": "text/csv"})
    assert exact.status_code != 413, exact.text  # read whole; the import judges it
    assert over.status_code == 413 and over.json()["limit"] == limit


IDLE_CONNECTIONS = 4000


def test_4000_connections_that_never_start_tls_cost_little_memory(
        serving: tuple[ServeProcess, str]) -> None:
    server, _ = serving
    assert server.proc is not None
    pid = server.proc.pid
    with server.client() as client:
        assert client.get("/v1/health").status_code == 200
    baseline = memory_kb(pid, "VmRSS")
    reset_peak(pid)
    opened = refused = 0
    sockets: list[socket.socket] = []
    try:
        with HealthProbe(server) as probe:
            started = time.monotonic()
            for _ in range(IDLE_CONNECTIONS):
                try:
                    sockets.append(socket.create_connection(("127.0.0.1", server.port),
                                                            timeout=10))
                    opened += 1
                except OSError:
                    refused += 1
            took = time.monotonic() - started
            # Every connection past the caps was evicted by the server: the last ones
            # opened are still waiting for their handshake, the first ones are closed.
            first = sockets[0]
            first.settimeout(30)
            try:
                first_closed = first.recv(1) == b""
            except ConnectionResetError:
                first_closed = True
        peak = memory_kb(pid, "VmHWM")
    finally:
        for sock in sockets:
            sock.close()
    growth_mb = (peak - baseline) / 1024
    print(f"\n{opened} idle TCP connections ({refused} refused) in {took:.1f} s: serve RSS "
          f"baseline {baseline / 1024:.0f} MB, peak growth {growth_mb:.0f} MB; health from "
          f"127.0.0.2: {probe.figures()}")
    assert opened >= IDLE_CONNECTIONS * 0.9
    assert first_closed
    assert probe.failures == [] and probe.latencies
    assert growth_mb < GROWTH_LIMIT_MB
