"""The mock provider's account view (issue 32 item 2): ``GET /v1/account/view`` over real
loopback HTTP, its default figures, a configured body and the ``--account-view`` option."""

from __future__ import annotations

import dataclasses

import httpx2
import pytest
from mockprovider_helpers import FAST, make_provider, make_request, wait_finished

from reelqueue.domain.account_view import Balance, ModelLimit
from reelqueue.mockprovider import MockProviderServer
from reelqueue.mockprovider.cli import add_arguments, options_from_args
from reelqueue.providers.mock import MockProvider

pytestmark = pytest.mark.integration


async def test_the_default_view_counts_the_renders_of_the_day(
        mp_provider: MockProvider) -> None:
    view = await mp_provider.account_view()
    assert view.balance == Balance(100.0, "credits")
    assert view.limits == (ModelLimit("mock-1", 4, 500, "utc_day", 0),
                           ModelLimit("mock-2", 2, 100, "utc_day", 0))
    assert view.problem is None
    job_id = await mp_provider.submit(make_request())
    await wait_finished(mp_provider, job_id)
    assert (await mp_provider.account_view()).limits[0].used_today == 1


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
