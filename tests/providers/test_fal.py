"""What is fal's own: the model's sub-path in the submit but not in the status URL, the
``Key`` scheme, audio off unless asked, failures reported by the result read and by the
status's ``error_type``. The common behaviours run in conformance/test_suite.py on the fake
and facts of conformance/fal.py."""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from typing import Any

import httpx2
import pytest
from conformance.fal import JOB_ID, RESULT, FakeFal, make, request
from provider_fakes import SENTINEL_KEY, Router, all_texts, echo_error, fixture, json_response

from reelqueue.domain.errors import ErrorClass, ErrorLabel, ProviderError
from reelqueue.domain.states import RemotePhase

ClientFor = Callable[[Router], httpx2.AsyncClient]


async def test_submit_body_and_job_id_as_documented(client_for: ClientFor) -> None:
    fake = FakeFal()
    provider = make(client_for(fake.router))
    job_id = await provider.submit(request(model="fal-ai/veo3.1/fast", duration=6,
                                           aspect_ratio="9:16", seed=11,
                                           negative_prompt="blur"))
    assert job_id == JOB_ID  # the sub-path "/fast" is not part of the status URL
    seen = [await provider.poll(job_id) for _ in range(3)]
    assert seen[2].video_url == "https://v3.fal.media/files/penguin/Xk2a9_output.mp4"
    submit = fake.router.calls[0]
    assert submit.url.path == "/fal-ai/veo3.1/fast"
    assert submit.headers["authorization"] == f"Key {SENTINEL_KEY}"
    assert json.loads(submit.body) == {"prompt": "A glass city", "aspect_ratio": "9:16",
                                       "duration": "6s", "negative_prompt": "blur",
                                       "seed": 11, "generate_audio": False}


@pytest.mark.parametrize("status", [400, 401, 403, 422, 500])
async def test_key_never_appears_in_a_result_error_even_when_echoed(
    client_for: ClientFor, status: int, caplog: pytest.LogCaptureFixture
) -> None:
    """The result read is fal's own third call (create and status: the suite)."""
    caplog.set_level(logging.DEBUG)
    fake = FakeFal(states=["status_completed"])
    fake.router.script("GET", RESULT, lambda r: echo_error(status, r))
    try:
        result = await make(client_for(fake.router)).poll(JOB_ID)
    except ProviderError as exc:  # the account's fault, or a blip: raised, not failed
        assert SENTINEL_KEY not in all_texts(exc)
    else:
        assert result.error is not None
        assert SENTINEL_KEY not in all_texts(result.error)
    assert SENTINEL_KEY not in caplog.text


async def test_image_to_video_sends_image_url(client_for: ClientFor) -> None:
    fake = FakeFal()
    await make(client_for(fake.router)).submit(
        request(model="fal-ai/veo3.1/image-to-video", image="https://img.example.test/a.png"))
    body = json.loads(fake.router.calls[0].body)
    assert body["image_url"] == "https://img.example.test/a.png"


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
