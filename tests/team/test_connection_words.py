"""How the team database's connection is described (issue 21): a refused password, a
refused TLS handshake and an unreachable server each get their own message (they were
all "cannot be reached" after a 10-second wait); a server on another machine is verified
(sslmode=verify-full) unless the address says otherwise, and a connection that is not
encrypted is said to be so, with how to require it."""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest

from reelqueue.application.team import (
    connection_string,
    connection_warnings,
    open_team_store,
    tls_defaults,
)
from reelqueue.domain.errors import JournalLoginRefused, JournalTlsRefused, JournalUnreachable
from tests import pgserver
from tests.team.harness import team_cli

pytestmark = [pytest.mark.integration]

ROLE, RIGHT = "rq_pw_probe", "right-pass-5c1e9b"
WRONG = "wrong-pass-8d2f6a"


@pytest.fixture
def password_role(pg_server: pgserver.Server | str, team_url: str) -> Iterator[str]:
    """``team_url`` for a role that must give a password (scram on loopback for it only;
    the session server's other roles keep trust)."""
    assert isinstance(pg_server, pgserver.Server) and pg_server.folder is not None
    hba = pg_server.folder / "data" / "pg_hba.conf"
    before = hba.read_text()
    with psycopg.connect(pg_server.dsn, autocommit=True) as db:
        db.execute(f"DROP ROLE IF EXISTS {ROLE}")
        db.execute(f"CREATE ROLE {ROLE} LOGIN PASSWORD '{RIGHT}'")
    hba.write_text(f"host all {ROLE} 127.0.0.1/32 scram-sha-256\n" + before)
    assert pg_server.ctl("reload").returncode == 0
    try:
        yield team_url.replace("reelqueue@", f"{ROLE}@", 1)
    finally:
        hba.write_text(before)
        pg_server.ctl("reload")
        with psycopg.connect(pg_server.dsn, autocommit=True) as db:
            db.execute(f"DROP ROLE IF EXISTS {ROLE}")


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def test_a_wrong_or_missing_password_is_said_as_such(password_role: str) -> None:
    with pytest.raises(JournalLoginRefused) as wrong:
        open_team_store(password_role, now=0.0, key_lookup=lambda ref: WRONG)
    assert "refused the password: wrong password" in str(wrong.value)
    assert "store-password" in str(wrong.value) and WRONG not in str(wrong.value)
    with pytest.raises(JournalLoginRefused) as missing:
        open_team_store(password_role, now=0.0, key_lookup=lambda ref: None)
    assert "asks for a password and this machine has none saved" in str(missing.value)
    # The right one logs in (the fixture's rule really asks for a password, and this
    # one is accepted: only the wrong one was refused).
    psycopg.connect(password_role, password=RIGHT).close()


def test_a_refused_tls_handshake_and_an_unreachable_server_are_told_apart(
        team_url: str) -> None:
    with pytest.raises(JournalTlsRefused) as tls:
        open_team_store(team_url + "?sslmode=require", now=0.0)
    assert "refused or failed the encrypted connection asked for by sslmode=require" \
        in str(tls.value)
    assert "cannot be reached" not in str(tls.value)
    closed = team_url.rsplit(":", 1)[0] + f":{_free_port()}/nothing?connect_timeout=2"
    with pytest.raises(JournalUnreachable) as unreachable:
        open_team_store(closed, now=0.0)
    assert "cannot be reached" in str(unreachable.value)


def test_the_commands_say_the_connection_is_not_encrypted(tmp_path: Path,
                                                          team_url: str) -> None:
    done = team_cli(tmp_path, team_url, "doctor", keyring_file=tmp_path / "kr.json")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "is not encrypted (no sslmode in its address)" in done.stdout
    assert "stays on this machine (loopback)" in done.stdout
    refused = team_cli(tmp_path, team_url + "?sslmode=require", "status",
                       keyring_file=tmp_path / "kr.json")
    assert refused.returncode != 0
    assert "encrypted connection" in refused.stderr and "Traceback" not in refused.stderr


def test_status_says_whether_the_team_connection_is_encrypted(tmp_path: Path,
                                                               team_url: str) -> None:
    """Issue 34: ``status`` (text and --json) asks the connection (the session server
    has no TLS: ``prefer`` fell back to plain text, ``disable`` never tried)."""
    for url, said in ((team_url, "no sslmode in its address"),
                      (team_url + "?sslmode=disable", "sslmode=disable")):
        text = team_cli(tmp_path, url, "status", keyring_file=tmp_path / "kr.json")
        assert text.returncode == 0, text.stdout + text.stderr
        assert "team database connection: NOT encrypted" in text.stdout, text.stdout
        assert f"is not encrypted ({said})" in text.stdout
        as_json = team_cli(tmp_path, url, "status", "--json",
                           keyring_file=tmp_path / "kr.json")
        assert as_json.returncode == 0, as_json.stdout + as_json.stderr
        connection = json.loads(as_json.stdout)["team_connection"]
        assert connection["encrypted"] is False
        assert any(f"is not encrypted ({said})" in w for w in connection["warnings"])


class _Opened:
    def __init__(self, encrypted: bool) -> None:
        self.encrypted = encrypted


@pytest.mark.unit
def test_the_warning_words(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PGSSLMODE", raising=False)
    far = "postgresql://team@db.example:5432/reelqueue"
    # Nothing said of TLS on a server elsewhere: verified by default, nothing to warn of.
    assert connection_warnings(far, _Opened(True)) == []
    (line,) = connection_warnings(far + "?sslmode=disable", _Opened(False))
    assert "is not encrypted (sslmode=disable)" in line
    assert "add sslmode=require to the address (postgresql://team@db.example:5432/" \
        "reelqueue?sslmode=require)" in line
    (local,) = connection_warnings("postgresql://team@127.0.0.1/rq", _Opened(False))
    assert "not encrypted (no sslmode in its address)" in local
    assert "sslmode=require" not in local
    (lucky,) = connection_warnings(far + "?sslmode=prefer", _Opened(True))
    assert "happens to be encrypted, but nothing requires it (sslmode=prefer)" in lucky
    (unknown,) = connection_warnings(far + "?sslmode=allow")
    assert "not required to be encrypted (sslmode=allow)" in unknown
    (unverified,) = connection_warnings(far + "?sslmode=require", _Opened(True))
    assert "not verified" in unverified and "verify-full" in unverified
    assert connection_warnings(far + "?sslmode=verify-full", _Opened(True)) == []
    assert connection_warnings(None) == []


@pytest.mark.unit
def test_a_server_elsewhere_is_verified_unless_the_address_says_otherwise(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Issue 21: without an sslmode a team database on another machine was opened with
    libpq's default (``prefer``: plain text if the server, or someone in the way, says
    so). Now verify-full, against the system's trust store unless a CA is given."""
    monkeypatch.delenv("PGSSLMODE", raising=False)
    monkeypatch.delenv("PGSSLROOTCERT", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))  # no ~/.postgresql/root.crt
    far = "postgresql://team@db.example:5432/reelqueue"
    said = psycopg.conninfo.conninfo_to_dict(connection_string(far, None))
    assert said["sslmode"] == "verify-full" and said["sslrootcert"] == "system"
    with_password = psycopg.conninfo.conninfo_to_dict(connection_string(far, "pw-x"))
    assert with_password["sslmode"] == "verify-full" and with_password["password"] == "pw-x"
    own_ca = psycopg.conninfo.conninfo_to_dict(
        connection_string(far + "?sslrootcert=/etc/team-ca.pem", None))
    assert own_ca["sslmode"] == "verify-full" and own_ca["sslrootcert"] == "/etc/team-ca.pem"
    for given in ("require", "disable", "prefer"):
        assert tls_defaults(f"{far}?sslmode={given}") == {}
    for local in ("postgresql://team@127.0.0.1/rq", "postgresql://team@localhost/rq",
                  "postgresql://team@[::1]/rq", "postgresql:///rq?host=/run/postgresql"):
        assert tls_defaults(local) == {}, local
    monkeypatch.setenv("PGSSLMODE", "require")
    assert tls_defaults(far) == {}  # the environment's choice is a choice too
    monkeypatch.delenv("PGSSLMODE")
    (tmp_path / ".postgresql").mkdir()
    (tmp_path / ".postgresql" / "root.crt").write_text("a CA")
    assert tls_defaults(far) == {"sslmode": "verify-full"}  # libpq reads its own CA file


def test_a_server_named_as_elsewhere_without_tls_is_refused_not_read_in_plain_text(
        team_url: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """End to end: the test server has no TLS; named by a host that is not loopback (its
    address given as hostaddr), the default verify-full refuses it with the TLS words
    instead of talking plain text."""
    monkeypatch.delenv("PGSSLMODE", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    host = str(psycopg.conninfo.conninfo_to_dict(team_url)["host"])
    assert f"@{host}:" in team_url and "?" not in team_url, team_url
    elsewhere = team_url.replace(f"@{host}:", "@db.example:", 1) + f"?hostaddr={host}"
    with pytest.raises(JournalTlsRefused) as refused:
        open_team_store(elsewhere, now=0.0)
    assert "encrypted connection" in str(refused.value)
