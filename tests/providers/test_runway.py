"""What is Runway's own: its create bodies, failure-code families, the daily cap and the
short-lived 429 on a poll. The common behaviours run in conformance/test_suite.py on the
fake and facts of conformance/runway.py."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from conformance.runway import CREATE, TASK, TASK_ID, FakeRunway, make, request
from provider_fakes import SENTINEL_KEY, ClientFor, fixture, json_response, run_one_row

from reelqueue.domain.errors import ErrorClass, ErrorLabel, ProviderError
from reelqueue.domain.states import AccountStatus, JobState
from reelqueue.engine import render
from reelqueue.engine.config import EngineConfig
from reelqueue.providers.adapters import runway


async def test_create_body_and_states_as_documented(client_for: ClientFor) -> None:
    fake = FakeRunway()
    provider = make(client_for(fake.router))
    job_id = await provider.submit(request(model="gen4.5", duration=8.0, seed=7))
    seen = [await provider.poll(job_id) for _ in range(4)]
    assert seen[2].progress == pytest.approx(0.42)
    assert seen[0].poll_after == runway.POLL_SECONDS
    create = fake.router.calls[0]
    assert create.headers["authorization"] == f"Bearer {SENTINEL_KEY}"
    assert create.headers["x-runway-version"] == runway.API_VERSION
    assert json.loads(create.body) == {"model": "gen4.5", "promptText": "A red fox in snow",
                                       "duration": 8, "ratio": "1280:720", "seed": 7}


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


async def test_safety_failure_hides_the_raw_moderation_text(client_for: ClientFor) -> None:
    fake = FakeRunway(states=["task_failed_safety"])
    status = await make(client_for(fake.router)).poll(TASK_ID)
    assert status.error is not None
    assert "SAFETY.INPUT.TEXT" in str(status.error)
    assert "flagged" not in str(status.error)


async def test_daily_cap_cooldown_is_configurable(client_for: ClientFor) -> None:
    fake = FakeRunway()
    fake.router.script("POST", rf"{CREATE}",
                       json_response(429, fixture("runway", "error_429_daily")))
    with pytest.raises(ProviderError) as caught:
        await make(client_for(fake.router), daily_cap_cooldown=900).submit(request())
    assert caught.value.retry_after == 900.0


async def test_invalid_params_fail_before_any_request(client_for: ClientFor) -> None:
    fake = FakeRunway()
    with pytest.raises(ProviderError) as caught:
        await make(client_for(fake.router)).submit(request(model="veo3.1", duration=5))
    assert caught.value.error_class is ErrorClass.PERMANENT
    assert caught.value.label is ErrorLabel.INVALID_INPUT
    assert fake.router.calls == []


# -- issue 10: failure codes by family, the two 429s ----------------------------------------


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
    job, store = await run_one_row(tmp_path, fake.router, "runway", prompt="A red fox in snow",
                                   account="studio",
                                   config=EngineConfig(heartbeat_seconds=0.05))
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
