"""The fal.ai adapter against a fake queue.fal.run."""

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
from reelqueue.providers.adapters import EXTRA_VALIDATORS, fal
from reelqueue.providers.base import ProviderConfig, RenderRequest

API = "queue.fal.run"
CDN = "v3.fal.media"
REQUEST_ID = "764cabcf-b745-4b3e-ae38-1200304cf45b"
JOB_ID = f"fal-ai/veo3.1/requests/{REQUEST_ID}"
SUBMIT = rf"{API}/fal-ai/veo3\.1(/fast)?(/image-to-video)?"
STATUS = rf"{API}/fal-ai/veo3\.1/requests/{REQUEST_ID}/status"
RESULT = rf"{API}/fal-ai/veo3\.1/requests/{REQUEST_ID}"
ClientFor = Callable[[Router], httpx.AsyncClient]


class FakeFal:
    """fal's queue: status walks ``states`` one GET at a time; the result gives the video."""

    def __init__(self, states: list[str] | None = None) -> None:
        self.router = Router()
        self.states = states or ["status_in_queue", "status_in_progress", "status_completed"]
        self.position = -1
        self.expire_next_download = False
        self.router.add("POST", SUBMIT, lambda r, m: json_response(200, fixture("fal", "submit")))
        self.router.add("GET", STATUS, self._status)
        self.router.add("GET", RESULT, lambda r, m: json_response(200, fixture("fal", "result")))
        self.router.add("PUT", rf"{RESULT}/cancel",
                        lambda r, m: json_response(202, {"status": "CANCELLATION_REQUESTED"}))
        self.router.add("GET", rf"{API}/fal-ai/veo3\.1/requests/0+-0+-0+-0+-0+/status",
                        lambda r, m: json_response(404, fixture("fal", "error_404_request")))
        self.router.add("GET", rf"{CDN}/.*", self._video)

    def creates(self) -> int:
        return self.router.count("POST", SUBMIT)

    def _status(self, request: httpx.Request, match: Any) -> httpx.Response:
        if request.headers.get("authorization") != f"Key {SENTINEL_KEY}":
            return json_response(401, fixture("fal", "error_401"))
        self.position = min(self.position + 1, len(self.states) - 1)
        return json_response(200, fixture("fal", self.states[self.position]))

    def _video(self, request: httpx.Request, match: Any) -> httpx.Response:
        if self.expire_next_download:
            self.expire_next_download = False
            return httpx.Response(404, content=b"Not Found", headers={
                "Content-Type": "text/plain"})
        return video_response()


def make(client: httpx.AsyncClient) -> fal.FalProvider:
    return fal.create(client, ProviderConfig("fal-1", None, SENTINEL_KEY))


def request(**params: Any) -> RenderRequest:
    return RenderRequest(job_key="row-1", client_token="tok-1", prompt="A glass city",
                         params=params)


async def collect(provider: fal.FalProvider, status: Any) -> bytes:
    return b"".join([chunk async for chunk in provider.download(JOB_ID, status)])


async def test_happy_path_walks_every_documented_state(client_for: ClientFor) -> None:
    fake = FakeFal()
    provider = make(client_for(fake.router))
    job_id = await provider.submit(request(model="fal-ai/veo3.1/fast", duration=6,
                                           aspect_ratio="9:16", seed=11,
                                           negative_prompt="blur"))
    assert job_id == JOB_ID  # the sub-path "/fast" is not part of the status URL
    seen = [await provider.poll(job_id) for _ in range(3)]
    assert [s.phase for s in seen] == [RemotePhase.QUEUED, RemotePhase.RUNNING,
                                       RemotePhase.SUCCEEDED]
    assert seen[0].sub_status == "IN_QUEUE (position 3)"
    assert seen[2].video_url == "https://v3.fal.media/files/penguin/Xk2a9_output.mp4"
    assert await collect(provider, seen[2]) == VIDEO_BYTES
    submit = fake.router.calls[0]
    assert submit.url.path == "/fal-ai/veo3.1/fast"
    assert submit.headers["authorization"] == f"Key {SENTINEL_KEY}"
    assert json.loads(submit.body) == {"prompt": "A glass city", "aspect_ratio": "9:16",
                                       "duration": "6s", "negative_prompt": "blur",
                                       "seed": 11}
    assert fake.creates() == 1
    assert "authorization" not in fake.router.calls[-1].headers


async def test_image_to_video_sends_image_url(client_for: ClientFor) -> None:
    fake = FakeFal()
    await make(client_for(fake.router)).submit(
        request(model="fal-ai/veo3.1/image-to-video", image="https://img.example.test/a.png"))
    body = json.loads(fake.router.calls[0].body)
    assert body["image_url"] == "https://img.example.test/a.png"


async def test_completed_with_an_error_in_the_status_is_a_failure(
    client_for: ClientFor,
) -> None:
    fake = FakeFal(states=["status_completed_error"])
    status = await make(client_for(fake.router)).poll(JOB_ID)
    assert status.phase is RemotePhase.FAILED
    assert status.error is not None
    assert (status.error.error_class, status.error.label) == (
        ErrorClass.PERMANENT, ErrorLabel.CONTENT_POLICY)


@pytest.mark.parametrize(
    ("status", "name", "headers", "error_class", "label"),
    [
        (422, "error_422_content_policy", {}, ErrorClass.PERMANENT, ErrorLabel.CONTENT_POLICY),
        (422, "error_422_validation", {}, ErrorClass.PERMANENT, ErrorLabel.INVALID_INPUT),
        (500, "error_500_runner", {"X-Fal-Retryable": "true"}, ErrorClass.RETRYABLE,
         ErrorLabel.PROVIDER_ERROR),
        (500, "error_500_runner", {"X-Fal-Retryable": "false"}, ErrorClass.PERMANENT,
         ErrorLabel.PROVIDER_ERROR),
        (422, "error_422_validation", {"X-Fal-Needs-Retry": "true"}, ErrorClass.RETRYABLE,
         ErrorLabel.PROVIDER_ERROR),
    ],
)
async def test_completed_with_a_model_error_in_the_result_is_a_failure(
    client_for: ClientFor, status: int, name: str, headers: dict[str, str],
    error_class: ErrorClass, label: ErrorLabel,
) -> None:
    fake = FakeFal(states=["status_completed"])
    fake.router.script("GET", RESULT, json_response(status, fixture("fal", name), headers))
    result = await make(client_for(fake.router)).poll(JOB_ID)
    assert result.phase is RemotePhase.FAILED
    assert result.error is not None
    assert (result.error.error_class, result.error.label) == (error_class, label)


async def test_result_endpoint_blip_is_polled_again_not_failed(client_for: ClientFor) -> None:
    fake = FakeFal(states=["status_completed"])
    fake.router.script("GET", RESULT, httpx.Response(502, content=b"Bad Gateway"))
    provider = make(client_for(fake.router))
    with pytest.raises(ProviderError) as caught:
        await provider.poll(JOB_ID)
    assert caught.value.error_class is ErrorClass.RETRYABLE
    assert (await provider.poll(JOB_ID)).phase is RemotePhase.SUCCEEDED


@pytest.mark.parametrize(
    ("status", "name", "headers", "error_class", "label", "retry_after", "maybe_sent"),
    [
        (401, "error_401", {}, ErrorClass.ACCOUNT, ErrorLabel.KEY_REJECTED, None, False),
        (403, "error_403_locked_balance", {}, ErrorClass.ACCOUNT, ErrorLabel.OUT_OF_CREDITS,
         None, False),
        (403, "error_403_admin_lock", {}, ErrorClass.ACCOUNT, ErrorLabel.KEY_REJECTED, None,
         False),
        (422, "error_422_validation", {}, ErrorClass.PERMANENT, ErrorLabel.INVALID_INPUT,
         None, False),
        (422, "error_422_content_policy", {}, ErrorClass.PERMANENT,
         ErrorLabel.CONTENT_POLICY, None, False),
        (429, "error_429", {"Retry-After": "15"}, ErrorClass.ACCOUNT, ErrorLabel.RATE_LIMITED,
         15.0, False),
        (500, "error_500", {}, ErrorClass.RETRYABLE, ErrorLabel.PROVIDER_ERROR, None, False),
        (504, "error_500", {}, ErrorClass.RETRYABLE, ErrorLabel.TIMED_OUT, None, True),
    ],
)
async def test_submit_errors_are_classified(
    client_for: ClientFor, status: int, name: str, headers: dict[str, str],
    error_class: ErrorClass, label: ErrorLabel, retry_after: float | None, maybe_sent: bool,
) -> None:
    fake = FakeFal()
    fake.router.script("POST", SUBMIT, json_response(status, fixture("fal", name), headers))
    with pytest.raises(ProviderError) as caught:
        await make(client_for(fake.router)).submit(request())
    error = caught.value
    assert (error.error_class, error.label) == (error_class, label)
    assert error.retry_after == retry_after
    assert error.body_maybe_sent is maybe_sent
    assert fake.creates() == 1


async def test_submit_timeout_is_never_resent(client_for: ClientFor) -> None:
    fake = FakeFal()
    fake.router.script("POST", SUBMIT, read_timeout)
    with pytest.raises(ProviderError) as caught:
        await make(client_for(fake.router)).submit(request())
    assert caught.value.body_maybe_sent is True
    assert len(fake.router.calls) == 1


async def test_dead_link_is_retried_after_fetching_the_result_again(
    client_for: ClientFor,
) -> None:
    fake = FakeFal(states=["status_completed"])
    provider = make(client_for(fake.router))
    status = await provider.poll(JOB_ID)
    fake.expire_next_download = True
    assert await collect(provider, status) == VIDEO_BYTES
    assert fake.router.count("GET", RESULT) == 2


async def test_new_instance_reattaches_by_job_id(client_for: ClientFor) -> None:
    fake = FakeFal()
    job_id = await make(client_for(fake.router)).submit(request())
    second = make(client_for(fake.router))
    status = await second.poll(job_id)
    while status.phase is not RemotePhase.SUCCEEDED:
        status = await second.poll(job_id)
    assert await collect(second, status) == VIDEO_BYTES
    assert fake.creates() == 1
    assert second.supports_lookup is False


async def test_cancel(client_for: ClientFor) -> None:
    fake = FakeFal()
    await make(client_for(fake.router)).cancel(JOB_ID)
    assert fake.router.count("PUT", rf"{RESULT}/cancel") == 1


@pytest.mark.parametrize("status", [400, 401, 403, 422, 500])
async def test_key_never_appears_in_errors_even_when_echoed(
    client_for: ClientFor, status: int, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    fake = FakeFal(states=["status_completed"])
    fake.router.script("POST", SUBMIT, lambda r: echo_error(status, r))
    fake.router.script("GET", STATUS, lambda r: echo_error(status, r))
    provider = make(client_for(fake.router))
    for call in (provider.submit(request()), provider.poll(JOB_ID)):
        with pytest.raises(ProviderError) as caught:
            await call
        assert SENTINEL_KEY not in all_texts(caught.value)
    fake.router.script("GET", RESULT, lambda r: echo_error(status, r))
    try:
        result = await provider.poll(JOB_ID)
    except ProviderError as exc:  # the account's fault, or a blip: raised, not failed
        assert SENTINEL_KEY not in all_texts(exc)
    else:
        assert result.error is not None
        assert SENTINEL_KEY not in all_texts(result.error)
    assert SENTINEL_KEY not in caplog.text


async def test_check_key_probes_a_missing_request(client_for: ClientFor) -> None:
    fake = FakeFal()
    provider = make(client_for(fake.router))
    await provider.check_key()
    assert fake.creates() == 0
    fake.router.script("GET", rf"{API}/fal-ai/veo3\.1/requests/.*/status",
                       json_response(401, fixture("fal", "error_401")))
    with pytest.raises(ProviderError) as caught:
        await provider.check_key()
    assert caught.value.label is ErrorLabel.KEY_REJECTED


@pytest.mark.parametrize(
    ("params", "ok"),
    [
        ({"model": "fal-ai/veo3.1"}, True),
        ({"model": "fal-ai/veo3.1", "image": "https://x.test/a.png"}, False),
        ({"model": "fal-ai/veo3.1/image-to-video"}, False),
        ({"model": "fal-ai/veo3.1/fast/image-to-video", "image": "/tmp/a.png"}, True),
    ],
)
def test_extra_validation(params: dict[str, Any], ok: bool) -> None:
    assert (fal.extra_validation(params) == []) is ok


def test_registered() -> None:
    info = registry.get("fal")
    assert info.factory is fal.create
    assert info.params.default_capacity == 2
    assert EXTRA_VALIDATORS["fal"] is fal.extra_validation
