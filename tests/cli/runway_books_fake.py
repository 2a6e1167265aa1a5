"""A Runway fake on loopback that keeps the provider's books (issue 32's "Done when",
balance and tier limits through real ``reelqueue run`` processes).

Its bodies are the SDK's shapes (tests/fixtures/runway/SOURCE.md): ``GET /v1/organization``
is ``organization_view.json`` with the balance and per-model limits a test sets, ``POST
/v1/text_to_video`` answers ``{id}``, ``GET /v1/tasks/{id}`` a RUNNING task with its
``progress`` then SUCCEEDED with its ``output``. Like the provider it charges at the create
(credits per second per model, the table's figures) and refuses a create the balance cannot
pay for with HTTP 400 "You do not have enough credits to run this task." (the fixture
``error_400_credits.json``). It counts, per model, the renders open at the provider (created,
not yet finished) and keeps the largest count seen, and every create and refusal.

A test may hold the renders: a held render stays RUNNING at half way (its progress does not
move) until :meth:`RunwayBooks.release`, so a ``run`` cannot end before the test has done
what it means to do meanwhile.
"""

from __future__ import annotations

import contextlib
import json
import subprocess
import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from reelqueue.mockprovider.clips import render_clip
from tests.proof.harness import REELQUEUE

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "runway"
# Credits per second, as the price table says (docs/providers.md, "Runway").
RATE = {"gen4.5": 12.0, "gen4_turbo": 5.0, "veo3.1": 40.0, "veo3.1_fast": 15.0}
RENDER_SECONDS = 0.5  # how long a render runs at the fake once released


@dataclass
class Task:
    model: str
    prompt: str
    created: float
    released: float | None

    def done(self, now: float) -> bool:
        return self.released is not None and now - max(self.created, self.released) \
            >= RENDER_SECONDS

    def progress(self, now: float) -> float:
        if self.released is None:
            return 0.5
        return min(0.99, 0.5 + 0.5 * (now - max(self.created, self.released))
                   / RENDER_SECONDS)


@dataclass
class RunwayBooks:
    """One Runway organization: its balance, its tier and what it was asked."""

    balance: int
    limits: dict[str, int]
    url: str = ""
    held: bool = False
    tasks: dict[str, Task] = field(default_factory=dict)
    creates: Counter[str] = field(default_factory=Counter)  # per model
    refused: int = 0
    most_open: Counter[str] = field(default_factory=Counter)  # per model
    most_open_total: int = 0
    organization_reads: int = 0
    polls: Counter[str] = field(default_factory=Counter)  # per task id
    lock: threading.Lock = field(default_factory=threading.Lock)
    # When set, an organization read is answered only once this many were asked for at
    # once: processes that connect together then claim together.
    readers_together: threading.Barrier | None = None

    def organization(self) -> bytes:
        body = json.loads((FIXTURES / "organization_view.json").read_text("utf-8"))
        with self.lock:
            self.organization_reads += 1
            body["creditBalance"] = self.balance
            for model, limit in self.limits.items():
                body["tier"]["models"][model]["maxConcurrentGenerations"] = limit
        body["usage"] = {"models": {}}  # no generations today: the daily caps stay far
        return json.dumps(body).encode()

    def open_now(self, model: str | None = None) -> int:
        now = time.monotonic()
        with self.lock:
            return sum(1 for t in self.tasks.values()
                       if not t.done(now) and (model is None or t.model == model))

    def create(self, body: dict[str, Any]) -> str | None:
        """A create: charged at once, or refused (None) when the balance cannot pay."""
        model, seconds = str(body["model"]), int(body["duration"])
        cost = round(RATE[model] * seconds)
        now = time.monotonic()
        with self.lock:
            if cost > self.balance:
                self.refused += 1
                return None
            self.balance -= cost
            rid = str(uuid.uuid4())
            self.tasks[rid] = Task(model, str(body["promptText"]), now,
                                   None if self.held else now)
            self.creates[model] += 1
            open_tasks = [t for t in self.tasks.values() if not t.done(now)]
            self.most_open[model] = max(self.most_open[model],
                                        sum(1 for t in open_tasks if t.model == model))
            self.most_open_total = max(self.most_open_total, len(open_tasks))
        return rid

    def release(self) -> None:
        """Held renders run to their end from now; new ones are no longer held."""
        now = time.monotonic()
        with self.lock:
            self.held = False
            for task in self.tasks.values():
                if task.released is None:
                    task.released = now

    def task(self, rid: str) -> dict[str, Any] | None:
        now = time.monotonic()
        with self.lock:
            task = self.tasks.get(rid)
            if task is None:
                return None
            self.polls[rid] += 1
            if task.done(now):
                return {"id": rid, "createdAt": "2026-12-06T09:14:03.120Z",
                        "status": "SUCCEEDED", "output": [f"{self.url}/files/{rid}.mp4"]}
            return {"id": rid, "createdAt": "2026-12-06T09:14:03.120Z", "status": "RUNNING",
                    "progress": task.progress(now)}


@contextlib.contextmanager
def serve(books: RunwayBooks) -> Iterator[RunwayBooks]:
    """Serve ``books`` on loopback until the block ends."""
    credits_refusal = (FIXTURES / "error_400_credits.json").read_bytes()

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def _send(self, status: int, body: bytes, kind: str = "application/json") -> None:
            self.send_response(status)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                self.wfile.write(body)

        def do_GET(self) -> None:
            if self.path == "/v1/organization":
                if books.readers_together is not None:
                    with contextlib.suppress(threading.BrokenBarrierError):
                        books.readers_together.wait(timeout=120)
                return self._send(200, books.organization())
            if self.path.startswith("/v1/tasks/"):
                task = books.task(self.path.rsplit("/", 1)[1])
                if task is None:
                    return self._send(404, b'{"error": "Task not found"}')
                return self._send(200, json.dumps(task).encode())
            if self.path.startswith("/files/"):
                rid = self.path.rsplit("/", 1)[1].removesuffix(".mp4")
                with books.lock:
                    prompt = books.tasks[rid].prompt if rid in books.tasks else "?"
                return self._send(200, render_clip(prompt, rid), "video/mp4")
            return self._send(404, b'{"error": "not found"}')

        def do_POST(self) -> None:
            length = min(int(self.headers.get("Content-Length") or 0), 1 << 20)
            body = json.loads(self.rfile.read(length) or b"{}")
            if self.path == "/v1/text_to_video":
                rid = books.create(body)
                if rid is None:
                    return self._send(400, credits_refusal)
                return self._send(200, json.dumps({"id": rid}).encode())
            return self._send(404, b'{"error": "not found"}')

        def log_message(self, format: str, *args: Any) -> None:
            return

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    books.url = f"http://127.0.0.1:{server.server_address[1]}"
    try:
        yield books
    finally:
        server.shutdown()
        server.server_close()
        thread.join(10)


def rq_args(data: Path, *args: str, store: str | None = None) -> list[str]:
    """A ``reelqueue`` command line on the data folder ``data`` (and a team store)."""
    team = ["--store", store] if store else []
    return [*REELQUEUE, "--data-dir", str(data), "--videos-dir", str(data / "videos"), *team,
            *args]


def rq(data: Path, env: dict[str, str], *args: str, stdin: str = "",
       store: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(rq_args(data, *args, store=store), input=stdin,
                          capture_output=True, text=True, timeout=180, env=env, check=False)


def sheet(path: Path, rows: list[tuple[str, str, str, int]]) -> Path:
    lines = ["name,prompt,model,duration"] + [f"{n},{p},{m},{d}" for n, p, m, d in rows]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def until(check: Callable[[], bool], proc: subprocess.Popen[str] | None = None,
          what: str = "") -> None:
    """Wait for ``check``, bounded by progress: it fails when ``proc`` ended first (the
    thing awaited can no longer happen), never on a wall-clock guess; a last bound of
    five minutes only keeps a broken build from hanging the suite."""
    give_up = time.monotonic() + 300
    while not check():
        if proc is not None and proc.poll() is not None:
            out, err = proc.communicate()
            raise AssertionError(f"run ended before {what}: {out}{err}")
        assert time.monotonic() < give_up, f"never: {what}"
        time.sleep(0.02)
