"""Renders in flight (issue 33): ``reelqueue run`` against the mock as its own process.

    python benchmarks/bench_inflight.py                       # quick: 8 x 25 = 200 slots
    python benchmarks/bench_inflight.py --accounts 40 --capacity 25 --scale 1   # 1,000
    python benchmarks/bench_inflight.py --py-spy profile.svg  # the run under py-spy
    python benchmarks/bench_inflight.py --no-hint --no-progress   # answers as Replicate's

The mock runs as its own process (``python -m reelqueue mock-provider``) with the bundled
sample video, renders of 60-90 s times ``--scale`` and a poll hint of 5 s; N accounts of
capacity C are added with ``reelqueue accounts add``, each with a key of its own (the
mock lists renders per key, as providers list an account's; the tests' file keyring); a
sheet of enough rows for the window is rendered by ``reelqueue run --no-progress`` as its
own process, stopped (SIGTERM, an orderly stop) once the window has passed. Measured:

- CPU of ``run`` and of the mock, each from /proc/<pid>/stat over windows (% of a core);
- slots filled: the mock's own count of renders running (``running_now``), once a second;
- completions (journal rows COMPLETED within the window) against the ideal: the mock's
  own render durations replayed back to back in every slot, with no engine latency;
- latency from the render's end at the mock (``/_mock/timeline``) to the file on disk (the
  journal's ``finished_at``, written after the rename and fsync), p50 and p99;
- resident memory of ``run`` (now and peak), the machine's load before and after.

Nothing here asserts a time; the figures go to docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import heapq
import json
import os
import shutil
import signal
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import IO, Any

ROOT = Path(__file__).resolve().parent.parent
APP = ROOT / "app"
REELQUEUE = [sys.executable, "-m", "reelqueue"]
TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


KEYRING: Path | None = None
"""The benchmark's keyring file: each account has a key of its own, as real accounts do
(the mock lists renders per key), kept by the tests' file backend, never the user's."""


def child_env(app: Path = APP) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(
        p for p in (str(app), str(ROOT), env.get("PYTHONPATH", "")) if p)
    if KEYRING is not None:
        env["PYTHON_KEYRING_BACKEND"] = "tests.team.file_keyring.FileKeyring"
        env["REELQUEUE_TEST_KEYRING"] = str(KEYRING)
    env.pop("REELQUEUE_DATA_DIR", None)
    env["PYTHONUNBUFFERED"] = "1"
    return env


def loadavg() -> str:
    try:
        return " ".join(Path("/proc/loadavg").read_text().split()[:3])
    except OSError:
        return "unknown"


def cpu_seconds(pid: int) -> float | None:
    """utime + stime of a process (all its threads), None once it is gone."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    return (int(fields[11]) + int(fields[12])) / TICKS


def memory_kb(pid: int) -> tuple[int, int]:
    """(VmRSS, VmHWM) in KiB; zeros once the process is gone."""
    rss = hwm = 0
    with contextlib.suppress(OSError):
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                rss = int(line.split()[1])
            elif line.startswith("VmHWM:"):
                hwm = int(line.split()[1])
    return rss, hwm


def get_json(url: str) -> Any:
    import httpx2

    response = httpx2.get(url, timeout=30)
    response.raise_for_status()
    return response.json()


def start_mock(folder: Path, low: float, high: float, hint: float,
               slots: int, answers: tuple[str, ...] = ()
               ) -> tuple[subprocess.Popen[bytes], str, IO[bytes]]:
    log_path = folder / "mock.log"
    log = log_path.open("wb")
    # Limits published by the mock bind the claim (issue 32): give every model room.
    view = {"organization_id": None, "balance": {"amount": 1e9, "unit": "credits"},
            "models": {}}
    proc = subprocess.Popen(
        [*REELQUEUE, "mock-provider", "--port", "0", "--seed", "33", "--plain-video",
         "--render-seconds-min", f"{low:g}", "--render-seconds-max", f"{high:g}",
         "--poll-after", f"{hint:g}", "--account-view", json.dumps(view), *answers],
        stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, env=child_env(),
        start_new_session=True)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"the mock exited: {log_path.read_text()[-2000:]}")
        for line in log_path.read_text(errors="replace").splitlines():
            if line.startswith("mock provider listening on "):
                return proc, line.rsplit(" ", 1)[1].strip(), log
        time.sleep(0.05)
    raise SystemExit("the mock did not start listening in 60 s")


def cli(data: Path, *args: str, key: str | None = None) -> None:
    done = subprocess.run([*REELQUEUE, "--data-dir", str(data), *args], capture_output=True,
                          text=True, env=child_env(), timeout=300, check=False,
                          input=key if key is not None else "")
    if done.returncode != 0:
        raise SystemExit(f"reelqueue {' '.join(args)} failed: {done.stdout}{done.stderr}")


def write_sheet(path: Path, rows: int) -> None:
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["name", "prompt"])
        for i in range(rows):
            writer.writerow([f"r{i:05d}", f"in flight {i}"])


def stop(proc: subprocess.Popen[Any], grace: float = 60.0) -> None:
    """Our own child, by its pid: SIGTERM (an orderly stop), then SIGKILL."""
    if proc.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            os.kill(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.kill(proc.pid, signal.SIGKILL)
            proc.wait(timeout=30)


def slot_time_filled(renders: list[dict[str, Any]], slots: int, start: float,
                     end: float) -> float:
    """The share of slot-time in [start, end] that held a render running at the mock,
    from the mock's own timeline (each render's create to its end): the time a slot
    spends between one render's end and the next create is the part not filled."""
    if end <= start or not slots:
        return float("nan")
    running = sum(max(0.0, min(r["ends_at"], end) - max(r["created_at"], start))
                  for r in renders)
    return running / (slots * (end - start))


def ideal_completions(durations: list[float], slots: int, window: float) -> int:
    """The mock's render durations (in creation order, cycled when the run made fewer)
    replayed back to back in ``slots`` slots from time 0: renders ended by ``window``."""
    if not durations:
        return 0
    free = [0.0] * slots  # when each slot is free again
    done = i = 0
    while free:
        start = heapq.heappop(free)
        end = start + durations[i % len(durations)]
        i += 1
        if end <= window:
            done += 1
            heapq.heappush(free, end)
    return done


def percentile(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


class Sampler(threading.Thread):
    """Once a second: the mock's running renders; every ``window`` s: CPU of both."""

    def __init__(self, mock_url: str, run_pid: int, mock_pid: int, window: float) -> None:
        super().__init__(daemon=True)
        self.mock_url, self.run_pid, self.mock_pid = mock_url, run_pid, mock_pid
        self.window = window
        self.running: list[tuple[float, int]] = []
        self.cpu: list[tuple[float, float, float]] = []  # (t, run %, mock %)
        self.rss_kb = self.hwm_kb = 0
        self.stopping = threading.Event()

    def run(self) -> None:
        t0 = last = time.monotonic()
        run0, mock0 = cpu_seconds(self.run_pid) or 0.0, cpu_seconds(self.mock_pid) or 0.0
        while not self.stopping.wait(1.0):
            now = time.monotonic()
            with contextlib.suppress(Exception):
                self.running.append((now - t0, int(
                    get_json(f"{self.mock_url}/_mock/counters")["running_now"])))
            rss, hwm = memory_kb(self.run_pid)
            if rss:
                self.rss_kb, self.hwm_kb = rss, max(self.hwm_kb, hwm)
            if now - last >= self.window:
                run1, mock1 = cpu_seconds(self.run_pid), cpu_seconds(self.mock_pid)
                if run1 is None or mock1 is None:
                    continue
                span = now - last
                self.cpu.append((now - t0, 100 * (run1 - run0) / span,
                                 100 * (mock1 - mock0) / span))
                last, run0, mock0 = now, run1, mock1


def journal_figures(journal: Path) -> tuple[dict[str, float], dict[str, int],
                                           list[float]]:
    """Completed jobs' finished_at by job key, the count of jobs by state, and when each
    job's last claim started (claims against completions over time: a start that lags
    the finishes is the overload brake, engine/load.py)."""
    db = sqlite3.connect(f"file:{journal}?mode=ro", uri=True, timeout=30)
    try:
        done = {key: at for key, at in db.execute(
            "SELECT job_key, finished_at FROM jobs WHERE state = 'COMPLETED'")}
        states = dict(db.execute("SELECT state, count(*) FROM jobs GROUP BY state"))
        starts = [at for (at,) in db.execute(
            "SELECT started_at FROM jobs WHERE started_at IS NOT NULL")]
    finally:
        db.close()
    return done, states, starts


def turnaround(journal: Path, timeline: list[dict[str, Any]], since: float,
               until: float) -> dict[str, list[float]]:
    """Where an account's slot stays empty between one render's end at the mock and the
    next create the mock receives on that account (each render ending in [since, until]):
    the end seen (the journal's ``downloading``), the file on disk (``completed``), the
    next claim of the account, and that claim's create at the mock."""
    db = sqlite3.connect(f"file:{journal}?mode=ro", uri=True, timeout=30)
    try:
        account_of = dict(db.execute("SELECT job_key, account FROM jobs"))
        key_of = dict(db.execute("SELECT id, job_key FROM jobs"))
        marks: dict[str, dict[str, float]] = {}
        claims: dict[str, list[tuple[float, str]]] = {}
        for at, event, job_id, account in db.execute(
                "SELECT at, event, job_id, account FROM ledger WHERE event IN "
                "('claimed', 'downloading', 'completed') ORDER BY seq"):
            key = key_of.get(job_id)
            if key is None:
                continue
            marks.setdefault(key, {}).setdefault(event, at)
            if event == "claimed":
                claims.setdefault(account, []).append((at, key))
    finally:
        db.close()
    created = {r["job_key"]: r["created_at"] for r in timeline}
    parts: dict[str, list[float]] = {"empty slot (end -> next create)": [],
                                     "end -> end seen": [], "end seen -> file": [],
                                     "file -> next claim": [], "claim -> create": []}
    for r in timeline:
        end, key = r["ends_at"], r["job_key"]
        account, mark = account_of.get(key), marks.get(key, {})
        if not since <= end <= until or account is None or "completed" not in mark:
            continue
        done = mark["completed"]
        nxt = next(((at, k) for at, k in claims.get(account, ()) if at >= done), None)
        if nxt is None or nxt[1] not in created:
            continue
        parts["empty slot (end -> next create)"].append(created[nxt[1]] - end)
        parts["end -> end seen"].append(mark.get("downloading", done) - end)
        parts["end seen -> file"].append(done - mark.get("downloading", done))
        parts["file -> next claim"].append(nxt[0] - done)
        parts["claim -> create"].append(created[nxt[1]] - nxt[0])
    return parts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--accounts", type=int, default=8)
    parser.add_argument("--capacity", type=int, default=25)
    parser.add_argument("--scale", type=float, default=0.25,
                        help="render times are 60-90 s times this (default 0.25: quick)")
    parser.add_argument("--hint", type=float, default=5.0, help="the mock's poll hint, s")
    parser.add_argument("--no-hint", action="store_true",
                        help="the mock's poll answers carry no hint (as Replicate's)")
    parser.add_argument("--no-progress", action="store_true",
                        help="the mock's poll answers carry no progress (as Replicate's)")
    parser.add_argument("--window", type=float, default=0.0,
                        help="seconds measured (default: 2.5 render lengths + 30 s)")
    parser.add_argument("--cpu-window", type=float, default=10.0)
    parser.add_argument("--py-spy", metavar="FILE", default=None,
                        help="run `reelqueue run` under py-spy record (--format from the "
                             "name: .svg flamegraph, .txt raw)")
    parser.add_argument("--run-app", metavar="DIR", type=Path, default=APP,
                        help="the app/ folder `reelqueue run` imports (another checkout's, "
                             "for a before and after on one machine; default: this one)")
    parser.add_argument("--keep", metavar="DIR", default=None,
                        help="work in this folder and keep it")
    args = parser.parse_args()

    low, high = 60.0 * args.scale, 90.0 * args.scale
    slots = args.accounts * args.capacity
    window = args.window or 2.5 * (low + high) / 2 + 30.0
    rows = int(slots * (window / low + 2))
    before = loadavg()
    print(f"in flight: {args.accounts} accounts x {args.capacity} = {slots} slots; renders "
          f"{low:g}-{high:g} s, poll hint {'none' if args.no_hint else f'{args.hint:g} s'}"
          f"{', no progress' if args.no_progress else ''}; window {window:.0f} s; "
          f"{rows} rows; load before {before}; {os.cpu_count()} CPUs")

    folder = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="inflight-"))
    folder.mkdir(parents=True, exist_ok=True)
    global KEYRING
    KEYRING = folder / "keyring.json"
    data, videos = folder / "data", folder / "videos"
    answers = (("--no-hint",) if args.no_hint else ()) + (
        ("--no-progress",) if args.no_progress else ())
    mock, url, mock_log = start_mock(folder, low, high, args.hint, slots, answers)
    run: subprocess.Popen[bytes] | None = None
    try:
        for n in range(args.accounts):
            cli(data, "accounts", "add", f"acct{n:02d}", "--provider", "mock", "--capacity",
                str(args.capacity), "--base-url", url, "--no-check",
                key=f"bench-key-{n:02d}\n")
        sheet = folder / "sheet.csv"
        write_sheet(sheet, rows)
        cli(data, "--videos-dir", str(videos), "import", str(sheet), "--provider", "mock")
        command = [*REELQUEUE, "--data-dir", str(data), "--videos-dir", str(videos), "run",
                   "--no-progress"]
        if args.py_spy:
            fmt = "flamegraph" if args.py_spy.endswith(".svg") else "raw"
            command = ["py-spy", "record", "--threads", "--rate", "50", "--format", fmt,
                       "-o", args.py_spy, "--", *command]
        run_log = (folder / "run.log").open("wb")
        run = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=run_log,
                               stderr=subprocess.STDOUT, env=child_env(args.run_app),
                               start_new_session=True)
        run_pid = run.pid
        if args.py_spy:  # py-spy's child is the run
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline:
                kids = Path(f"/proc/{run.pid}/task/{run.pid}/children")
                found = kids.read_text().split() if kids.exists() else []
                if found:
                    run_pid = int(found[0])
                    break
                time.sleep(0.05)
        started_wall = time.time()
        sampler = Sampler(url, run_pid, mock.pid, args.cpu_window)
        sampler.start()
        time.sleep(window)
        sampler.stopping.set()
        sampler.join()
        ended_wall = started_wall + window
        if args.py_spy:  # py-spy writes its file once the run has ended
            os.kill(run_pid, signal.SIGTERM)
            with contextlib.suppress(subprocess.TimeoutExpired):
                run.wait(timeout=120)
        stop(run)
        run_log.close()
        timeline = get_json(f"{url}/_mock/timeline")
        counters = get_json(f"{url}/_mock/counters")
        polls = int(counters["polls_total"])
        lists = int(counters.get("lists_total", 0))
    finally:
        if run is not None:
            stop(run)
        stop(mock)
        mock_log.close()
    after = loadavg()

    done, states, starts = journal_figures(data / "journal.sqlite3")
    completed = [at for at in done.values() if at is not None and at <= ended_wall]
    ours = [r for r in timeline if not r["cancelled"]]
    ours.sort(key=lambda r: r["created_at"])
    durations = [r["ends_at"] - r["created_at"] for r in ours]
    first_create = ours[0]["created_at"] if ours else started_wall
    ideal = ideal_completions(durations, slots, ended_wall - first_create)
    latency = [done[r["job_key"]] - r["ends_at"] for r in ours
               if done.get(r["job_key"]) is not None and done[r["job_key"]] <= ended_wall]
    settle = min(30.0, window / 4)
    held = [n for t, n in sampler.running if t >= settle]
    filled = [n / slots for n in held]
    full_share = sum(1 for f in filled if f >= 0.99) / len(filled) if filled else 0.0
    slot_time = slot_time_filled(ours, slots, started_wall + settle, ended_wall)
    run_cpu = [c for _, c, _ in sampler.cpu]
    mock_cpu = [m for _, _, m in sampler.cpu]
    fill_time = next((t for t, n in sampler.running if n >= 0.99 * slots), None)

    def med(values: list[float]) -> float:
        return statistics.median(values) if values else float("nan")

    print()
    print(f"{'figure':44} {'value':>12}")
    rows_out = [
        ("slots (accounts x capacity)", f"{slots}"),
        ("time to 99 % filled, s", "never" if fill_time is None else f"{fill_time:.0f}"),
        (f"filled after {settle:.0f} s: median share", f"{med(filled):.3f}"),
        (f"filled after {settle:.0f} s: min share", f"{min(filled, default=0):.3f}"),
        ("time >= 99 % filled (after settle)", f"{full_share:.3f}"),
        (f"filled after {settle:.0f} s: mean share (samples)", f"{statistics.fmean(filled):.4f}"
         if filled else "n/a"),
        ("slot-time filled after settle (timeline)", f"{slot_time:.4f}"),
        ("completions in window", f"{len(completed)}"),
        ("ideal (mock durations back to back)", f"{ideal}"),
        ("completions / ideal", f"{len(completed) / ideal:.3f}" if ideal else "n/a"),
        ("end at mock -> file on disk p50, s", f"{percentile(latency, 0.5):.2f}"),
        ("end at mock -> file on disk p99, s", f"{percentile(latency, 0.99):.2f}"),
        ("end at mock -> file on disk max, s", f"{max(latency, default=float('nan')):.2f}"),
        ("run CPU median / max, % of a core",
         f"{med(run_cpu):.0f} / {max(run_cpu, default=float('nan')):.0f}"),
        ("mock CPU median / max, % of a core",
         f"{med(mock_cpu):.0f} / {max(mock_cpu, default=float('nan')):.0f}"),
        ("run resident memory now / peak, MiB",
         f"{sampler.rss_kb / 1024:.0f} / {sampler.hwm_kb / 1024:.0f}"),
        ("polls answered by the mock", f"{polls}"),
        ("polls per completion", f"{polls / len(completed):.1f}" if completed else "n/a"),
        ("list calls answered by the mock (one polls many renders)", f"{lists}"),
        ("status requests (polls + lists) per completion",
         f"{(polls + lists) / len(completed):.2f}" if completed else "n/a"),
        ("run CPU ms per poll (all of run's CPU / polls)",
         f"{sum(run_cpu) * args.cpu_window * 10 / polls:.2f}" if polls else "n/a"),
        ("run CPU-seconds per completion",
         f"{sum(run_cpu) * args.cpu_window / 100 / len(completed):.3f}" if completed
         else "n/a"),
        ("journal states at stop", json.dumps(states, sort_keys=True)),
        ("load before / after", f"{before} / {after}"),
    ]
    for name, value in rows_out:
        print(f"{name:44} {value:>12}")
    print("\nCPU windows (t s: run %, mock %): " + ", ".join(
        f"{t:.0f}: {r:.0f}, {m:.0f}" for t, r, m in sampler.cpu))
    print("filled over time (t s: running): " + ", ".join(
        f"{t:.0f}: {n}" for t, n in sampler.running[::max(1, len(sampler.running) // 20)]))
    t0 = min(starts, default=started_wall)
    buckets = range(int((ended_wall - t0) // 10) + 1)
    print("claims started / completed per 10 s: " + ", ".join(
        f"{b * 10}: {sum(1 for s in starts if int((s - t0) // 10) == b)}/"
        f"{sum(1 for f in completed if int((f - t0) // 10) == b)}" for b in buckets))
    braked = brake_spans(data / "logs", ended_wall)
    print("starts held back by the overload brake, s per 10 s: " + ", ".join(
        f"{b * 10}: {overlap(braked, t0 + b * 10, t0 + b * 10 + 10):.0f}" for b in buckets)
        + f"; in all {sum(e - s for s, e in braked):.0f} s of {ended_wall - t0:.0f} s, "
        f"{len(braked)} episodes")
    parts = turnaround(data / "journal.sqlite3", ours, started_wall + settle, ended_wall)
    print("slot turnaround, s (p50 / p90 / p99 / mean): " + "; ".join(
        f"{name} {percentile(v, 0.5):.3f} / {percentile(v, 0.9):.3f} / "
        f"{percentile(v, 0.99):.3f} / {statistics.fmean(v) if v else float('nan'):.3f}"
        for name, v in parts.items()))
    if args.keep:
        (folder / "timeline.json").write_text(json.dumps(timeline))
    if args.keep:
        print(f"work folder: {folder}")
    else:
        shutil.rmtree(folder, ignore_errors=True)


def brake_spans(logs: Path, until: float) -> list[tuple[float, float]]:
    """When ``run`` held new starts back (engine/engine.py logs "the engine is busy" and
    "the engine caught up", with the log's own times): (start, end) epoch seconds, an
    episode still open at the end closed at ``until``."""
    spans: list[tuple[float, float]] = []
    since: float | None = None
    lines: list[str] = []
    for path in sorted(logs.glob("reelqueue.log*"), reverse=True):  # oldest file first
        lines.extend(path.read_text(encoding="utf-8", errors="replace").splitlines())
    for line in lines:
        busy, caught = "the engine is busy" in line, "the engine caught up" in line
        if not (busy or caught):
            continue
        stamp = time.mktime(time.strptime(line[:19], "%Y-%m-%d %H:%M:%S"))
        stamp += int(line[20:23]) / 1000
        if busy and since is None:
            since = stamp
        elif caught and since is not None:
            spans.append((since, stamp))
            since = None
    if since is not None:
        spans.append((since, until))
    return spans


def overlap(spans: list[tuple[float, float]], low: float, high: float) -> float:
    return sum(max(0.0, min(e, high) - max(s, low)) for s, e in spans)


if __name__ == "__main__":
    main()
