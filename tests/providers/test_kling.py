"""What is Kling's own: the code-in-the-envelope (even in an HTTP 200), the JWT made from
ACCESS:SECRET, the lookup by our external task id that can prove a create absent, image
rows, and the strict fake itself. The common behaviours run in conformance/test_suite.py
on the fake and facts of conformance/kling.py."""

from __future__ import annotations

import base64
import json
import logging
import time
from pathlib import Path
from typing import Any

import httpx2
import pytest
from conformance.kling import (
    ACCESS,
    API,
    CREATE,
    ENDPOINTS,
    ERRORS,
    EXPECTED,
    KEY,
    PNG,
    StrictKling,
    kling_error,
    make,
    request,
)
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from provider_fakes import (
    HTML_PAGE,
    SENTINEL_KEY,
    VIDEO_BYTES,
    ClientFor,
    all_texts,
    echo_error,
    fixture,
    json_response,
    read_timeout,
    run_rows,
)

from reelqueue.domain.errors import ErrorClass, ErrorLabel, ProviderError
from reelqueue.domain.states import JobState, RemotePhase
from reelqueue.providers.adapters import kling
from reelqueue.providers.base import ProviderConfig


async def collect(provider: kling.KlingProvider, job_id: str, status: Any) -> bytes:
    return b"".join([chunk async for chunk in provider.download(job_id, status)])


# -- the documented flow ------------------------------------------------------------------


async def test_text_row_body_as_documented(client_for: ClientFor) -> None:
    fake = StrictKling()
    provider = make(client_for(fake.router))
    job_id = await provider.submit(request(duration=10, aspect_ratio="9:16",
                                           resolution="1080p", audio=True,
                                           negative_prompt="blur"))
    task_id = next(iter(fake.tasks))
    assert job_id == f"text2video/{task_id}"
    assert fake.tasks[task_id]["body"] == {
        "model_name": "kling-v3", "prompt": "A snow leopard", "negative_prompt": "blur",
        "mode": "pro", "sound": "on", "aspect_ratio": "9:16", "duration": "10",
        "external_task_id": "tok-1"}


@pytest.mark.parametrize("image", ["data:image/png;base64," + base64.b64encode(PNG).decode(),
                                   "https://img.example/first-frame.png"])
async def test_image_row_goes_to_image2video_with_raw_base64_or_url(
    client_for: ClientFor, image: str
) -> None:
    fake = StrictKling(steps=["query_succeed"])
    provider = make(client_for(fake.router))
    job_id = await provider.submit(request(image=image, model="kling-v2-1", duration=5))
    task = next(iter(fake.tasks.values()))
    assert job_id.startswith("image2video/") and task["endpoint"] == "image2video"
    sent = task["body"]["image"]
    assert sent == (image if image.startswith("https://") else base64.b64encode(PNG).decode())
    status = await provider.poll(job_id)
    assert status.phase is RemotePhase.SUCCEEDED
    assert fake.router.calls[-1].url.path == f"/v1/videos/{job_id}"


async def test_unsupported_image_type_is_refused_before_sending(client_for: ClientFor) -> None:
    fake = StrictKling()
    gif = "data:image/gif;base64," + base64.b64encode(b"GIF89a" + bytes(16)).decode()
    with pytest.raises(ProviderError) as caught:
        await make(client_for(fake.router)).submit(request(image=gif))
    assert caught.value.label is ErrorLabel.INVALID_INPUT
    assert fake.router.calls == []


@pytest.mark.parametrize(
    ("endpoint", "body", "auth", "code"),
    [
        ("text2video", {"prompt": "x", "duration": 5}, "ok", 1201),          # int duration
        ("text2video", {"prompt": "x", "duration": "7"}, "ok", 1201),        # not for v1
        ("text2video", {"prompt": "x", "settings": {}}, "ok", 1201),         # unknown field
        ("text2video", {"prompt": "x", "model": "kling-v3"}, "ok", 1201),    # old field name
        ("text2video", {"prompt": "x", "model_name": "kling-v1-5"}, "ok", 1201),
        ("text2video", {"prompt": "x", "sound": True, "model_name": "kling-v3"}, "ok", 1201),
        ("image2video", {"image": "data:image/png;base64,AAAA"}, "ok", 1201),
        ("image2video", {"image": "x", "aspect_ratio": "1:1"}, "ok", 1201),
        ("text2video", {"prompt": "x"}, "", 1001),                           # no token
        ("text2video", {"prompt": "x"}, "Bearer abc", 1002),                 # not a JWT
        ("text2video", {"prompt": "x"}, "other-secret", 1002),               # wrong secret
        ("text2video", {"prompt": "x"}, "expired", 1004),
        ("text-to-video/kling-3.0", {"prompt": "x"}, "ok", 1202),            # wrong path
    ],
)
async def test_the_fake_enforces_the_reference(
    client_for: ClientFor, endpoint: str, body: dict[str, Any], auth: str, code: int
) -> None:
    """The fake's strictness is what the other tests lean on, so it is tested too."""
    fake = StrictKling()
    now = int(time.time())
    headers = {"Content-Type": "application/json"}
    if auth == "ok":
        headers["Authorization"] = f"Bearer {kling._jwt(ACCESS, SENTINEL_KEY, now)}"
    elif auth == "other-secret":
        headers["Authorization"] = f"Bearer {kling._jwt(ACCESS, 'nope', now)}"
    elif auth == "expired":
        headers["Authorization"] = f"Bearer {kling._jwt(ACCESS, SENTINEL_KEY, now - 4000)}"
    elif auth:
        headers["Authorization"] = auth
    client = client_for(fake.router)
    path = endpoint if endpoint.startswith("text-") else f"v1/videos/{endpoint}"
    response = await client.post(f"https://{API}/{path}", content=json.dumps(body),
                                 headers=headers)
    assert response.json()["code"] == code
    assert fake.tasks == {}


# -- the error table ----------------------------------------------------------------------

def test_every_documented_code_is_classified() -> None:
    assert set(EXPECTED) == {int(c) for c in ERRORS}


# -- unknown is never "no" ----------------------------------------------------------------


async def test_lookup_finds_a_task_whose_create_answer_was_lost(client_for: ClientFor) -> None:
    fake = StrictKling()

    def accepted_but_lost(request: httpx2.Request) -> httpx2.Response:
        fake._create(request, fake_match("text2video"))
        raise httpx2.ReadTimeout("timed out", request=request)

    fake.router.script("POST", CREATE, accepted_but_lost)
    provider = make(client_for(fake.router))
    with pytest.raises(ProviderError) as caught:
        await provider.submit(request(token="tok-crash"))
    assert caught.value.body_maybe_sent is True and fake.posts() == 1
    task_id = next(iter(fake.tasks))
    found = await make(client_for(fake.router)).lookup(request(token="tok-crash"))
    assert found == f"text2video/{task_id}"
    assert fake.router.calls[-1].url.path == "/v1/videos/text2video/tok-crash"
    assert fake.posts() == 1


async def test_lookup_says_absent_only_after_1203_and_a_list_without_it(
    client_for: ClientFor,
) -> None:
    fake = StrictKling()
    provider = make(client_for(fake.router))
    await provider.submit(request(token="someone-else"))
    assert await provider.lookup(request(token="tok-never-sent")) is None
    single, listing = fake.router.calls[-2:]
    assert single.url.path == "/v1/videos/text2video/tok-never-sent"
    assert listing.url.path == "/v1/videos/text2video"
    assert listing.url.params["pageSize"] == "500"


async def test_lookup_finds_the_task_in_the_list_after_a_1203(client_for: ClientFor) -> None:
    fake = StrictKling()
    provider = make(client_for(fake.router))
    job_id = await provider.submit(request(token="tok-late"))
    fake.router.script("GET", rf"{API}/v1/videos/text2video/tok-late", kling_error(1203))
    assert await provider.lookup(request(token="tok-late")) == job_id


def fake_match(endpoint: str) -> Any:
    class Match:
        def group(self, index: int) -> str:
            return endpoint
    return Match()


def listed(tasks: list[Any]) -> httpx2.Response:
    return json_response(200, {"code": 0, "message": "SUCCEED", "request_id": "r",
                               "data": tasks})


UNREADABLE_LOOKUPS = [
    ("single", json_response(200, {"code": 0, "data": {}})),
    ("single", json_response(200, {"code": 0, "data": [{"task_id": "1"}]})),
    ("single", json_response(200, {"code": 0, "data": {
        "task_id": "1", "task_info": {"external_task_id": "foreign"}}})),
    ("single", json_response(200, {"code": 0})),
    ("single", json_response(200, {"task_id": "1"})),
    ("single", httpx2.Response(200, content=HTML_PAGE, headers={"Content-Type": "text/html"})),
    ("single", httpx2.Response(200, content=b'{"code": 0, "data": {"task_')),
    ("list", listed([{"task_status": "succeed"}])),              # items without their id
    ("list", listed([{"task_id": "1"}, "junk"])),                # foreign items
    ("list", json_response(200, {"code": 0, "data": {"tasks": []}})),
    ("list", listed([{"task_id": str(n), "task_info": {"external_task_id": f"x{n}"}}
                     for n in range(500)])),                      # a full page proves nothing
    ("list", httpx2.Response(200, content=b"")),
]


@pytest.mark.parametrize(("where", "answer"), UNREADABLE_LOOKUPS)
async def test_unreadable_lookup_answer_is_unknown_never_absent(
    client_for: ClientFor, where: str, answer: httpx2.Response
) -> None:
    fake = StrictKling()
    if where == "list":
        fake.router.script("GET", rf"{API}/v1/videos/text2video", answer)
    else:
        fake.router.script("GET", rf"{API}/v1/videos/text2video/tok-1", answer)
    with pytest.raises(ProviderError) as caught:
        await make(client_for(fake.router)).lookup(request())
    assert caught.value.label is ErrorLabel.SUBMIT_UNKNOWN
    assert caught.value.error_class is ErrorClass.PERMANENT


JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-2, 2_000_000) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(
        st.sampled_from(["code", "message", "data", "task_id", "task_info",
                         "external_task_id", "task_status", "x"]), inner, max_size=4),
    max_leaves=12)
ANSWERS = st.one_of(
    JSON.map(lambda body: (200, json.dumps(body).encode())),
    st.binary(max_size=40).map(lambda raw: (200, raw)),
    st.builds(lambda data: (200, json.dumps({"code": 0, "data": data}).encode()), JSON),
)
PROPERTY = settings(max_examples=150, deadline=None,
                    suppress_health_check=[HealthCheck.function_scoped_fixture])


@PROPERTY
@given(answer=ANSWERS)
async def test_property_no_lookup_answer_but_1203_reads_as_absent(
    client_for: ClientFor, answer: tuple[int, bytes]
) -> None:
    fake = StrictKling()
    fake.router.script("GET", rf"{API}/v1/videos/text2video/tok-1",
                       httpx2.Response(answer[0], content=answer[1]))
    body = json_or_none_bytes(answer[1])
    try:
        found = await make(client_for(fake.router)).lookup(request())
    except ProviderError:
        return
    if isinstance(body, dict) and body.get("code") == kling.NOT_FOUND:
        return  # the documented "no such task", confirmed by the (empty) list
    assert found is not None


def json_or_none_bytes(raw: bytes) -> Any:
    try:
        return json.loads(raw)
    except ValueError:
        return None


@pytest.mark.parametrize("job_id", ["867283741759111202", "tasks/1", "text2video/", "x/y/z"])
async def test_a_job_id_of_another_shape_is_refused(client_for: ClientFor, job_id: str) -> None:
    fake = StrictKling()
    with pytest.raises(ProviderError) as caught:
        await make(client_for(fake.router)).poll(job_id)
    assert caught.value.error_class is ErrorClass.PERMANENT
    assert fake.router.calls == []


# -- keys, links, checks ------------------------------------------------------------------


async def test_jwt_is_signed_renewed_and_never_shown(client_for: ClientFor) -> None:
    fake = StrictKling()
    provider = make(client_for(fake.router))
    await provider.check_key()
    await provider.check_key()
    first, second = (c.headers["authorization"] for c in fake.router.calls)
    assert first == second, "a token is reused while it has more than 5 minutes left"
    token = first.removeprefix("Bearer ")
    claims = json.loads(base64.urlsafe_b64decode(token.split(".")[1] + "=="))
    assert claims["iss"] == ACCESS and claims["exp"] - claims["nbf"] == 1805
    fake.router.script("GET", rf"{API}/v1/videos/text2video", lambda r: echo_error(401, r))
    with pytest.raises(ProviderError) as caught:
        await provider.check_key()
    assert token not in all_texts(caught.value)
    assert SENTINEL_KEY not in all_texts(caught.value)


async def test_jwt_is_renewed_five_minutes_before_it_expires(client_for: ClientFor) -> None:
    clock = [time.time()]
    fake = StrictKling(clock=lambda: clock[0])
    provider = kling.KlingProvider(client_for(fake.router), ProviderConfig("kl", None, KEY),
                                   clock=lambda: clock[0])

    async def token_now() -> dict[str, int]:
        await provider.check_key()
        token = fake.router.calls[-1].headers["authorization"].removeprefix("Bearer ")
        claims: dict[str, int] = json.loads(base64.urlsafe_b64decode(
            token.split(".")[1] + "=="))
        return claims

    first = await token_now()
    clock[0] += 1800 - 301
    assert await token_now() == first
    clock[0] += 2
    renewed = await token_now()
    assert renewed["exp"] > first["exp"] and renewed["nbf"] == int(clock[0]) - 5


async def test_a_key_without_colon_is_sent_as_a_bearer_api_key(client_for: ClientFor) -> None:
    fake = StrictKling()
    with pytest.raises(ProviderError) as caught:
        await make(client_for(fake.router), key=SENTINEL_KEY).check_key()
    assert fake.router.calls[-1].headers["authorization"] == f"Bearer {SENTINEL_KEY}"
    assert caught.value.label is ErrorLabel.KEY_REJECTED  # this fake knows only AK/SK
    assert SENTINEL_KEY not in all_texts(caught.value)


@pytest.mark.parametrize("status", [200, 400, 401, 429, 500])
async def test_key_never_appears_in_errors_even_when_echoed(
    client_for: ClientFor, status: int, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    fake = StrictKling()
    echo = lambda r: echo_error(status, r, extra={"code": 1200})  # noqa: E731
    fake.router.script("POST", CREATE, echo)
    fake.router.script("GET", rf"{API}/v1/videos/.*", echo)
    fake.router.script("GET", rf"{API}/v1/videos/.*", echo)
    provider = make(client_for(fake.router))
    for call in (provider.submit(request()), provider.poll("text2video/1"),
                 provider.lookup(request())):
        with pytest.raises(ProviderError) as caught:
            await call
        assert SENTINEL_KEY not in all_texts(caught.value)
    assert SENTINEL_KEY not in caplog.text


async def test_check_key_reads_one_list_row_and_creates_nothing(client_for: ClientFor) -> None:
    fake = StrictKling()
    await make(client_for(fake.router)).check_key()
    assert fake.router.calls[-1].url.params["pageSize"] == "1"
    with pytest.raises(ProviderError) as caught:
        await make(client_for(fake.router), key=f"{ACCESS}:wrong-secret").check_key()
    assert caught.value.label is ErrorLabel.KEY_REJECTED
    assert fake.posts() == 0


# -- whole rows through the engine --------------------------------------------------------

async def run_kling(tmp_path: Path, fake: StrictKling, rows: list[dict[str, Any]]
                    ) -> tuple[list[Any], Any]:
    return await run_rows(tmp_path, fake.router, "kling", [
        (f"prompt {i}", params) for i, params in enumerate(rows)], account="kl", key=KEY,
        capacity=2)


async def test_text_and_image_rows_complete(tmp_path: Path) -> None:
    fake = StrictKling(steps=["query_succeed"])
    image = "data:image/png;base64," + base64.b64encode(PNG).decode()
    done, _ = await run_kling(tmp_path, fake, [
        {"duration": 5, "aspect_ratio": "16:9", "resolution": "720p"},
        {"image": image, "duration": 10, "audio": True}])
    assert [j.state for j in done] == [JobState.COMPLETED] * 2
    assert all(Path(j.output_path).read_bytes() == VIDEO_BYTES for j in done)
    assert sorted(t["endpoint"] for t in fake.tasks.values()) == sorted(ENDPOINTS)
    assert fake.posts() == 2


async def test_1303_waits_then_succeeds_with_one_create(tmp_path: Path) -> None:
    fake = StrictKling(steps=["query_succeed"])
    fake.router.script("POST", CREATE, json_response(429, fixture("kling", "error_1303")))
    done, store = await run_kling(tmp_path, fake, [{}])
    job = done[0]
    assert job.state is JobState.COMPLETED
    assert job.attempts == 1, "a full pack is a wait, not a spent attempt"
    assert len(fake.tasks) == 1 and fake.posts() == 2
    statuses = [e.detail["status"] for e in store.ledger() if e.event == "account_status"]
    assert "rate_limited" in statuses


async def test_old_model_with_audio_off_sends_no_sound_field(client_for: ClientFor) -> None:
    fake = StrictKling()
    await make(client_for(fake.router)).submit(request(model="kling-v2-5-turbo", audio=False))
    assert "sound" not in next(iter(fake.tasks.values()))["body"]


async def test_create_answer_without_id_is_settled_by_lookup_not_a_second_create(
    tmp_path: Path,
) -> None:
    fake = StrictKling(steps=["query_succeed"])

    def created_but_unreadable(request: httpx2.Request) -> httpx2.Response:
        fake._create(request, fake_match("text2video"))
        return json_response(200, {"code": 0, "message": "SUCCEED", "data": {}})

    fake.router.script("POST", CREATE, created_but_unreadable)
    done, _ = await run_kling(tmp_path, fake, [{}])
    assert done[0].state is JobState.COMPLETED
    assert fake.posts() == 1 and len(fake.tasks) == 1


async def test_server_timeout_on_create_is_settled_by_lookup(tmp_path: Path) -> None:
    fake = StrictKling(steps=["query_succeed"])

    def created_then_timed_out(request: httpx2.Request) -> httpx2.Response:
        fake._create(request, fake_match("text2video"))
        return kling_error(5002)

    fake.router.script("POST", CREATE, created_then_timed_out)
    done, store = await run_kling(tmp_path, fake, [{}])
    assert done[0].state is JobState.COMPLETED
    assert fake.posts() == 1 and len(fake.tasks) == 1
    assert "reconciled" in [e.event for e in store.ledger()]


async def test_unreadable_create_and_lookup_fail_the_row_without_a_second_create(
    tmp_path: Path,
) -> None:
    fake = StrictKling()
    fake.router.script("POST", CREATE, read_timeout)
    fake.router.script("GET", rf"{API}/v1/videos/text2video/[0-9a-f]+",
                       json_response(200, {"code": 0, "data": [{"task_status": "succeed"}]}))
    done, _ = await run_kling(tmp_path, fake, [{}])
    job = done[0]
    # unknown is not a failure: parked for the user (issue 19)
    assert job.state is JobState.PARKED and job.error_label == "submit outcome unknown"
    assert fake.posts() == 1


def test_a_code_that_only_looks_like_digits_is_no_code() -> None:
    """Hypothesis found '¹' (isdigit() says yes, int() says no): an unreadable code is no
    code, never a ValueError out of the adapter."""
    from reelqueue.providers.adapters.kling import _code_of

    assert _code_of({"code": "¹"}) is None
    assert _code_of({"code": "١٢"}) is None  # Arabic-Indic digits: not Kling's codes
    assert _code_of({"code": "1203"}) == 1203
