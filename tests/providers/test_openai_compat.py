"""What is the OpenAI-compatible gateway's own: a multipart create, the SDK's sizes and
seconds, the account's model, no default base URL, ``openai-poll-after-ms``, a lost create
found in the list. The common behaviours run in conformance/test_suite.py on the fake and
facts of conformance/openai_compat.py."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import httpx2
import pytest
from conformance.openai_compat import (
    BASE_URL,
    CONTENT,
    CREATE,
    GATEWAY,
    VIDEO_ID,
    FakeGateway,
    make,
    request,
)
from provider_fakes import (
    SENTINEL_KEY,
    ClientFor,
    Router,
    all_texts,
    echo_error,
    fixture,
    json_response,
    run_one_row,
)

from reelqueue.domain.errors import ErrorLabel, InputError, ProviderError
from reelqueue.domain.models import Job
from reelqueue.domain.states import JobState
from reelqueue.providers.adapters import openai_compat
from reelqueue.providers.base import ProviderConfig
from reelqueue.providers.builtin import builtin_registry
from reelqueue.store.memory import MemoryStore


async def collect(provider: openai_compat.OpenAICompatProvider, status: Any) -> bytes:
    return b"".join([chunk async for chunk in provider.download(VIDEO_ID, status)])


async def run_engine(tmp_path: Path, router: Router) -> tuple[Job, MemoryStore]:
    return await run_one_row(tmp_path, router, "openai-compat", prompt="A tide pool",
                             account="gw", base_url=BASE_URL, settings={"model": "wan-2.5"})


async def test_multipart_create_progress_and_poll_after(
    client_for: ClientFor, tmp_path: Path
) -> None:
    image = tmp_path / "ref.png"
    image.write_bytes(b"\x89PNG\r\n\x1a\nref")
    fake = FakeGateway()
    provider = make(client_for(fake.router))
    job_id = await provider.submit(request(duration=8, aspect_ratio="16:9",
                                           image=str(image)))
    seen = [await provider.poll(job_id) for _ in range(3)]
    assert seen[1].progress == pytest.approx(0.37)
    assert seen[0].poll_after == pytest.approx(2.5)
    create = fake.router.calls[0]
    assert create.headers["content-type"].startswith("multipart/form-data")
    body = create.body.decode("latin-1")
    for field, value in (("prompt", "A tide pool"), ("model", "wan-2.5"), ("seconds", "8"),
                         ("size", "1280x720")):
        assert f'name="{field}"\r\n\r\n{value}\r\n' in body
    assert 'name="input_reference"; filename="reference.png"' in body


async def test_key_never_appears_when_the_content_endpoint_echoes_it(
    client_for: ClientFor, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    fake = FakeGateway(states=["video_completed"])
    provider = make(client_for(fake.router))
    status_done = await provider.poll(VIDEO_ID)
    fake.router.script("GET", CONTENT, lambda r: echo_error(401, r))
    with pytest.raises(ProviderError) as caught:
        await collect(provider, status_done)
    assert caught.value.label is ErrorLabel.KEY_REJECTED
    assert SENTINEL_KEY not in all_texts(caught.value)
    assert SENTINEL_KEY not in caplog.text


async def test_no_default_base_url_and_https_only(client_for: ClientFor) -> None:
    client = client_for(Router())
    assert builtin_registry().get("openai-compat").default_base_url is None
    with pytest.raises(InputError):
        openai_compat.create(client, ProviderConfig("gw", None, SENTINEL_KEY))
    with pytest.raises(InputError):
        openai_compat.create(client, ProviderConfig("gw", "http://gateway.example/v1",
                                                    SENTINEL_KEY))


async def test_model_is_required(client_for: ClientFor) -> None:
    fake = FakeGateway()
    provider = openai_compat.create(client_for(fake.router),
                                    ProviderConfig("gw", BASE_URL, SENTINEL_KEY))
    with pytest.raises(ProviderError) as caught:
        await provider.submit(request())
    assert caught.value.label is ErrorLabel.INVALID_INPUT
    assert fake.router.calls == []
    await provider.submit(request(model="other-model"))
    assert 'name="model"\r\n\r\nother-model\r\n' in fake.router.calls[0].body.decode()


async def test_check_key_falls_back_to_models(client_for: ClientFor) -> None:
    fake = FakeGateway()
    provider = make(client_for(fake.router))
    await provider.check_key()
    assert fake.router.calls[-1].url.params["limit"] == "1"
    fake.router.script("GET", CREATE, httpx2.Response(404))
    fake.router.add("GET", rf"{GATEWAY}/v1/models",
                    lambda r, m: json_response(200, {"object": "list", "data": []}))
    await provider.check_key()
    assert fake.router.calls[-1].url.path == "/v1/models"
    fake.router.script("GET", CREATE, json_response(401, fixture("openai_compat",
                                                                 "error_401")))
    with pytest.raises(ProviderError) as caught:
        await provider.check_key()
    assert caught.value.label is ErrorLabel.KEY_REJECTED


# -- issue 10: the SDK's sizes and seconds, the default model, failure codes, unknowns ----


@pytest.mark.parametrize(("params", "size"), [
    ({"aspect_ratio": "16:9"}, "1280x720"),
    ({"aspect_ratio": "9:16"}, "720x1280"),
    ({"aspect_ratio": "16:9", "resolution": "1024p"}, "1792x1024"),
    ({"aspect_ratio": "9:16", "resolution": "1024p"}, "1024x1792"),
    ({"resolution": "720p"}, "1280x720"),
])
async def test_sizes_are_the_sdks(client_for: ClientFor, params: dict[str, Any],
                                  size: str) -> None:
    fake = FakeGateway()
    await make(client_for(fake.router)).submit(request(**params))
    assert f'name="size"\r\n\r\n{size}\r\n' in fake.router.calls[0].body.decode()


async def test_1080p_only_when_the_account_allows_it(client_for: ClientFor) -> None:
    fake = FakeGateway()
    with pytest.raises(ProviderError) as caught:
        await make(client_for(fake.router)).submit(request(resolution="1080p",
                                                           aspect_ratio="9:16"))
    assert caught.value.label is ErrorLabel.INVALID_INPUT
    assert fake.router.calls == []
    await make(client_for(fake.router), allow_1080p=True).submit(
        request(resolution="1080p", aspect_ratio="9:16"))
    assert 'name="size"\r\n\r\n1080x1920\r\n' in fake.router.calls[0].body.decode()


@pytest.mark.parametrize(("duration", "ok"), [(4, True), (8, True), (12, True), ("12", True),
                                              (5, False), (10, False), (16, False),
                                              (60, False)])
async def test_seconds_are_4_8_or_12(client_for: ClientFor, duration: Any, ok: bool) -> None:
    fake = FakeGateway()
    provider = make(client_for(fake.router))
    if ok:
        await provider.submit(request(duration=duration))
        assert f'name="seconds"\r\n\r\n{int(duration)}\r\n' in \
            fake.router.calls[0].body.decode()
    else:
        with pytest.raises(ProviderError) as caught:
            await provider.submit(request(duration=duration))
        assert caught.value.label is ErrorLabel.INVALID_INPUT
        assert fake.router.calls == []
    assert builtin_registry().get("openai-compat").params.durations == (4.0, 8.0, 12.0)


async def test_the_accounts_default_model_is_sent(client_for: ClientFor) -> None:
    fake = FakeGateway()
    await make(client_for(fake.router), model="veo-3.1-fast").submit(request())
    assert 'name="model"\r\n\r\nveo-3.1-fast\r\n' in fake.router.calls[0].body.decode()


async def test_engine_unreadable_create_answer_is_unknown_without_a_second_create(
    tmp_path: Path,
) -> None:
    """An unreadable create answer is never read as "nothing was created": the render the
    gateway did create is found in its list (issue 19) and read, never created again."""
    import time

    fake = FakeGateway(states=["video_completed"])
    fake.router.script("POST", CREATE, json_response(200, {"object": "video"}))
    listed = fixture("openai_compat", "video_queued")
    listed.update(id=VIDEO_ID, prompt="A tide pool", model="wan-2.5",
                  created_at=int(time.time()))
    fake.router.script("GET", CREATE, json_response(200, {
        "object": "list", "data": [listed], "first_id": VIDEO_ID, "last_id": VIDEO_ID,
        "has_more": False}))
    job, store = await run_engine(tmp_path, fake.router)
    assert job.state is JobState.COMPLETED and job.provider_job_id == VIDEO_ID
    assert fake.creates() == 1
    reconciled = next(e for e in store.ledger(job.id) if e.event == "reconciled")
    assert reconciled.detail["method"] == "search"


def test_accounts_add_takes_a_default_model_for_gateways_only() -> None:
    from reelqueue.cli.cmd_accounts import default_model_setting
    from reelqueue.cli.main import build_parser

    args = build_parser().parse_args(["accounts", "add", "gw", "--provider", "openai-compat",
                                      "--base-url", BASE_URL, "--model", " wan-2.5 "])
    assert default_model_setting(args.provider, args.model) == {"model": "wan-2.5"}
    assert default_model_setting("openai-compat", None) == {}
    with pytest.raises(InputError):
        default_model_setting("runway", "gen4.5")  # Runway takes the model per row
    with pytest.raises(InputError):
        default_model_setting("openai-compat", "  ")


# -- property: no create answer is read as "nothing was created" --------------------------
