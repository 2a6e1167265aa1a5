"""The Kling 3.x adapter against a fake api-singapore.klingai.com."""

from __future__ import annotations

import base64
import hashlib
import hmac
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
from reelqueue.providers.adapters import EXTRA_VALIDATORS, kling
from reelqueue.providers.base import ProviderConfig, RenderRequest

API = "api-singapore.klingai.com"
CDN = "v16-kling-fdl.klingai.com"
TASK_ID = "860512345678901234"
CREATE = rf"{API}/(text|image)-to-video/kling-3\.0"
TASKS = rf"{API}/tasks"
ClientFor = Callable[[Router], httpx.AsyncClient]


class FakeKling:
    """Kling's task API. Tasks created here are remembered by external_task_id, so a
    lookup after a lost create answer finds them; GETs walk ``states``."""

    def __init__(self, states: list[str] | None = None) -> None:
        self.router = Router()
        self.states = states or ["tasks_submitted", "tasks_processing", "tasks_succeeded"]
        self.position = -1
        self.by_external: dict[str, str] = {}
        self.expire_next_download = False
        self.router.add("POST", CREATE, self._create)
        self.router.add("GET", TASKS, self._tasks)
        self.router.add("GET", rf"{CDN}/.*", self._video)

    def creates(self) -> int:
        return self.router.count("POST", CREATE)

    def _create(self, request: httpx.Request, match: Any) -> httpx.Response:
        external = json.loads(request.content)["options"]["external_task_id"]
        self.by_external[external] = TASK_ID
        return json_response(200, fixture("kling", "create"))

    def _tasks(self, request: httpx.Request, match: Any) -> httpx.Response:
        token = request.headers.get("authorization", "").removeprefix("Bearer ")
        if token != SENTINEL_KEY and token.count(".") != 2:  # neither the key nor a JWT
            return json_response(401, fixture("kling", "error_1002"))
        external = request.url.params.get("external_task_ids")
        if external is not None:
            if external not in self.by_external:
                return json_response(200, fixture("kling", "tasks_empty"))
            answer = fixture("kling", "tasks_submitted")
            answer["data"][0]["task_info"]["external_task_id"] = external
            return json_response(200, answer)
        if request.url.params.get("task_ids") != TASK_ID:
            return json_response(200, fixture("kling", "tasks_empty"))
        self.position = min(self.position + 1, len(self.states) - 1)
        return json_response(200, fixture("kling", self.states[self.position]))

    def _video(self, request: httpx.Request, match: Any) -> httpx.Response:
        if self.expire_next_download:
            self.expire_next_download = False
            return httpx.Response(403)
        return video_response()


def make(client: httpx.AsyncClient, key: str = SENTINEL_KEY) -> kling.KlingProvider:
    return kling.create(client, ProviderConfig("kl", None, key))


def request(token: str = "tok-1", **params: Any) -> RenderRequest:
    return RenderRequest(job_key="row-1", client_token=token, prompt="A snow leopard",
                         params=params)


async def collect(provider: kling.KlingProvider, status: Any) -> bytes:
    return b"".join([chunk async for chunk in provider.download(TASK_ID, status)])


async def test_happy_path_walks_every_documented_state(client_for: ClientFor) -> None:
    fake = FakeKling()
    provider = make(client_for(fake.router))
    job_id = await provider.submit(request(duration=10, aspect_ratio="9:16",
                                           resolution="1080p", audio=True))
    assert job_id == TASK_ID
    seen = [await provider.poll(job_id) for _ in range(3)]
    assert [(s.phase, s.sub_status) for s in seen] == [
        (RemotePhase.QUEUED, "submitted"), (RemotePhase.RUNNING, "processing"),
        (RemotePhase.SUCCEEDED, "succeeded")]
    assert await collect(provider, seen[2]) == VIDEO_BYTES
    create = fake.router.calls[0]
    assert create.url.path == "/text-to-video/kling-3.0"
    assert json.loads(create.body) == {
        "contents": [{"type": "text", "text": "A snow leopard"}],
        "settings": {"resolution": "1080p", "aspect_ratio": "9:16", "duration": 10,
                     "audio": True},
        "options": {"external_task_id": "tok-1"}}
    assert fake.creates() == 1


async def test_legacy_succeed_word_is_success(client_for: ClientFor) -> None:
    fake = FakeKling(states=["tasks_legacy_succeed"])
    status = await make(client_for(fake.router)).poll(TASK_ID)
    assert status.phase is RemotePhase.SUCCEEDED
    assert status.video_url is not None


@pytest.mark.parametrize(
    ("name", "error_class", "label"),
    [
        ("tasks_failed", ErrorClass.PERMANENT, ErrorLabel.CONTENT_POLICY),
        ("tasks_failed_internal", ErrorClass.RETRYABLE, ErrorLabel.PROVIDER_ERROR),
    ],
)
async def test_failed_tasks(
    client_for: ClientFor, name: str, error_class: ErrorClass, label: ErrorLabel
) -> None:
    fake = FakeKling(states=[name])
    status = await make(client_for(fake.router)).poll(TASK_ID)
    assert status.phase is RemotePhase.FAILED
    assert status.error is not None
    assert (status.error.error_class, status.error.label) == (error_class, label)


@pytest.mark.parametrize(
    ("http_status", "code", "error_class", "label", "retry_after", "maybe_sent"),
    [
        (200, 1002, ErrorClass.ACCOUNT, ErrorLabel.KEY_REJECTED, None, False),
        (401, 1002, ErrorClass.ACCOUNT, ErrorLabel.KEY_REJECTED, None, False),
        (200, 1101, ErrorClass.ACCOUNT, ErrorLabel.OUT_OF_CREDITS, None, False),
        (200, 1102, ErrorClass.ACCOUNT, ErrorLabel.OUT_OF_CREDITS, None, False),
        (400, 1201, ErrorClass.PERMANENT, ErrorLabel.INVALID_INPUT, None, False),
        (200, 1301, ErrorClass.PERMANENT, ErrorLabel.CONTENT_POLICY, None, False),
        (429, 1302, ErrorClass.ACCOUNT, ErrorLabel.RATE_LIMITED, None, False),
        (429, 1303, ErrorClass.ACCOUNT, ErrorLabel.RATE_LIMITED, 1.0, False),
        (500, 5000, ErrorClass.RETRYABLE, ErrorLabel.PROVIDER_ERROR, None, False),
        (200, 5002, ErrorClass.RETRYABLE, ErrorLabel.TIMED_OUT, None, True),
    ],
)
async def test_non_zero_code_is_a_failure_even_with_http_200(
    client_for: ClientFor, http_status: int, code: int, error_class: ErrorClass,
    label: ErrorLabel, retry_after: float | None, maybe_sent: bool,
) -> None:
    fake = FakeKling()
    fake.router.script("POST", CREATE,
                       json_response(http_status, fixture("kling", f"error_{code}")))
    with pytest.raises(ProviderError) as caught:
        await make(client_for(fake.router)).submit(request())
    error = caught.value
    assert (error.error_class, error.label) == (error_class, label)
    assert error.retry_after == retry_after
    assert error.body_maybe_sent is maybe_sent
    assert fake.creates() == 1


async def test_retry_after_header_wins_for_1303(client_for: ClientFor) -> None:
    fake = FakeKling()
    fake.router.script("POST", CREATE, json_response(429, fixture("kling", "error_1303"),
                                                     {"Retry-After": "30"}))
    with pytest.raises(ProviderError) as caught:
        await make(client_for(fake.router)).submit(request())
    assert caught.value.retry_after == 30.0


async def test_create_timeout_then_lookup_finds_the_task_by_our_token(
    client_for: ClientFor,
) -> None:
    fake = FakeKling()

    def accepted_but_lost(request: httpx.Request) -> httpx.Response:
        fake._create(request, None)  # the provider took the job...
        raise httpx.ReadTimeout("timed out", request=request)  # ...but the answer was lost

    fake.router.script("POST", CREATE, accepted_but_lost)
    provider = make(client_for(fake.router))
    with pytest.raises(ProviderError) as caught:
        await provider.submit(request(token="tok-crash"))
    assert caught.value.body_maybe_sent is True
    assert len(fake.router.calls) == 1  # never resent

    assert provider.supports_lookup is True
    assert await make(client_for(fake.router)).lookup(request(token="tok-crash")) == TASK_ID
    assert await provider.lookup(request(token="tok-never-sent")) is None
    assert fake.creates() == 1
    lookup_call = fake.router.calls[-1]
    assert lookup_call.url.params["external_task_ids"] == "tok-never-sent"


async def test_create_timeout_is_never_resent(client_for: ClientFor) -> None:
    fake = FakeKling()
    fake.router.script("POST", CREATE, read_timeout)
    with pytest.raises(ProviderError) as caught:
        await make(client_for(fake.router)).submit(request())
    assert caught.value.body_maybe_sent is True
    assert len(fake.router.calls) == 1


async def test_dead_link_is_retried_after_polling_again(client_for: ClientFor) -> None:
    fake = FakeKling(states=["tasks_succeeded"])
    provider = make(client_for(fake.router))
    status = await provider.poll(TASK_ID)
    fake.expire_next_download = True
    assert await collect(provider, status) == VIDEO_BYTES
    assert fake.router.count("GET", TASKS) == 2


async def test_new_instance_reattaches_by_task_id(client_for: ClientFor) -> None:
    fake = FakeKling()
    job_id = await make(client_for(fake.router)).submit(request())
    second = make(client_for(fake.router))
    status = await second.poll(job_id)
    while status.phase is not RemotePhase.SUCCEEDED:
        status = await second.poll(job_id)
    assert await collect(second, status) == VIDEO_BYTES
    assert fake.creates() == 1


async def test_unknown_task_is_permanent(client_for: ClientFor) -> None:
    fake = FakeKling()
    with pytest.raises(ProviderError) as caught:
        await make(client_for(fake.router)).poll("999")
    assert caught.value.error_class is ErrorClass.PERMANENT


async def test_access_key_pair_signs_a_jwt(client_for: ClientFor) -> None:
    fake = FakeKling()
    provider = make(client_for(fake.router), key="AKID123:" + SENTINEL_KEY)
    await provider.check_key()
    token = fake.router.calls[-1].headers["authorization"].removeprefix("Bearer ")
    header, payload, signature = token.split(".")
    claims = json.loads(base64.urlsafe_b64decode(payload + "=="))
    assert claims["iss"] == "AKID123"
    assert claims["exp"] - claims["nbf"] == 1805
    expected = hmac.new(SENTINEL_KEY.encode(), f"{header}.{payload}".encode(),
                        hashlib.sha256).digest()
    assert base64.urlsafe_b64decode(signature + "==") == expected
    fake.router.script("GET", TASKS, lambda r: echo_error(401, r))
    with pytest.raises(ProviderError) as caught:
        await provider.check_key()
    assert token not in all_texts(caught.value)
    assert SENTINEL_KEY not in all_texts(caught.value)


@pytest.mark.parametrize("status", [200, 400, 401, 429, 500])
async def test_key_never_appears_in_errors_even_when_echoed(
    client_for: ClientFor, status: int, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    fake = FakeKling()
    echo = lambda r: echo_error(status, r, extra={"code": 1200})  # noqa: E731
    fake.router.script("POST", CREATE, echo)
    fake.router.script("GET", TASKS, echo)
    fake.router.script("GET", TASKS, echo)
    provider = make(client_for(fake.router))
    for call in (provider.submit(request()), provider.poll(TASK_ID),
                 provider.lookup(request())):
        with pytest.raises(ProviderError) as caught:
            await call
        assert SENTINEL_KEY not in all_texts(caught.value)
    assert SENTINEL_KEY not in caplog.text


async def test_check_key(client_for: ClientFor) -> None:
    fake = FakeKling()
    await make(client_for(fake.router)).check_key()
    assert fake.router.calls[-1].url.params["external_task_ids"] == kling.KEY_CHECK_TOKEN
    with pytest.raises(ProviderError) as caught:
        await make(client_for(fake.router), key="wrong").check_key()
    assert caught.value.label is ErrorLabel.KEY_REJECTED
    assert fake.creates() == 0


def test_registered() -> None:
    info = registry.get("kling")
    assert info.factory is kling.create
    assert info.params.duration_range == (3.0, 15.0)
    assert EXTRA_VALIDATORS["kling"] is kling.extra_validation
