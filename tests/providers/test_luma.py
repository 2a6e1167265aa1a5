"""The Luma Agents adapter against a fake agents.lumalabs.ai."""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from pathlib import Path
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
from reelqueue.providers.adapters import EXTRA_VALIDATORS, luma
from reelqueue.providers.base import ProviderConfig, RenderRequest

API = "agents.lumalabs.ai"
CDN = "storage.cdn-luma.com"
GEN_ID = "4f6c1d2e-8a9b-4c3d-9e1f-2a3b4c5d6e7f"
CREATE = rf"{API}/v1/generations"
GENERATION = rf"{API}/v1/generations/{GEN_ID}"
ClientFor = Callable[[Router], httpx.AsyncClient]


class FakeLuma:
    """Generations walk ``states`` one GET at a time; each completed GET re-signs the URL."""

    def __init__(self, states: list[str] | None = None) -> None:
        self.router = Router()
        self.states = states or ["generation_queued", "generation_processing",
                                 "generation_completed"]
        self.position = -1
        self.signatures = 0
        self.expired: set[str] = set()
        self.router.add("POST", CREATE, lambda r, m: json_response(201, fixture("luma",
                                                                               "create")))
        self.router.add("GET", GENERATION, self._get)
        self.router.add("GET", rf"{API}/v1/files",
                        lambda r, m: json_response(200, fixture("luma", "files")))
        self.router.add("GET", rf"{CDN}/.*", self._video)

    def creates(self) -> int:
        return self.router.count("POST", CREATE)

    def _get(self, request: httpx.Request, match: Any) -> httpx.Response:
        self.position = min(self.position + 1, len(self.states) - 1)
        generation = fixture("luma", self.states[self.position])
        if generation["state"] == "completed":
            self.signatures += 1
            generation["output"][0]["url"] = (
                f"https://{CDN}/agents/{GEN_ID}/video.mp4?X-Amz-Signature=s{self.signatures}")
        return json_response(200, generation)

    def _video(self, request: httpx.Request, match: Any) -> httpx.Response:
        if str(request.url) in self.expired:
            return httpx.Response(403, content=b"<Error><Code>AccessDenied</Code>"
                                  b"<Message>Request has expired</Message></Error>",
                                  headers={"Content-Type": "application/xml"})
        return video_response()


def make(client: httpx.AsyncClient) -> luma.LumaProvider:
    return luma.create(client, ProviderConfig("luma-main", None, SENTINEL_KEY))


def request(**params: Any) -> RenderRequest:
    return RenderRequest(job_key="row-1", client_token="tok-1", prompt="A paper boat",
                         params=params)


async def collect(provider: luma.LumaProvider, status: Any) -> bytes:
    return b"".join([chunk async for chunk in provider.download(GEN_ID, status)])


async def test_happy_path_walks_every_documented_state(client_for: ClientFor) -> None:
    fake = FakeLuma()
    provider = make(client_for(fake.router))
    job_id = await provider.submit(request(duration=10, resolution="1080p",
                                           aspect_ratio="9:16"))
    assert job_id == GEN_ID
    seen = [await provider.poll(job_id) for _ in range(3)]
    assert [(s.phase, s.sub_status) for s in seen] == [
        (RemotePhase.QUEUED, "queued"), (RemotePhase.RUNNING, "processing"),
        (RemotePhase.SUCCEEDED, "completed")]
    assert await collect(provider, seen[2]) == VIDEO_BYTES
    create = fake.router.calls[0]
    assert create.headers["authorization"] == f"Bearer {SENTINEL_KEY}"
    assert json.loads(create.body) == {
        "type": "video", "prompt": "A paper boat", "model": "ray-3.2", "aspect_ratio": "9:16",
        "video": {"duration": "10s", "resolution": "1080p"}}
    assert fake.creates() == 1
    assert "authorization" not in fake.router.calls[-1].headers


async def test_start_frame_from_a_file_or_a_link(client_for: ClientFor, tmp_path: Path) -> None:
    image = tmp_path / "start.png"
    image.write_bytes(b"\x89PNG\r\n\x1a\nimg")
    fake = FakeLuma()
    provider = make(client_for(fake.router))
    await provider.submit(request(image=str(image)))
    await provider.submit(request(image="https://img.example.test/start.jpg"))
    first, second = (json.loads(c.body)["video"]["start_frame"] for c in fake.router.calls)
    assert first["media_type"] == "image/png" and first["data"]
    assert second == {"url": "https://img.example.test/start.jpg"}


@pytest.mark.parametrize(
    ("code", "error_class", "label"),
    [
        ("content_moderated", ErrorClass.PERMANENT, ErrorLabel.CONTENT_POLICY),
        ("budget_exhausted", ErrorClass.ACCOUNT, ErrorLabel.OUT_OF_CREDITS),
        ("rate_limited", ErrorClass.ACCOUNT, ErrorLabel.RATE_LIMITED),
        ("generation_failed", ErrorClass.RETRYABLE, ErrorLabel.PROVIDER_ERROR),
        ("output_not_found", ErrorClass.RETRYABLE, ErrorLabel.PROVIDER_ERROR),
        ("image_too_large", ErrorClass.PERMANENT, ErrorLabel.INVALID_INPUT),
        ("unsupported_format", ErrorClass.PERMANENT, ErrorLabel.INVALID_INPUT),
        ("corrupt_input", ErrorClass.PERMANENT, ErrorLabel.INVALID_INPUT),
        ("invalid_request", ErrorClass.PERMANENT, ErrorLabel.INVALID_INPUT),
    ],
)
async def test_failure_codes(
    client_for: ClientFor, code: str, error_class: ErrorClass, label: ErrorLabel
) -> None:
    fake = FakeLuma(states=[f"failed_{code}"])
    status = await make(client_for(fake.router)).poll(GEN_ID)
    assert status.phase is RemotePhase.FAILED
    assert status.error is not None
    assert (status.error.error_class, status.error.label) == (error_class, label)


@pytest.mark.parametrize(
    ("status", "name", "headers", "error_class", "label", "retry_after", "maybe_sent"),
    [
        (401, "error_401", {}, ErrorClass.ACCOUNT, ErrorLabel.KEY_REJECTED, None, False),
        (402, "error_402", {}, ErrorClass.ACCOUNT, ErrorLabel.OUT_OF_CREDITS, None, False),
        (400, "error_400", {}, ErrorClass.PERMANENT, ErrorLabel.INVALID_INPUT, None, False),
        (400, "error_400_moderation", {}, ErrorClass.PERMANENT, ErrorLabel.CONTENT_POLICY,
         None, False),
        (429, "error_429", {"Retry-After": "30"}, ErrorClass.ACCOUNT, ErrorLabel.RATE_LIMITED,
         30.0, False),
        (429, "error_429", {"X-RateLimit-Reset": "45"}, ErrorClass.ACCOUNT,
         ErrorLabel.RATE_LIMITED, 45.0, False),
        (500, "error_500", {}, ErrorClass.RETRYABLE, ErrorLabel.PROVIDER_ERROR, None, False),
        (504, "error_500", {}, ErrorClass.RETRYABLE, ErrorLabel.TIMED_OUT, None, True),
    ],
)
async def test_create_errors_are_classified(
    client_for: ClientFor, status: int, name: str, headers: dict[str, str],
    error_class: ErrorClass, label: ErrorLabel, retry_after: float | None, maybe_sent: bool,
) -> None:
    fake = FakeLuma()
    fake.router.script("POST", CREATE, json_response(status, fixture("luma", name), headers))
    with pytest.raises(ProviderError) as caught:
        await make(client_for(fake.router)).submit(request())
    error = caught.value
    assert (error.error_class, error.label) == (error_class, label)
    assert error.retry_after == retry_after
    assert error.body_maybe_sent is maybe_sent
    assert fake.creates() == 1


async def test_create_timeout_is_never_resent(client_for: ClientFor) -> None:
    fake = FakeLuma()
    fake.router.script("POST", CREATE, read_timeout)
    with pytest.raises(ProviderError) as caught:
        await make(client_for(fake.router)).submit(request())
    assert caught.value.body_maybe_sent is True
    assert len(fake.router.calls) == 1


async def test_expired_presigned_link_is_refreshed_by_polling_again(
    client_for: ClientFor,
) -> None:
    fake = FakeLuma(states=["generation_completed"])
    provider = make(client_for(fake.router))
    status = await provider.poll(GEN_ID)
    assert status.video_url is not None
    fake.expired.add(status.video_url)
    assert await collect(provider, status) == VIDEO_BYTES
    assert fake.signatures == 2
    assert fake.creates() == 0


async def test_new_instance_reattaches_by_generation_id(client_for: ClientFor) -> None:
    fake = FakeLuma()
    job_id = await make(client_for(fake.router)).submit(request())
    second = make(client_for(fake.router))
    status = await second.poll(job_id)
    while status.phase is not RemotePhase.SUCCEEDED:
        status = await second.poll(job_id)
    assert await collect(second, status) == VIDEO_BYTES
    assert fake.creates() == 1
    assert second.supports_lookup is False


@pytest.mark.parametrize("status", [400, 401, 429, 500])
async def test_key_never_appears_in_errors_even_when_echoed(
    client_for: ClientFor, status: int, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    fake = FakeLuma()
    fake.router.script("POST", CREATE, lambda r: echo_error(status, r))
    fake.router.script("GET", GENERATION, lambda r: echo_error(status, r))
    provider = make(client_for(fake.router))
    for call in (provider.submit(request()), provider.poll(GEN_ID)):
        with pytest.raises(ProviderError) as caught:
            await call
        assert SENTINEL_KEY not in all_texts(caught.value)
    assert SENTINEL_KEY not in caplog.text


async def test_check_key(client_for: ClientFor) -> None:
    fake = FakeLuma()
    provider = make(client_for(fake.router))
    await provider.check_key()
    assert fake.router.calls[-1].url.params["limit"] == "1"
    fake.router.script("GET", rf"{API}/v1/files", json_response(401, fixture("luma",
                                                                            "error_401")))
    with pytest.raises(ProviderError) as caught:
        await provider.check_key()
    assert caught.value.label is ErrorLabel.KEY_REJECTED


def test_registered() -> None:
    info = registry.get("luma")
    assert info.factory is luma.create
    assert info.default_base_url == "https://agents.lumalabs.ai/v1"
    assert info.params.models == ("ray-3.2",)
    assert info.params.durations == (5.0, 10.0)
    assert EXTRA_VALIDATORS["luma"] is luma.extra_validation
