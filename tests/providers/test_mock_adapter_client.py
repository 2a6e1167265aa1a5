"""The mock provider's adapter speaks through the same ApiClient as the real adapters, so
what the kill and proof tests prove with it (one create, redirects never followed with the
key, bounded and checked downloads, scrubbed texts) holds for the real ones' plumbing."""

from __future__ import annotations

import json
from collections.abc import Callable

import httpx
import pytest
from provider_fakes import SENTINEL_KEY, Router, all_texts, json_response, read_timeout

from reelqueue.domain.errors import ErrorLabel, ProviderError
from reelqueue.providers.base import ProviderConfig, RenderRequest
from reelqueue.providers.mock import MockProvider

BASE = "http://127.0.0.1:9"
ClientFor = Callable[[Router], httpx.AsyncClient]


def adapter(client: httpx.AsyncClient) -> MockProvider:
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


async def test_a_create_that_timed_out_may_have_been_sent(client_for: ClientFor) -> None:
    router = Router()
    router.script("POST", r"127\.0\.0\.1/v1/renders", read_timeout)
    with pytest.raises(ProviderError) as error:
        await adapter(client_for(router)).submit(request())
    assert error.value.body_maybe_sent and router.count("POST", r".*/v1/renders") == 1
    assert SENTINEL_KEY not in all_texts(error.value)


async def test_a_redirect_is_never_followed(client_for: ClientFor) -> None:
    router = Router()
    router.add("GET", r"127\.0\.0\.1/v1/account", lambda req, m: httpx.Response(
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
