"""The API started on a session whose engine already runs on the caller's loop (what the
window does under qasync, and what ``serve`` does): one loop, the caller keeps its engine."""

from __future__ import annotations

import ssl
from pathlib import Path

import httpx2
import pytest

from reelqueue.api.serve import start_api
from reelqueue.application.context import AppContext
from reelqueue.application.serving import ServeOptions
from reelqueue.application.session import Session
from reelqueue.store.sqlite import SqliteStore
from reelqueue.store.tokens import TokenStore

pytestmark = pytest.mark.integration


async def test_the_api_serves_an_engine_running_on_this_loop(tmp_path: Path) -> None:
    ctx = AppContext(data_dir=tmp_path / "data", videos_dir=tmp_path / "videos")
    ctx.data_dir.mkdir()
    SqliteStore.open(ctx.journal_path, now=0.0).close()
    tokens = TokenStore(ctx.journal_path)
    token = tokens.add("window-test", "admin", 0.0)
    tokens.close()
    session = Session(ctx)
    await session.start(paused=True)
    engine = session.running_engine
    running = await start_api(ctx, session, ServeOptions(host="127.0.0.1", port=0))
    try:
        assert running.fingerprint is not None
        pinned = ssl.create_default_context(cafile=str(ctx.data_dir / "api-cert.pem"))
        async with httpx2.AsyncClient(base_url=running.url.removesuffix("/v1"),
                                     verify=pinned, headers={
                                         "Authorization": f"Bearer {token}"}) as client:
            made = await client.post("/v1/jobs", json={"prompt": "from a window"},
                                     headers={"Idempotency-Key": "w1"})
            assert made.status_code == 201
            job = await engine.store.get_job(made.json()["id"])
            assert job is not None and job.prompt == "from a window"
            health = (await client.get("/v1/health")).json()
            assert health["engine"] == "paused"
    finally:
        await running.stop()
        await session.stop()
