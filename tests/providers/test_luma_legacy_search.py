"""Luma Dream Machine: a lost create found in the account's generations (the fake:
conformance/luma_legacy_search.py). The behaviours every search shares run in
conformance/test_search.py."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import httpx2
import pytest
from conformance.luma_legacy_search import LIST, ROW, T0, FakeGenerations, ids, make, request
from provider_fakes import ClientFor, Router, fixture, json_response

from reelqueue.providers.adapters import luma_legacy

# -- found once visible, and only ours -----------------------------------------------------


@pytest.mark.parametrize("order", ["newest", "oldest", "shuffled"])
async def test_a_submitted_render_is_found_once_listed(client_for: ClientFor,
                                                       order: str) -> None:
    fake = FakeGenerations(order=order)
    provider = make(client_for(fake.router))
    row = request(**ROW)
    # Another client on the same key: the same prompt and parameters, hours apart ...
    fake.add(T0 - 3 * 3600, dict(provider.echo(row)))
    fake.add(T0 + 4 * 3600, dict(provider.echo(row)))
    # ... and, inside the window, the same prompt with other parameters.
    different = fake.other(T0 + 20, model="ray-flash-2", duration="5s")
    for minute in range(1, 250):  # a busy account: more than two pages
        fake.other(T0 - 3600 - minute * 60, prompt=f"filler {minute}")
    job_id = await provider.submit(row)
    created = next(g for g, _ in fake.generations if g["id"] == job_id)
    visible_at = next(at for g, at in fake.generations if g["id"] == job_id)
    assert visible_at - T0 <= provider.settle_seconds  # the fake's delay is within settle

    fake.now = T0 + 1  # before the list shows it: not there (the engine waits settle)
    early = await provider.search(T0 - 120, T0 + 120)
    assert job_id not in ids(early.records)

    fake.now = T0 + provider.settle_seconds
    found = await provider.search(T0 - 120, T0 + 120)
    assert found.complete is True
    assert ids(found.records) == {job_id, different["id"]}
    ours = next(r for r in found.records if r.provider_job_id == job_id)
    assert ours.echo == provider.echo(row)
    assert ours.status == "queued"
    assert ours.created_at == T0 == datetime.fromisoformat(created["created_at"]).timestamp()
    other = next(r for r in found.records if r.provider_job_id == different["id"])
    assert other.echo is not None and other.echo != provider.echo(row)
    # Every page was read at the documented page size, whatever the order.
    assert fake.list_calls()[-3:] == [("100", "0"), ("100", "100"), ("100", "200")]


async def test_the_order_is_not_assumed_a_render_on_the_last_page_is_found(
    client_for: ClientFor,
) -> None:
    """The order is undocumented: old generations before ours never end the paging."""
    fake = FakeGenerations(order="oldest")
    provider = make(client_for(fake.router))
    for minute in range(1, 230):
        fake.other(T0 - 86400 - minute * 60, prompt=f"old {minute}")
    mine = fake.other(T0 + 5)
    fake.now = T0 + 60
    result = await provider.search(T0 - 60, T0 + 60)
    assert result.complete is True
    assert ids(result.records) == {mine["id"]}
    assert len(fake.list_calls()) == 3


# -- the echo ------------------------------------------------------------------------------


def test_the_echo_is_the_create_body_normalised(client_for: ClientFor) -> None:
    provider = make(client_for(Router()))
    assert provider.echo(request(**ROW)) == {
        "generation_type": "video", "prompt": "A koi pond", "model": "ray-2",
        "aspect_ratio": "21:9", "resolution": "1080p", "duration": "9s", "loop": False,
        "keyframes": {"frame0": {"type": "image", "url": "https://img.example.test/k.jpg"}}}
    # The defaults the create leaves out: ray-2 (ours), 16:9 (the documented default).
    assert provider.echo(request()) == provider.echo(request(model="ray-2",
                                                             aspect_ratio="16:9"))
    # Spreadsheet spellings of the same row are the same render.
    assert provider.echo(request(duration=9)) == provider.echo(request(duration="9.0"))


@pytest.mark.parametrize("change", [
    {"prompt": "A koi pond at night"}, {"model": "ray-flash-2"}, {"model": "ray-1-6"},
    {"duration": 5}, {"aspect_ratio": "9:16"}, {"resolution": "720p"},
    {"image": "https://img.example.test/other.jpg"}, {"image": None},
])
def test_a_different_prompt_or_parameter_is_a_different_echo(
    client_for: ClientFor, change: dict[str, Any]
) -> None:
    provider = make(client_for(Router()))
    params = dict(ROW)
    prompt = change.pop("prompt", "A koi pond")
    params.update(change)
    assert provider.echo(request(prompt, **params)) != provider.echo(request(**ROW))


async def test_a_recorded_page_reads_as_documented(client_for: ClientFor) -> None:
    router = Router()
    router.add("GET", LIST, lambda r, m: json_response(200, fixture("luma_legacy",
                                                                    "list_page_last")))
    provider = make(client_for(router))
    result = await provider.search(0, 2e9)
    assert result.complete is True
    by_id = {r.provider_job_id: r for r in result.records}
    assert len(by_id) == 6
    ours = by_id["5d2c1b0a-9f8e-4d7c-8b6a-5f4e3d2c1b0a"]
    assert ours.echo == provider.echo(request(**ROW))
    assert ours.status == "dreaming"
    assert ours.created_at == datetime(2026, 10, 2, 10, 4, 30, 512000, UTC).timestamp()
    # Echoed with the defaults filled in ("16:9", loop false): still the same create.
    plain = by_id["9a8b7c6d-5e4f-4a3b-8c2d-1e0f9a8b7c6d"].echo
    assert plain == provider.echo(request(model="ray-2", resolution="720p", duration=5))
    # An image generation with the same prompt is never our video.
    assert by_id["0e1f2a3b-4c5d-4e6f-8a7b-9c0d1e2f3a4b"].echo == {"generation_type": "image"}
    # An upscale request (it may have replaced the echo of the render it acted on) and the
    # OpenAPI example's request without any model cannot be compared: never ruled out.
    assert by_id["7b6a5f4e-3d2c-4b1a-9f8e-7d6c5b4a3f2e"].echo is None
    assert by_id["123e4567-e89b-12d3-a456-426614174000"].echo is None
    assert by_id["3f2e1d0c-b9a8-4776-8655-443322110000"].status == "failed"


@pytest.mark.parametrize("damage", [
    {"request": None},
    {"request": "A koi pond"},
    {"request": {"generation_type": "add_audio", "prompt": "rain"}},
    {"request": {"generation_type": "video", "prompt": None, "model": "ray-2"}},
    {"request": {"generation_type": "video", "prompt": "A koi pond"}, "model": None},
    {"request": {"generation_type": "video", "prompt": "A koi pond", "model": "ray-2",
                 "keyframes": {"frame0": {"type": "image"}}}},
    {"request": {"generation_type": "video", "prompt": "A koi pond", "model": "ray-2",
                 "duration": 5}},
    {"request": {"generation_type": "video", "prompt": "A koi pond", "model": "ray-2",
                 "loop": "no"}},
    {"request": {"generation_type": "video_v3", "prompt": "A koi pond", "model": "ray-3"}},
])
async def test_records_whose_inputs_cannot_be_read_have_no_echo(
    client_for: ClientFor, damage: dict[str, Any]
) -> None:
    fake = FakeGenerations()
    generation = fake.other(T0)
    generation.update(damage)
    result = await make(client_for(fake.router)).search(T0 - 60, T0 + 60)
    assert result.complete is True
    assert [(r.provider_job_id, r.echo) for r in result.records] == [(generation["id"], None)]


@pytest.mark.parametrize("created_at", [None, "yesterday", "2026-10-02T10:00:00", 1790000000])
async def test_a_record_without_a_readable_time_is_kept(
    client_for: ClientFor, created_at: Any
) -> None:
    """A naive or unreadable time is never guessed into (or out of) the window."""
    fake = FakeGenerations()
    generation = fake.other(T0 - 86400)
    generation["created_at"] = created_at
    result = await make(client_for(fake.router)).search(T0 - 60, T0 + 60)
    assert [(r.provider_job_id, r.created_at) for r in result.records] == [
        (generation["id"], None)]


# -- paging, completeness, errors ----------------------------------------------------------


async def test_the_page_budget_leaves_the_search_incomplete(client_for: ClientFor) -> None:
    fake = FakeGenerations()
    for second in range(luma_legacy.LIST_PAGE_BUDGET * luma_legacy.LIST_PAGE_SIZE + 1):
        fake.other(T0 - second, prompt=f"p{second}")
    result = await make(client_for(fake.router)).search(T0 - 60, T0 + 60)
    assert result.complete is False
    assert len(fake.list_calls()) == luma_legacy.LIST_PAGE_BUDGET
    assert len(result.records) == 61  # what was read inside the window is still given


async def test_the_end_of_a_list_without_has_more_is_a_short_page(
    client_for: ClientFor,
) -> None:
    router = Router()
    router.add("GET", LIST, lambda r, m: json_response(
        200, fixture("luma_legacy", "list_page_generations_only")))
    result = await make(client_for(router)).search(0, 2e9)
    assert result.complete is True
    assert ids(result.records) == {"9a8b7c6d-5e4f-4a3b-8c2d-1e0f9a8b7c6d"}


async def test_an_empty_account_is_complete(client_for: ClientFor) -> None:
    router = Router()
    router.add("GET", LIST, lambda r, m: json_response(200, fixture("luma_legacy",
                                                                    "list_page_empty")))
    result = await make(client_for(router)).search(0, 2e9)
    assert (result.records, result.complete) == ((), True)


async def test_a_full_page_without_has_more_reads_on(client_for: ClientFor) -> None:
    pages = [fixture("luma_legacy", "list_page_first"), fixture("luma_legacy",
                                                               "list_page_generations_only")]
    del pages[0]["has_more"]
    pages[1]["generations"][0]["id"] = "another"
    router = Router()
    router.add("GET", LIST, lambda r, m: json_response(200, pages.pop(0)))
    result = await make(client_for(router)).search(0, 2e9)
    assert result.complete is True and len(result.records) == 3
    assert [c.url.params["offset"] for c in router.calls] == ["0", "2"]


@pytest.mark.parametrize("second_page", [
    {"generations": [], "has_more": True},  # "more", but nothing
    "repeat",  # the same page again: the offset was ignored
])
async def test_paging_that_goes_nowhere_is_incomplete(
    client_for: ClientFor, second_page: Any
) -> None:
    first = fixture("luma_legacy", "list_page_first")
    router = Router()
    router.script("GET", LIST, json_response(200, first))
    answer = dict(first, offset=2) if second_page == "repeat" else second_page
    router.script("GET", LIST, json_response(200, answer))
    result = await make(client_for(router)).search(0, 2e9)
    assert result.complete is False
    assert len(result.records) == 2
    assert len(router.calls) == 2


@pytest.mark.parametrize("answer", [
    json_response(500, fixture("luma_legacy", "error_500")),
    json_response(429, fixture("luma_legacy", "error_429"), {"Retry-After": "3"}),
    httpx2.ReadTimeout("timed out"),
])
async def test_an_error_mid_way_leaves_the_search_incomplete(
    client_for: ClientFor, answer: Any
) -> None:
    fake = FakeGenerations()
    for minute in range(150):
        fake.other(T0 - minute * 60, prompt=f"p{minute}")
    fake.router.script("GET", LIST, lambda r: fake._list(r, None))
    fake.router.script("GET", LIST, answer)
    result = await make(client_for(fake.router)).search(T0 - 600, T0 + 60)
    assert result.complete is False
    assert len(result.records) == 11
    assert len(fake.list_calls()) == 2
