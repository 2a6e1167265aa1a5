"""A minimal reference server for the API submit benchmark (issue 22): what the submit
route must do at the least, with nothing of ReelQueue behind it.

aiohttp over TLS (a certificate and key given, e.g. the ones ``reelqueue serve`` made),
``POST /v1/jobs`` and ``GET /v1/health``. A submit: the bearer token checked (a salted
SHA-256 compared with :func:`hmac.compare_digest`, as the real token table does), the
``Idempotency-Key`` header checked (1 to 200 characters), the JSON body parsed (an object
with a string ``prompt``), then one durable unique-key insert on a journal thread: SQLite
WAL, ``synchronous=FULL``, one committed transaction per submit,
``INSERT ... ON CONFLICT(idempotency_key) DO NOTHING`` and the row read back. Answers 201
``{"id": N, "replay": false}``, 200 for a repeated key with the same body, 409 for a
repeated key with another body. Nothing more (no engine, no queue limit, no connection
gate, no group commit).

The token comes from the environment variable named by ``--token-env`` (never argv, never
printed). Prints ``Serving https://HOST:PORT`` once listening; SIGTERM / SIGINT stop it.
Run by ``benchmarks/api_vs_reference.py``; alone:
``REF_TOKEN=... python benchmarks/api_reference_server.py --cert C --key K --db J``.
"""

from __future__ import annotations

import argparse
import asyncio
import concurrent.futures
import contextlib
import hashlib
import hmac
import json
import os
import secrets
import signal
import sqlite3
import ssl
import threading
import time
from pathlib import Path

from aiohttp import web

MAX_BODY_BYTES = 1024 * 1024
MAX_IDEMPOTENCY_KEY = 200

SCHEMA = """
CREATE TABLE IF NOT EXISTS jobs (
    id INTEGER PRIMARY KEY,
    idempotency_key TEXT NOT NULL UNIQUE,
    body_sha256 TEXT NOT NULL,
    prompt TEXT NOT NULL,
    state TEXT NOT NULL DEFAULT 'QUEUED',
    created_at REAL NOT NULL
)
"""


class Journal:
    """One SQLite connection used by one thread only (as the real journal's thread)."""

    def __init__(self, path: Path) -> None:
        self._pool = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="journal")
        self._db: sqlite3.Connection | None = None
        self._path = path
        self._pool.submit(self._open).result()

    def _open(self) -> None:
        db = sqlite3.connect(str(self._path), isolation_level=None)
        db.execute("PRAGMA journal_mode = WAL")
        db.execute("PRAGMA synchronous = FULL")
        db.execute(SCHEMA)
        self._db = db

    def _insert(self, key: str, body_sha256: str, prompt: str) -> tuple[int, str, bool]:
        db = self._db
        assert db is not None and threading.current_thread().name.startswith("journal")
        db.execute("BEGIN IMMEDIATE")
        try:
            inserted = db.execute(
                "INSERT INTO jobs (idempotency_key, body_sha256, prompt, created_at)"
                " VALUES (?, ?, ?, ?) ON CONFLICT(idempotency_key) DO NOTHING",
                (key, body_sha256, prompt, time.time())).rowcount == 1
            job_id, stored_sha256 = db.execute(
                "SELECT id, body_sha256 FROM jobs WHERE idempotency_key = ?",
                (key,)).fetchone()
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            raise
        return int(job_id), str(stored_sha256), inserted

    async def insert(self, key: str, body_sha256: str, prompt: str
                     ) -> tuple[int, str, bool]:
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._pool, self._insert, key, body_sha256,
                                          prompt)

    def close(self) -> None:
        def shut() -> None:
            if self._db is not None:
                self._db.close()
        self._pool.submit(shut).result()
        self._pool.shutdown()


class Reference:
    def __init__(self, journal: Journal, token: str) -> None:
        self.journal = journal
        self._salt = secrets.token_bytes(16)
        self._digest = self._hash(token)

    def _hash(self, secret: str) -> bytes:
        return hashlib.sha256(self._salt + secret.encode("utf-8")).digest()

    def _authorized(self, request: web.Request) -> bool:
        scheme, _, token = request.headers.get("Authorization", "").partition(" ")
        return (scheme.lower() == "bearer" and bool(token) and token.isascii()
                and hmac.compare_digest(self._hash(token.strip()), self._digest))

    async def health(self, request: web.Request) -> web.Response:
        return web.json_response({"status": "up"})

    async def submit(self, request: web.Request) -> web.Response:
        if not self._authorized(request):
            return web.json_response({"error": "A valid token is needed."}, status=401)
        key = request.headers.get("Idempotency-Key")
        if key is None or not 0 < len(key) <= MAX_IDEMPOTENCY_KEY:
            return web.json_response({"error": "Idempotency-Key: 1 to 200 characters."},
                                     status=422)
        raw = await request.read()
        try:
            body = json.loads(raw)
        except (ValueError, UnicodeDecodeError, RecursionError):
            return web.json_response({"error": "Malformed JSON."}, status=400)
        if not isinstance(body, dict) or not isinstance(body.get("prompt"), str):
            return web.json_response({"error": "prompt: required string."}, status=422)
        body_sha256 = hashlib.sha256(
            json.dumps(body, sort_keys=True, separators=(",", ":")).encode()).hexdigest()
        job_id, stored, inserted = await self.journal.insert(key, body_sha256,
                                                             body["prompt"])
        if not inserted and stored != body_sha256:
            return web.json_response({"error": "Idempotency-Key used with another body.",
                                      "job_id": job_id}, status=409)
        return web.json_response({"id": job_id, "replay": not inserted},
                                 status=201 if inserted else 200)


def server_context(cert: Path, key: Path) -> ssl.SSLContext:
    """The same construction as the real server's (``reelqueue.api.tls.server_context``)."""
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    context.load_cert_chain(str(cert), str(key))
    return context


async def serve(args: argparse.Namespace, token: str) -> None:
    journal = Journal(args.db)
    reference = Reference(journal, token)
    app = web.Application(client_max_size=MAX_BODY_BYTES)
    app.router.add_get("/v1/health", reference.health)
    app.router.add_post("/v1/jobs", reference.submit)
    runner = web.AppRunner(app, access_log=None, shutdown_timeout=2.0)
    await runner.setup()
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(signum, stop.set)
    try:
        site = web.TCPSite(runner, args.host, args.port,
                           ssl_context=server_context(args.cert, args.key), backlog=512)
        await site.start()
        port = runner.addresses[0][1]
        print(f"Serving https://{args.host}:{port}", flush=True)
        await stop.wait()
    finally:
        await runner.cleanup()
        journal.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else "")
    parser.add_argument("--host", default="127.0.0.1",
                        choices=["127.0.0.1"], help="loopback only")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--cert", type=Path, required=True)
    parser.add_argument("--key", type=Path, required=True)
    parser.add_argument("--db", type=Path, required=True)
    parser.add_argument("--token-env", default="REF_TOKEN",
                        help="the environment variable holding the bearer token")
    args = parser.parse_args()
    token = os.environ.pop(args.token_env, "")
    if not token:
        raise SystemExit(f"set {args.token_env} to the bearer token")
    asyncio.run(serve(args, token))


if __name__ == "__main__":
    main()
