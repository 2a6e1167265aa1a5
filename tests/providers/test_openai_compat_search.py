"""Reconciliation for the OpenAI-compatible /v1/videos adapter: search() and echo() (the
fake: conformance/openai_compat_search.py). The behaviours every search shares run in
conformance/test_search.py."""

from __future__ import annotations

from pathlib import Path

import httpx2
import pytest
from conformance.openai_compat_search import (
    GATEWAY,
    HOUR,
    T0,
    VIDEOS,
    FakeVideoList,
    form_fields,
    make,
    matches,
    request,
)
from provider_fakes import ClientFor, fixture, json_response

from reelqueue.providers.adapters import openai_compat
from reelqueue.providers.base import ReconcileMethod, RemoteRecord, RenderRequest, reconcile_method

# -- found again: the created render, once the list shows it -------------------------------

async def test_a_submitted_render_is_found_once_the_list_shows_it(
    client_for: ClientFor,
) -> None:
    fake = FakeVideoList()
    fake.add("A tide pool", T0 - 2 * HOUR)  # another client, same prompt, earlier
    fake.add("A tide pool", T0 - 600)
    fake.add("A lighthouse", T0 - 30)
    provider = make(client_for(fake.router), fake)
    row = request(duration=8, aspect_ratio="16:9")
    since = fake.now - 60
    job_id = await provider.submit(row)
    until = fake.now + 5
    fake.now += 0.5  # read before the settle: the list does not show it yet
    early = await provider.search(since, until)
    assert early.complete is True  # which is why the engine waits settle_seconds first
    assert job_id not in {r.provider_job_id for r in early.records}
    fake.now = T0 + provider.settle_seconds
    fake.add("A tide pool", fake.now - 1)  # the same prompt again, after our window
    result = await provider.search(since, until)
    assert result.complete is True
    ours = next(r for r in result.records if r.provider_job_id == job_id)
    assert ours.echo == provider.echo(row)
    assert ours.created_at == int(T0)
    assert ours.status == "queued"
    assert matches(result.records, provider.echo(row), since, until) == [job_id]
    assert fake.router.count("POST", VIDEOS) == 1


@pytest.mark.parametrize("seed", range(8))
async def test_found_whatever_the_settle_delay(client_for: ClientFor, seed: int) -> None:
    """The fake shows a created video after 1-90 s; at settle_seconds it is always there."""
    fake = FakeVideoList(seed=seed)
    for n in range(30):
        fake.add("A tide pool", T0 - 5 - n * 7)
    provider = make(client_for(fake.router), fake)
    job_id = await provider.submit(request())
    fake.now += provider.settle_seconds
    result = await provider.search(T0 - 10, T0 + 10)
    assert result.complete is True
    assert matches(result.records, provider.echo(request()), T0 - 1, T0 + 10) == [job_id]


# -- what is echoed and compared ----------------------------------------------------------

async def test_echo_is_what_the_create_sends(client_for: ClientFor) -> None:
    fake = FakeVideoList()
    provider = make(client_for(fake.router), fake)
    row = request("  A  tide\npool ", model="Sora-2")
    await provider.submit(row)
    sent = form_fields(fake.router.calls[0].body)
    assert sent["prompt"] == "  A  tide\npool " and sent["model"] == "Sora-2"
    assert provider.echo(row) == {"prompt": "A tide pool", "model": "sora-2"}
    # The account's default model, when the row names none, as in submit().
    assert provider.echo(request())["model"] == "wan-2.5"


@pytest.mark.parametrize(("other", "differs"), [
    (request("A tide pool at night"), True),
    (request(model="veo-3.1-fast"), True),
    (request("a tide pool"), True),
    (request("A tide pool "), False),  # spaces only
    (request(model="openai/wan-2.5"), False),  # a gateway's vendor prefix
    (request(model="wan-2.5-2025-10-06"), False),  # a dated snapshot of the same model
    # Not compared (docs/reconciliation/openai-compat.md): the gateway fills in its own
    # default when the row sets none, and it never echoes the image.
    (request(duration=4), False),
    (request(aspect_ratio="9:16"), False),
    (request(image="/tmp/ref.png"), False),
])
async def test_a_different_prompt_or_model_gives_a_different_echo(
    client_for: ClientFor, other: RenderRequest, differs: bool
) -> None:
    fake = FakeVideoList()
    provider = make(client_for(fake.router), fake)
    assert (provider.echo(other) != provider.echo(request())) is differs


async def test_a_listed_video_is_echoed_like_a_request(client_for: ClientFor) -> None:
    fake = FakeVideoList()
    provider = make(client_for(fake.router), fake)
    video = fixture("openai_compat", "video_completed")
    record = openai_compat._record(video)
    assert record == RemoteRecord(video["id"], 1790000000.0, "completed",
                                  provider.echo(request(duration=8, aspect_ratio="16:9")))


async def test_records_without_a_prompt_or_time_are_never_ruled_out(
    client_for: ClientFor,
) -> None:
    fake = FakeVideoList()
    provider = make(client_for(fake.router), fake)
    fake.router.script("GET", VIDEOS, json_response(
        200, fixture("openai_compat", "list_page_prompt_removed")))
    result = await provider.search(T0, T0 + 600)
    assert [r.echo for r in result.records] == [None, None]  # prompt null, prompt missing
    page = fixture("openai_compat", "list_page_1")
    page["data"][0]["created_at"] = "yesterday"
    page["data"][1]["model"] = None
    page["has_more"] = False
    fake.router.script("GET", VIDEOS, json_response(200, page))
    result = await provider.search(T0, T0 + 600)
    assert result.records[0].created_at is None
    assert result.records[0].echo == provider.echo(request())
    assert result.records[1].echo is None
    assert len(matches(result.records, provider.echo(request()), T0, T0 + 600)) == 2


# -- paging -------------------------------------------------------------------------------

async def test_recorded_pages_are_read_in_order(client_for: ClientFor) -> None:
    fake = FakeVideoList()
    provider = make(client_for(fake.router), fake)
    fake.router.script("GET", VIDEOS, json_response(200, fixture("openai_compat",
                                                                 "list_page_1")))
    fake.router.script("GET", VIDEOS, json_response(200, fixture("openai_compat",
                                                                 "list_page_2")))
    result = await provider.search(1790000000.0, 1790000400.0)
    assert result.complete is True
    assert [r.status for r in result.records] == ["in_progress", "completed", "failed",
                                                  "completed"]
    first, second = fake.list_calls()
    assert dict(first.params) == {"limit": "100", "order": "desc"}
    assert dict(second.params) == {"limit": "100", "order": "desc",
                                   "after": "video_68d7512d07848190b3e45da0ecbe0003"}


async def test_paging_stops_past_since(client_for: ClientFor) -> None:
    fake = FakeVideoList()
    for n in range(450):
        fake.add(f"prompt {n}", T0 - n * 10)  # one every 10 s, newest first: T0 .. T0-4490
    provider = make(client_for(fake.router), fake)
    result = await provider.search(T0 - 2_000, T0)  # 201 videos in the window
    assert result.complete is True
    calls = fake.list_calls()
    assert len(calls) == 3  # 100 + 100 + the page holding the first older video
    assert all(c.params["limit"] == "100" and c.params["order"] == "desc" for c in calls)
    assert calls[1].params["after"] == fake.listed[99].video["id"]
    assert len(result.records) == 300
    times = [r.created_at or 0.0 for r in result.records]
    assert times == sorted(times, reverse=True)


async def test_the_end_of_the_list_is_complete_within_what_the_list_keeps(
    client_for: ClientFor,
) -> None:
    fake = FakeVideoList()
    fake.add("A tide pool", T0 - 100)
    provider = make(client_for(fake.router), fake)
    assert (await provider.search(T0 - 300, T0)).complete is True
    # The list ends before reaching a window older than a day: it may have dropped it.
    assert (await provider.search(T0 - 25 * HOUR, T0)).complete is False
    fake.add("older", T0 - 30 * HOUR)  # ... unless it still holds something older
    assert (await provider.search(T0 - 25 * HOUR, T0)).complete is True
    empty = FakeVideoList()
    assert (await make(client_for(empty.router), empty).search(T0 - 60, T0)).complete is True


async def test_a_list_that_ignores_order_is_read_to_its_end(client_for: ClientFor) -> None:
    """Oldest first despite order=desc: the first video is older than since, which proves
    nothing; the list is read to its end (and our video is in its last page)."""
    fake = FakeVideoList()
    fake.ignore_order = True
    for n in range(150):
        fake.add("other", T0 - 10_000 + n)
    ours = fake.add("A tide pool", T0)
    provider = make(client_for(fake.router), fake)
    result = await provider.search(T0 - 60, T0 + 60)
    assert result.complete is True
    assert len(fake.list_calls()) == 2
    assert ours in {r.provider_job_id for r in result.records}


async def test_one_video_pages_do_not_prove_the_order(client_for: ClientFor) -> None:
    fake = FakeVideoList()
    old, ours = fake.add("old", T0 - 500), fake.add("A tide pool", T0)
    provider = make(client_for(fake.router), fake)
    # Oldest first, one video a page: the first video is older than since.
    fake.router.script("GET", VIDEOS, json_response(200, {
        "object": "list", "data": [fake.listed[0].video], "first_id": old, "last_id": old,
        "has_more": True}))
    fake.router.script("GET", VIDEOS, json_response(200, {
        "object": "list", "data": [fake.listed[1].video], "first_id": ours,
        "last_id": ours, "has_more": False}))
    result = await provider.search(T0 - 60, T0)
    assert len(fake.list_calls()) == 2  # the first, older video did not stop the paging
    assert result.complete is True
    assert ours in {r.provider_job_id for r in result.records}


async def test_a_list_that_ignores_after_does_not_go_round(client_for: ClientFor) -> None:
    fake = FakeVideoList()
    fake.ignore_after = True
    for n in range(300):
        fake.add("A tide pool", T0 - n)
    provider = make(client_for(fake.router), fake)
    result = await provider.search(T0 - 3 * HOUR, T0)
    assert result.complete is False
    assert len(fake.list_calls()) == 2


async def test_without_last_id_the_last_video_is_the_cursor(client_for: ClientFor) -> None:
    fake = FakeVideoList()
    provider = make(client_for(fake.router), fake)
    page = fixture("openai_compat", "list_page_1")
    del page["last_id"], page["first_id"]
    fake.router.script("GET", VIDEOS, json_response(200, page))
    fake.router.script("GET", VIDEOS, json_response(200, fixture("openai_compat",
                                                                 "list_page_2")))
    result = await provider.search(1790000000.0, 1790000400.0)
    assert result.complete is True
    assert fake.list_calls()[1].params["after"] == page["data"][-1]["id"]


# -- unknown, never "none" ----------------------------------------------------------------

async def test_check_key_finding_no_list_makes_search_unavailable(
    client_for: ClientFor,
) -> None:
    fake = FakeVideoList()
    fake.router.add("GET", rf"{GATEWAY}/v1/models",
                    lambda r, m: json_response(200, {"object": "list", "data": []}))
    provider = make(client_for(fake.router), fake)
    await provider.check_key()
    assert provider.supports_search is True
    fake.router.script("GET", VIDEOS, httpx2.Response(404))
    await provider.check_key()
    assert reconcile_method(provider) is ReconcileMethod.NONE


def test_fixtures_are_named_in_source_md() -> None:
    source = (Path(__file__).resolve().parents[1] / "fixtures" / "openai_compat"
              / "SOURCE.md").read_text(encoding="utf-8")
    for name in ("list_page_1.json", "list_page_2.json", "list_page_prompt_removed.json"):
        assert name in source
