"""The API submit benchmark against a minimal reference server (issue 22: the API stays
>= 0.8x a minimal aiohttp server doing the same durable work), interleaved in one run.

Two processes on 127.0.0.1, started once and kept for the run:
- ``serve``: a real ``reelqueue serve --paused`` over TLS with its self-signed certificate;
- ``reference``: ``benchmarks/api_reference_server.py`` (aiohttp, the same route, the same
  certificate and key files, the same token, one durable unique-key insert per submit:
  SQLite WAL, ``synchronous=FULL``, one committed transaction each, on a journal thread).

The client is ``api_submit.submit_many`` for both: ``httpx2.AsyncClient`` per client with
the pinned certificate, ``POST /v1/jobs`` with ``{"prompt": "bench N"}`` and a unique
``Idempotency-Key``; a round measures each server at 1 and at 16 clients, the order of the
two servers alternating from round to round (and one unmeasured warm-up run each first).
Prints every round, then the medians per server and the ratio serve / reference at 1 and
16 clients (the ratio of the medians, and the median of each round's own ratio: the two
runs of a round are seconds apart, so load drift between rounds cancels out of it), and
the machine's load at start and end. Asserts nothing.
Run: ``python benchmarks/api_vs_reference.py [--rounds 5] [--submits 400]``.
"""

from __future__ import annotations

import argparse
import asyncio
import socket
import ssl
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

from _common import machine_line
from api_submit import REELQUEUE, env, percentile, submit_many

HERE = Path(__file__).resolve().parent
VARIANTS = ("serve", "reference")
CLIENTS = (1, 16)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@dataclass
class Server:
    name: str
    process: subprocess.Popen[bytes]
    log_path: Path
    log: IO[bytes]
    url: str = ""

    def wait_ready(self, timeout: float = 60.0) -> None:
        deadline = time.monotonic() + timeout
        while "Serving https://" not in self.log_path.read_text(errors="replace"):
            if self.process.poll() is not None or time.monotonic() > deadline:
                raise SystemExit(f"{self.name} did not start:\n"
                                 + self.log_path.read_text(errors="replace"))
            time.sleep(0.05)

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=10)
        self.log.close()


def start_serve(folder: Path, data: Path) -> Server:
    port = free_port()
    log_path = folder / "serve.log"
    log = log_path.open("wb")
    process = subprocess.Popen(
        [*REELQUEUE, "--data-dir", str(data), "--videos-dir", str(folder / "videos"),
         "serve", "--paused", "--listen", f"127.0.0.1:{port}"],
        stdout=log, stderr=subprocess.STDOUT, env=env(), start_new_session=True)
    return Server("serve", process, log_path, log, f"https://127.0.0.1:{port}")


def start_reference(folder: Path, data: Path, token: str) -> Server:
    port = free_port()
    log_path = folder / "reference.log"
    log = log_path.open("wb")
    environment = env()
    environment["REF_TOKEN"] = token
    process = subprocess.Popen(
        [sys.executable, str(HERE / "api_reference_server.py"), "--port", str(port),
         "--cert", str(data / "api-cert.pem"), "--key", str(data / "api-key.pem"),
         "--db", str(folder / "reference.sqlite3")],
        stdout=log, stderr=subprocess.STDOUT, env=environment, start_new_session=True)
    return Server("reference", process, log_path, log, f"https://127.0.0.1:{port}")


@dataclass
class Figures:
    rates: list[float] = field(default_factory=list)
    p50s: list[float] = field(default_factory=list)
    p99s: list[float] = field(default_factory=list)


def measure(server: Server, context: ssl.SSLContext, token: str, prefix: str,
            submits: int, clients: int) -> tuple[float, float, float]:
    rate, latencies = asyncio.run(submit_many(server.url, context, token, prefix, submits,
                                              clients))
    return rate, percentile(latencies, 0.5) * 1000, percentile(latencies, 0.99) * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description="API submits: serve vs a reference server")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--submits", type=int, default=400,
                        help="submits per server per client count per round")
    parser.add_argument("--warmup", type=int, default=50)
    args = parser.parse_args()
    print(f"start {machine_line()}", flush=True)
    figures = {(v, c): Figures() for v in VARIANTS for c in CLIENTS}
    ratios: dict[int, list[float]] = {c: [] for c in CLIENTS}
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        data = folder / "data"
        made = subprocess.run([*REELQUEUE, "--data-dir", str(data), "tokens", "add", "bench"],
                              capture_output=True, text=True, env=env(), check=True)
        token = made.stdout.strip().splitlines()[-1]
        servers: dict[str, Server] = {}
        try:
            servers["serve"] = start_serve(folder, data)
            servers["serve"].wait_ready()  # it makes the certificate the reference uses
            servers["reference"] = start_reference(folder, data, token)
            servers["reference"].wait_ready()
            context = ssl.create_default_context(cafile=str(data / "api-cert.pem"))
            for name in VARIANTS:
                measure(servers[name], context, token, f"{name}-warm", args.warmup, 4)
            print(f"{args.rounds} rounds x {args.submits} submits per server and client "
                  f"count (warm-up {args.warmup} each)", flush=True)
            for r in range(args.rounds):
                order = VARIANTS if r % 2 == 0 else VARIANTS[::-1]
                for clients in CLIENTS:
                    rates: dict[str, float] = {}
                    for name in order:
                        rate, p50, p99 = measure(servers[name], context, token,
                                                 f"{name}-r{r}-c{clients}", args.submits,
                                                 clients)
                        got = figures[(name, clients)]
                        got.rates.append(rate)
                        got.p50s.append(p50)
                        got.p99s.append(p99)
                        rates[name] = rate
                        print(f"round {r + 1} {clients:2d} client(s) {name:9s}: "
                              f"{rate:7.1f} submits/s, p50 {p50:6.1f} ms, p99 {p99:6.1f} ms",
                              flush=True)
                    ratios[clients].append(rates["serve"] / rates["reference"])
                    print(f"round {r + 1} {clients:2d} client(s) serve/reference: "
                          f"{ratios[clients][-1]:.2f}x", flush=True)
        finally:
            for server in servers.values():
                server.stop()
    print()
    print("| clients | server | submits/s (median) | p50 ms | p99 ms | serve/reference |")
    print("|---|---|---|---|---|---|")
    for clients in CLIENTS:
        serve_rate = statistics.median(figures[("serve", clients)].rates)
        ref_rate = statistics.median(figures[("reference", clients)].rates)
        for name in VARIANTS:
            got = figures[(name, clients)]
            ratio = ""
            if name == "serve":
                paired = statistics.median(ratios[clients])
                ratio = (f"**{serve_rate / ref_rate:.2f}x** of medians; per round: median "
                         f"{paired:.2f}x, {min(ratios[clients]):.2f}-"
                         f"{max(ratios[clients]):.2f}x")
            print(f"| {clients} | {name} | {statistics.median(got.rates):.1f} "
                  f"(range {min(got.rates):.1f}-{max(got.rates):.1f}) | "
                  f"{statistics.median(got.p50s):.1f} | {statistics.median(got.p99s):.1f} | "
                  f"{ratio} |")
    print(f"end {machine_line()}", flush=True)


if __name__ == "__main__":
    main()
