"""What is Replicate's own: its request body, outputs removed after an hour, its 429
wordings and failure texts. The common behaviours run in conformance/test_suite.py on the
fake and facts of conformance/replicate.py."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from conformance.replicate import CREATE, PRED_ID, FakeReplicate, make, request
from provider_fakes import ClientFor, Router, fixture, json_response, run_one_row

from reelqueue.domain.errors import ErrorClass, ErrorLabel, ProviderError
from reelqueue.domain.states import JobState
from reelqueue.providers.adapters import replicate


async def collect(provider: replicate.ReplicateProvider, status: Any) -> bytes:
    return b"".join([chunk async for chunk in provider.download(PRED_ID, status)])


async def run_engine(tmp_path: Path, router: Router) -> Any:
    return await run_one_row(tmp_path, router, "replicate", prompt="A lantern festival",
                             account="rep")


async def test_create_body_as_documented(client_for: ClientFor) -> None:
    fake = FakeReplicate()
    await make(client_for(fake.router)).submit(request(
        model="google/veo-3.1", duration=8.0, seed=3, image="https://img.example.test/a.png"))
    create = fake.router.calls[0]
    assert create.url.path == "/v1/models/google/veo-3.1/predictions"
    assert "prefer" not in create.headers
    assert json.loads(create.body) == {"input": {
        "prompt": "A lantern festival", "duration": 8, "seed": 3,
        "image": "https://img.example.test/a.png"}}


# -- issue 10: the older 429 wording, failure texts, unknown outcomes, the engine ---------


@pytest.mark.parametrize(("body", "wait"), [
    (fixture("replicate", "error_429_older"), 1.0),
    ({"detail": "Request was throttled. Expected available in 17 seconds."}, 17.0),
    (fixture("replicate", "error_429"), 30.0),
])
async def test_429_wordings_give_the_wait(client_for: ClientFor, body: Any,
                                          wait: float) -> None:
    fake = FakeReplicate()
    fake.router.script("POST", CREATE, json_response(429, body))
    with pytest.raises(ProviderError) as caught:
        await make(client_for(fake.router)).submit(request())
    assert (caught.value.error_class, caught.value.label) == (ErrorClass.ACCOUNT,
                                                              ErrorLabel.RATE_LIMITED)
    assert caught.value.retry_after == wait


async def test_engine_rate_limit_with_the_older_wording_waits_then_creates_once(
    tmp_path: Path,
) -> None:
    fake = FakeReplicate(states=["prediction_succeeded"])
    body = {"detail": "Request was throttled. Expected available in 0.05 seconds."}
    fake.router.script("POST", CREATE, json_response(429, body))
    job, _ = await run_engine(tmp_path, fake.router)
    assert job.state is JobState.COMPLETED
    assert job.attempts == 1  # the 429 spent no attempt
    assert fake.creates() == 2  # the refused one and the one that went through


async def test_a_poll_answer_echoing_a_20_mb_inline_image_is_read(client_for: ClientFor) -> None:
    """Replicate's prediction answer echoes its ``input``: a row's reference image sent
    inline (the import takes 20 MB; 27 MB as a data URI) comes back in every poll, which
    the answer bound (MAX_API_ANSWER_BYTES) leaves room for."""
    from conformance.replicate import PREDICTION

    from reelqueue.domain.states import RemotePhase

    answer = fixture("replicate", "prediction_succeeded")
    answer["input"]["image"] = "data:image/png;base64," + "A" * (27 * 1024 * 1024)
    fake = FakeReplicate()
    fake.router.script("GET", PREDICTION, json_response(200, answer))
    status = await make(client_for(fake.router)).poll(PRED_ID)
    assert status.phase is RemotePhase.SUCCEEDED and status.video_url
