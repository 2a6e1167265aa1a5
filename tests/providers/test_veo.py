"""The Veo (Gemini API) adapter against a fake generativelanguage API."""

from __future__ import annotations

import base64
import json
import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx2
import pytest
from answer_properties import create_answer_property
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
    run_one_row,
    video_response,
)

from reelqueue.domain.errors import ErrorClass, ErrorLabel, ProviderError
from reelqueue.domain.models import Job
from reelqueue.domain.states import AccountStatus, JobState, RemotePhase
from reelqueue.providers.adapters import veo
from reelqueue.providers.base import ProviderConfig, RenderRequest
from reelqueue.providers.builtin import builtin_registry
from reelqueue.store.memory import MemoryStore

API = "generativelanguage.googleapis.com"
STORAGE = "video-downloads.storage.googleapis.com"
OP_NAME = "models/veo-3.1-generate-preview/operations/k3x9q2m7v1ab"
CREATE = rf"{API}/v1beta/models/[\w.-]+:predictLongRunning"
OPERATION = rf"{API}/v1beta/{OP_NAME}"
FILE = rf"{API}/v1beta/files/3h2k1l9d0a7e:download"
ClientFor = Callable[[Router], httpx2.AsyncClient]


class FakeVeo:
    """The Gemini API's long-running operations and Files download (with a redirect).

    Attributes:
        states: fixture names the operation walks through, one per GET.
        expire_next_download: the next file download answers 404 once (an expired file).
    """

    def __init__(self, states: list[str] | None = None) -> None:
        self.router = Router()
        self.states = states or ["operation_pending", "operation_running", "operation_done"]
        self.position = -1
        self.expire_next_download = False
        self.router.add("POST", CREATE, lambda r, m: json_response(200, fixture("veo", "create")))
        self.router.add("GET", OPERATION, self._operation)
        self.router.add("GET", rf"{API}/v1beta/models/[\w.-]+",
                        lambda r, m: json_response(200, fixture("veo", "model")))
        self.router.add("GET", FILE, self._file)
        self.router.add("GET", rf"{STORAGE}/.*", self._storage)

    def creates(self) -> int:
        return self.router.count("POST", CREATE)

    def _operation(self, request: httpx2.Request, match: Any) -> httpx2.Response:
        if request.headers.get("x-goog-api-key") != SENTINEL_KEY:
            return json_response(403, fixture("veo", "error_403"))
        self.position = min(self.position + 1, len(self.states) - 1)
        return json_response(200, fixture("veo", self.states[self.position]))

    def _file(self, request: httpx2.Request, match: Any) -> httpx2.Response:
        if request.headers.get("x-goog-api-key") != SENTINEL_KEY:
            return json_response(403, fixture("veo", "error_403"))
        if self.expire_next_download:
            self.expire_next_download = False
            return json_response(404, {"error": {"code": 404, "message": "File not found.",
                                                 "status": "NOT_FOUND"}})
        return httpx2.Response(302, headers={
            "Location": f"https://{STORAGE}/3h2k1l9d0a7e.mp4?X-Goog-Signature=abc"})

    def _storage(self, request: httpx2.Request, match: Any) -> httpx2.Response:
        assert "x-goog-api-key" not in request.headers, "key leaked to the storage host"
        return video_response()


def make(client: httpx2.AsyncClient) -> veo.VeoProvider:
    return veo.create(client, ProviderConfig("google", None, SENTINEL_KEY))


def request(**params: Any) -> RenderRequest:
    return RenderRequest(job_key="row-1", client_token="tok-1", prompt="A lighthouse at dusk",
                         params=params)


async def collect(provider: veo.VeoProvider, status: Any) -> bytes:
    return b"".join([chunk async for chunk in provider.download(OP_NAME, status)])


async def test_happy_path_walks_every_documented_state(client_for: ClientFor) -> None:
    fake = FakeVeo()
    provider = make(client_for(fake.router))

    job_id = await provider.submit(request(duration=8, resolution="1080p", aspect_ratio="9:16",
                                           negative_prompt="text, watermark"))
    assert job_id == OP_NAME
    seen = [await provider.poll(job_id) for _ in range(3)]

    assert [s.phase for s in seen] == [RemotePhase.QUEUED, RemotePhase.RUNNING,
                                       RemotePhase.SUCCEEDED]
    assert all(s.progress is None for s in seen[:2])  # Veo gives no number
    assert seen[0].poll_after == veo.POLL_SECONDS
    assert await collect(provider, seen[2]) == VIDEO_BYTES
    create = fake.router.calls[0]
    assert create.url.path == "/v1beta/models/veo-3.1-generate-preview:predictLongRunning"
    assert create.headers["x-goog-api-key"] == SENTINEL_KEY
    assert json.loads(create.body) == {
        "instances": [{"prompt": "A lighthouse at dusk"}],
        "parameters": {"aspectRatio": "9:16", "durationSeconds": 8, "resolution": "1080p",
                       "negativePrompt": "text, watermark"},
    }
    assert fake.creates() == 1


async def test_download_sends_the_key_to_the_api_host_only(client_for: ClientFor) -> None:
    fake = FakeVeo(states=["operation_done"])
    provider = make(client_for(fake.router))
    status = await provider.poll(OP_NAME)
    assert await collect(provider, status) == VIDEO_BYTES
    file_call, storage_call = fake.router.calls[-2:]
    assert file_call.headers["x-goog-api-key"] == SENTINEL_KEY
    assert storage_call.url.host == STORAGE
    assert "x-goog-api-key" not in storage_call.headers


async def test_image_is_sent_inline_as_base64(client_for: ClientFor, tmp_path: Path) -> None:
    image = tmp_path / "frame.jpg"
    image.write_bytes(b"\xff\xd8\xff\xe0jpeg")
    fake = FakeVeo()
    await make(client_for(fake.router)).submit(request(image=str(image), duration=8))
    instance = json.loads(fake.router.calls[0].body)["instances"][0]
    assert instance["image"] == {"bytesBase64Encoded": base64.b64encode(
        b"\xff\xd8\xff\xe0jpeg").decode(), "mimeType": "image/jpeg"}


async def test_rai_filtered_operation_is_a_content_policy_failure(
    client_for: ClientFor,
) -> None:
    fake = FakeVeo(states=["operation_rai_filtered"])
    status = await make(client_for(fake.router)).poll(OP_NAME)
    assert status.phase is RemotePhase.FAILED
    assert status.error is not None
    assert (status.error.error_class, status.error.label) == (
        ErrorClass.PERMANENT, ErrorLabel.CONTENT_POLICY)
    assert "not been charged" in str(status.error)


@pytest.mark.parametrize(
    ("name", "error_class", "label"),
    [
        ("operation_error_internal", ErrorClass.RETRYABLE, ErrorLabel.PROVIDER_ERROR),
        ("operation_error_invalid", ErrorClass.PERMANENT, ErrorLabel.INVALID_INPUT),
        ("operation_error_policy", ErrorClass.PERMANENT, ErrorLabel.CONTENT_POLICY),
    ],
)
async def test_failed_operations(
    client_for: ClientFor, name: str, error_class: ErrorClass, label: ErrorLabel
) -> None:
    fake = FakeVeo(states=[name])
    status = await make(client_for(fake.router)).poll(OP_NAME)
    assert status.phase is RemotePhase.FAILED
    assert status.error is not None
    assert (status.error.error_class, status.error.label) == (error_class, label)


async def test_inline_encoded_video(client_for: ClientFor) -> None:
    fake = FakeVeo(states=["operation_done_inline"])
    inline = fixture("veo", "operation_done_inline")
    inline["response"]["generateVideoResponse"]["generatedSamples"][0]["video"][
        "encodedVideo"] = base64.b64encode(VIDEO_BYTES).decode()
    fake.router.script("GET", OPERATION, json_response(200, inline))
    fake.router.script("GET", OPERATION, json_response(200, inline))
    provider = make(client_for(fake.router))
    status = await provider.poll(OP_NAME)
    assert status.phase is RemotePhase.SUCCEEDED
    assert status.video_url == veo.INLINE_VIDEO  # not None: None means "no file"
    assert await collect(provider, status) == VIDEO_BYTES


@pytest.mark.parametrize(
    ("status", "name", "headers", "error_class", "label", "retry_after", "maybe_sent"),
    [
        (400, "error_400_key_invalid", {}, ErrorClass.ACCOUNT, ErrorLabel.KEY_REJECTED, None,
         False),
        (403, "error_403", {}, ErrorClass.ACCOUNT, ErrorLabel.KEY_REJECTED, None, False),
        (400, "error_400_invalid_argument", {}, ErrorClass.PERMANENT,
         ErrorLabel.INVALID_INPUT, None, False),
        (400, "error_400_billing", {}, ErrorClass.ACCOUNT, ErrorLabel.OUT_OF_CREDITS, None,
         False),
        (400, "error_400_region", {}, ErrorClass.ACCOUNT, ErrorLabel.KEY_REJECTED, None,
         False),
        (404, "error_404", {}, ErrorClass.PERMANENT, ErrorLabel.INVALID_INPUT, None, False),
        (429, "error_429", {}, ErrorClass.ACCOUNT, ErrorLabel.RATE_LIMITED, 37.0, False),
        (429, "error_429", {"Retry-After": "90"}, ErrorClass.ACCOUNT, ErrorLabel.RATE_LIMITED,
         90.0, False),
        (500, "error_500", {}, ErrorClass.RETRYABLE, ErrorLabel.PROVIDER_ERROR, None, False),
        (503, "error_503", {}, ErrorClass.RETRYABLE, ErrorLabel.PROVIDER_ERROR, None, False),
        (504, "error_504", {}, ErrorClass.RETRYABLE, ErrorLabel.TIMED_OUT, None, True),
    ],
)
async def test_create_errors_are_classified(
    client_for: ClientFor, status: int, name: str, headers: dict[str, str],
    error_class: ErrorClass, label: ErrorLabel, retry_after: float | None, maybe_sent: bool,
) -> None:
    fake = FakeVeo()
    fake.router.script("POST", CREATE, json_response(status, fixture("veo", name), headers))
    with pytest.raises(ProviderError) as caught:
        await make(client_for(fake.router)).submit(request())
    error = caught.value
    assert (error.error_class, error.label) == (error_class, label)
    assert error.retry_after == retry_after
    assert error.body_maybe_sent is maybe_sent
    assert fake.creates() == 1


async def test_create_timeout_is_never_resent(client_for: ClientFor) -> None:
    fake = FakeVeo()
    fake.router.script("POST", CREATE, read_timeout)
    with pytest.raises(ProviderError) as caught:
        await make(client_for(fake.router)).submit(request())
    assert caught.value.body_maybe_sent is True
    assert caught.value.label is ErrorLabel.TIMED_OUT
    assert len(fake.router.calls) == 1


async def test_expired_file_is_fetched_again_after_a_fresh_poll(client_for: ClientFor) -> None:
    fake = FakeVeo(states=["operation_done"])
    provider = make(client_for(fake.router))
    status = await provider.poll(OP_NAME)
    fake.expire_next_download = True
    assert await collect(provider, status) == VIDEO_BYTES
    assert fake.router.count("GET", OPERATION) == 2
    assert fake.router.count("GET", FILE) == 2


async def test_file_gone_for_good_is_a_permanent_download_failure(
    client_for: ClientFor,
) -> None:
    fake = FakeVeo(states=["operation_done"])
    provider = make(client_for(fake.router))
    status = await provider.poll(OP_NAME)
    fake.expire_next_download = True
    fake.router.script("GET", OPERATION, json_response(404, fixture("veo", "error_404")))
    with pytest.raises(ProviderError) as caught:
        await collect(provider, status)
    assert caught.value.label is ErrorLabel.DOWNLOAD_FAILED
    assert caught.value.error_class is ErrorClass.PERMANENT


@pytest.mark.parametrize(
    "answer",
    [
        httpx2.Response(200, content=VIDEO_BYTES[:50],
                       headers={"Content-Type": "video/mp4", "Content-Length": "9999"}),
        httpx2.Response(200, content=HTML_PAGE, headers={"Content-Type": "text/html"}),
    ],
    ids=["truncated", "html"],
)
async def test_bad_downloads(client_for: ClientFor, answer: httpx2.Response) -> None:
    fake = FakeVeo(states=["operation_done"])
    fake.router.script("GET", rf"{STORAGE}/.*", answer)
    provider = make(client_for(fake.router))
    status = await provider.poll(OP_NAME)
    with pytest.raises(ProviderError) as caught:
        await collect(provider, status)
    assert (caught.value.error_class, caught.value.label) == (
        ErrorClass.RETRYABLE, ErrorLabel.DOWNLOAD_FAILED)


async def test_new_instance_reattaches_by_operation_name(client_for: ClientFor) -> None:
    fake = FakeVeo()
    job_id = await make(client_for(fake.router)).submit(request())

    second = make(client_for(fake.router))
    status = await second.poll(job_id)
    while status.phase is not RemotePhase.SUCCEEDED:
        status = await second.poll(job_id)
    assert await collect(second, status) == VIDEO_BYTES
    assert fake.creates() == 1
    assert second.supports_lookup is False


@pytest.mark.parametrize("status", [400, 403, 429, 500])
async def test_key_never_appears_in_errors_even_when_echoed(
    client_for: ClientFor, status: int, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    fake = FakeVeo()
    fake.router.script("POST", CREATE, lambda r: echo_error(status, r))
    fake.router.script("GET", OPERATION, lambda r: echo_error(status, r))
    provider = make(client_for(fake.router))
    for call in (provider.submit(request()), provider.poll(OP_NAME)):
        with pytest.raises(ProviderError) as caught:
            await call
        assert SENTINEL_KEY not in all_texts(caught.value)
    assert SENTINEL_KEY not in repr(provider)
    assert SENTINEL_KEY not in caplog.text


async def test_check_key(client_for: ClientFor) -> None:
    fake = FakeVeo()
    provider = make(client_for(fake.router))
    await provider.check_key()
    assert fake.router.calls[-1].url.path == "/v1beta/models/veo-3.1-generate-preview"
    fake.router.script("GET", rf"{API}/v1beta/models/[\w.-]+",
                       json_response(400, fixture("veo", "error_400_key_invalid")))
    with pytest.raises(ProviderError) as caught:
        await provider.check_key()
    assert caught.value.label is ErrorLabel.KEY_REJECTED
    assert caught.value.error_class is ErrorClass.ACCOUNT


def test_registered() -> None:
    info = builtin_registry().get("veo")
    assert info.factory is veo.create
    assert info.params.durations == (4.0, 6.0, 8.0)
    assert info.params.seed is False
    assert info.params.price_per_second["veo-3.1-fast-generate-preview"] == pytest.approx(0.10)
    assert builtin_registry().get("veo").rules is veo.extra_validation


@pytest.mark.parametrize(
    ("params", "ok"),
    [
        ({"resolution": "1080p", "duration": 8}, True),
        ({"resolution": "1080p", "duration": 6}, False),
        ({"resolution": "4k", "duration": 4}, False),
        ({"resolution": "4k", "model": "veo-3.1-lite-generate-preview"}, False),
        ({"image": "frame.png", "duration": 6}, False),
        ({"image": "frame.png", "duration": 8}, True),
        ({"image": "https://example.test/frame.png"}, False),
        ({"duration": 4}, True),
    ],
)
def test_extra_validation(params: dict[str, Any], ok: bool) -> None:
    assert (veo.extra_validation(params) == []) is ok


async def test_seed_is_refused_before_sending(client_for: ClientFor) -> None:
    fake = FakeVeo()
    with pytest.raises(ProviderError) as caught:
        await make(client_for(fake.router)).submit(request(seed=5))
    assert caught.value.label is ErrorLabel.INVALID_INPUT
    assert fake.router.calls == []


# -- issue 10: integer duration, finished without a file, rpc codes, unknown outcomes -----


async def test_done_without_video_and_without_a_safety_count_is_finished(
    client_for: ClientFor,
) -> None:
    """Not FAILED: a failed render may be created again, and this one may be billed."""
    fake = FakeVeo(states=["operation_no_samples"])
    status = await make(client_for(fake.router)).poll(OP_NAME)
    assert status.phase is RemotePhase.SUCCEEDED
    assert status.video_url is None and status.error is None


async def test_download_of_a_finished_operation_without_video_is_permanent(
    client_for: ClientFor,
) -> None:
    fake = FakeVeo(states=["operation_no_samples"])
    provider = make(client_for(fake.router))
    status = await provider.poll(OP_NAME)
    with pytest.raises(ProviderError) as caught:
        await collect(provider, status)
    assert caught.value.error_class is ErrorClass.PERMANENT
    assert "not created again" in str(caught.value)
    assert fake.creates() == 0


def _operation_error(code: int, message: str) -> dict[str, Any]:
    return {"name": OP_NAME, "done": True, "error": {"code": code, "message": message}}


@pytest.mark.parametrize(("code", "message", "error_class", "label"), [
    (3, "Invalid value for durationSeconds.", ErrorClass.PERMANENT, ErrorLabel.INVALID_INPUT),
    (4, "Deadline exceeded.", ErrorClass.RETRYABLE, ErrorLabel.TIMED_OUT),
    (7, "The caller does not have permission", ErrorClass.ACCOUNT, ErrorLabel.KEY_REJECTED),
    (8, "Resource has been exhausted (e.g. check quota).", ErrorClass.ACCOUNT,
     ErrorLabel.RATE_LIMITED),
    (9, "This model requires billing to be enabled on the project.", ErrorClass.ACCOUNT,
     ErrorLabel.OUT_OF_CREDITS),
    (9, "User location is not supported for the API use.", ErrorClass.ACCOUNT,
     ErrorLabel.KEY_REJECTED),
    (13, "An internal error has occurred.", ErrorClass.RETRYABLE, ErrorLabel.PROVIDER_ERROR),
    (14, "The service is currently unavailable.", ErrorClass.RETRYABLE,
     ErrorLabel.PROVIDER_ERROR),
    (16, "Request had invalid authentication credentials.", ErrorClass.ACCOUNT,
     ErrorLabel.KEY_REJECTED),
    # Undocumented for Veo (UNKNOWN, ABORTED, DATA_LOSS): permanent, never a guess.
    (2, "Unknown error.", ErrorClass.PERMANENT, ErrorLabel.PROVIDER_ERROR),
    (10, "Aborted.", ErrorClass.PERMANENT, ErrorLabel.PROVIDER_ERROR),
    (15, "Data loss.", ErrorClass.PERMANENT, ErrorLabel.PROVIDER_ERROR),
])
async def test_operation_error_codes_go_through_the_failure_rules(
    client_for: ClientFor, code: int, message: str, error_class: ErrorClass,
    label: ErrorLabel,
) -> None:
    fake = FakeVeo()
    fake.router.script("GET", OPERATION, json_response(200, _operation_error(code, message)))
    status = await make(client_for(fake.router)).poll(OP_NAME)
    assert status.phase is RemotePhase.FAILED and status.error is not None
    assert (status.error.error_class, status.error.label) == (error_class, label)
    assert message.rstrip(".") in str(status.error)


@pytest.mark.parametrize("answer", [
    {}, {"name": ""}, {"name": None}, {"name": "models/veo-3.1-generate-preview"},
    {"done": False}, {"operations": [{"name": OP_NAME}]},
])
async def test_create_answer_without_an_operation_name_is_an_unknown_outcome(
    client_for: ClientFor, answer: Any
) -> None:
    fake = FakeVeo()
    fake.router.script("POST", CREATE, json_response(200, answer))
    with pytest.raises(ProviderError) as caught:
        await make(client_for(fake.router)).submit(request())
    assert (caught.value.error_class, caught.value.label) == (
        ErrorClass.PERMANENT, ErrorLabel.SUBMIT_UNKNOWN)
    assert caught.value.body_maybe_sent is True
    assert fake.creates() == 1


@pytest.mark.parametrize("body", [HTML_PAGE, b'{"name": "models/veo', b"[]", b""])
async def test_unreadable_create_answer_may_have_been_billed(
    client_for: ClientFor, body: bytes
) -> None:
    fake = FakeVeo()
    fake.router.script("POST", CREATE, httpx2.Response(200, content=body))
    with pytest.raises(ProviderError) as caught:
        await make(client_for(fake.router)).submit(request())
    assert caught.value.body_maybe_sent is True
    assert fake.creates() == 1


async def test_lookup_never_answers_none(client_for: ClientFor) -> None:
    with pytest.raises(ProviderError) as caught:
        await make(client_for(Router())).lookup(request())
    assert caught.value.label is ErrorLabel.SUBMIT_UNKNOWN


# -- through the real engine (MemoryStore), counting creates at the fake ------------------

async def run_engine(tmp_path: Path, router: Router, params: dict[str, Any] | None = None
                     ) -> tuple[Job, MemoryStore]:
    """One row on one Veo account, run until nothing more can happen."""
    return await run_one_row(tmp_path, router, "veo", prompt="A lighthouse at dusk",
                             account="veo-1", params=params)


async def test_engine_completes_a_row(tmp_path: Path) -> None:
    fake = FakeVeo(states=["operation_done"])
    job, _ = await run_engine(tmp_path, fake.router, {"duration": 8})
    assert job.state is JobState.COMPLETED
    assert Path(job.output_path).read_bytes() == VIDEO_BYTES
    assert fake.creates() == 1
    assert json.loads(fake.router.calls[0].body)["parameters"]["durationSeconds"] == 8


async def test_engine_finished_without_a_file_is_never_created_again(tmp_path: Path) -> None:
    fake = FakeVeo(states=["operation_no_samples"])
    job, _ = await run_engine(tmp_path, fake.router)
    assert job.state is JobState.FAILED
    assert fake.creates() == 1
    assert fake.router.count("GET", OPERATION) >= 2  # read again before giving up


@pytest.mark.parametrize(("operation", "label", "words"), [
    # Moderation: the safety filter's count and reason.
    (fixture("veo", "operation_rai_filtered"), ErrorLabel.CONTENT_POLICY,
     "You have not been charged"),
    # Moderation worded as an INVALID_ARGUMENT operation error.
    (fixture("veo", "operation_error_policy"), ErrorLabel.CONTENT_POLICY, "usage guidelines"),
    # Bad input / an image the service could not read.
    (fixture("veo", "operation_error_invalid"), ErrorLabel.INVALID_INPUT,
     "The input image could not be processed"),
])
async def test_engine_documented_permanent_failure_one_create_then_failed(
    tmp_path: Path, operation: dict[str, Any], label: ErrorLabel, words: str
) -> None:
    fake = FakeVeo()
    fake.router.add("GET", OPERATION, lambda r, m: json_response(200, operation))
    fake.router.routes.insert(0, fake.router.routes.pop())
    job, _ = await run_engine(tmp_path, fake.router)
    assert job.state is JobState.FAILED
    assert job.error_label == label.value
    assert words in (job.error_message or "")
    assert fake.creates() == 1


async def test_engine_bad_input_refused_at_create_is_one_create_then_failed(
    tmp_path: Path,
) -> None:
    fake = FakeVeo()
    fake.router.script("POST", CREATE,
                       json_response(400, fixture("veo", "error_400_invalid_argument")))
    job, _ = await run_engine(tmp_path, fake.router)
    assert job.state is JobState.FAILED
    assert job.error_label == ErrorLabel.INVALID_INPUT.value
    assert "durationSeconds" in (job.error_message or "")
    assert fake.creates() == 1


async def test_engine_billing_not_enabled_pauses_the_account(tmp_path: Path) -> None:
    """Out of credits / billing is account-level (DESIGN.md invariant 6): the row waits."""
    fake = FakeVeo()
    fake.router.add("POST", CREATE, lambda r, m: json_response(
        400, fixture("veo", "error_400_billing")))
    fake.router.routes.insert(0, fake.router.routes.pop())
    job, store = await run_engine(tmp_path, fake.router)
    assert job.state is JobState.QUEUED
    assert fake.creates() == 1
    account = store.get_account("veo-1")
    assert account is not None and account.status is AccountStatus.OUT_OF_CREDITS
    assert "billing" in (account.status_detail or "")


async def test_engine_documented_retryable_failure_is_rendered_again(tmp_path: Path) -> None:
    fake = FakeVeo(states=["operation_done"])
    fake.router.script("GET", OPERATION, json_response(200, fixture(
        "veo", "operation_error_internal")))
    job, _ = await run_engine(tmp_path, fake.router)
    assert job.state is JobState.COMPLETED
    assert fake.creates() == 2


async def test_engine_unreadable_create_answer_is_unknown_without_a_second_create(
    tmp_path: Path,
) -> None:
    fake = FakeVeo()
    fake.router.script("POST", CREATE, json_response(200, {"done": False}))
    job, _ = await run_engine(tmp_path, fake.router)
    # unknown is not a failure: parked for the user (issue 19)
    assert job.state is JobState.PARKED and job.error_class == "unknown"
    assert job.error_label == ErrorLabel.SUBMIT_UNKNOWN.value
    assert fake.creates() == 1


# -- property: no create answer is read as "nothing was created" --------------------------

test_property_a_create_answer_is_an_id_or_an_unknown_outcome = create_answer_property(
    fake=FakeVeo, make=make, request=request, create=CREATE, created=200, id_key="name",
    reads_as=lambda body, job_id: job_id == body["name"] and "/operations/" in job_id)


async def test_engine_unreadable_image_fails_before_anything_is_sent(tmp_path: Path) -> None:
    """Veo takes the image inline, so an "unreachable image" is our own file: refused
    before the create, nothing paid."""
    fake = FakeVeo(states=["operation_done"])
    job, _ = await run_engine(tmp_path, fake.router,
                              {"duration": 8, "image": str(tmp_path / "missing.png")})
    assert job.state is JobState.FAILED
    assert job.error_label == ErrorLabel.INVALID_INPUT.value
    assert "reference image unusable" in (job.error_message or "")
    assert fake.creates() == 0
