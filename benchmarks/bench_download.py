"""Benchmark: one big download through the engine's own path against curl (issue 33).

    python benchmarks/bench_download.py [--mb 500] [--rounds 3] [--dir DIR]

A loopback HTTP server (this process, its own thread, ``sendfile``) serves one file of
``--mb`` megabytes that looks like an MP4. Two contenders fetch it to ``--dir``:

- **curl**: ``curl -o F && sha256sum F && sync F``, the issue's baseline;
- **engine**: the path every render's video takes: an httpx2 client (one per account,
  as the engine builds them), the adapters' ``ApiClient.stream_video`` (the key only to the
  API host, a dead link refreshed once), the download bounds of ``download_limits.bounded``
  (byte cap, deadline, throughput floor) and ``OutputWriter.write_atomically`` (the
  ``.part`` file written on the writer's thread, sha256 on the way, fsync, the hash handed
  to the journal's callback, a hard link into place, the folder fsynced).

Rounds alternate which contender goes first; each figure is the median over the rounds and
the ratio is curl's time over the engine's (≥ 0.8 is the issue's target: the engine at
least 0.8x curl's speed). The load average is printed before and after. Nothing here
asserts a time.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import http.server
import os
import shutil
import subprocess
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import httpx2
from _common import machine_line, median, print_table

from reelqueue.engine.outputs import OutputWriter, WrittenFile
from reelqueue.providers.adapters._client import ApiClient
from reelqueue.providers.base import ProviderConfig
from reelqueue.providers.download_limits import DownloadLimits

BLOCK = 1 << 20


def make_video_file(path: Path, megabytes: int) -> str:
    """``megabytes`` MiB that pass the engine's "looks like a video" check (an ``ftyp``
    box first), not all alike (so no layer can compress them away); returns its sha256."""
    digest = hashlib.sha256()
    seed = os.urandom(BLOCK)
    with path.open("wb") as out:
        for n in range(megabytes):
            block = seed if n else b"\x00\x00\x00\x18ftypisom" + seed[12:]
            block = n.to_bytes(8, "big") + block[8:] if n else block
            out.write(block)
            digest.update(block)
    return digest.hexdigest()


class _Handler(http.server.BaseHTTPRequestHandler):
    served: Path

    def do_GET(self) -> None:
        size = self.served.stat().st_size
        self.send_response(200)
        self.send_header("Content-Type", "video/mp4")
        self.send_header("Content-Length", str(size))
        self.end_headers()
        with self.served.open("rb") as source:
            self.wfile.flush()
            self.connection.sendfile(source)

    def log_message(self, format: str, *args: Any) -> None:
        pass


def serve(path: Path) -> tuple[http.server.ThreadingHTTPServer, str]:
    handler = type("Handler", (_Handler,), {"served": path})
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}/video.mp4"


def by_curl(url: str, target: Path) -> tuple[float, str]:
    started = time.perf_counter()
    subprocess.run(["curl", "-s", "-f", "-o", str(target), url], check=True)
    out = subprocess.run(["sha256sum", str(target)], check=True, capture_output=True,
                         text=True).stdout
    subprocess.run(["sync", str(target)], check=True)
    return time.perf_counter() - started, out.split()[0]


async def _by_engine(url: str, target: Path) -> tuple[float, str]:
    writer = OutputWriter(DownloadLimits())  # the engine's default bounds (2 GiB cap)
    recorded: list[WrittenFile] = []

    async def record(written: WrittenFile) -> None:
        recorded.append(written)

    base = url.rsplit("/", 1)[0]
    started = time.perf_counter()
    async with httpx2.AsyncClient(timeout=60) as client:
        api = ApiClient(client, ProviderConfig("bench", base, "key"), title="Bench",
                        default_base_url=base)
        written = await writer.write_atomically(api.stream_video(url), target, "bench-claim",
                                                before_publish=record)
    elapsed = time.perf_counter() - started
    writer.shutdown()
    assert recorded and recorded[0].sha256 == written.sha256
    return elapsed, written.sha256


def by_engine(url: str, target: Path) -> tuple[float, str]:
    return asyncio.run(_by_engine(url, target))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--mb", type=int, default=500)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--dir", type=Path, default=None,
                        help="where the files are written (default: a temporary folder "
                             "beside this checkout, on a real disk)")
    args = parser.parse_args()
    if shutil.which("curl") is None or shutil.which("sha256sum") is None:
        raise SystemExit("curl and sha256sum are needed for the baseline")
    root = args.dir or Path(__file__).resolve().parent.parent
    print(machine_line())
    with tempfile.TemporaryDirectory(dir=root, prefix=".bench-download-") as folder:
        work = Path(folder)
        source = work / "source.mp4"
        expected = make_video_file(source, args.mb)
        server, url = serve(source)
        times: dict[str, list[float]] = {"curl": [], "engine": []}
        try:
            for n in range(args.rounds):
                order = ["curl", "engine"] if n % 2 == 0 else ["engine", "curl"]
                for name in order:
                    target = work / f"{name}-{n}.mp4"
                    run = by_curl if name == "curl" else by_engine
                    seconds, sha = run(url, target)
                    if sha != expected:
                        raise SystemExit(f"{name}: the file's sha256 differs")
                    times[name].append(seconds)
                    print(f"round {n + 1} {name}: {seconds:.2f} s "
                          f"({args.mb / seconds:.0f} MiB/s)", flush=True)
                    target.unlink()
        finally:
            server.shutdown()
    curl_s, engine_s = median(times["curl"]), median(times["engine"])
    print_table([
        ["contender", "median s", "MiB/s", "vs curl"],
        ["curl -o && sha256sum && sync", f"{curl_s:.2f}", f"{args.mb / curl_s:.0f}", "1.00x"],
        ["engine (httpx2, bounded, writer)", f"{engine_s:.2f}", f"{args.mb / engine_s:.0f}",
         f"{curl_s / engine_s:.2f}x"],
    ])
    print(machine_line())


if __name__ == "__main__":
    main()
