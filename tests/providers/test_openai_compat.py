"""The OpenAI-compatible /v1/videos adapter against a fake gateway."""

from __future__ import annotations

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

from reelqueue.domain.errors import ErrorClass, ErrorLabel, InputError, ProviderError
from reelqueue.domain.models import Job
from reelqueue.domain.states import AccountStatus, JobState, RemotePhase
from reelqueue.providers.adapters import openai_compat
from reelqueue.providers.base import ProviderConfig, RenderRequest
from reelqueue.providers.builtin import builtin_registry
from reelqueue.store.memory import MemoryStore

GATEWAY = "videos.gateway.example"
BASE_URL = f"https://{GATEWAY}/v1"
STORAGE = "files.gateway-cdn.example"
VIDEO_ID = "video_68d7512d07848190b3e45da0ecbebcde"
CREATE = rf"{GATEWAY}/v1/videos"
VIDEO = rf"{GATEWAY}/v1/videos/{VIDEO_ID}"
CONTENT = rf"{VIDEO}/content"
ClientFor = Callable[[Router], httpx2.AsyncClient]


class FakeGateway:
    """The /v1/videos shape; the content endpoint redirects to a storage host."""

    def __init__(self, states: list[str] | None = None) -> None:
        self.router = Router()
        self.states = states or ["video_queued", "video_in_progress", "video_completed"]
        self.position = -1
        self.expire_next_download = False
        self.router.add("POST", CREATE,
                        lambda r, m: json_response(200, fixture("openai_compat", "create")))
        self.router.add("GET", VIDEO, self._get)
        self.router.add("GET", CONTENT, self._content)
        self.router.add("DELETE", VIDEO, lambda r, m: json_response(
            200, {"id": VIDEO_ID, "deleted": True, "object": "video.deleted"}))
        self.router.add("GET", CREATE,
                        lambda r, m: json_response(200, fixture("openai_compat", "list")))
        self.router.add("GET", rf"{STORAGE}/.*", self._storage)

    def creates(self) -> int:
        return self.router.count("POST", CREATE)

    def _get(self, request: httpx2.Request, match: Any) -> httpx2.Response:
        self.position = min(self.position + 1, len(self.states) - 1)
        return json_response(200, fixture("openai_compat", self.states[self.position]),
                             {"openai-poll-after-ms": "2500"})

    def _content(self, request: httpx2.Request, match: Any) -> httpx2.Response:
        assert request.headers["authorization"] == f"Bearer {SENTINEL_KEY}"
        assert request.headers["accept"] == "application/binary"
        if self.expire_next_download:
            self.expire_next_download = False
            return json_response(404, {"error": {"message": "Video content not found",
                                                 "code": "not_found"}})
        return httpx2.Response(307, headers={"Location": f"https://{STORAGE}/{VIDEO_ID}.mp4"})

    def _storage(self, request: httpx2.Request, match: Any) -> httpx2.Response:
        assert "authorization" not in request.headers, "key leaked to the storage host"
        return video_response()


def make(client: httpx2.AsyncClient, **settings: Any) -> openai_compat.OpenAICompatProvider:
    config = ProviderConfig("gw", BASE_URL, SENTINEL_KEY, settings={"model": "wan-2.5",
                                                                     **settings})
    return openai_compat.create(client, config)


def request(**params: Any) -> RenderRequest:
    return RenderRequest(job_key="row-1", client_token="tok-1", prompt="A tide pool",
                         params=params)


async def collect(provider: openai_compat.OpenAICompatProvider, status: Any) -> bytes:
    return b"".join([chunk async for chunk in provider.download(VIDEO_ID, status)])


async def test_happy_path_walks_every_documented_state(
    client_for: ClientFor, tmp_path: Path
) -> None:
    image = tmp_path / "ref.png"
    image.write_bytes(b"\x89PNG\r\n\x1a\nref")
    fake = FakeGateway()
    provider = make(client_for(fake.router))
    job_id = await provider.submit(request(duration=8, aspect_ratio="16:9",
                                           image=str(image)))
    assert job_id == VIDEO_ID
    seen = [await provider.poll(job_id) for _ in range(3)]
    assert [(s.phase, s.sub_status) for s in seen] == [
        (RemotePhase.QUEUED, "queued"), (RemotePhase.RUNNING, "in_progress"),
        (RemotePhase.SUCCEEDED, "completed")]
    assert seen[1].progress == pytest.approx(0.37)
    assert seen[0].poll_after == pytest.approx(2.5)
    assert await collect(provider, seen[2]) == VIDEO_BYTES
    create = fake.router.calls[0]
    assert create.headers["content-type"].startswith("multipart/form-data")
    body = create.body.decode("latin-1")
    for field, value in (("prompt", "A tide pool"), ("model", "wan-2.5"), ("seconds", "8"),
                         ("size", "1280x720")):
        assert f'name="{field}"\r\n\r\n{value}\r\n' in body
    assert 'name="input_reference"; filename="reference.png"' in body
    assert fake.creates() == 1


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


@pytest.mark.parametrize(
    ("name", "error_class", "label"),
    [
        ("video_failed_moderation", ErrorClass.PERMANENT, ErrorLabel.CONTENT_POLICY),
        # "internal_error" is no code OpenAI documents: permanent, never a guessed retry.
        ("video_failed_internal", ErrorClass.PERMANENT, ErrorLabel.PROVIDER_ERROR),
        ("video_failed_server_error", ErrorClass.RETRYABLE, ErrorLabel.PROVIDER_ERROR),
        ("video_failed_rate_limited", ErrorClass.ACCOUNT, ErrorLabel.RATE_LIMITED),
        ("video_failed_invalid", ErrorClass.PERMANENT, ErrorLabel.INVALID_INPUT),
        ("video_expired", ErrorClass.PERMANENT, ErrorLabel.DOWNLOAD_FAILED),
    ],
)
async def test_failed_states(
    client_for: ClientFor, name: str, error_class: ErrorClass, label: ErrorLabel
) -> None:
    fake = FakeGateway(states=[name])
    status = await make(client_for(fake.router)).poll(VIDEO_ID)
    assert status.phase is RemotePhase.FAILED
    assert status.error is not None
    assert (status.error.error_class, status.error.label) == (error_class, label)


@pytest.mark.parametrize(
    ("status", "name", "headers", "error_class", "label", "retry_after", "maybe_sent"),
    [
        (401, "error_401", {}, ErrorClass.ACCOUNT, ErrorLabel.KEY_REJECTED, None, False),
        (403, "error_403", {}, ErrorClass.ACCOUNT, ErrorLabel.KEY_REJECTED, None, False),
        (400, "error_400", {}, ErrorClass.PERMANENT, ErrorLabel.INVALID_INPUT, None, False),
        (400, "error_400_moderation", {}, ErrorClass.PERMANENT, ErrorLabel.CONTENT_POLICY,
         None, False),
        (429, "error_429_rate", {"retry-after-ms": "20000"}, ErrorClass.ACCOUNT,
         ErrorLabel.RATE_LIMITED, 20.0, False),
        (429, "error_429_quota", {"Retry-After": "20"}, ErrorClass.ACCOUNT,
         ErrorLabel.OUT_OF_CREDITS, None, False),
        (500, "error_500", {}, ErrorClass.RETRYABLE, ErrorLabel.PROVIDER_ERROR, None, False),
        (503, "error_500", {}, ErrorClass.RETRYABLE, ErrorLabel.PROVIDER_ERROR, None, False),
        (504, "error_500", {}, ErrorClass.RETRYABLE, ErrorLabel.TIMED_OUT, None, True),
    ],
)
async def test_create_errors_are_classified(
    client_for: ClientFor, status: int, name: str, headers: dict[str, str],
    error_class: ErrorClass, label: ErrorLabel, retry_after: float | None, maybe_sent: bool,
) -> None:
    fake = FakeGateway()
    fake.router.script("POST", CREATE, json_response(status, fixture("openai_compat", name),
                                                     headers))
    with pytest.raises(ProviderError) as caught:
        await make(client_for(fake.router)).submit(request())
    error = caught.value
    assert (error.error_class, error.label) == (error_class, label)
    assert error.retry_after == retry_after
    assert error.body_maybe_sent is maybe_sent
    assert fake.creates() == 1


async def test_create_timeout_is_never_resent(client_for: ClientFor) -> None:
    fake = FakeGateway()
    fake.router.script("POST", CREATE, read_timeout)
    with pytest.raises(ProviderError) as caught:
        await make(client_for(fake.router)).submit(request())
    assert caught.value.body_maybe_sent is True
    assert len(fake.router.calls) == 1


async def test_dead_content_link_is_retried_after_polling_again(client_for: ClientFor) -> None:
    fake = FakeGateway(states=["video_completed"])
    provider = make(client_for(fake.router))
    status = await provider.poll(VIDEO_ID)
    fake.expire_next_download = True
    assert await collect(provider, status) == VIDEO_BYTES
    assert fake.router.count("GET", VIDEO) == 2


async def test_expired_video_is_a_permanent_download_failure(client_for: ClientFor) -> None:
    fake = FakeGateway(states=["video_completed", "video_expired"])
    provider = make(client_for(fake.router))
    status = await provider.poll(VIDEO_ID)
    fake.expire_next_download = True
    with pytest.raises(ProviderError) as caught:
        await collect(provider, status)
    assert (caught.value.error_class, caught.value.label) == (
        ErrorClass.PERMANENT, ErrorLabel.DOWNLOAD_FAILED)


async def test_new_instance_reattaches_by_video_id(client_for: ClientFor) -> None:
    fake = FakeGateway()
    job_id = await make(client_for(fake.router)).submit(request())
    second = make(client_for(fake.router))
    status = await second.poll(job_id)
    while status.phase is not RemotePhase.SUCCEEDED:
        status = await second.poll(job_id)
    assert await collect(second, status) == VIDEO_BYTES
    assert fake.creates() == 1
    assert second.supports_lookup is False
    with pytest.raises(ProviderError) as caught:  # unknown, never "there is none"
        await second.lookup(request())
    assert caught.value.label is ErrorLabel.SUBMIT_UNKNOWN


async def test_cancel_deletes_the_video(client_for: ClientFor) -> None:
    fake = FakeGateway()
    await make(client_for(fake.router)).cancel(VIDEO_ID)
    assert fake.router.count("DELETE", VIDEO) == 1


@pytest.mark.parametrize("status", [400, 401, 429, 500])
async def test_key_never_appears_in_errors_even_when_echoed(
    client_for: ClientFor, status: int, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    fake = FakeGateway(states=["video_completed"])
    fake.router.script("POST", CREATE, lambda r: echo_error(status, r))
    fake.router.script("GET", VIDEO, lambda r: echo_error(status, r))
    provider = make(client_for(fake.router))
    for call in (provider.submit(request()), provider.poll(VIDEO_ID)):
        with pytest.raises(ProviderError) as caught:
            await call
        assert SENTINEL_KEY not in all_texts(caught.value)
    # A download whose content endpoint echoes the key header back.
    status_done = await provider.poll(VIDEO_ID)
    fake.router.script("GET", CONTENT, lambda r: echo_error(401, r))
    with pytest.raises(ProviderError) as caught:
        await collect(provider, status_done)
    assert caught.value.label is ErrorLabel.KEY_REJECTED
    assert SENTINEL_KEY not in all_texts(caught.value)
    assert SENTINEL_KEY not in caplog.text


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


def test_extra_validation_and_registration() -> None:
    assert openai_compat.extra_validation({"image": "https://x.test/a.png"}) != []
    assert openai_compat.extra_validation({"image": "/tmp/a.png"}) == []
    assert builtin_registry().get("openai-compat").rules is openai_compat.extra_validation
    assert builtin_registry().get("openai-compat").factory is openai_compat.create


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


@pytest.mark.parametrize("answer", [{}, {"id": ""}, {"id": None}, {"object": "video"},
                                    {"data": [{"id": VIDEO_ID}]}, {"error": None}])
async def test_create_answer_without_an_id_is_an_unknown_outcome(
    client_for: ClientFor, answer: Any
) -> None:
    fake = FakeGateway()
    fake.router.script("POST", CREATE, json_response(200, answer))
    with pytest.raises(ProviderError) as caught:
        await make(client_for(fake.router)).submit(request())
    assert (caught.value.error_class, caught.value.label) == (
        ErrorClass.PERMANENT, ErrorLabel.SUBMIT_UNKNOWN)
    assert caught.value.body_maybe_sent is True
    assert fake.creates() == 1


@pytest.mark.parametrize("body", [b"<html>ok</html>", b'{"id": "video_', b"[]", b""])
async def test_unreadable_create_answer_may_have_been_billed(
    client_for: ClientFor, body: bytes
) -> None:
    fake = FakeGateway()
    fake.router.script("POST", CREATE, httpx2.Response(200, content=body))
    with pytest.raises(ProviderError) as caught:
        await make(client_for(fake.router)).submit(request())
    assert caught.value.body_maybe_sent is True
    assert fake.creates() == 1


# -- through the real engine (MemoryStore), counting creates at the fake ------------------

async def run_engine(tmp_path: Path, router: Router, params: dict[str, Any] | None = None
                     ) -> tuple[Job, MemoryStore]:
    """One row on one gateway account, run until nothing more can happen."""
    return await run_one_row(tmp_path, router, "openai-compat", prompt="A tide pool",
                             account="gw", params=params, base_url=BASE_URL,
                             settings={"model": "wan-2.5"})


def _instant(fake: FakeGateway) -> None:
    """Answer without openai-poll-after-ms, so the engine polls on its own fast pace."""
    fake.router.add("GET", VIDEO, lambda r, m: json_response(
        200, fixture("openai_compat", fake.states[-1])))
    fake.router.routes.insert(0, fake.router.routes.pop())


async def test_engine_completes_a_row(tmp_path: Path) -> None:
    fake = FakeGateway(states=["video_completed"])
    _instant(fake)
    job, _ = await run_engine(tmp_path, fake.router, {"duration": 8})
    assert job.state is JobState.COMPLETED
    assert Path(job.output_path).read_bytes() == VIDEO_BYTES
    assert fake.creates() == 1


@pytest.mark.parametrize(("where", "answer", "label", "words"), [
    ("poll", json_response(200, fixture("openai_compat", "video_failed_moderation")),
     ErrorLabel.CONTENT_POLICY, "blocked by our moderation system"),
    ("create", json_response(400, fixture("openai_compat", "error_400")),
     ErrorLabel.INVALID_INPUT, "Invalid type for 'input_reference'"),
    ("poll", json_response(200, fixture("openai_compat", "video_failed_image_download")),
     ErrorLabel.INVALID_INPUT, "Failed to download the input_reference image"),
])
async def test_engine_documented_permanent_failure_one_create_then_failed(
    tmp_path: Path, where: str, answer: httpx2.Response, label: ErrorLabel, words: str
) -> None:
    fake = FakeGateway(states=["video_completed"])
    _instant(fake)
    fake.router.script("POST" if where == "create" else "GET",
                       CREATE if where == "create" else VIDEO, answer)
    job, _ = await run_engine(tmp_path, fake.router)
    assert job.state is JobState.FAILED
    assert job.error_label == label.value
    assert words in (job.error_message or "")
    assert fake.creates() == 1


async def test_engine_out_of_quota_pauses_the_account(tmp_path: Path) -> None:
    """insufficient_quota is account-level (DESIGN.md invariant 6): the row waits."""
    fake = FakeGateway(states=["video_completed"])
    fake.router.add("POST", CREATE, lambda r, m: json_response(
        429, fixture("openai_compat", "error_429_quota")))
    fake.router.routes.insert(0, fake.router.routes.pop())
    job, store = await run_engine(tmp_path, fake.router)
    assert job.state is JobState.QUEUED
    assert fake.creates() == 1
    account = store.get_account("gw")
    assert account is not None and account.status is AccountStatus.OUT_OF_CREDITS


async def test_engine_documented_retryable_failure_is_rendered_again(tmp_path: Path) -> None:
    fake = FakeGateway(states=["video_completed"])
    _instant(fake)
    fake.router.script("GET", VIDEO, json_response(200, fixture(
        "openai_compat", "video_failed_server_error")))
    job, _ = await run_engine(tmp_path, fake.router)
    assert job.state is JobState.COMPLETED
    assert fake.creates() == 2


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

test_property_a_create_answer_is_an_id_or_an_unknown_outcome = create_answer_property(
    fake=FakeGateway, make=make, request=request, create=CREATE, created=200, id_key="id",
    reads_as=lambda body, job_id: job_id == str(body["id"]))
