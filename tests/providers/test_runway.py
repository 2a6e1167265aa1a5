"""The Runway adapter against a fake Runway built from the documented shapes."""

from __future__ import annotations

import asyncio
import json
import logging
import random
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx2
import pytest
from answer_properties import AnswerShape, answer_properties
from provider_fakes import (
    HTML_PAGE,
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
from tests.every_key import EveryAccountKey

from reelqueue.domain.backoff import BackoffPolicy
from reelqueue.domain.errors import ErrorClass, ErrorLabel, InputError, ProviderError
from reelqueue.domain.models import AccountSpec, BatchSpec, Job, JobSpec
from reelqueue.domain.states import AccountStatus, JobState, RemotePhase
from reelqueue.engine import render
from reelqueue.engine.config import EngineConfig
from reelqueue.engine.engine import Engine
from reelqueue.providers.adapters import runway
from reelqueue.providers.base import ProviderConfig, RenderRequest
from reelqueue.providers.builtin import builtin_registry
from reelqueue.store.memory import MemoryStore

API = "api.dev.runwayml.com"
CDN = "dnznrvs05pmza.cloudfront.net"
TASK_ID = "17f20503-6c24-4c16-946b-35dbbce2af2f"
CREATE = rf"{API}/v1/(text|image)_to_video"
TASK = rf"{API}/v1/tasks/{TASK_ID}"
ClientFor = Callable[[Router], httpx2.AsyncClient]


class FakeRunway:
    """Runway's task API: every GET of a task moves it one state further along ``states``.

    Attributes:
        router: the MockTransport handler (and its request log).
        states: fixture names a task walks through.
        link_generation: bumped on every GET of a finished task (Runway re-signs links).
        expired: output links that now answer 403.
    """

    def __init__(self, states: list[str] | None = None) -> None:
        self.router = Router()
        self.states = states or ["task_pending", "task_throttled", "task_running",
                                 "task_succeeded"]
        self.position = -1
        self.link_generation = 0
        self.expired: set[str] = set()
        self.router.add("POST", rf"{API}/v1/(text|image)_to_video", self._create)
        self.router.add("GET", rf"{API}/v1/tasks/(?P<id>[\w-]+)", self._get)
        self.router.add("DELETE", rf"{API}/v1/tasks/(?P<id>[\w-]+)",
                        lambda r, m: httpx2.Response(204))
        self.router.add("GET", rf"{API}/v1/organization",
                        lambda r, m: json_response(200, fixture("runway", "organization")))
        self.router.add("GET", rf"{CDN}/.*", self._video)

    def creates(self) -> int:
        return self.router.count("POST", rf"{API}/v1/(text|image)_to_video")

    def _create(self, request: httpx2.Request, match: Any) -> httpx2.Response:
        return json_response(200, fixture("runway", "create"))

    def _get(self, request: httpx2.Request, match: Any) -> httpx2.Response:
        if match["id"] != TASK_ID:
            return json_response(404, {"error": "Task not found"})
        self.position = min(self.position + 1, len(self.states) - 1)
        task = fixture("runway", self.states[self.position])
        if task["status"] == "SUCCEEDED":
            self.link_generation += 1
            task["output"] = [f"https://{CDN}/{TASK_ID}/video.mp4?_jwt=gen{self.link_generation}"]
        return json_response(200, task)

    def _video(self, request: httpx2.Request, match: Any) -> httpx2.Response:
        if str(request.url) in self.expired:
            return httpx2.Response(403, content=b"<Error><Code>AccessDenied</Code></Error>",
                                  headers={"Content-Type": "application/xml"})
        return video_response()


def make(client: httpx2.AsyncClient, **settings: Any) -> runway.RunwayProvider:
    config = ProviderConfig(account="studio", base_url=None, api_key=SENTINEL_KEY,
                            settings=settings)
    return runway.create(client, config)


def request(**params: Any) -> RenderRequest:
    return RenderRequest(job_key="row-1", client_token="tok-1", prompt="A red fox in snow",
                         params=params)


async def collect(provider: runway.RunwayProvider, job_id: str, status: Any) -> bytes:
    return b"".join([chunk async for chunk in provider.download(job_id, status)])


# -- happy path and states -----------------------------------------------------------------


async def test_happy_path_walks_every_documented_state(client_for: ClientFor) -> None:
    fake = FakeRunway()
    provider = make(client_for(fake.router))

    job_id = await provider.submit(request(model="gen4.5", duration=8.0, seed=7))
    assert job_id == TASK_ID
    seen = [await provider.poll(job_id) for _ in range(4)]

    assert [s.phase for s in seen] == [RemotePhase.QUEUED, RemotePhase.QUEUED,
                                       RemotePhase.RUNNING, RemotePhase.SUCCEEDED]
    assert [s.sub_status for s in seen] == ["PENDING", "THROTTLED", "RUNNING", "SUCCEEDED"]
    assert seen[2].progress == pytest.approx(0.42)
    assert seen[0].poll_after == runway.POLL_SECONDS
    assert await collect(provider, job_id, seen[3]) == VIDEO_BYTES
    create = fake.router.calls[0]
    assert create.headers["authorization"] == f"Bearer {SENTINEL_KEY}"
    assert create.headers["x-runway-version"] == runway.API_VERSION
    assert json.loads(create.body) == {"model": "gen4.5", "promptText": "A red fox in snow",
                                       "duration": 8, "ratio": "1280:720", "seed": 7}
    assert fake.creates() == 1
    download = fake.router.calls[-1]
    assert "authorization" not in download.headers  # the key never goes to the CDN


async def test_throttled_is_a_queued_sub_state_not_an_error(client_for: ClientFor) -> None:
    fake = FakeRunway(states=["task_throttled"])
    status = await make(client_for(fake.router)).poll(TASK_ID)
    assert status.phase is RemotePhase.QUEUED
    assert status.sub_status == "THROTTLED"
    assert status.error is None


async def test_image_to_video_sends_the_image_as_a_data_uri(
    client_for: ClientFor, tmp_path: Path
) -> None:
    image = tmp_path / "first.png"
    image.write_bytes(b"\x89PNG\r\n\x1a\nfake")
    fake = FakeRunway()
    await make(client_for(fake.router)).submit(
        request(model="gen4_turbo", image=str(image), aspect_ratio="1:1", duration=5))
    call = fake.router.calls[0]
    assert call.url.path == "/v1/image_to_video"
    body = json.loads(call.body)
    assert body["promptImage"].startswith("data:image/png;base64,")
    assert body["ratio"] == "960:960"


async def test_veo_on_runway_maps_1080p_and_audio(client_for: ClientFor) -> None:
    fake = FakeRunway()
    await make(client_for(fake.router)).submit(
        request(model="veo3.1", resolution="1080p", aspect_ratio="9:16", duration=6,
                audio=False))
    body = json.loads(fake.router.calls[0].body)
    assert body == {"model": "veo3.1", "promptText": "A red fox in snow", "duration": 6,
                    "ratio": "1080:1920", "audio": False}


@pytest.mark.parametrize(
    ("name", "error_class", "label"),
    [
        ("task_failed_safety", ErrorClass.PERMANENT, ErrorLabel.CONTENT_POLICY),
        ("task_failed_safety_output", ErrorClass.PERMANENT, ErrorLabel.CONTENT_POLICY),
        ("task_failed_preprocessing", ErrorClass.PERMANENT, ErrorLabel.CONTENT_POLICY),
        ("task_failed_bad_output", ErrorClass.RETRYABLE, ErrorLabel.PROVIDER_ERROR),
        # No retry advice in the docs: permanent, never rendered again on a guess.
        ("task_failed_preprocessing_internal", ErrorClass.PERMANENT,
         ErrorLabel.PROVIDER_ERROR),
    ],
)
async def test_failed_task_maps_failure_code(
    client_for: ClientFor, name: str, error_class: ErrorClass, label: ErrorLabel
) -> None:
    fake = FakeRunway(states=[name])
    status = await make(client_for(fake.router)).poll(TASK_ID)
    assert status.phase is RemotePhase.FAILED
    assert status.error is not None
    assert (status.error.error_class, status.error.label) == (error_class, label)


async def test_safety_failure_hides_the_raw_moderation_text(client_for: ClientFor) -> None:
    fake = FakeRunway(states=["task_failed_safety"])
    status = await make(client_for(fake.router)).poll(TASK_ID)
    assert status.error is not None
    assert "SAFETY.INPUT.TEXT" in str(status.error)
    assert "flagged" not in str(status.error)


async def test_cancelled_task(client_for: ClientFor) -> None:
    fake = FakeRunway(states=["task_cancelled"])
    provider = make(client_for(fake.router))
    assert (await provider.poll(TASK_ID)).phase is RemotePhase.CANCELLED
    await provider.cancel(TASK_ID)
    assert fake.router.count("DELETE", rf"{API}/v1/tasks/{TASK_ID}") == 1


# -- errors --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("status", "name", "headers", "error_class", "label", "retry_after", "maybe_sent"),
    [
        (401, "error_401", {}, ErrorClass.ACCOUNT, ErrorLabel.KEY_REJECTED, None, False),
        (400, "error_400_validation", {}, ErrorClass.PERMANENT, ErrorLabel.INVALID_INPUT,
         None, False),
        (400, "error_400_credits", {}, ErrorClass.ACCOUNT, ErrorLabel.OUT_OF_CREDITS, None,
         False),
        (429, "error_429_daily", {"Retry-After": "120"}, ErrorClass.ACCOUNT,
         ErrorLabel.RATE_LIMITED, 120.0, False),
        (429, "error_429_daily", {}, ErrorClass.ACCOUNT, ErrorLabel.RATE_LIMITED,
         runway.DAILY_CAP_COOLDOWN, False),
        (502, "error_503", {}, ErrorClass.RETRYABLE, ErrorLabel.PROVIDER_ERROR, None, False),
        (503, "error_503", {"Retry-After": "7"}, ErrorClass.RETRYABLE,
         ErrorLabel.PROVIDER_ERROR, 7.0, False),
        (504, "error_503", {}, ErrorClass.RETRYABLE, ErrorLabel.TIMED_OUT, None, True),
    ],
)
async def test_create_errors_are_classified(
    client_for: ClientFor, status: int, name: str, headers: dict[str, str],
    error_class: ErrorClass, label: ErrorLabel, retry_after: float | None, maybe_sent: bool,
) -> None:
    fake = FakeRunway()
    fake.router.script("POST", rf"{API}/v1/text_to_video",
                       json_response(status, fixture("runway", name), headers))
    with pytest.raises(ProviderError) as caught:
        await make(client_for(fake.router)).submit(request())
    error = caught.value
    assert (error.error_class, error.label) == (error_class, label)
    assert error.retry_after == retry_after
    assert error.body_maybe_sent is maybe_sent
    assert error.status_code == status
    assert fake.creates() == 1


async def test_daily_cap_cooldown_is_configurable(client_for: ClientFor) -> None:
    fake = FakeRunway()
    fake.router.script("POST", rf"{API}/v1/text_to_video",
                       json_response(429, fixture("runway", "error_429_daily")))
    with pytest.raises(ProviderError) as caught:
        await make(client_for(fake.router), daily_cap_cooldown=900).submit(request())
    assert caught.value.retry_after == 900.0


async def test_create_timeout_is_never_resent(client_for: ClientFor) -> None:
    fake = FakeRunway()
    fake.router.script("POST", rf"{API}/v1/text_to_video", read_timeout)
    with pytest.raises(ProviderError) as caught:
        await make(client_for(fake.router)).submit(request())
    assert caught.value.body_maybe_sent is True
    assert caught.value.label is ErrorLabel.TIMED_OUT
    assert caught.value.error_class is ErrorClass.RETRYABLE
    assert len(fake.router.calls) == 1


async def test_create_connect_error_means_nothing_was_sent(client_for: ClientFor) -> None:
    fake = FakeRunway()
    fake.router.script("POST", rf"{API}/v1/text_to_video", httpx2.ConnectError("refused"))
    with pytest.raises(ProviderError) as caught:
        await make(client_for(fake.router)).submit(request())
    assert caught.value.body_maybe_sent is False


async def test_unreadable_create_answer_may_have_been_billed(client_for: ClientFor) -> None:
    fake = FakeRunway()
    fake.router.script("POST", rf"{API}/v1/text_to_video",
                       httpx2.Response(200, content=b"<html>oops</html>"))
    with pytest.raises(ProviderError) as caught:
        await make(client_for(fake.router)).submit(request())
    assert caught.value.body_maybe_sent is True
    assert len(fake.router.calls) == 1


async def test_invalid_params_fail_before_any_request(client_for: ClientFor) -> None:
    fake = FakeRunway()
    with pytest.raises(ProviderError) as caught:
        await make(client_for(fake.router)).submit(request(model="veo3.1", duration=5))
    assert caught.value.error_class is ErrorClass.PERMANENT
    assert caught.value.label is ErrorLabel.INVALID_INPUT
    assert fake.router.calls == []


async def test_poll_errors(client_for: ClientFor) -> None:
    fake = FakeRunway()
    fake.router.script("GET", rf"{API}/v1/tasks/{TASK_ID}",
                       json_response(503, fixture("runway", "error_503")))
    provider = make(client_for(fake.router))
    with pytest.raises(ProviderError) as caught:
        await provider.poll(TASK_ID)
    assert caught.value.error_class is ErrorClass.RETRYABLE
    assert caught.value.body_maybe_sent is False
    fake.router.script("GET", rf"{API}/v1/tasks/{TASK_ID}", read_timeout)
    with pytest.raises(ProviderError) as caught:
        await provider.poll(TASK_ID)
    assert caught.value.label is ErrorLabel.TIMED_OUT
    assert caught.value.body_maybe_sent is False


# -- downloads -------------------------------------------------------------------------------


async def test_expired_link_is_refreshed_by_refetching_the_task(client_for: ClientFor) -> None:
    fake = FakeRunway(states=["task_succeeded"])
    provider = make(client_for(fake.router))
    status = await provider.poll(TASK_ID)
    assert status.video_url is not None
    fake.expired.add(status.video_url)

    assert await collect(provider, TASK_ID, status) == VIDEO_BYTES
    assert fake.router.count("GET", rf"{API}/v1/tasks/{TASK_ID}") == 2
    assert fake.link_generation == 2
    assert fake.creates() == 0


async def test_link_still_dead_after_refresh_is_a_retryable_download_error(
    client_for: ClientFor,
) -> None:
    fake = FakeRunway(states=["task_succeeded"])
    fake.router.script("GET", rf"{CDN}/.*", httpx2.Response(403))
    fake.router.script("GET", rf"{CDN}/.*", httpx2.Response(403))
    provider = make(client_for(fake.router))
    status = await provider.poll(TASK_ID)
    with pytest.raises(ProviderError) as caught:
        await collect(provider, TASK_ID, status)
    assert (caught.value.error_class, caught.value.label) == (
        ErrorClass.RETRYABLE, ErrorLabel.DOWNLOAD_FAILED)


@pytest.mark.parametrize(
    "answer",
    [
        httpx2.Response(200, content=VIDEO_BYTES[:100],
                       headers={"Content-Type": "video/mp4",
                                "Content-Length": str(len(VIDEO_BYTES))}),
        httpx2.Response(200, content=HTML_PAGE, headers={"Content-Type": "text/html"}),
        httpx2.Response(200, content=HTML_PAGE, headers={"Content-Type": "video/mp4"}),
        httpx2.Response(500),
    ],
    ids=["truncated", "html-page", "html-labelled-as-video", "server-error"],
)
async def test_bad_downloads_are_retryable_download_failures(
    client_for: ClientFor, answer: httpx2.Response
) -> None:
    fake = FakeRunway(states=["task_succeeded"])
    fake.router.script("GET", rf"{CDN}/.*", answer)
    provider = make(client_for(fake.router))
    status = await provider.poll(TASK_ID)
    with pytest.raises(ProviderError) as caught:
        await collect(provider, TASK_ID, status)
    assert (caught.value.error_class, caught.value.label) == (
        ErrorClass.RETRYABLE, ErrorLabel.DOWNLOAD_FAILED)


# -- crash and reattach ----------------------------------------------------------------------


async def test_new_instance_reattaches_by_job_id_without_a_create(
    client_for: ClientFor,
) -> None:
    fake = FakeRunway()
    first = make(client_for(fake.router))
    job_id = await first.submit(request())
    await first.poll(job_id)
    del first  # the app dies here; only the job id survived, in the journal

    second = make(client_for(fake.router))
    status = await second.poll(job_id)
    while status.phase is not RemotePhase.SUCCEEDED:
        status = await second.poll(job_id)
    assert await collect(second, job_id, status) == VIDEO_BYTES
    assert fake.creates() == 1
    assert second.supports_lookup is False
    with pytest.raises(ProviderError) as caught:  # never "no such task" (invariant 11)
        await second.lookup(request())
    assert caught.value.label is ErrorLabel.SUBMIT_UNKNOWN


# -- keys ------------------------------------------------------------------------------------


@pytest.mark.parametrize("status", [400, 401, 403, 429, 500])
async def test_key_never_appears_in_errors_even_when_echoed(
    client_for: ClientFor, status: int, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    fake = FakeRunway()
    fake.router.script("POST", rf"{API}/v1/text_to_video",
                       lambda r: echo_error(status, r))
    fake.router.script("GET", rf"{API}/v1/tasks/{TASK_ID}",
                       lambda r: echo_error(status, r))
    provider = make(client_for(fake.router))
    for call in (provider.submit(request()), provider.poll(TASK_ID)):
        with pytest.raises(ProviderError) as caught:
            await call
        assert SENTINEL_KEY not in all_texts(caught.value)
        assert "[redacted]" in str(caught.value)
    assert SENTINEL_KEY not in repr(provider)
    assert SENTINEL_KEY not in caplog.text


async def test_check_key(client_for: ClientFor) -> None:
    fake = FakeRunway()
    provider = make(client_for(fake.router))
    await provider.check_key()
    assert fake.router.calls[-1].url.path == "/v1/organization"
    fake.router.script("GET", rf"{API}/v1/organization",
                       json_response(401, fixture("runway", "error_401")))
    with pytest.raises(ProviderError) as caught:
        await provider.check_key()
    assert caught.value.label is ErrorLabel.KEY_REJECTED
    assert fake.creates() == 0


# -- configuration and validation -------------------------------------------------------------


async def test_base_url_must_be_https(client_for: ClientFor) -> None:
    client = client_for(Router())
    with pytest.raises(InputError):
        runway.create(client, ProviderConfig("a", "http://api.example.com", SENTINEL_KEY))
    loopback = runway.create(client, ProviderConfig("a", "http://127.0.0.1:8123",
                                                    SENTINEL_KEY))
    assert loopback.kind == "runway"


def test_registered_with_its_params() -> None:
    info = builtin_registry().get("runway")
    assert info.factory is runway.create
    assert info.default_base_url == "https://api.dev.runwayml.com"
    assert info.params.models[0] == "gen4.5"
    assert info.params.default_capacity == 1
    assert info.params.price_per_second["gen4.5"] == pytest.approx(0.12)
    assert builtin_registry().get("runway").rules is runway.extra_validation


@pytest.mark.parametrize(
    ("params", "ok"),
    [
        ({"model": "gen4.5", "duration": 10}, True),
        ({"model": "gen4.5", "duration": 8.5}, False),
        ({"model": "gen4.5", "duration": 12}, False),
        ({"model": "gen4.5", "aspect_ratio": "1:1"}, False),
        ({"model": "gen4.5", "aspect_ratio": "1:1", "image": "https://x.test/a.png"}, True),
        ({"model": "gen4.5", "resolution": "1080p"}, False),
        ({"model": "gen4_turbo"}, False),
        ({"model": "veo3.1", "duration": 8, "resolution": "1080p"}, True),
        ({"model": "veo3.1", "duration": 5}, False),
        ({"model": "veo3.1_fast", "seed": 3}, False),
        ({"model": "veo3.1", "aspect_ratio": "1:1"}, False),
    ],
)
def test_extra_validation(params: dict[str, Any], ok: bool) -> None:
    assert (runway.extra_validation(params) == []) is ok


async def test_task_deleted_before_download_is_a_permanent_download_failure(
    client_for: ClientFor,
) -> None:
    fake = FakeRunway(states=["task_succeeded"])
    provider = make(client_for(fake.router))
    status = await provider.poll(TASK_ID)
    fake.router.script("GET", rf"{CDN}/.*", httpx2.Response(403))
    fake.router.script("GET", rf"{API}/v1/tasks/{TASK_ID}",
                       json_response(404, {"error": "Task not found"}))
    with pytest.raises(ProviderError) as caught:
        await collect(provider, TASK_ID, status)
    assert (caught.value.error_class, caught.value.label) == (
        ErrorClass.PERMANENT, ErrorLabel.DOWNLOAD_FAILED)


# -- issue 10: failure codes by family, the two 429s, unknown outcomes, the engine ---------


@pytest.mark.parametrize(("code", "family"), [
    ("SAFETY.INPUT.TEXT", "SAFETY.INPUT"), ("SAFETY.OUTPUT.VIDEO", "SAFETY.OUTPUT"),
    ("SAFETY.SOMETHING", "SAFETY"), ("INTERNAL.BAD_OUTPUT.CODE01", "INTERNAL.BAD_OUTPUT"),
    ("INPUT_PREPROCESSING.SAFETY.TEXT", "INPUT_PREPROCESSING.SAFETY.TEXT"),
    ("INPUT_PREPROCESSING.INTERNAL", "INPUT_PREPROCESSING.INTERNAL"),
    ("INPUT_PREPROCESSING.IMAGE", "INPUT_PREPROCESSING"),
    ("INTERNAL.TIMEOUT", "INTERNAL.TIMEOUT"), ("SAFETYNET", "SAFETYNET"), ("", ""),
])
def test_failure_family(code: str, family: str) -> None:
    assert runway.failure_family(code) == family


@pytest.mark.parametrize(("code", "error_class", "label"), [
    ("INTERNAL.TIMEOUT", ErrorClass.PERMANENT, ErrorLabel.PROVIDER_ERROR),
    ("INPUT_PREPROCESSING.IMAGE", ErrorClass.PERMANENT, ErrorLabel.INVALID_INPUT),
    ("SAFETYNET", ErrorClass.PERMANENT, ErrorLabel.PROVIDER_ERROR),
    (None, ErrorClass.PERMANENT, ErrorLabel.PROVIDER_ERROR),
    (42, ErrorClass.PERMANENT, ErrorLabel.PROVIDER_ERROR),
])
async def test_undocumented_failure_codes_are_permanent(
    client_for: ClientFor, code: Any, error_class: ErrorClass, label: ErrorLabel
) -> None:
    task = fixture("runway", "task_failed_bad_output")
    task["failureCode"] = code
    fake = FakeRunway()
    fake.router.script("GET", TASK, json_response(200, task))
    status = await make(client_for(fake.router)).poll(TASK_ID)
    assert status.phase is RemotePhase.FAILED and status.error is not None
    assert (status.error.error_class, status.error.label) == (error_class, label)


@pytest.mark.parametrize(("headers", "wait"), [({}, None), ({"Retry-After": "3"}, 3.0)])
async def test_a_429_on_a_poll_is_short_lived_not_the_daily_cap(
    client_for: ClientFor, headers: dict[str, str], wait: float | None
) -> None:
    """api-details/errors: 429 "too many requests within a period of time", may retry.
    Only a refused create is the daily cap; a poll's 429 never asks for the hour."""
    fake = FakeRunway()
    fake.router.script("GET", TASK, json_response(429, fixture("runway", "error_429_poll"),
                                                  headers))
    with pytest.raises(ProviderError) as caught:
        await make(client_for(fake.router)).poll(TASK_ID)
    error = caught.value
    assert (error.error_class, error.label) == (ErrorClass.RETRYABLE, ErrorLabel.RATE_LIMITED)
    assert error.retry_after == wait
    assert "daily" not in str(error)


@pytest.mark.parametrize("answer", [{}, {"id": ""}, {"id": None}, {"status": "PENDING"},
                                    {"task": {"id": TASK_ID}}, {"id": [TASK_ID]}])
async def test_create_answer_without_an_id_is_an_unknown_outcome(
    client_for: ClientFor, answer: Any
) -> None:
    fake = FakeRunway()
    fake.router.script("POST", CREATE, json_response(200, answer))
    with pytest.raises(ProviderError) as caught:
        await make(client_for(fake.router)).submit(request())
    assert (caught.value.error_class, caught.value.label) == (
        ErrorClass.PERMANENT, ErrorLabel.SUBMIT_UNKNOWN)
    assert caught.value.body_maybe_sent is True
    assert fake.creates() == 1


@pytest.mark.parametrize("answer", [{}, {"id": TASK_ID}, {"status": None}, {"status": 1},
                                    {"task": {"status": "SUCCEEDED"}}])
async def test_poll_answer_without_a_status_is_an_unknown_outcome(
    client_for: ClientFor, answer: Any
) -> None:
    fake = FakeRunway()
    fake.router.script("GET", TASK, json_response(200, answer))
    with pytest.raises(ProviderError) as caught:
        await make(client_for(fake.router)).poll(TASK_ID)
    assert caught.value.label is ErrorLabel.SUBMIT_UNKNOWN


async def test_succeeded_without_output_is_finished_without_a_file(
    client_for: ClientFor,
) -> None:
    task = fixture("runway", "task_succeeded")
    task["output"] = []
    fake = FakeRunway()
    fake.router.script("GET", TASK, json_response(200, task))
    status = await make(client_for(fake.router)).poll(TASK_ID)
    assert status.phase is RemotePhase.SUCCEEDED and status.video_url is None


FAST = EngineConfig(retry_backoff=BackoffPolicy(0.001, 0.01), poll_backoff=BackoffPolicy(
    0.001, 0.01), poll_min_seconds=0.0005, heartbeat_seconds=0.05,
    rate_limit_default_seconds=0.05)


async def run_engine(tmp_path: Path, router: Router, config: EngineConfig = FAST,
                     params: dict[str, Any] | None = None) -> tuple[Job, MemoryStore]:
    """One row on one Runway account, run until nothing more can happen."""
    store = MemoryStore()
    batch = store.create_batch(BatchSpec("b", "s.csv", str(tmp_path / "out")), 0)
    store.add_jobs(batch.id, [JobSpec("k0", "A red fox in snow", "runway",
                                      str(tmp_path / "out" / "0.mp4"), params=params or {},
                                      row_number=2)], 0)
    store.add_account(AccountSpec("studio", "runway", 1, None, "ref"), 0)
    client = httpx2.AsyncClient(transport=httpx2.MockTransport(router))
    engine = Engine(store, config=config, keys=EveryAccountKey(SENTINEL_KEY),
                    http_client=client, rng=random.Random(1))
    try:
        await engine.start()
        await asyncio.wait_for(engine.run_until_drained(), 20)
    finally:
        await engine.stop()
        engine.close_store()
        await client.aclose()
    return store.list_jobs()[0], store


class VirtualSleep:
    """The render loop's ``asyncio`` with a fake clock: every wait it asks for is written
    down and lasts a couple of milliseconds, so an hour-long wait shows as 3600, fast."""

    def __init__(self) -> None:
        self.waits: list[float] = []

    def __getattr__(self, name: str) -> Any:
        return getattr(asyncio, name)

    async def sleep(self, delay: float, result: Any = None) -> Any:
        self.waits.append(delay)
        return await asyncio.sleep(min(delay, 0.002), result)


@pytest.mark.parametrize(("headers", "longest"), [({}, 20.0), ({"Retry-After": "4"}, 20.0)])
async def test_engine_a_429_on_a_poll_delays_the_render_by_seconds_not_an_hour(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, headers: dict[str, str], longest: float
) -> None:
    """Issue 10, item 4. The default poll back-off (1-20 s, jittered) is in force; the
    account is never paused, no attempt is spent and the task is created once."""
    clock = VirtualSleep()
    monkeypatch.setattr(render, "asyncio", clock)
    fake = FakeRunway(states=["task_running", "task_succeeded"])
    fake.router.script("GET", TASK, json_response(429, fixture("runway", "error_429_poll"),
                                                  headers))
    config = EngineConfig(heartbeat_seconds=0.05)
    job, store = await run_engine(tmp_path, fake.router, config)
    assert job.state is JobState.COMPLETED
    assert fake.creates() == 1
    assert job.attempts == 1
    assert clock.waits, "the render loop waited between polls"
    assert max(clock.waits) <= longest
    assert runway.DAILY_CAP_COOLDOWN not in clock.waits
    if headers:
        assert clock.waits[0] == 4.0  # Retry-After of the refused poll, taken as given
    assert not [e for e in store.ledger() if e.event == "account_status"]
    account = store.get_account("studio")
    assert account is not None and account.status is AccountStatus.READY


async def test_engine_completes_a_row(tmp_path: Path) -> None:
    fake = FakeRunway(states=["task_succeeded"])
    job, _ = await run_engine(tmp_path, fake.router)
    assert job.state is JobState.COMPLETED
    assert Path(job.output_path).read_bytes() == VIDEO_BYTES
    assert fake.creates() == 1


@pytest.mark.parametrize(("where", "answer", "label", "words"), [
    # moderation (the raw moderation text is not shown; the code is)
    ("poll", json_response(200, fixture("runway", "task_failed_safety")),
     ErrorLabel.CONTENT_POLICY, "SAFETY.INPUT.TEXT"),
    ("poll", json_response(200, fixture("runway", "task_failed_safety_output")),
     ErrorLabel.CONTENT_POLICY, "SAFETY.OUTPUT.VIDEO"),
    # bad input
    ("create", json_response(400, fixture("runway", "error_400_validation")),
     ErrorLabel.INVALID_INPUT, "Validation of body failed"),
    # unreachable image (troubleshooting: "Failed to fetch asset", a 400 on the create)
    ("create", json_response(400, fixture("runway", "error_400_asset")),
     ErrorLabel.INVALID_INPUT, "Failed to fetch asset"),
])
async def test_engine_documented_permanent_failure_one_create_then_failed(
    tmp_path: Path, where: str, answer: httpx2.Response, label: ErrorLabel, words: str
) -> None:
    fake = FakeRunway(states=["task_succeeded"])
    fake.router.script("POST" if where == "create" else "GET",
                       CREATE if where == "create" else TASK, answer)
    job, _ = await run_engine(tmp_path, fake.router)
    assert job.state is JobState.FAILED
    assert job.error_label == label.value
    assert words in (job.error_message or "")
    assert fake.creates() == 1


async def test_engine_out_of_credits_pauses_the_account_without_a_second_create(
    tmp_path: Path,
) -> None:
    fake = FakeRunway(states=["task_succeeded"])
    fake.router.add("POST", CREATE, lambda r, m: json_response(
        400, fixture("runway", "error_400_credits")))
    fake.router.routes.insert(0, fake.router.routes.pop())
    job, store = await run_engine(tmp_path, fake.router)
    assert job.state is JobState.QUEUED
    assert fake.creates() == 1
    account = store.get_account("studio")
    assert account is not None and account.status is AccountStatus.OUT_OF_CREDITS


async def test_engine_documented_retryable_failure_is_rendered_again(tmp_path: Path) -> None:
    fake = FakeRunway(states=["task_succeeded"])
    fake.router.script("GET", TASK, json_response(200, fixture("runway",
                                                               "task_failed_bad_output")))
    job, _ = await run_engine(tmp_path, fake.router)
    assert job.state is JobState.COMPLETED
    assert fake.creates() == 2


async def test_engine_unreadable_create_answer_is_unknown_without_a_second_create(
    tmp_path: Path,
) -> None:
    fake = FakeRunway(states=["task_succeeded"])
    fake.router.script("POST", CREATE, json_response(200, {"status": "PENDING"}))
    job, _ = await run_engine(tmp_path, fake.router)
    # unknown is not a failure: parked for the user (issue 19)
    assert job.state is JobState.PARKED and job.error_class == "unknown"
    assert job.error_label == ErrorLabel.SUBMIT_UNKNOWN.value
    assert fake.creates() == 1


# -- property: no answer is read as "nothing was created" or "the render failed" ----------

(test_property_a_create_answer_is_an_id_or_an_unknown_outcome,
 test_property_a_poll_answer_never_reads_as_a_failed_render) = answer_properties(AnswerShape(
    states=("PENDING", "THROTTLED", "RUNNING", "SUCCEEDED", "FAILED", "CANCELLED"),
    keys=("id", "status", "output", "failure", "failureCode", "progress", "x"),
    fake=FakeRunway, make=make, request=request, create=CREATE, created=200,
    poll=TASK, job_id=TASK_ID, state_key="status", ending=("FAILED", "CANCELLED")))
