"""The mock provider adapter against the real mock server over loopback HTTP."""

from __future__ import annotations

import asyncio
import dataclasses
import socket
import time
import traceback

import httpx2
import pytest
from mockprovider_helpers import (
    FAST,
    SAMPLE,
    download_all,
    make_provider,
    make_request,
    wait_finished,
)

from reelqueue.domain.errors import ErrorClass, ErrorLabel, InputError, ProviderError
from reelqueue.domain.states import RemotePhase
from reelqueue.mockprovider import MockProviderServer
from reelqueue.providers.base import ProviderConfig, RemoteStatus
from reelqueue.providers.builtin import builtin_registry
from reelqueue.providers.download_limits import DownloadLimits, using_limits
from reelqueue.providers.mock import MockProvider, create

pytestmark = pytest.mark.integration

SENTINEL = "sk-SENTINEL-9f8e7d6c5b4a"


async def test_happy_path(mp_provider: MockProvider, mp_server: MockProviderServer) -> None:
    assert mp_provider.kind == "mock" and mp_provider.supports_lookup
    await mp_provider.check_key()
    request = make_request(job_key="happy")
    render_id = await mp_provider.submit(request)
    first = await mp_provider.poll(render_id)
    assert first.phase in (RemotePhase.QUEUED, RemotePhase.RUNNING, RemotePhase.SUCCEEDED)
    assert first.poll_after == pytest.approx(0.2)
    status = await wait_finished(mp_provider, render_id)
    assert status.phase is RemotePhase.SUCCEEDED
    assert status.cost == pytest.approx(0.08)  # mock-2, 4 s
    assert status.video_url and status.video_url.startswith(mp_server.url)
    assert await download_all(mp_provider, render_id, status) == SAMPLE
    counters = mp_server.counters()
    assert counters["creates_by_job_key"] == {"happy": 1}
    assert counters["creates_by_client_token"] == {request.client_token: 1}
    assert counters["downloads_total"] == 1


async def test_progress_is_a_fraction(mp_client: httpx2.AsyncClient) -> None:
    with MockProviderServer(dataclasses.replace(FAST, render_seconds_min=1.5,
                                                render_seconds_max=1.5)) as server:
        provider = make_provider(mp_client, server.url)
        render_id = await provider.submit(make_request())
        await asyncio.sleep(0.6)
        status = await provider.poll(render_id)
        assert status.phase is RemotePhase.RUNNING
        assert status.progress is not None and 0.0 < status.progress < 1.0
        await provider.cancel(render_id)
        assert (await provider.poll(render_id)).phase is RemotePhase.CANCELLED
        await provider.cancel(render_id)  # already over: no error


async def test_download_without_url_polls_first(mp_provider: MockProvider) -> None:
    render_id = await mp_provider.submit(make_request())
    await wait_finished(mp_provider, render_id)
    empty = RemoteStatus(phase=RemotePhase.SUCCEEDED)
    assert await download_all(mp_provider, render_id, empty) == SAMPLE


async def test_lookup_by_client_token(mp_provider: MockProvider) -> None:
    request = make_request()
    render_id = await mp_provider.submit(request)
    assert await mp_provider.lookup(request) == render_id
    assert await mp_provider.lookup(make_request()) is None


async def test_lookup_disabled(mp_client: httpx2.AsyncClient) -> None:
    with MockProviderServer(dataclasses.replace(FAST, lookup_enabled=False)) as server:
        for provider in (make_provider(mp_client, server.url),
                         make_provider(mp_client, server.url, lookup=False)):
            with pytest.raises(ProviderError) as caught:
                await provider.lookup(make_request())
            assert caught.value.error_class is ErrorClass.PERMANENT
            assert caught.value.label is ErrorLabel.SUBMIT_UNKNOWN
        assert not make_provider(mp_client, server.url, lookup=False).supports_lookup
        assert server.counters()["lookups_total"] == 1


CREATE_FAULTS = [
    # directive, class, label, status, body_maybe_sent
    ("bad_key", ErrorClass.ACCOUNT, ErrorLabel.KEY_REJECTED, 401, False),
    ("no_credits", ErrorClass.ACCOUNT, ErrorLabel.OUT_OF_CREDITS, 402, False),
    ("content_policy", ErrorClass.PERMANENT, ErrorLabel.CONTENT_POLICY, 422, False),
    ("rate_limit", ErrorClass.ACCOUNT, ErrorLabel.RATE_LIMITED, 429, False),
    ("server_error", ErrorClass.RETRYABLE, ErrorLabel.PROVIDER_ERROR, 500, False),
    ("malformed", ErrorClass.RETRYABLE, ErrorLabel.PROVIDER_ERROR, 200, True),
    ("create_timeout", ErrorClass.RETRYABLE, ErrorLabel.TIMED_OUT, None, True),
    ("connection_reset", ErrorClass.RETRYABLE, ErrorLabel.PROVIDER_ERROR, None, True),
]


@pytest.mark.parametrize(("directive", "error_class", "label", "status", "maybe_sent"),
                         CREATE_FAULTS)
async def test_create_faults(
    mp_server: MockProviderServer,
    directive: str,
    error_class: ErrorClass,
    label: ErrorLabel,
    status: int | None,
    maybe_sent: bool,
) -> None:
    async with httpx2.AsyncClient(timeout=httpx2.Timeout(0.4)) as client:
        provider = make_provider(client, mp_server.url, key=SENTINEL)
        request = make_request(f"fox [[mock:{directive}*1]]", job_key=f"jk-{directive}")
        with pytest.raises(ProviderError) as caught:
            await provider.submit(request)
        error = caught.value
        assert (error.error_class, error.label) == (error_class, label)
        assert error.status_code == status
        assert error.body_maybe_sent is maybe_sent
        if directive == "rate_limit":
            assert error.retry_after == pytest.approx(1.0)
        _assert_no_key(error)
        # *1: the second create for the same job key goes through.
        assert await provider.submit(request)
    counters = mp_server.counters()
    assert counters["creates_by_job_key"] == {f"jk-{directive}": 2}
    assert counters["creates_by_client_token"] == {request.client_token: 2}
    created = 2 if maybe_sent else 1
    assert counters["renders_total"] == created


async def test_times_syntax_counts_per_job_key(mp_provider: MockProvider) -> None:
    request = make_request("[[mock:rate_limit*2]]", job_key="limited")
    for _ in range(2):
        with pytest.raises(ProviderError) as caught:
            await mp_provider.submit(request)
        assert caught.value.label is ErrorLabel.RATE_LIMITED
    assert await mp_provider.submit(request)
    other = make_request("[[mock:rate_limit*2]]", job_key="other")
    with pytest.raises(ProviderError):
        await mp_provider.submit(other)


async def test_connect_error_means_nothing_sent(mp_client: httpx2.AsyncClient) -> None:
    with socket.socket() as sock:  # a port nobody listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    provider = make_provider(mp_client, f"http://127.0.0.1:{port}", key=SENTINEL)
    with pytest.raises(ProviderError) as caught:
        await provider.submit(make_request())
    assert caught.value.error_class is ErrorClass.RETRYABLE
    assert caught.value.body_maybe_sent is False
    _assert_no_key(caught.value)


async def test_rejected_key(mp_client: httpx2.AsyncClient) -> None:
    with MockProviderServer(dataclasses.replace(FAST, accept_keys=frozenset({"good"}))) as s:
        await make_provider(mp_client, s.url, key="good").check_key()
        for key in (SENTINEL, None):
            provider = make_provider(mp_client, s.url, key=key)
            for call in (provider.check_key(), provider.submit(make_request())):
                with pytest.raises(ProviderError) as caught:
                    await call
                assert caught.value.error_class is ErrorClass.ACCOUNT
                assert caught.value.label is ErrorLabel.KEY_REJECTED
                _assert_no_key(caught.value)


async def test_render_fail(mp_provider: MockProvider) -> None:
    render_id = await mp_provider.submit(make_request("[[mock:render_fail]]"))
    status = await wait_finished(mp_provider, render_id)
    assert status.phase is RemotePhase.FAILED
    assert status.error is not None
    assert status.error.error_class is ErrorClass.RETRYABLE
    assert status.error.label is ErrorLabel.PROVIDER_ERROR
    assert "render_failed" in str(status.error)


@pytest.mark.parametrize(("directive", "label"), [
    ("poll_timeout", ErrorLabel.TIMED_OUT),
    ("poll_malformed", ErrorLabel.PROVIDER_ERROR),
])
async def test_poll_faults(mp_server: MockProviderServer, directive: str,
                           label: ErrorLabel) -> None:
    async with httpx2.AsyncClient(timeout=httpx2.Timeout(0.4)) as client:
        provider = make_provider(client, mp_server.url, key=SENTINEL)
        render_id = await provider.submit(make_request(f"[[mock:{directive}*1]]"))
        with pytest.raises(ProviderError) as caught:
            await provider.poll(render_id)
        assert caught.value.error_class is ErrorClass.RETRYABLE
        assert caught.value.label is label
        assert caught.value.body_maybe_sent is False
        _assert_no_key(caught.value)
        assert (await wait_finished(provider, render_id)).phase is RemotePhase.SUCCEEDED


async def test_poll_unknown_render(mp_provider: MockProvider) -> None:
    """A restarted mock forgot its renders; mock renders are free, so the render is
    reported failed (retryable: the engine renders it again)."""
    status = await mp_provider.poll("mr_doesnotexist")
    assert status.phase is RemotePhase.FAILED
    assert status.error is not None and status.error.error_class is ErrorClass.RETRYABLE
    assert status.error.status_code == 404


@pytest.mark.parametrize("directive", ["expired_link*2", "truncated", "html"])
async def test_download_faults(mp_server: MockProviderServer, mp_client: httpx2.AsyncClient,
                               directive: str) -> None:
    provider = make_provider(mp_client, mp_server.url, key=SENTINEL)
    render_id = await provider.submit(make_request(f"[[mock:{directive}]]"))
    status = await wait_finished(provider, render_id)
    with pytest.raises(ProviderError) as caught:
        await download_all(provider, render_id, status)
    assert caught.value.error_class is ErrorClass.RETRYABLE
    assert caught.value.label is ErrorLabel.DOWNLOAD_FAILED
    _assert_no_key(caught.value)


@pytest.mark.parametrize("directive", ["oversize=4", "gzip_bomb=4"])
async def test_hostile_downloads_stop_at_the_byte_cap(mp_provider: MockProvider,
                                                      directive: str) -> None:
    """The mock's hostile downloads (4 MiB, chunked or as a gzip bomb) stop at a 1 MiB cap
    inside the adapter, counted in decoded bytes; without the cap they arrive whole."""
    render_id = await mp_provider.submit(make_request(f"[[mock:{directive}*1]]"))
    status = await wait_finished(mp_provider, render_id)
    received = 0
    with using_limits(DownloadLimits(max_bytes=1 << 20)), pytest.raises(ProviderError) as caught:
        async for chunk in mp_provider.download(render_id, status):
            received += len(chunk)
    assert (caught.value.error_class, caught.value.label) == (
        ErrorClass.RETRYABLE, ErrorLabel.DOWNLOAD_FAILED)
    assert "cap" in str(caught.value) and received <= 1 << 20
    assert await download_all(mp_provider, render_id, status) == SAMPLE  # *1: once only


async def test_hostile_downloads_send_what_they_say(mp_provider: MockProvider) -> None:
    render_id = await mp_provider.submit(make_request("[[mock:gzip_bomb=3]]"))
    status = await wait_finished(mp_provider, render_id)
    data = await download_all(mp_provider, render_id, status)
    assert data.startswith(SAMPLE) and len(data) == 3 << 20


async def test_expired_link_is_refreshed_once(mp_provider: MockProvider,
                                              mp_server: MockProviderServer) -> None:
    render_id = await mp_provider.submit(make_request("[[mock:expired_link*1]]"))
    status = await wait_finished(mp_provider, render_id)
    polls = mp_server.counters()["polls_total"]
    assert await download_all(mp_provider, render_id, status) == SAMPLE
    counters = mp_server.counters()
    assert counters["downloads_total"] == 2 and counters["polls_total"] == polls + 1


async def test_link_ttl_expiry_refresh(mp_client: httpx2.AsyncClient) -> None:
    with MockProviderServer(dataclasses.replace(FAST, link_ttl_seconds=0.3)) as server:
        provider = make_provider(mp_client, server.url)
        render_id = await provider.submit(make_request())
        status = await wait_finished(provider, render_id)
        await asyncio.sleep(0.4)  # the link in `status` has expired by now
        assert await download_all(provider, render_id, status) == SAMPLE
        assert server.counters()["downloads_total"] == 2


async def test_slow_download(mp_provider: MockProvider) -> None:
    render_id = await mp_provider.submit(make_request("[[mock:slow_download=0.02]]"))
    status = await wait_finished(mp_provider, render_id)
    started = time.monotonic()
    chunks = [chunk async for chunk in mp_provider.download(render_id, status)]
    assert b"".join(chunks) == SAMPLE
    assert time.monotonic() - started >= 0.02 * (len(SAMPLE) // 1024)


async def test_no_key_in_repr(mp_client: httpx2.AsyncClient) -> None:
    config = ProviderConfig(account="a", base_url="http://127.0.0.1:9", api_key=SENTINEL)
    provider = create(mp_client, config)
    assert SENTINEL not in repr(provider) and SENTINEL not in repr(config)
    assert SENTINEL not in str(vars(provider).get("base_url"))


async def test_config_problems(mp_client: httpx2.AsyncClient) -> None:
    with pytest.raises(InputError, match="base URL"):
        create(mp_client, ProviderConfig(account="a", base_url=None, api_key=None))
    with pytest.raises(InputError):
        create(mp_client, ProviderConfig(account="a", base_url="http://example.com",
                                         api_key=None))


def test_registered() -> None:
    info = builtin_registry().get("mock")
    assert info.factory is create
    assert info.default_base_url is None and info.requires_key is False
    assert info.params.models == ("mock-1", "mock-2")
    assert info.params.price_per_second == {"mock-1": 0.01, "mock-2": 0.02}
    assert info.params.default_capacity == 4
    assert "mock" in builtin_registry().kinds()


def _assert_no_key(error: BaseException) -> None:
    text = "".join(traceback.format_exception(error))
    for shown in (str(error), repr(error), text):
        assert SENTINEL not in shown


async def test_an_account_paces_its_own_renders(mp_client: httpx2.AsyncClient,
                                                mp_server: MockProviderServer) -> None:
    """The demo's accounts carry ``render_seconds``: each create asks the server for a
    render time in that range instead of the server's own (fast) one."""
    provider = make_provider(mp_client, mp_server.url, render_seconds=[30, 40])
    render_id = await provider.submit(make_request(job_key="paced"))
    state = mp_server._running().state
    render = state.get(render_id)
    assert render is not None and 30 <= render.duration <= 40
    assert state.phase(render, render.created + 29) in ("queued", "running")
    plain = await make_provider(mp_client, mp_server.url).submit(make_request(job_key="fast"))
    fast = state.get(plain)
    assert fast is not None and fast.duration <= FAST.render_seconds_max


async def test_a_malformed_pace_is_refused(mp_client: httpx2.AsyncClient,
                                           mp_server: MockProviderServer) -> None:
    for pace in ([5], [9, 3], ["1", "2"], [0, 7200]):
        response = await mp_client.post(f"{mp_server.url}/v1/renders", json={
            "prompt": "p", "client_token": "ct", "job_key": "k", "params": {},
            "render_seconds": pace})
        assert response.status_code == 400, pace
        assert response.json()["error"]["code"] == "invalid_request"
