"""Downloads are bounded (issue 11, DESIGN.md invariant 12), against a hostile server.

A real HTTP server on loopback, started and stopped by each test, sends what a hostile
provider or CDN could: a Content-Length far over the cap, an endless chunked body, a gzip
bomb, one byte every few tenths of a second. Each download goes through the real path
(``ApiClient.stream_video`` into ``OutputWriter.write_atomically``) and must end as a
retryable download failure with the ``.part`` removed, the server's connection closed and
no more than the cap written. The engine test shows such a failure keeps the render: the
video is downloaded again, never rendered again.
"""

from __future__ import annotations

import asyncio
import gzip
import random
import threading
from collections.abc import AsyncIterator, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx2
import pytest

from reelqueue.domain.backoff import BackoffPolicy
from reelqueue.domain.errors import ErrorClass, ErrorLabel, ProviderError
from reelqueue.domain.models import AccountSpec, BatchSpec, JobSpec
from reelqueue.engine.config import EngineConfig
from reelqueue.engine.engine import Engine
from reelqueue.engine.outputs import OutputWriter, limits_from_config
from reelqueue.mockprovider import MockOptions, MockProviderServer
from reelqueue.providers.adapters._client import ApiClient
from reelqueue.providers.base import ProviderConfig
from reelqueue.providers.download_limits import DownloadLimits, bounded
from reelqueue.resources import resource
from reelqueue.store.memory import MemoryStore

VIDEO = resource("sample.mp4").read_bytes()
HEAD = VIDEO[:64]  # passes the sniff and the writer's video check
CAP = 256 * 1024
NO_FLOOR = DownloadLimits(max_bytes=CAP, deadline_seconds=30.0, min_bytes_per_second=0)
HARD_STOP = 64 * CAP  # the server gives up here even if nobody hangs up


class Hostile(BaseHTTPRequestHandler):
    """One route per attack; records what it saw and how much it managed to send."""

    protocol_version = "HTTP/1.1"
    server: HostileServer

    def log_message(self, format: str, *args: object) -> None:
        pass  # keep the test output clean

    def do_GET(self) -> None:
        self.server.seen.append(dict(self.headers.items()))
        sent = 0
        try:
            sent = self._route()
        except (BrokenPipeError, ConnectionResetError):
            self.server.hung_up.set()
        finally:
            self.server.sent.append(sent)
            self.server.done.set()
            self.close_connection = True

    def _start(self, headers: dict[str, str]) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "video/mp4")
        for name, value in headers.items():
            self.send_header(name, value)
        self.end_headers()

    def _route(self) -> int:
        path = self.path
        if path == "/ok":
            self._start({"Content-Length": str(len(VIDEO))})
            self.wfile.write(VIDEO)
            return len(VIDEO)
        if path == "/announced-oversize":
            self._start({"Content-Length": str(100 * CAP)})
            return self._pour(100 * CAP)
        if path == "/chunked-oversize":
            self._start({"Transfer-Encoding": "chunked"})
            return self._pour(HARD_STOP, chunked=True)
        if path == "/gzip-bomb":
            body = gzip.compress(HEAD + bytes(40 * CAP), compresslevel=9)
            self._start({"Content-Encoding": "gzip", "Content-Length": str(len(body))})
            self.wfile.write(body)
            self.server.bytes_out += len(body)
            return len(body)
        if path.startswith("/trickle"):
            # One byte every 0.2 s, announced as a whole small video.
            self._start({"Content-Length": str(len(VIDEO))})
            sent = 0
            for byte in VIDEO:
                if self.server.stop.wait(0.2):
                    break
                self.wfile.write(bytes([byte]))
                self.wfile.flush()
                self.server.bytes_out += 1
                sent += 1
            return sent
        if path == "/silent":
            self._start({"Content-Length": str(len(VIDEO))})
            self.wfile.write(HEAD)
            self.wfile.flush()
            self.server.stop.wait(30)
            self.wfile.write(b"x")  # after the client hung up this fails
            return len(HEAD)
        self.send_error(404)
        return 0

    def _pour(self, limit: int, *, chunked: bool = False) -> int:
        """Send a video head, then zeros, until ``limit`` or the client hangs up."""
        sent = 0
        block = HEAD + bytes(64 * 1024 - len(HEAD))
        while sent < limit and not self.server.stop.is_set():
            if chunked:
                self.wfile.write(f"{len(block):x}\r\n".encode() + block + b"\r\n")
            else:
                self.wfile.write(block)
            sent += len(block)
            self.server.bytes_out += len(block)
            block = bytes(64 * 1024)
        return sent


class HostileServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), Hostile)
        self.seen: list[dict[str, str]] = []
        self.sent: list[int] = []
        self.bytes_out = 0
        self.done = threading.Event()
        self.hung_up = threading.Event()
        self.stop = threading.Event()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"


@pytest.fixture
def hostile() -> Iterator[HostileServer]:
    server = HostileServer()
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.stop.set()
        server.shutdown()
        server.server_close()
        thread.join(10)


@pytest.fixture
async def client() -> AsyncIterator[httpx2.AsyncClient]:
    async with httpx2.AsyncClient(timeout=httpx2.Timeout(20.0)) as opened:
        yield opened


class Written:
    """A writer fault hook that only counts the bytes that reach the disk."""

    def __init__(self) -> None:
        self.total = 0

    def __call__(self, handle: object, chunk: bytes) -> None:
        self.total += len(chunk)


async def download(client: httpx2.AsyncClient, server: HostileServer, path: str,
                   limits: DownloadLimits, folder: Path, written: Written) -> Path:
    """Download ``path`` the way the engine does (adapter stream into the writer)."""
    api = ApiClient(client, ProviderConfig("a", server.url, "sk-test-0123456789abcdef"),
                    title="Hostile", default_base_url=None)
    writer = OutputWriter(limits)
    writer.fault_hook = written
    final = folder / "video.mp4"
    try:
        await writer.write_atomically(api.stream_video(server.url + path), final, "tok" * 5)
    finally:
        writer.shutdown()
    return final


async def refused(client: httpx2.AsyncClient, server: HostileServer, path: str,
                  limits: DownloadLimits, folder: Path) -> ProviderError:
    """Download ``path``: it must fail as a retryable download failure, cleanly."""
    written = Written()
    with pytest.raises(ProviderError) as caught:
        await download(client, server, path, limits, folder, written)
    error = caught.value
    assert (error.error_class, error.label) == (ErrorClass.RETRYABLE,
                                                ErrorLabel.DOWNLOAD_FAILED), str(error)
    assert list(folder.iterdir()) == [], "no video and no .part may be left"
    assert written.total <= limits.max_bytes, "no more than the cap may reach the disk"
    return error


def assert_hung_up(server: HostileServer) -> None:
    """Our side closed the connection: the server's handler ends instead of being held."""
    assert server.done.wait(10), "the download's connection was left open"


async def test_a_normal_video_passes(client: httpx2.AsyncClient, hostile: HostileServer,
                                     tmp_path: Path) -> None:
    written = Written()
    final = await download(client, hostile, "/ok", NO_FLOOR, tmp_path, written)
    assert final.read_bytes() == VIDEO and written.total == len(VIDEO)
    assert hostile.seen[0].get("Accept-Encoding") == "identity"


async def test_oversize_by_content_length_is_refused_up_front(
    client: httpx2.AsyncClient, hostile: HostileServer, tmp_path: Path
) -> None:
    error = await refused(client, hostile, "/announced-oversize", NO_FLOOR, tmp_path)
    assert "cap" in str(error) and f"announced {100 * CAP} bytes" in str(error)
    assert_hung_up(hostile)


async def test_oversize_chunked_is_cut_off_at_the_cap(
    client: httpx2.AsyncClient, hostile: HostileServer, tmp_path: Path
) -> None:
    error = await refused(client, hostile, "/chunked-oversize", NO_FLOOR, tmp_path)
    assert "cap" in str(error)
    assert_hung_up(hostile)
    assert hostile.hung_up.is_set(), "the client must hang up, not read to the end"
    assert hostile.bytes_out < HARD_STOP


async def test_gzip_bomb_counts_decoded_bytes(
    client: httpx2.AsyncClient, hostile: HostileServer, tmp_path: Path
) -> None:
    error = await refused(client, hostile, "/gzip-bomb", NO_FLOOR, tmp_path)
    assert "cap" in str(error)
    assert_hung_up(hostile)
    assert hostile.bytes_out < CAP  # a small body on the wire, that we never asked for:
    assert hostile.seen[0].get("Accept-Encoding") == "identity"


async def test_trickle_past_the_deadline(
    client: httpx2.AsyncClient, hostile: HostileServer, tmp_path: Path
) -> None:
    limits = DownloadLimits(max_bytes=CAP, deadline_seconds=1.0, min_bytes_per_second=0)
    error = await refused(client, hostile, "/trickle", limits, tmp_path)
    assert "longer than" in str(error)
    assert_hung_up(hostile)


async def test_trickle_under_the_throughput_floor(
    client: httpx2.AsyncClient, hostile: HostileServer, tmp_path: Path
) -> None:
    limits = DownloadLimits(max_bytes=CAP, deadline_seconds=60.0,
                            min_bytes_per_second=1024, floor_window_seconds=0.5)
    error = await refused(client, hostile, "/trickle", limits, tmp_path)
    assert "too slow" in str(error)
    assert_hung_up(hostile)


async def test_a_silent_server_is_cut_off_by_the_floor(
    client: httpx2.AsyncClient, hostile: HostileServer, tmp_path: Path
) -> None:
    limits = DownloadLimits(max_bytes=CAP, deadline_seconds=60.0,
                            min_bytes_per_second=1024, floor_window_seconds=0.5)
    error = await refused(client, hostile, "/silent", limits, tmp_path)
    assert "too slow" in str(error)


def test_engine_settings_become_the_writers_limits() -> None:
    config = EngineConfig(download_max_bytes=5, download_deadline_seconds=6.0,
                          download_min_bytes_per_second=7.0, download_floor_window_seconds=8.0)
    assert limits_from_config(config) == DownloadLimits(5, 6.0, 7.0, 8.0)
    assert limits_from_config(EngineConfig()) == DownloadLimits()
    assert DownloadLimits().max_bytes == 2 * 1024**3


def test_cli_and_window_settings_reach_the_engine_config() -> None:
    import argparse

    from reelqueue.cli.cmd_run import add_engine_arguments, engine_config
    from reelqueue.ui.settings import Settings

    parser = argparse.ArgumentParser()
    add_engine_arguments(parser)
    config = engine_config(parser.parse_args(["--max-video-mb", "10", "--download-minutes",
                                              "2"]))
    assert limits_from_config(config).max_bytes == 10 * 1024 * 1024
    assert limits_from_config(config).deadline_seconds == 120.0
    assert limits_from_config(engine_config(parser.parse_args([]))) == DownloadLimits()
    window = Settings(max_video_mb=10, download_minutes=2).engine_config()
    assert (window.download_max_bytes, window.download_deadline_seconds) == (
        10 * 1024 * 1024, 120.0)
    assert Settings(max_video_mb=0, download_minutes=-1).checked() == Settings()


@pytest.mark.parametrize(("fault", "why"), [
    ("slow_download=0.3*1", "too slow"),  # 1 KiB per 0.3 s, under a 64 KiB/s floor
    ("oversize=8*1", "cap"),  # 8 MiB chunked, over a 1 MiB cap
    ("gzip_bomb=8*1", "cap"),  # 8 MiB decoded from a few KiB
])
async def test_engine_downloads_again_without_rendering_again(tmp_path: Path, fault: str,
                                                              why: str) -> None:
    """A download cut off by a bound keeps the render: the next attempt only downloads.

    The mock provider's first download of the render is hostile, the second normal. The
    job completes with one create and two downloads.
    """
    options = MockOptions(render_seconds_min=0.05, render_seconds_max=0.1, seed=3,
                          prompt_clips=False)  # the sample: VIDEO below
    with MockProviderServer(options) as server:
        store = MemoryStore()
        batch = store.create_batch(BatchSpec("b", "s.csv", str(tmp_path / "out")), 0)
        store.add_jobs(batch.id, [JobSpec("k0", f"fox [[mock:{fault}]]", "mock",
                                          str(tmp_path / "out" / "000.mp4"), row_number=2)], 0)
        store.add_account(AccountSpec("m", "mock", 1, server.url), 0)
        config = EngineConfig(
            retry_backoff=BackoffPolicy(0.01, 0.05), poll_backoff=BackoffPolicy(0.01, 0.05),
            poll_min_seconds=0.005, heartbeat_seconds=0.05, download_max_bytes=1024 * 1024,
            download_min_bytes_per_second=64 * 1024, download_floor_window_seconds=0.5)
        engine = Engine(store, config=config, rng=random.Random(1))
        # The engine builds its writer from the config: these limits, not the defaults.
        assert engine.writer.limits == limits_from_config(config)
        await engine.start()
        try:
            await asyncio.wait_for(engine.run_until_drained(), 30)
        finally:
            await engine.stop()
            engine.close_store()
        counters = server.counters()
    job = store.list_jobs()[0]
    assert job.state.value == "COMPLETED", job
    assert Path(job.output_path).read_bytes() == VIDEO
    assert counters["creates_by_job_key"] == {"k0": 1}, "the render was paid for twice"
    assert counters["downloads_total"] == 2
    ledger = store.ledger(job.id)
    waits = [e.detail for e in ledger if e.event == "retry_wait"]
    assert [(w["label"], w["keeps_render"]) for w in waits] == [("download failed", True)]
    assert why in waits[0]["message"]
    assert [e.event for e in ledger].count("submitting") == 1
    assert [p.name for p in (tmp_path / "out").iterdir()] == ["000.mp4"]


async def test_a_steady_download_over_many_floor_windows_passes() -> None:
    """The floor cuts off only a slow window: a steady stream crossing several windows
    gets through whole."""

    async def steady() -> AsyncIterator[bytes]:
        for _ in range(40):
            await asyncio.sleep(0.03)
            yield bytes(2048)  # ~66 KiB/s over ~1.2 s, floor 1 KiB/s per 0.4 s window

    limits = DownloadLimits(max_bytes=CAP, deadline_seconds=60.0,
                            min_bytes_per_second=1024, floor_window_seconds=0.4)
    assert sum([len(c) async for c in bounded(steady(), limits)]) == 40 * 2048


async def test_exactly_the_cap_passes_and_one_byte_more_does_not() -> None:
    async def body(size: int) -> AsyncIterator[bytes]:
        yield bytes(size // 2)
        yield bytes(size - size // 2)

    limits = DownloadLimits(max_bytes=1000, min_bytes_per_second=0)
    assert sum([len(c) async for c in bounded(body(1000), limits)]) == 1000
    got = 0
    with pytest.raises(ProviderError, match="cap"):
        async for chunk in bounded(body(1001), limits):
            got += len(chunk)
    assert got == 500  # the chunk that would pass the cap is never handed on
