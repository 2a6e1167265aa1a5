"""Rules every adapter keeps, checked across all of them at once."""

from __future__ import annotations

import importlib
import inspect
from typing import Any

import pytest
from provider_fakes import SENTINEL_KEY, ClientFor, Router

from reelqueue.domain.errors import ErrorClass, ErrorLabel, InputError, ProviderError
from reelqueue.providers.base import ProviderConfig
from reelqueue.providers.builtin import BUILTIN_PROVIDERS, builtin_registry
from reelqueue.providers.registry import no_rules

KINDS = ["runway", "veo", "luma", "luma-legacy", "fal", "replicate", "minimax", "kling",
         "openai-compat"]

def config(kind: str, base_url: str | None = None, key: str | None = SENTINEL_KEY
           ) -> ProviderConfig:
    if base_url is None and kind == "openai-compat":
        base_url = "https://gateway.example/v1"
    return ProviderConfig("acct", base_url, key, settings={"model": "m"})


# Each kind's own registration facts: base URL (None: none by default) and ParamSpec fields.
REGISTERED: dict[str, tuple[str | None, dict[str, Any]]] = {
    "runway": ("https://api.dev.runwayml.com", {"default_capacity": 1}),
    "veo": ("https://generativelanguage.googleapis.com/v1beta",
            {"durations": (4.0, 6.0, 8.0), "seed": False}),
    "luma": ("https://agents.lumalabs.ai/v1", {
        "models": ("ray-3.2",), "durations": (5.0, 10.0),
        "resolutions": ("720p", "1080p", "540p")}),  # the SDK's list: no 360p
    "luma-legacy": ("https://api.lumalabs.ai/dream-machine/v1", {"max_prompt_chars": 5000}),
    "fal": ("https://queue.fal.run", {"default_capacity": 2}),
    "replicate": ("https://api.replicate.com/v1", {}),
    "minimax": ("https://api.minimax.io", {}),
    "kling": ("https://api-singapore.klingai.com", {"duration_range": (3.0, 15.0)}),
    "openai-compat": (None, {}),
}
FIRST_MODEL = {"runway": "gen4.5", "kling": "kling-v3"}
PRICE = {"runway": ("gen4.5", 0.12), "veo": ("veo-3.1-fast-generate-preview", 0.10)}


@pytest.mark.parametrize("kind", KINDS)
def test_each_kind_is_registered_with_its_module_and_facts(kind: str) -> None:
    """Was test_<provider>.py::test_registered in each adapter's file."""
    module = importlib.import_module(f"reelqueue.providers.adapters.{kind.replace('-', '_')}")
    info = builtin_registry().get(kind)
    assert (info.factory, info.rules) == (module.create, module.extra_validation)
    base_url, params = REGISTERED[kind]
    assert info.default_base_url == base_url
    assert {name: getattr(info.params, name) for name in params} == params
    if kind in FIRST_MODEL:
        assert info.params.models[0] == FIRST_MODEL[kind]
    if kind in PRICE:
        model, usd = PRICE[kind]
        assert info.params.price_per_second[model] == pytest.approx(usd)


def test_every_kind_is_built_in_with_its_own_rules() -> None:
    assert [info.kind for info in BUILTIN_PROVIDERS] == ["mock", *KINDS]
    assert builtin_registry().kinds() == sorted(["mock", *KINDS])
    assert all(builtin_registry().get(kind).rules is not no_rules for kind in KINDS)
    assert builtin_registry().get("mock").rules is no_rules


@pytest.mark.parametrize("kind", KINDS)
def test_param_spec_is_complete(kind: str) -> None:
    info = builtin_registry().get(kind)
    spec = info.params
    assert info.requires_key is True
    assert spec.default_capacity >= 1
    assert spec.price_source  # says where prices come from, or that there are none
    assert set(spec.price_per_second) <= set(spec.models)
    # A variant refines the model's price, or is its only price (MiniMax's Hailuo: only
    # the listed videos; any other row stays unknown rather than a guess).
    assert set(spec.price_variants) <= set(spec.models)
    assert all(usd > 0 for usd in spec.price_per_second.values())
    assert all(v.usd_per_second > 0 for vs in spec.price_variants.values() for v in vs)
    if spec.price_per_second:
        assert "2026-" in spec.price_source  # the date the prices were read
    assert spec.max_prompt_chars > 0
    if info.default_base_url is not None:
        assert info.default_base_url.startswith("https://")
    assert builtin_registry().get(kind).rules({}) == []


@pytest.mark.parametrize("kind", KINDS)
async def test_adapter_shape(kind: str, client_for: ClientFor) -> None:
    info = builtin_registry().get(kind)
    provider = info.factory(client_for(Router()), config(kind))
    assert provider.kind == kind
    assert isinstance(provider.supports_lookup, bool)
    assert provider.supports_lookup is (kind == "kling")
    assert inspect.isasyncgenfunction(type(provider).download)
    assert SENTINEL_KEY not in repr(provider)
    assert SENTINEL_KEY not in str(vars(provider))


@pytest.mark.parametrize("kind", KINDS)
async def test_plain_http_base_url_is_refused_but_loopback_is_not(
    kind: str, client_for: ClientFor
) -> None:
    info = builtin_registry().get(kind)
    client = client_for(Router())
    with pytest.raises(InputError):
        info.factory(client, config(kind, base_url="http://api.example.com"))
    assert info.factory(client, config(kind, base_url="http://127.0.0.1:9000")).kind == kind
    assert info.factory(client, config(kind, base_url="http://localhost:9000")).kind == kind


@pytest.mark.parametrize("kind", KINDS)
async def test_a_missing_key_is_an_account_error(kind: str, client_for: ClientFor) -> None:
    with pytest.raises(ProviderError) as caught:
        builtin_registry().get(kind).factory(client_for(Router()), config(kind, key=None))
    assert (caught.value.error_class, caught.value.label) == (
        ErrorClass.ACCOUNT, ErrorLabel.KEY_REJECTED)


@pytest.mark.parametrize("kind", KINDS)
async def test_nothing_leaves_for_a_row_the_provider_would_reject(
    kind: str, client_for: ClientFor
) -> None:
    from reelqueue.providers.base import RenderRequest

    router = Router()
    provider = builtin_registry().get(kind).factory(client_for(router), config(kind))
    too_long = "x" * (builtin_registry().get(kind).params.max_prompt_chars + 1)
    with pytest.raises(ProviderError) as caught:
        await provider.submit(RenderRequest("k", "t", too_long, {}))
    assert caught.value.error_class is ErrorClass.PERMANENT
    assert router.calls == []
