"""Routes through the real adapters (issue 24): the real ``reelqueue run`` process, real HTTP
on loopback, the real OpenAI-compatible, Replicate and Luma Dream Machine (legacy) adapters
against ``provider_server.py`` fakes, and the built-in mock provider as its own process.

Four accounts, one per provider; twelve rows routed over the three fakes then the mock
(order policy, ``--tolerance nearest-duration``: the row's 8 s is 8 on the gateway, on
Replicate and on the mock, 9 on Luma, as the import preview shows per candidate). Three of
the providers fail, each in its documented shape, and the test runs three times so that
each provider plays each part once (:data:`ROLES`):

- the first candidate has credits for :data:`CREDITS` creates, then answers "out of
  credits" (OpenAI 429 ``insufficient_quota``, Replicate 402, Luma 400 "Insufficient
  credits"): account-level, the account pauses;
- the second answers 401 to every request: the key is rejected (account-level);
- the third refuses the duration it is sent (OpenAI 400 ``invalid_request_error``,
  Replicate 422 "Input validation failed", Luma 400 "Invalid request"): invalid input at
  create, a fenced hand-over marks it refused on the job's route, never tried again for
  that job; the account stays ready.

The mock takes whatever is left. Checked: every row COMPLETED with its file; one render
per row over the four providers' own records (no row created twice, none paid for
nothing); the renders the first candidate made before its credits ran out completed there;
each account's end in the journal and ``status --json``; the ledger's ``handed_over``
rows (from, to, at claim or at refusal) and each job's route with its refusals; every
account's spend equal to the renders it made (a refused create's charge given back);
each account's line in ``reelqueue status`` with "took over N from ..."; the manifest's
route per job.

The second test loses a create's answer on the gateway (the fake holds it back, the runner
is killed) and checks that the restarted runner finds the render by searching the
gateway's list, completes the job there and never hands it over to the healthy mock.
"""

from __future__ import annotations

import csv
import json
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import IO, Any

import pytest

from reelqueue.application.words import condition_words
from reelqueue.domain.states import AccountStatus, JobState
from tests.proof.harness import (
    REELQUEUE,
    START_TIMEOUT,
    MockProcess,
    child_env,
    integrity_ok,
    journal,
    kill_process,
    record_figures,
    sha256_file,
    wait_for,
)
from tests.proof.test_kill_adapters import AdapterRunner
from tests.team.file_keyring import BACKEND, FILE_ENV

pytestmark = [pytest.mark.slow, pytest.mark.integration]

ROWS = 12
CREDITS = 3  # creates the first candidate takes before its credits run out
KINDS = ("openai-compat", "replicate", "luma-legacy")
NAMES = {"openai-compat": "gateway", "replicate": "rep", "luma-legacy": "luma", "mock": "mk"}
DURATION = 8  # the row's; as sent: openai-compat 8, replicate 8, luma-legacy 9, mock 8
SENT = {"openai-compat": 8, "replicate": 8, "luma-legacy": 9, "mock": 8}
# Each provider's documented answer (provider_server.py; tests/fixtures/*/SOURCE.md).
CREDITS_STATUS = {"openai-compat": 429, "replicate": 402, "luma-legacy": 400}
REFUSE_STATUS = {"openai-compat": 400, "replicate": 422, "luma-legacy": 400}
# (out of credits, key rejected, refuses the duration): each provider in each part once.
ROLES = [("openai-compat", "replicate", "luma-legacy"),
         ("replicate", "luma-legacy", "openai-compat"),
         ("luma-legacy", "openai-compat", "replicate")]
STALL_SECONDS = 45.0  # a run fails only when no job finished for this long
RUN_ARGS = ["--no-progress", "--tolerance", "nearest-duration", "--max-attempts", "10",
            "--retry-base", "0.2", "--retry-cap", "2", "--http-timeout", "3"]
KEY = "fake-key-0123456789abcdef\n"


def _env(keyring_file: Path) -> dict[str, str]:
    env = child_env()
    env["PYTHON_KEYRING_BACKEND"] = BACKEND
    env[FILE_ENV] = str(keyring_file)
    return env


class Fake:
    """``python -m tests.proof.provider_server`` for one kind; its state file read back."""

    def __init__(self, folder: Path, kind: str, env: dict[str, str], *options: str) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        self.kind = kind
        self.state_path = folder / "state.json"
        self.log_path = folder / "fake.log"
        self._log: IO[bytes] = self.log_path.open("wb")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "tests.proof.provider_server", "--kind", kind, "--port",
             "0", "--state", str(self.state_path), "--seed", "24", "--list-delay", "0.2",
             "1.0", "--render", "0.5", "1.5", *options],
            stdin=subprocess.DEVNULL, stdout=self._log, stderr=subprocess.STDOUT, env=env,
            start_new_session=True)

        def listening() -> str | None:
            if self.proc.poll() is not None:
                raise AssertionError(f"fake exited: {self.log_path.read_text()}")
            for line in self.log_path.read_text(errors="replace").splitlines():
                if line.startswith("fake provider listening on "):
                    return line.rsplit(" ", 1)[1].strip()
            return None

        try:
            self.url: str = wait_for(listening, START_TIMEOUT, f"the {kind} fake to listen")
        except BaseException:
            self.stop()
            raise

    def state(self) -> dict[str, Any]:
        return dict(json.loads(self.state_path.read_text("utf-8")))

    def stop(self) -> None:
        kill_process(self.proc)
        self._log.close()


class Run(AdapterRunner):
    """``reelqueue run`` of the routed sheet (its own providers), through
    ``_adapter_runner.py`` as the adapter kill test runs it."""

    def __init__(self, data: Path, videos: Path, sheet: Path, log_path: Path,
                 env: dict[str, str]) -> None:
        super().__init__(data, videos, sheet, None, log_path, env, run_args=RUN_ARGS)

    def drain(self, data: Path) -> None:
        """To its end, bounded by progress: fails only when no job finished for
        :data:`STALL_SECONDS`."""
        with journal(data) as reader:
            last, last_change = -1, time.monotonic()
            while self.alive():
                done = reader.counts().by_state.get("COMPLETED", 0)
                if done != last:
                    last, last_change = done, time.monotonic()
                if time.monotonic() - last_change > STALL_SECONDS:
                    self.kill()
                    raise AssertionError(f"no job finished for {STALL_SECONDS:.0f}s:\n"
                                         f"{self.output()[-4000:]}")
                time.sleep(0.2)
        code = self.proc.wait()
        self._log.close()
        assert code == 0, self.output()[-4000:]


def _cli(data: Path, env: dict[str, str], *args: str, videos: Path | None = None,
         stdin: str = "") -> subprocess.CompletedProcess[str]:
    command = [*REELQUEUE, "--data-dir", str(data)]
    if videos is not None:
        command += ["--videos-dir", str(videos)]
    done = subprocess.run([*command, *args], input=stdin, capture_output=True, text=True,
                          timeout=120, env=env, check=False)
    assert done.returncode == 0, f"{args}:\n{done.stdout}\n{done.stderr}"
    return done


def _add(data: Path, env: dict[str, str], kind: str, url: str, capacity: int = 2) -> None:
    extra = ["--model", "sora-2"] if kind == "openai-compat" else []
    _cli(data, env, "accounts", "add", NAMES[kind], "--provider", kind, "--capacity",
         str(capacity),
         "--base-url", url, "--no-check", *extra, stdin="" if kind == "mock" else KEY)


def _prompt(i: int) -> str:
    return f"route proof shot {i}: a lighthouse at dusk, take {i} [[mock:render_seconds=0.5]]"


def _write_sheet(path: Path, rows: int, route: str) -> list[str]:
    prompts = [_prompt(i) for i in range(rows)]
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["name", "prompt", "providers", "duration"])
        for i, prompt in enumerate(prompts):
            writer.writerow([f"shot{i:02d}", prompt, route, DURATION])
    return prompts


def _manifest(videos: Path) -> dict[str, Any]:
    (path,) = videos.rglob("manifest-*.json")
    return dict(json.loads(path.read_text("utf-8")))


@pytest.mark.parametrize("roles", ROLES, ids=lambda r: f"{r[0]}-credits")
def test_routes_move_on_through_the_real_adapters(tmp_path: Path,
                                                  roles: tuple[str, str, str]) -> None:
    broke, rejected, refuses = roles
    route = [*roles, "mock"]  # in this order (the default policy)
    started = time.monotonic()
    data, videos, sheet = tmp_path / "data", tmp_path / "videos", tmp_path / "sheet.csv"
    env = _env(tmp_path / "keyring.json")
    prompts = _write_sheet(sheet, ROWS, "|".join(route))
    fakes: dict[str, Fake] = {}
    mock = MockProcess(tmp_path / "mock", "--render-seconds-min", "0.3",
                       "--render-seconds-max", "1.0", "--seed", "24")
    options = {broke: ["--credits", str(CREDITS)], rejected: ["--reject-key"],
               refuses: ["--refuse-duration", str(SENT[refuses])]}
    # The first candidate claims one job more than its credits at once (no other account
    # takes a routed job while its first candidate has a free slot): they surely run out.
    capacity = {broke: CREDITS + 1, rejected: 2, refuses: 2, "mock": 2}
    run: Run | None = None
    try:
        for kind in KINDS:
            fakes[kind] = Fake(tmp_path / kind, kind, env, "--hold", "0.05", "0.2",
                               *options[kind])
        mock.start()
        for kind in KINDS:
            _add(data, env, kind, fakes[kind].url, capacity[kind])
        _add(data, env, "mock", mock.url, capacity["mock"])

        # The intake plans every candidate of every row (Luma's 9 s by the tolerance).
        preview = _cli(data, env, "import", str(sheet), "--dry-run", "--tolerance",
                       "nearest-duration", "--preview-rows", str(ROWS)).stdout
        assert preview.count("route (order, tolerance nearest-duration):") == ROWS, preview
        for n, kind in enumerate(route, 1):
            assert preview.count(f"        {n}. {kind}: ") == ROWS, (kind, preview)
        luma = route.index("luma-legacy") + 1
        assert preview.count(f"{luma}. luma-legacy: $1.27 (duration {DURATION} -> "
                             f"{SENT['luma-legacy']})") == ROWS, preview
        assert "left out" not in preview, preview

        run = Run(data, videos, sheet, tmp_path / "run.log", env)
        run.drain(data)
        states = {kind: fake.state() for kind, fake in fakes.items()}
        counters = mock.counters()
        status_text = _cli(data, env, "status", videos=videos).stdout
        (tmp_path / "status.txt").write_text(status_text, "utf-8")
        status_json = json.loads(_cli(data, env, "status", "--json", videos=videos).stdout)
    finally:
        if run is not None:
            run.kill()
        for fake in fakes.values():
            fake.stop()
        mock.stop()
    elapsed = time.monotonic() - started

    integrity_ok(data / "journal.sqlite3")
    with journal(data) as store:
        jobs = store.list_jobs()
        ledger = store.ledger()
        accounts = {a.name: a for a in store.list_accounts()}
    by_id = {j.id: j for j in jobs}
    assert len(jobs) == ROWS
    assert all(j.state == JobState.COMPLETED for j in jobs), [
        (j.id, j.state, j.provider, j.error_label, j.error_message) for j in jobs]
    for job in jobs:
        path = videos / job.output_path
        assert path.is_file() and sha256_file(path) == job.output_sha256, job.id

    # One render per row over the four providers' own records; none paid for nothing.
    made: Counter[str] = Counter()
    for state in states.values():
        for render in state["renders"]:
            assert not render["other"]
            made[render["prompt"]] += 1
    mock_creates = Counter(counters["creates_by_job_key"])
    key_prompt = {j.job_key: j.prompt for j in jobs}
    for key, n in mock_creates.items():
        made[key_prompt[key]] += n
    assert made == Counter(prompts), made
    assert states[rejected]["renders"] == [] and states[refuses]["renders"] == []
    # The first candidate made exactly CREDITS renders, each completed there and
    # downloaded once; every later create was refused as out of credits (nothing made).
    first = states[broke]
    assert first["accepted"] == CREDITS and len(first["renders"]) == CREDITS, first
    assert first["refused"], first
    assert {r["reason"] for r in first["refused"]} == {"out of credits"}
    assert {r["status"] for r in first["refused"]} == {CREDITS_STATUS[broke]}
    on_first = {j.provider_job_id: j for j in jobs if j.provider == broke}
    assert set(on_first) == {r["id"] for r in first["renders"]}
    assert all(r["downloads"] == 1 for r in first["renders"]), first["renders"]
    assert {j.account for j in on_first.values()} == {NAMES[broke]}
    # Every other row completed on the mock (the only healthy candidate left).
    assert Counter(j.provider for j in jobs) == {broke: CREDITS, "mock": ROWS - CREDITS}
    assert sum(mock_creates.values()) == ROWS - CREDITS
    # The second was asked and rejected the key; the third refused the duration, once
    # per row at most.
    assert states[rejected]["refused"], states[rejected]
    assert {r["status"] for r in states[rejected]["refused"]} == {401}
    assert {r["reason"] for r in states[rejected]["refused"]} == {"key rejected"}
    refusals = states[refuses]["refused"]
    assert refusals and {r["reason"] for r in refusals} == {"invalid duration"}
    assert {r["status"] for r in refusals} == {REFUSE_STATUS[refuses]}
    assert len(refusals) == len({r["prompt"] for r in refusals}), (
        f"{refuses} was asked twice for one row", refusals)

    # The accounts' ends, in the journal and in status --json.
    ends = {NAMES[broke]: AccountStatus.OUT_OF_CREDITS,
            NAMES[rejected]: AccountStatus.KEY_REJECTED,
            NAMES[refuses]: AccountStatus.READY, NAMES["mock"]: AccountStatus.READY}
    assert {name: a.status for name, a in accounts.items()} == ends, accounts
    shown = {a["name"]: a["status"] for a in status_json["accounts"]}
    assert shown == {name: status.value for name, status in ends.items()}, shown

    # The ledger: every job that ended elsewhere than its first candidate was handed over
    # (from, to: two providers of its route), and its last move went where it rendered.
    # A refusal marks the refusing provider on the route and puts the job back on the
    # route's best candidate not refused (store/routing.py hand_over_target); a claim
    # moves it on to the claiming account's provider.
    moves = [e for e in ledger if e.event == "handed_over"]
    for entry in moves:
        assert entry.job_id is not None
        came, went = entry.detail["from"], entry.detail["to"]
        assert came in route and went in route and came != went, entry.detail
        assert entry.detail.get("at") in ("claim", "refusal"), entry.detail
        if entry.detail["at"] == "claim":
            assert entry.account is not None
            assert accounts[entry.account].provider == went, entry
    moved_to = {e.job_id: e.detail["to"] for e in moves}  # the last move of each job
    for job in jobs:
        if job.provider == "mock":
            assert moved_to.get(job.id) == "mock", (job.id, [
                e.detail for e in moves if e.job_id == job.id])
        elif job.id in moved_to:
            assert moved_to[job.id] == job.provider, job.id
    at_refusal = [e for e in moves if e.detail.get("at") == "refusal"]
    assert {e.detail["from"] for e in at_refusal} <= {refuses}, at_refusal
    assert {e.detail["to"] for e in at_refusal} <= {broke}, at_refusal
    assert len(at_refusal) == len(refusals), (at_refusal, refusals)
    refused_jobs = {e.job_id for e in at_refusal}
    for job in jobs:
        assert job.route is not None
        assert job.route.providers() == route, job.route
        refused = {c.provider: c.refused for c in job.route.candidates}
        assert bool(refused[refuses]) == (job.id in refused_jobs), job.route
        assert {p for p, why in refused.items() if why} <= {refuses}, job.route
        if job.id in refused_jobs:
            why = str(refused[refuses])
            assert why.startswith("invalid input: ") and str(SENT[refuses]) in why, why
        for candidate in job.route.candidates:
            assert dict(candidate.params)["duration"] == SENT[candidate.provider], candidate
    # No job was moved once a create of it existed: a create at most once per job.
    assert Counter(e.event for e in ledger)["possible_duplicate_charge"] == 0

    # Money: a create the provider refused made nothing, so its intent's charge is given
    # back (docs/routing.md "Money"): each account's spend entries add up to the prices of
    # the renders it made (Luma and the mock are priced; the others have no price).
    spent: dict[str, float] = {}
    for entry in ledger:
        if entry.event == "spend":
            assert entry.account is not None
            spent[entry.account] = spent.get(entry.account, 0.0) + float(entry.detail["usd"])
    for name in accounts:
        rendered = sum(float(j.metadata.get("price") or 0.0) for j in jobs
                       if j.account == name)
        assert abs(spent.get(name, 0.0) - rendered) < 1e-6, (name, spent, rendered)

    # Each account's card words in `reelqueue status` ("took over N from ..." counts the
    # moves at claim): the mock took over every row it rendered.
    took: dict[str, Counter[str]] = {name: Counter() for name in accounts}
    for entry in moves:
        if entry.detail["at"] == "claim":
            assert entry.account is not None
            took[entry.account][entry.detail["from"]] += 1
    assert sum(took["mk"].values()) >= ROWS - CREDITS, moves
    for name, status in ends.items():
        account = accounts[name]
        words = ", ".join(f"{n} from {p}" for p, n in sorted(took[name].items()))
        # The condition by its one name (application.words, issue 34): "out of credits",
        # not the code "out_of_credits".
        line = (f"  account {name} ({account.provider}): 0/{capacity[account.provider]} "
                f"running, {condition_words(status.value).name}"
                + (f"; took over {words}" if words else "") + "\n")
        assert line in status_text, (line, status_text)

    # The manifest lists each job's route, and where it rendered.
    manifest = _manifest(videos)
    assert len(manifest["jobs"]) == ROWS
    for entry in manifest["jobs"]:
        job = by_id[entry["id"]]
        assert entry["state"] == "COMPLETED" and entry["provider"] == job.provider
        assert entry["account"] == job.account
        assert [c["provider"] for c in entry["route"]] == route, entry
        refused = {c["provider"]: c["refused"] for c in entry["route"]}
        assert bool(refused[refuses]) == (job.id in refused_jobs), entry
        assert {p for p, why in refused.items() if why} <= {refuses}, entry

    record_figures(f"route_adapters[{broke}-credits]", {
        "rows": ROWS, "route": route, "by_provider": dict(Counter(j.provider for j in jobs)),
        "creates_refused_out_of_credits": len(first["refused"]),
        "requests_key_rejected": len(states[rejected]["refused"]),
        "creates_refused_duration": len(refusals),
        "handed_over": len(moves), "handed_over_at_refusal": len(at_refusal),
        "took_over": {name: dict(c) for name, c in took.items() if c},
        "total_s": round(elapsed, 1)})
    assert elapsed < 60, elapsed


def test_a_lost_create_answer_is_reconciled_never_handed_over(tmp_path: Path) -> None:
    """A create whose answer is lost (the runner killed while the gateway holds it back)
    on a provider that can be searched: the next runner finds the render in the gateway's
    list and completes the job there; it never moves to the healthy mock."""
    started = time.monotonic()
    data, videos, sheet = tmp_path / "data", tmp_path / "videos", tmp_path / "sheet.csv"
    env = _env(tmp_path / "keyring.json")
    prompts = _write_sheet(sheet, 1, "openai-compat|mock")
    mock = MockProcess(tmp_path / "mock", "--render-seconds-min", "0.3",
                       "--render-seconds-max", "0.6")
    fake: Fake | None = None
    run: Run | None = None
    try:
        fake = Fake(tmp_path / "openai", "openai-compat", env, "--hold", "30", "30")
        mock.start()
        _add(data, env, "openai-compat", fake.url)
        _add(data, env, "mock", mock.url)
        run = Run(data, videos, sheet, tmp_path / "run-1.log", env)
        current = fake

        def holding() -> bool:
            assert run is not None and run.alive(), run.output() if run else ""
            return bool(current.state()["holding"])

        wait_for(holding, 60, "the gateway to hold a create's answer back")
        run.kill()
        with journal(data) as store:
            (job,) = store.list_jobs()
        assert job.state == JobState.SUBMITTING and job.provider == "openai-compat", job
        # The answer is lost for good: the next runner must search for the render. The
        # held request is answered later into a closed connection; the gateway goes on.
        run = Run(data, videos, sheet, tmp_path / "run-2.log", env)
        run.drain(data)
        state = fake.state()
        counters = mock.counters()
    finally:
        if run is not None:
            run.kill()
        if fake is not None:
            fake.stop()
        mock.stop()
    with journal(data) as store:
        (job,) = store.list_jobs()
        ledger = store.ledger()
    assert job.state == JobState.COMPLETED, (job.state, job.error_message)
    assert job.provider == "openai-compat" and job.account == "gateway"
    (render,) = state["renders"]
    assert render["prompt"] == prompts[0] and state["creates"] == {prompts[0]: 1}
    assert job.provider_job_id == render["id"] and render["downloads"] == 1
    events = Counter(e.event for e in ledger)
    assert events["reconciled"] == 1, events
    assert events["handed_over"] == 0 and events["possible_duplicate_charge"] == 0, events
    assert sum(Counter(counters["creates_by_job_key"]).values()) == 0
    record_figures("route_adapters_lost_answer", {
        "events": dict(events), "total_s": round(time.monotonic() - started, 1)})
