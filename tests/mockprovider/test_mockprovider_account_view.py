"""The mock provider's account view (issue 32 item 2): ``GET /v1/account/view`` over real
loopback HTTP, its default figures, a configured body and the ``--account-view`` option."""

from __future__ import annotations

import dataclasses

import httpx2
import pytest
from mockprovider_helpers import FAST, make_provider

from reelqueue.domain.account_view import Balance, ModelLimit
from reelqueue.mockprovider import MockProviderServer
from reelqueue.mockprovider.cli import add_arguments, options_from_args
from reelqueue.providers.mock import MockProvider

pytestmark = pytest.mark.integration


async def test_the_default_view_is_a_balance_and_no_limit(mp_provider: MockProvider) -> None:
    """No per-model limit by default: the claim obeys published limits (issue 32 item 3),
    and a default of 4 at once held every mock account of capacity 6 to 4."""
    view = await mp_provider.account_view()
    assert view.balance == Balance(100.0, "credits")
    assert view.limits == ()
    assert view.problem is None


async def test_a_configured_limit_is_read(mp_client: httpx2.AsyncClient) -> None:
    body = {"balance": {"amount": 100, "unit": "credits"},
            "models": {"mock-1": {"concurrency": 4, "daily": 500, "daily_window": "utc_day",
                                  "used_today": 3}}}
    with MockProviderServer(dataclasses.replace(FAST, account_view=body)) as server:
        view = await make_provider(mp_client, server.url).account_view()
    assert view.limits == (ModelLimit("mock-1", 4, 500, "utc_day", 3),)


async def test_a_configured_view_is_answered_as_given(mp_client: httpx2.AsyncClient) -> None:
    body = {"organization_id": "org-a", "balance": {"amount": -3, "unit": "credits"},
            "models": {"mock-2": {"concurrency": 0, "daily": 5}}}
    with MockProviderServer(dataclasses.replace(FAST, account_view=body)) as server:
        view = await make_provider(mp_client, server.url).account_view()
    assert view.organization_id == "org-a"
    assert view.balance is None and view.problem == "balance is negative"
    assert view.limits == (ModelLimit("mock-2", 0, 5, "unknown", None),)


def test_the_account_view_option() -> None:
    import argparse

    parser = argparse.ArgumentParser()
    add_arguments(parser)
    args = parser.parse_args(["--account-view", '{"balance": {"amount": 7, "unit": "USD"}}'])
    assert options_from_args(args).account_view == {"balance": {"amount": 7, "unit": "USD"}}
    with pytest.raises(SystemExit):
        parser.parse_args(["--account-view", "[1]"])
