"""Machinery of the team tests: fresh databases on a throwaway server, ``reelqueue``
commands on a team database, and ``reelqueue worker`` processes with their own data
folder and keyring (each one a "machine").

Every child is started in its own session and stopped in a ``finally`` block by its own
pid (see tests/proof/harness.py, whose helpers this reuses).
"""

from __future__ import annotations

import contextlib
import re
import signal
import subprocess
import uuid
from pathlib import Path
from typing import Any, Protocol

import psycopg

from tests.proof.harness import REELQUEUE, child_env, kill_process, wait_for
from tests.team.file_keyring import BACKEND, FILE_ENV


def new_database(server_dsn: str) -> str:
    """A fresh, empty database on the server of ``server_dsn``; its address."""
    name = f"team_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(server_dsn, autocommit=True) as db:
        db.execute(f'CREATE DATABASE "{name}"')
    return server_dsn.rsplit("/", 1)[0] + f"/{name}"


def drop_database(server_dsn: str, url: str) -> None:
    name = url.rsplit("/", 1)[1]
    with psycopg.connect(server_dsn, autocommit=True) as db:
        db.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def machine_env(keyring_file: Path) -> dict[str, str]:
    env = child_env()
    env["PYTHON_KEYRING_BACKEND"] = BACKEND
    env[FILE_ENV] = str(keyring_file)
    env.pop("REELQUEUE_STORE", None)
    return env


def team_cli(data: Path, url: str, *args: str, keyring_file: Path, stdin: str = "",
             timeout: float = 120.0, videos: Path | None = None,
             ) -> subprocess.CompletedProcess[str]:
    """One ``reelqueue --store URL`` command run to its end on machine ``data`` (its
    videos folder: ``videos``, else ``data/videos``)."""
    return subprocess.run(
        [*REELQUEUE, "--data-dir", str(data), "--videos-dir", str(videos or data / "videos"),
         "--store", url, *args],
        input=stdin, capture_output=True, text=True, timeout=timeout,
        env=machine_env(keyring_file), check=False)


RUNNING = re.compile(r"^Worker \S+ running", re.MULTILINE)


class Worker:
    """One ``reelqueue --store URL worker`` process: a machine with its own data folder
    and keyring; output in a log file; killable, stoppable, restartable."""

    def __init__(self, name: str, folder: Path, url: str, *args: str,
                 env: dict[str, str] | None = None, videos: Path | None = None) -> None:
        self.name = name
        self.env = dict(env or {})  # added to the machine's environment
        self.data = folder / name
        self.data.mkdir(parents=True, exist_ok=True)
        self.keyring_file = self.data / "keyring.json"
        self.url = url
        self.args = list(args)
        self.proc: subprocess.Popen[bytes] | None = None
        self.starts = 0
        self.log_path = self.data / "worker-0.log"
        #: its --videos-dir: its own folder, or one the machines share (issue 23)
        self.videos = videos or self.data / "videos"

    def start(self) -> Worker:
        self.starts += 1
        self.log_path = self.data / f"worker-{self.starts}.log"
        with self.log_path.open("wb") as log:
            self.proc = subprocess.Popen(
                [*REELQUEUE, "--data-dir", str(self.data), "--videos-dir",
                 str(self.videos), "--store", self.url, "worker", *self.args],
                stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                env={**machine_env(self.keyring_file), **self.env}, start_new_session=True)
        return self

    def output(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    def all_output(self) -> str:
        return "".join(p.read_text(errors="replace")
                       for p in sorted(self.data.glob("worker-*.log")))

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def running(self) -> bool:
        """Its "Worker ID running" line is out (libpq's words of a server not reached,
        which a waiting worker prints, say "Is the server running")."""
        return RUNNING.search(self.output()) is not None

    def wait_running(self, timeout: float = 90.0) -> None:
        wait_for(lambda: self.running() or not self.alive(), timeout,
                 f"worker {self.name} to start")
        assert self.alive(), self.output()

    def kill(self) -> None:
        kill_process(self.proc)

    def signal(self, signum: signal.Signals) -> None:
        assert self.proc is not None and self.proc.poll() is None
        self.proc.send_signal(signum)

    def terminate(self, timeout: float = 60.0) -> int:
        """SIGTERM (after SIGCONT: it may be stopped) and wait for the orderly stop; its
        exit code."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGCONT)
        return terminate(self, f"worker {self.name}", timeout)

    def stop_quietly(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            with contextlib.suppress(AssertionError):
                self.terminate(timeout=20)
        self.kill()


class Stoppable(Protocol):
    proc: subprocess.Popen[bytes] | None

    def output(self) -> str: ...

    def kill(self) -> None: ...


def terminate(process: Stoppable, what: str, timeout: float = 60.0) -> int:
    """SIGTERM ``process`` and wait for its orderly stop; its exit code (killed, and an
    AssertionError, when it ignores the signal)."""
    assert process.proc is not None
    if process.proc.poll() is None:
        process.proc.send_signal(signal.SIGTERM)
    try:
        return process.proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        process.kill()
        raise AssertionError(f"{what} ignored SIGTERM:\n{process.output()[-2000:]}") from None


def read(url: str, query: str, *params: Any) -> list[tuple[Any, ...]]:
    with psycopg.connect(url, autocommit=True) as db:
        return list(db.execute(query, params).fetchall())


def settle(predicate: Any, timeout: float, what: str) -> Any:
    return wait_for(predicate, timeout, what, interval=0.2)




def bound_keys(url: str, keys: dict[str, str]) -> dict[str, str]:
    """The keyring entries a machine holds after ``reelqueue team-key NAME`` for each of
    ``keys`` (account name -> key): each key under this database's entry for the account,
    bound to the provider and address its row names now (application/trust.py). For
    tests whose subject is not the trust boundary; tests/team/test_hostile_accounts.py
    runs the command itself."""
    from reelqueue.credentials.binding import KeyBinding, binding_ref, team_key_ref

    database_id = read(url, "SELECT value FROM reelqueue_meta WHERE key = 'database_id'")[0][0]
    rows = {name: (provider, base_url) for name, provider, base_url in
            read(url, "SELECT name, provider, base_url FROM accounts")}
    entries: dict[str, str] = {}
    for name, key in keys.items():
        ref = team_key_ref(database_id, name)
        entries[ref] = key
        entries[binding_ref(ref)] = KeyBinding.of(*rows[name]).to_text()
    return entries
