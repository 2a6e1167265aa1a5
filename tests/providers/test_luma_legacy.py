"""The Luma Dream Machine (legacy) adapter against a fake api.lumalabs.ai."""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from typing import Any

import httpx
import pytest
from provider_fakes import (
    SENTINEL_KEY,
    VIDEO_BYTES,
    Router,
    all_texts,
    echo_error,
    fixture,
    json_response,
    read_timeout,
    video_response,
)

from reelqueue.domain.errors import ErrorClass, ErrorLabel, ProviderError
from reelqueue.domain.states import RemotePhase
from reelqueue.providers import registry
from reelqueue.providers.adapters import EXTRA_VALIDATORS, luma_legacy
from reelqueue.providers.base import ProviderConfig, RenderRequest

API = "api.lumalabs.ai"
CDN = "storage.cdn-luma.com"
GEN_ID = "9a8b7c6d-5e4f-4a3b-8c2d-1e0f9a8b7c6d"
CREATE = rf"{API}/dream-machine/v1/generations"
GENERATION = rf"{API}/dream-machine/v1/generations/{GEN_ID}"
ClientFor = Callable[[Router], httpx.AsyncClient]


class FakeDreamMachine:
    def __init__(self, states: list[str] | None = None) -> None:
        self.router = Router()
        self.states = states or ["generation_queued", "generation_dreaming",
                                 "generation_completed"]
        self.position = -1
        self.expire_next_download = False
        self.router.add("POST", CREATE,
                        lambda r, m: json_response(201, fixture("luma_legacy", "create")))
        self.router.add("GET", GENERATION, self._get)
        self.router.add("GET", rf"{API}/dream-machine/v1/credits",
                        lambda r, m: json_response(200, fixture("luma_legacy", "credits")))
        self.router.add("GET", rf"{CDN}/.*", self._video)

    def creates(self) -> int:
        return self.router.count("POST", CREATE)

    def _get(self, request: httpx.Request, match: Any) -> httpx.Response:
        self.position = min(self.position + 1, len(self.states) - 1)
        return json_response(200, fixture("luma_legacy", self.states[self.position]))

    def _video(self, request: httpx.Request, match: Any) -> httpx.Response:
        if self.expire_next_download:
            self.expire_next_download = False
            return httpx.Response(404)
        return video_response()


def make(client: httpx.AsyncClient) -> luma_legacy.LumaLegacyProvider:
    return luma_legacy.create(client, ProviderConfig("dm", None, SENTINEL_KEY))


def request(**params: Any) -> RenderRequest:
    return RenderRequest(job_key="row-1", client_token="tok-1", prompt="A koi pond",
                         params=params)


async def collect(provider: luma_legacy.LumaLegacyProvider, status: Any) -> bytes:
    return b"".join([chunk async for chunk in provider.download(GEN_ID, status)])


async def test_happy_path_walks_every_documented_state(client_for: ClientFor) -> None:
    fake = FakeDreamMachine()
    provider = make(client_for(fake.router))
    job_id = await provider.submit(request(model="ray-2", duration=9, aspect_ratio="21:9",
                                           resolution="1080p",
                                           image="https://img.example.test/k.jpg"))
    seen = [await provider.poll(job_id) for _ in range(3)]
    assert [(s.phase, s.sub_status) for s in seen] == [
        (RemotePhase.QUEUED, "queued"), (RemotePhase.RUNNING, "dreaming"),
        (RemotePhase.SUCCEEDED, "completed")]
    assert await collect(provider, seen[2]) == VIDEO_BYTES
    assert json.loads(fake.router.calls[0].body) == {
        "prompt": "A koi pond", "model": "ray-2", "aspect_ratio": "21:9", "resolution": "1080p",
        "duration": "9s",
        "keyframes": {"frame0": {"type": "image", "url": "https://img.example.test/k.jpg"}}}
    assert fake.creates() == 1


@pytest.mark.parametrize(
    ("name", "error_class", "label"),
    [
        ("failed_moderation", ErrorClass.PERMANENT, ErrorLabel.CONTENT_POLICY),
        ("failed_credits", ErrorClass.ACCOUNT, ErrorLabel.OUT_OF_CREDITS),
        ("failed_invalid", ErrorClass.PERMANENT, ErrorLabel.INVALID_INPUT),
        ("failed_internal", ErrorClass.RETRYABLE, ErrorLabel.PROVIDER_ERROR),
    ],
)
async def test_failure_reasons(
    client_for: ClientFor, name: str, error_class: ErrorClass, label: ErrorLabel
) -> None:
    fake = FakeDreamMachine(states=[name])
    status = await make(client_for(fake.router)).poll(GEN_ID)
    assert status.phase is RemotePhase.FAILED
    assert status.error is not None
    assert (status.error.error_class, status.error.label) == (error_class, label)


@pytest.mark.parametrize(
    ("status", "name", "headers", "error_class", "label", "retry_after", "maybe_sent"),
    [
        (401, "error_401", {}, ErrorClass.ACCOUNT, ErrorLabel.KEY_REJECTED, None, False),
        (400, "error_400", {}, ErrorClass.PERMANENT, ErrorLabel.INVALID_INPUT, None, False),
        (400, "error_400_credits", {}, ErrorClass.ACCOUNT, ErrorLabel.OUT_OF_CREDITS, None,
         False),
        (400, "error_400_moderation", {}, ErrorClass.PERMANENT, ErrorLabel.CONTENT_POLICY,
         None, False),
        (429, "error_429", {"Retry-After": "12"}, ErrorClass.ACCOUNT, ErrorLabel.RATE_LIMITED,
         12.0, False),
        (500, "error_500", {}, ErrorClass.RETRYABLE, ErrorLabel.PROVIDER_ERROR, None, False),
        (504, "error_500", {}, ErrorClass.RETRYABLE, ErrorLabel.TIMED_OUT, None, True),
    ],
)
async def test_create_errors_are_classified(
    client_for: ClientFor, status: int, name: str, headers: dict[str, str],
    error_class: ErrorClass, label: ErrorLabel, retry_after: float | None, maybe_sent: bool,
) -> None:
    fake = FakeDreamMachine()
    fake.router.script("POST", CREATE,
                       json_response(status, fixture("luma_legacy", name), headers))
    with pytest.raises(ProviderError) as caught:
        await make(client_for(fake.router)).submit(request())
    error = caught.value
    assert (error.error_class, error.label) == (error_class, label)
    assert error.retry_after == retry_after
    assert error.body_maybe_sent is maybe_sent
    assert fake.creates() == 1


async def test_create_timeout_is_never_resent(client_for: ClientFor) -> None:
    fake = FakeDreamMachine()
    fake.router.script("POST", CREATE, read_timeout)
    with pytest.raises(ProviderError) as caught:
        await make(client_for(fake.router)).submit(request())
    assert caught.value.body_maybe_sent is True
    assert len(fake.router.calls) == 1


async def test_dead_link_is_retried_after_polling_again(client_for: ClientFor) -> None:
    fake = FakeDreamMachine(states=["generation_completed"])
    provider = make(client_for(fake.router))
    status = await provider.poll(GEN_ID)
    fake.expire_next_download = True
    assert await collect(provider, status) == VIDEO_BYTES
    assert fake.router.count("GET", GENERATION) == 2


async def test_new_instance_reattaches_by_generation_id(client_for: ClientFor) -> None:
    fake = FakeDreamMachine()
    job_id = await make(client_for(fake.router)).submit(request())
    second = make(client_for(fake.router))
    status = await second.poll(job_id)
    while status.phase is not RemotePhase.SUCCEEDED:
        status = await second.poll(job_id)
    assert await collect(second, status) == VIDEO_BYTES
    assert fake.creates() == 1


@pytest.mark.parametrize("status", [400, 401, 429, 500])
async def test_key_never_appears_in_errors_even_when_echoed(
    client_for: ClientFor, status: int, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    fake = FakeDreamMachine()
    fake.router.script("POST", CREATE, lambda r: echo_error(status, r))
    fake.router.script("GET", GENERATION, lambda r: echo_error(status, r))
    provider = make(client_for(fake.router))
    for call in (provider.submit(request()), provider.poll(GEN_ID)):
        with pytest.raises(ProviderError) as caught:
            await call
        assert SENTINEL_KEY not in all_texts(caught.value)
    assert SENTINEL_KEY not in caplog.text


async def test_check_key_reads_credits(client_for: ClientFor) -> None:
    fake = FakeDreamMachine()
    await make(client_for(fake.router)).check_key()
    assert fake.router.calls[-1].url.path == "/dream-machine/v1/credits"


async def test_local_image_is_refused_before_sending(client_for: ClientFor) -> None:
    fake = FakeDreamMachine()
    with pytest.raises(ProviderError) as caught:
        await make(client_for(fake.router)).submit(request(image="/tmp/frame.png"))
    assert caught.value.label is ErrorLabel.INVALID_INPUT
    assert fake.router.calls == []


def test_registered() -> None:
    info = registry.get("luma-legacy")
    assert info.factory is luma_legacy.create
    assert info.default_base_url == "https://api.lumalabs.ai/dream-machine/v1"
    assert EXTRA_VALIDATORS["luma-legacy"] is luma_legacy.extra_validation
