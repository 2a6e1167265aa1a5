"""Durable submits per second over the HTTP API (issue 14), with idempotency keys, at 1 and
16 concurrent clients, against a raw SQLite insert loop (WAL, synchronous=FULL, one
committed transaction per row: what one durable write costs on this disk) in the same run.

A real ``reelqueue serve`` process (paused: no renders compete) over TLS, pinned
certificate; each client is an ``httpx2.AsyncClient``. Prints figures; asserts nothing.
Run: ``python benchmarks/api_submit.py [--submits N]``.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import socket
import sqlite3
import ssl
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx2

APP = Path(__file__).resolve().parent.parent / "app"
if APP.is_dir() and str(APP) not in sys.path:
    sys.path.insert(0, str(APP))

from _common import machine_line  # noqa: E402

REELQUEUE = [sys.executable, "-m", "reelqueue"]


def env() -> dict[str, str]:
    out = dict(os.environ)
    out["PYTHONPATH"] = os.pathsep.join(p for p in (str(APP), out.get("PYTHONPATH", "")) if p)
    out["PYTHONUNBUFFERED"] = "1"
    return out


def raw_insert_loop(folder: Path, count: int) -> float:
    """Rows per second: one INSERT + COMMIT each, WAL, synchronous=FULL."""
    db = sqlite3.connect(str(folder / "raw.sqlite3"), isolation_level=None)
    db.execute("PRAGMA journal_mode = WAL")
    db.execute("PRAGMA synchronous = FULL")
    db.execute("CREATE TABLE jobs (id INTEGER PRIMARY KEY, job_key TEXT UNIQUE, body TEXT)")
    started = time.perf_counter()
    for i in range(count):
        db.execute("BEGIN IMMEDIATE")
        db.execute("INSERT INTO jobs (job_key, body) VALUES (?, ?)", (f"k{i}", f"shot {i}"))
        db.execute("COMMIT")
    elapsed = time.perf_counter() - started
    db.close()
    return count / elapsed


async def submit_many(url: str, context: ssl.SSLContext, token: str, prefix: str,
                      count: int, clients: int) -> tuple[float, list[float]]:
    latencies: list[float] = []
    queue: asyncio.Queue[int] = asyncio.Queue()
    for i in range(count):
        queue.put_nowait(i)

    async def client_loop() -> None:
        async with httpx2.AsyncClient(base_url=url, verify=context, timeout=60.0, headers={
                "Authorization": f"Bearer {token}"}) as client:
            while not queue.empty():
                i = queue.get_nowait()
                t0 = time.perf_counter()
                response = await client.post("/v1/jobs", json={"prompt": f"bench {i}"},
                                             headers={"Idempotency-Key": f"{prefix}-{i}"})
                latencies.append(time.perf_counter() - t0)
                if response.status_code != 201:
                    raise SystemExit(f"unexpected answer {response.status_code}: "
                                     f"{response.text}")

    started = time.perf_counter()
    await asyncio.gather(*(client_loop() for _ in range(clients)))
    return count / (time.perf_counter() - started), latencies


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--submits", type=int, default=1000)
    args = parser.parse_args()
    print(machine_line())
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        data = folder / "data"
        raw = raw_insert_loop(folder, args.submits)
        made = subprocess.run([*REELQUEUE, "--data-dir", str(data), "tokens", "add", "bench"],
                              capture_output=True, text=True, env=env(), check=True)
        token = made.stdout.strip().splitlines()[-1]
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]
        log = (folder / "serve.log").open("wb")
        server = subprocess.Popen(
            [*REELQUEUE, "--data-dir", str(data), "--videos-dir", str(folder / "videos"),
             "serve", "--paused", "--listen", f"127.0.0.1:{port}"],
            stdout=log, stderr=subprocess.STDOUT, env=env(), start_new_session=True)
        try:
            deadline = time.monotonic() + 60
            while "Serving https://" not in (folder / "serve.log").read_text():
                if server.poll() is not None or time.monotonic() > deadline:
                    raise SystemExit((folder / "serve.log").read_text())
                time.sleep(0.05)
            context = ssl.create_default_context(cafile=str(data / "api-cert.pem"))
            url = f"https://127.0.0.1:{port}"
            print(f"raw SQLite insert loop (durable, 1 row per commit): {raw:,.0f} rows/s")
            for clients in (1, 16):
                rate, latencies = asyncio.run(submit_many(
                    url, context, token, f"c{clients}", args.submits, clients))
                print(f"API, {clients:2d} client(s): {rate:,.0f} submits/s "
                      f"({rate / raw:.2f}x raw), p50 {percentile(latencies, 0.5) * 1000:.1f} ms,"
                      f" p99 {percentile(latencies, 0.99) * 1000:.1f} ms")
        finally:
            server.terminate()
            server.wait(timeout=30)
            log.close()


if __name__ == "__main__":
    main()
