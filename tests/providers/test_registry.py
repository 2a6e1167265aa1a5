"""The provider registry: immutable, passed in, each engine with its own."""

from __future__ import annotations

import asyncio
import random
from dataclasses import replace
from pathlib import Path

import pytest

from reelqueue.application.builtin_mock import BuiltinMock
from reelqueue.application.compose import provider_registry
from reelqueue.domain.errors import InputError
from reelqueue.domain.models import AccountSpec, BatchSpec, JobSpec
from reelqueue.domain.states import JobState
from reelqueue.engine.config import BackoffPolicy, EngineConfig
from reelqueue.engine.engine import Engine
from reelqueue.mockprovider.options import MockOptions
from reelqueue.mockprovider.server import MockProviderServer
from reelqueue.providers.base import ParamSpec
from reelqueue.providers.builtin import BUILTIN_PROVIDERS, builtin_registry
from reelqueue.providers.registry import ProviderInfo, ProviderRegistry
from reelqueue.store.memory import MemoryStore

FAST = EngineConfig(retry_backoff=BackoffPolicy(0.001, 0.01), poll_backoff=BackoffPolicy(
    0.001, 0.01), poll_min_seconds=0.0005, heartbeat_seconds=0.05)


def fake(kind: str) -> ProviderInfo:
    return ProviderInfo(kind, f"Fake {kind}", lambda client, config: None,  # type: ignore[arg-type,return-value]
                        ParamSpec(), None, requires_key=False)


def test_get_names_the_known_providers_for_an_unknown_kind() -> None:
    registry = ProviderRegistry([fake("b"), fake("a")])
    assert registry.kinds() == ["a", "b"]
    assert registry.get("a").title == "Fake a"
    with pytest.raises(InputError) as error:
        registry.get("zz")
    assert str(error.value) == "Unknown provider 'zz'. Known providers: a, b."


def test_a_kind_given_twice_is_refused() -> None:
    with pytest.raises(ValueError, match="'a' given twice"):
        ProviderRegistry([fake("a"), fake("a")])


def test_derived_registries_leave_the_original_alone() -> None:
    base = ProviderRegistry([fake("a")])
    moved = base.with_base_url("a", "http://127.0.0.1:9")
    added = base.with_provider(fake("b"))
    assert moved.get("a").default_base_url == "http://127.0.0.1:9"
    assert base.get("a").default_base_url is None
    assert added.kinds() == ["a", "b"] and base.kinds() == ["a"]
    replaced = added.with_provider(replace(fake("a"), title="Other"))
    assert replaced.get("a").title == "Other" and added.get("a").title == "Fake a"
    with pytest.raises(TypeError):
        base.infos["c"] = fake("c")  # type: ignore[index]
    with pytest.raises(InputError):
        base.with_base_url("nope", "http://127.0.0.1:9")


def test_the_builtin_registry_is_one_immutable_object() -> None:
    assert builtin_registry() is builtin_registry()
    assert [info.kind for info in builtin_registry()] == [i.kind for i in BUILTIN_PROVIDERS]


def test_the_builtin_mock_overrides_its_url_in_a_new_registry_only() -> None:
    """Over the registry in use (built-ins and the plug-ins installed: the sample plug-in
    in the test environment), whatever ran before (it failed alone, comparing with the
    built-ins only)."""
    in_use = provider_registry()
    mock = BuiltinMock(MockOptions(render_seconds_min=0.01, render_seconds_max=0.01))
    assert mock.providers() is in_use  # not running: nothing to override
    try:
        url = mock.ensure()
        providers = mock.providers()
        assert providers.get("mock").default_base_url == url
        assert in_use.get("mock").default_base_url is None
        assert builtin_registry().get("mock").default_base_url is None
    finally:
        mock.stop()
    assert mock.providers() is in_use


async def test_two_engines_render_with_their_own_mock_address(tmp_path: Path) -> None:
    """Two mock servers, two engines, one account each without a URL: each engine's
    registry sends its jobs to its own server (a global patch would send both to one)."""
    options = MockOptions(render_seconds_min=0.01, render_seconds_max=0.02)
    with MockProviderServer(options) as first, MockProviderServer(options) as second:
        results = []
        for name, server in (("one", first), ("two", second)):
            store = MemoryStore()
            batch = store.create_batch(BatchSpec("b", "s.csv", str(tmp_path / name)), 0)
            store.add_jobs(batch.id, [JobSpec(f"{name}-k", "p", "mock",
                                              str(tmp_path / name / "v.mp4"))], 0)
            store.add_account(AccountSpec("acct", "mock", 1), 0)
            engine = Engine(store, config=FAST, rng=random.Random(1),
                            providers=builtin_registry().with_base_url("mock", server.url))
            await engine.start()
            results.append(await asyncio.wait_for(engine.run_until_drained(), 30))
            await engine.stop()
            job = store.get_job(1)
            assert job is not None and job.state == JobState.COMPLETED, job
            engine.close_store()
        assert [r.outcome for r in results] == ["drained", "drained"]
        assert first.counters()["creates_by_job_key"] == {"one-k": 1}
        assert second.counters()["creates_by_job_key"] == {"two-k": 1}
