"""The mock provider's HTTP request handler: routing, auth, and the injected faults.

One instance answers one connection (HTTP/1.1 keep-alive) on its own thread; the shared
memory is :class:`~reelqueue.mockprovider.state.MockState`, reached through the server.

The API (all JSON; ``Authorization: Bearer KEY`` checked when ``accept_keys`` is set):

- ``POST /v1/renders`` ``{"prompt", "client_token", "job_key", "params", "render_seconds"?}``
  creates a render: ``201 {"id", "status": "queued", "client_token"}``.
- ``GET /v1/renders/{id}`` polls it; ``POST /v1/renders/{id}/cancel`` cancels it;
  ``GET /v1/files/{id}.mp4`` downloads its video.
- ``GET /v1/renders?client_token=T`` looks renders up by client token (``{"data": [...]}``;
  404 ``lookup_disabled`` when ``lookup_enabled`` is off).
- ``GET /v1/renders`` without ``client_token`` lists the renders of the caller's key,
  newest first: query ``created_after`` (Unix seconds: only renders created at or after
  it), ``limit`` (1-100, default ``list_page_size``), ``before`` (a render id from an
  earlier page: start after it). Answer ``{"data": [record...], "has_more": bool,
  "next_cursor": id or null}``; a record is ``{"id", "created_at" (Unix seconds, float),
  "status", "prompt", "params"}`` as the create sent them, plus ``"client_token"`` only
  while the lookup is on. With ``with=status`` each record also carries what a poll of
  it answers (``"progress"``, ``"video_url"``, ``"cost"``, ``"error"``) where it has
  them: one list call polls many renders. Such a list leaves out a render whose polls a
  directive makes fail (``poll_timeout``, ``poll_malformed``): it is polled on its own
  throughout, so the fault meets its own poll (the fault matrix). A new render is listed
  only once its list delay (``list_delay_min``..``list_delay_max``) has passed. 404
  ``list_disabled`` when ``list_enabled`` is off; 400 ``invalid_cursor`` for an unknown ``before``.
- ``GET /v1/account`` checks the key.
- ``GET /v1/account/view`` answers the account's figures (``--account-view JSON``, else
  ``options.DEFAULT_ACCOUNT_VIEW``): ``{"organization_id", "balance": {"amount", "unit"},
  "models": {model: {"concurrency", "daily", "daily_window", "used_today", "day"}}}``;
  without a configured body each model's ``used_today`` is the creates counted so far and
  ``day`` today's UTC date. A ``Date`` header says when (the server's clock).

Test hooks (no key needed): ``GET /_mock/counters`` (also ``running_now``: renders running
at this instant), ``GET /_mock/timeline`` (each render's job key, Unix creation and end
times, for benchmarks), ``POST /_mock/reset`` (counters),
``POST /_mock/foreign`` ``{"prompt", "params"?, "created_at"? | "ago"?}`` plants a render
of another client on the caller's key (the ``Authorization`` header it sends), created at
``created_at`` (Unix seconds) or ``ago`` seconds before now (default now); answers
``{"id", "created_at"}``.
"""

from __future__ import annotations

import contextlib
import gzip
import io
import json
import logging
import re
import socket
import struct
from http.server import BaseHTTPRequestHandler
from typing import Any, Protocol, cast
from urllib.parse import parse_qs, urlsplit

from reelqueue.mockprovider.directives import Directive, DirectiveError, parse_directives
from reelqueue.mockprovider.options import DEFAULT_ACCOUNT_VIEW, MAX_PAGE_SIZE
from reelqueue.mockprovider.state import MockState, Render, UnknownCursor, key_id_of

log = logging.getLogger("reelqueue.mockprovider")


MAX_BODY = 1 << 20
SLOW_CHUNK = 1024
DEFAULT_SLOW_DELAY = 0.1
MIB = 1 << 20
POLL_FAULTS = ("poll_timeout", "poll_malformed")
"""The directives that break a render's own poll; a list ``with=status`` leaves it out."""
DEFAULT_HOSTILE_MIB = 64.0
"""How much ``oversize`` and ``gzip_bomb`` send (decoded) when given no value."""

_RENDER = re.compile(r"^/v1/renders/([A-Za-z0-9_-]+)$")
_CANCEL = re.compile(r"^/v1/renders/([A-Za-z0-9_-]+)/cancel$")
_FILE = re.compile(r"^/v1/files/([A-Za-z0-9_-]+)\.mp4$")


class _HasState(Protocol):
    state: MockState
    base_url: str


class MockHandler(BaseHTTPRequestHandler):
    """Answers the ``/v1`` API and the ``/_mock`` test hooks."""

    protocol_version = "HTTP/1.1"
    server_version = "ReelQueueMock/1"
    timeout = 30.0  # an idle keep-alive connection is closed after this
    disable_nagle_algorithm = True  # headers and body go out as separate writes

    # -- plumbing -------------------------------------------------------------------

    @property
    def state(self) -> MockState:
        return cast(_HasState, self.server).state

    @property
    def base_url(self) -> str:
        return cast(_HasState, self.server).base_url

    def log_message(self, format: str, *args: Any) -> None:
        log.debug("mock provider: " + format, *args)

    def do_GET(self) -> None:
        self._dispatch("GET")

    def do_POST(self) -> None:
        self._dispatch("POST")

    def do_PUT(self) -> None:
        self._dispatch("PUT")

    def do_DELETE(self) -> None:
        self._dispatch("DELETE")

    def _read_body(self) -> bytes:
        try:
            length = int(self.headers.get("Content-Length") or 0)
        except ValueError:
            length = 0
        if length <= 0:
            return b""
        return self.rfile.read(min(length, MAX_BODY))

    def _send(
        self,
        status: int,
        body: bytes,
        content_type: str,
        headers: dict[str, str] | None = None,
    ) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(body)

    def _json(self, status: int, obj: Any, headers: dict[str, str] | None = None) -> None:
        self._send(status, json.dumps(obj).encode(), "application/json", headers)

    def _error(
        self, status: int, code: str, message: str, headers: dict[str, str] | None = None
    ) -> None:
        self._json(status, {"error": {"code": code, "message": message}}, headers)

    def _hang_then_drop(self, seconds: float | None = None) -> None:
        """Hold the connection past any client timeout (``hang_seconds`` unless told),
        then close it with no answer."""
        self.state.stopping.wait(self.state.options.hang_seconds if seconds is None
                                 else seconds)
        self.close_connection = True

    def _reset(self) -> None:
        """Close the connection with a TCP reset and no answer."""
        self.close_connection = True
        with contextlib.suppress(OSError):  # a platform without SO_LINGER: plain close
            self.connection.setsockopt(
                socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0)
            )

    def _authorized(self) -> bool:
        accepted = self.state.options.accept_keys
        if accepted is None:
            return True
        scheme, _, key = (self.headers.get("Authorization") or "").partition(" ")
        return scheme.lower() == "bearer" and key.strip() in accepted

    def _key_id(self) -> str:
        """The API key named by a short hash (counters may be printed; keys never are)."""
        _, _, key = (self.headers.get("Authorization") or "").partition(" ")
        return key_id_of(key)

    def _deny(self) -> None:
        self._error(401, "invalid_api_key", "The API key was not accepted.")

    # -- routing --------------------------------------------------------------------

    def _dispatch(self, method: str) -> None:
        parts = urlsplit(self.path)
        path = parts.path
        # Blank values kept: ``?client_token=`` is a lookup (refused), never a list.
        query = {k: v[0] for k, v in parse_qs(parts.query, keep_blank_values=True).items()}
        body = self._read_body() if method in ("POST", "PUT") else b""
        routes: list[tuple[str, re.Pattern[str] | str, Any]] = [
            ("POST", "/v1/renders", lambda: self._create(body)),
            ("GET", "/v1/renders", lambda: (self._lookup(query) if "client_token" in query
                                            else self._list(query))),
            ("GET", "/v1/account", self._account),
            ("GET", "/v1/account/view", self._account_view),
            ("GET", "/_mock/counters", lambda: self._json(200, self.state.counters())),
            ("GET", "/_mock/timeline", lambda: self._json(200, self.state.timeline())),
            ("POST", "/_mock/reset", self._reset_counters),
            ("POST", "/_mock/foreign", lambda: self._plant_foreign(body)),
            ("GET", _RENDER, self._poll),
            ("POST", _CANCEL, self._cancel),
            ("GET", _FILE, lambda render_id: self._download(render_id, query)),
        ]
        path_matched = False
        for route_method, pattern, action in routes:
            if isinstance(pattern, str):
                match_args: tuple[str, ...] | None = () if path == pattern else None
            else:
                found = pattern.match(path)
                match_args = found.groups() if found else None
            if match_args is None:
                continue
            path_matched = True
            if route_method == method:
                action(*match_args)
                return
        if path_matched:
            self._error(405, "method_not_allowed", f"{method} is not allowed here.")
        else:
            self._error(404, "not_found", "No such endpoint.")

    # -- endpoints ------------------------------------------------------------------

    def _reset_counters(self) -> None:
        self.state.reset_counters()
        self._json(200, {"ok": True})

    def _account(self) -> None:
        if not self._authorized():
            self._deny()
            return
        self._json(200, {"ok": True, "credits": 100.0})

    def _account_view(self) -> None:
        if not self._authorized():
            self._deny()
            return
        given = self.state.options.account_view  # sent as given: tests plant bad figures
        self._json(200, DEFAULT_ACCOUNT_VIEW if given is None else given)

    def _create(self, body: bytes) -> None:
        state = self.state
        try:
            payload = json.loads(body or b"null")
        except (ValueError, RecursionError):
            payload = None
        if not isinstance(payload, dict):
            state.count_create(None, None)
            self._error(400, "invalid_request", "The body must be a JSON object.")
            return
        job_key, token, prompt = (payload.get(k) for k in ("job_key", "client_token", "prompt"))
        state.count_create(
            job_key if isinstance(job_key, str) else None,
            token if isinstance(token, str) else None,
        )
        if not self._authorized():
            self._deny()
            return
        params = payload.get("params") or {}
        if not (isinstance(prompt, str) and prompt.strip()):
            self._error(400, "invalid_request", "'prompt' must be a non-empty string.")
            return
        if not isinstance(token, str) or not isinstance(params, dict):
            self._error(400, "invalid_request", "'client_token' and 'params' are required.")
            return
        scope = job_key if isinstance(job_key, str) else token
        try:
            directives = parse_directives(prompt)
        except DirectiveError as exc:
            self._error(400, "unknown_directive", str(exc))
            return
        pace = payload.get("render_seconds")
        if pace is not None and not _valid_pace(pace):
            self._error(400, "invalid_request", "'render_seconds' must be [low, high] "
                        "seconds, 0 <= low <= high <= 3600.")
            return
        if self._create_refused(scope, directives):
            return
        render = state.create_render(
            job_key=scope, client_token=token, prompt=prompt, params=params,
            directives=directives,
            render_seconds=(float(pace[0]), float(pace[1])) if pace is not None else None,
            key_id=self._key_id(),
        )
        twin = directives.get("foreign_twin")
        if state.take_fault(scope, twin) and twin is not None:
            state.plant_foreign(prompt, params, render.created_at - (twin.value or 0.0),
                                render.key_id)
        # From here on the render exists: every branch below answers late, badly or never.
        timeout, hold = directives.get("create_timeout"), directives.get("hold_answer")
        if state.take_fault(scope, timeout) and timeout is not None:
            self._hang_then_drop(timeout.value)
        elif state.take_fault(scope, directives.get("connection_reset")):
            self._reset()
        elif state.take_fault(scope, directives.get("malformed")):
            self._send(200, b'{"id": "mr_', "application/json")
        else:
            wait = state.options.hold_create_answer_seconds
            if state.take_fault(scope, hold) and hold is not None:
                wait = hold.value if hold.value is not None else state.options.hang_seconds
            if wait > 0 and state.stopping.wait(wait):
                self.close_connection = True  # stopped while holding it: no answer
                return
            self._json(201, {"id": render.id, "status": "queued", "client_token": token})

    def _create_refused(self, scope: str, directives: dict[str, Directive]) -> bool:
        """Answer an injected refusal of a create; True if one was sent."""
        state = self.state
        retry = {"Retry-After": f"{state.options.retry_after:g}"}
        if state.take_fault(scope, directives.get("echo_request")):
            # Some providers quote the whole request (headers included) in an error; the
            # adapters must scrub the key from anything they put in a message.
            echoed = f"Authorization: {self.headers.get('Authorization')}"
            self._error(400, "invalid_request", f"Bad request. You sent: {echoed}")
        elif state.take_fault(scope, directives.get("bad_key")):
            self._deny()
        elif state.take_fault(scope, directives.get("no_credits")):
            self._error(402, "insufficient_credits", "The account has no credits left.")
        elif state.take_fault(scope, directives.get("content_policy")):
            self._error(422, "content_policy", "The prompt was refused by the safety filter.")
        elif state.take_fault(scope, directives.get("rate_limit")) or state.chance(
            state.options.rate_limit_rate
        ):
            self._error(429, "rate_limited", "Too many requests; slow down.", retry)
        elif state.take_fault(scope, directives.get("server_error")) or state.chance(
            state.options.server_error_rate
        ):
            self._error(500, "internal_error", "The mock provider failed (injected).")
        else:
            return False
        return True

    def _find(self, render_id: str) -> Render | None:
        render = self.state.get(render_id)
        if render is None:
            self._error(404, "not_found", "No render with this id.")
        return render

    def _poll(self, render_id: str) -> None:
        state = self.state
        state.count("polls_total")
        if not self._authorized():
            self._deny()
            return
        render = self._find(render_id)
        if render is None:
            return
        if state.take_fault(render.id, render.directives.get("poll_timeout")):
            self._hang_then_drop()
        elif state.take_fault(render.id, render.directives.get("poll_malformed")):
            self._send(200, b'{"status": "runn', "application/json")
        else:
            hint = ({"X-Poll-After": f"{state.options.poll_after_seconds:g}"}
                    if state.options.send_hint else {})
            self._json(200, state.view(render, self.base_url), hint)

    def _lookup(self, query: dict[str, str]) -> None:
        state = self.state
        state.count("lookups_total")
        if not self._authorized():
            self._deny()
            return
        if not state.options.lookup_enabled:
            self._error(404, "lookup_disabled", "This provider cannot look up renders.")
            return
        token = query.get("client_token")
        if not token:
            self._error(400, "invalid_request", "'client_token' is required.")
            return
        renders = state.by_client_token(token)
        self._json(200, {"data": [state.view(r, self.base_url) for r in renders]})

    def _list(self, query: dict[str, str]) -> None:
        state = self.state
        state.count("lists_total")
        if not self._authorized():
            self._deny()
            return
        if not state.options.list_enabled:
            self._error(404, "list_disabled", "This provider does not list renders.")
            return
        try:
            after = float(query["created_after"]) if "created_after" in query else None
            limit = int(query["limit"]) if "limit" in query else None
        except ValueError:
            self._error(400, "invalid_request", "'created_after' must be Unix seconds and "
                        "'limit' a whole number.")
            return
        if limit is not None and not 1 <= limit <= MAX_PAGE_SIZE:
            self._error(400, "invalid_request", f"'limit' must be 1 to {MAX_PAGE_SIZE}.")
            return
        try:
            page, more = state.listed(self._key_id(), created_after=after,
                                      before=query.get("before"), limit=limit)
        except UnknownCursor:
            self._error(400, "invalid_cursor", "'before' names no render of this list.")
            return
        with_status = query.get("with") == "status"
        shown = [r for r in page if not (with_status and any(
            name in r.directives for name in POLL_FAULTS))]
        self._json(200, {
            "data": [state.list_record(r, self.base_url if with_status else None)
                     for r in shown],
            "has_more": more,
            "next_cursor": page[-1].id if more and page else None,
        }, {"X-Poll-After": f"{state.options.poll_after_seconds:g}"}
            if state.options.send_hint else None)

    def _plant_foreign(self, body: bytes) -> None:
        """The test hook ``POST /_mock/foreign``: another client's render on this key."""
        try:
            payload = json.loads(body or b"null")
        except (ValueError, RecursionError):
            payload = None
        fields = payload if isinstance(payload, dict) else {}
        prompt, params = fields.get("prompt"), fields.get("params", {})
        when, ago = fields.get("created_at"), fields.get("ago", 0.0)
        numbers = all(v is None or (isinstance(v, int | float) and not isinstance(v, bool))
                      for v in (when, ago))
        if not (isinstance(prompt, str) and isinstance(params, dict) and numbers):
            self._error(400, "invalid_request", "Give 'prompt' (text), 'params' (object) "
                        "and 'created_at' or 'ago' (seconds).")
            return
        created_at = float(when) if when is not None else self.state.now() - float(ago or 0)
        render = self.state.plant_foreign(prompt, params, created_at, self._key_id())
        self._json(200, {"id": render.id, "created_at": render.created_at})

    def _cancel(self, render_id: str) -> None:
        state = self.state
        state.count("cancels_total")
        if not self._authorized():
            self._deny()
            return
        render = self._find(render_id)
        if render is None:
            return
        if not state.cancel(render):
            self._error(409, "already_finished", "The render has already finished.")
            return
        self._json(200, state.view(render, self.base_url))

    def _download(self, render_id: str, query: dict[str, str]) -> None:
        state = self.state
        state.count("downloads_total")
        render = self._find(render_id)
        if render is None:
            return
        problem = state.check_link(render.id, query.get("exp"), query.get("sig"))
        if problem == "link_expired":
            self._error(403, "link_expired", "This download link has expired.")
            return
        if problem is not None:
            self._error(403, problem, "This download link is not valid.")
            return
        if state.phase(render) != "succeeded":
            self._error(409, "not_ready", "The render has no video.")
            return
        directives = render.directives
        video = state.video_of(render)
        if state.take_fault(render.id, directives.get("expired_link")):
            self._error(403, "link_expired", "This download link has expired.")
        elif state.take_fault(render.id, directives.get("html")):
            self._send(200, b"<html>error</html>", "text/html; charset=utf-8")
        elif state.take_fault(render.id, directives.get("oversize")):
            self._oversize(video, _mib(directives.get("oversize")))
        elif state.take_fault(render.id, directives.get("gzip_bomb")):
            self._gzip_bomb(video, _mib(directives.get("gzip_bomb")))
        elif state.take_fault(render.id, directives.get("truncated")):
            self._stream(video, len(video) // 2, state.options.download_delay_per_chunk)
            self.close_connection = True
        else:
            delay = state.options.download_delay_per_chunk
            slow = directives.get("slow_download")
            if state.take_fault(render.id, slow) and slow is not None:
                delay = slow.value if slow.value is not None else max(delay, DEFAULT_SLOW_DELAY)
            self._stream(video, len(video), delay)

    def _oversize(self, video: bytes, total: int) -> None:
        """A video head, then zeros, chunked with no length, until ``total`` bytes or the
        client hangs up (a hostile CDN: the client must stop at its byte cap)."""
        self.send_response(200)
        self.send_header("Content-Type", "video/mp4")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        self.close_connection = True
        block, sent = video[:64 * 1024], 0
        with contextlib.suppress(OSError):
            while sent < total and not self.state.stopping.is_set():
                self.wfile.write(b"%x\r\n%b\r\n" % (len(block), block))
                sent += len(block)
                block = bytes(64 * 1024)
            self.wfile.write(b"0\r\n\r\n")

    def _gzip_bomb(self, video: bytes, total: int) -> None:
        """A small gzip body (sent although the client asked for identity) that decodes
        to the video followed by zeros, ``total`` bytes in all."""
        buffer = io.BytesIO()
        packer = gzip.GzipFile(fileobj=buffer, mode="wb", compresslevel=9)
        packer.write(video)
        left = max(0, total - len(video))
        while left:
            packer.write(bytes(min(left, MIB)))
            left -= min(left, MIB)
        packer.close()
        body = buffer.getvalue()
        self.send_response(200)
        self.send_header("Content-Type", "video/mp4")
        self.send_header("Content-Encoding", "gzip")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.close_connection = True
        with contextlib.suppress(OSError):
            self.wfile.write(body)

    def _stream(self, video: bytes, send: int, delay: float) -> None:
        """Announce the whole video, then send its first ``send`` bytes."""
        self.send_response(200)
        self.send_header("Content-Type", "video/mp4")
        self.send_header("Content-Length", str(len(video)))
        self.end_headers()
        if delay <= 0:
            self.wfile.write(video[:send])
            return
        for offset in range(0, send, SLOW_CHUNK):
            if offset and self.state.stopping.wait(delay):
                self.close_connection = True
                return
            self.wfile.write(video[offset : min(offset + SLOW_CHUNK, send)])
            self.wfile.flush()


def _valid_pace(pace: object) -> bool:
    """A mock account's own render time range (the demo paces its renders with it)."""
    return (isinstance(pace, list) and len(pace) == 2
            and all(isinstance(v, int | float) and not isinstance(v, bool) for v in pace)
            and 0 <= pace[0] <= pace[1] <= 3600)


def _mib(directive: Directive | None) -> int:
    value = directive.value if directive is not None and directive.value else None
    return int((value if value is not None else DEFAULT_HOSTILE_MIB) * MIB)
