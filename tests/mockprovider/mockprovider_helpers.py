"""Helpers shared by the mock provider tests (imported by name; no package needed)."""

from __future__ import annotations

import asyncio
import time

import httpx2

from reelqueue.domain.states import RemotePhase
from reelqueue.mockprovider import MockOptions
from reelqueue.providers.base import ProviderConfig, RemoteStatus, RenderRequest
from reelqueue.providers.mock import MockProvider, create
from reelqueue.resources import resource

FAST = MockOptions(render_seconds_min=0.05, render_seconds_max=0.15, seed=7,
                   prompt_clips=False)
"""Renders finish in well under a second; every one downloads :data:`SAMPLE` (the clips of
prompts are tested in test_mockprovider_clips.py)."""

SAMPLE = resource("sample.mp4").read_bytes()

_tokens = iter(range(1, 1_000_000))


def make_request(prompt: str = "a red fox", job_key: str = "job-1",
                 client_token: str | None = None) -> RenderRequest:
    token = client_token or f"tok-{next(_tokens)}"
    return RenderRequest(job_key=job_key, client_token=token, prompt=prompt,
                         params={"model": "mock-2", "duration": 4})


def make_provider(client: httpx2.AsyncClient, url: str, key: str | None = None,
                  **settings: object) -> MockProvider:
    return create(client, ProviderConfig(account="acct", base_url=url, api_key=key,
                                         settings=settings))


async def wait_finished(provider: MockProvider, render_id: str,
                        timeout: float = 5.0) -> RemoteStatus:
    deadline = time.monotonic() + timeout
    while True:
        status = await provider.poll(render_id)
        if status.phase in (RemotePhase.SUCCEEDED, RemotePhase.FAILED, RemotePhase.CANCELLED):
            return status
        assert time.monotonic() < deadline, f"render still {status.phase}"
        await asyncio.sleep(0.03)


async def download_all(provider: MockProvider, render_id: str, status: RemoteStatus) -> bytes:
    return b"".join([chunk async for chunk in provider.download(render_id, status)])
