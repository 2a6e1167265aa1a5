"""``reelqueue self-test``'s checks: the stack below the application layer proved on its
own. Each check builds a throwaway journal, the built-in mock server, an in-memory keyring
and an engine by design (the command line only starts them and prints the report):

1. parallel batch: 30 jobs on three accounts (limits 2, 3, 4); no limit is ever exceeded;
2. retries: a 500 that clears, a content-policy refusal, a 500 that never clears;
3. crash: a real child ``reelqueue run`` is SIGKILLed mid-batch; the restart reattaches its
   renders and no finished or submitted video is rendered twice;
4. keys: a sentinel key is used by an account and found nowhere in the journal or logs.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from reelqueue import __version__
from reelqueue.application.compose import build_engine
from reelqueue.application.status import doctor_checks
from reelqueue.application.trust import TrustedKeys
from reelqueue.domain.backoff import BackoffPolicy
from reelqueue.domain.models import AccountSpec, BatchSpec, JobSpec
from reelqueue.domain.states import JobState
from reelqueue.engine.config import EngineConfig
from reelqueue.mockprovider.options import MockOptions
from reelqueue.mockprovider.server import MockProviderServer
from reelqueue.store.sqlite import SqliteStore

__all__ = ["CheckResult", "run_checks", "write_report"]

FAST = EngineConfig(retry_backoff=BackoffPolicy(0.05, 0.2), heartbeat_seconds=1.0,
                    lease_seconds=10.0)


@dataclass
class CheckResult:
    name: str
    passed: bool
    seconds: float
    figures: dict[str, Any] = field(default_factory=dict)
    failures: list[str] = field(default_factory=list)


class Check:
    def __init__(self, name: str) -> None:
        self.result = CheckResult(name, True, 0.0)

    def expect(self, condition: bool, message: str) -> None:
        if not condition:
            self.result.passed = False
            self.result.failures.append(message)


def _journal(folder: Path) -> SqliteStore:
    folder.mkdir(parents=True, exist_ok=True)
    return SqliteStore.open(folder / "journal.sqlite3", now=time.time())


def _add_jobs(store: SqliteStore, out: Path, prompts: list[str], prefix: str) -> None:
    batch = store.create_batch(BatchSpec(prefix, "self-test", str(out)), time.time())
    store.add_jobs(batch.id, [
        JobSpec(f"{prefix}-{i}", prompt, "mock", str(out / f"{prefix}-{i:03d}.mp4"),
                row_number=i + 2, name=f"{prefix}{i}")
        for i, prompt in enumerate(prompts)], time.time())


async def _drain(store: SqliteStore, sampler: Callable[[], None] | None = None,
                 keys: TrustedKeys | None = None,
                 ) -> tuple[str, Any]:
    engine = build_engine(store, config=FAST, keys=keys)
    report = await engine.start()
    sampling = True

    async def sample() -> None:
        while sampling and sampler:
            await engine.store.call(sampler)
            await asyncio.sleep(0.02)

    task = asyncio.create_task(sample())
    result = await asyncio.wait_for(engine.run_until_drained(), 120)
    sampling = False
    await task
    await engine.stop()
    engine.close_store()
    return result.outcome, report


def check_parallel(root: Path, server: MockProviderServer) -> CheckResult:
    check = Check("parallel batch across three accounts")
    store = _journal(root / "parallel")
    limits = {"small": 2, "medium": 3, "large": 4}
    for name, limit in limits.items():
        store.add_account(AccountSpec(name, "mock", limit, server.url), time.time())
    _add_jobs(store, root / "parallel-out", [f"parallel shot {i} [[mock:render_seconds=0.3]]"
                                             for i in range(30)], "par")
    peak: dict[str, int] = {}

    def sampler() -> None:
        for account, live in store.counts().live_by_account.items():
            peak[account] = max(peak.get(account, 0), live)

    outcome, _ = asyncio.run(_drain(store, sampler))
    jobs = store.list_jobs()
    check.expect(outcome == "drained", f"drain ended {outcome}")
    check.expect(all(j.state == JobState.COMPLETED for j in jobs), "not every job completed")
    for name, limit in limits.items():
        check.expect(peak.get(name, 0) <= limit, f"{name} ran {peak.get(name)} > limit {limit}")
        check.expect(peak.get(name, 0) >= 1, f"{name} never rendered")
    problems = {k: v for k, v in doctor_checks(store, False).items() if v}
    check.expect(not problems, f"doctor: {problems}")
    check.result.figures = {"jobs": len(jobs), "peak_running": peak, "limits": limits}
    store.close()
    return check.result


def check_retries(root: Path, server: MockProviderServer) -> CheckResult:
    check = Check("retries, permanent failures and the attempt ceiling")
    store = _journal(root / "retries")
    store.add_account(AccountSpec("acct", "mock", 3, server.url), time.time())
    prompts = ["clears after one 500 [[mock:server_error*1]]",
               "refused by policy [[mock:content_policy]]",
               "always 500 [[mock:server_error]]",
               "rate limited once [[mock:rate_limit*1]]"]
    _add_jobs(store, root / "retries-out", prompts, "retry")
    outcome, _ = asyncio.run(_drain(store))
    jobs = {j.job_key: j for j in store.list_jobs()}
    check.expect(outcome == "drained", f"drain ended {outcome}")
    first, policy, always, limited = (jobs[f"retry-{i}"] for i in range(4))
    check.expect(first.state == JobState.COMPLETED and first.attempts == 2,
                 f"500-once: {first.state} after {first.attempts} attempts (want COMPLETED, 2)")
    check.expect(policy.state == JobState.FAILED and policy.attempts == 1
                 and policy.error_label == "content policy",
                 f"policy: {policy.state}/{policy.attempts}/{policy.error_label}")
    check.expect(always.state == JobState.FAILED and always.attempts == 3,
                 f"always-500: {always.state} after {always.attempts} (want FAILED, 3)")
    check.expect(limited.state == JobState.COMPLETED and limited.attempts == 1,
                 f"429-once: {limited.state}/{limited.attempts} (want COMPLETED, 1)")
    check.result.figures = {k: {"state": j.state.value, "attempts": j.attempts,
                                "error": j.error_label} for k, j in jobs.items()}
    store.close()
    return check.result


def check_crash(root: Path, server: MockProviderServer) -> CheckResult:
    check = Check("crash (SIGKILL) and recovery with reattach")
    data, videos = root / "crash", root / "crash-out"
    store = _journal(data)
    store.add_account(AccountSpec("acct-a", "mock", 3, server.url), time.time())
    store.add_account(AccountSpec("acct-b", "mock", 3, server.url), time.time())
    _add_jobs(store, videos, [f"crash shot {i} [[mock:render_seconds={0.5 + (i % 4) * 0.5}]]"
                              for i in range(24)], "crash")
    store.close()
    server.reset_counters()
    child = subprocess.Popen(
        [sys.executable, "-m", "reelqueue", "--data-dir", str(data), "--videos-dir",
         str(videos), "run", "--no-progress", "--lease-seconds", "10"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        start_new_session=os.name == "posix")
    before: dict[int, Any] = {}
    reader = SqliteStore.open(data / "journal.sqlite3", now=time.time())
    try:
        deadline = time.time() + 60
        while time.time() < deadline:
            jobs = reader.list_jobs()
            done = sum(j.state == JobState.COMPLETED for j in jobs)
            rendering = sum(j.provider_job_id is not None and j.state == JobState.RENDERING
                            for j in jobs)
            if done >= 2 and rendering >= 2:
                break
            time.sleep(0.05)
        child.kill()  # SIGKILL on POSIX, TerminateProcess on Windows: no cleanup runs
        child.wait(10)
        before = {j.id: j for j in reader.list_jobs()}
    finally:
        reader.close()
    completed_before = {i for i, j in before.items() if j.state == JobState.COMPLETED}
    submitted_before = {i for i, j in before.items()
                        if j.provider_job_id and j.state != JobState.COMPLETED}
    check.expect(bool(completed_before) and bool(submitted_before),
                 "the kill did not land mid-batch (nothing completed or in flight)")
    store = _journal(data)
    outcome, report = asyncio.run(_drain(store))
    after = {j.id: j for j in store.list_jobs()}
    creates = server.counters().get("creates_by_job_key", {})
    check.expect(outcome == "drained", f"drain ended {outcome}")
    check.expect(all(j.state == JobState.COMPLETED for j in after.values()),
                 "not every job completed after the restart")
    reattached = set(report.reattached) | set(report.completed_from_disk)
    check.expect(submitted_before <= reattached | set(report.reconcile),
                 f"submitted jobs not reattached: {submitted_before - reattached}")
    twice = {k: n for k, n in creates.items() if n > 1}
    check.expect(not twice, f"rendered more than once: {twice}")
    for job_id in completed_before:
        check.expect(after[job_id].output_sha256 == before[job_id].output_sha256,
                     f"job {job_id} changed after the restart")
    problems = {k: v for k, v in doctor_checks(store, False).items() if v}
    check.expect(not problems, f"doctor: {problems}")
    check.result.figures = {
        "jobs": len(after), "completed_before_kill": len(completed_before),
        "in_flight_with_provider_id_at_kill": len(submitted_before),
        "recovery": report.as_dict(), "create_requests": sum(creates.values()),
    }
    store.close()
    return check.result


def check_keys(root: Path, server_options: MockOptions) -> CheckResult:
    from reelqueue.application.trust import DirectKeys, TrustedKeys, keep_key
    from reelqueue.credentials.keystore import KeyStore, MemoryKeyring, key_ref_for

    check = Check("keys never stored in the journal or logs")
    sentinel = "rq-sentinel-" + os.urandom(12).hex()
    keys = KeyStore(backend=MemoryKeyring())
    options = MockOptions(**{**server_options.__dict__, "accept_keys": frozenset({sentinel})})
    with MockProviderServer(options) as keyed_server:
        store = _journal(root / "keys")
        # Bound to the server it is added with, as 'accounts add' binds it (issue 21).
        keep_key(keys, key_ref_for("keyed"), sentinel, "mock", keyed_server.url)
        store.add_account(AccountSpec("keyed", "mock", 2, keyed_server.url,
                                      key_ref_for("keyed")), time.time())
        _add_jobs(store, root / "keys-out", ["keyed shot [[mock:render_seconds=0.2]]",
                                             "refused [[mock:bad_key]]"], "key")
        outcome, _ = asyncio.run(_drain(store, keys=TrustedKeys(DirectKeys(keys), None)))
        jobs = store.list_jobs()
        store.close()
    check.expect(jobs[0].state == JobState.COMPLETED, "the keyed render did not complete")
    check.expect(jobs[1].state == JobState.QUEUED,
                 "a rejected key must pause the account, not fail its jobs")
    needle = sentinel.encode()
    leaks = []
    for path in root.rglob("*"):
        if path.is_file() and needle in path.read_bytes():
            leaks.append(str(path.relative_to(root)))
    texts = " ".join(str(j.error_message) for j in jobs)
    check.expect(not leaks, f"the key was found in {leaks}")
    check.expect(sentinel not in texts, "the key appears in an error message")
    check.result.figures = {"files_scanned": sum(1 for p in root.rglob("*") if p.is_file()),
                            "leaks": leaks, "drain": outcome}
    return check.result


def run_checks(root: Path) -> list[CheckResult]:
    options = MockOptions(render_seconds_min=0.2, render_seconds_max=0.6, seed=7,
                          retry_after=0.2)
    results: list[CheckResult] = []
    with MockProviderServer(options) as server:
        for fn in (check_parallel, check_retries, check_crash):
            started = time.monotonic()
            try:
                result = fn(root, server)
            except Exception as exc:
                result = CheckResult(fn.__name__, False, 0.0,
                                     failures=[f"{type(exc).__name__}: {exc}",
                                               traceback.format_exc(limit=5)])
            result.seconds = round(time.monotonic() - started, 2)
            results.append(result)
    started = time.monotonic()
    try:
        result = check_keys(root, options)
    except Exception as exc:
        result = CheckResult("keys", False, 0.0, failures=[f"{type(exc).__name__}: {exc}"])
    result.seconds = round(time.monotonic() - started, 2)
    results.append(result)
    return results


def write_report(results: list[CheckResult], folder: Path) -> tuple[Path, Path]:
    folder.mkdir(parents=True, exist_ok=True)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    data = {"version": __version__, "when": time.strftime("%Y-%m-%d %H:%M:%S %z"),
            "passed": all(r.passed for r in results),
            "checks": [r.__dict__ for r in results]}
    json_path = folder / f"self-test-{stamp}.json"
    json_path.write_text(json.dumps(data, indent=2, default=str), encoding="utf-8")
    lines = [f"# ReelQueue self-test — {data['when']}", "",
             f"Version {__version__}. Result: **{'PASSED' if data['passed'] else 'FAILED'}**.",
             "", "| check | result | seconds |", "|---|---|---|"]
    lines += [f"| {r.name} | {'pass' if r.passed else 'FAIL'} | {r.seconds} |" for r in results]
    for r in results:
        lines += ["", f"## {r.name}", ""]
        lines += [f"- {k}: `{json.dumps(v, default=str)}`" for k, v in r.figures.items()]
        lines += [f"- **failure:** {f}" for f in r.failures]
    md_path = folder / f"self-test-{stamp}.md"
    md_path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return md_path, json_path
