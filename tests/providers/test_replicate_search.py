"""Replicate reconciliation (issue 19): the account's predictions searched by their echo (the
fake: conformance/replicate_search.py). The behaviours every search shares run in
conformance/test_search.py."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import pytest
from conformance.replicate_search import (
    API,
    FULL,
    IMAGE_URL,
    LIST,
    PNG_DATA_URI,
    T0,
    FakeAccount,
    by_id,
    make,
    request,
)
from provider_fakes import ClientFor, Router, fixture, json_response

from reelqueue.domain.errors import ErrorLabel, ProviderError
from reelqueue.providers.base import SearchResult

# -- found once listed, with the echo of the request ------------------------------------


@pytest.mark.parametrize("params", [{}, FULL, {**FULL, "image": PNG_DATA_URI},
                                    {"model": "google/veo-3.1-fast", "duration": "6"}])
@pytest.mark.parametrize("seed", [1, 2, 3])
async def test_a_submitted_render_is_found_once_listed_with_the_echo_of_its_request(
    client_for: ClientFor, params: dict[str, Any], seed: int
) -> None:
    fake = FakeAccount(seed=seed)
    # Another client of the key, same prompt and parameters, at other times.
    fake.add("A lantern festival", T0 - 900, **{"duration": 8})
    fake.add("A lantern festival", T0 + 3000, **{"duration": 8})
    provider = make(client_for(fake.router))
    req = request(**params)
    intent = fake.now
    job_id = await provider.submit(req)
    fake.now += 0.5  # the crash: nothing was read; the list does not show it yet
    early = await provider.search(intent - 60, fake.now)
    assert job_id not in by_id(early.records)  # why the engine waits settle_seconds
    fake.now = intent + provider.settle_seconds
    found = await provider.search(intent - 60, fake.now)
    assert found.complete is True
    assert list(by_id(found.records)) == [job_id]  # the other client's are outside
    record = by_id(found.records)[job_id]
    assert record.echo == provider.echo(req)
    assert record.status == "starting"
    assert record.created_at == pytest.approx(intent, abs=1e-3)


async def test_echo_is_the_sent_input_normalised(client_for: ClientFor) -> None:
    fake = FakeAccount()
    provider = make(client_for(fake.router))
    req = request(**FULL)
    await provider.submit(req)
    sent = json.loads(fake.router.calls[0].body)["input"]
    assert provider.echo(req) == {"model": "google/veo-3.1", **sent} == {
        "model": "google/veo-3.1", "prompt": "A lantern festival", "duration": 8,
        "seed": 3, "aspect_ratio": "16:9", "resolution": "1080p",
        "negative_prompt": "blur", "image": IMAGE_URL}
    assert provider.echo(request(image=PNG_DATA_URI))["image"] == "inline"
    assert "image" not in provider.echo(request())


@pytest.mark.parametrize("change", [
    {"prompt": "A lantern festival at dusk"}, {"model": "google/veo-3.1-fast"},
    {"duration": 6}, {"seed": 4}, {"seed": None}, {"aspect_ratio": "9:16"},
    {"resolution": "720p"}, {"negative_prompt": None}, {"negative_prompt": "rain"},
    {"image": "https://img.example.test/b.png"}, {"image": PNG_DATA_URI}, {"image": None},
])
async def test_a_different_prompt_or_parameter_gives_a_different_echo(
    client_for: ClientFor, change: dict[str, Any]
) -> None:
    fake = FakeAccount()
    provider = make(client_for(fake.router))
    params = {**FULL, **change}
    prompt = params.pop("prompt", "A lantern festival")
    params = {name: value for name, value in params.items() if value is not None}
    other = request(prompt, **params)
    await provider.submit(other)
    fake.now += provider.settle_seconds
    listed = (await provider.search(T0 - 60, fake.now)).records
    assert len(listed) == 1
    assert listed[0].echo == provider.echo(other)
    assert listed[0].echo != provider.echo(request(**FULL))


async def test_extra_fields_echoed_by_another_client_do_not_rule_a_record_out(
    client_for: ClientFor,
) -> None:
    fake = FakeAccount()
    fake.add("A lantern festival", T0 + 10, duration=8.0, generate_audio=False)
    provider = make(client_for(fake.router))
    fake.now = T0 + 200
    [record] = (await provider.search(T0, T0 + 200)).records
    assert record.echo == provider.echo(request(duration=8))


# -- removed inputs -----------------------------------------------------------------------


async def test_inputs_removed_after_an_hour_give_no_echo(client_for: ClientFor) -> None:
    fake = FakeAccount()
    web = fake.add("A lantern festival", T0 - 100, source="web", duration=8)
    provider = make(client_for(fake.router))
    job_id = await provider.submit(request(duration=8))
    fake.now = T0 + 3601
    records = by_id((await provider.search(T0 - 200, T0 + 5)).records)
    assert records[job_id].echo is None  # never ruled out
    assert records[web.id].echo == provider.echo(request(duration=8))  # web: kept


@pytest.mark.parametrize("change", [
    {"input": {}}, {"input": None}, {"data_removed": True}, {"model": None},
    {"input": {"prompt": "A lantern festival", "duration": "eight"}},
    {"input": {"prompt": "A lantern festival", "duration": True}},
    {"input": {"prompt": ["A lantern festival"]}},
    {"input": {"prompt": "A lantern festival", "image": {"url": IMAGE_URL}}},
])
async def test_a_record_that_cannot_be_compared_has_no_echo(
    client_for: ClientFor, change: dict[str, Any]
) -> None:
    page = fixture("replicate", "list_page_2")
    page["results"][0].update(change)
    router = Router()
    router.add("GET", LIST, lambda r, m: json_response(200, page))
    [record] = (await make(client_for(router)).search(T0 - 3600, T0)).records
    assert record.echo is None
    assert record.provider_job_id == "0n8vd5ht6srmc0cjz8rs2a1e4w"


async def test_recorded_pages_are_read_as_documented(client_for: ClientFor) -> None:
    router = Router()
    router.add("GET", LIST, lambda r, m: json_response(
        200, fixture("replicate", "list_page_2" if "cursor" in str(r.url) else "list_page_1")))
    provider = make(client_for(router))
    result = await provider.search(T0 - 3600, T0 + 60)
    assert result.complete is True
    assert [(r.provider_job_id, r.status) for r in result.records] == [
        ("ufawqhfynnddngldkgtslldrkq", "processing"),
        ("gm3qorzdhgbfurvjtvhg6dckhu", "succeeded"),
        ("rk7bxq3v1hrma0cjz8stgmb5x8", "succeeded"),
        ("0n8vd5ht6srmc0cjz8rs2a1e4w", "failed")]
    ours, web, removed, older = result.records
    assert ours.echo == provider.echo(request(model="google/veo-3.1", duration=8, seed=3,
                                              image=IMAGE_URL))
    assert ours.created_at == T0
    assert web.echo == {"model": "replicate/hello-world"}  # no prompt: not one of ours
    assert removed.echo is None
    assert older.echo == provider.echo(request(duration=8, aspect_ratio="9:16"))
    second = router.calls[1].url
    assert (second.host, second.path) == (API, "/v1/predictions")
    assert "cursor" in second.params and "created_after" in second.params


async def test_an_empty_list_is_complete(client_for: ClientFor) -> None:
    router = Router()
    router.add("GET", LIST, lambda r, m: json_response(
        200, fixture("replicate", "list_page_empty")))
    result = await make(client_for(router)).search(T0 - 60, T0)
    assert result == SearchResult((), True)


# -- the window and paging ----------------------------------------------------------------


async def test_the_window_is_bounded_server_side(client_for: ClientFor) -> None:
    fake = FakeAccount()
    provider = make(client_for(fake.router))
    await provider.search(T0 - 90.5, T0 + 30.25)
    sent = fake.router.calls[0].url
    assert sent.path == "/v1/predictions"
    assert sent.params["created_after"] == "2026-10-02T11:58:29Z"  # at or after: floor
    assert sent.params["created_before"] == "2026-10-02T12:00:31Z"  # before: past until


async def test_pages_of_100_newest_first_until_the_end_of_the_window(
    client_for: ClientFor,
) -> None:
    fake = FakeAccount()
    for index in range(250):
        fake.add(f"prompt {index}", T0 - 1000 + index * 2)  # T0-1000 .. T0-502
    for index in range(40):
        fake.add(f"before {index}", T0 - 5000 + index)
    provider = make(client_for(fake.router))
    result = await provider.search(T0 - 1000, T0)
    assert result.complete is True
    assert fake.list_calls == 3  # 100 + 100 + 50
    times = [r.created_at for r in result.records]
    assert len(times) == 250 and times == sorted(times, reverse=True)


async def test_paging_stops_past_since_when_a_gateway_ignores_the_filters(
    client_for: ClientFor,
) -> None:
    fake = FakeAccount(honour_filters=False)
    for index in range(1000):
        fake.add(f"prompt {index}", T0 - 10_000 + index * 10)  # one every 10 s
    provider = make(client_for(fake.router))
    result = await provider.search(T0 - 1_505, T0)  # the newest 150 are in the window
    assert result.complete is True
    assert fake.list_calls == 2  # stopped at the first prediction created before since
    assert len(result.records) == 150
    assert min(r.created_at or 0 for r in result.records) >= T0 - 1_505


async def test_a_list_out_of_the_documented_order_is_incomplete(
    client_for: ClientFor,
) -> None:
    page = fixture("replicate", "list_page_1")
    page["next"] = None
    page["results"].reverse()  # oldest first: stopping "past since" proves nothing
    router = Router()
    router.add("GET", LIST, lambda r, m: json_response(200, page))
    result = await make(client_for(router)).search(T0 - 3600, T0 + 60)
    assert result.complete is False


# -- answers that cannot be read ----------------------------------------------------------


async def test_a_next_link_to_another_host_is_never_followed(client_for: ClientFor) -> None:
    fake = FakeAccount()
    for index in range(150):
        fake.add(f"prompt {index}", T0 - 1000 + index)
    fake.next_host = "collector.example.test"
    with pytest.raises(ProviderError) as caught:
        await make(client_for(fake.router)).search(T0 - 1000, T0)
    assert caught.value.label is ErrorLabel.SUBMIT_UNKNOWN
    assert "collector.example.test" in str(caught.value)
    assert {call.url.host for call in fake.router.calls} == {API}


def test_echo_needs_no_network(client_for: ClientFor) -> None:
    router = Router()
    provider = make(client_for(router))
    echoed: Mapping[str, Any] = provider.echo(request(**FULL))
    assert echoed["duration"] == 8 and router.calls == []
