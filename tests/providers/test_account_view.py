"""The account view (issue 32 item 2) read by the Runway, Luma (legacy) and mock adapters
from official-shaped answers, and every bad figure of the issue's list turned into
"unavailable" with a reason, the usable figures beside it kept, never a crash."""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import UTC, date, datetime, timedelta
from email.utils import format_datetime
from typing import Any

import httpx2
import pytest
from provider_fakes import SENTINEL_KEY, ClientFor, Router, fixture, json_response

from reelqueue.domain.errors import ErrorLabel, ProviderError
from reelqueue.providers.adapters import luma_legacy, runway
from reelqueue.providers.adapters._account import MAX_VIEW_BYTES
from reelqueue.providers.base import (
    AccountView,
    AccountViewProvider,
    Balance,
    ModelLimit,
    ProviderConfig,
    account_view_of,
)
from reelqueue.providers.mock import MockProvider

pytestmark = pytest.mark.unit

RUNWAY = "api.dev.runwayml.com"
LUMA = "api.lumalabs.ai"
MOCK = "127.0.0.1"


def _config(account: str = "acct", base_url: str | None = None,
            **settings: Any) -> ProviderConfig:
    return ProviderConfig(account, base_url, SENTINEL_KEY, settings)


def _raw(status: int, text: str, headers: dict[str, str] | None = None) -> httpx2.Response:
    return httpx2.Response(status, content=text.encode(), headers={
        "content-type": "application/json", **(headers or {})})


async def _runway_view(client_for: ClientFor, body: Any, *,
                       headers: dict[str, str] | None = None) -> AccountView:
    router = Router()
    text = body if isinstance(body, str) else json.dumps(body)
    router.add("GET", rf"{RUNWAY}/v1/organization", lambda r, m: _raw(200, text, headers))
    provider = runway.RunwayProvider(client_for(router), _config())
    view_provider = account_view_of(provider)
    assert view_provider is not None
    return await view_provider.account_view()


async def test_runway_reads_balance_limits_and_usage_from_its_organization_answer(
        client_for: ClientFor) -> None:
    date = datetime.now(UTC).replace(microsecond=0) - timedelta(seconds=7)
    view = await _runway_view(client_for, fixture("runway", "organization_view"),
                              headers={"Date": format_datetime(date, usegmt=True)})
    assert view.account == "acct"
    assert view.balance == Balance(4200.0, "credits")
    assert view.limits == (
        ModelLimit("gen4.5", 2, 50, "rolling_24h", 12),
        ModelLimit("gen4_turbo", 2, 50, "rolling_24h", 0),  # no usage entry: none today
        ModelLimit("veo3.1", 1, 10, "rolling_24h", 0),
    ), "models ReelQueue does not render (gen4_image, eleven_v3) are left out"
    assert view.organization_id is None, "Runway publishes none in this answer"
    assert view.read_at == date.timestamp(), "read_at is the provider's Date header"
    assert view.problem is None


async def test_runway_reuses_the_key_checks_own_answer(client_for: ClientFor) -> None:
    router = Router()
    router.add("GET", rf"{RUNWAY}/v1/organization",
               lambda r, m: json_response(200, fixture("runway", "organization_view")))
    provider = runway.RunwayProvider(client_for(router), _config())
    await provider.check_key()
    view = await provider.account_view()
    assert view.balance == Balance(4200.0, "credits")
    assert router.count("GET", rf"{RUNWAY}/v1/organization") == 1, "one request, not two"
    await provider.account_view()
    assert router.count("GET", rf"{RUNWAY}/v1/organization") == 2, "used once, then read"


def _bad(mutate: Callable[[dict[str, Any]], None]) -> dict[str, Any]:
    body: dict[str, Any] = fixture("runway", "organization_view")
    mutate(body)
    return body


def _tier(model: str, **fields: Any) -> Callable[[dict[str, Any]], None]:
    return lambda body: body["tier"]["models"][model].update(fields)


@pytest.mark.parametrize(("body", "why"), [
    (_bad(lambda b: b.pop("creditBalance")), "credit balance missing"),
    (_bad(lambda b: b.update(creditBalance="4200")), "credit balance is not a number"),
    (_bad(lambda b: b.update(creditBalance=True)), "credit balance is not a number"),
    (_bad(lambda b: b.update(creditBalance=-5)), "credit balance is negative"),
    (_bad(lambda b: b.update(creditBalance=1e300)), "credit balance is absurdly large"),
    (_bad(lambda b: b.update(currency="EUR")), "credit balance is in another currency (EUR)"),
], ids=["missing", "string", "bool", "negative", "absurd", "other-currency"])
async def test_runway_an_unusable_balance_is_unavailable_and_the_limits_are_kept(
        client_for: ClientFor, body: dict[str, Any], why: str) -> None:
    view = await _runway_view(client_for, body)
    assert view.balance is None
    assert view.problem == why
    assert view.limits[0] == ModelLimit("gen4.5", 2, 50, "rolling_24h", 12)


async def test_runway_a_nan_balance_is_unavailable(client_for: ClientFor) -> None:
    text = json.dumps(fixture("runway", "organization_view")).replace(
        '"creditBalance": 4200', '"creditBalance": NaN')
    view = await _runway_view(client_for, text)
    assert view.balance is None and view.problem == "credit balance is not a number"
    assert view.limits, "the limits beside it are kept"


@pytest.mark.parametrize(("mutate", "expected", "why"), [
    (_tier("gen4.5", maxConcurrentGenerations=0), ModelLimit("gen4.5", 0, 50, "rolling_24h", 12),
     None),
    (_tier("gen4.5", maxConcurrentGenerations="2"),
     ModelLimit("gen4.5", None, 50, "rolling_24h", 12), "gen4.5 concurrency is not a number"),
    (_tier("gen4.5", maxDailyGenerations=-1), ModelLimit("gen4.5", 2, None, "rolling_24h", 12),
     "gen4.5 daily limit is negative"),
    (_tier("gen4.5", maxDailyGenerations=10**12),
     ModelLimit("gen4.5", 2, None, "rolling_24h", 12), "gen4.5 daily limit is absurdly large"),
    (_tier("gen4.5", maxDailyGenerations=2.5),
     ModelLimit("gen4.5", 2, None, "rolling_24h", 12), "gen4.5 daily limit is not a whole number"),
    (lambda b: b["tier"]["models"]["gen4.5"].pop("maxDailyGenerations"),
     ModelLimit("gen4.5", 2, None, "rolling_24h", 12), "gen4.5 daily limit missing"),
    (lambda b: b["usage"]["models"]["gen4.5"].update(dailyGenerations=None),
     ModelLimit("gen4.5", 2, 50, "rolling_24h", None), "gen4.5 generations today missing"),
    (lambda b: b.pop("usage"), ModelLimit("gen4.5", 2, 50, "rolling_24h", None),
     "usage missing"),
    (lambda b: b.update(usage={"models": "none"}),
     ModelLimit("gen4.5", 2, 50, "rolling_24h", None), "usage missing"),
], ids=["zero-shown", "string", "negative", "absurd", "fraction", "missing", "usage-null",
        "usage-missing", "usage-unreadable"])
async def test_runway_each_unusable_limit_is_none_with_why_the_rest_kept(
        client_for: ClientFor, mutate: Callable[[dict[str, Any]], None],
        expected: ModelLimit, why: str | None) -> None:
    view = await _runway_view(client_for, _bad(mutate))
    assert view.limits[0] == expected
    assert view.problem == why
    assert view.balance == Balance(4200.0, "credits")


async def test_runway_missing_tier_and_unknown_models_only(client_for: ClientFor) -> None:
    view = await _runway_view(client_for, {"creditBalance": 10, "usage": {"models": {}}})
    assert view.limits == () and view.problem == "tier limits missing"
    view = await _runway_view(client_for, {"creditBalance": 10, "usage": {"models": {}},
                                           "tier": {"models": {"gen4_image": {
                                               "maxConcurrentGenerations": 1,
                                               "maxDailyGenerations": 1}}}})
    assert view.limits == () and view.problem is None, "an unknown model is not a problem"


@pytest.mark.parametrize(("text", "why"), [
    ("[1, 2]", "the answer was not a JSON object"),
    ("<html>", "the answer was not readable JSON"),
    ('{"creditBalance": 1, "pad": "' + "x" * (MAX_VIEW_BYTES + 10) + '"}',
     f"the answer was longer than {MAX_VIEW_BYTES // 1024} KiB"),
], ids=["list", "html", "oversized"])
async def test_runway_an_unreadable_or_oversized_answer_gives_no_figure(
        client_for: ClientFor, text: str, why: str) -> None:
    view = await _runway_view(client_for, text)
    assert view.balance is None and view.limits == () and view.problem == why


async def test_runway_an_error_answer_raises_its_class_rate_limit_included(
        client_for: ClientFor) -> None:
    router = Router()
    router.add("GET", rf"{RUNWAY}/v1/organization",
               lambda r, m: json_response(429, {"error": "slow down"},
                                          {"Retry-After": "120"}))
    provider = runway.RunwayProvider(client_for(router), _config())
    with pytest.raises(ProviderError) as caught:
        await provider.account_view()
    assert caught.value.label == ErrorLabel.RATE_LIMITED
    assert caught.value.retry_after == 120.0


async def test_a_date_header_far_from_our_clock_is_not_believed(
        client_for: ClientFor) -> None:
    far = datetime(2099, 1, 1, tzinfo=UTC)
    before = datetime.now(UTC).timestamp()
    view = await _runway_view(client_for, fixture("runway", "organization_view"),
                              headers={"Date": format_datetime(far, usegmt=True)})
    assert before - 1 <= view.read_at <= datetime.now(UTC).timestamp() + 1


# -- Luma (legacy) --------------------------------------------------------------------

async def _luma_view(client_for: ClientFor, text: str) -> AccountView:
    router = Router()
    router.add("GET", rf"{LUMA}/dream-machine/v1/credits", lambda r, m: _raw(200, text))
    provider = luma_legacy.LumaLegacyProvider(client_for(router), _config())
    assert isinstance(provider, AccountViewProvider)
    return await provider.account_view()


async def test_luma_legacy_reads_its_balance_in_usd_cents(client_for: ClientFor) -> None:
    view = await _luma_view(client_for, json.dumps(fixture("luma_legacy", "credits")))
    assert view.balance == Balance(12.5, "USD"), "1250.0 USD cents"
    assert view.limits == () and view.organization_id is None and view.problem is None


@pytest.mark.parametrize(("text", "why"), [
    ("{}", "credit balance missing"),
    ('{"credit_balance": "12"}', "credit balance is not a number"),
    ('{"credit_balance": NaN}', "credit balance is not a number"),
    ('{"credit_balance": -1}', "credit balance is negative"),
    ('{"credit_balance": 1e20}', "credit balance is absurdly large"),
    ('{"credit_balance": 100, "currency": "EUR"}',
     "credit balance is in another currency (EUR)"),
], ids=["missing", "string", "nan", "negative", "absurd", "other-currency"])
async def test_luma_legacy_an_unusable_balance_is_unavailable(
        client_for: ClientFor, text: str, why: str) -> None:
    view = await _luma_view(client_for, text)
    assert view.balance is None and view.problem == why


async def test_luma_legacy_reuses_the_key_checks_own_answer(client_for: ClientFor) -> None:
    router = Router()
    router.add("GET", rf"{LUMA}/dream-machine/v1/credits",
               lambda r, m: json_response(200, fixture("luma_legacy", "credits")))
    provider = luma_legacy.LumaLegacyProvider(client_for(router), _config())
    await provider.check_key()
    assert (await provider.account_view()).balance == Balance(12.5, "USD")
    assert router.count("GET", rf"{LUMA}/dream-machine/v1/credits") == 1


# -- the built-in mock ----------------------------------------------------------------

def _today() -> date:
    """Today (UTC) when the test runs, not when the module was imported: a run that
    crosses midnight must not send yesterday as today."""
    return datetime.now(UTC).date()


async def _mock_view(client_for: ClientFor, body: Any, **settings: Any) -> AccountView:
    router = Router()
    router.add("GET", rf"{MOCK}/v1/account/view",
               lambda r, m: _raw(200, json.dumps(body)))
    provider = MockProvider(client_for(router),
                            _config(base_url="http://127.0.0.1:9", **settings))
    return await provider.account_view()


def _mock_body(**model: Any) -> dict[str, Any]:
    return {"organization_id": "org-1", "balance": {"amount": 50, "unit": "credits"},
            "models": {"mock-1": {"concurrency": 3, "daily": 20, "daily_window": "utc_day",
                                  "used_today": 4, "day": _today().isoformat(), **model},
                       "mock-9": {"concurrency": 1, "daily": 1}}}


async def test_mock_reads_balance_limits_usage_and_organization(client_for: ClientFor) -> None:
    view = await _mock_view(client_for, _mock_body())
    assert view.balance == Balance(50.0, "credits")
    assert view.limits == (ModelLimit("mock-1", 3, 20, "utc_day", 4),), "mock-9 is unknown"
    assert view.organization_id == "org-1" and view.problem is None


async def test_mock_usage_for_a_future_day_is_unavailable(client_for: ClientFor) -> None:
    tomorrow = (_today() + timedelta(days=2)).isoformat()
    view = await _mock_view(client_for, _mock_body(day=tomorrow))
    assert view.limits == (ModelLimit("mock-1", 3, 20, "utc_day", None),)
    assert view.problem == f"usage of mock-1 is for a future day ({tomorrow})"
    yesterday = (_today() - timedelta(days=1)).isoformat()
    view = await _mock_view(client_for, _mock_body(day=yesterday))
    assert view.limits[0].used_today == 0, "an earlier day's count is not today's"


async def test_mock_an_answer_for_another_organization_gives_no_figure(
        client_for: ClientFor) -> None:
    view = await _mock_view(client_for, _mock_body(), organization_id="org-2")
    assert view.balance is None and view.limits == ()
    assert view.problem == "the answer is for organization org-1, not this account's org-2"
    same = await _mock_view(client_for, _mock_body(), organization_id="org-1")
    assert same.balance == Balance(50.0, "credits")


async def test_mock_other_currency_and_zero_limit(client_for: ClientFor) -> None:
    body = _mock_body(concurrency=0)
    body["balance"] = {"amount": 50, "unit": "EUR"}
    view = await _mock_view(client_for, body)
    assert view.balance is None
    assert view.problem == "balance is in another currency (EUR)"
    assert view.limits[0].concurrency == 0, "a limit of 0 is shown"


def test_an_adapter_without_the_capability_offers_no_view() -> None:
    assert account_view_of(object()) is None


async def test_a_key_echoed_in_the_answer_never_reaches_the_view(client_for: ClientFor) -> None:
    """The view goes to the journal, which never holds a key (invariant 8)."""
    body = _mock_body()
    body["organization_id"] = f"org-{SENTINEL_KEY}"
    body["balance"] = {"amount": 5, "unit": SENTINEL_KEY}
    view = await _mock_view(client_for, body)
    assert SENTINEL_KEY[:8] not in repr(view)
    assert view.balance is None and view.problem is not None
    text = json.dumps(fixture("runway", "organization_view")).replace(
        '"creditBalance": 4200', f'"creditBalance": 1, "currency": "{SENTINEL_KEY}"')
    runway_view = await _runway_view(client_for, text)
    assert SENTINEL_KEY[:8] not in repr(runway_view)
