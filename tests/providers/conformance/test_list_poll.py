"""The list-poll conformance suite: what every adapter offering ``poll_many`` keeps, on
its provider's own list page (``LIST_POLLS`` in conformance/list_poll.py). One read
answers many renders; each answer is what the render's own poll would read; what cannot
be read is left out or raised, never guessed; the key never shows."""

from __future__ import annotations

import importlib
from typing import Any

import httpx2
import pytest
from provider_fakes import (
    SENTINEL_KEY,
    ClientFor,
    Router,
    all_texts,
    fixture,
    json_response,
)

from conformance.facts import ListPollFacts
from conformance.list_poll import LIST_POLLS
from reelqueue.domain.errors import ProviderError
from reelqueue.providers.base import (
    ListPollProvider,
    ProviderConfig,
    RemoteStatus,
    list_poll_of,
)

every = pytest.mark.parametrize("facts", LIST_POLLS, ids=str)
UNKNOWN_ID = "not_a_render_of_this_account"


def _serving(facts: ListPollFacts, page: Any, client_for: ClientFor) -> tuple[Router, Any]:
    router = Router()
    router.add("GET", facts.route, lambda request, match: json_response(200, page))
    return router, facts.make(client_for(router))


def _read(status: RemoteStatus) -> tuple[Any, ...]:
    """What a render's answer says (the error by class, label and words; not the hint)."""
    error = status.error
    return (status.phase, status.sub_status, status.progress, status.video_url,
            status.cost, None if error is None else (error.error_class, error.label,
                                                     str(error)))


@every
async def test_one_read_answers_every_listed_render(facts: ListPollFacts,
                                                    client_for: ClientFor) -> None:
    """LIST-POLL-ONE-READ (the ids found, each in the phase its list item says)"""
    router, provider = _serving(facts, fixture(facts.provider, facts.page), client_for)
    assert isinstance(provider, ListPollProvider) and list_poll_of(provider) is provider
    found = await provider.poll_many([*facts.phases, UNKNOWN_ID])
    assert {i: s.phase for i, s in found.items()} == dict(facts.phases)
    assert [c.method for c in router.calls] == ["GET"]
    assert SENTINEL_KEY not in str(router.calls[0].url)


@every
async def test_each_answer_is_what_its_own_poll_reads(facts: ListPollFacts,
                                                      client_for: ClientFor) -> None:
    """LIST-POLL-SAME-PARSER (a list item read as the same item answered to a poll)"""
    page = fixture(facts.provider, facts.page)
    router, provider = _serving(facts, page, client_for)
    for item in page[facts.items]:
        router.add("GET", facts.poll(item["id"]),
                   lambda request, match, item=item: json_response(
                       200, facts.poll_answer(item)))
    found = await provider.poll_many(list(facts.phases))
    for render_id in facts.phases:
        assert _read(found[render_id]) == _read(await provider.poll(render_id)), render_id


@every
async def test_paging_stops_within_the_budget(facts: ListPollFacts,
                                              client_for: ClientFor) -> None:
    """LIST-POLL-PAGES (a list that always says more: at most the budget, what was found)"""
    router, provider = _serving(facts, facts.more(fixture(facts.provider, facts.page)),
                                client_for)
    found = await provider.poll_many([*facts.phases, UNKNOWN_ID])
    assert set(found) == set(facts.phases)
    assert 1 <= len(router.calls) <= facts.budget


@every
async def test_a_refused_or_unreadable_read_raises_without_the_key(
        facts: ListPollFacts, client_for: ClientFor) -> None:
    """LIST-POLL-ERRORS (as a poll: classified, the key never shown; unknown is no answer)"""
    for status, body, error_class, label in facts.errors:
        router, provider = _serving(facts, None, client_for)
        router.script("GET", facts.route, json_response(status, body))
        with pytest.raises(ProviderError) as raised:
            await provider.poll_many(list(facts.phases))
        assert (raised.value.error_class, raised.value.label) == (error_class, label), status
        assert SENTINEL_KEY not in all_texts(raised.value)
    for content in facts.unreadable:
        router, provider = _serving(facts, None, client_for)
        router.script("GET", facts.route, httpx2.Response(200, content=content))
        with pytest.raises(ProviderError) as raised:
            await provider.poll_many(list(facts.phases))
        assert SENTINEL_KEY not in all_texts(raised.value), content


@every
async def test_an_unreadable_item_is_never_answered(facts: ListPollFacts,
                                                    client_for: ClientFor) -> None:
    """LIST-POLL-BAD-ITEM (left out, or the whole read raises: never a guessed state)"""
    for bad in facts.bad_items:
        page = fixture(facts.provider, facts.page)
        target = next(item for item in page[facts.items]
                      if item.get("video_url") or item.get("status") in ("completed",
                                                                      "succeeded"))
        target_id = facts.render_id(target["id"])
        bad(target)
        _, provider = _serving(facts, page, client_for)
        try:
            found = await provider.poll_many(list(facts.phases))
        except ProviderError as exc:
            assert SENTINEL_KEY not in all_texts(exc)
            continue
        assert target_id not in found
        assert set(found) == set(facts.phases) - {target_id}


@every
async def test_a_host_without_the_list_stops_list_polling(facts: ListPollFacts,
                                                          client_for: ClientFor) -> None:
    """LIST-POLL-OFF (the read raises; the engine then polls that account one by one)"""
    status, body = facts.off
    router, provider = _serving(facts, None, client_for)
    router.script("GET", facts.route, json_response(status, body))
    with pytest.raises(ProviderError):
        await provider.poll_many(list(facts.phases))
    assert list_poll_of(provider) is None


@pytest.mark.parametrize("kind", ["kling", "luma_legacy"])
def test_a_list_of_no_stated_order_offers_no_list_poll(kind: str,
                                                        client_for: ClientFor) -> None:
    """LIST-POLL-NO-ORDER (docs/providers.md: a bounded read of a list in no stated order
    cannot be promised to hold the renders in flight; each render is polled alone)"""
    adapter = importlib.import_module(f"reelqueue.providers.adapters.{kind}")
    provider = adapter.create(client_for(Router()), ProviderConfig("acct", None, SENTINEL_KEY))
    assert list_poll_of(provider) is None
