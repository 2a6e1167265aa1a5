"""The search conformance suite: what every adapter that finds a lost create by listing
the account's renders (reconcile: search) keeps, on each adapter's fake list
(``SEARCH`` in conformance/<provider>_search.py). Unknown is never "none": a search that
could not read everything says so (``complete`` False) or raises an unknown outcome."""

from __future__ import annotations

import logging
from typing import Any

import httpx2
import pytest
from provider_fakes import (
    SENTINEL_KEY,
    ClientFor,
    Router,
    all_texts,
    echo_error,
    fixture,
    json_response,
    read_timeout,
)

from conformance import (
    fal_search,
    luma_legacy_search,
    mock_search,
    openai_compat_search,
    replicate_search,
)
from conformance.facts import SearchFacts
from reelqueue.domain.errors import ErrorClass, ErrorLabel, ProviderError
from reelqueue.providers.base import (
    ReconcileMethod,
    SearchableProvider,
    reconcile_method,
    sends_client_token,
)

SEARCHES = [m.SEARCH for m in (fal_search, replicate_search, luma_legacy_search,
                               openai_compat_search, mock_search)]
every = pytest.mark.parametrize("facts", SEARCHES, ids=str)


def _account(facts: SearchFacts, client_for: ClientFor, count: int) -> tuple[Any, Any]:
    fake = facts.listing(count)
    return fake, facts.make(client_for(fake.router), fake)


def _second_page(router: Router, route: str, answer: Any) -> None:
    """The first page as the fake lists it, then ``answer`` for the second."""
    target = next((rx, handler) for method, rx, handler in router.routes
                  if method == "GET" and rx.pattern == route)
    router.script("GET", route, lambda r: target[1](r, target[0].fullmatch(
        f"{r.url.host}{r.url.path}")))
    router.script("GET", route, answer)


def _lists(router: Router, route: str) -> int:
    return router.count("GET", route)


async def _raised(call: Any) -> ProviderError:
    with pytest.raises(ProviderError) as caught:
        await call
    return caught.value


@every
def test_the_adapter_searches_and_keeps_no_client_token(facts: SearchFacts,
                                                        client_for: ClientFor) -> None:
    """SEARCH-INTERFACE (reconcile by search; the settle time and echo lifetime declared)"""
    fake, provider = _account(facts, client_for, 0)
    assert isinstance(provider, SearchableProvider)
    assert reconcile_method(provider) is ReconcileMethod.SEARCH
    assert sends_client_token(provider) is False
    assert (provider.settle_seconds, provider.echo_keeps_hours) == (facts.settle,
                                                                     facts.keeps_hours)
    assert fake.router.calls == []


@every
async def test_a_refused_first_page_is_classified(facts: SearchFacts,
                                                  client_for: ClientFor) -> None:
    """SEARCH-FIRST-ERROR (as for the adapter's other calls; search stays on; the key, or
    a piece of it, quoted in the refusal is never shown)"""
    for status, name, error_class, label in facts.first_errors:
        fake, provider = _account(facts, client_for, 0)
        body = fixture(facts.provider, name) if isinstance(name, str) else name
        fake.router.script("GET", facts.route, json_response(status, body))
        error = await _raised(provider.search(*facts.window))
        assert (error.error_class, error.label) == (error_class, label), name
        assert SENTINEL_KEY not in all_texts(error) and SENTINEL_KEY[:12] not in all_texts(
            error), name
        assert provider.supports_search is True
    fake, provider = _account(facts, client_for, 0)
    fake.router.script("GET", facts.route, read_timeout)
    assert (await _raised(provider.search(*facts.window))).label is ErrorLabel.TIMED_OUT


@every
async def test_an_error_mid_way_keeps_what_was_read_and_is_incomplete(
    facts: SearchFacts, client_for: ClientFor
) -> None:
    """SEARCH-MIDWAY (a 5xx, a 429, a timeout... on the second page)"""
    for failure in facts.failures:
        fake, provider = _account(facts, client_for, facts.page + facts.page // 2)
        _second_page(fake.router, facts.route, failure())
        result = await provider.search(*facts.window)
        assert result.complete is False
        assert len(result.records) == facts.page
        assert _lists(fake.router, facts.route) == 2
        assert provider.supports_search is True


@every
async def test_the_page_budget_leaves_the_search_incomplete(
    facts: SearchFacts, client_for: ClientFor
) -> None:
    """SEARCH-BUDGET (what was read is still given)"""
    fake, provider = _account(facts, client_for, facts.budget * facts.page + 1)
    result = await provider.search(*facts.window)
    assert result.complete is False
    assert _lists(fake.router, facts.route) == facts.budget
    assert len(result.records) == facts.budget * facts.page


@every
async def test_an_unreadable_page_is_an_unknown_outcome(facts: SearchFacts,
                                                        client_for: ClientFor) -> None:
    """SEARCH-UNREADABLE (the first page or a later one: never "none")"""
    for body in facts.unreadable:
        for page in (1, 2):
            fake, provider = _account(facts, client_for, facts.page + facts.page // 2)
            answer = httpx2.Response(200, content=body)
            if page == 2:
                _second_page(fake.router, facts.route, answer)
            else:
                fake.router.script("GET", facts.route, answer)
            error = await _raised(provider.search(*facts.window))
            assert (error.error_class, error.label, error.body_maybe_sent) == (
                ErrorClass.PERMANENT, ErrorLabel.SUBMIT_UNKNOWN, True), (body, page)
            assert SENTINEL_KEY[:12] not in all_texts(error), (body, page)
            assert _lists(fake.router, facts.route) == page


@every
async def test_a_host_without_the_list_turns_search_off(facts: SearchFacts,
                                                        client_for: ClientFor) -> None:
    """SEARCH-OFF (a gateway that does not implement it: nothing concluded, ever after)"""
    make_off, route = facts.off
    for status in facts.off_statuses:
        router = Router()
        router.script("GET", route, json_response(status, {"detail": "Not Found"}))
        provider = make_off(client_for(router))
        assert reconcile_method(provider) is ReconcileMethod.SEARCH
        error = await _raised(provider.search(*facts.window))
        assert facts.off_label is None or error.label is facts.off_label
        assert error.status_code == status and facts.off_words in str(error), status
        assert provider.supports_search is False
        assert reconcile_method(provider) is ReconcileMethod.NONE


@every
async def test_the_key_is_never_in_a_url_or_an_error(
    facts: SearchFacts, client_for: ClientFor, caplog: pytest.LogCaptureFixture
) -> None:
    """SEARCH-KEY (error pages echoing our request, first or second; a 200 page quoting
    our headers; the key goes to the provider's own hosts only)"""
    caplog.set_level(logging.DEBUG)
    routers: list[Router] = []
    for status in (400, 401, 404, 429, 500):
        for page in (1, 2):
            fake, provider = _account(facts, client_for, facts.page + facts.page // 2)
            routers.append(fake.router)
            answer = lambda r, status=status: echo_error(status, r)  # noqa: E731
            if page == 2:
                _second_page(fake.router, facts.route, answer)
            else:
                fake.router.script("GET", facts.route, answer)
            try:
                result = await provider.search(*facts.window)
            except ProviderError as error:
                assert page == 1 or (facts.off_midway and status in facts.off_statuses), status
                assert SENTINEL_KEY not in all_texts(error), status
            else:
                assert page == 2 and result.complete is False, status
    fake, provider = _account(facts, client_for, 1)
    routers.append(fake.router)
    fake.router.script("GET", facts.route, lambda r: httpx2.Response(
        200, content=b"<html>" + str(dict(r.headers)).encode() + b"</html>"))
    error = await _raised(provider.search(*facts.window))
    assert error.label is ErrorLabel.SUBMIT_UNKNOWN
    assert SENTINEL_KEY not in all_texts(error)
    for call in (call for router in routers for call in router.calls):
        assert SENTINEL_KEY not in str(call.url)
        assert call.url.host in facts.hosts
        assert call.headers["authorization"] == facts.authorization
    assert SENTINEL_KEY not in caplog.text
