"""Issue 34: a client with no token cannot lock out a client with one. A real ``reelqueue
serve`` (default connection limits) is flooded with TLS connections that carry no token,
from 127.0.0.2-6, each re-opened as soon as it closes (tests/api/tls_flood.py, its own
process); meanwhile a client with a valid token opens a NEW TLS connection for every
request, alternately from 127.0.1.1 (another /24) and 127.0.0.9 (the flood's /24). At
least 99 % and 95 % of its requests are answered, p99 under 1 s. Loopback only, bounded
in time (``FLOOD_SECONDS``); ``FLOOD_SIZE`` connections (1,024 as in the issue; run with
a smaller size while others share the machine: ``REELQUEUE_FLOOD_SIZE``)."""

from __future__ import annotations

import json
import os
import select
import ssl
import subprocess
import sys
import time
from pathlib import Path

import httpx2
import pytest

from tests.api.serve_harness import ServeProcess, make_token

pytestmark = [pytest.mark.integration, pytest.mark.slow]

FLOOD_SIZE = int(os.environ.get("REELQUEUE_FLOOD_SIZE", "1024"))
FLOOD_SECONDS = float(os.environ.get("REELQUEUE_FLOOD_SECONDS", "30"))  # 30 s in CI
ATTACKERS = [f"127.0.0.{i}" for i in range(2, 7)]
ROOT = Path(__file__).resolve().parents[2]


def _request(server: ServeProcess, token: str, address: str,
             pinned: ssl.SSLContext) -> tuple[bool, float]:
    """One request on a NEW TLS connection from ``address``: (answered 200, seconds)."""
    transport = httpx2.HTTPTransport(verify=pinned, local_address=address)
    started = time.monotonic()
    try:
        with httpx2.Client(base_url=server.url, transport=transport, timeout=5.0,
                          headers={"Authorization": f"Bearer {token}"}) as client:
            ok = client.get("/v1/jobs?limit=1").status_code == 200
    except httpx2.HTTPError:
        ok = False
    return ok, time.monotonic() - started


def _p99(latencies: list[float]) -> float:
    ordered = sorted(latencies)
    return ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]


@pytest.mark.timeout(int(FLOOD_SECONDS) * 2 + 180)
def test_a_tls_flood_without_a_token_does_not_lock_out_a_client_with_one(
        tmp_path: Path) -> None:
    data = tmp_path / "data"
    token = make_token(data, "client", "read")
    with ServeProcess(data, tmp_path / "videos", "--paused") as server:
        pinned = ssl.create_default_context(cafile=str(server.cert))
        assert _request(server, token, "127.0.1.1", pinned)[0]  # served before the flood
        flood = subprocess.Popen(
            [sys.executable, "-m", "tests.api.tls_flood", str(server.port),
             str(FLOOD_SIZE), str(FLOOD_SECONDS), *ATTACKERS],
            cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            env={**os.environ, "PYTHONPATH": os.pathsep.join(
                [str(ROOT), os.environ.get("PYTHONPATH", "")])})
        results: dict[str, list[tuple[bool, float]]] = {"127.0.1.1": [], "127.0.0.9": []}
        try:
            assert flood.stdout is not None
            ready, _, _ = select.select([flood.stdout], [], [], FLOOD_SECONDS / 2)
            assert ready and flood.stdout.readline().strip() == b"ramped", \
                "the flood did not open its connections"
            # Asked for as long as the flood lasts (it ends itself after FLOOD_SECONDS);
            # the deadline only bounds a flood that would not end.
            deadline = time.monotonic() + FLOOD_SECONDS + 60
            while time.monotonic() < deadline and flood.poll() is None:
                for address, answers in results.items():
                    answers.append(_request(server, token, address, pinned))
            out, err = flood.communicate(timeout=60)
        finally:
            if flood.poll() is None:
                flood.kill()
                flood.wait()
        log = server.output()
    counts = json.loads(out.strip().splitlines()[-1]) if out.strip() else {}
    counts["server_log_lines"] = len(log.splitlines())
    lines = []
    for address, answers in results.items():
        answered = sum(ok for ok, _ in answers)
        latencies = [took for _, took in answers]
        lines.append(f"{address}: {answered}/{len(answers)} answered, p50 "
                     f"{sorted(latencies)[len(latencies) // 2] * 1000:.0f} ms, p99 "
                     f"{_p99(latencies) * 1000:.0f} ms")
    print(f"\nflood of {FLOOD_SIZE} TLS connections from {len(ATTACKERS)} addresses for "
          f"{FLOOD_SECONDS:g} s: {counts}\n" + "\n".join(lines))
    assert counts, err[-3000:]
    assert counts["handshakes"] >= len(ATTACKERS), counts  # the flood did complete TLS
    for address, share in (("127.0.1.1", 0.99), ("127.0.0.9", 0.95)):
        answers = results[address]
        assert len(answers) >= 20, lines
        assert sum(ok for ok, _ in answers) >= share * len(answers), lines
        assert _p99([took for _, took in answers]) < 1.0, lines
    assert "Traceback" not in log, log[-3000:]
