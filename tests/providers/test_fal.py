"""The fal.ai adapter against a fake queue.fal.run."""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx2
import pytest
from answer_properties import create_answer_property
from provider_fakes import (
    SENTINEL_KEY,
    VIDEO_BYTES,
    Router,
    all_texts,
    echo_error,
    fixture,
    json_response,
    read_timeout,
    run_one_row,
    video_response,
)

from reelqueue.domain.errors import ErrorClass, ErrorLabel, ProviderError
from reelqueue.domain.models import Job
from reelqueue.domain.states import AccountStatus, JobState, RemotePhase
from reelqueue.providers.adapters import fal
from reelqueue.providers.base import ProviderConfig, RenderRequest
from reelqueue.providers.builtin import builtin_registry
from reelqueue.store.memory import MemoryStore

API = "queue.fal.run"
CDN = "v3.fal.media"
REQUEST_ID = "764cabcf-b745-4b3e-ae38-1200304cf45b"
JOB_ID = f"fal-ai/veo3.1/requests/{REQUEST_ID}"
SUBMIT = rf"{API}/fal-ai/veo3\.1(/fast)?(/image-to-video)?"
STATUS = rf"{API}/fal-ai/veo3\.1/requests/{REQUEST_ID}/status"
RESULT = rf"{API}/fal-ai/veo3\.1/requests/{REQUEST_ID}"
ClientFor = Callable[[Router], httpx2.AsyncClient]


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

    def _status(self, request: httpx2.Request, match: Any) -> httpx2.Response:
        if request.headers.get("authorization") != f"Key {SENTINEL_KEY}":
            return json_response(401, fixture("fal", "error_401"))
        self.position = min(self.position + 1, len(self.states) - 1)
        return json_response(200, fixture("fal", self.states[self.position]))

    def _video(self, request: httpx2.Request, match: Any) -> httpx2.Response:
        if self.expire_next_download:
            self.expire_next_download = False
            return httpx2.Response(404, content=b"Not Found", headers={
                "Content-Type": "text/plain"})
        return video_response()


def make(client: httpx2.AsyncClient) -> fal.FalProvider:
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
                                       "seed": 11, "generate_audio": False}
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
    fake.router.script("GET", RESULT, httpx2.Response(502, content=b"Bad Gateway"))
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
    info = builtin_registry().get("fal")
    assert info.factory is fal.create
    assert info.params.default_capacity == 2
    assert builtin_registry().get("fal").rules is fal.extra_validation


# -- issue 10: audio, finished without a file, failure reasons, unknown outcomes ----------


@pytest.mark.parametrize(("audio", "sent"), [(None, False), (True, True), ("yes", True),
                                             (False, False)])
async def test_generate_audio_is_off_unless_the_row_asks(
    client_for: ClientFor, audio: Any, sent: bool
) -> None:
    """fal's Veo 3.1 schema defaults generate_audio to true (twice the price per second)."""
    fake = FakeFal()
    params = {} if audio is None else {"audio": audio}
    await make(client_for(fake.router)).submit(request(**params))
    assert json.loads(fake.router.calls[0].body)["generate_audio"] is sent


async def test_result_without_video_is_finished_not_failed(client_for: ClientFor) -> None:
    fake = FakeFal(states=["status_completed"])
    fake.router.script("GET", RESULT, json_response(200, {"video": None}))
    status = await make(client_for(fake.router)).poll(JOB_ID)
    assert status.phase is RemotePhase.SUCCEEDED
    assert status.video_url is None
    assert status.error is None


@pytest.mark.parametrize("answer", [
    {}, {"request_id": ""}, {"request_id": None}, {"request_id": {"id": "x"}},
    {"status": "IN_QUEUE", "queue_position": 0},
])
async def test_create_answer_without_a_request_id_is_an_unknown_outcome(
    client_for: ClientFor, answer: Any
) -> None:
    fake = FakeFal()
    fake.router.script("POST", SUBMIT, json_response(200, answer))
    with pytest.raises(ProviderError) as caught:
        await make(client_for(fake.router)).submit(request())
    error = caught.value
    assert (error.error_class, error.label) == (ErrorClass.PERMANENT, ErrorLabel.SUBMIT_UNKNOWN)
    assert error.body_maybe_sent is True
    assert fake.creates() == 1


@pytest.mark.parametrize("body", [b"<html>502</html>", b'{"request_id": "76', b"[]",
                                  b'["764cabcf"]', b""])
async def test_unreadable_create_answer_may_have_been_billed(
    client_for: ClientFor, body: bytes
) -> None:
    fake = FakeFal()
    fake.router.script("POST", SUBMIT, httpx2.Response(200, content=body))
    with pytest.raises(ProviderError) as caught:
        await make(client_for(fake.router)).submit(request())
    assert caught.value.body_maybe_sent is True  # never "nothing was sent"
    assert fake.creates() == 1


async def test_lookup_never_answers_none(client_for: ClientFor) -> None:
    """The queue cannot be searched by our token; 'there is none' would be a guess."""
    provider = make(client_for(Router()))
    with pytest.raises(ProviderError) as caught:
        await provider.lookup(request())
    assert caught.value.label is ErrorLabel.SUBMIT_UNKNOWN
    assert caught.value.body_maybe_sent is True


@pytest.mark.parametrize(("error_type", "error_class", "label"), [
    ("content_policy_violation", ErrorClass.PERMANENT, ErrorLabel.CONTENT_POLICY),
    ("image_load_error", ErrorClass.PERMANENT, ErrorLabel.INVALID_INPUT),
    ("generation_timeout", ErrorClass.RETRYABLE, ErrorLabel.TIMED_OUT),
    ("downstream_service_unavailable", ErrorClass.RETRYABLE, ErrorLabel.PROVIDER_ERROR),
    ("something_new_2027", ErrorClass.PERMANENT, ErrorLabel.PROVIDER_ERROR),
])
async def test_status_error_types_go_through_the_failure_rules(
    client_for: ClientFor, error_type: str, error_class: ErrorClass, label: ErrorLabel
) -> None:
    fake = FakeFal(states=["status_completed_error"])
    body = fixture("fal", "status_completed_error")
    body.update(error="it went wrong", error_type=error_type)
    fake.router.script("GET", STATUS, json_response(200, body))
    status = await make(client_for(fake.router)).poll(JOB_ID)
    assert status.phase is RemotePhase.FAILED and status.error is not None
    assert (status.error.error_class, status.error.label) == (error_class, label)
    assert "it went wrong" in str(status.error)


# -- through the real engine (MemoryStore), counting creates at the fake ------------------

async def run_engine(tmp_path: Path, router: Router, params: dict[str, Any] | None = None
                     ) -> tuple[Job, MemoryStore]:
    """One row on one fal account, run until nothing more can happen."""
    return await run_one_row(tmp_path, router, "fal", prompt="A glass city",
                             account="fal-1", params=params)


async def test_engine_completes_a_row(tmp_path: Path) -> None:
    fake = FakeFal(states=["status_completed"])
    job, _ = await run_engine(tmp_path, fake.router)
    assert job.state is JobState.COMPLETED
    assert Path(job.output_path).read_bytes() == VIDEO_BYTES
    assert fake.creates() == 1


async def test_engine_finished_without_a_file_is_never_created_again(tmp_path: Path) -> None:
    fake = FakeFal(states=["status_completed"])
    fake.router.add("GET", RESULT, lambda r, m: json_response(200, {"video": {}}))
    fake.router.routes.insert(0, fake.router.routes.pop())  # ahead of the normal result
    job, _ = await run_engine(tmp_path, fake.router)
    assert job.state is JobState.FAILED
    assert fake.creates() == 1
    assert fake.router.count("GET", RESULT) >= 2  # read again before giving up


def _status_failure(error_type: str, text: str) -> dict[str, Any]:
    body: dict[str, Any] = fixture("fal", "status_completed_error")
    body.update(error=text, error_type=error_type)
    return body


@pytest.mark.parametrize(("where", "answer", "label", "words"), [
    # Moderation: the status of the finished request says so.
    ("status", json_response(200, _status_failure(
        "content_policy_violation", "flagged by a content checker")),
     ErrorLabel.CONTENT_POLICY, "flagged by a content checker"),
    # Bad input: the create is refused with a validation error.
    ("submit", json_response(422, fixture("fal", "error_422_validation")),
     ErrorLabel.INVALID_INPUT, "Input should be '4s', '6s' or '8s'"),
    # Unreachable image: the result read reports the image could not be loaded.
    ("result", json_response(422, {"detail": [{
        "loc": ["body", "image_url"], "msg": "Failed to load the image from the URL",
        "type": "image_load_error", "url": "https://docs.fal.ai/errors#image_load_error"}]}),
     ErrorLabel.INVALID_INPUT, "Failed to load the image"),
])
async def test_engine_documented_permanent_failure_one_create_then_failed(
    tmp_path: Path, where: str, answer: httpx2.Response, label: ErrorLabel, words: str
) -> None:
    fake = FakeFal(states=["status_completed"])
    pattern = {"status": STATUS, "submit": SUBMIT, "result": RESULT}[where]
    fake.router.script("POST" if where == "submit" else "GET", pattern, answer)
    job, _ = await run_engine(tmp_path, fake.router)
    assert job.state is JobState.FAILED
    assert job.error_label == label.value
    assert words in (job.error_message or "")
    assert fake.creates() == 1


async def test_engine_out_of_credits_pauses_the_account_and_creates_nothing_more(
    tmp_path: Path,
) -> None:
    """Out of credits is account-level (DESIGN.md invariant 6): the row waits, unfailed."""
    fake = FakeFal(states=["status_completed"])
    fake.router.add("POST", SUBMIT, lambda r, m: json_response(
        403, fixture("fal", "error_403_locked_balance")))
    fake.router.routes.insert(0, fake.router.routes.pop())
    job, store = await run_engine(tmp_path, fake.router)
    assert job.state is JobState.QUEUED
    assert fake.creates() == 1
    account = store.get_account("fal-1")
    assert account is not None and account.status is AccountStatus.OUT_OF_CREDITS
    assert "Exhausted balance" in (account.status_detail or "")


async def test_engine_documented_retryable_failure_is_rendered_again(tmp_path: Path) -> None:
    fake = FakeFal(states=["status_completed"])
    fake.router.script("GET", STATUS, json_response(200, _status_failure(
        "generation_timeout", "The generation timed out")))
    job, _ = await run_engine(tmp_path, fake.router)
    assert job.state is JobState.COMPLETED
    assert fake.creates() == 2


async def test_engine_unreadable_create_answer_is_unknown_without_a_second_create(
    tmp_path: Path,
) -> None:
    fake = FakeFal(states=["status_completed"])
    fake.router.script("POST", SUBMIT, json_response(200, {"queue_position": 0}))
    job, _ = await run_engine(tmp_path, fake.router)
    # the render cannot be found in the fake's records and their listing cannot prove it
    # absent: unknown, parked for the user, never created again (issue 19)
    assert job.state is JobState.PARKED and job.error_class == "unknown"
    assert job.error_label == ErrorLabel.SUBMIT_UNKNOWN.value
    assert fake.creates() == 1


# -- property: no create answer is read as "nothing was created" --------------------------

test_property_a_create_answer_is_an_id_or_an_unknown_outcome = create_answer_property(
    fake=FakeFal, make=make, request=request, create=SUBMIT, created=200, id_key="request_id",
    reads_as=lambda body, job_id: job_id == f"fal-ai/veo3.1/requests/{body['request_id']}")
