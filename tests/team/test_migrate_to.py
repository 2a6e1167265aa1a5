"""``reelqueue migrate-to URL``: a local journal copied into an empty team database, row
for row (ids, states, claims, history); a database that is not empty is refused and left
as it was."""

from __future__ import annotations

import dataclasses
import sqlite3
import time
from pathlib import Path

import pytest

from reelqueue.domain.models import ClaimToken
from reelqueue.store.base import ClaimParams
from reelqueue.store.postgres import PostgresStore
from reelqueue.store.sqlite import SqliteStore
from tests.conftest import make_specs, seed_store
from tests.proof.harness import cli

pytestmark = [pytest.mark.integration]


def _local_journal(data: Path, tmp_path: Path) -> None:
    data.mkdir()
    now = time.time()
    store = SqliteStore.open(data / "journal.sqlite3", now=now)
    try:
        batch = seed_store(store, tmp_path, now, jobs=6, accounts={"acct-a": 2, "acct-b": 1})
        store.update_batch_settings(batch, {"spend_cap_usd": 4.5}, now)
        first = store.claim_next_job(ClaimParams("acct-a", "old-instance", now, 60, now - 9))
        second = store.claim_next_job(ClaimParams("acct-a", "old-instance", now, 60, now - 9))
        assert first is not None and second is not None
        token = ClaimToken(first.job.id, first.token.token)
        assert store.mark_submitting(token, "ct-1", now)
        assert store.record_submitted(token, "mr_123", now)
        store.cancel_jobs([6], now)
    finally:
        store.close()


def test_migrate_copies_everything_into_an_empty_database(tmp_path: Path,
                                                          team_url: str) -> None:
    data = tmp_path / "data"
    _local_journal(data, tmp_path)
    done = cli(data, "migrate-to", team_url)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Copied 1 batches, 2 accounts, 6 jobs" in done.stdout
    local = SqliteStore.open(data / "journal.sqlite3", now=time.time())
    team = PostgresStore.open(team_url, now=time.time())
    try:
        assert team.list_jobs() == local.list_jobs()
        assert team.list_accounts() == local.list_accounts()
        assert team.list_batches() == local.list_batches()
        assert team.ledger() == local.ledger()
        rendering = [j for j in team.list_jobs() if j.provider_job_id]
        assert [(j.state.value, j.provider_job_id) for j in rendering] == [
            ("RENDERING", "mr_123")]
        # New rows continue after the copied ids.
        spec = dataclasses.replace(make_specs(tmp_path, 1)[0], job_key="key-new")
        added = team.add_jobs(1, [spec], time.time())
        assert added.job_ids == (7,)
        assert team.ledger()[-1].seq > local.ledger()[-1].seq
    finally:
        local.close()
        team.close()
    # A second copy into the same (now not empty) database is refused, nothing changed.
    before = _snapshot(team_url)
    again = cli(data, "migrate-to", team_url)
    assert again.returncode == 2
    assert "is not empty" in again.stderr and "Nothing was changed" in again.stderr
    assert _snapshot(team_url) == before


def _snapshot(url: str) -> tuple[object, ...]:
    store = PostgresStore.open(url, now=time.time())
    try:
        return (store.list_jobs(), store.list_accounts(),
                [dataclasses.astuple(e) for e in store.ledger()])
    finally:
        store.close()


def test_a_journal_with_a_value_that_is_not_json_is_refused_and_nothing_copied(
        tmp_path: Path, team_url: str) -> None:
    data = tmp_path / "data"
    _local_journal(data, tmp_path)
    with sqlite3.connect(data / "journal.sqlite3") as db:
        db.execute("UPDATE jobs SET params = ? WHERE id = 3", ("[" * 5000,))
    db.close()
    done = cli(data, "migrate-to", team_url)
    assert done.returncode == 2, done.stdout + done.stderr
    assert "jobs.params holds a value that is not JSON" in done.stderr
    assert "nothing was copied" in done.stderr and "Traceback" not in done.stderr
    assert _snapshot(team_url)[0] == [], "one transaction: no job was copied"


def test_migrate_without_a_journal_says_so(tmp_path: Path, team_url: str) -> None:
    done = cli(tmp_path / "nothing", "migrate-to", team_url)
    assert done.returncode == 2
    assert "no journal" in done.stderr


def test_migrate_keeps_this_machines_keys_for_the_team_where_they_went_before(
        tmp_path: Path, team_url: str) -> None:
    """The team's keyring entries are named after the database (issue 21): migrate-to
    carries this machine's keys and their bindings over, so the machine that migrated
    renders for its accounts at once, and a key still goes only where it went before."""
    import subprocess

    from reelqueue.credentials.binding import KeyBinding, binding_ref
    from reelqueue.credentials.keystore import key_ref_for
    from reelqueue.domain.models import AccountSpec
    from tests.proof.harness import REELQUEUE
    from tests.team.file_keyring import write_keys
    from tests.team.harness import machine_env, read, team_cli

    data = tmp_path / "data"
    data.mkdir()
    keyring_file = tmp_path / "keyring.json"
    gateway = "http://127.0.0.1:9/v1"
    store = SqliteStore.open(data / "journal.sqlite3", now=1.0)
    try:
        store.add_account(AccountSpec("keyed", "mock", 2, gateway, key_ref_for("keyed")), 1.0)
        store.add_account(AccountSpec("open", "mock", 1, gateway, None), 1.0)
    finally:
        store.close()
    key = "sk-migrate-3e7b1c90d4"
    write_keys(keyring_file, {key_ref_for("keyed"): key, binding_ref(key_ref_for("keyed")):
                              KeyBinding.of("mock", gateway).to_text()})
    done = subprocess.run([*REELQUEUE, "--data-dir", str(data), "migrate-to", team_url],
                          capture_output=True, text=True, timeout=120,
                          env=machine_env(keyring_file), check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Kept 1 account key(s) for the team on this machine" in done.stdout
    database_id = read(team_url, "SELECT value FROM reelqueue_meta "
                       "WHERE key = 'database_id'")[0][0]
    kept = keyring_file.read_text()
    assert f"team:{database_id}/account:keyed" in kept
    assert f"binding:team:{database_id}/account:keyed" in kept
    listed = team_cli(data, team_url, "accounts", "list", keyring_file=keyring_file)
    assert listed.returncode == 0, listed.stderr
    assert "keyed" in listed.stdout and "on this machine" not in listed.stdout
    assert key not in done.stdout + done.stderr + listed.stdout


def test_migrate_leaves_this_machines_api_tokens_behind_and_says_how_to_make_team_ones(
        tmp_path: Path, team_url: str) -> None:
    """A local token only ever opened this machine's queue; copied, it would open the
    team's on every machine that serves it. It stays, and the output says so."""
    data = tmp_path / "data"
    _local_journal(data, tmp_path)
    made = cli(data, "tokens", "add", "ci-bot", "--scope", "submit")
    assert made.returncode == 0, made.stderr
    secret = made.stdout.strip().splitlines()[-1]
    done = cli(data, "migrate-to", team_url)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "API tokens were not copied (ci-bot)" in done.stdout
    assert f"'reelqueue --store {team_url} tokens add NAME" in done.stdout
    assert secret not in done.stdout + done.stderr
    team_tokens = cli(data, "--store", team_url, "tokens", "list")
    assert team_tokens.returncode == 0, team_tokens.stderr
    assert "ci-bot" not in team_tokens.stdout
    local_tokens = cli(data, "tokens", "list")
    assert "ci-bot\tsubmit" in local_tokens.stdout
