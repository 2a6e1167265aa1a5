"""Benchmark: how well the engine keeps every slot of every account busy.

    python benchmarks/bench_scheduler.py [--jobs 600] [--render 0.5] [--limits 2,4,6]

600 jobs on three mock accounts with limits 2, 4 and 6 (12 slots), every render taking
exactly 0.5 s on the mock provider (in this process, on loopback). The engine runs as in
production: the SQLite journal on disk (WAL, synchronous=FULL), default EngineConfig,
write-ahead submission, polling with the provider's ``X-Poll-After`` hint, downloads
written to ``.part``, fsynced and renamed. The baseline is the ideal makespan:
jobs x render time / slots (25 s). Target: makespan <= 1.05x the ideal.

Each account's slot occupancy is followed from the engine's events (a slot is taken by a
CLAIMED event and given back by COMPLETED / FAILED / RETRY_WAIT / QUEUED), so the idle
slot time is exact: the integral of (limit - live) from the first claim to the last
completion. Where a job's time goes is shown too: claim to submitted, submitted to the
poll that saw it finished, and from there to completion, and the gap between a slot
freeing and its next claim.
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
import time
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

from _common import NOW, machine_line, median, print_table

from reelqueue.domain.models import AccountSpec, BatchSpec, JobSpec
from reelqueue.engine.config import EngineConfig
from reelqueue.engine.engine import Engine
from reelqueue.engine.events import Event, JobEvent
from reelqueue.mockprovider import MockOptions, MockProviderServer
from reelqueue.store.sqlite import SqliteStore

RELEASES = {"COMPLETED", "FAILED", "RETRY_WAIT", "QUEUED", "CANCELLED"}


@dataclass
class SlotTracker:
    """Live slots per account from the engine's events, integrated over time."""

    limits: dict[str, int]
    live: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    busy: dict[str, float] = field(default_factory=lambda: defaultdict(float))
    last: float | None = None
    first_claim: float | None = None
    last_release: float | None = None
    owner: dict[int, str] = field(default_factory=dict)
    times: dict[int, dict[str, float]] = field(default_factory=lambda: defaultdict(dict))
    freed: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))
    refill_gaps: list[float] = field(default_factory=list)
    max_live: dict[str, int] = field(default_factory=lambda: defaultdict(int))

    def on_event(self, event: Event) -> None:
        if not isinstance(event, JobEvent):
            return
        now = time.perf_counter()
        if self.last is not None:
            for account, count in self.live.items():
                self.busy[account] += count * (now - self.last)
        self.last = now
        stamps = self.times[event.job_id]
        if event.state == "CLAIMED" and event.account:
            self.first_claim = self.first_claim or now
            self.owner[event.job_id] = event.account
            self.live[event.account] += 1
            self.max_live[event.account] = max(self.max_live[event.account],
                                               self.live[event.account])
            stamps["claimed"] = now
            if self.freed[event.account]:
                self.refill_gaps.append(now - self.freed[event.account].pop(0))
        elif event.state == "RENDERING" and event.sub_status == "submitted":
            stamps["submitted"] = now
        elif event.state == "DOWNLOADING":
            stamps["downloading"] = now
        elif event.state in RELEASES and event.job_id in self.owner:
            account = self.owner.pop(event.job_id)
            self.live[account] -= 1
            self.last_release = now
            stamps["released"] = now
            self.freed[account].append(now)


async def run(jobs: int, render: float, limits: list[int], folder: Path) -> None:
    options = MockOptions(render_seconds_min=render, render_seconds_max=render, seed=1)
    with MockProviderServer(options) as mock:
        store = SqliteStore.open(folder / "journal.sqlite3", now=NOW)
        batch = store.create_batch(BatchSpec("bench", "bench.csv", str(folder / "videos")),
                                   time.time())
        store.add_jobs(batch.id, [
            JobSpec(f"job-{i:04d}", f"a red fox at sunrise #{i}", "mock",
                    str(folder / "videos" / f"{i:04d}.mp4"), row_number=i + 2)
            for i in range(jobs)], time.time())
        names = [f"mock-{i + 1}" for i in range(len(limits))]
        for name, limit in zip(names, limits, strict=True):
            store.add_account(AccountSpec(name, "mock", limit, base_url=mock.url), time.time())
        tracker = SlotTracker(dict(zip(names, limits, strict=True)))
        engine = Engine(store, config=EngineConfig())
        engine.bus.subscribe(tracker.on_event)
        started = time.perf_counter()
        await engine.start()
        result = await engine.run_until_drained()
        drained = time.perf_counter()
        await engine.stop()
        engine.close_store()
        counts = store.counts().by_state
        counters = mock.counters()
        creates = counters["creates_total"]
        polls = counters["polls_total"]
        store.close()
    report(jobs, render, limits, names, tracker, started, drained, result.outcome, counts,
           creates, polls)


def report(jobs: int, render: float, limits: list[int], names: list[str],
           tracker: SlotTracker, started: float, drained: float, outcome: str,
           counts: dict[str, int], creates: int, polls: int) -> None:
    slots = sum(limits)
    ideal = jobs * render / slots
    assert tracker.first_claim is not None and tracker.last_release is not None
    span = tracker.last_release - tracker.first_claim
    print(f"{jobs} jobs, render {render} s, limits {limits} ({slots} slots): outcome "
          f"{outcome}, {counts.get('COMPLETED', 0)} completed, {creates} create requests, "
          f"{polls / jobs:.1f} polls per job")
    print_table([
        ("", "seconds", "vs ideal"),
        ("ideal (jobs x render / slots)", f"{ideal:.2f}", "1.00x"),
        ("makespan: first claim -> last completion", f"{span:.2f}", f"{span / ideal:.3f}x"),
        ("start() -> run_until_drained() returned", f"{drained - started:.2f}",
         f"{(drained - started) / ideal:.3f}x"),
    ])
    print()
    rows = [("account", "limit", "max live", "busy slot-s", "idle slot-s", "idle share")]
    for name, limit in zip(names, limits, strict=True):
        busy = tracker.busy[name]
        idle = limit * span - busy
        rows.append((name, str(limit), str(tracker.max_live[name]), f"{busy:.1f}",
                     f"{idle:.1f}", f"{idle / (limit * span):.1%}"))
    print_table(rows)
    phases = {"claim -> submitted": ("claimed", "submitted"),
              "submitted -> finished render seen": ("submitted", "downloading"),
              "finished seen -> completed": ("downloading", "released"),
              "claim -> completed": ("claimed", "released")}
    print()
    table = [("per job", "median ms", "p90 ms")]
    for label, (a, b) in phases.items():
        values = [t[b] - t[a] for t in tracker.times.values() if a in t and b in t]
        table.append((label, f"{median(values) * 1e3:.1f}", f"{p90(values) * 1e3:.1f}"))
    table.append(("slot freed -> next claim on it", f"{median(tracker.refill_gaps) * 1e3:.1f}",
                  f"{p90(tracker.refill_gaps) * 1e3:.1f}"))
    print_table(table)


def p90(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[int(0.9 * (len(ordered) - 1))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=600)
    parser.add_argument("--render", type=float, default=0.5)
    parser.add_argument("--limits", default="2,4,6")
    parser.add_argument("--dir", type=Path, default=Path(tempfile.gettempdir()))
    args = parser.parse_args()
    print(machine_line())
    with tempfile.TemporaryDirectory(dir=args.dir) as scratch:
        asyncio.run(run(args.jobs, args.render, [int(x) for x in args.limits.split(",")],
                        Path(scratch)))
    print(machine_line())


if __name__ == "__main__":
    main()
