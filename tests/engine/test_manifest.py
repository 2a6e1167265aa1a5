"""The batch manifest is the engine's record (issue 23): written by the engine for the
batches it works on, one file per machine, coalesced, atomically replaced (valid JSON at
every moment), with every job's final state, size and sha256 after a run."""

from __future__ import annotations

import asyncio
import dataclasses
import hashlib
import json
import random
import threading
from pathlib import Path

import pytest

from reelqueue.domain.models import AccountSpec, BatchSpec, JobSpec
from reelqueue.engine.engine import Engine
from reelqueue.engine.manifest import manifest_name
from reelqueue.store.memory import MemoryStore
from tests.engine.fakes import VIDEO, FakeProvider, Script
from tests.engine.test_engine import FAST, install

pytestmark = pytest.mark.unit


def _store(jobs: int, host: str) -> MemoryStore:
    store = MemoryStore()
    store.host = host
    batch = store.create_batch(BatchSpec("clips", "clips.csv", "clips"), 0)
    store.add_jobs(batch.id, [JobSpec(f"k{i}", f"p{i}", "fake", f"clips/{i:03d}.mp4",
                                      row_number=i + 2, name=f"n{i}",
                                      metadata={"price": 0.5})
                              for i in range(jobs)], 0)
    store.add_account(AccountSpec("a", "fake", 3), 0)
    return store


async def test_the_manifest_appears_after_a_run_and_is_always_whole(tmp_path: Path) -> None:
    videos = tmp_path / "Videos"
    store = _store(20, "render-01")
    provider = FakeProvider({f"p{i}": Script(polls=2) for i in range(20)})
    target = videos / "clips" / manifest_name("render-01")
    seen: list[int] = []
    broken: list[str] = []
    stop = threading.Event()

    def watch() -> None:  # reads the file as fast as it can while the run writes it
        while not stop.is_set():
            try:
                text = target.read_text("utf-8")
            except FileNotFoundError:
                continue
            try:
                seen.append(len(json.loads(text)["jobs"]))
            except ValueError as exc:
                broken.append(str(exc))

    reader = threading.Thread(target=watch)
    reader.start()
    config = dataclasses.replace(FAST, videos_dir=videos, manifest_seconds=0.01)
    engine = Engine(store, config=config, rng=random.Random(1), providers=install(provider))
    try:
        await engine.start()
        await asyncio.wait_for(engine.run_until_drained(), 30)
        await engine.stop()
    finally:
        stop.set()
        reader.join()
        engine.close_store()
    assert not broken, broken[:3]
    assert seen, "the manifest was written during the run"
    manifest = json.loads(target.read_text("utf-8"))
    assert manifest["format"] == "reelqueue-manifest" and manifest["host"] == "render-01"
    assert manifest["batch"]["name"] == "clips" and manifest["written_at"] > 0
    assert [entry["key"] for entry in manifest["jobs"]] == [f"k{i}" for i in range(20)]
    for entry in manifest["jobs"]:
        assert entry["state"] == "COMPLETED" and entry["host"] == "render-01"
        assert entry["size"] == len(VIDEO)
        assert entry["sha256"] == hashlib.sha256(VIDEO).hexdigest()
        assert (videos / "clips" / entry["file"]).read_bytes() == VIDEO
        assert entry["provider"] == "fake" and entry["provider_job_id"]
        assert entry["price_usd"] == 0.5 and entry["cost_usd"] == 0.25
        assert entry["error"] is None and entry["prompt"].startswith("p")
    assert not list((videos / "clips").glob(".*.tmp"))
    assert not (videos / "clips" / "manifest.json").exists(), "the import's plan is gone"


async def test_each_host_writes_its_own_manifest_in_a_shared_folder(tmp_path: Path) -> None:
    shared = tmp_path / "Shared"
    for host in ("one", "two"):
        store = _store(3, host)
        provider = FakeProvider()
        engine = Engine(store, config=dataclasses.replace(FAST, videos_dir=shared),
                        rng=random.Random(1), providers=install(provider))
        await engine.start()
        await asyncio.wait_for(engine.run_until_drained(), 30)
        await engine.stop()
        engine.close_store()
    names = sorted(p.name for p in (shared / "clips").glob("manifest*.json"))
    assert names == [manifest_name("one"), manifest_name("two")]
    for host in ("one", "two"):
        manifest = json.loads((shared / "clips" / manifest_name(host)).read_text("utf-8"))
        assert manifest["host"] == host and len(manifest["jobs"]) == 3


def test_a_host_name_is_made_safe_for_a_file_name() -> None:
    assert manifest_name("render-01.lan") == "manifest-render-01.lan.json"
    assert manifest_name("../../etc") == "manifest-etc.json"
    assert "/" not in manifest_name("a/b\\c") and manifest_name("") == "manifest-host.json"


async def test_writes_are_coalesced(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import itertools
    import time

    from reelqueue.engine import manifest

    written: list[float] = []
    real = manifest.write_atomically

    def counted(target: Path, text: str) -> None:
        written.append(time.monotonic())
        real(target, text)

    monkeypatch.setattr(manifest, "write_atomically", counted)
    store = _store(30, "render-01")
    provider = FakeProvider({f"p{i}": Script(polls=3) for i in range(30)})
    config = dataclasses.replace(FAST, videos_dir=tmp_path / "Videos", manifest_seconds=0.3)
    engine = Engine(store, config=config, rng=random.Random(1), providers=install(provider))
    await engine.start()
    await asyncio.wait_for(engine.run_until_drained(), 30)
    await engine.stop()
    engine.close_store()
    # Hundreds of job changes; during the run one write per 0.3 s at most, then the stop's.
    during = written[:-1]
    gaps = [b - a for a, b in itertools.pairwise(during)]
    assert all(gap >= 0.29 for gap in gaps), gaps
    assert written, "written at least at the stop"
