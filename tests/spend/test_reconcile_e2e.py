"""Issue 32 items 5 and 6 through real ``reelqueue`` processes: ``reelqueue run`` renders a
sheet on a Runway fake (loopback, bodies in the SDK's shapes: tests/fixtures/runway/
SOURCE.md) that bills gen4.5 20 % above the price table and counts every create it
records, as Runway's usage endpoint does, per model and UTC day; one create's answer is
held past the client's timeout (a lost create, billed); "another tool" on the key makes a
render the journal never saw. Then ``reelqueue spend --reconcile`` and ``reelqueue resolve``
are asked, and nothing is created by asking."""

from __future__ import annotations

import contextlib
import json
import subprocess
import threading
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx2
import pytest

from reelqueue.domain.states import JobState
from reelqueue.mockprovider.clips import render_clip
from reelqueue.store.sqlite import SqliteStore
from tests.proof.harness import REELQUEUE, child_env
from tests.team.file_keyring import BACKEND, FILE_ENV

pytestmark = [pytest.mark.integration]

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "runway"
# What the fake bills per second: gen4.5 20 % above the table's 12 credits/s; the rest as
# the table says (docs/providers.md, "Runway").
RATE = {"gen4.5": 14.4, "gen4_turbo": 5.0, "veo3.1": 40.0, "veo3.1_fast": 15.0}
HOLD = "[hold]"  # a create whose answer is held past the client's timeout
TIMEOUT = "1"


@dataclass
class Fake:
    url: str = ""
    renders: dict[str, dict[str, Any]] = field(default_factory=dict)
    used: Counter[tuple[str, str]] = field(default_factory=Counter)
    creates: Counter[str] = field(default_factory=Counter)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def create(self, body: dict[str, Any]) -> str:
        """Recorded and billed before any answer, as a provider does."""
        rid = str(uuid.uuid4())
        model, seconds = str(body["model"]), int(body["duration"])
        day = datetime.now(UTC).date().isoformat()
        with self.lock:
            self.renders[rid] = {"model": model, "prompt": body["promptText"]}
            self.used[(day, model)] += RATE[model] * seconds
            self.creates[str(body["promptText"])] += 1
        return rid

    def usage(self, start: str, before: str) -> dict[str, Any]:
        with self.lock:
            days = sorted({d for d, _ in self.used if start <= d < before})
            return {"models": sorted({m for _, m in self.used}), "results": [
                {"date": d, "usedCredits": [{"amount": round(a), "model": m}
                                            for (day, m), a in self.used.items() if day == d]}
                for d in days]}


@pytest.fixture
def fake() -> Iterator[Fake]:
    state = Fake()
    organization = (FIXTURES / "organization.json").read_bytes()

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def _send(self, status: int, body: bytes, kind: str = "application/json") -> None:
            self.send_response(status)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            # a held answer: the client gave up, as the test means it to
            with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                self.wfile.write(body)

        def do_GET(self) -> None:
            if self.path == "/v1/organization":
                return self._send(200, organization)
            if self.path.startswith("/v1/tasks/"):
                rid = self.path.rsplit("/", 1)[1]
                if rid not in state.renders:
                    return self._send(404, b'{"error": "Task not found"}')
                task = {"id": rid, "createdAt": "2026-12-06T09:14:03.120Z",
                        "status": "SUCCEEDED", "output": [f"{state.url}/files/{rid}.mp4"]}
                return self._send(200, json.dumps(task).encode())
            if self.path.startswith("/files/"):
                rid = self.path.rsplit("/", 1)[1].removesuffix(".mp4")
                prompt = state.renders.get(rid, {}).get("prompt", "?")
                return self._send(200, render_clip(prompt, rid), "video/mp4")
            return self._send(404, b'{"error": "not found"}')

        def do_POST(self) -> None:
            length = min(int(self.headers.get("Content-Length") or 0), 1 << 20)
            body = json.loads(self.rfile.read(length) or b"{}")
            if self.path == "/v1/organization/usage":
                usage = state.usage(body["startDate"], body["beforeDate"])
                return self._send(200, json.dumps(usage).encode())
            if self.path == "/v1/text_to_video":
                rid = state.create(body)
                if HOLD in str(body["promptText"]):
                    time.sleep(3)  # the client gave up after --http-timeout 1
                return self._send(200, json.dumps({"id": rid}).encode())
            return self._send(404, b'{"error": "not found"}')

        def log_message(self, format: str, *args: Any) -> None:
            return

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    state.url = f"http://127.0.0.1:{server.server_address[1]}"
    try:
        yield state
    finally:
        server.shutdown()
        server.server_close()
        thread.join(10)


def rq(data: Path, env: dict[str, str], *args: str, stdin: str = ""
       ) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*REELQUEUE, "--data-dir", str(data), "--videos-dir",
                           str(data / "videos"), *args], input=stdin, capture_output=True,
                          text=True, timeout=180, env=env, check=False)


def sheet(path: Path, rows: list[tuple[str, str, str, int]]) -> Path:
    lines = ["name,prompt,model,duration"] + [f"{n},{p},{m},{d}" for n, p, m, d in rows]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_reconcile_and_evidence_after_real_runs(tmp_path: Path, fake: Fake) -> None:
    data = tmp_path / "data"
    env = child_env()
    env["PYTHON_KEYRING_BACKEND"] = BACKEND
    env[FILE_ENV] = str(tmp_path / "keyring.json")
    added = rq(data, env, "accounts", "add", "rw", "--provider", "runway", "--capacity", "4",
               "--base-url", fake.url, "--no-check", stdin="key_" + "5" * 64 + "\n")
    assert added.returncode == 0, added.stdout + added.stderr
    first = sheet(tmp_path / "a.csv", [
        ("fox", "a red fox", "gen4.5", 5), ("hen", "a hen", "gen4.5", 5),
        ("owl", "an owl", "gen4.5", 5), ("elk", f"an elk {HOLD}", "veo3.1_fast", 8)])
    run = rq(data, env, "run", str(first), "--provider", "runway", "--no-progress",
             "--http-timeout", TIMEOUT)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "1 outcome unknown" in run.stdout, run.stdout
    # another tool on the key: a render the journal never saw
    httpx2.post(f"{fake.url}/v1/text_to_video", json={
        "model": "veo3.1", "promptText": "elsewhere", "duration": 8}, timeout=10)

    reconciled = rq(data, env, "spend", "--reconcile", "--days", "1", "--json")
    assert reconciled.returncode == 0, reconciled.stderr
    (account,) = json.loads(reconciled.stdout)["accounts"]
    days = {d["model"]: d for d in account["days"]}
    assert days["gen4.5"]["kind"] == "price_drift" and days["gen4.5"]["creates"] == 3
    assert days["gen4.5"]["matching_per_second"] == pytest.approx(14.4)
    assert days["veo3.1_fast"]["kind"] == "matches"  # the lost create was billed, as priced
    assert days["veo3.1"]["kind"] == "unknown_renders" and days["veo3.1"]["creates"] == 0
    text = rq(data, env, "spend", "--reconcile", "--days", "1").stdout
    assert "price drift, the provider charged 20 % more than the table's gen4.5 price" in text
    assert "the price that would match: 14.40 credits/s" in text
    assert "320 credits of renders the journal does not know" in text

    store = SqliteStore.open(data / "journal.sqlite3", now=time.time())
    try:
        (elk,) = [j for j in store.list_jobs() if j.name == "elk"]
    finally:
        store.close()
    assert elk.state == JobState.PARKED and elk.provider_job_id is None
    resolved = rq(data, env, "resolve", str(elk.id))
    assert resolved.returncode == 0, resolved.stderr
    assert "the provider counted it: billed (120 credits used on" in resolved.stdout

    second = sheet(tmp_path / "b.csv", [("yak", "a yak", "veo3.1_fast", 8)])
    again = rq(data, env, "run", str(second), "--provider", "runway", "--no-progress",
               "--http-timeout", TIMEOUT)
    assert again.returncode == 0, again.stdout + again.stderr
    resolved = rq(data, env, "resolve", str(elk.id))
    assert "not provable: 2 creates in the window" in resolved.stdout, resolved.stdout
    # asking created nothing: the lost create was sent once, every row once
    assert fake.creates[f"an elk {HOLD}"] == 1
    assert sum(fake.creates.values()) == 6
