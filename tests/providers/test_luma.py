"""The Luma Agents adapter against a strict fake agents.lumalabs.ai.

The fake has only the two endpoints the API has (luma-agents-python 0.3.0 ``.stats.yml``:
``POST /generations``, ``GET /generations/{id}``); anything else, or an unknown id, is a
404 in the API's JSON error shape, and a wrong key is a 401.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx2
import pytest
from answer_properties import AnswerShape, answer_properties
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

from reelqueue.cli import cmd_accounts
from reelqueue.domain.errors import ErrorClass, ErrorLabel, ProviderError
from reelqueue.domain.models import Job
from reelqueue.domain.states import AccountStatus, JobState, RemotePhase
from reelqueue.providers.adapters import luma
from reelqueue.providers.base import ProviderConfig, RenderRequest
from reelqueue.providers.builtin import builtin_registry
from reelqueue.store.memory import MemoryStore

API = "agents.lumalabs.ai"
CDN = "storage.cdn-luma.com"
GEN_ID = "4f6c1d2e-8a9b-4c3d-9e1f-2a3b4c5d6e7f"
CREATE = rf"{API}/v1/generations"
GENERATION = rf"{API}/v1/generations/{GEN_ID}"
ANY_GENERATION = rf"{API}/v1/generations/[^/]+"
ClientFor = Callable[[Router], httpx2.AsyncClient]


class FakeLuma:
    """Generations walk ``states`` one GET at a time; each completed GET re-signs the URL."""

    def __init__(self, states: list[str] | None = None) -> None:
        self.router = Router()
        self.states = states or ["generation_queued", "generation_processing",
                                 "generation_completed"]
        self.position = -1
        self.signatures = 0
        self.expired: set[str] = set()
        self.router.add("POST", CREATE, self._authorized(
            lambda r, m: json_response(201, fixture("luma", "create"))))
        self.router.add("GET", GENERATION, self._authorized(self._get))
        # Only the two endpoints exist: any other id (or path) is the API's JSON 404.
        self.router.add("GET", ANY_GENERATION, self._authorized(
            lambda r, m: json_response(404, fixture("luma", "error_404"))))
        self.router.add("GET", rf"{API}/.*",
                        lambda r, m: json_response(404, {"detail": "Not Found"}))
        self.router.add("GET", rf"{CDN}/.*", self._video)

    def creates(self) -> int:
        return self.router.count("POST", CREATE)

    @staticmethod
    def _authorized(handler: Any) -> Any:
        def check(request: httpx2.Request, match: Any) -> httpx2.Response:
            if request.headers.get("authorization") != f"Bearer {SENTINEL_KEY}":
                return json_response(401, fixture("luma", "error_401"))
            result: httpx2.Response = handler(request, match)
            return result
        return check

    def _get(self, request: httpx2.Request, match: Any) -> httpx2.Response:
        self.position = min(self.position + 1, len(self.states) - 1)
        generation = fixture("luma", self.states[self.position])
        if generation["state"] == "completed":
            self.signatures += 1
            generation["output"][0]["url"] = (
                f"https://{CDN}/agents/{GEN_ID}/video.mp4?X-Amz-Signature=s{self.signatures}")
        return json_response(200, generation)

    def _video(self, request: httpx2.Request, match: Any) -> httpx2.Response:
        if str(request.url) in self.expired:
            return httpx2.Response(403, content=b"<Error><Code>AccessDenied</Code>"
                                  b"<Message>Request has expired</Message></Error>",
                                  headers={"Content-Type": "application/xml"})
        return video_response()


def make(client: httpx2.AsyncClient) -> luma.LumaProvider:
    return luma.create(client, ProviderConfig("luma-main", None, SENTINEL_KEY))


def request(**params: Any) -> RenderRequest:
    return RenderRequest(job_key="row-1", client_token="tok-1", prompt="A paper boat",
                         params=params)


async def collect(provider: luma.LumaProvider, status: Any) -> bytes:
    return b"".join([chunk async for chunk in provider.download(GEN_ID, status)])


async def test_happy_path_walks_every_documented_state(client_for: ClientFor) -> None:
    fake = FakeLuma()
    provider = make(client_for(fake.router))
    job_id = await provider.submit(request(duration=10, resolution="1080p",
                                           aspect_ratio="9:16"))
    assert job_id == GEN_ID
    seen = [await provider.poll(job_id) for _ in range(3)]
    assert [(s.phase, s.sub_status) for s in seen] == [
        (RemotePhase.QUEUED, "queued"), (RemotePhase.RUNNING, "processing"),
        (RemotePhase.SUCCEEDED, "completed")]
    assert await collect(provider, seen[2]) == VIDEO_BYTES
    create = fake.router.calls[0]
    assert create.headers["authorization"] == f"Bearer {SENTINEL_KEY}"
    assert json.loads(create.body) == {
        "type": "video", "prompt": "A paper boat", "model": "ray-3.2", "aspect_ratio": "9:16",
        "video": {"duration": "10s", "resolution": "1080p"}}
    assert fake.creates() == 1
    assert "authorization" not in fake.router.calls[-1].headers


async def test_start_frame_from_a_file_or_a_link(client_for: ClientFor, tmp_path: Path) -> None:
    image = tmp_path / "start.png"
    image.write_bytes(b"\x89PNG\r\n\x1a\nimg")
    fake = FakeLuma()
    provider = make(client_for(fake.router))
    await provider.submit(request(image=str(image)))
    await provider.submit(request(image="https://img.example.test/start.jpg"))
    first, second = (json.loads(c.body)["video"]["start_frame"] for c in fake.router.calls)
    assert first["media_type"] == "image/png" and first["data"]
    assert second == {"url": "https://img.example.test/start.jpg"}


@pytest.mark.parametrize(
    ("code", "error_class", "label"),
    [
        ("content_moderated", ErrorClass.PERMANENT, ErrorLabel.CONTENT_POLICY),
        ("budget_exhausted", ErrorClass.ACCOUNT, ErrorLabel.OUT_OF_CREDITS),
        ("rate_limited", ErrorClass.ACCOUNT, ErrorLabel.RATE_LIMITED),
        ("generation_failed", ErrorClass.RETRYABLE, ErrorLabel.PROVIDER_ERROR),
        ("output_not_found", ErrorClass.RETRYABLE, ErrorLabel.PROVIDER_ERROR),
        ("image_too_large", ErrorClass.PERMANENT, ErrorLabel.INVALID_INPUT),
        ("unsupported_format", ErrorClass.PERMANENT, ErrorLabel.INVALID_INPUT),
        ("corrupt_input", ErrorClass.PERMANENT, ErrorLabel.INVALID_INPUT),
        ("invalid_request", ErrorClass.PERMANENT, ErrorLabel.INVALID_INPUT),
    ],
)
async def test_failure_codes(
    client_for: ClientFor, code: str, error_class: ErrorClass, label: ErrorLabel
) -> None:
    fake = FakeLuma(states=[f"failed_{code}"])
    status = await make(client_for(fake.router)).poll(GEN_ID)
    assert status.phase is RemotePhase.FAILED
    assert status.error is not None
    assert (status.error.error_class, status.error.label) == (error_class, label)


@pytest.mark.parametrize(
    ("status", "name", "headers", "error_class", "label", "retry_after", "maybe_sent"),
    [
        (401, "error_401", {}, ErrorClass.ACCOUNT, ErrorLabel.KEY_REJECTED, None, False),
        (402, "error_402", {}, ErrorClass.ACCOUNT, ErrorLabel.OUT_OF_CREDITS, None, False),
        (400, "error_400", {}, ErrorClass.PERMANENT, ErrorLabel.INVALID_INPUT, None, False),
        (400, "error_400_moderation", {}, ErrorClass.PERMANENT, ErrorLabel.CONTENT_POLICY,
         None, False),
        (429, "error_429", {"Retry-After": "30"}, ErrorClass.ACCOUNT, ErrorLabel.RATE_LIMITED,
         30.0, False),
        (429, "error_429", {"X-RateLimit-Reset": "45"}, ErrorClass.ACCOUNT,
         ErrorLabel.RATE_LIMITED, 45.0, False),
        (500, "error_500", {}, ErrorClass.RETRYABLE, ErrorLabel.PROVIDER_ERROR, None, False),
        (504, "error_500", {}, ErrorClass.RETRYABLE, ErrorLabel.TIMED_OUT, None, True),
    ],
)
async def test_create_errors_are_classified(
    client_for: ClientFor, status: int, name: str, headers: dict[str, str],
    error_class: ErrorClass, label: ErrorLabel, retry_after: float | None, maybe_sent: bool,
) -> None:
    fake = FakeLuma()
    fake.router.script("POST", CREATE, json_response(status, fixture("luma", name), headers))
    with pytest.raises(ProviderError) as caught:
        await make(client_for(fake.router)).submit(request())
    error = caught.value
    assert (error.error_class, error.label) == (error_class, label)
    assert error.retry_after == retry_after
    assert error.body_maybe_sent is maybe_sent
    assert fake.creates() == 1


async def test_create_timeout_is_never_resent(client_for: ClientFor) -> None:
    fake = FakeLuma()
    fake.router.script("POST", CREATE, read_timeout)
    with pytest.raises(ProviderError) as caught:
        await make(client_for(fake.router)).submit(request())
    assert caught.value.body_maybe_sent is True
    assert len(fake.router.calls) == 1


async def test_expired_presigned_link_is_refreshed_by_polling_again(
    client_for: ClientFor,
) -> None:
    fake = FakeLuma(states=["generation_completed"])
    provider = make(client_for(fake.router))
    status = await provider.poll(GEN_ID)
    assert status.video_url is not None
    fake.expired.add(status.video_url)
    assert await collect(provider, status) == VIDEO_BYTES
    assert fake.signatures == 2
    assert fake.creates() == 0


async def test_new_instance_reattaches_by_generation_id(client_for: ClientFor) -> None:
    fake = FakeLuma()
    job_id = await make(client_for(fake.router)).submit(request())
    second = make(client_for(fake.router))
    status = await second.poll(job_id)
    while status.phase is not RemotePhase.SUCCEEDED:
        status = await second.poll(job_id)
    assert await collect(second, status) == VIDEO_BYTES
    assert fake.creates() == 1
    assert second.supports_lookup is False


@pytest.mark.parametrize("status", [400, 401, 429, 500])
async def test_key_never_appears_in_errors_even_when_echoed(
    client_for: ClientFor, status: int, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    fake = FakeLuma()
    fake.router.script("POST", CREATE, lambda r: echo_error(status, r))
    fake.router.script("GET", GENERATION, lambda r: echo_error(status, r))
    provider = make(client_for(fake.router))
    for call in (provider.submit(request()), provider.poll(GEN_ID)):
        with pytest.raises(ProviderError) as caught:
            await call
        assert SENTINEL_KEY not in all_texts(caught.value)
    assert SENTINEL_KEY not in caplog.text


async def test_check_key_reads_a_generation_that_cannot_exist(client_for: ClientFor) -> None:
    """Only POST/GET /generations exist: the documented 404 for an unknown id means the
    key was accepted; nothing is created."""
    fake = FakeLuma()
    provider = make(client_for(fake.router))
    await provider.check_key()
    call = fake.router.calls[-1]
    assert call.method == "GET"
    assert call.url.path.startswith("/v1/generations/")
    assert call.url.path != f"/v1/generations/{GEN_ID}"
    assert fake.creates() == 0
    bad_key = luma.create(client_for(fake.router), ProviderConfig("luma-main", None, "wrong"))
    with pytest.raises(ProviderError) as caught:
        await bad_key.check_key()
    assert (caught.value.error_class, caught.value.label) == (ErrorClass.ACCOUNT,
                                                              ErrorLabel.KEY_REJECTED)


async def test_check_key_refuses_a_404_that_is_not_the_api(client_for: ClientFor) -> None:
    fake = FakeLuma()
    fake.router.script("GET", ANY_GENERATION, httpx2.Response(
        404, content=b"<html>Not here</html>", headers={"Content-Type": "text/html"}))
    with pytest.raises(ProviderError) as caught:
        await make(client_for(fake.router)).check_key()
    assert "base URL" in str(caught.value)
    assert caught.value.label is not ErrorLabel.INVALID_INPUT


class _StrictLuma(BaseHTTPRequestHandler):
    """A loopback Luma Agents with only its two endpoints, for the CLI's key check."""

    def _answer(self, status: int, body: Any) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:
        if self.headers.get("Authorization") != f"Bearer {SENTINEL_KEY}":
            self._answer(401, fixture("luma", "error_401"))
        elif self.path.startswith("/v1/generations/") and self.path.count("/") == 3:
            self._answer(404, fixture("luma", "error_404"))
        else:
            self._answer(404, {"detail": "Not Found"})

    def do_POST(self) -> None:
        self._answer(404, {"detail": "Not Found"})  # never reached by a key check

    def log_message(self, format: str, *args: Any) -> None:
        return None


@pytest.fixture
def strict_luma_url() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _StrictLuma)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


async def test_accounts_add_key_check_works_against_the_two_endpoints(
    strict_luma_url: str,
) -> None:
    """``accounts add --provider luma`` runs ``cmd_accounts.check_key``: a good key passes,
    a wrong one is refused as a key problem (not a row-parameters message)."""
    await cmd_accounts.check_key("luma-main", "luma", strict_luma_url, SENTINEL_KEY, {})
    with pytest.raises(ProviderError) as caught:
        await cmd_accounts.check_key("luma-main", "luma", strict_luma_url, "wrong-key", {})
    assert caught.value.label is ErrorLabel.KEY_REJECTED
    assert "wrong-key" not in all_texts(caught.value)


def test_registered() -> None:
    info = builtin_registry().get("luma")
    assert info.factory is luma.create
    assert info.default_base_url == "https://agents.lumalabs.ai/v1"
    assert info.params.models == ("ray-3.2",)
    assert info.params.durations == (5.0, 10.0)
    assert info.params.resolutions == ("720p", "1080p", "540p")  # the SDK's list: no 360p
    assert builtin_registry().get("luma").rules is luma.extra_validation


# -- issue 10: documented rules, unknown outcomes, the engine ------------------------------


def test_an_anchor_image_only_with_5_seconds() -> None:
    assert luma.extra_validation({"image": "https://img.example.test/a.jpg", "duration": 5}) \
        == []
    assert luma.extra_validation({"duration": 10}) == []
    problems = luma.extra_validation({"image": "https://img.example.test/a.jpg",
                                      "duration": 10})
    assert problems and "5 second" in problems[0].message
    assert problems[0].accepted == {"duration": (5,), "image": (None,)}


async def test_360p_and_image_with_10s_are_refused_before_sending(
    client_for: ClientFor,
) -> None:
    fake = FakeLuma()
    provider = make(client_for(fake.router))
    for params in ({"resolution": "360p"},
                   {"image": "https://img.example.test/a.jpg", "duration": 10}):
        with pytest.raises(ProviderError) as caught:
            await provider.submit(request(**params))
        assert caught.value.label is ErrorLabel.INVALID_INPUT
    assert fake.router.calls == []


@pytest.mark.parametrize(("code", "error_class"), [
    ("a_code_from_next_year", ErrorClass.PERMANENT),
    (None, ErrorClass.PERMANENT),
])
async def test_undocumented_failure_codes_are_permanent(
    client_for: ClientFor, code: str | None, error_class: ErrorClass
) -> None:
    body = fixture("luma", "failed_generation_failed")
    body["failure_code"] = code
    body["failure_reason"] = "Something new went wrong"
    fake = FakeLuma()
    fake.router.script("GET", GENERATION, json_response(200, body))
    status = await make(client_for(fake.router)).poll(GEN_ID)
    assert status.phase is RemotePhase.FAILED and status.error is not None
    assert status.error.error_class is error_class
    assert "Something new went wrong" in str(status.error)


@pytest.mark.parametrize("answer", [{}, {"id": ""}, {"id": None}, {"state": "queued"},
                                    {"generation": {"id": GEN_ID}}, {"id": ["x"]}])
async def test_create_answer_without_an_id_is_an_unknown_outcome(
    client_for: ClientFor, answer: Any
) -> None:
    fake = FakeLuma()
    fake.router.script("POST", CREATE, json_response(201, answer))
    with pytest.raises(ProviderError) as caught:
        await make(client_for(fake.router)).submit(request())
    assert (caught.value.error_class, caught.value.label) == (
        ErrorClass.PERMANENT, ErrorLabel.SUBMIT_UNKNOWN)
    assert caught.value.body_maybe_sent is True
    assert fake.creates() == 1


@pytest.mark.parametrize("body", [b"<html>ok</html>", b'{"id": "4f6c', b"[]", b""])
async def test_unreadable_create_answer_may_have_been_billed(
    client_for: ClientFor, body: bytes
) -> None:
    fake = FakeLuma()
    fake.router.script("POST", CREATE, httpx2.Response(201, content=body))
    with pytest.raises(ProviderError) as caught:
        await make(client_for(fake.router)).submit(request())
    assert caught.value.body_maybe_sent is True
    assert fake.creates() == 1


@pytest.mark.parametrize("answer", [{}, {"id": GEN_ID}, {"state": None}, {"state": 3},
                                    {"generation": {"state": "completed"}}])
async def test_poll_answer_without_a_state_is_an_unknown_outcome(
    client_for: ClientFor, answer: Any
) -> None:
    fake = FakeLuma()
    fake.router.script("GET", GENERATION, json_response(200, answer))
    with pytest.raises(ProviderError) as caught:
        await make(client_for(fake.router)).poll(GEN_ID)
    assert caught.value.label is ErrorLabel.SUBMIT_UNKNOWN


async def run_engine(tmp_path: Path, router: Router, params: dict[str, Any] | None = None
                     ) -> tuple[Job, MemoryStore]:
    """One row on one Luma Agents account, run until nothing more can happen."""
    return await run_one_row(tmp_path, router, "luma", prompt="A paper boat",
                             account="luma-main", params=params)


async def test_engine_completes_a_row(tmp_path: Path) -> None:
    fake = FakeLuma(states=["generation_completed"])
    job, _ = await run_engine(tmp_path, fake.router)
    assert job.state is JobState.COMPLETED
    assert Path(job.output_path).read_bytes() == VIDEO_BYTES
    assert fake.creates() == 1


@pytest.mark.parametrize(("where", "answer", "label", "words"), [
    # moderation
    ("poll", json_response(200, fixture("luma", "failed_content_moderated")),
     ErrorLabel.CONTENT_POLICY, "content_moderated"),
    # bad input (the image could not be decoded / the request was refused)
    ("poll", json_response(200, fixture("luma", "failed_corrupt_input")),
     ErrorLabel.INVALID_INPUT, "corrupt_input"),
    ("poll", json_response(200, fixture("luma", "failed_invalid_request")),
     ErrorLabel.INVALID_INPUT, "invalid_request"),
    # unreachable image: "422 Bad media data (base64 or URL)"
    ("create", json_response(422, fixture("luma", "error_422_image_url")),
     ErrorLabel.INVALID_INPUT, "could not be fetched"),
])
async def test_engine_documented_permanent_failure_one_create_then_failed(
    tmp_path: Path, where: str, answer: httpx2.Response, label: ErrorLabel, words: str
) -> None:
    fake = FakeLuma(states=["generation_completed"])
    fake.router.script("POST" if where == "create" else "GET",
                       CREATE if where == "create" else GENERATION, answer)
    job, _ = await run_engine(tmp_path, fake.router)
    assert job.state is JobState.FAILED
    assert job.error_label == label.value
    assert words in (job.error_message or "")
    assert fake.creates() == 1


async def test_engine_out_of_credits_pauses_the_account_without_a_second_create(
    tmp_path: Path,
) -> None:
    """402 "Insufficient balance": account-level (DESIGN.md invariant 6), the row waits."""
    fake = FakeLuma(states=["generation_completed"])
    fake.router.add("POST", CREATE, lambda r, m: json_response(402, fixture("luma",
                                                                            "error_402")))
    fake.router.routes.insert(0, fake.router.routes.pop())
    job, store = await run_engine(tmp_path, fake.router)
    assert job.state is JobState.QUEUED
    assert fake.creates() == 1
    account = store.get_account("luma-main")
    assert account is not None and account.status is AccountStatus.OUT_OF_CREDITS


async def test_engine_rate_limited_failure_pauses_once_then_creates_afresh(
    tmp_path: Path,
) -> None:
    """A render that failed with ``rate_limited`` is dropped, never reattached: the account
    pauses once and a fresh create follows (issue 10, item 6)."""
    fake = FakeLuma(states=["generation_completed"])
    fake.router.script("GET", GENERATION, json_response(200, fixture(
        "luma", "failed_rate_limited")))
    job, store = await run_engine(tmp_path, fake.router)
    assert job.state is JobState.COMPLETED
    assert fake.creates() == 2
    pauses = [entry for entry in store.ledger() if entry.event == "account_status"
              and entry.detail.get("status") == str(AccountStatus.RATE_LIMITED)]
    assert len(pauses) == 1


async def test_engine_documented_retryable_failure_is_rendered_again(tmp_path: Path) -> None:
    fake = FakeLuma(states=["generation_completed"])
    fake.router.script("GET", GENERATION, json_response(200, fixture(
        "luma", "failed_generation_failed")))
    job, _ = await run_engine(tmp_path, fake.router)
    assert job.state is JobState.COMPLETED
    assert fake.creates() == 2


async def test_engine_unreadable_poll_answer_fails_without_a_second_create(
    tmp_path: Path,
) -> None:
    fake = FakeLuma(states=["generation_completed"])
    fake.router.script("GET", GENERATION, json_response(200, {"generation": "?"}))
    job, _ = await run_engine(tmp_path, fake.router)
    assert job.state is JobState.FAILED
    assert job.error_label == ErrorLabel.SUBMIT_UNKNOWN.value
    assert fake.creates() == 1


# -- property: no answer is read as "nothing was created" or "the render failed" ----------

(test_property_a_create_answer_is_an_id_or_an_unknown_outcome,
 test_property_a_poll_answer_never_reads_as_a_failed_render) = answer_properties(AnswerShape(
    states=("queued", "processing", "completed", "failed"),
    keys=("id", "state", "output", "failure_code", "failure_reason", "type", "x"),
    fake=FakeLuma, make=make, request=request, create=CREATE, created=201,
    poll=GENERATION, job_id=GEN_ID, state_key="state", ending=("failed",)))
