"""The MiniMax adapter (V1 Hailuo and V2 H3) against a fake api.minimax.io."""

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
from reelqueue.providers.adapters import EXTRA_VALIDATORS, minimax
from reelqueue.providers.base import ProviderConfig, RenderRequest

API = "api.minimax.io"
V1_TASK = "106916112212032"
V2_TASK = "vg-2f6d0c7e9b3a41d8"
V1_CREATE = rf"{API}/v1/video_generation"
V2_CREATE = rf"{API}/v2/video_generation"
V1_QUERY = rf"{API}/v1/query/video_generation"
V2_QUERY = rf"{API}/v2/query/video_generation/{V2_TASK}"
FILES = rf"{API}/v1/files/retrieve"
ClientFor = Callable[[Router], httpx.AsyncClient]


class FakeMiniMax:
    """Both APIs. V1 tasks walk ``v1_states``, V2 tasks ``v2_states``, one GET each;
    every files/retrieve signs a new download URL."""

    def __init__(self, v1_states: list[str] | None = None,
                 v2_states: list[str] | None = None) -> None:
        self.router = Router()
        self.v1_states = v1_states or ["v1_query_Preparing", "v1_query_Queueing",
                                       "v1_query_Processing", "v1_query_Success"]
        self.v2_states = v2_states or ["v2_task_queued", "v2_task_running",
                                       "v2_task_succeeded"]
        self.v1_position = self.v2_position = -1
        self.signatures = 0
        self.expired: set[str] = set()
        self.router.add("POST", V1_CREATE,
                        lambda r, m: json_response(200, fixture("minimax", "v1_create")))
        self.router.add("POST", V2_CREATE,
                        lambda r, m: json_response(200, fixture("minimax", "v2_create")))
        self.router.add("GET", V1_QUERY, self._v1_query)
        self.router.add("GET", V2_QUERY, self._v2_query)
        self.router.add("DELETE", rf"{API}/v2/video_generation/{V2_TASK}",
                        lambda r, m: httpx.Response(204))
        self.router.add("GET", FILES, self._file)
        self.router.add("GET", r"(public-cdn-video-data-algeng\.oss-cn-wulanchabu\.aliyuncs\.com"
                        r"|video-cdn\.minimax\.io)/.*", self._video)

    def creates(self) -> int:
        return self.router.count("POST", V1_CREATE) + self.router.count("POST", V2_CREATE)

    def _v1_query(self, request: httpx.Request, match: Any) -> httpx.Response:
        if request.headers.get("authorization") != f"Bearer {SENTINEL_KEY}":
            return json_response(200, fixture("minimax", "v1_base_resp_1004"))
        if request.url.params.get("task_id") != V1_TASK:
            return json_response(200, fixture("minimax", "v1_query_not_found"))
        self.v1_position = min(self.v1_position + 1, len(self.v1_states) - 1)
        return json_response(200, fixture("minimax", self.v1_states[self.v1_position]))

    def _v2_query(self, request: httpx.Request, match: Any) -> httpx.Response:
        self.v2_position = min(self.v2_position + 1, len(self.v2_states) - 1)
        return json_response(200, fixture("minimax", self.v2_states[self.v2_position]))

    def _file(self, request: httpx.Request, match: Any) -> httpx.Response:
        self.signatures += 1
        answer = fixture("minimax", "v1_file")
        answer["file"]["download_url"] = answer["file"]["download_url"].replace(
            "Signature=first", f"Signature=s{self.signatures}")
        return json_response(200, answer)

    def _video(self, request: httpx.Request, match: Any) -> httpx.Response:
        if str(request.url) in self.expired:
            return httpx.Response(403, content=b"<Error><Code>AccessDenied</Code></Error>",
                                  headers={"Content-Type": "application/xml"})
        return video_response()


def make(client: httpx.AsyncClient) -> minimax.MiniMaxProvider:
    return minimax.create(client, ProviderConfig("mm", None, SENTINEL_KEY))


def request(**params: Any) -> RenderRequest:
    return RenderRequest(job_key="row-1", client_token="tok-1", prompt="A desert caravan",
                         params=params)


async def collect(provider: minimax.MiniMaxProvider, job_id: str, status: Any) -> bytes:
    return b"".join([chunk async for chunk in provider.download(job_id, status)])


async def test_v1_happy_path_walks_every_documented_state(client_for: ClientFor) -> None:
    fake = FakeMiniMax()
    provider = make(client_for(fake.router))
    job_id = await provider.submit(request(model="MiniMax-Hailuo-2.3", duration=6,
                                           resolution="1080p",
                                           image="https://img.example.test/f.png"))
    assert job_id == f"v1:{V1_TASK}"
    seen = [await provider.poll(job_id) for _ in range(4)]
    assert [(s.phase, s.sub_status) for s in seen] == [
        (RemotePhase.QUEUED, "Preparing"), (RemotePhase.QUEUED, "Queueing"),
        (RemotePhase.RUNNING, "Processing"), (RemotePhase.SUCCEEDED, "Success")]
    assert seen[0].poll_after == minimax.POLL_SECONDS
    assert await collect(provider, job_id, seen[3]) == VIDEO_BYTES
    assert json.loads(fake.router.calls[0].body) == {
        "model": "MiniMax-Hailuo-2.3", "prompt": "A desert caravan", "duration": 6,
        "resolution": "1080P", "first_frame_image": "https://img.example.test/f.png"}
    assert fake.creates() == 1


async def test_v2_happy_path_walks_every_documented_state(client_for: ClientFor) -> None:
    fake = FakeMiniMax()
    provider = make(client_for(fake.router))
    job_id = await provider.submit(request(model="MiniMax-H3", duration=10))
    assert job_id == f"v2:{V2_TASK}"
    seen = [await provider.poll(job_id) for _ in range(3)]
    assert [s.phase for s in seen] == [RemotePhase.QUEUED, RemotePhase.RUNNING,
                                       RemotePhase.SUCCEEDED]
    assert await collect(provider, job_id, seen[2]) == VIDEO_BYTES
    assert json.loads(fake.router.calls[0].body) == {
        "model": "MiniMax-H3", "content": [{"type": "text", "text": "A desert caravan"}],
        "duration": 10}
    assert fake.creates() == 1


@pytest.mark.parametrize(
    ("job_id", "fixture_name", "phase", "error_class", "label"),
    [
        (f"v1:{V1_TASK}", "v1_query_Fail", RemotePhase.FAILED, ErrorClass.RETRYABLE,
         ErrorLabel.PROVIDER_ERROR),
        (f"v1:{V1_TASK}", "v1_query_Fail_sensitive", RemotePhase.FAILED, ErrorClass.PERMANENT,
         ErrorLabel.CONTENT_POLICY),
        (f"v2:{V2_TASK}", "v2_task_failed", RemotePhase.FAILED, ErrorClass.RETRYABLE,
         ErrorLabel.PROVIDER_ERROR),
        (f"v2:{V2_TASK}", "v2_task_failed_sensitive", RemotePhase.FAILED,
         ErrorClass.PERMANENT, ErrorLabel.CONTENT_POLICY),
        (f"v2:{V2_TASK}", "v2_task_cancelled", RemotePhase.CANCELLED, None, None),
    ],
)
async def test_terminal_states(
    client_for: ClientFor, job_id: str, fixture_name: str, phase: RemotePhase,
    error_class: ErrorClass | None, label: ErrorLabel | None,
) -> None:
    fake = FakeMiniMax(v1_states=[fixture_name], v2_states=[fixture_name])
    status = await make(client_for(fake.router)).poll(job_id)
    assert status.phase is phase
    if error_class is None:
        assert status.error is None
    else:
        assert status.error is not None
        assert (status.error.error_class, status.error.label) == (error_class, label)


@pytest.mark.parametrize(
    ("code", "error_class", "label"),
    [
        (1002, ErrorClass.ACCOUNT, ErrorLabel.RATE_LIMITED),
        (1004, ErrorClass.ACCOUNT, ErrorLabel.KEY_REJECTED),
        (1008, ErrorClass.ACCOUNT, ErrorLabel.OUT_OF_CREDITS),
        (1026, ErrorClass.PERMANENT, ErrorLabel.CONTENT_POLICY),
        (2013, ErrorClass.PERMANENT, ErrorLabel.INVALID_INPUT),
        (2049, ErrorClass.ACCOUNT, ErrorLabel.KEY_REJECTED),
        (1013, ErrorClass.RETRYABLE, ErrorLabel.PROVIDER_ERROR),
    ],
)
async def test_v1_http_200_with_an_error_status_code_is_a_failure(
    client_for: ClientFor, code: int, error_class: ErrorClass, label: ErrorLabel
) -> None:
    fake = FakeMiniMax()
    fake.router.script("POST", V1_CREATE,
                       json_response(200, fixture("minimax", f"v1_base_resp_{code}")))
    with pytest.raises(ProviderError) as caught:
        await make(client_for(fake.router)).submit(request())
    assert (caught.value.error_class, caught.value.label) == (error_class, label)
    assert caught.value.body_maybe_sent is False
    assert fake.creates() == 1


@pytest.mark.parametrize(
    ("status", "name", "headers", "error_class", "label", "retry_after", "maybe_sent"),
    [
        (401, "v2_error_401", {}, ErrorClass.ACCOUNT, ErrorLabel.KEY_REJECTED, None, False),
        (402, "v2_error_402", {}, ErrorClass.ACCOUNT, ErrorLabel.OUT_OF_CREDITS, None, False),
        (422, "v2_error_422", {}, ErrorClass.PERMANENT, ErrorLabel.CONTENT_POLICY, None,
         False),
        (400, "v2_error_400", {}, ErrorClass.PERMANENT, ErrorLabel.INVALID_INPUT, None, False),
        (429, "v2_error_429", {"Retry-After": "20"}, ErrorClass.ACCOUNT,
         ErrorLabel.RATE_LIMITED, 20.0, False),
        (500, "v2_error_500", {}, ErrorClass.RETRYABLE, ErrorLabel.PROVIDER_ERROR, None,
         False),
        (504, "v2_error_500", {}, ErrorClass.RETRYABLE, ErrorLabel.TIMED_OUT, None, True),
    ],
)
async def test_v2_http_errors_are_classified(
    client_for: ClientFor, status: int, name: str, headers: dict[str, str],
    error_class: ErrorClass, label: ErrorLabel, retry_after: float | None, maybe_sent: bool,
) -> None:
    fake = FakeMiniMax()
    fake.router.script("POST", V2_CREATE, json_response(status, fixture("minimax", name),
                                                        headers))
    with pytest.raises(ProviderError) as caught:
        await make(client_for(fake.router)).submit(request(model="MiniMax-H3"))
    error = caught.value
    assert (error.error_class, error.label) == (error_class, label)
    assert error.retry_after == retry_after
    assert error.body_maybe_sent is maybe_sent
    assert fake.creates() == 1


@pytest.mark.parametrize(("model", "pattern"), [("MiniMax-Hailuo-02", V1_CREATE),
                                                ("MiniMax-H3-Max", V2_CREATE)])
async def test_create_timeout_is_never_resent(
    client_for: ClientFor, model: str, pattern: str
) -> None:
    fake = FakeMiniMax()
    fake.router.script("POST", pattern, read_timeout)
    with pytest.raises(ProviderError) as caught:
        await make(client_for(fake.router)).submit(request(model=model))
    assert caught.value.body_maybe_sent is True
    assert len(fake.router.calls) == 1


async def test_expired_download_url_is_signed_again(client_for: ClientFor) -> None:
    fake = FakeMiniMax(v1_states=["v1_query_Success"])
    provider = make(client_for(fake.router))
    job_id = f"v1:{V1_TASK}"
    status = await provider.poll(job_id)
    assert status.video_url is not None
    fake.expired.add(status.video_url)
    assert await collect(provider, job_id, status) == VIDEO_BYTES
    assert fake.signatures == 2
    assert fake.creates() == 0


@pytest.mark.parametrize("model", ["MiniMax-Hailuo-2.3", "MiniMax-H3"])
async def test_new_instance_reattaches_by_job_id(client_for: ClientFor, model: str) -> None:
    fake = FakeMiniMax()
    job_id = await make(client_for(fake.router)).submit(request(model=model))
    second = make(client_for(fake.router))
    status = await second.poll(job_id)
    while status.phase is not RemotePhase.SUCCEEDED:
        status = await second.poll(job_id)
    assert await collect(second, job_id, status) == VIDEO_BYTES
    assert fake.creates() == 1
    assert second.supports_lookup is False


async def test_cancel_v2_only(client_for: ClientFor) -> None:
    fake = FakeMiniMax()
    provider = make(client_for(fake.router))
    await provider.cancel(f"v1:{V1_TASK}")
    assert fake.router.calls == []
    await provider.cancel(f"v2:{V2_TASK}")
    assert fake.router.count("DELETE", rf"{API}/v2/video_generation/{V2_TASK}") == 1


@pytest.mark.parametrize("status", [400, 401, 422, 500])
async def test_key_never_appears_in_errors_even_when_echoed(
    client_for: ClientFor, status: int, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    fake = FakeMiniMax()
    fake.router.script("POST", V2_CREATE, lambda r: echo_error(status, r))
    fake.router.script("GET", V2_QUERY, lambda r: echo_error(status, r))
    provider = make(client_for(fake.router))
    for call in (provider.submit(request(model="MiniMax-H3")), provider.poll(f"v2:{V2_TASK}")):
        with pytest.raises(ProviderError) as caught:
            await call
        assert SENTINEL_KEY not in all_texts(caught.value)
    fake.router.script("POST", V1_CREATE, lambda r: json_response(200, {
        "base_resp": {"status_code": 1004, "status_msg": "bad key "
                      + r.headers["authorization"]}}))
    with pytest.raises(ProviderError) as caught:
        await provider.submit(request())
    assert SENTINEL_KEY not in all_texts(caught.value)
    assert SENTINEL_KEY not in caplog.text


async def test_check_key(client_for: ClientFor) -> None:
    fake = FakeMiniMax()
    await make(client_for(fake.router)).check_key()  # "task not found" means the key works
    bad = minimax.create(client_for(fake.router), ProviderConfig("mm", None, "wrong-key"))
    with pytest.raises(ProviderError) as caught:
        await bad.check_key()
    assert caught.value.label is ErrorLabel.KEY_REJECTED
    assert fake.creates() == 0


@pytest.mark.parametrize(
    ("params", "ok"),
    [
        ({"model": "MiniMax-Hailuo-02", "resolution": "512p"}, True),
        ({"model": "MiniMax-Hailuo-2.3", "resolution": "512p"}, False),
        ({"aspect_ratio": "16:9"}, False),
        ({"duration": 6}, True),
    ],
)
def test_extra_validation(params: dict[str, Any], ok: bool) -> None:
    assert (minimax.extra_validation(params) == []) is ok


def test_registered() -> None:
    info = registry.get("minimax")
    assert info.factory is minimax.create
    assert info.default_base_url == "https://api.minimax.io"
    assert EXTRA_VALIDATORS["minimax"] is minimax.extra_validation
