"""Two ``reelqueue serve --store postgresql://…`` processes on one team database (issue 21):
the API's checklist holds across machines.

Each server is a "machine": its own data folder, keyring file, videos folder and loopback
port; both use the database of the ``team_url`` fixture. Proven here:

- the same Idempotency-Key sent to both APIs (one after the other, and at the same time)
  makes one job; the queue limit counts the team's queue (429 on either API);
- a token made on one machine works on the other; its revoke is refused by both at the
  next request;
- the event stream (SSE from the ledger) delivers each ledger entry exactly once and in
  order across reconnects with ``Last-Event-ID``, while both machines write;
- kill -9 of one API mid-batch: the other finishes the batch, no job lost, none created
  twice (retried submits with the same keys are replays).

Waits are bounded by progress (a stall, not a wall time), for a busy CI machine.
"""

from __future__ import annotations

import json
import subprocess
import threading
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import httpx2
import pytest

from reelqueue.application.submit import job_key_for
from tests.api.serve_harness import ServeProcess, submit_until_answered
from tests.proof.harness import REELQUEUE, START_TIMEOUT, MockProcess, wait_for
from tests.team.file_keyring import write_keys
from tests.team.harness import bound_keys, machine_env, read, team_cli

pytestmark = pytest.mark.integration

ACCOUNT = "team-mock"
KEY = "sk-serve-team-0123456789"
LEASE = ["--lease-seconds", "4", "--retry-base", "0.2", "--retry-cap", "2"]


class TeamServe(ServeProcess):
    """``reelqueue --store URL serve`` as machine ``name`` (its own data folder, keyring
    file and videos folder) on a loopback port."""

    def __init__(self, name: str, folder: Path, url: str, *options: str) -> None:
        data = folder / name / "data"
        data.mkdir(parents=True, exist_ok=True)
        super().__init__(data, folder / name / "videos", *options, log_name=f"serve-{name}")
        self.name = name
        self.store = url
        self.keyring_file = data / "keyring.json"

    def start(self) -> TeamServe:
        self.launch()
        self.wait_serving()
        return self

    def launch(self) -> TeamServe:
        """Start the process without waiting for it to listen."""
        self.starts += 1
        self._log = self.log_path.open("ab")
        self.proc = subprocess.Popen(
            [*REELQUEUE, "--data-dir", str(self.data), "--videos-dir", str(self.videos),
             "--store", self.store, "serve", "--listen", f"127.0.0.1:{self.port}",
             *self.options],
            stdin=subprocess.DEVNULL, stdout=self._log, stderr=subprocess.STDOUT,
            env=machine_env(self.keyring_file), start_new_session=True)
        return self

    def wait_serving(self, timeout: float = START_TIMEOUT) -> None:
        """Until its "Serving" line of this start is out (AssertionError if it exits)."""
        marker = f"Serving https://127.0.0.1:{self.port}/v1"

        def serving() -> bool:
            assert self.proc is not None
            if self.proc.poll() is not None:
                raise AssertionError(f"serve {self.name} exited: {self.output()[-3000:]}")
            return self.output().count(marker) >= self.starts

        wait_for(serving, timeout, f"serve {self.name} to listen", interval=0.05)

    def tokens(self, *args: str) -> subprocess.CompletedProcess[str]:
        """``reelqueue --store URL tokens ...`` on this machine (while it serves)."""
        return team_cli(self.data, self.store, "tokens", *args,
                        keyring_file=self.keyring_file, videos=self.videos)

    def make_token(self, name: str, scope: str = "submit") -> str:
        done = self.tokens("add", name, "--scope", scope)
        assert done.returncode == 0, done.stdout + done.stderr
        token = done.stdout.strip().splitlines()[-1]
        assert token.startswith("rq_"), done.stdout
        return token


def wait_progress(measure: Callable[[], int], target: int, what: str,
                  stall: float = 90.0) -> None:
    """Wait until ``measure()`` reaches ``target``; fail only when it has not moved for
    ``stall`` seconds (progress, not the wall clock, bounds the wait)."""
    last, moved = measure(), time.monotonic()
    while last < target:
        time.sleep(0.2)
        now = measure()
        if now != last:
            last, moved = now, time.monotonic()
        elif time.monotonic() - moved > stall:
            raise AssertionError(f"{what}: stuck at {last} of {target} for {stall:.0f}s")


def shown_seqs(url: str) -> list[int]:
    """The ledger entries the event stream shows (about a job or an account), by seq."""
    return [int(r[0]) for r in read(url, "SELECT seq FROM ledger WHERE job_id IS NOT NULL "
                                         "OR account IS NOT NULL ORDER BY seq")]


def diagnosis(url: str) -> str:
    """The jobs, accounts and instances of the database, for a failed wait."""
    return "\n".join(str(r) for query in (
        "SELECT state, COUNT(*), MIN(lease_owner) FROM jobs GROUP BY state",
        "SELECT name, status, status_detail, capacity FROM accounts",
        "SELECT id, pid, live_renders, stopped_at FROM instances",
        "SELECT event, COUNT(*) FROM ledger GROUP BY event") for r in read(url, query))


def job_count(url: str) -> int:
    return int(read(url, "SELECT COUNT(*) FROM jobs")[0][0])


def test_two_apis_answer_as_one_queue_with_one_token_table(team_url: str,
                                                           tmp_path: Path) -> None:
    a = TeamServe("a", tmp_path, team_url, "--paused", "--max-waiting", "3")
    b = TeamServe("b", tmp_path, team_url, "--paused", "--max-waiting", "3")
    with a, b:
        script = a.make_token("script")  # made on machine a, used on both
        with a.client(script) as on_a, b.client(script) as on_b:
            # The same key on both APIs at the same moment: one job.
            answers: dict[str, httpx2.Response] = {}
            failed: list[BaseException] = []
            body = {"prompt": "a lighthouse at dusk"}

            def post(name: str, client: httpx2.Client) -> None:
                try:
                    answers[name] = client.post("/v1/jobs", json=body,
                                                headers={"Idempotency-Key": "same"})
                except BaseException as exc:  # reported below
                    failed.append(exc)

            threads = [threading.Thread(target=post, args=(n, c))
                       for n, c in (("a", on_a), ("b", on_b))]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join(timeout=120)
            assert not failed, failed
            assert sorted(r.status_code for r in answers.values()) == [200, 201], answers
            assert answers["a"].json()["id"] == answers["b"].json()["id"]
            # One after the other: the second API answers from the team's journal.
            first = on_a.post("/v1/jobs", json={"prompt": "a boat"},
                              headers={"Idempotency-Key": "k1"})
            again = on_b.post("/v1/jobs", json={"prompt": "a boat"},
                              headers={"Idempotency-Key": "k1"})
            other = on_b.post("/v1/jobs", json={"prompt": "a car"},
                              headers={"Idempotency-Key": "k1"})
            assert first.status_code == 201, first.text
            assert again.status_code == 200 and again.json() == {
                "id": first.json()["id"], "replay": True}
            assert other.status_code == 409, other.text
            # The queue limit is the team's: 3 waiting, counted across both APIs.
            third = on_b.post("/v1/jobs", json={"prompt": "shot 3"},
                              headers={"Idempotency-Key": "k3"})
            assert third.status_code == 201, third.text
            full_a = on_a.post("/v1/jobs", json={"prompt": "shot 4"},
                               headers={"Idempotency-Key": "k4"})
            full_b = on_b.post("/v1/jobs", json={"prompt": "shot 5"},
                               headers={"Idempotency-Key": "k5"})
            assert full_a.status_code == 429, full_a.text
            assert full_b.status_code == 429, full_b.text
            assert job_count(team_url) == 3
            listed_a = [j["id"] for j in on_a.get("/v1/jobs").json()["jobs"]]
            listed_b = [j["id"] for j in on_b.get("/v1/jobs").json()["jobs"]]
            assert listed_a == listed_b and len(listed_a) == 3
            health = on_b.get("/v1/health").json()
            assert (health["status"], health["journal"]) == ("up", "writable"), health
        # A token made on machine b works on machine a; revoked on a, both refuse it.
        guest = b.make_token("guest", "read")
        with a.client(guest) as guest_a, b.client(guest) as guest_b:
            assert guest_a.get("/v1/jobs").status_code == 200
            assert guest_b.get("/v1/jobs").status_code == 200
            revoked = a.tokens("revoke", "guest")
            assert revoked.returncode == 0, revoked.stdout + revoked.stderr
            assert guest_b.get("/v1/jobs").status_code == 401
            assert guest_a.get("/v1/jobs").status_code == 401
            assert guest_b.post("/v1/jobs", json={"prompt": "x"},
                                headers={"Idempotency-Key": "g"}).status_code == 401
        listed = b.tokens("list")
        assert listed.returncode == 0 and listed.stdout.split() == ["script", "submit"]
    # The tokens are the team database's, stored as salted hashes only.
    rows = read(team_url, "SELECT name, scope, length(salt), length(digest) FROM api_tokens")
    assert rows == [("script", "submit", 16, 32)]
    for machine in (a, b):
        assert not machine.data.joinpath("journal.sqlite3").exists()
        assert "Traceback" not in machine.output()


class EventReader:
    """Reads ``/v1/events`` of one API in a thread, reconnecting with ``Last-Event-ID``
    after every ``per_connection`` events (and after any dropped connection)."""

    def __init__(self, server: TeamServe, token: str, per_connection: int) -> None:
        self.server = server
        self.token = token
        self.per_connection = per_connection
        self.seqs: list[int] = []
        self.connections = 0
        self.stop = threading.Event()
        self.problems: list[BaseException] = []
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        try:
            while not self.stop.is_set():
                self._one_connection()
        except BaseException as exc:  # reported by the test
            self.problems.append(exc)

    def _one_connection(self) -> None:
        headers = {"Last-Event-ID": str(self.seqs[-1] if self.seqs else 0)}
        self.connections += 1
        got = 0
        try:
            with self.server.client(self.token, timeout=httpx2.Timeout(30.0)) as client, \
                    client.stream("GET", "/v1/events", headers=headers) as response:
                assert response.status_code == 200, response.read()
                for line in response.iter_lines():
                    if self.stop.is_set():
                        return
                    if line.startswith("data: "):
                        self.seqs.append(int(json.loads(line[6:])["seq"]))
                        got += 1
                        if got >= self.per_connection:
                            return  # hang up mid-stream; the next one resumes after it
        except httpx2.TransportError:
            time.sleep(0.1)


@pytest.mark.slow
def test_kill_9_of_one_api_mid_batch_the_other_finishes_and_events_come_once(
        team_url: str, tmp_path: Path) -> None:
    jobs = 24
    with MockProcess(tmp_path / "mock", "--render-seconds-min", "0.5",
                     "--render-seconds-max", "1.5") as mock:
        admin = tmp_path / "admin"
        admin.mkdir()
        added = team_cli(admin, team_url, "accounts", "add", ACCOUNT, "--provider", "mock",
                         "--capacity", "4", "--base-url", mock.url, "--no-check",
                         keyring_file=admin / "keyring.json", stdin=KEY + "\n")
        assert added.returncode == 0, added.stdout + added.stderr
        a = TeamServe("a", tmp_path, team_url, *LEASE)
        b = TeamServe("b", tmp_path, team_url, *LEASE)
        for machine in (a, b):
            write_keys(machine.keyring_file, bound_keys(team_url, {ACCOUNT: KEY}))
        reader: EventReader | None = None
        try:
            a.start()
            b.start()
            token = b.make_token("script")
            reader = EventReader(b, token, per_connection=7)
            reader.thread.start()
            ids: dict[str, int] = {}
            with a.client(token) as on_a, b.client(token) as on_b:
                for i in range(jobs):  # half through each API
                    client = on_a if i % 2 else on_b
                    key = f"shot-{i}"
                    answer = client.post("/v1/jobs", json={
                        "prompt": f"team shot {i} [[mock:render_seconds=3]]"},
                        headers={"Idempotency-Key": key})
                    assert answer.status_code == 201, answer.text
                    ids[key] = answer.json()["id"]

                pid = a.proc.pid if a.proc is not None else -1

                def a_renders() -> int:
                    return int(read(team_url, "SELECT COUNT(*) FROM jobs j JOIN instances i "
                                    "ON i.id = j.lease_owner WHERE i.pid = %s AND j.state "
                                    "= 'RENDERING'", pid)[0][0])

                try:
                    wait_for(a_renders, 60, "a render in flight on machine a",
                             interval=0.05)
                except AssertionError:
                    raise AssertionError(diagnosis(team_url)) from None
                a.kill()  # SIGKILL mid-batch
                # Every submit retried on b with its key: a replay, never a second job.
                for key, job_id in ids.items():
                    again = submit_until_answered(on_b, {
                        "prompt": f"team shot {key[5:]} [[mock:render_seconds=3]]"}, key)
                    assert again.status_code == 200, again.text
                    assert again.json() == {"id": job_id, "replay": True}

                def completed() -> int:
                    return int(read(team_url, "SELECT COUNT(*) FROM jobs "
                                    "WHERE state = 'COMPLETED'")[0][0])

                wait_progress(completed, jobs, "the batch to complete on machine b")
                listed = on_b.get("/v1/jobs").json()["jobs"]
            assert sorted(j["id"] for j in listed) == sorted(ids.values())
            assert {j["state"] for j in listed} == {"COMPLETED"}
            # The stream catches up with the ledger: every entry once, in order.
            want = shown_seqs(team_url)
            wait_progress(lambda: len(reader.seqs), len(want), "the event stream",
                          stall=60.0)
            reader.stop.set()
            reader.thread.join(timeout=60)
            assert not reader.problems, reader.problems
        finally:
            if reader is not None:
                reader.stop.set()
            a.stop()
            b.stop()
        creates = mock.creates_by_key()
    assert reader.seqs[:len(want)] == want, (len(reader.seqs), len(want))
    assert reader.seqs == sorted(set(reader.seqs))  # none twice, in order
    assert reader.connections >= 4
    rows = read(team_url, "SELECT job_key, id, state FROM jobs ORDER BY id")
    assert len(rows) == jobs
    assert {key: job_id for key, job_id, _ in rows} == {
        job_key_for("script", key): job_id for key, job_id in ids.items()}
    completions = Counter(r[0] for r in read(
        team_url, "SELECT job_id FROM ledger WHERE event = 'completed'"))
    assert set(completions.values()) == {1} and len(completions) == jobs
    maybe_twice = {r[0] for r in read(
        team_url, "SELECT j.job_key FROM ledger l JOIN jobs j ON j.id = l.job_id "
                  "WHERE l.event = 'possible_duplicate_charge'")}
    twice = {key for key, n in creates.items() if n > 1}
    assert twice <= maybe_twice, (twice, maybe_twice)
    assert set(creates) == {key for key, _, _ in rows}
    events = {r[0]: r[1] for r in read(team_url, "SELECT event, COUNT(*) FROM ledger "
                                                 "GROUP BY event")}
    assert events.get("reattached"), diagnosis(team_url)  # a's renders, taken over by b
    assert "Traceback" not in b.output()
