"""The mock provider's adapter speaks through the same ApiClient as the real adapters, so
what the kill and proof tests prove with it (one create, redirects never followed with the
key, bounded and checked downloads, scrubbed texts) holds for the real ones' plumbing."""

from __future__ import annotations

import json

import httpx2
import pytest
from conformance.mock_search import T0, FakeList, searching
from provider_fakes import SENTINEL_KEY, ClientFor, Router, all_texts, fixture, json_response

from reelqueue.domain.errors import ErrorLabel, ProviderError
from reelqueue.providers.base import ProviderConfig, RenderRequest
from reelqueue.providers.mock import MockProvider

BASE = "http://127.0.0.1:9"

def adapter(client: httpx2.AsyncClient) -> MockProvider:
    return MockProvider(client, ProviderConfig("acct", BASE, SENTINEL_KEY))


def request() -> RenderRequest:
    return RenderRequest(prompt="a fox", params={"duration": 4}, client_token="tok-1",
                         job_key="k1")


async def test_a_create_is_sent_once_with_the_key_as_json(client_for: ClientFor) -> None:
    router = Router()
    router.add("POST", r"127\.0\.0\.1/v1/renders",
               lambda req, m: json_response(201, {"id": "mr_1"}))
    assert await adapter(client_for(router)).submit(request()) == "mr_1"
    (call,) = router.calls
    assert call.headers["authorization"] == f"Bearer {SENTINEL_KEY}"
    assert call.headers["content-type"] == "application/json"
    assert json.loads(call.body)["client_token"] == "tok-1"


async def test_a_redirect_is_never_followed(client_for: ClientFor) -> None:
    router = Router()
    router.add("GET", r"127\.0\.0\.1/v1/account", lambda req, m: httpx2.Response(
        302, headers={"location": "https://elsewhere.example.test/steal"}))
    with pytest.raises(ProviderError):
        await adapter(client_for(router)).check_key()
    assert [c.url.host for c in router.calls] == ["127.0.0.1"]


async def test_an_error_text_echoing_the_key_is_scrubbed(client_for: ClientFor) -> None:
    router = Router()
    router.add("GET", r"127\.0\.0\.1/v1/renders/mr_1", lambda req, m: json_response(
        500, {"error": {"code": "boom", "message": f"bad header Bearer {SENTINEL_KEY}"}}))
    with pytest.raises(ProviderError) as error:
        await adapter(client_for(router)).poll("mr_1")
    assert SENTINEL_KEY not in all_texts(error.value)
    assert SENTINEL_KEY[:12] not in all_texts(error.value)
    assert error.value.label == ErrorLabel.PROVIDER_ERROR


# -- the search of the list (reconcile: search), on conformance/mock_search.py's fake; the
# behaviours every search shares (errors, unreadable pages, the budget) run in
# conformance/test_search.py.

def lists(router: Router) -> int:
    return router.count("GET", r"127\.0\.0\.1/v1/renders")


async def test_a_submitted_render_is_found_after_the_list_delay(client_for: ClientFor) -> None:
    fake = FakeList(delay=1.5, now=T0)
    router = fake.router
    provider = searching(client_for(router))
    req = RenderRequest(prompt="a fox", params={"duration": 4, "model": "mock-2"},
                        client_token="tok-1", job_key="k1")
    render_id = await provider.submit(req)
    assert (await provider.search(T0 - 10, T0 + 10)).records == ()
    fake.now = T0 + provider.settle_seconds
    (record,) = (await provider.search(T0 - 10, T0 + 10)).records
    assert record.provider_job_id == render_id and record.echo == provider.echo(req)
    assert provider.echo(RenderRequest(prompt="a fox", params={"duration": 5},
                                       client_token="tok-1", job_key="k1")) != record.echo
    for call in router.calls:
        assert SENTINEL_KEY not in str(call.url)
        assert call.method == "POST" or "client_token" not in str(call.url)


async def test_paging_stops_at_a_record_older_than_since(client_for: ClientFor) -> None:
    fake = FakeList(page=3, honour_since=False)
    for i in range(12):
        fake.add(f"shot {i}", {"duration": 4}, T0 + i)
    router = fake.router
    result = await searching(client_for(router)).search(T0 + 7, T0 + 20)
    # Pages: 11 10 9 | 8 7 6 -> 6 is older than since: stop, complete.
    assert result.complete and lists(router) == 2
    assert [r.created_at for r in result.records] == [T0 + i for i in range(11, 5, -1)]
    assert "created_after" in str(router.calls[0].url)
    assert "before=mr_10" in str(router.calls[1].url)


async def test_the_end_of_the_list_is_complete_and_the_budget_is_not(
        client_for: ClientFor) -> None:
    fake = FakeList(page=2, honour_since=False)
    for i in range(5):
        fake.add(f"shot {i}", {}, T0 + i)
    provider = searching(client_for(fake.router))
    everything = await provider.search(T0 - 100, T0 + 100)
    assert everything.complete and len(everything.records) == 5
    provider.search_page_budget = 2
    cut = await provider.search(T0 - 100, T0 + 100)
    assert not cut.complete and len(cut.records) == 4


async def test_records_that_cannot_be_compared_have_no_echo(client_for: ClientFor) -> None:
    fake = FakeList(page=10)
    fake.add(None, None, T0)  # inputs removed
    fake.add("p", "not params", T0 + 1)
    fake.add("p", {"duration": 4}, "yesterday")  # type: ignore[arg-type]
    fake.renders[-1]["created_at"] = "yesterday"
    fake.add("p", {"duration": 4}, T0 + 2)
    del fake.renders[-1]["status"]
    router = Router()
    router.add("GET", r"127\.0\.0\.1/v1/renders", lambda req, m: json_response(
        200, {"data": fake.renders, "has_more": False}))
    records = (await searching(client_for(router)).search(T0 - 1, T0 + 10)).records
    assert [r.echo for r in records] == [None, None, {"prompt": "p", "params": {"duration": 4}},
                                         {"prompt": "p", "params": {"duration": 4}}]
    assert [r.created_at for r in records] == [T0, T0 + 1, None, T0 + 2]
    assert records[3].status == ""


@pytest.mark.parametrize("status", [404, 405])
async def test_a_gateway_without_the_list(client_for: ClientFor, status: int) -> None:
    router = Router()
    router.add("GET", r"127\.0\.0\.1/v1/renders", lambda req, m: json_response(
        status, {"error": {"code": "not_found", "message": "No such endpoint."}}))
    provider = searching(client_for(router))
    with pytest.raises(ProviderError) as caught:
        await provider.search(T0, T0 + 1)
    assert caught.value.label is ErrorLabel.SUBMIT_UNKNOWN
    assert not provider.supports_search
    with pytest.raises(ProviderError):
        await provider.search(T0, T0 + 1)
    assert lists(router) == 1  # not asked again


async def test_the_recorded_pages_read_as_records(client_for: ClientFor) -> None:
    pages = [fixture("mock", "list_page_1"), fixture("mock", "list_page_2")]
    router = Router()
    router.add("GET", r"127\.0\.0\.1/v1/renders", lambda req, m: json_response(
        200, pages[1] if "before" in req.url.params else pages[0]))
    provider = searching(client_for(router))
    result = await provider.search(T0 - 3600, T0 + 3600)
    assert result.complete and lists(router) == 2
    assert [r.created_at for r in result.records] == [T0 + 10.25, T0 + 0.25, T0 - 40.5]
    assert "before=" + pages[0]["next_cursor"] in str(router.calls[1].url)
    fox = RenderRequest(prompt="a red fox in the snow", params={"model": "mock-2",
                        "duration": 4}, client_token="tok-9", job_key="k9")
    matches = [r.provider_job_id for r in result.records if r.echo == provider.echo(fox)]
    assert matches == [pages[0]["data"][1]["id"], pages[1]["data"][0]["id"]]  # ours + twin
