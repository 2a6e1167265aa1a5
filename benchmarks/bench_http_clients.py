"""Which HTTP client carries a thousand renders in flight (issue 33, item 2, decided before
a plug-in contract names a client type).

The engine's polls, creates and downloads of every account go through one
``httpx.AsyncClient`` with default limits (100 connections, 20 kept alive). A profile of
1,000 renders in flight spent 39 % of its samples in httpcore's pool
(``AsyncConnectionPool._assign_requests_to_connections`` walks every connection for every
queued request: encode/httpcore#1035). This measures, in one run, the client CPU per
request and the requests per second of four contenders against one loopback server (its
own process, HTTP/1.1 keep-alive, a small JSON answer like a poll's):

- ``shared-httpx``: today's one client with default limits;
- ``per-account-httpx``: one client per account, its pool sized to the account's capacity;
- ``shared-httpx2`` / ``per-account-httpx2``: the same with httpx2 (httpcore2), whose pool
  no longer walks every connection per request (if it is installed: ``pip install
  httpx2``; left out with a line saying so otherwise).

Each render is a task that polls its own URL ``--polls`` times; ``--accounts`` ×
``--per-account`` of them run at once. Rounds interleave the contenders; medians and the
ratio of each to ``shared-httpx`` in the same round are printed. Loopback only; the server
is stopped at the end.

    python benchmarks/bench_http_clients.py --accounts 40 --per-account 25 --polls 20 --rounds 3
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import importlib
import multiprocessing
import os
import socket
import statistics
import sys
import time
from collections.abc import Callable
from typing import Any

BODY = b'{"id":"r1","status":"RUNNING","progress":0.42,"createdAt":"2026-12-06T07:00:00Z"}'


# -- the server: its own process, raw asyncio HTTP/1.1 with keep-alive ------------------
async def _serve_connection(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    head = (b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: "
            + str(len(BODY)).encode() + b"\r\n\r\n" + BODY)
    try:
        while True:
            request = await reader.readuntil(b"\r\n\r\n")
            if not request:
                return
            writer.write(head)
            await writer.drain()
    except (asyncio.IncompleteReadError, ConnectionError, asyncio.LimitOverrunError):
        pass
    finally:
        writer.close()


def _server_main(sock: socket.socket) -> None:
    async def main() -> None:
        server = await asyncio.start_server(_serve_connection, sock=sock, backlog=4096)
        async with server:
            await server.serve_forever()

    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(main())


# -- the contenders ------------------------------------------------------------------------
def _client_module(name: str) -> Any:
    return importlib.import_module(name)


def _make_clients(module: Any, per_account: bool, accounts: int, capacity: int
                  ) -> tuple[Callable[[int], Any], list[Any]]:
    if not per_account:
        shared = module.AsyncClient(timeout=60.0)
        return (lambda account: shared), [shared]
    clients = [module.AsyncClient(timeout=60.0, limits=module.Limits(
        max_connections=capacity + 2, max_keepalive_connections=capacity + 2))
        for _ in range(accounts)]
    return (lambda account: clients[account]), clients


async def _run_one(module_name: str, per_account: bool, url: str, accounts: int,
                   capacity: int, polls: int) -> tuple[float, float, int]:
    """(wall seconds, client CPU seconds, requests) for one contender."""
    module = _client_module(module_name)
    client_of, clients = _make_clients(module, per_account, accounts, capacity)
    errors = 0

    async def render(account: int, n: int) -> None:
        nonlocal errors
        client = client_of(account)
        for _ in range(polls):
            try:
                response = await client.get(f"{url}/v1/tasks/{account}-{n}")
                response.json()
            except Exception:  # counted: a contender that fails is reported, not hidden
                errors += 1

    cpu0, wall0 = time.process_time(), time.perf_counter()
    await asyncio.gather(*(render(a, n) for a in range(accounts) for n in range(capacity)))
    wall, cpu = time.perf_counter() - wall0, time.process_time() - cpu0
    for client in clients:
        await client.aclose()
    if errors:
        print(f"  {module_name} per_account={per_account}: {errors} errors", file=sys.stderr)
    return wall, cpu, accounts * capacity * polls


def _contender(name: str, url: str, args: argparse.Namespace) -> tuple[float, float, int]:
    module, _, mode = name.partition(":")
    return asyncio.run(_run_one(module, mode == "per-account", url, args.accounts,
                                args.per_account, args.polls))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--accounts", type=int, default=40)
    parser.add_argument("--per-account", type=int, default=25)
    parser.add_argument("--polls", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args(argv)

    contenders = ["httpx:shared", "httpx:per-account"]
    try:
        importlib.import_module("httpx2")
        contenders += ["httpx2:shared", "httpx2:per-account"]
    except ImportError:
        print("httpx2 is not installed: its contenders are left out (pip install httpx2)")

    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    sock.listen(4096)
    url = f"http://127.0.0.1:{sock.getsockname()[1]}"
    server = multiprocessing.get_context("fork").Process(target=_server_main, args=(sock,),
                                                          daemon=True)
    server.start()
    sock.close()
    try:
        print(f"{args.accounts} accounts x {args.per_account} renders in flight, "
              f"{args.polls} polls each, {args.rounds} rounds; load {os.getloadavg()[0]:.1f}, "
              f"{os.cpu_count()} cores")
        results: dict[str, list[tuple[float, float, int]]] = {c: [] for c in contenders}
        ratios: dict[str, list[float]] = {c: [] for c in contenders}
        for _ in range(args.rounds):
            this_round = {}
            for name in contenders:
                this_round[name] = _contender(name, url, args)
                results[name].append(this_round[name])
            base_cpu = this_round["httpx:shared"][1] / this_round["httpx:shared"][2]
            for name, (_, cpu, n) in this_round.items():
                ratios[name].append((cpu / n) / base_cpu)
        print(f"{'contender':22} {'req/s':>9} {'CPU us/req':>11} {'CPU vs shared-httpx':>20}")
        for name in contenders:
            rps = statistics.median(n / wall for wall, _, n in results[name])
            cpu_us = statistics.median(cpu / n * 1e6 for _, cpu, n in results[name])
            label = name.replace(":", "-").replace("httpx2-", "httpx2 ").replace(
                "httpx-", "httpx ")
            print(f"{label:22} {rps:9.0f} {cpu_us:11.0f} "
                  f"{statistics.median(ratios[name]):19.2f}x")
    finally:
        server.terminate()
        server.join(5)
    return 0


if __name__ == "__main__":
    sys.exit(main())
