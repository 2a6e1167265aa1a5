"""A fake of one provider's documented API, as its own process, for the adapter kill test.

Usage::

    python -m tests.proof.provider_server --kind openai-compat|replicate|luma-legacy \
        --port 0 --state FILE [--seed N] [--hold LOW HIGH] [--list-delay LOW HIGH]
        [--render LOW HIGH] [--other PROMPT]... [--filler N]
        [--credits N] [--reject-key] [--refuse-duration SECONDS...]

It prints ``fake provider listening on http://127.0.0.1:PORT`` once it listens (loopback
only) and serves the calls the adapters in ``app/reelqueue/providers/adapters`` make, in
the shapes their recorded fixtures (``tests/fixtures/<provider>/SOURCE.md``) and
``docs/reconciliation/*.md`` follow:

``openai-compat`` (openai-python ``resources/videos.py``, ``types/video.py``; base
``/v1``): ``POST /videos`` (multipart form: prompt, model, seconds, size) answers a video
object; ``GET /videos/{id}`` reports ``queued`` / ``in_progress`` (``progress``) /
``completed`` with an ``openai-poll-after-ms`` header; ``GET /videos/{id}/content`` is the
file; ``GET /videos?limit&order&after`` is a ``ConversationCursorPage`` (``data``,
``first_id``, ``last_id``, ``has_more``), at most 100 a page, each video echoing its
``prompt`` and ``model`` (the dated snapshot of the model asked for, as OpenAI names it).

``replicate`` (replicate-python-beta ``resources/predictions.py``, ``types/prediction.py``;
base ``/v1``): ``POST /models/{owner}/{name}/predictions`` with ``{input}``;
``GET /predictions/{id}`` reports ``starting`` / ``processing`` / ``succeeded`` with
``output`` a file URL; ``GET /predictions?created_after&created_before`` lists 100 a page,
newest first, with a ``next`` cursor URL on the same host; each echoes ``model`` and
``input`` as sent.

``luma-legacy`` (lumaai-python ``api.md``, ``types/generation.py``,
``generation_list_response.py``; base ``/dream-machine/v1``): ``POST /generations/video``
answers a Generation; ``GET /generations/{id}`` reports ``queued`` / ``dreaming`` /
``completed`` with ``assets.video``; ``GET /generations?limit&offset`` answers
``{generations, count, has_more, limit, offset}`` (default and largest page 100), each
Generation echoing its whole create ``request``.

What a real provider does and a test needs to see:

- every create is recorded (and billed) *before* its answer, which is then held back a
  random ``--hold`` seconds: a process killed meanwhile never learns the render's id;
- a new render shows in the list only ``--list-delay`` seconds after it was recorded;
- ``--other-during PROMPT``: when PROMPT is first created, another client on the same key
  creates it too, 0.2-2 s later (inside that create's window);
- ``--other PROMPT`` renders were made earlier by another client on the same key (a few
  minutes before this process started, outside any create window of the test), with the
  same prompt as some rows; ``--filler N`` more of them with other prompts make the list
  longer than one page.

Failure modes (all off by default; routing's proof, issue 24), each answered at once (never
held back) in the provider's documented error shape, the same bodies as the adapters' unit
fixtures (``tests/fixtures/<provider>/SOURCE.md``, "Failure modes of the proof fake"):

- ``--credits N``: the account has credits for N creates; every create after the N-th
  accepted one is refused as out of credits: OpenAI 429 ``insufficient_quota`` (error-codes
  guide: "You exceeded your current quota"), Replicate 402 "Insufficient credit" (RFC 7807
  body of replicate-python ``exceptions.py``), Luma 400 ``{"detail": "Insufficient
  credits"}`` (SDK ``_exceptions.py`` BadRequestError; Luma bills before the render);
- ``--reject-key``: every request is answered 401 (OpenAI ``invalid_api_key``, Replicate
  "Unauthenticated", Luma ``{"detail": "Invalid API key"}``);
- ``--refuse-duration SECONDS...``: a create asking for one of these durations (OpenAI's
  ``seconds`` form field, Replicate's ``input.duration``, Luma's ``duration`` "9s") is
  refused as invalid input: OpenAI 400 ``invalid_request_error`` with ``param`` "seconds",
  Replicate 422 "Input validation failed" with ``invalid_fields``, Luma 400 ``{"detail":
  "Invalid request: ..."}``.

A refused create makes (and bills) nothing: it is not in ``creates`` or ``renders`` but in
``refused`` (prompt, status, reason), so a test sees every create that reached the fake.

Every create, every held answer and every download is written to the ``--state`` JSON file
(replaced atomically), which the test reads: ``creates`` (count per prompt), ``holding``
(answers held back right now), ``renders`` (id, prompt, other, created, downloads),
``refused`` (creates answered with an error), ``accepted`` (creates that made a render).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import threading
import time
import uuid
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

BASES = {"openai-compat": "/v1", "replicate": "/v1", "luma-legacy": "/dream-machine/v1"}
PAGE_SIZE = 100  # the documented page size (and largest limit) of all three lists
OPENAI_SNAPSHOT = "-2025-10-06"  # the API names the snapshot that rendered an alias


def video_bytes(render_id: str) -> bytes:
    """A small file that starts like an MP4 (an ``ftyp`` box), unique per render."""
    body = f"fake video of render {render_id}\n".encode() * 64
    return b"\x00\x00\x00\x18ftypmp42\x00\x00\x00\x00mp42isom" + body


def iso(seconds: float) -> str:
    return datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


class Fake:
    """The provider's records, shared by the request threads."""

    def __init__(self, args: argparse.Namespace) -> None:
        self.kind: str = args.kind
        self.state_path = Path(args.state)
        self.rng = random.Random(args.seed)
        self.hold = tuple(args.hold)
        self.list_delay = tuple(args.list_delay)
        self.render = tuple(args.render)
        self.lock = threading.Lock()
        self.renders: dict[str, dict[str, Any]] = {}
        self.order: list[str] = []  # creation order
        self.creates: dict[str, int] = {}
        self.during: set[str] = set(args.other_during)
        self.holding = 0
        self.held_total = 0
        self.credits: int | None = args.credits
        self.reject_key: bool = args.reject_key
        self.refuse_durations = {float(d) for d in args.refuse_duration}
        self.accepted = 0  # creates that made a render (against --credits)
        self.refused: list[dict[str, Any]] = []
        now = time.time()
        prompts = list(args.other) + [f"another client's clip {i}" for i in range(args.filler)]
        for i, prompt in enumerate(prompts):
            created = now - 400 + i * 0.5  # long before any create window of the test
            self._record(prompt, self._echo_for(prompt), created=created, other=True)
        self.write_state()

    # -- records ----------------------------------------------------------------------
    def _new_id(self) -> str:
        if self.kind == "openai-compat":
            return "video_" + uuid.uuid4().hex
        if self.kind == "replicate":
            return uuid.uuid4().hex[:26]
        return str(uuid.uuid4())

    def _echo_for(self, prompt: str) -> dict[str, Any]:
        if self.kind == "openai-compat":
            return {"prompt": prompt, "model": "sora-2"}
        if self.kind == "replicate":
            return {"model": "google/veo-3.1", "input": {"prompt": prompt}}
        return {"generation_type": "video", "prompt": prompt, "model": "ray-2"}

    def _record(self, prompt: str, echo: dict[str, Any], *, created: float,
                other: bool) -> dict[str, Any]:
        rid = self._new_id()
        render = {"id": rid, "prompt": prompt, "echo": echo, "other": other,
                  "created": created,
                  "listed_at": created if other else created + self.rng.uniform(
                      *self.list_delay),
                  "done_at": created + (1.0 if other else self.rng.uniform(*self.render)),
                  "downloads": 0}
        self.renders[rid] = render
        self.order.append(rid)
        return render

    def refusal(self, prompt: str, duration: float | None) -> tuple[int, Any] | None:
        """The error answer a create gets instead of a render (recorded), or None."""
        with self.lock:
            answer: tuple[int, Any] | None = None
            reason = ""
            if duration is not None and duration in self.refuse_durations:
                answer, reason = _invalid_duration(self.kind, duration), "invalid duration"
            elif self.credits is not None and self.accepted >= self.credits:
                answer, reason = _out_of_credits(self.kind), "out of credits"
            if answer is None:
                self.accepted += 1  # taken: the caller records the render
                return None
            self.refused.append({"prompt": prompt, "status": answer[0], "reason": reason,
                                 "at": time.time()})
            self.write_state()
            return answer

    def key_refused(self, verb: str, path: str) -> None:
        with self.lock:
            self.refused.append({"prompt": None, "status": 401, "reason": "key rejected",
                                 "request": f"{verb} {path}", "at": time.time()})
            self.write_state()

    def create(self, prompt: str, echo: dict[str, Any]) -> tuple[dict[str, Any], float]:
        """Record (bill) the render first; the caller then holds the answer back."""
        with self.lock:
            render = self._record(prompt, echo, created=time.time(), other=False)
            self.creates[prompt] = self.creates.get(prompt, 0) + 1
            if prompt in self.during and self.creates[prompt] == 1:
                # Another client on the same key renders the same prompt moments later:
                # inside this create's window, listed as soon as it exists.
                later = render["created"] + self.rng.uniform(0.2, 2.0)
                self._record(prompt, dict(echo), created=later, other=True)
            self.holding += 1
            self.held_total += 1
            hold = self.rng.uniform(*self.hold)
            self.write_state()
        return render, hold

    def answered(self) -> None:
        with self.lock:
            self.holding -= 1
            self.write_state()

    def downloaded(self, rid: str) -> None:
        with self.lock:
            self.renders[rid]["downloads"] += 1
            self.write_state()

    def listed(self) -> list[dict[str, Any]]:
        """What the list shows now, newest first."""
        now = time.time()
        with self.lock:
            shown = [self.renders[r] for r in self.order if self.renders[r]["listed_at"] <= now]
        return sorted(shown, key=lambda r: r["created"], reverse=True)

    def write_state(self) -> None:
        state = {"creates": self.creates, "holding": self.holding,
                 "held_total": self.held_total, "accepted": self.accepted,
                 "refused": self.refused,
                 "renders": [{k: self.renders[r][k] for k in
                              ("id", "prompt", "other", "created", "downloads")}
                             for r in self.order]}
        part = self.state_path.with_name(self.state_path.name + ".part")
        part.write_text(json.dumps(state), "utf-8")
        os.replace(part, self.state_path)

    # -- views ------------------------------------------------------------------------
    def phase(self, render: dict[str, Any]) -> tuple[str, int]:
        """(documented state, progress 0-100) of a render now."""
        now = time.time()
        if now >= render["done_at"]:
            return {"openai-compat": "completed", "replicate": "succeeded",
                    "luma-legacy": "completed"}[self.kind], 100
        share = (now - render["created"]) / max(0.001, render["done_at"] - render["created"])
        queued = share < 0.3
        word = {"openai-compat": ("queued", "in_progress"),
                "replicate": ("starting", "processing"),
                "luma-legacy": ("queued", "dreaming")}[self.kind][0 if queued else 1]
        return word, int(share * 100)

    def view(self, render: dict[str, Any], origin: str) -> dict[str, Any]:
        state, progress = self.phase(render)
        done = progress == 100
        rid, echo, created = render["id"], render["echo"], render["created"]
        file_url = f"{origin}/files/{rid}.mp4"
        if self.kind == "openai-compat":
            return {"id": rid, "object": "video", "model": echo["model"] + OPENAI_SNAPSHOT,
                    "status": state, "progress": progress, "created_at": int(created),
                    "completed_at": int(render["done_at"]) if done else None,
                    "expires_at": int(render["done_at"]) + 3600 if done else None,
                    "seconds": "4", "size": "1280x720", "prompt": echo["prompt"],
                    "remixed_from_video_id": None, "error": None}
        if self.kind == "replicate":
            get = f"{origin}/v1/predictions/{rid}"
            return {"id": rid, "model": echo["model"], "version": "hidden",
                    "input": echo["input"], "logs": "", "output": file_url if done else None,
                    "data_removed": False, "error": None, "status": state, "source": "api",
                    "created_at": iso(created), "started_at": iso(created + 0.1),
                    "completed_at": iso(render["done_at"]) if done else None, "metrics": {},
                    "urls": {"get": get, "cancel": get + "/cancel",
                             "web": f"https://replicate.com/p/{rid}"}}
        return {"id": rid, "generation_type": "video", "state": state, "failure_reason": None,
                "created_at": iso(created),
                "assets": {"video": file_url, "image": None, "progress_video": None}
                if done else None,
                "model": echo["model"], "request": echo}


class Handler(BaseHTTPRequestHandler):
    fake: Fake
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        return

    # -- plumbing -----------------------------------------------------------------------
    def _origin(self) -> str:
        return f"http://127.0.0.1:{self.server.server_port}"  # type: ignore[attr-defined]

    def _send(self, status: int, body: Any, headers: dict[str, str] | None = None) -> None:
        data = json.dumps(body).encode()
        try:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            for name, value in (headers or {}).items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True  # the client was killed meanwhile

    def _body(self) -> bytes | None:
        """The request's body; None when the client went away before sending all of it
        (a SIGKILL mid-request): no server acts on half a request."""
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        return raw if len(raw) == length else None

    def _split(self) -> tuple[str, dict[str, list[str]]]:
        parts = urlsplit(self.path)
        base = BASES[self.fake.kind]
        path = parts.path
        return (path[len(base):] if path.startswith(base + "/") else path), parse_qs(parts.query)

    def _missing(self) -> None:
        self._send(404, {"detail": "Not found."})

    # -- verbs ------------------------------------------------------------------------
    def do_POST(self) -> None:
        path, _ = self._split()
        raw = self._body()
        if raw is None:
            self.close_connection = True
            return
        kind = self.fake.kind
        if self._key_rejected("POST", path):
            return
        duration: float | None = None
        if kind == "openai-compat" and path == "/videos":
            fields = _form_fields(self.headers.get("Content-Type", ""), raw)
            if "prompt" not in fields:  # the API requires it: 400, nothing created
                self._send(400, {"error": {"message": "Missing required parameter: "
                                           "'prompt'.", "type": "invalid_request_error"}})
                return
            echo = {"prompt": fields["prompt"], "model": fields.get("model", "")}
            prompt = echo["prompt"]
            duration = _number(fields.get("seconds"))
        elif kind == "replicate" and path.startswith("/models/") and \
                path.endswith("/predictions"):
            body = json.loads(raw)
            model = path[len("/models/"):-len("/predictions")]
            echo = {"model": model, "input": body["input"]}
            prompt = body["input"]["prompt"]
            duration = _number(body["input"].get("duration"))
        elif kind == "luma-legacy" and path == "/generations/video":
            body = json.loads(raw)
            echo = {"generation_type": "video", **body}
            prompt = body["prompt"]
            duration = _number(str(body.get("duration") or "").removesuffix("s"))
        else:
            self._missing()
            return
        refused = self.fake.refusal(prompt, duration)
        if refused is not None:
            self._send(*refused)  # nothing made: answered at once
            return
        render, hold = self.fake.create(prompt, echo)
        try:
            time.sleep(hold)  # recorded and billed; the answer is held back
            answer = self.fake.view(render, self._origin())
            status = 200 if kind == "luma-legacy" else 201
            self._send(status, answer)
        finally:
            self.fake.answered()

    def _key_rejected(self, verb: str, path: str) -> bool:
        """``--reject-key``: answer 401 in the provider's shape (True when answered)."""
        if not self.fake.reject_key:
            return False
        self.fake.key_refused(verb, path)
        self._send(401, KEY_REJECTED[self.fake.kind])
        return True

    def do_GET(self) -> None:
        path, query = self._split()
        kind, origin = self.fake.kind, self._origin()
        if self._key_rejected("GET", path):
            return
        if path.startswith("/files/"):
            self._file(path[len("/files/"):].removesuffix(".mp4"))
            return
        if kind == "openai-compat":
            if path == "/videos":
                self._openai_list(query)
            elif path.startswith("/videos/") and path.endswith("/content"):
                self._file(path[len("/videos/"):-len("/content")])
            elif path.startswith("/videos/"):
                self._one(path[len("/videos/"):], {"openai-poll-after-ms": "300"})
            else:
                self._missing()
        elif kind == "replicate":
            if path == "/predictions":
                self._replicate_list(query, origin)
            elif path.startswith("/predictions/"):
                self._one(path[len("/predictions/"):])
            elif path == "/account":
                self._send(200, {"type": "user", "username": "fake", "name": "Fake"})
            else:
                self._missing()
        elif path == "/generations":
            self._luma_list(query)
        elif path.startswith("/generations/"):
            self._one(path[len("/generations/"):])
        elif path == "/credits":
            # USD cents (Luma's documented unit): ample, so the balance never gates these
            # runs (issue 32 item 4 gates on it); --credits N models running out instead.
            self._send(200, {"credit_balance": 100_000_000.0})
        else:
            self._missing()

    def _one(self, rid: str, headers: dict[str, str] | None = None) -> None:
        render = self.fake.renders.get(rid)
        if render is None:
            self._missing()
            return
        self._send(200, self.fake.view(render, self._origin()), headers)

    def _file(self, rid: str) -> None:
        render = self.fake.renders.get(rid)
        if render is None or self.fake.phase(render)[1] < 100:
            self._missing()
            return
        data = video_bytes(rid)
        try:
            self.send_response(200)
            self.send_header("Content-Type", "video/mp4")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True
            return
        self.fake.downloaded(rid)

    def _openai_list(self, query: dict[str, list[str]]) -> None:
        limit = min(PAGE_SIZE, int(query.get("limit", ["20"])[0]))
        shown = self.fake.listed()
        if query.get("order", ["desc"])[0] == "asc":
            shown.reverse()
        after = query.get("after", [None])[0]
        if after:
            ids = [r["id"] for r in shown]
            shown = shown[ids.index(after) + 1:] if after in ids else []
        page = shown[:limit]
        data = [self.fake.view(r, self._origin()) for r in page]
        self._send(200, {"object": "list", "data": data,
                         "first_id": data[0]["id"] if data else None,
                         "last_id": data[-1]["id"] if data else None,
                         "has_more": len(shown) > limit})

    def _replicate_list(self, query: dict[str, list[str]], origin: str) -> None:
        def bound(name: str) -> float | None:
            value = query.get(name, [None])[0]
            return datetime.fromisoformat(value).timestamp() if value else None

        after, before = bound("created_after"), bound("created_before")
        shown = [r for r in self.fake.listed()
                 if (after is None or r["created"] >= after)
                 and (before is None or r["created"] < before)]
        start = int(query.get("cursor", ["0"])[0])
        page = shown[start:start + PAGE_SIZE]
        next_link = None
        if start + PAGE_SIZE < len(shown):
            keep = {k: v[0] for k, v in query.items() if k != "cursor"}
            next_link = f"{origin}/v1/predictions?" + urlencode(
                {**keep, "cursor": str(start + PAGE_SIZE)})
        self._send(200, {"next": next_link, "previous": None,
                         "results": [self.fake.view(r, origin) for r in page]})

    def _luma_list(self, query: dict[str, list[str]]) -> None:
        limit = min(PAGE_SIZE, int(query.get("limit", [str(PAGE_SIZE)])[0]))
        offset = int(query.get("offset", ["0"])[0])
        shown = self.fake.listed()
        page = shown[offset:offset + limit]
        self._send(200, {"generations": [self.fake.view(r, self._origin()) for r in page],
                         "count": len(page), "has_more": offset + limit < len(shown),
                         "limit": limit, "offset": offset})


# -- the documented error answers (tests/fixtures/<provider>/SOURCE.md) ---------------------
KEY_REJECTED: dict[str, Any] = {
    # developers.openai.com/docs/guides/error-codes (401); body {error: {message, type,
    # param, code}} as openai-python's APIStatusError reads it (fixture error_401.json)
    "openai-compat": {"error": {"message": "Incorrect API key provided.",
                                "type": "invalid_request_error", "param": None,
                                "code": "invalid_api_key"}},
    # replicate-python exceptions.py ReplicateError: RFC 7807 (fixture error_401.json)
    "replicate": {"title": "Unauthenticated",
                  "detail": "You did not pass a valid authentication token", "status": 401},
    # lumaai-python _exceptions.py AuthenticationError (401); body {detail} (error_401.json)
    "luma-legacy": {"detail": "Invalid API key"},
}


def _out_of_credits(kind: str) -> tuple[int, Any]:
    if kind == "openai-compat":  # error-codes guide: 429 insufficient_quota
        return 429, {"error": {
            "message": "You exceeded your current quota, please check your plan and billing "
                       "details.", "type": "insufficient_quota", "param": None,
            "code": "insufficient_quota"}}
    if kind == "replicate":  # HTTP 402 Payment Required, RFC 7807 (error_402.json)
        return 402, {"title": "Insufficient credit",
                     "detail": "You have insufficient credit to run this model. Go to "
                               "https://replicate.com/account/billing#billing to purchase "
                               "credit. Once you purchase credit, please wait a few minutes "
                               "before trying again.", "status": 402}
    return 400, {"detail": "Insufficient credits"}  # Luma (error_400_credits.json)


def _invalid_duration(kind: str, seconds: float) -> tuple[int, Any]:
    shown = f"{seconds:g}"
    if kind == "openai-compat":  # 400 invalid_request_error naming the field (param)
        return 400, {"error": {
            "message": f"Invalid value for 'seconds': '{shown}'. This model does not "
                       f"support {shown}-second videos.", "type": "invalid_request_error",
            "param": "seconds", "code": "invalid_value"}}
    if kind == "replicate":  # 422 "Input validation failed" (error_422.json)
        words = f"duration {shown} is not supported by this model"
        return 422, {"title": "Input validation failed", "detail": f"- input.duration: {words}",
                     "status": 422, "invalid_fields": [
                         {"type": "enum", "field": "input.duration", "description": words}]}
    return 400, {"detail": f"Invalid request: duration {shown}s is not supported for this "
                           "model"}  # Luma's 400 {detail} (error_400.json)


def _number(value: Any) -> float | None:
    try:
        return float(value)
    except (TypeError, ValueError):
        return None


def _form_fields(content_type: str, raw: bytes) -> dict[str, str]:
    """The text fields of a multipart/form-data body (the SDK's create form)."""
    marker = "boundary="
    if marker not in content_type:
        return {}
    boundary = content_type.split(marker, 1)[1].split(";")[0].strip().strip('"').encode()
    fields: dict[str, str] = {}
    for part in raw.split(b"--" + boundary):
        head, _, value = part.partition(b"\r\n\r\n")
        if b'name="' not in head or b"filename=" in head:
            continue
        name = head.split(b'name="', 1)[1].split(b'"', 1)[0].decode()
        fields[name] = value.removesuffix(b"\r\n").decode("utf-8")
    return fields


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--kind", choices=sorted(BASES), required=True)
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--state", required=True)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--hold", type=float, nargs=2, default=(0.5, 2.0))
    parser.add_argument("--list-delay", type=float, nargs=2, default=(0.2, 1.2))
    parser.add_argument("--render", type=float, nargs=2, default=(1.0, 2.5))
    parser.add_argument("--other", action="append", default=[])
    parser.add_argument("--filler", type=int, default=0)
    parser.add_argument("--other-during", action="append", default=[])
    parser.add_argument("--credits", type=int, default=None)
    parser.add_argument("--reject-key", action="store_true")
    parser.add_argument("--refuse-duration", type=float, nargs="+", default=[])
    args = parser.parse_args(argv)
    handler = type("BoundHandler", (Handler,), {"fake": Fake(args)})
    server = ThreadingHTTPServer(("127.0.0.1", args.port), handler)
    server.daemon_threads = True
    print(f"fake provider listening on http://127.0.0.1:{server.server_port}"
          f"{BASES[args.kind]}", flush=True)
    try:
        server.serve_forever(poll_interval=0.1)
    finally:
        server.server_close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
