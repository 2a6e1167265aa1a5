"""A worker started while its team database is down waits for it, then renders; it stops
cleanly on SIGTERM while it waits; ``--wait-for-database 0`` gives up at once; a refused
login is never waited for (application/team_wait.py)."""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from pathlib import Path

import pytest

from reelqueue.application.team_wait import MAX_DELAY, NOTE_EVERY, wait_for_team_database
from reelqueue.domain.errors import JournalLoginRefused, JournalUnreachable
from tests import pgserver
from tests.proof.harness import MockProcess, wait_for, write_sheet
from tests.team.file_keyring import write_keys
from tests.team.harness import Worker, bound_keys, new_database, read, settle, team_cli
from tests.team.test_worker import KEY_A, add_accounts, import_sheet

DOWN = JournalUnreachable("The team database (u@db:5432/q) cannot be reached (connection "
                          "refused). Check that the server runs and the network, then run "
                          "the command again: nothing recorded before was lost.")


class FakeTime(threading.Event):
    """A clock and a stop event in one: each wait moves the clock by its delay at once
    (the event itself is set by the test, as a signal would)."""

    def __init__(self) -> None:
        super().__init__()
        self.now = 0.0
        self.waits: list[float] = []

    def clock(self) -> float:
        return self.now

    def wait(self, timeout: float | None = None) -> bool:
        assert timeout is not None
        self.waits.append(timeout)
        self.now += timeout
        return self.is_set()


def opener(answers: Sequence[BaseException | str]
           ) -> tuple[list[float], Callable[[], str]]:
    tries: list[float] = []
    queue = list(answers)

    def open_store() -> str:
        tries.append(0.0)
        answer = queue.pop(0)
        if isinstance(answer, BaseException):
            raise answer
        return answer

    return tries, open_store


def test_an_unreachable_database_is_waited_for_with_growing_delays_then_opened() -> None:
    time = FakeTime()
    said: list[str] = []
    tries, open_store = opener([DOWN] * 7 + ["store"])
    opened = wait_for_team_database(open_store, limit=None, say=said.append,
                                    stop=time, clock=time.clock)
    assert opened == "store" and len(tries) == 8
    assert time.waits == [1, 2, 4, 8, 16, MAX_DELAY, MAX_DELAY]
    assert said[0].startswith("The team database (u@db:5432/q) cannot be reached "
                              "(connection refused). Waiting for it (no limit;")
    assert "run the command again" not in said[0]  # the worker is doing just that
    # One line at once, one a minute while waiting (the seventh try, 61 s after the
    # first; the eighth, at 91 s, opens), and the time it took.
    assert [line.split(" (")[0] for line in said[1:-1]] == ["Still waiting"]
    assert NOTE_EVERY == 60
    assert said[-1] == f"Team database reached after {sum(time.waits):.0f} s of waiting."


def test_a_refused_login_is_said_at_once_never_waited_for() -> None:
    time = FakeTime()
    refused = JournalLoginRefused("The team database refused the password.")
    tries, open_store = opener([refused])
    with pytest.raises(JournalLoginRefused):
        wait_for_team_database(open_store, limit=None, say=print,
                               stop=time, clock=time.clock)
    assert len(tries) == 1 and time.waits == []


@pytest.mark.parametrize(("limit", "tries_made"), [(0.0, 1), (3.0, 3), (10.0, 4)])
def test_past_its_limit_the_wait_gives_up_with_the_error(limit: float,
                                                          tries_made: int) -> None:
    time = FakeTime()
    tries, open_store = opener([DOWN] * 10)
    with pytest.raises(JournalUnreachable):
        wait_for_team_database(open_store, limit=limit, say=lambda _: None,
                               stop=time, clock=time.clock)
    assert len(tries) == tries_made
    assert sum(time.waits) <= limit


def test_a_stop_while_waiting_opens_nothing() -> None:
    time = FakeTime()
    time.set()  # SIGTERM came during the first wait
    tries, open_store = opener([DOWN, "store"])
    assert wait_for_team_database(open_store, limit=None, say=lambda _: None,
                                  stop=time, clock=time.clock) is None
    assert len(tries) == 1


def waiting_or_gone(worker: Worker) -> Callable[[], bool]:
    return lambda: "Waiting for it" in worker.output() or not worker.alive()


@pytest.mark.integration
def test_a_worker_started_before_its_database_waits_then_renders(
        tmp_path: Path, own_server: pgserver.Server) -> None:
    url = new_database(own_server.dsn)
    admin = tmp_path / "admin"
    admin.mkdir()
    with MockProcess(tmp_path / "mock", "--seed", "3", "--render-seconds-min", "0.1",
                     "--render-seconds-max", "0.3", "--accept-key", KEY_A) as mock:
        add_accounts(admin, url, mock.url, {"acct-a": (2, KEY_A)})
        write_sheet(tmp_path / "sheet.csv", 4, seed=5, low=0.1, high=0.3)
        import_sheet(admin, url, tmp_path / "sheet.csv", tmp_path / "videos")
        keys = bound_keys(url, {"acct-a": KEY_A})  # as `team-key` keeps them
        assert own_server.halt().returncode == 0
        at_once = team_cli(admin, url, "worker", "--wait-for-database", "0",
                           keyring_file=admin / "keyring.json", timeout=60)
        assert at_once.returncode == 2 and "cannot be reached" in at_once.stderr, at_once
        assert "Waiting for it" not in at_once.stdout

        stopped = Worker("machine-b", tmp_path, url, "--no-progress")
        waiting = Worker("machine-a", tmp_path, url, "--no-progress", "--lease-seconds", "6",
                         videos=tmp_path / "videos")
        write_keys(waiting.keyring_file, keys)
        try:
            for worker in (stopped, waiting):
                worker.start()
                wait_for(waiting_or_gone(worker), 60, f"{worker.name} to wait")
                assert worker.alive(), worker.output()
                assert "cannot be reached" in worker.output()
            # SIGTERM while waiting: an orderly stop, nothing opened or claimed.
            assert stopped.terminate() == 0
            assert "Worker stopped while waiting for the team database" in stopped.output()

            assert own_server.start().returncode == 0
            waiting.wait_running(timeout=120)
            out = waiting.output()
            assert "Team database reached after" in out, out
            assert "account acct-a (mock): renders here" in out
            settle(lambda: read(url, "SELECT COUNT(*) FROM jobs WHERE state = "
                                "'COMPLETED'")[0][0] == 4, 120, "4 completions")
            assert waiting.terminate() == 0
        finally:
            stopped.stop_quietly()
            waiting.stop_quietly()
        creates = mock.creates_by_key()
    assert sorted(creates.values()) == [1, 1, 1, 1], creates
    assert read(url, "SELECT COUNT(*) FROM instances")[0][0] == 1, "machine-b never joined"
