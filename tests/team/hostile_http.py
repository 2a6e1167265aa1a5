"""A planted API host for the trust-boundary tests: a loopback HTTP server that records
the ``Authorization`` header of every request and forwards it to a real mock provider,
so an engine that *was* allowed to use it renders through it (the positive control).

Headers are kept in memory only and compared by :func:`who_sent`, which names whose
secret each header carried ("victim", "other", "password", "none", "unknown"), so no
test output ever shows a key."""

from __future__ import annotations

import http.client
import threading
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from urllib.parse import urlsplit


class RecordingProxy:
    """``with RecordingProxy(upstream_url) as planted: planted.url ...``"""

    def __init__(self, upstream: str) -> None:
        self.upstream = urlsplit(upstream)
        self.headers: list[str | None] = []
        self._lock = threading.Lock()
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    def __enter__(self) -> RecordingProxy:
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: object) -> None:
                pass

            def _forward(self) -> None:
                with proxy._lock:
                    proxy.headers.append(self.headers.get("Authorization"))
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else None
                conn = http.client.HTTPConnection(proxy.upstream.hostname or "127.0.0.1",
                                                  proxy.upstream.port, timeout=30)
                try:
                    headers = {k: v for k, v in self.headers.items()
                               if k.lower() not in ("host", "connection")}
                    conn.request(self.command, self.path, body=body, headers=headers)
                    answer = conn.getresponse()
                    data = answer.read()
                    self.send_response(answer.status)
                    for key, value in answer.getheaders():
                        if key.lower() not in ("transfer-encoding", "connection",
                                               "content-length"):
                            self.send_header(key, value)
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                finally:
                    conn.close()

            do_GET = do_POST = do_DELETE = do_PUT = _forward

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True,
                                        name="planted-host")
        self._thread.start()
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        assert self._httpd is not None and self._thread is not None
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(10)

    @property
    def url(self) -> str:
        assert self._httpd is not None
        return f"http://127.0.0.1:{self._httpd.server_address[1]}"

    def requests(self) -> int:
        with self._lock:
            return len(self.headers)

    def who_sent(self, secrets: dict[str, str]) -> Counter[str]:
        """Whose secret each recorded header carried (by name, never the secret)."""
        with self._lock:
            headers = list(self.headers)
        out: Counter[str] = Counter()
        for header in headers:
            if not header:
                out["none"] += 1
                continue
            names = [name for name, secret in secrets.items() if secret in header]
            out[names[0] if len(names) == 1 else "unknown"] += 1
        return out
