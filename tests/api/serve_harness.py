"""A real ``reelqueue serve`` process over TLS for the API tests, and an httpx client that
pins its self-signed certificate (the file the server wrote; verified, never skipped).

Every process is started in its own session and killed by its own pid in a ``finally``.
"""

from __future__ import annotations

import contextlib
import socket
import ssl
import subprocess
import time
from pathlib import Path
from typing import IO, Any

import httpx2

from tests.proof.harness import REELQUEUE, START_TIMEOUT, child_env, cli, kill_process, wait_for


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def make_token(data: Path, name: str, scope: str) -> str:
    done = cli(data, "tokens", "add", name, "--scope", scope)
    assert done.returncode == 0, done.stderr
    token = done.stdout.strip().splitlines()[-1]
    assert token.startswith("rq_"), done.stdout
    return token


class ServeProcess:
    """One ``reelqueue serve`` on a fixed loopback port (so a restart keeps the URL)."""

    def __init__(self, data: Path, videos: Path, *options: str, port: int | None = None,
                 log_name: str = "serve") -> None:
        self.data = data
        self.videos = videos
        self.options = list(options)
        self.port = port or free_port()
        self.url = f"https://127.0.0.1:{self.port}"
        self.proc: subprocess.Popen[bytes] | None = None
        self._log: IO[bytes] | None = None
        self.log_path = data.parent / f"{log_name}.log"
        self.starts = 0

    @property
    def cert(self) -> Path:
        return self.data / "api-cert.pem"

    def start(self) -> ServeProcess:
        self.starts += 1
        self._log = self.log_path.open("ab")
        self.proc = subprocess.Popen(
            [*REELQUEUE, "--data-dir", str(self.data), "--videos-dir", str(self.videos),
             "serve", "--listen", f"127.0.0.1:{self.port}", *self.options],
            stdin=subprocess.DEVNULL, stdout=self._log, stderr=subprocess.STDOUT,
            env=child_env(), start_new_session=True)
        marker = f"Serving https://127.0.0.1:{self.port}/v1"

        def serving() -> bool:
            assert self.proc is not None
            if self.proc.poll() is not None:
                raise AssertionError(f"serve exited: {self.output()[-3000:]}")
            return self.output().count(marker) >= self.starts

        wait_for(serving, START_TIMEOUT, "serve to listen", interval=0.05)
        return self

    def output(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    def kill(self) -> None:
        proc, self.proc = self.proc, None
        kill_process(proc)
        if self._log is not None:
            self._log.close()
            self._log = None

    def stop(self) -> None:
        proc = self.proc
        if proc is not None and proc.poll() is None:
            proc.terminate()
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=30)
        self.kill()

    def client(self, token: str | None = None, **kwargs: Any) -> httpx2.Client:
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        pinned = ssl.create_default_context(cafile=str(self.cert))
        return httpx2.Client(base_url=self.url, verify=pinned, headers=headers,
                            timeout=kwargs.pop("timeout", 30.0), **kwargs)

    def __enter__(self) -> ServeProcess:
        try:
            return self.start()
        except BaseException:
            self.stop()
            raise

    def __exit__(self, *exc: object) -> None:
        self.stop()


def submit_until_answered(client: httpx2.Client, body: dict[str, Any], key: str,
                          deadline_seconds: float = 120.0) -> httpx2.Response:
    """POST /v1/jobs, retried with the same key after any connection error."""
    deadline = time.monotonic() + deadline_seconds
    while True:
        try:
            return client.post("/v1/jobs", json=body, headers={"Idempotency-Key": key})
        except httpx2.TransportError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.05)
