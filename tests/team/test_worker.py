"""``reelqueue --store URL worker``: renders only for the accounts whose key this machine
holds, says hello and goodbye in the instances registry, stops cleanly on SIGTERM; the
database password never travels in the address."""

from __future__ import annotations

import signal
from pathlib import Path

import pytest

from reelqueue.application.team import (
    check_team_url,
    connection_string,
    database_key_ref,
    open_team_store,
)
from reelqueue.domain.errors import InputError
from tests.proof.harness import MockProcess, write_sheet
from tests.team.file_keyring import write_keys
from tests.team.harness import Worker, bound_keys, read, settle, team_cli

pytestmark = [pytest.mark.integration]

KEY_A = "sk-team-test-aaaa-1111"
KEY_B = "sk-team-test-bbbb-2222"


def add_accounts(admin: Path, url: str, mock_url: str,
                 limits: dict[str, tuple[int, str]]) -> None:
    for name, (capacity, key) in limits.items():
        done = team_cli(admin, url, "accounts", "add", name, "--provider", "mock",
                        "--capacity", str(capacity), "--base-url", mock_url, "--no-check",
                        keyring_file=admin / "keyring.json", stdin=key + "\n")
        assert done.returncode == 0, done.stdout + done.stderr


def import_sheet(admin: Path, url: str, sheet: Path, videos: Path) -> None:
    done = team_cli(admin, url, "import", str(sheet), "--output-dir", str(videos),
                    keyring_file=admin / "keyring.json")
    assert done.returncode == 0, done.stdout + done.stderr


def test_worker_renders_for_its_keys_and_stops_on_sigterm(tmp_path: Path,
                                                           team_url: str) -> None:
    admin = tmp_path / "admin"
    admin.mkdir()
    with MockProcess(tmp_path / "mock", "--seed", "3", "--render-seconds-min", "0.1",
                     "--render-seconds-max", "0.4", "--accept-key", KEY_A,
                     "--accept-key", KEY_B) as mock:
        add_accounts(admin, team_url, mock.url, {"acct-a": (2, KEY_A), "acct-b": (3, KEY_B)})
        write_sheet(tmp_path / "sheet.csv", 8, seed=5, low=0.1, high=0.4)
        import_sheet(admin, team_url, tmp_path / "sheet.csv", tmp_path / "videos")
        worker = Worker("machine-a", tmp_path, team_url, "--no-progress", "--lease-seconds",
                        "6", videos=tmp_path / "videos")
        write_keys(worker.keyring_file, bound_keys(team_url, {"acct-a": KEY_A}))
        try:
            worker.start().wait_running()
            out = worker.output()
            assert "account acct-a (mock): renders here" in out
            assert "account acct-b (mock): key not on this machine" in out
            settle(lambda: read(team_url, "SELECT COUNT(*) FROM jobs WHERE state = "
                                "'COMPLETED'")[0][0] == 8, 120, "8 completions")
            instances = read(team_url, "SELECT pid, stopped_at FROM instances")
            assert instances == [(worker.proc.pid, None)]  # type: ignore[union-attr]
            assert worker.terminate() == 0
        finally:
            worker.stop_quietly()
    status = team_cli(admin, team_url, "status", keyring_file=admin / "keyring.json")
    assert status.returncode == 0 and "8 jobs: 8 completed" in status.stdout, status
    doctor = team_cli(admin, team_url, "doctor", keyring_file=admin / "keyring.json",
                      videos=tmp_path / "videos")  # the worker's folder (issue 23)
    assert doctor.returncode == 0 and "FAIL" not in doctor.stdout, doctor
    assert "ok   expired leases held" in doctor.stdout, doctor.stdout
    assert "another ReelQueue is running" not in doctor.stdout, "a team's claims are checked"
    accounts = read(team_url, "SELECT DISTINCT account FROM jobs")
    assert accounts == [("acct-a",)], "a job was claimed for the account whose key is away"
    stopped = read(team_url, "SELECT stopped_at IS NOT NULL FROM instances")
    assert stopped == [(True,)]
    out = worker.output()
    assert "Worker stopped" in out
    for text in (out, (worker.data / "logs" / "reelqueue.log").read_text()
                 if (worker.data / "logs" / "reelqueue.log").exists() else ""):
        assert KEY_A not in text and KEY_B not in text
    # No key or token in the database either: only references.
    dump = str(read(team_url, "SELECT * FROM accounts")) + str(
        read(team_url, "SELECT * FROM ledger"))
    assert KEY_A not in dump and KEY_B not in dump


def test_a_mock_account_without_an_address_renders_on_the_workers_builtin_mock(
        tmp_path: Path, team_url: str) -> None:
    """A team trying ReelQueue out with the built-in mock (``accounts add --provider mock``,
    no --base-url): the worker renders its jobs on its own in-process mock, as ``run`` and
    the window do. It used to print "renders here" and then refuse every claim ("the mock
    provider has no address") until stopped."""
    admin = tmp_path / "admin"
    admin.mkdir()
    done = team_cli(admin, team_url, "accounts", "add", "studio", "--provider", "mock",
                    "--capacity", "3", keyring_file=admin / "keyring.json")
    assert done.returncode == 0, done.stdout + done.stderr
    write_sheet(tmp_path / "sheet.csv", 4, seed=5, low=0.1, high=0.4)
    import_sheet(admin, team_url, tmp_path / "sheet.csv", tmp_path / "videos")
    worker = Worker("machine-a", tmp_path, team_url, "--no-progress",
                    videos=tmp_path / "videos")
    try:
        worker.start().wait_running()
        assert "account studio (mock): renders here" in worker.output()
        settle(lambda: read(team_url, "SELECT COUNT(*) FROM jobs WHERE state = "
                            "'COMPLETED'")[0][0] == 4, 120, "4 completions")
        assert worker.terminate() == 0
    finally:
        worker.stop_quietly()
    assert "has no address" not in worker.output()
    files = sorted(p.name for p in (tmp_path / "videos").rglob("*.mp4"))
    assert len(files) == 4, files


def test_sigterm_while_rendering_leaves_renders_for_the_next_instance(
        tmp_path: Path, team_url: str) -> None:
    admin = tmp_path / "admin"
    admin.mkdir()
    with MockProcess(tmp_path / "mock", "--seed", "4") as mock:
        add_accounts(admin, team_url, mock.url, {"acct-a": (2, KEY_A)})
        write_sheet(tmp_path / "sheet.csv", 4, seed=6, low=3.0, high=4.0)
        import_sheet(admin, team_url, tmp_path / "sheet.csv", tmp_path / "videos")
        first = Worker("machine-a", tmp_path, team_url, "--no-progress",
                       "--lease-seconds", "3")
        second = Worker("machine-b", tmp_path, team_url, "--no-progress",
                        "--lease-seconds", "3")
        for worker in (first, second):
            write_keys(worker.keyring_file, bound_keys(team_url, {"acct-a": KEY_A}))
        try:
            first.start().wait_running()
            settle(lambda: read(team_url, "SELECT COUNT(*) FROM jobs WHERE state = "
                                "'RENDERING'")[0][0] == 2, 60, "two renders")
            first.signal(signal.SIGTERM)
            assert first.proc is not None and first.proc.wait(timeout=60) == 0
            second.start().wait_running()
            settle(lambda: read(team_url, "SELECT COUNT(*) FROM jobs WHERE state = "
                                "'COMPLETED'")[0][0] == 4, 120, "4 completions")
            assert second.terminate() == 0
        finally:
            first.stop_quietly()
            second.stop_quietly()
        creates = mock.creates_by_key()
    assert sorted(creates.values()) == [1, 1, 1, 1], creates
    stops = read(team_url, "SELECT COUNT(*) FROM ledger WHERE event = 'stopped_in_flight'")
    assert stops[0][0] == 2
    reattached = read(team_url, "SELECT COUNT(*) FROM ledger WHERE event = 'reattached'")
    assert reattached[0][0] >= 2


def test_the_address_may_not_carry_a_password() -> None:
    with pytest.raises(InputError) as caught:
        check_team_url("postgresql://team:hunter2secret@db.example:5432/reelqueue")
    assert "hunter2secret" not in str(caught.value)
    assert "store-password" in str(caught.value)
    with pytest.raises(InputError):
        check_team_url("sqlite:///journal.sqlite3")


def test_the_password_comes_from_the_keyring_and_ssl_options_pass_through() -> None:
    url = "postgresql://team@db.example:5433/reelqueue?sslmode=verify-full&sslrootcert=/ca.pem"
    assert database_key_ref(url) == "database:team@db.example:5433/reelqueue"
    built = connection_string(url, "s3cret")
    from psycopg import conninfo

    parts = conninfo.conninfo_to_dict(built)
    assert parts["password"] == "s3cret"
    assert parts["sslmode"] == "verify-full"
    assert parts["sslrootcert"] == "/ca.pem"
    assert connection_string(url, None) == url  # libpq reads a pgpass file by itself


def test_a_refused_login_never_shows_the_keyring_password(team_url: str) -> None:
    asked: list[str] = []

    def lookup(ref: str) -> str | None:
        asked.append(ref)
        return "pw-from-keyring-zz9"

    # The throwaway server trusts loopback logins, so ask for a user that does not exist.
    url = team_url.replace("reelqueue@", "nobody_here@")
    from reelqueue.domain.errors import JournalError

    with pytest.raises(JournalError) as caught:
        open_team_store(url, now=0.0, key_lookup=lookup)
    assert asked == [database_key_ref(url)]
    assert "pw-from-keyring-zz9" not in str(caught.value)
    assert "nobody_here@" in str(caught.value)


def test_a_takeover_without_the_key_hands_the_render_back(tmp_path: Path,
                                                          team_url: str) -> None:
    """Machine N (no key) takes over the expired leases of machine K (the key, killed);
    it cannot render them, so it hands them back to the queue with their renders, and K's
    next life reattaches them: nothing is created twice, nothing waits forever on N."""
    admin = tmp_path / "admin"
    admin.mkdir()
    with MockProcess(tmp_path / "mock", "--seed", "5") as mock:
        add_accounts(admin, team_url, mock.url, {"acct-a": (2, KEY_A)})
        write_sheet(tmp_path / "sheet.csv", 4, seed=7, low=4.0, high=5.0)
        import_sheet(admin, team_url, tmp_path / "sheet.csv", tmp_path / "videos")
        keyed = Worker("machine-k", tmp_path, team_url, "--no-progress",
                       "--lease-seconds", "2")
        keyless = Worker("machine-n", tmp_path, team_url, "--no-progress",
                         "--lease-seconds", "2")
        write_keys(keyed.keyring_file, bound_keys(team_url, {"acct-a": KEY_A}))
        write_keys(keyless.keyring_file, {})
        try:
            keyless.start().wait_running()
            assert "account acct-a (mock): key not on this machine" in keyless.output()
            keyed.start().wait_running()
            settle(lambda: read(team_url, "SELECT COUNT(*) FROM jobs WHERE state = "
                                "'RENDERING'")[0][0] == 2, 60, "two renders")
            keyed.kill()
            settle(lambda: read(team_url, "SELECT COUNT(*) FROM ledger WHERE event = "
                                "'released'")[0][0] == 2, 60, "N to hand both back")
            keyed.start().wait_running()
            settle(lambda: read(team_url, "SELECT COUNT(*) FROM jobs WHERE state = "
                                "'COMPLETED'")[0][0] == 4, 120, "4 completions")
            assert keyed.terminate() == 0
            assert keyless.terminate() == 0
        finally:
            keyed.stop_quietly()
            keyless.stop_quietly()
        creates = mock.creates_by_key()
    assert sorted(creates.values()) == [1, 1, 1, 1], creates
    released = read(team_url, "SELECT detail->>'label' FROM ledger WHERE event = 'released'")
    assert released == [("key not on this machine",)] * 2
    assert read(team_url, "SELECT attempts FROM jobs ORDER BY id") == [(1,)] * 4


def test_team_key_keeps_an_accounts_key_on_another_machine(tmp_path: Path,
                                                           team_url: str) -> None:
    admin, other = tmp_path / "admin", tmp_path / "other"
    admin.mkdir()
    other.mkdir()
    add_accounts(admin, team_url, "http://127.0.0.1:9", {"acct-a": (2, KEY_A)})
    done = team_cli(other, team_url, "team-key", "acct-a", keyring_file=other / "keyring.json",
                    stdin=KEY_A + "\n")
    assert done.returncode == 0, done.stdout + done.stderr
    assert KEY_A not in done.stdout + done.stderr
    assert KEY_A in (other / "keyring.json").read_text()  # the test keyring's own file
    missing = team_cli(other, team_url, "team-key", "nope", keyring_file=other / "kr.json",
                       stdin=KEY_A + "\n")
    assert missing.returncode == 2 and "no account named 'nope'" in missing.stderr
    assert not (other / "kr.json").exists()



def test_reelqueue_store_in_the_environment_picks_the_team_database(
        tmp_path: Path, team_url: str) -> None:
    import subprocess

    from tests.proof.harness import REELQUEUE
    from tests.team.harness import machine_env

    admin = tmp_path / "admin"
    admin.mkdir()
    add_accounts(admin, team_url, "http://127.0.0.1:9", {"acct-env": (3, KEY_A)})
    env = machine_env(admin / "keyring.json")
    env["REELQUEUE_STORE"] = team_url
    done = subprocess.run([*REELQUEUE, "--data-dir", str(tmp_path / "fresh"), "accounts",
                           "list"], capture_output=True, text=True, env=env, timeout=120,
                          check=False)
    assert done.returncode == 0, done.stderr
    assert "acct-env" in done.stdout
    assert not (tmp_path / "fresh" / "journal.sqlite3").exists()


def test_accounts_test_on_a_keyless_machine_changes_nothing(tmp_path: Path,
                                                             team_url: str) -> None:
    """The account's status is the team's: a machine without the key says so and writes
    nothing (it used to mark the shared account 'key missing' for everyone); the machine
    holding the key still tests it with the provider."""
    admin, keyless = tmp_path / "admin", tmp_path / "keyless"
    admin.mkdir()
    keyless.mkdir()
    with MockProcess(tmp_path / "mock", "--seed", "6", "--accept-key", KEY_A) as mock:
        add_accounts(admin, team_url, mock.url, {"acct-a": (2, KEY_A)})
        write_keys(keyless / "keyring.json", {})
        before = read(team_url, "SELECT name, status, status_detail FROM accounts")
        ledger_before = read(team_url, "SELECT count(*) FROM ledger")
        done = team_cli(keyless, team_url, "accounts", "test", "acct-a",
                        keyring_file=keyless / "keyring.json")
        assert done.returncode == 1, done.stdout + done.stderr
        assert "Account acct-a: key not on this machine; nothing was changed" in done.stdout
        assert "reelqueue team-key acct-a" in done.stdout
        assert read(team_url, "SELECT name, status, status_detail FROM accounts") == before
        assert before == [("acct-a", "ready", None)]
        assert read(team_url, "SELECT count(*) FROM ledger") == ledger_before
        held = team_cli(admin, team_url, "accounts", "test", "acct-a",
                        keyring_file=admin / "keyring.json")
        assert held.returncode == 0, held.stdout + held.stderr
        assert "key accepted" in held.stdout
