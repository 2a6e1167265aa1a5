"""What is Veo's own: the request body, the key sent to the API host only (the file
endpoint redirects to a storage host), inline video, the operation's rpc codes. The common
behaviours run in conformance/test_suite.py on conformance/veo.py's fake and facts."""

from __future__ import annotations

import base64
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx2
import pytest
from conformance.veo import OP_NAME, OPERATION, STORAGE, FakeVeo, make, request
from provider_fakes import SENTINEL_KEY, VIDEO_BYTES, Router, fixture, json_response, run_one_row

from reelqueue.domain.errors import ErrorClass, ErrorLabel, ProviderError
from reelqueue.domain.states import JobState, RemotePhase
from reelqueue.providers.adapters import veo

ClientFor = Callable[[Router], httpx2.AsyncClient]


async def collect(provider: veo.VeoProvider, status: Any) -> bytes:
    return b"".join([chunk async for chunk in provider.download(OP_NAME, status)])


async def test_create_body_as_documented(client_for: ClientFor) -> None:
    fake = FakeVeo()
    provider = make(client_for(fake.router))
    job_id = await provider.submit(request(duration=8, resolution="1080p", aspect_ratio="9:16",
                                           negative_prompt="text, watermark"))
    seen = [await provider.poll(job_id) for _ in range(3)]
    assert all(s.progress is None for s in seen[:2])  # Veo gives no number
    assert seen[0].poll_after == veo.POLL_SECONDS
    create = fake.router.calls[0]
    assert create.url.path == "/v1beta/models/veo-3.1-generate-preview:predictLongRunning"
    assert create.headers["x-goog-api-key"] == SENTINEL_KEY
    assert json.loads(create.body) == {
        "instances": [{"prompt": "A lighthouse at dusk"}],
        "parameters": {"aspectRatio": "9:16", "durationSeconds": 8, "resolution": "1080p",
                       "negativePrompt": "text, watermark"},
    }


async def test_rai_filtered_operation_says_nothing_was_charged(client_for: ClientFor) -> None:
    fake = FakeVeo(states=["operation_rai_filtered"])
    status = await make(client_for(fake.router)).poll(OP_NAME)
    assert status.error is not None and "not been charged" in str(status.error)


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


async def test_seed_is_refused_before_sending(client_for: ClientFor) -> None:
    fake = FakeVeo()
    with pytest.raises(ProviderError) as caught:
        await make(client_for(fake.router)).submit(request(seed=5))
    assert caught.value.label is ErrorLabel.INVALID_INPUT
    assert fake.router.calls == []


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


async def test_engine_unreadable_image_fails_before_anything_is_sent(tmp_path: Path) -> None:
    """Veo takes the image inline, so an "unreachable image" is our own file: refused
    before the create, nothing paid."""
    fake = FakeVeo(states=["operation_done"])
    job, _ = await run_one_row(tmp_path, fake.router, "veo", prompt="A lighthouse at dusk",
                               account="veo-1",
                               params={"duration": 8, "image": str(tmp_path / "missing.png")})
    assert job.state is JobState.FAILED
    assert job.error_label == ErrorLabel.INVALID_INPUT.value
    assert "reference image unusable" in (job.error_message or "")
    assert fake.creates() == 0
