"""The API served in this process on a real session (paused engine, real SQLite journal),
on a loop in a thread of its own, plain HTTP on 127.0.0.1 (``--no-tls`` is allowed on
loopback); tests drive it with a synchronous httpx client. Started and stopped by the
fixture that uses it."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path
from typing import Any

import httpx2

from reelqueue.api.connections import ConnectionLimits
from reelqueue.api.serve import RunningApi, start_api
from reelqueue.application.context import AppContext
from reelqueue.application.serving import ServeOptions
from reelqueue.application.session import Session
from reelqueue.store.sqlite import SqliteStore
from reelqueue.store.tokens import TokenStore

START_SECONDS = 60.0


class LiveApi:
    """Attributes: url (``http://127.0.0.1:PORT``, https with ``tls``), token (admin
    scope), ctx, running."""

    def __init__(self, root: Path, *, tls: bool = False, max_waiting: int = 100_000,
                 limits: ConnectionLimits | None = None) -> None:
        self._limits = limits
        self.ctx = AppContext(data_dir=root / "data", videos_dir=root / "videos")
        self.ctx.data_dir.mkdir(parents=True)
        SqliteStore.open(self.ctx.journal_path, now=0.0).close()
        tokens = TokenStore(self.ctx.journal_path)
        try:
            self.token = tokens.add("fuzz", "admin", 0.0)
        finally:
            tokens.close()
        self._options = ServeOptions(host="127.0.0.1", port=0, tls=tls,
                                     max_waiting=max_waiting, paused=True)
        self._ready = threading.Event()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop: asyncio.Event | None = None
        self._failure: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name="live-api", daemon=True)
        self.url = ""
        self.running: RunningApi | None = None
        self.document: dict[str, Any] = {}
        self._shared: httpx2.Client | None = None

    def _run(self) -> None:
        try:
            asyncio.run(self._serve())
        except BaseException as exc:  # reported to the test thread
            self._failure = exc
            self._ready.set()

    async def _serve(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._stop = asyncio.Event()
        session = Session(self.ctx)
        await session.start(paused=True)
        try:
            self.running = await start_api(self.ctx, session, self._options, self._limits)
            self.url = self.running.url.removesuffix("/v1")
            self._ready.set()
            await self._stop.wait()
        finally:
            if self.running is not None:
                await self.running.stop()
            await session.stop()

    def call(self, function: Any) -> Any:
        """Run ``function()`` (a coroutine function) on the server's loop; its result."""
        assert self._loop is not None
        return asyncio.run_coroutine_threadsafe(function(), self._loop).result(30)

    def __enter__(self) -> LiveApi:
        self._thread.start()
        if not self._ready.wait(START_SECONDS) or self._failure is not None:
            self.__exit__()
            raise AssertionError(f"the API did not start: {self._failure!r}")
        return self

    def __exit__(self, *exc: object) -> None:
        if self._shared is not None:
            self._shared.close()
        if self._loop is not None and self._stop is not None:
            self._loop.call_soon_threadsafe(self._stop.set)
        self._thread.join(30)
        assert not self._thread.is_alive(), "the API's loop did not stop"

    def client(self, token: str | None = "", **kwargs: Any) -> httpx2.Client:
        token = self.token if token == "" else token
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        return httpx2.Client(base_url=self.url, headers=headers,
                            timeout=kwargs.pop("timeout", 30.0), **kwargs)

    def shared_client(self) -> httpx2.Client:
        """One keep-alive client (admin token) for many requests; closed at exit."""
        if self._shared is None:
            self._shared = self.client()
        return self._shared

    @property
    def port(self) -> int:
        return int(self.url.rsplit(":", 1)[1])

    def pinned(self) -> Any:
        import ssl

        return ssl.create_default_context(cafile=str(self.ctx.data_dir / "api-cert.pem"))
