"""Shared machinery of the proof tests: child processes, the journal read from outside,
and the invariant checks every kill test ends with.

Everything here talks to real processes: the mock provider runs as its own process
(``python -m reelqueue mock-provider --port 0``) so renders go on while a runner is dead,
and the runner is the real command line (``python -m reelqueue ... run``), killed with
SIGKILL so no cleanup code of ours can run. Every child is started in its own session
and is killed in a ``finally`` block by its own pid; no pipe is left open (pytest runs
with ``filterwarnings = error``, so an unclosed pipe would fail the test).
"""

from __future__ import annotations

import contextlib
import csv
import hashlib
import json
import os
import random
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

import httpx2

from reelqueue.domain.models import Job, LedgerEntry
from reelqueue.domain.states import IN_FLIGHT, JobState
from reelqueue.store.sqlite import SqliteStore

PROOF_DIR = Path(__file__).resolve().parent
REPO = PROOF_DIR.parents[1]
APP_DIR = REPO / "app"
REELQUEUE = [sys.executable, "-m", "reelqueue"]

# Generous: the suite must pass on a loaded 2-core machine.
START_TIMEOUT = 60.0
DRAIN_TIMEOUT = 300.0


def child_env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(
        p for p in (str(APP_DIR), str(REPO), env.get("PYTHONPATH", "")) if p)
    env.pop("REELQUEUE_DATA_DIR", None)
    env["PYTHONUNBUFFERED"] = "1"
    return env


def wait_for(predicate: Callable[[], Any], timeout: float, what: str,
             interval: float = 0.02) -> Any:
    """Poll ``predicate`` until it returns something truthy; fail after ``timeout``."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:.0f}s waiting for {what}")
        time.sleep(interval)


def kill_process(proc: subprocess.Popen[Any] | None) -> None:
    """SIGKILL one child we started (by its pid) and reap it. Idempotent."""
    if proc is None:
        return
    if proc.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            os.kill(proc.pid, signal.SIGKILL)
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(timeout=30)


# -- the mock provider as its own process ------------------------------------------------
class MockProcess:
    """``python -m reelqueue mock-provider --port 0 ...`` with its output in a file."""

    def __init__(self, folder: Path, *options: str) -> None:
        self.folder = folder
        self.options = list(options)
        self.proc: subprocess.Popen[bytes] | None = None
        self.url = ""
        self._log: IO[bytes] | None = None
        self.log_path = folder / "mock-provider.log"

    def start(self) -> MockProcess:
        self.folder.mkdir(parents=True, exist_ok=True)
        self._log = self.log_path.open("wb")
        self.proc = subprocess.Popen(
            [*REELQUEUE, "mock-provider", "--port", "0", *self.options],
            stdin=subprocess.DEVNULL, stdout=self._log, stderr=subprocess.STDOUT,
            env=child_env(), start_new_session=True)

        def listening() -> str | None:
            assert self.proc is not None
            if self.proc.poll() is not None:
                raise AssertionError(f"mock provider exited: {self.log_path.read_text()}")
            for line in self.log_path.read_text(errors="replace").splitlines():
                if line.startswith("mock provider listening on "):
                    return line.rsplit(" ", 1)[1].strip()
            return None

        self.url = wait_for(listening, START_TIMEOUT, "the mock provider to listen")
        assert self.url.startswith("http://127.0.0.1:"), self.url
        return self

    def counters(self) -> dict[str, Any]:
        response = httpx2.get(f"{self.url}/_mock/counters", timeout=30)
        response.raise_for_status()
        return dict(response.json())

    def creates_by_key(self) -> Counter[str]:
        return Counter(self.counters()["creates_by_job_key"])

    def stop(self) -> None:
        proc, self.proc = self.proc, None
        if proc is not None and proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                kill_process(proc)
        if self._log is not None:
            self._log.close()
            self._log = None

    def __enter__(self) -> MockProcess:
        try:
            return self.start()
        except BaseException:
            self.stop()
            raise

    def __exit__(self, *exc: object) -> None:
        self.stop()


# -- the command line ----------------------------------------------------------------------
def cli(data: Path, *args: str, videos: Path | None = None, timeout: float = 120.0,
        stdin: str = "") -> subprocess.CompletedProcess[str]:
    """Run one ``reelqueue`` command to its end; output captured (pipes closed)."""
    command = [*REELQUEUE, "--data-dir", str(data)]
    if videos is not None:
        command += ["--videos-dir", str(videos)]
    return subprocess.run([*command, *args], input=stdin, capture_output=True, text=True,
                          timeout=timeout, env=child_env(), check=False)


def add_account(data: Path, name: str, url: str, capacity: int, *extra: str) -> None:
    done = cli(data, "accounts", "add", name, "--provider", "mock", "--capacity",
               str(capacity), "--base-url", url, "--no-check", *extra)
    assert done.returncode == 0, done.stdout + done.stderr


class Runner:
    """One ``reelqueue run`` process, output to a numbered log file, killable.

    ``hook`` runs it through ``_hooked_runner.py`` with that fault hook installed.
    """

    def __init__(self, data: Path, videos: Path, args: list[str], log_path: Path,
                 hook: str | None = None) -> None:
        self.log_path = log_path
        self._log = log_path.open("wb")
        self.started = time.monotonic()
        prefix = REELQUEUE if hook is None else [
            sys.executable, str(PROOF_DIR / "_hooked_runner.py"), hook, "--"]
        self.proc = subprocess.Popen(
            [*prefix, "--data-dir", str(data), "--videos-dir", str(videos), "run", *args],
            stdin=subprocess.DEVNULL, stdout=self._log, stderr=subprocess.STDOUT,
            env=child_env(), start_new_session=True)

    def output(self) -> str:
        return self.log_path.read_text(errors="replace")

    def alive(self) -> bool:
        return self.proc.poll() is None

    def kill(self) -> None:
        kill_process(self.proc)
        self._log.close()

    def wait(self, timeout: float = DRAIN_TIMEOUT) -> int:
        try:
            code = self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            raise AssertionError(f"the runner did not finish in {timeout:.0f}s:\n"
                                 f"{self.output()[-3000:]}") from None
        self._log.close()
        return code


# -- sheets --------------------------------------------------------------------------------
def write_sheet(path: Path, count: int, seed: int, low: float = 0.2, high: float = 2.0,
                extra: Callable[[int], str] | None = None) -> list[float]:
    """A CSV of ``count`` prompts, each rendering a random ``low``-``high`` seconds."""
    rng = random.Random(seed)
    seconds = [round(rng.uniform(low, high), 2) for _ in range(count)]
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["name", "prompt"])
        for i, secs in enumerate(seconds):
            more = extra(i) if extra else ""
            writer.writerow([f"shot{i:04d}",
                             f"proof shot {i} [[mock:render_seconds={secs}]]{more}"])
    return seconds


def write_prompts(path: Path, prompts: list[str]) -> None:
    """A CSV with a name and a prompt column, one row per prompt."""
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["name", "prompt"])
        for i, prompt in enumerate(prompts):
            writer.writerow([f"job{i:03d}", prompt])


# -- the journal, read from outside ---------------------------------------------------------
@contextlib.contextmanager
def journal(data: Path) -> Iterator[SqliteStore]:
    """The journal through its own store class, on a second connection.

    Only ever opened once the journal exists (``accounts add`` creates it), so opening
    never races the runner's first migration; it only reads while a runner is alive.
    """
    store = SqliteStore.open(data / "journal.sqlite3", now=time.time())
    try:
        yield store
    finally:
        store.close()


def sha256_file(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def in_flight_by_state(jobs: list[Job]) -> dict[str, int]:
    return dict(Counter(j.state.value for j in jobs if j.state in IN_FLIGHT))


def events_by_job(ledger: list[LedgerEntry]) -> dict[int, list[LedgerEntry]]:
    out: dict[int, list[LedgerEntry]] = {}
    for entry in ledger:
        if entry.job_id is not None:
            out.setdefault(entry.job_id, []).append(entry)
    return out


@dataclass
class Invariants:
    """What a finished batch looked like (figures for docs/proof.md)."""

    jobs: int
    by_state: dict[str, int]
    completed_events: int
    output_files: int
    extra_creates: int
    jobs_created_more_than_once: int
    possible_duplicate_charges: int
    failed_ids: list[int] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


def check_batch(store: SqliteStore, videos: Path, creates: Counter[str], *,
                expect_jobs: int, allow_failed: bool = False,
                expect_one_create: bool = True) -> Invariants:
    """The invariants of issue 3 over a drained journal, its files and the mock's counts.

    - every job settled; COMPLETED unless ``allow_failed`` (then FAILED or PARKED too, and
      the caller checks why);
    - no job has two ``completed`` events, every completed job exactly one;
    - exactly one file per completed job at its recorded path, matching the recorded
      size and sha256; no ``.part`` file and no other stray file in any batch folder;
    - no job in flight (no claim left behind after a clean exit);
    - creates: one per job key (``expect_one_create``), otherwise every job created more
      than once carries a ``possible_duplicate_charge`` ledger entry.
    """
    jobs = store.list_jobs()
    assert len(jobs) == expect_jobs
    by_state = dict(Counter(j.state.value for j in jobs))
    # PARKED (a render whose resume kept killing the process) counts with FAILED: the
    # caller says which it expects.
    allowed = {"COMPLETED", "FAILED", "PARKED"} if allow_failed else {"COMPLETED"}
    assert set(by_state) <= allowed, by_state
    ledger = store.ledger()
    per_job = events_by_job(ledger)
    completed_events = Counter(e.job_id for e in ledger if e.event == "completed")
    twice = {job_id: n for job_id, n in completed_events.items() if n > 1}
    assert not twice, f"jobs completed more than once in the ledger: {twice}"
    for job in jobs:
        n = completed_events.get(job.id, 0)
        assert n == (1 if job.state == JobState.COMPLETED else 0), (job.id, job.state, n)
    # Files: exactly the recorded ones, whole, nothing else.
    expected_files = {}
    for job in jobs:
        if job.state == JobState.COMPLETED:
            path = videos / job.output_path  # relative to the videos folder (issue 23)
            assert path.is_file(), f"job {job.id}: {path} missing"
            assert path.stat().st_size == job.output_size, job.id
            assert sha256_file(path) == job.output_sha256, job.id
            expected_files[path.resolve()] = job.id
    assert len(expected_files) == by_state.get("COMPLETED", 0), "two jobs share one file"
    folders = {videos / b.output_dir for b in store.list_batches()}
    found = set()
    strays = []
    for folder in folders:
        for path in folder.rglob("*"):
            if path.is_dir() or path.name.startswith(("manifest-", ".manifest-")):
                # each machine's record of the batch (and a killed write's temporary)
                continue
            if path.resolve() in expected_files:
                found.add(path.resolve())
            else:
                strays.append(path.name)
    assert not strays, f"stray files in the batch folders: {sorted(strays)[:20]}"
    assert found == set(expected_files)
    assert not list(videos.rglob("*.part")), "a .part file was left behind"
    # Creates at the provider.
    keys = {j.job_key for j in jobs}
    dup_charged = {e.job_id for e in ledger if e.event == "possible_duplicate_charge"}
    by_key = {j.job_key: j for j in jobs}
    for key in keys:
        n = creates.get(key, 0)
        job = by_key[key]
        if job.state == JobState.COMPLETED:
            assert n >= 1, f"job {job.id} completed but its render was never created"
        if expect_one_create:
            assert n <= 1, f"job {job.id} ({key}) was created {n} times at the provider"
        elif n > 1:
            assert job.id in dup_charged, (
                f"job {job.id} was created {n} times but its ledger shows no "
                f"possible_duplicate_charge: {[e.event for e in per_job[job.id]]}")
    assert set(creates) <= keys, "creates for job keys we do not know"
    extra = sum(max(0, creates.get(k, 0) - 1) for k in keys)
    return Invariants(
        jobs=len(jobs), by_state=by_state, completed_events=sum(completed_events.values()),
        output_files=len(found), extra_creates=extra,
        jobs_created_more_than_once=sum(1 for k in keys if creates.get(k, 0) > 1),
        possible_duplicate_charges=len(dup_charged),
        failed_ids=[j.id for j in jobs if j.state == JobState.FAILED])


def doctor_ok(data: Path, videos: Path) -> str:
    """``doctor`` passes, looking in ``videos`` (the journal keeps each file relative to
    the videos folder the runs wrote to)."""
    done = cli(data, "doctor", videos=videos)
    assert done.returncode == 0, f"doctor failed:\n{done.stdout}\n{done.stderr}"
    assert "FAIL" not in done.stdout
    return done.stdout


def integrity_ok(path: Path) -> None:
    import sqlite3

    db = sqlite3.connect(str(path))
    try:
        assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    finally:
        db.close()


def record_figures(name: str, figures: dict[str, Any]) -> None:
    """Print the figures; also append them as one JSON line to
    ``$REELQUEUE_PROOF_FIGURES`` when that is set (how docs/proof.md was filled in)."""
    line = json.dumps({"test": name, **figures}, sort_keys=True, default=str)
    print(f"\nPROOF FIGURES {line}")
    target = os.environ.get("REELQUEUE_PROOF_FIGURES")
    if target:
        with open(target, "a", encoding="utf-8") as handle:
            handle.write(line + "\n")
