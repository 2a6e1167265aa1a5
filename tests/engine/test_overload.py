"""Overload slows starting, never finishing (DESIGN.md invariant 16, issue 33 item 1):
while the engine's event loop lags, or its finished renders wait for their downloads, the
pump claims at most a few jobs a pass and looks again soon; the renders already running go
on and every job still completes."""

from __future__ import annotations

import asyncio
import random
from collections.abc import AsyncIterator
from dataclasses import replace
from pathlib import Path

import pytest

from reelqueue.domain.errors import ErrorClass, ErrorLabel, ProviderError
from reelqueue.domain.models import AccountSpec
from reelqueue.domain.states import JobState
from reelqueue.engine.engine import Engine
from reelqueue.engine.load import DownloadBacklog, LoopGauge
from reelqueue.providers.base import RemoteStatus
from reelqueue.store.memory import MemoryStore
from tests.engine.fakes import FakeProvider, Script
from tests.engine.test_engine import FAST, add_batch, install

pytestmark = pytest.mark.unit


class StuckGauge(LoopGauge):
    """A loop that lags as long as ``lagging`` says (the test's switch, not the clock)."""

    def __init__(self) -> None:
        super().__init__()
        self.lagging = True

    @property
    def lag(self) -> float:
        return 2.0 if self.lagging else 0.0


class StuckBacklog(DownloadBacklog):
    """Downloads behind as long as ``behind`` says (the test's switch)."""

    def __init__(self) -> None:
        super().__init__()
        self.behind = True

    def overloaded(self, limit: int) -> bool:
        return self.behind


async def _engine(tmp_path: Path, gauge: LoopGauge,
                  backlog: DownloadBacklog | None = None) -> tuple[Engine, FakeProvider,
                                                                   MemoryStore]:
    provider = FakeProvider()
    provider.gate = asyncio.Event()  # renders stay running until the test opens it
    store = MemoryStore()
    add_batch(store, tmp_path, [f"p{i}" for i in range(12)])
    store.add_account(AccountSpec("a", "fake", 10), 0)
    config = replace(FAST, overload_claims_per_pass=1, overload_retry_seconds=60.0)
    engine = Engine(store, providers=install(provider), config=config,
                    rng=random.Random(1), gauge=gauge)
    if backlog is not None:
        engine._ctx.downloads = backlog
    await engine.start()
    return engine, provider, store


async def _first_pass(engine: Engine, provider: FakeProvider, live: int) -> None:
    """Until the first pass is done and ``live`` renders were created (progress, not
    time)."""
    while engine._passes < 1 or provider.live < live:
        await asyncio.sleep(0.005)


async def test_a_lagging_loop_slows_claims_and_every_render_still_finishes(
        tmp_path: Path) -> None:
    gauge = StuckGauge()
    engine, provider, store = await _engine(tmp_path, gauge)
    try:
        await asyncio.wait_for(_first_pass(engine, provider, 1), 10)
        assert engine._last_pass_claims == 1, "one claim a pass while the loop lags"
        assert engine._braked and provider.max_live <= engine._passes, "one a pass at most"
        gauge.lagging = False  # the loop catches up: the renders finish, claims resume
        assert provider.gate is not None
        provider.gate.set()
        engine.wake()
        await asyncio.wait_for(engine.run_until_drained(), 30)
        assert {j.state for j in store.list_jobs()} == {JobState.COMPLETED}
    finally:
        await engine.stop()


async def test_downloads_behind_slow_claims_and_every_render_still_finishes(
        tmp_path: Path) -> None:
    gauge, backlog = StuckGauge(), StuckBacklog()
    gauge.lagging = False  # the loop keeps up: only the downloads are behind
    engine, provider, store = await _engine(tmp_path, gauge, backlog)
    try:
        await asyncio.wait_for(_first_pass(engine, provider, 1), 10)
        assert engine._last_pass_claims == 1, "one claim a pass while downloads are behind"
        assert engine._braked and provider.max_live <= engine._passes, "one a pass at most"
        backlog.behind = False  # the downloads caught up: claims resume, all finish
        assert provider.gate is not None
        provider.gate.set()
        engine.wake()
        await asyncio.wait_for(engine.run_until_drained(), 30)
        assert {j.state for j in store.list_jobs()} == {JobState.COMPLETED}
    finally:
        await engine.stop()


class HeldDownloads(FakeProvider):
    """Downloads wait for ``release``; ``entered`` counts the downloads begun."""

    def __init__(self, scripts: dict[str, Script] | None = None) -> None:
        super().__init__(scripts)
        self.release = asyncio.Event()
        self.entered = 0

    async def download(self, provider_job_id: str,
                       status: RemoteStatus) -> AsyncIterator[bytes]:
        self.entered += 1
        await self.release.wait()
        async for chunk in super().download(provider_job_id, status):
            yield chunk


async def test_the_backlog_counts_renders_ended_until_their_file_is_written(
        tmp_path: Path) -> None:
    """From a render's end seen to its file on disk, whether the download succeeds or
    fails: the count the pump's brake reads."""
    failing = ProviderError("connection reset", error_class=ErrorClass.RETRYABLE,
                            label=ErrorLabel.DOWNLOAD_FAILED)
    provider = HeldDownloads({"p1": Script(download_errors=[failing])})
    store = MemoryStore()
    add_batch(store, tmp_path, ["p0", "p1", "p2"])
    store.add_account(AccountSpec("a", "fake", 10), 0)
    engine = Engine(store, providers=install(provider), config=FAST, rng=random.Random(1),
                    gauge=LoopGauge())
    await engine.start()
    try:
        while provider.entered < 3:  # every render ended, its download held (progress)
            await asyncio.sleep(0.005)
        assert engine._ctx.downloads.count == 3
        provider.release.set()
        await asyncio.wait_for(engine.run_until_drained(), 30)
        assert {j.state for j in store.list_jobs()} == {JobState.COMPLETED}
        assert engine._ctx.downloads.count == 0 and engine._ctx.downloads.most == 3
    finally:
        await engine.stop()


async def test_a_loop_that_keeps_up_fills_every_slot_at_once(tmp_path: Path) -> None:
    gauge = StuckGauge()
    gauge.lagging = False
    engine, provider, store = await _engine(tmp_path, gauge)
    try:
        await asyncio.wait_for(_first_pass(engine, provider, 10), 10)
        assert engine._passes >= 1 and provider.max_live == 10 and not engine._braked
        assert provider.gate is not None
        provider.gate.set()
        await asyncio.wait_for(engine.run_until_drained(), 30)
        assert {j.state for j in store.list_jobs()} == {JobState.COMPLETED}
    finally:
        await engine.stop()


async def test_the_gauge_reads_the_loops_own_lateness() -> None:
    gauge = LoopGauge(interval=0.01, window=50)
    gauge.start()
    try:
        while len(gauge._recent) < 2:  # readings come as the loop turns
            await asyncio.sleep(0.01)
        import time
        time.sleep(0.3)  # the loop is held: the next reading comes back late
        before = len(gauge._recent)
        while len(gauge._recent) == before:
            await asyncio.sleep(0.01)
        assert gauge.lag >= 0.25 and gauge.overloaded(0.2)
    finally:
        await gauge.stop()
