"""Provider plug-ins (issue 36 item 2): the loader skips each kind of broken plug-in with its
reason and never lets one shadow a built-in; the contract names no HTTP library; the
built-ins are declared in the entry-point group as builtin.py lists them; a machine without
a job's provider does not claim it; ReelQueue's HTTP session over httpx2."""

from __future__ import annotations

import ast
import asyncio
import random
import tomllib
from dataclasses import replace
from importlib.metadata import EntryPoint
from pathlib import Path
from typing import Any

import httpx2
import pytest
from provider_fakes import SENTINEL_KEY
from tests.every_key import EveryAccountKey

from reelqueue.application import compose
from reelqueue.domain.backoff import BackoffPolicy
from reelqueue.domain.errors import ErrorClass, ErrorLabel, InputError
from reelqueue.domain.models import AccountSpec, BatchSpec, JobSpec
from reelqueue.domain.states import JobState
from reelqueue.engine.config import EngineConfig
from reelqueue.engine.engine import Engine
from reelqueue.providers import http
from reelqueue.providers.base import ParamSpec
from reelqueue.providers.builtin import BUILTIN_PROVIDERS, builtin_registry
from reelqueue.providers.httpx_session import HttpxSession
from reelqueue.providers.plugins import PluginEntry, installed_entries, load_installed, load_plugins
from reelqueue.providers.registry import (
    CONTRACT_VERSION,
    AdapterNotBuilt,
    ProviderInfo,
    build_provider,
)
from reelqueue.store.memory import MemoryStore

ROOT = Path(__file__).resolve().parents[2]
SAMPLE = ROOT / "tests" / "plugins" / "sample"


class _Adapter:
    kind = "good"
    supports_lookup = False

    def __init__(self, session: Any, config: Any) -> None:
        self.session = session

    async def check_key(self) -> None: ...
    async def submit(self, request: Any) -> str: return "x"
    async def poll(self, job_id: str) -> Any: ...
    async def lookup(self, request: Any) -> None: ...
    def download(self, job_id: str, status: Any) -> Any: ...
    async def cancel(self, job_id: str) -> None: ...


GOOD = ProviderInfo(kind="good", title="Good Video API", factory=_Adapter, params=ParamSpec(),
                    default_base_url="https://api.good.example")


def entry(obj: Any, *, name: str = "p", dist: str = "plug-dist", version: str = "1.0",
          load: Any = None) -> PluginEntry:
    return PluginEntry(name=name, value=f"plug_mod:{name}", distribution=dist,
                       version=version, load=load or (lambda: obj))


def _raises(exc: BaseException) -> Any:
    def call(*args: Any) -> Any:
        raise exc
    return call


def reasons(entries: list[PluginEntry]) -> dict[str, str]:
    registry, report = load_plugins(builtin_registry(), entries)
    assert not any(s.entry in registry for s in report.skipped)
    return {s.entry: s.reason for s in report.skipped}


@pytest.mark.expect_warnings("provider plug-in .* skipped")
def test_broken_plug_ins_are_skipped_with_the_reason() -> None:
    missing = EntryPoint("import", "reelqueue_no_such_plugin:INFO", "reelqueue.providers")
    said = reasons([
        entry(None, name="import", load=missing.load),
        entry(None, name="function", load=lambda: _raises(RuntimeError("no config file"))),
        entry("not an info", name="metadata"),
        entry(replace(GOOD, kind="Bad Kind!"), name="kind"),
        entry(replace(GOOD, kind="old", contract=CONTRACT_VERSION + 1), name="contract"),
        entry(replace(GOOD, kind="runway"), name="shadow"),
        entry(replace(GOOD, kind="boom", factory=_raises(TypeError("bug"))), name="factory"),
        entry(replace(GOOD, kind="empty", factory=lambda s, c: object()), name="adapter"),
        entry(None, name="exit", load=_raises(SystemExit(3))),
    ])
    assert "could not be imported (ModuleNotFoundError" in said["import"]
    assert "raised RuntimeError: no config file" in said["function"]
    assert said["metadata"] == "bad metadata: plug_mod:metadata is a str, not a ProviderInfo"
    assert said["kind"].startswith("bad metadata: the kind 'Bad Kind!'")
    assert said["contract"] == (f"written for provider contract version {CONTRACT_VERSION + 1}"
                                f"; this ReelQueue has version {CONTRACT_VERSION}")
    assert "'runway' is a built-in provider's" in said["shadow"]
    assert said["factory"] == "its factory raised TypeError: bug"
    assert said["adapter"].startswith("bad metadata: its factory's adapter lacks check_key")
    assert "could not be imported (SystemExit: 3)" in said["exit"]


@pytest.mark.expect_warnings("provider plug-in .* skipped")
def test_a_good_plug_in_loads_beside_the_built_ins_and_a_second_of_its_kind_is_skipped(
) -> None:
    # A factory that needs a setting it was not given (a ReelQueue error) is fine at load.
    picky = replace(GOOD, kind="picky", factory=_raises(InputError("give it a region")))
    registry, report = load_plugins(builtin_registry(), [
        entry(GOOD, name="good", dist="a-dist", version="2.1"),
        entry(replace(GOOD, title="Copy"), name="copy", dist="b-dist"),
        entry(lambda: picky, name="picky", dist="c-dist")])
    assert registry.get("good").factory is GOOD.factory and "picky" in registry
    assert set(builtin_registry().kinds()) < set(registry.kinds())
    assert [str(p) for p in report.loaded] == ["a-dist 2.1: good (Good Video API)",
                                               "c-dist 1.0: picky (Good Video API)"]
    assert report.skipped[0].reason == "its kind 'good' is already given by the plug-in a-dist"
    assert report.lines()[-1].startswith("plug-in b-dist 1.0 (copy): skipped: its kind")


@pytest.mark.expect_warnings("provider plug-in good: its row rules failed")
def test_a_plug_in_whose_row_rules_fail_refuses_the_row_instead_of_ending_the_import(
) -> None:
    registry, _ = load_plugins(builtin_registry(), [
        entry(replace(GOOD, rules=_raises(ZeroDivisionError("x"))), name="good")])
    problems = registry.get("good").rules({"duration": 5})
    assert [str(p) for p in problems] == [
        "Good Video API (a plug-in) could not check this row (ZeroDivisionError); update or "
        "remove the plug-in."]


@pytest.mark.expect_warnings("provider plug-ins skipped: the installed plug-ins could not")
def test_entry_points_that_cannot_be_read_leave_the_built_ins() -> None:
    registry, report = load_installed(builtin_registry(), _raises(ValueError("bad METADATA")))
    assert registry.kinds() == builtin_registry().kinds()
    assert report.lines() == ["plug-in (installed distributions) (reelqueue.providers): "
                              "skipped: the installed plug-ins could not be listed "
                              "(ValueError: bad METADATA)"]


def test_a_factory_that_fails_at_run_time_is_a_reelqueue_error() -> None:
    info = replace(GOOD, factory=_raises(KeyError("region")))
    with pytest.raises(AdapterNotBuilt, match="Good Video API adapter could not be built for "
                                              "account 'a': KeyError"):
        build_provider(info, HttpxSession(httpx2.AsyncClient()), account="a",
                       base_url=None, api_key="k", settings={})


def test_no_plugins_and_the_environment_switch(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(compose.NO_PLUGINS_ENV, raising=False)
    compose.use_plugin_entries(lambda: [entry(GOOD, name="good")])
    try:
        assert "good" in compose.provider_registry()
        compose.disable_plugins()
        assert "good" not in compose.provider_registry()
        assert compose.plugin_report().lines() == ["plug-ins: off (--no-plugins)"]
        monkeypatch.setenv(compose.NO_PLUGINS_ENV, "0")
        compose.use_plugin_entries(lambda: [entry(GOOD, name="good")])
        assert "good" in compose.provider_registry()
    finally:
        monkeypatch.delenv(compose.NO_PLUGINS_ENV, raising=False)
        compose.use_plugin_entries(None)


def test_the_built_ins_are_declared_in_the_group_as_builtin_py_lists_them() -> None:
    declared = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))[
        "project"]["entry-points"]["reelqueue.providers"]
    listed = {info.kind: info for info in BUILTIN_PROVIDERS}
    assert set(declared) == set(listed)
    for kind, value in declared.items():
        module, attribute = value.split(":")
        point = EntryPoint(kind, value, "reelqueue.providers")
        assert point.load() is listed[kind], value
        assert module.startswith("reelqueue.") and attribute == "INFO"
    # ReelQueue's own declarations are never loaded as plug-ins (builtin.py has them).
    own = [PluginEntry(k, v, "reelqueue", "9", _raises(AssertionError("loaded")))
           for k, v in declared.items()]
    registry, report = load_plugins(builtin_registry(), own)
    assert registry.kinds() == builtin_registry().kinds() and report.loaded == ()


CONTRACT = ["providers/base.py", "providers/http.py", "providers/registry.py",
            "providers/plugins.py", "providers/download_limits.py", "domain/errors.py",
            "domain/states.py"]


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
    return names


def test_the_contract_and_the_sample_plug_in_name_no_http_library() -> None:
    package = ROOT / "app" / "reelqueue"
    for path in [*(package / name for name in CONTRACT),
                 SAMPLE / "reelqueue_sample" / "provider.py"]:
        found = {n for n in _imports(path) if n.split(".")[0] in ("httpx", "httpx2")}
        assert not found, (path, found)
    sample = _imports(SAMPLE / "reelqueue_sample" / "provider.py")
    assert {n for n in sample if n.startswith("reelqueue")} <= {
        "reelqueue.providers.base", "reelqueue.providers.http",
        "reelqueue.providers.registry", "reelqueue.providers.download_limits",
        "reelqueue.domain.errors", "reelqueue.domain.states"}


def test_the_sample_plug_in_is_installed_and_loads() -> None:
    """CI installs tests/plugins/sample (.ci/run); the conformance suite runs on it."""
    registry, report = load_plugins(builtin_registry(), installed_entries())
    assert "sample" in registry, report.lines()
    assert any(p.distribution == "reelqueue-sample-provider" and p.version == "0.1.0"
               for p in report.loaded)


# -- a machine without a job's provider does not claim it ----------------------------------

async def test_a_machine_without_the_provider_does_not_claim_its_jobs(tmp_path: Path) -> None:
    from reelqueue_sample.conformance import FakeSampleApi

    fake = FakeSampleApi(["video_succeeded"])
    store = MemoryStore()
    batch = store.create_batch(BatchSpec("b", "s.csv", str(tmp_path / "out")), 0)
    store.add_jobs(batch.id, [JobSpec("k0", "A paper boat", "sample",
                                      str(tmp_path / "out" / "0.mp4"), row_number=2,
                                      metadata={"price": 0.05})], 0)
    store.add_account(AccountSpec("studio", "sample", 1, None, "ref", {}), 0)
    config = EngineConfig(retry_backoff=BackoffPolicy(0.001, 0.01),
                          poll_backoff=BackoffPolicy(0.001, 0.01), poll_min_seconds=0.0005,
                          heartbeat_seconds=0.05, http_timeout_seconds=0.5)
    with_plugin, _ = load_plugins(builtin_registry(), installed_entries())
    async with httpx2.AsyncClient(transport=httpx2.MockTransport(fake.router)) as client:
        for providers, expected in ((builtin_registry(), "stalled"),
                                    (with_plugin, "drained")):
            engine = Engine(store, config=config, keys=EveryAccountKey(SENTINEL_KEY),
                            http_client=client, rng=random.Random(1), providers=providers)
            try:
                await engine.start()
                result = await asyncio.wait_for(engine.run_until_drained(), 20)
            finally:
                await engine.stop()
            assert result.outcome == expected, result
            if expected == "stalled":  # nothing was claimed, nothing sent
                assert store.list_jobs()[0].state is JobState.QUEUED
                assert store.list_jobs()[0].attempts == 0 and fake.router.calls == []
    assert store.list_jobs()[0].state is JobState.COMPLETED and fake.creates() == 1


# -- ReelQueue's session over httpx2 ------------------------------------------------------

async def test_the_session_reads_bounded_answers_and_converts_transport_errors() -> None:
    def handler(request: httpx2.Request) -> httpx2.Response:
        if request.url.path == "/big":
            return httpx2.Response(200, content=b"x" * 2000)
        if request.url.path == "/connect":
            raise httpx2.ConnectError("refused", request=request)
        if request.url.path == "/slow":
            raise httpx2.ReadTimeout("slow", request=request)
        return httpx2.Response(201, json={"id": "v1"}, headers={"X-Thing": "a"})

    async with httpx2.AsyncClient(transport=httpx2.MockTransport(handler)) as client:
        session = HttpxSession(client)
        assert isinstance(session, http.HttpSession)
        answer = await session.request("POST", "https://api.example/ok", json={"a": 1})
        assert (answer.status_code, answer.json(), answer.headers["x-THING"]) == (
            201, {"id": "v1"}, "a")
        with pytest.raises(http.HttpAnswerTooLarge):
            await session.request("GET", "https://api.example/big", max_bytes=1000)
        with pytest.raises(http.HttpConnectError) as connect:
            await session.request("POST", "https://api.example/connect")
        with pytest.raises(http.HttpTimeout) as slow:
            await session.request("POST", "https://api.example/slow")
        async with session.stream("GET", "https://api.example/big") as stream:
            assert b"".join([c async for c in stream.aiter_bytes()]) == b"x" * 2000
    sent = http.transport_failure(slow.value, during_create=True)
    refused = http.transport_failure(connect.value, during_create=True)
    assert (sent.error_class, sent.label, sent.body_maybe_sent) == (
        ErrorClass.RETRYABLE, ErrorLabel.TIMED_OUT, True)
    assert refused.body_maybe_sent is False
    assert "not read" in str(http.transport_failure(http.HttpAnswerTooLarge(),
                                                    during_create=False))
