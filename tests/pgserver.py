"""A throwaway PostgreSQL server for the tests (issue 15): ``initdb`` + ``pg_ctl`` in a
temporary folder, listening on a free loopback port only, started once per test session
and stopped (and its folder removed) at the end.

PostgreSQL refuses to run as root: as root the server runs as ``nobody`` (``runuser``).
Where no server can be started the PostgreSQL tests are skipped with the reason, unless
``REELQUEUE_REQUIRE_POSTGRES=1`` (CI), where that is a failure. ``REELQUEUE_TEST_POSTGRES_DSN``
points the tests at a server of your own instead (each test works in its own schema).
"""

from __future__ import annotations

import glob
import os
import shutil
import socket
import subprocess
import tempfile
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

REQUIRE_ENV = "REELQUEUE_REQUIRE_POSTGRES"
DSN_ENV = "REELQUEUE_TEST_POSTGRES_DSN"


def required() -> bool:
    return os.environ.get(REQUIRE_ENV) == "1"


def _binaries() -> tuple[str, str] | None:
    found = [(shutil.which("initdb"), shutil.which("pg_ctl"))]
    for folder in sorted(glob.glob("/usr/lib/postgresql/*/bin"), reverse=True):
        found.append((os.path.join(folder, "initdb"), os.path.join(folder, "pg_ctl")))
    for initdb, pg_ctl in found:
        if initdb and pg_ctl and os.access(initdb, os.X_OK) and os.access(pg_ctl, os.X_OK):
            return initdb, pg_ctl
    return None


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@dataclass
class Server:
    """A running throwaway server.

    Attributes:
        dsn: where to connect (user ``reelqueue``, trust auth on loopback, no password).
        folder: its data, socket and log (None for a server given by DSN_ENV).
    """

    dsn: str
    folder: Path | None = None
    pg_ctl: str | None = None
    as_user: tuple[str, ...] = ()
    options: str = ""

    def ctl(self, *args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
        assert self.folder is not None and self.pg_ctl is not None
        return subprocess.run([*self.as_user, self.pg_ctl, "-D", str(self.folder / "data"),
                               *args], capture_output=True, text=True, timeout=timeout,
                              check=False)

    def restart(self) -> subprocess.CompletedProcess[str]:
        """``pg_ctl restart`` (same port and options). The log file is named again: without
        it the new server would write to pg_ctl's own output, which a caller reading that
        output would wait on forever."""
        assert self.folder is not None
        return self.ctl("restart", "-m", "fast", "-w", "-t", "60",
                        "-l", str(self.folder / "server.log"), timeout=90)

    def start(self) -> subprocess.CompletedProcess[str]:
        """``pg_ctl start`` with this server's port and options (again after a
        :meth:`halt`)."""
        assert self.folder is not None
        return self.ctl("start", "-w", "-t", "60", "-l", str(self.folder / "server.log"),
                        "-o", self.options, timeout=90)

    def halt(self) -> subprocess.CompletedProcess[str]:
        """``pg_ctl stop``, keeping the data for a :meth:`start`."""
        return self.ctl("stop", "-m", "fast", "-w")

    def stop(self) -> None:
        if self.folder is None:
            return
        self.ctl("stop", "-m", "fast", "-w")
        shutil.rmtree(self.folder, ignore_errors=True)


def start_server() -> Server:
    """Start a server, or raise RuntimeError saying why none could be started."""
    if os.environ.get(DSN_ENV):
        return Server(os.environ[DSN_ENV])
    binaries = _binaries()
    if binaries is None:
        raise RuntimeError("no PostgreSQL server binaries (initdb, pg_ctl) on this machine; "
                           "install the 'postgresql' package")
    initdb, pg_ctl = binaries
    as_user: tuple[str, ...] = ()
    folder = Path(tempfile.mkdtemp(prefix="reelqueue-pg-"))
    if os.geteuid() == 0:
        runuser = shutil.which("runuser")
        if runuser is None:
            raise RuntimeError("running as root and no 'runuser' to start PostgreSQL as "
                               "an ordinary user")
        as_user = (runuser, "-u", "nobody", "--")
        os.chown(folder, *_uid_gid("nobody"))
    folder.chmod(0o700)
    done = subprocess.run(
        [*as_user, initdb, "-D", str(folder / "data"), "-U", "reelqueue", "--auth=trust",
         "-E", "UTF8", "--no-locale", "--no-sync"],
        capture_output=True, text=True, timeout=120, check=False)
    if done.returncode:
        shutil.rmtree(folder, ignore_errors=True)
        raise RuntimeError(f"initdb failed: {done.stderr.strip()[-400:]}")
    port = _free_port()
    # Loopback only; fsync off: a throwaway server whose data dies with the test run.
    options = (f"-p {port} -k {folder} -c listen_addresses=127.0.0.1 -c fsync=off "
               "-c full_page_writes=off -c max_connections=200")
    server = Server(f"postgresql://reelqueue@127.0.0.1:{port}/postgres", folder, pg_ctl,
                    as_user, options)
    started = server.start()
    if started.returncode:
        log = (folder / "server.log").read_text(errors="replace")[-600:] if (
            folder / "server.log").exists() else started.stderr
        shutil.rmtree(folder, ignore_errors=True)
        raise RuntimeError(f"pg_ctl start failed: {log.strip()}")
    return server


def _uid_gid(user: str) -> tuple[int, int]:
    import pwd

    entry = pwd.getpwnam(user)
    return entry.pw_uid, entry.pw_gid


def unavailable(reason: str) -> None:
    """Skip (or, when PostgreSQL is required, fail) a test for want of a server."""
    message = f"PostgreSQL tests need a server: {reason}"
    if required():
        pytest.fail(f"{message} ({REQUIRE_ENV}=1)")
    pytest.skip(message)


def new_schema_name() -> str:
    return f"t_{uuid.uuid4().hex[:16]}"


def drop_schema(dsn: str, schema: str) -> None:
    import psycopg

    with psycopg.connect(dsn, autocommit=True) as db:
        db.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


@contextmanager
def session_server() -> Iterator[Server | str]:
    """The session's server, or the reason there is none."""
    try:
        server: Server | str = start_server()
    except (RuntimeError, OSError, subprocess.SubprocessError) as exc:
        server = str(exc)
    try:
        yield server
    finally:
        if isinstance(server, Server):
            server.stop()
