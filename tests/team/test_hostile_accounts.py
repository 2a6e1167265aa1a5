"""Issue 21's trust boundary: a row changed in the database never makes this machine send
a key to a host it did not bind that key to.

Each of the three attacks of the issue, on the team database (PostgreSQL) and on the
local SQLite journal, with the real session, engine and keyring code (an in-memory
keyring): the account row of "victim" gets a planted ``base_url`` (a loopback server
recording every Authorization header, forwarding to a real mock provider), alone, with
``key_ref`` pointed at another account's key, or at the database password's keyring
entry. Then:

* the engine makes a full pass and stalls: the planted host saw no request at all;
* the account is reported as "changed on the team database — confirm on this machine"
  (the engine's account event, its stall reason, ``status`` and ``accounts list``), and
  ``accounts test`` sends nothing either;
* after ``accounts confirm victim`` on this machine the jobs render through the planted
  host (the control that proves it was reachable), carrying the victim's own key only:
  never the other account's key, never the database password.
"""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, TypeVar

import psycopg
import pytest

from reelqueue.application import accounts, status
from reelqueue.application.accounts import AccountChange, AccountDraft
from reelqueue.application.context import AppContext
from reelqueue.application.session import Session
from reelqueue.application.team import database_key_ref, team_config
from reelqueue.credentials.binding import binding_ref
from reelqueue.credentials.keystore import SERVICE, MemoryKeyring, key_ref_for
from reelqueue.domain.backoff import BackoffPolicy
from reelqueue.domain.models import BatchSpec, JobSpec
from reelqueue.domain.states import JobState
from reelqueue.engine.config import EngineConfig
from reelqueue.engine.events import AccountEvent, Event
from reelqueue.mockprovider.options import MockOptions
from reelqueue.mockprovider.server import MockProviderServer
from tests.team.hostile_http import RecordingProxy

pytestmark = [pytest.mark.integration]

T = TypeVar("T")

VICTIM_KEY = "sk-victim-7f3a9c21e8b44d0f"
OTHER_KEY = "sk-other-0c55e1d9a7f24b6e"
DB_PASSWORD = "db-pass-91d2c4e7b3a85f60"
SQLITE_TEAM_URL = "postgresql://team@db.example:5432/reelqueue"  # a team this user joined
CHANGED = "changed on the team database — confirm on this machine"
CONFIG = EngineConfig(retry_backoff=BackoffPolicy(0.05, 0.2), heartbeat_seconds=1.0,
                      lease_seconds=10.0)
JOBS = 3



@pytest.fixture(params=["sqlite", "postgres"])
def ctx(request: pytest.FixtureRequest, tmp_path: Path) -> AppContext:
    url = request.getfixturevalue("team_url") if request.param == "postgres" else None
    return AppContext(data_dir=tmp_path / "data", videos_dir=tmp_path / "videos",
                      store_url=url)


def on_session(ctx: AppContext, command: Callable[[Session], Awaitable[T]]) -> T:
    async def run() -> T:
        session = Session(ctx)
        await session.open_journal()
        try:
            return await command(session)
        finally:
            await session.stop()

    return asyncio.run(run())


def change_row(ctx: AppContext, name: str, **columns: str) -> None:
    """The attack: the row changed in the database by someone else (raw SQL)."""
    sets = ", ".join(f"{column} = ?" for column in columns)
    if ctx.store_url is None:
        with sqlite3.connect(ctx.journal_path) as db:
            db.execute(f"UPDATE accounts SET {sets} WHERE name = ?", [*columns.values(), name])
        return
    with psycopg.connect(ctx.store_url, autocommit=True) as db:
        db.execute(f"UPDATE accounts SET {sets.replace('?', '%s')} WHERE name = %s",
                   [*columns.values(), name])


def secrets() -> dict[str, str]:
    return {"victim": VICTIM_KEY, "other": OTHER_KEY, "password": DB_PASSWORD}


async def prepare(session: Session, mock_url: str, out: Path) -> None:
    """Two accounts added on this machine (their keys bound to the mock), "other" paused
    so the jobs go to "victim", and JOBS jobs."""
    for name, key in (("victim", VICTIM_KEY), ("other", OTHER_KEY)):
        await accounts.add_account(session, AccountDraft(name, "mock", 2, key, mock_url),
                                   check=False)
    await accounts.update_account(session, "other", AccountChange(enabled=False))
    journal, now = session.journal, session.clock.now()
    batch = await journal.create_batch(BatchSpec("b", "sheet.csv", str(out)), now)
    await journal.add_jobs(batch.id, [
        JobSpec(f"k{i}", f"shot {i} [[mock:render_seconds=0.1]]", "mock",
                str(out / f"{i}.mp4"), row_number=i + 2) for i in range(JOBS)], now)


def attack_columns(kind: str, session_refs: dict[str, str], planted: str,
                   db_url: str) -> dict[str, str]:
    if kind == "base_url":
        return {"base_url": planted}
    if kind == "key_ref_other":
        return {"base_url": planted, "key_ref": session_refs["other"]}
    assert kind == "key_ref_password"
    return {"base_url": planted, "key_ref": database_key_ref(db_url)}


@pytest.mark.parametrize("attack", ["base_url", "key_ref_other", "key_ref_password"])
def test_a_changed_row_never_sends_a_key_to_a_host_this_machine_did_not_bind(
        ctx: AppContext, tmp_path: Path, memory_keyring: MemoryKeyring,
        attack: str) -> None:
    db_url = ctx.store_url or SQLITE_TEAM_URL
    # The database password is in this machine's keyring (where store-password puts it).
    memory_keyring.set_password(SERVICE, database_key_ref(db_url), DB_PASSWORD)
    with MockProviderServer(MockOptions(seed=3, accept_keys=frozenset(
            {VICTIM_KEY, OTHER_KEY}))) as mock, RecordingProxy(mock.url) as planted:

        async def setup(session: Session) -> dict[str, str]:
            await prepare(session, mock.url, tmp_path / "videos" / "out")
            return {name: session.trusted_keys.key_ref(name) for name in ("victim", "other")}

        refs = on_session(ctx, setup)
        # The key entries are derived from the names: the old key_ref text is only a flag.
        assert memory_keyring.get_password(SERVICE, refs["other"]) == OTHER_KEY
        assert memory_keyring.get_password(SERVICE, binding_ref(refs["victim"]))
        change_row(ctx, "victim", **attack_columns(attack, refs, planted.url, db_url))

        async def attacked(session: Session) -> dict[str, Any]:
            seen: list[Event] = []
            session.bus.subscribe(seen.append)
            config = team_config(CONFIG) if ctx.store_url else CONFIG
            await session.start(config)
            engine = session.running_engine
            stalled = await engine.run_until_drained(budget_seconds=120)
            tested = await accounts.test_account(session, "victim")
            words = (await status.status(session)).data["accounts"]
            notes = await accounts.machine_notes(session)
            events = [e for e in seen if isinstance(e, AccountEvent) and e.name == "victim"]
            requests_before_confirm = planted.requests()
            confirmed = await accounts.confirm_account(session, "victim")
            drained = await engine.run_until_drained(budget_seconds=120)
            jobs = await session.journal.list_jobs()
            return {"stalled": stalled, "tested": tested, "status": words, "notes": notes,
                    "events": events, "before": requests_before_confirm,
                    "confirmed": confirmed, "drained": drained, "jobs": jobs}

        seen = on_session(ctx, attacked)
    # Not rendered here, and nothing at all reached the planted host before the confirm.
    assert seen["stalled"].outcome == "stalled"
    assert f"victim: {CHANGED}" in seen["stalled"].detail
    assert seen["before"] == 0
    # Reported: the engine's account event, status, accounts list, accounts test.
    assert any(e.machine and CHANGED in e.machine for e in seen["events"])
    victim = next(a for a in seen["status"] if a["name"] == "victim")
    assert CHANGED in (victim["this_machine"] or "")
    assert CHANGED in seen["notes"]["victim"]
    assert "accounts confirm victim" in seen["notes"]["victim"]
    assert not seen["tested"].ok and CHANGED in seen["tested"].message
    # Confirmed on this machine: it renders through the host the row names now, with the
    # victim's own key only (the planted key_ref pointed nowhere).
    assert seen["confirmed"].ok, seen["confirmed"].message
    assert seen["drained"].outcome == "drained"
    assert [j.state for j in seen["jobs"]] == [JobState.COMPLETED] * JOBS
    senders = planted.who_sent(secrets())
    assert set(senders) == {"victim"} and senders["victim"] >= JOBS, dict(senders)
    # Nothing the session printed or stored carries a secret.
    for text in (seen["tested"].message, seen["confirmed"].message, seen["stalled"].detail,
                 *(str(e) for e in seen["events"])):
        assert not any(secret in text for secret in secrets().values())


def test_keys_kept_before_bindings_go_only_to_their_adapters_own_api(
        tmp_path: Path, memory_keyring: MemoryKeyring) -> None:
    """The migration of the local journal: its rows keep their ``account:NAME`` key
    references and the keys stay where they were; a key without a binding is bound at
    its first use to its adapter's own API only (an account without a base URL: the
    built-in mock here), and a gateway address waits for ``accounts confirm``."""
    ctx = AppContext(data_dir=tmp_path / "data", videos_dir=tmp_path / "videos")
    from reelqueue.domain.models import AccountSpec
    from reelqueue.store.sqlite import SqliteStore

    ctx.data_dir.mkdir(parents=True)
    out = tmp_path / "videos" / "out"  # inside the machine's videos folder (issue 23)
    with MockProviderServer(MockOptions(seed=4)) as mock, RecordingProxy(mock.url) as gateway:
        # A journal and keyring as the version before bindings left them.
        store = SqliteStore.open(ctx.journal_path, now=1.0)
        for name, url, key in (("own", None, VICTIM_KEY), ("gw", gateway.url, OTHER_KEY)):
            store.add_account(AccountSpec(name, "mock", 2, url, key_ref_for(name)), 1.0)
            memory_keyring.set_password(SERVICE, key_ref_for(name), key)
        batch = store.create_batch(BatchSpec("b", "sheet.csv", str(out)), 1.0)
        store.add_jobs(batch.id, [
            JobSpec(f"{name}{i}", f"{name} {i} [[mock:render_seconds=0.1]]", "mock",
                    str(out / f"{name}{i}.mp4"), pinned_account=name, row_number=i + 2)
            for name in ("own", "gw") for i in range(2)], 1.0)
        store.close()

        async def run(session: Session) -> dict[str, Any]:
            await session.start(CONFIG)
            engine = session.running_engine
            first = await engine.run_until_drained(budget_seconds=120)
            by_name = {j.job_key: j.state for j in await session.journal.list_jobs()}
            notes = await accounts.machine_notes(session)
            confirmed = await accounts.confirm_account(session, "gw")
            second = await engine.run_until_drained(budget_seconds=120)
            after = {j.job_key: j.state for j in await session.journal.list_jobs()}
            return {"first": first, "by_name": by_name, "notes": notes,
                    "confirmed": confirmed, "second": second, "after": after}

        seen = on_session(ctx, run)
    assert seen["first"].outcome == "stalled"
    assert seen["by_name"] == {"own0": JobState.COMPLETED, "own1": JobState.COMPLETED,
                               "gw0": JobState.QUEUED, "gw1": JobState.QUEUED}
    assert "not confirmed on this machine" in seen["notes"]["gw"]
    assert "accounts confirm gw" in seen["notes"]["gw"]
    assert "own" not in seen["notes"]
    # The old entries are used as they are, and the automatic binding was written.
    assert memory_keyring.get_password(SERVICE, key_ref_for("own")) == VICTIM_KEY
    assert '"provider\'s own"' in (memory_keyring.get_password(
        SERVICE, binding_ref(key_ref_for("own"))) or "")
    assert seen["confirmed"].ok
    assert seen["second"].outcome == "drained"
    assert set(seen["after"].values()) == {JobState.COMPLETED}
    senders = gateway.who_sent({"own": VICTIM_KEY, "gw": OTHER_KEY})
    assert set(senders) == {"gw"}, dict(senders)


def test_a_worker_on_the_team_database_waits_for_the_confirm_of_its_own_machine(
        tmp_path: Path, team_url: str) -> None:
    """The same boundary through the commands: ``reelqueue worker`` (its keyring read
    directly), ``team-key``, ``accounts list`` and ``accounts confirm`` as processes. The
    victim's row gets a planted address and a key_ref pointing at the database password
    while an untouched account keeps rendering (the progress that bounds the wait)."""
    from reelqueue.application.team import open_team_store
    from tests.team.harness import Worker, read, settle, team_cli

    admin, machine = tmp_path / "admin", "machine-w"
    admin.mkdir()
    with MockProviderServer(MockOptions(seed=5, accept_keys=frozenset(
            {VICTIM_KEY, OTHER_KEY}))) as mock, RecordingProxy(mock.url) as planted:
        for name, key in (("victim", VICTIM_KEY), ("steady", OTHER_KEY)):
            done = team_cli(admin, team_url, "accounts", "add", name, "--provider", "mock",
                            "--capacity", "2", "--base-url", mock.url, "--no-check",
                            keyring_file=admin / "keyring.json", stdin=key + "\n")
            assert done.returncode == 0, done.stdout + done.stderr
        worker = Worker(machine, tmp_path, team_url, "--no-progress", "--lease-seconds", "6")
        # This machine keeps both keys (team-key binds each to the address shown to it),
        # and the database password, as store-password would.
        for name, key in (("victim", VICTIM_KEY), ("steady", OTHER_KEY)):
            done = team_cli(worker.data, team_url, "team-key", name,
                            keyring_file=worker.keyring_file, stdin=key + "\n")
            assert done.returncode == 0, done.stdout + done.stderr
            assert mock.url in done.stdout
        done = team_cli(worker.data, team_url, "store-password", team_url,
                        keyring_file=worker.keyring_file, stdin=DB_PASSWORD + "\n")
        assert done.returncode == 0, done.stdout + done.stderr
        store = open_team_store(team_url, now=1.0)
        try:
            # Relative to each worker's videos folder (issue 23).
            batch = store.create_batch(BatchSpec("b", "s.csv", "out"), 1.0)
            store.add_jobs(batch.id, [
                JobSpec(f"{name}{i}", f"{name} {i} [[mock:render_seconds=0.1]]", "mock",
                        f"out/{name}{i}.mp4", pinned_account=name,
                        row_number=i + 2)
                for name in ("victim", "steady") for i in range(JOBS)], 1.0)
        finally:
            store.close()
        change_row(AppContext(tmp_path, tmp_path, store_url=team_url), "victim",
                   base_url=planted.url, key_ref=database_key_ref(team_url))
        try:
            worker.start().wait_running()
            assert f"account victim (mock): {CHANGED}" in worker.output()
            assert "account steady (mock): renders here" in worker.output()
            settle(lambda: read(team_url, "SELECT COUNT(*) FROM jobs WHERE state = "
                                "'COMPLETED' AND pinned_account = 'steady'")[0][0] == JOBS,
                   120, "the untouched account's jobs")
            assert planted.requests() == 0
            listed = team_cli(worker.data, team_url, "accounts", "list",
                              keyring_file=worker.keyring_file)
            assert CHANGED in listed.stdout, listed.stdout + listed.stderr
            confirmed = team_cli(worker.data, team_url, "accounts", "confirm", "victim",
                                 "--expect-url", planted.url,
                                 keyring_file=worker.keyring_file)
            assert confirmed.returncode == 0, confirmed.stdout + confirmed.stderr
            assert planted.url in confirmed.stdout
            settle(lambda: read(team_url, "SELECT COUNT(*) FROM jobs WHERE state = "
                                "'COMPLETED'")[0][0] == 2 * JOBS, 120,
                   "the victim's jobs after the confirm")
            assert worker.terminate() == 0
        finally:
            worker.stop_quietly()
        output = worker.all_output() + listed.stdout + confirmed.stdout
    senders = planted.who_sent(secrets())
    assert set(senders) == {"victim"} and senders["victim"] >= JOBS, dict(senders)
    assert not any(secret in output for secret in secrets().values())


def test_a_new_address_set_on_this_machine_is_bound_here_at_once(
        ctx: AppContext, tmp_path: Path, memory_keyring: MemoryKeyring) -> None:
    """``accounts set NAME --base-url URL`` is the user's own word on this machine: the
    row and this machine's binding change together, nothing waits for a confirm."""
    with MockProviderServer(MockOptions(seed=6)) as mock, RecordingProxy(mock.url) as gateway:

        async def run(session: Session) -> tuple[Any, dict[str, str], list[JobState]]:
            await prepare(session, mock.url, tmp_path / "videos" / "out")
            await accounts.update_account(session, "victim",
                                          AccountChange(base_url=gateway.url))
            config = team_config(CONFIG) if ctx.store_url else CONFIG
            await session.start(config)
            drained = await session.running_engine.run_until_drained(budget_seconds=120)
            notes = await accounts.machine_notes(session)
            return drained, notes, [j.state for j in await session.journal.list_jobs()]

        drained, notes, states = on_session(ctx, run)
    assert drained.outcome == "drained" and states == [JobState.COMPLETED] * JOBS
    assert "victim" not in notes
    senders = gateway.who_sent(secrets())
    assert set(senders) == {"victim"} and senders["victim"] >= JOBS, dict(senders)


def test_a_confirm_from_another_process_reaches_a_running_session(
        ctx: AppContext, tmp_path: Path, memory_keyring: MemoryKeyring) -> None:
    """``accounts confirm`` run in another terminal writes only this machine's keyring:
    the running window or ``run`` reads a waiting account's binding again (every
    trust.RECHECK_SECONDS) and its pump looks again (engine.CONFIRM_LOOK_SECONDS)."""
    from reelqueue.application.trust import keep_key
    from reelqueue.credentials.keystore import KeyStore

    with MockProviderServer(MockOptions(seed=7)) as mock, RecordingProxy(mock.url) as planted:

        async def setup(session: Session) -> str:
            await prepare(session, mock.url, tmp_path / "videos" / "out")
            return session.trusted_keys.key_ref("victim")

        ref = on_session(ctx, setup)
        change_row(ctx, "victim", base_url=planted.url)

        async def run(session: Session) -> tuple[str, str, list[JobState]]:
            await session.start(team_config(CONFIG) if ctx.store_url else CONFIG)
            engine = session.running_engine
            first = await engine.run_until_drained(budget_seconds=120)
            # The other process: the same keyring, written behind this session's back.
            await asyncio.to_thread(keep_key, KeyStore(), ref, VICTIM_KEY, "mock",
                                    planted.url)
            outcome = "stalled"
            for _ in range(60):  # each round is a full pump pass (or the drain itself)
                outcome = (await engine.run_until_drained(budget_seconds=120)).outcome
                if outcome == "drained":
                    break
                await asyncio.sleep(0.5)
            return first.outcome, outcome, [j.state for j in
                                            await session.journal.list_jobs()]

        first, then, states = on_session(ctx, run)
    assert first == "stalled"
    assert then == "drained" and states == [JobState.COMPLETED] * JOBS
    assert set(planted.who_sent(secrets())) == {"victim"}
