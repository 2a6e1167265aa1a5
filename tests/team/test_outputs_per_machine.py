"""Every machine writes its own files (issues 21, 23): three engines on one team journal,
each with its own videos folder, render one batch. Each video is under the folder of the
machine that rendered it (the job's ``output_host``), none is rendered twice, each machine
writes its own manifest of the batch, and a hostile row's path is refused: nothing is
written outside a machine's videos folder."""

from __future__ import annotations

import asyncio
import dataclasses
import hashlib
import json
import random
import shutil
import tempfile
import time
from pathlib import Path

import pytest

from reelqueue.domain.models import AccountSpec, BatchSpec, JobSpec
from reelqueue.domain.states import JobState
from reelqueue.engine.engine import Engine
from reelqueue.engine.manifest import manifest_name
from reelqueue.store.postgres import PostgresStore
from tests.engine.fakes import VIDEO, FakeProvider, Script
from tests.engine.test_engine import FAST, install

pytestmark = [pytest.mark.integration]

HOSTS = ("machine-a", "machine-b", "machine-c")
JOBS = 12


def _open(url: str, host: str) -> PostgresStore:
    store = PostgresStore.open(url, now=time.time())
    store.host = host  # each engine plays another machine
    return store


def _own_filesystem(tmp_path: Path) -> Path:
    """A folder on another filesystem than ``tmp_path`` (a tmpfs) where the machine has
    one, else beside the others: machine-c's videos folder."""
    shm = Path("/dev/shm")
    try:
        if shm.is_dir() and shm.stat().st_dev != tmp_path.stat().st_dev:
            return Path(tempfile.mkdtemp(prefix="reelqueue-machine-c-", dir=shm))
    except OSError:
        pass
    return tmp_path / "machine-c"


async def _run_three(url: str, tmp_path: Path, provider: FakeProvider,
                     roots: dict[str, Path]) -> dict[str, Path]:
    folders = {host: roots[host] / "Videos" for host in HOSTS}
    config = dataclasses.replace(FAST, shared_store=True, lease_seconds=20.0,
                                 manifest_seconds=0.2)
    engines = []
    for i, host in enumerate(HOSTS):
        folders[host].mkdir(parents=True)
        engine = Engine(_open(url, host), rng=random.Random(i), providers=install(provider),
                        config=dataclasses.replace(config, videos_dir=folders[host]),
                        instance_id=f"instance-{host}")
        engines.append(engine)
    for engine in engines:  # all ready before any claims: the batch is shared
        await engine.start(paused=True)
    for engine in engines:
        engine.resume()
    try:
        await asyncio.wait_for(asyncio.gather(*(e.run_until_drained() for e in engines)), 60)
    finally:
        for engine in engines:
            await engine.stop()
            engine.close_store()
    return folders


async def test_three_machines_write_under_their_own_folders(
        team_url: str, tmp_path: Path) -> None:
    setup = _open(team_url, "importer")
    batch = setup.create_batch(BatchSpec("shots", "shots.csv", "shots"), time.time())
    specs = [JobSpec(f"k{i}", f"p{i}", "fake", f"shots/{i:03d}.mp4", row_number=i + 2)
             for i in range(JOBS)]
    # A hostile row: its path leaves every videos folder.
    specs.append(JobSpec("evil-up", "evil", "fake", "shots/../../../escaped.mp4"))
    specs.append(JobSpec("evil-abs", "evil", "fake", str(tmp_path / "absolute.mp4")))
    setup.add_jobs(batch.id, specs, time.time())
    setup.add_account(AccountSpec("acct", "fake", 3), time.time())
    setup.close()
    provider = FakeProvider({f"p{i}": Script(submit_seconds=0.1, polls=3) for i in range(JOBS)})

    # machine-c keeps its videos on a filesystem of its own (a tmpfs here): the temp
    # file and the rename stay inside its folder, so each file is written atomically there.
    roots = {"machine-a": tmp_path / "machine-a", "machine-b": tmp_path / "machine-b",
             "machine-c": _own_filesystem(tmp_path)}
    try:
        await _check_three(team_url, tmp_path, provider, roots)
    finally:
        if not roots["machine-c"].is_relative_to(tmp_path):
            shutil.rmtree(roots["machine-c"], ignore_errors=True)


async def _check_three(team_url: str, tmp_path: Path, provider: FakeProvider,
                       roots: dict[str, Path]) -> None:
    folders = await _run_three(team_url, tmp_path, provider, roots)

    store = _open(team_url, "reader")
    try:
        jobs = {j.job_key: j for j in store.list_jobs()}
    finally:
        store.close()
    hosts_used = set()
    for i in range(JOBS):
        job = jobs[f"k{i}"]
        assert job.state is JobState.COMPLETED, job
        assert job.output_path == f"shots/{i:03d}.mp4", "the journal keeps the relative path"
        assert job.output_host in HOSTS
        hosts_used.add(job.output_host)
        on_disk = folders[job.output_host] / "shots" / f"{i:03d}.mp4"
        assert on_disk.read_bytes() == VIDEO
        assert job.output_sha256 == hashlib.sha256(VIDEO).hexdigest()
        for other in set(HOSTS) - {job.output_host}:  # nowhere else
            assert not (folders[other] / "shots" / f"{i:03d}.mp4").exists()
    assert sum(provider.creates.values()) == JOBS, "no render created twice"
    assert all(n == 1 for key, n in provider.creates.items()), provider.creates
    assert len(hosts_used) >= 2, f"the batch was shared ({hosts_used})"
    # The hostile rows failed, saying why, before anything was sent or written.
    for key in ("evil-up", "evil-abs"):
        job = jobs[key]
        assert job.state is JobState.FAILED and job.error_class == "permanent", job
        assert "Not written" in (job.error_message or ""), job.error_message
        assert key not in provider.creates
    assert not (tmp_path / "absolute.mp4").exists()
    written = {p for root in {tmp_path, roots["machine-c"]} for p in root.rglob("*")
               if p.is_file()}
    assert all(any(p.is_relative_to(folders[h]) for h in HOSTS) for p in written), written
    assert not list(tmp_path.rglob("escaped.mp4"))
    assert not (roots["machine-c"].parent / "escaped.mp4").exists()
    # Each machine that worked on the batch wrote its own manifest, listing every job.
    for host in hosts_used:
        manifest = json.loads((folders[host] / "shots" / manifest_name(host)).read_text("utf-8"))
        assert manifest["host"] == host and manifest["batch"]["name"] == "shots"
        entries = {entry["key"]: entry for entry in manifest["jobs"]}
        assert len(entries) == JOBS + 2
        for i in range(JOBS):
            entry = entries[f"k{i}"]
            assert entry["state"] == "COMPLETED" and entry["file"] == f"{i:03d}.mp4"
            assert entry["size"] == len(VIDEO) and entry["sha256"] == jobs[f"k{i}"].output_sha256
            assert entry["host"] == jobs[f"k{i}"].output_host
        assert entries["evil-up"]["state"] == "FAILED" and entries["evil-up"]["error"]
        assert not list((folders[host] / "shots").glob(".*.tmp"))
        # Never a manifest of another machine in this machine's folder.
        assert [p.name for p in (folders[host] / "shots").glob("manifest*.json")] == [
            manifest_name(host)]
    # A machine starting again finds its own files: the others' are not "missing".
    again = Engine(_open(team_url, "machine-a"), providers=install(provider),
                   config=dataclasses.replace(FAST, shared_store=True,
                                              videos_dir=folders["machine-a"]))
    report = await again.start(paused=True)
    await again.stop()
    again.close_store()
    assert report.missing_outputs == [], report
