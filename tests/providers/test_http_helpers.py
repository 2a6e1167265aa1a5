"""The adapters' shared plumbing: scrubbing, downloads, parameters, images."""

from __future__ import annotations

import asyncio
import base64
import json
import time
from collections.abc import AsyncIterator
from pathlib import Path
from urllib.parse import quote

import httpx2
import pytest
from provider_fakes import SENTINEL_KEY, VIDEO_BYTES, ClientFor, Router, all_texts, json_response

from reelqueue.domain.errors import ErrorClass, ErrorLabel, ProviderError
from reelqueue.providers.adapters._client import ApiClient
from reelqueue.providers.adapters._errors import rate_limit_reset_of, retry_after_of
from reelqueue.providers.adapters._images import load_image
from reelqueue.providers.adapters._params import param_bool, param_int, param_str, spec_problems
from reelqueue.providers.base import ParamSpec, ProviderConfig
from reelqueue.providers.http import HttpTimeout
from reelqueue.providers.httpx_session import HttpxSession

API = "api.example.test"


def api(client: httpx2.AsyncClient, key: str = SENTINEL_KEY) -> ApiClient:
    return ApiClient(client, ProviderConfig("a", f"https://{API}/v1", key),
                           title="Example", default_base_url=None,
                           auth_headers=lambda k: {"x-api-key": k})


async def collect(stream: object) -> bytes:
    return b"".join([chunk async for chunk in stream])  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    "spelling",
    [SENTINEL_KEY, quote(SENTINEL_KEY, safe=""), json.dumps(SENTINEL_KEY)[1:-1],
     base64.b64encode(SENTINEL_KEY.encode()).decode()],
    ids=["raw", "url-quoted", "json-escaped", "base64"],
)
async def test_scrub_removes_every_spelling_of_the_key(
    spelling: str, client_for: ClientFor
) -> None:
    client = ApiClient(client_for(Router()), ProviderConfig("a", None, SENTINEL_KEY),
                             title="T", default_base_url="https://x.test")
    assert SENTINEL_KEY not in client.scrub(f"echo: {spelling} and Bearer {SENTINEL_KEY}")
    assert spelling not in client.scrub(f"echo: {spelling}")


async def test_a_key_with_quotes_is_scrubbed_from_json_echoes(client_for: ClientFor) -> None:
    key = 'k"ey\\with/odd+chars=='
    client = ApiClient(client_for(Router()), ProviderConfig("a", None, key),
                             title="T", default_base_url="https://x.test")
    echoed = json.dumps({"headers": {"authorization": f"Bearer {key}"}})
    assert json.dumps(key)[1:-1] not in client.scrub(echoed)
    assert quote(key, safe="") not in client.scrub(f"?key={quote(key, safe='')}")


async def test_error_text_is_short_and_key_free(client_for: ClientFor) -> None:
    router = Router()
    router.add("GET", rf"{API}/v1/x", lambda r, m: json_response(
        400, {"error": {"message": f"bad key {SENTINEL_KEY} " + "x" * 2000}}))
    client = api(client_for(router))
    response = await client.request("GET", "/x")
    error = client.http_error(response)
    assert SENTINEL_KEY not in all_texts(error)
    assert len(str(error)) < 400


async def test_api_requests_never_follow_redirects(client_for: ClientFor) -> None:
    router = Router()
    router.add("GET", rf"{API}/v1/moved", lambda r, m: httpx2.Response(
        302, headers={"Location": "https://elsewhere.test/steal"}))
    client = api(client_for(router))
    response = await client.request("GET", "/moved")
    assert response.status_code == 302
    assert router.count("GET", r"elsewhere\.test/.*") == 0


async def test_download_follows_redirects_and_drops_the_key_off_host(
    client_for: ClientFor,
) -> None:
    router = Router()
    router.add("GET", rf"{API}/v1/files/1", lambda r, m: httpx2.Response(
        302, headers={"Location": "https://cdn.test/one"}))
    router.add("GET", r"cdn\.test/one", lambda r, m: httpx2.Response(
        301, headers={"Location": "/two"}))
    router.add("GET", r"cdn\.test/two", lambda r, m: httpx2.Response(
        200, content=VIDEO_BYTES, headers={"Content-Type": "video/mp4"}))
    client = api(client_for(router))
    data = await collect(client.stream_video(f"https://{API}/v1/files/1",
                                             send_key_to_api_host=True))
    assert data == VIDEO_BYTES
    assert [("x-api-key" in c.headers) for c in router.calls] == [True, False, False]


async def test_download_gives_up_after_too_many_redirects(client_for: ClientFor) -> None:
    router = Router()
    router.add("GET", r"cdn\.test/loop", lambda r, m: httpx2.Response(
        302, headers={"Location": "https://cdn.test/loop"}))
    with pytest.raises(ProviderError) as caught:
        await collect(api(client_for(router)).stream_video("https://cdn.test/loop"))
    assert caught.value.label is ErrorLabel.DOWNLOAD_FAILED


async def test_plain_http_download_link_is_refused(client_for: ClientFor) -> None:
    router = Router()
    with pytest.raises(ProviderError) as caught:
        await collect(api(client_for(router)).stream_video("http://cdn.test/a.mp4"))
    assert caught.value.label is ErrorLabel.DOWNLOAD_FAILED
    assert router.calls == []


async def test_plain_http_loopback_link_needs_a_loopback_api(client_for: ClientFor) -> None:
    """A provider on the internet cannot point us at a service on this machine."""
    router = Router()
    router.add("GET", r"127\.0\.0\.1/v\.mp4", lambda r, m: httpx2.Response(
        200, content=VIDEO_BYTES, headers={"Content-Type": "video/mp4"}))
    with pytest.raises(ProviderError) as caught:
        await collect(api(client_for(router)).stream_video("http://127.0.0.1:8080/v.mp4"))
    assert caught.value.label is ErrorLabel.DOWNLOAD_FAILED
    assert router.calls == []
    local = ApiClient(client_for(router),
                            ProviderConfig("a", "http://127.0.0.1:8080", SENTINEL_KEY),
                            title="Local", default_base_url=None)
    assert await collect(local.stream_video("http://127.0.0.1:8080/v.mp4")) == VIDEO_BYTES


@pytest.mark.parametrize("target", ["http://169.254.169.254/latest/meta-data/",
                                    "file:///etc/passwd", "http://127.0.0.1:2375/x",
                                    "ftp://cdn.test/v.mp4"])
async def test_every_redirect_hop_is_checked(client_for: ClientFor, target: str) -> None:
    router = Router()
    router.add("GET", r"cdn\.test/v", lambda r, m: httpx2.Response(
        302, headers={"Location": target}))
    with pytest.raises(ProviderError) as caught:
        await collect(api(client_for(router)).stream_video("https://cdn.test/v"))
    assert (caught.value.error_class, caught.value.label) == (
        ErrorClass.RETRYABLE, ErrorLabel.DOWNLOAD_FAILED)
    assert [str(c.url) for c in router.calls] == ["https://cdn.test/v"]


async def test_downloads_ask_for_identity_encoding(client_for: ClientFor) -> None:
    router = Router()
    router.add("GET", r"cdn\.test/v", lambda r, m: httpx2.Response(
        200, content=VIDEO_BYTES, headers={"Content-Type": "video/mp4"}))
    await collect(api(client_for(router)).stream_video("https://cdn.test/v"))
    assert router.calls[0].headers["accept-encoding"] == "identity"


async def test_content_length_over_the_cap_is_refused_before_reading(
    client_for: ClientFor,
) -> None:
    class Endless(httpx2.AsyncByteStream):
        read = 0

        async def __aiter__(self):  # type: ignore[no-untyped-def]
            while True:
                Endless.read += 1
                yield VIDEO_BYTES

    router = Router()
    router.add("GET", r"cdn\.test/v", lambda r, m: httpx2.Response(
        200, stream=Endless(), headers={"Content-Type": "video/mp4",
                                        "Content-Length": str(3 * 1024**3)}))
    with pytest.raises(ProviderError) as caught:
        await collect(api(client_for(router)).stream_video("https://cdn.test/v"))
    assert caught.value.label is ErrorLabel.DOWNLOAD_FAILED
    assert "announced 3221225472 bytes" in str(caught.value)
    assert Endless.read == 0


async def test_mock_adapter_downloads_go_through_the_same_checks(
    client_for: ClientFor,
) -> None:
    from reelqueue.domain.states import RemotePhase
    from reelqueue.providers.base import RemoteStatus
    from reelqueue.providers.mock import MockProvider

    router = Router()
    router.add("GET", r"127\.0\.0\.1/files/r1\.mp4", lambda r, m: httpx2.Response(
        302, headers={"Location": "http://10.0.0.7/steal"}))
    provider = MockProvider(client_for(router), ProviderConfig("a", "http://127.0.0.1:9",
                                                               SENTINEL_KEY))
    for link in ("http://127.0.0.1:9/files/r1.mp4", "file:///etc/passwd"):
        status = RemoteStatus(phase=RemotePhase.SUCCEEDED, sub_status="succeeded",
                              video_url=link)
        with pytest.raises(ProviderError) as caught:
            await collect(provider.download("r1", status))
        assert caught.value.label is ErrorLabel.DOWNLOAD_FAILED
    assert [str(c.url) for c in router.calls] == ["http://127.0.0.1:9/files/r1.mp4"]
    assert "authorization" not in router.calls[0].headers


@pytest.mark.parametrize(
    ("content", "headers"),
    [
        (b"", {"Content-Type": "video/mp4"}),
        (b"  <html>tiny</html>", {"Content-Type": "application/octet-stream"}),
        (b'{"error": "expired"}', {"Content-Type": "binary/octet-stream"}),
        (VIDEO_BYTES, {"Content-Type": "application/json"}),
    ],
    ids=["empty", "short-html", "json-body", "json-type"],
)
async def test_non_videos_are_refused(
    client_for: ClientFor, content: bytes, headers: dict[str, str]
) -> None:
    router = Router()
    router.add("GET", r"cdn\.test/v", lambda r, m: httpx2.Response(200, content=content,
                                                                 headers=headers))
    with pytest.raises(ProviderError) as caught:
        await collect(api(client_for(router)).stream_video("https://cdn.test/v"))
    assert (caught.value.error_class, caught.value.label) == (
        ErrorClass.RETRYABLE, ErrorLabel.DOWNLOAD_FAILED)


async def test_small_real_video_passes_the_sniff(client_for: ClientFor) -> None:
    router = Router()
    router.add("GET", r"cdn\.test/v", lambda r, m: httpx2.Response(
        200, content=VIDEO_BYTES[:40], headers={"Content-Type": "video/mp4"}))
    assert await collect(api(client_for(router)).stream_video("https://cdn.test/v")) == (
        VIDEO_BYTES[:40])


async def test_a_broken_stream_is_a_retryable_download_failure(client_for: ClientFor) -> None:
    class Broken(httpx2.AsyncByteStream):
        async def __aiter__(self):  # type: ignore[no-untyped-def]
            yield VIDEO_BYTES[:100]
            raise httpx2.RemoteProtocolError("peer closed connection")

    router = Router()
    router.add("GET", r"cdn\.test/v", lambda r, m: httpx2.Response(
        200, stream=Broken(), headers={"Content-Type": "video/mp4"}))
    with pytest.raises(ProviderError) as caught:
        await collect(api(client_for(router)).stream_video("https://cdn.test/v"))
    assert (caught.value.error_class, caught.value.label) == (
        ErrorClass.RETRYABLE, ErrorLabel.DOWNLOAD_FAILED)


async def test_missing_link_asks_the_refresher_first(client_for: ClientFor) -> None:
    router = Router()
    router.add("GET", r"cdn\.test/v", lambda r, m: httpx2.Response(
        200, content=VIDEO_BYTES, headers={"Content-Type": "video/mp4"}))

    async def refresh() -> str:
        return "https://cdn.test/v"

    assert await collect(api(client_for(router)).stream_video(None, refresh=refresh)) == (
        VIDEO_BYTES)
    with pytest.raises(ProviderError):
        await collect(api(client_for(router)).stream_video(None))


def test_retry_after_headers() -> None:
    assert retry_after_of(httpx2.Response(429, headers={"retry-after-ms": "1500"})) == 1.5
    assert retry_after_of(httpx2.Response(429, headers={"Retry-After": "7"})) == 7.0
    assert retry_after_of(httpx2.Response(429)) is None
    reset = httpx2.Response(429, headers={"X-RateLimit-Reset": "1800000060"})
    assert rate_limit_reset_of(reset, now=1_800_000_000.0) == 60.0
    assert rate_limit_reset_of(httpx2.Response(429, headers={
        "X-RateLimit-Reset": "12"})) == 12.0


SPEC = ParamSpec(models=("a", "b"), durations=(4.0, 8.0), aspect_ratios=("16:9",),
                 resolutions=("720p",), max_prompt_chars=10)


@pytest.mark.parametrize(
    ("params", "prompt", "problems"),
    [
        ({}, "ok", 0),
        ({"model": "c"}, "ok", 1),
        ({"duration": 5}, "ok", 1),
        ({"duration": "eight"}, "ok", 1),
        ({"duration": 8.0}, "ok", 0),
        ({"aspect_ratio": "1:1", "resolution": "4k"}, "ok", 2),
        ({"seed": 1, "negative_prompt": "x", "image": "/a.png"}, "ok", 3),
        ({}, "x" * 11, 1),
        ({}, "   ", 1),
    ],
)
def test_spec_problems(params: dict[str, object], prompt: str, problems: int) -> None:
    assert len(spec_problems(SPEC, params, prompt)) == problems


def test_param_readers() -> None:
    assert param_int({"d": 8.0}, "d") == 8
    assert param_int({"d": "6"}, "d") == 6
    assert param_int({}, "d") is None
    with pytest.raises(ValueError):
        param_int({"d": 6.5}, "d")
    assert param_bool({"a": "yes"}, "a") is True
    assert param_bool({"a": 0}, "a") is False
    assert param_str({"s": "  "}, "s") is None


async def test_load_image_from_file_data_uri_and_link(tmp_path: Path) -> None:
    path = tmp_path / "a.jpg"
    path.write_bytes(b"\xff\xd8\xffjpeg")
    from_file = await load_image(str(path), "T")
    assert (from_file.data, from_file.mime_type) == (b"\xff\xd8\xffjpeg", "image/jpeg")
    assert from_file.data_uri().startswith("data:image/jpeg;base64,")
    from_uri = await load_image(from_file.data_uri(), "T")
    assert from_uri.data == from_file.data
    link = await load_image("https://img.test/p.png", "T")
    assert (link.url, link.data, link.mime_type) == ("https://img.test/p.png", None,
                                                     "image/png")
    with pytest.raises(ProviderError) as caught:
        await load_image(str(tmp_path / "missing.png"), "T")
    assert caught.value.error_class is ErrorClass.PERMANENT
    with pytest.raises(ProviderError):
        await load_image("data:image/png;base64,***", "T")


def trickle(router: Router) -> None:
    """An answer whose every byte comes within the read timeout, but which never ends."""

    async def forever() -> AsyncIterator[bytes]:
        while True:
            yield b" "
            await asyncio.sleep(0.05)

    router.add("POST", rf"{API}/v1/x", lambda r, m: httpx2.Response(200, content=forever()))


async def test_an_answer_trickled_past_the_connect_and_read_timeouts_is_a_timeout() -> None:
    """The read timeout is per read: without a bound on the whole exchange a create's
    answer sent a byte at a time would outlive the create's timeout, and on a team the
    lease it must fit in. Both the built-in client and a plug-in's session stop it at the
    connect plus read timeout; for a create, the body may have been sent."""
    router = Router()
    trickle(router)
    timeout = httpx2.Timeout(0.3, connect=0.2)  # 0.5 s for the whole exchange
    async with httpx2.AsyncClient(transport=httpx2.MockTransport(router),
                                  timeout=timeout) as client:
        started = time.monotonic()
        with pytest.raises(ProviderError) as caught:
            await api(client).request("POST", "/x", during_create=True)
        assert time.monotonic() - started < 5
        assert (caught.value.error_class, caught.value.label, caught.value.body_maybe_sent
                ) == (ErrorClass.RETRYABLE, ErrorLabel.TIMED_OUT, True)
        assert "did not end within 0.5 s" in str(caught.value)
        with pytest.raises(HttpTimeout):
            await HttpxSession(client).request("POST", f"https://{API}/v1/x")
