"""The mock adapter's ``reconcile`` modes and its search of the mock's list, against the
real mock server over loopback (time injected into the server: no long sleeps)."""

from __future__ import annotations

import base64
import dataclasses
import hashlib
import traceback
from pathlib import Path
from typing import Any

import httpx2
import pytest
from mockprovider_helpers import FAST, make_provider, make_request

from reelqueue.domain.errors import ErrorClass, ErrorLabel, InputError, ProviderError
from reelqueue.mockprovider import MockProviderServer
from reelqueue.providers.base import (
    ReconcileMethod,
    RenderRequest,
    SearchableProvider,
    reconcile_method,
    sends_client_token,
)
from reelqueue.providers.mock import DEFAULT_SETTLE_SECONDS, MockProvider

pytestmark = pytest.mark.integration

KEY = "sk-SENTINEL-search-0a1b2c3d4e"
T0 = 1_900_000_000.0
PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 32


class Clock:
    def __init__(self, now: float = T0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def _searching(client: httpx2.AsyncClient, url: str, **settings: Any) -> MockProvider:
    return make_provider(client, url, KEY, reconcile="search", **settings)


def _request(prompt: str = "a red fox", token: str = "tok-1", **params: Any) -> RenderRequest:
    merged = {"model": "mock-2", "duration": 4, **params}
    return RenderRequest(job_key="job-1", client_token=token, prompt=prompt, params=merged)


def _no_key(*texts: object) -> None:
    for text in texts:
        shown = "".join(traceback.format_exception(text)) if isinstance(
            text, BaseException) else str(text)
        assert KEY not in shown and KEY[:12] not in shown


# -- the modes --------------------------------------------------------------------------

@pytest.mark.parametrize(("settings", "method", "keeps_token"), [
    ({}, ReconcileMethod.KEY, True),
    ({"reconcile": "key"}, ReconcileMethod.KEY, True),
    ({"reconcile": "search"}, ReconcileMethod.SEARCH, False),
    ({"reconcile": "none"}, ReconcileMethod.NONE, False),
    ({"reconcile": "Search "}, ReconcileMethod.SEARCH, False),
    # The old boolean setting still works; "reconcile" wins over it.
    ({"lookup": True}, ReconcileMethod.KEY, True),
    ({"lookup": False}, ReconcileMethod.NONE, False),
    ({"lookup": False, "reconcile": "search"}, ReconcileMethod.SEARCH, False),
])
async def test_reconcile_modes(mp_client: httpx2.AsyncClient, settings: dict[str, Any],
                               method: ReconcileMethod, keeps_token: bool) -> None:
    provider = make_provider(mp_client, "http://127.0.0.1:9", **settings)
    assert reconcile_method(provider) is method
    assert provider.reconcile is method
    assert provider.supports_lookup is (method is ReconcileMethod.KEY)
    assert provider.supports_search is (method is ReconcileMethod.SEARCH)
    assert provider.keeps_client_token is keeps_token
    assert sends_client_token(provider) is keeps_token
    assert isinstance(provider, SearchableProvider)
    assert provider.echo_keeps_hours is None
    assert provider.settle_seconds == DEFAULT_SETTLE_SECONDS == 2.0


async def test_settle_seconds_setting_and_bad_settings(mp_client: httpx2.AsyncClient) -> None:
    client = mp_client
    assert _searching(client, "http://127.0.0.1:9", settle_seconds=7).settle_seconds == 7.0
    for bad in ({"reconcile": "guess"}, {"reconcile": "search", "settle_seconds": "2"},
                {"reconcile": "search", "settle_seconds": -1},
                {"reconcile": "search", "settle_seconds": True}):
        with pytest.raises(InputError):
            make_provider(client, "http://127.0.0.1:9", **bad)


async def test_the_other_modes_cannot_search(mp_client: httpx2.AsyncClient,
                                             mp_server: MockProviderServer) -> None:
    for settings in ({}, {"reconcile": "none"}, {"lookup": False}):
        provider = make_provider(mp_client, mp_server.url, **settings)
        with pytest.raises(ProviderError) as caught:
            await provider.search(0.0, T0)
        assert caught.value.label is ErrorLabel.SUBMIT_UNKNOWN
        assert caught.value.error_class is ErrorClass.PERMANENT
    searching = _searching(mp_client, mp_server.url)
    with pytest.raises(ProviderError) as lookup:
        await searching.lookup(make_request())
    assert lookup.value.label is ErrorLabel.SUBMIT_UNKNOWN
    assert mp_server.counters()["lists_total"] == 0  # nothing was asked


# -- search against the server ------------------------------------------------------------

async def test_a_render_is_found_once_listed_and_its_echo_matches(
        mp_client: httpx2.AsyncClient) -> None:
    clock = Clock()
    options = dataclasses.replace(FAST, list_delay_min=1.0, list_delay_max=1.5, seed=4,
                                  lookup_enabled=False, accept_keys=frozenset({KEY}))
    with MockProviderServer(options, clock=clock) as server:
        provider = _searching(mp_client, server.url)
        request = _request(aspect_ratio="9:16", seed=42)
        render_id = await provider.submit(request)
        early = await provider.search(T0 - 60, T0 + 60)
        # The list is complete as read, but does not show the render yet: why a caller
        # waits settle_seconds (2.0, above this server's 1.5 s at most) before trusting it.
        assert early.complete and early.records == ()
        clock.now = T0 + provider.settle_seconds
        found = await provider.search(T0 - 60, T0 + 60)
        assert found.complete
        (record,) = found.records
        assert (record.provider_job_id, record.created_at) == (render_id, T0)
        assert record.status in ("queued", "running", "succeeded")
        assert record.echo == provider.echo(request)
        assert record.echo == {"prompt": "a red fox", "params": {
            "model": "mock-2", "duration": 4, "aspect_ratio": "9:16", "seed": 42}}
        # A different prompt or param gives a different echo.
        for other in (_request("a blue fox", aspect_ratio="9:16", seed=42),
                      _request(aspect_ratio="16:9", seed=42), _request(aspect_ratio="9:16"),
                      _request(aspect_ratio="9:16", seed=42, model="mock-1")):
            assert provider.echo(other) != record.echo
        # The token is not what the echo is made of: another submission of the same row
        # echoes the same.
        assert provider.echo(_request(token="tok-2", aspect_ratio="9:16", seed=42)) == \
            record.echo
        assert server.counters()["lists_total"] == 2


async def test_another_clients_twin_is_listed_at_its_own_time(
        mp_client: httpx2.AsyncClient) -> None:
    clock = Clock()
    with MockProviderServer(dataclasses.replace(FAST, lookup_enabled=False),
                            clock=clock) as server:
        provider = _searching(mp_client, server.url)
        request = _request()
        ours = await provider.submit(request)
        twin_early = server.plant_foreign(request.prompt, dict(request.params),
                                          created_at=T0 - 30, key=KEY)
        twin_late = server.plant_foreign(request.prompt, dict(request.params),
                                         created_at=T0 + 20, key=KEY)
        server.plant_foreign(request.prompt, dict(request.params), created_at=T0,
                             key="another-account")
        clock.now = T0 + 25
        result = await provider.search(T0 - 5, T0 + 5)
        assert result.complete
        ids = [r.provider_job_id for r in result.records]
        # Newest first; the server filters by created_after (since), so the earlier twin
        # is not read; the later one is (the engine windows by time); the other key's
        # render is never listed.
        assert ids == [twin_late, ours] and twin_early not in ids
        echoes = {r.echo == provider.echo(request) for r in result.records}
        assert echoes == {True}
        wide = await provider.search(T0 - 60, T0 + 60)
        assert [r.provider_job_id for r in wide.records] == [twin_late, ours, twin_early]


async def test_the_foreign_twin_directive_through_the_adapter(
        mp_client: httpx2.AsyncClient) -> None:
    clock = Clock()
    with MockProviderServer(FAST, clock=clock) as server:
        provider = _searching(mp_client, server.url)
        request = _request("twin [[mock:foreign_twin=12]]")
        ours = await provider.submit(request)
        result = await provider.search(T0 - 60, T0 + 60)
        assert [(r.created_at, r.echo == provider.echo(request)) for r in result.records] \
            == [(T0, True), (T0 - 12, True)]
        assert result.records[0].provider_job_id == ours


async def test_paging_at_the_page_size_and_the_page_budget(
        mp_client: httpx2.AsyncClient) -> None:
    clock = Clock()
    with MockProviderServer(dataclasses.replace(FAST, list_page_size=3),
                            clock=clock) as server:
        provider = _searching(mp_client, server.url)
        made = []
        for i in range(10):
            clock.now = T0 + i
            made.append(await provider.submit(_request(f"shot {i}", token=f"t{i}")))
        server.reset_counters()
        result = await provider.search(T0 + 2, T0 + 20)
        assert result.complete
        assert [r.provider_job_id for r in result.records] == made[:1:-1]
        assert server.counters()["lists_total"] == 3  # 3 + 3 + 2
        provider.search_page_budget = 2
        short = await provider.search(T0, T0 + 20)
        assert not short.complete and len(short.records) == 6
        provider.search_page_budget = 4
        exact = await provider.search(T0, T0 + 20)  # 3+3+3+1: the 4th page says no more
        assert exact.complete and len(exact.records) == 10


async def test_a_server_without_the_list(mp_client: httpx2.AsyncClient) -> None:
    with MockProviderServer(dataclasses.replace(FAST, list_enabled=False)) as server:
        provider = _searching(mp_client, server.url)
        assert reconcile_method(provider) is ReconcileMethod.SEARCH
        with pytest.raises(ProviderError) as caught:
            await provider.search(0.0, T0)
        error = caught.value
        assert (error.label, error.error_class, error.status_code) == (
            ErrorLabel.SUBMIT_UNKNOWN, ErrorClass.PERMANENT, 404)
        assert error.body_maybe_sent
        assert not provider.supports_search
        assert reconcile_method(provider) is ReconcileMethod.NONE
        _no_key(error)


async def test_a_rejected_key_on_the_list(mp_client: httpx2.AsyncClient) -> None:
    with MockProviderServer(dataclasses.replace(FAST, accept_keys=frozenset({"good"}))) as s:
        provider = _searching(mp_client, s.url)
        with pytest.raises(ProviderError) as caught:
            await provider.search(0.0, T0)
        assert caught.value.label is ErrorLabel.KEY_REJECTED
        _no_key(caught.value)


# -- the create's answer lost, the render found by search ---------------------------------

@pytest.mark.parametrize("directive", ["hold_answer=5", "create_timeout=5"])
async def test_a_held_back_answer_is_found_by_search(directive: str) -> None:
    """The provider holds the create's answer while the render exists; the client gives
    up (as a killed client would), and the search finds the render by its echo."""
    clock = Clock()
    options = dataclasses.replace(FAST, lookup_enabled=False, list_delay_max=0.5, seed=9)
    with MockProviderServer(options, clock=clock) as server:
        async with httpx2.AsyncClient(timeout=httpx2.Timeout(0.3)) as impatient:
            request = _request(f"lost answer [[mock:{directive}*1]]")
            with pytest.raises(ProviderError) as caught:
                await _searching(impatient, server.url).submit(request)
            assert caught.value.body_maybe_sent
            assert caught.value.label is ErrorLabel.TIMED_OUT
        assert server.counters()["renders_total"] == 1
        async with httpx2.AsyncClient(timeout=3) as client:
            provider = _searching(client, server.url)
            clock.now = T0 + provider.settle_seconds
            (record,) = (await provider.search(T0 - 10, T0 + 10)).records
            assert record.echo == provider.echo(request)
            assert record.created_at is not None and record.created_at >= T0


# -- echo of reference images ------------------------------------------------------------

async def test_echo_names_the_reference_image_as_submit_sent_it(
        mp_client: httpx2.AsyncClient, tmp_path: Path) -> None:
    pinned = tmp_path / "pinned.png"
    pinned.write_bytes(PNG)
    loose = tmp_path / "loose.png"
    loose.write_bytes(PNG + b"x")
    sha = hashlib.sha256(PNG).hexdigest()
    data_uri = "data:image/png;base64," + base64.b64encode(PNG + b"yz").decode()
    images: list[dict[str, Any]] = [
        {"image": "https://img.example.test/a.png"},
        {"image": str(pinned), "image_sha256": sha.upper()},
        {"image": str(loose)},
        {"image": data_uri},
    ]
    clock = Clock()
    with MockProviderServer(FAST, clock=clock) as server:
        provider = _searching(mp_client, server.url)
        requests = [_request(f"image {i}", token=f"t{i}", **extra)
                    for i, extra in enumerate(images)]
        for request in requests:
            await provider.submit(request)
        records = (await provider.search(T0 - 1, T0 + 1)).records
        by_prompt = {r.echo["prompt"]: r.echo for r in records if r.echo is not None}
        for request in requests:
            assert by_prompt[request.prompt] == provider.echo(request)
        assert provider.echo(requests[1])["params"]["image"] == f"sha256:{sha}"
        assert provider.echo(requests[0])["params"]["image"] == images[0]["image"]
        # The pinned file may be gone by reconcile time: its echo needs only the pin.
        pinned.unlink()
        assert provider.echo(requests[1]) == by_prompt["image 1"]
        # An unpinned file is read again with submit's checks: gone, it cannot be named.
        loose.unlink()
        with pytest.raises(ProviderError) as caught:
            provider.echo(requests[2])
        assert caught.value.label is ErrorLabel.INVALID_INPUT
