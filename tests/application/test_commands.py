"""The application layer's commands on a real journal (a temporary data folder): the
same calls the window, the command line and the HTTP API make."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TypeVar

import pytest

from reelqueue.application import accounts, imports, jobs, views
from reelqueue.application.accounts import AccountChange, AccountDraft
from reelqueue.application.context import AppContext
from reelqueue.application.session import KeyCache, Session, SessionClosed
from reelqueue.credentials import MemoryKeyring
from reelqueue.domain.clock import FakeClock
from reelqueue.domain.errors import ErrorLabel, InputError, account_status_for
from reelqueue.domain.states import AccountStatus, JobState
from reelqueue.intake import ImportOptions

pytestmark = pytest.mark.integration

T = TypeVar("T")
SHEET = "prompt,duration\na red fox at dawn,5\na blue whale at dusk,5\nsnow on a roof,5\n"
SENTINEL = "sk-application-test-0123456789abcdef"


@pytest.fixture
def ctx(tmp_path: Path) -> AppContext:
    return AppContext(data_dir=tmp_path / "data", videos_dir=tmp_path / "videos",
                      clock=FakeClock(1_700_000_000.0))



def on_journal(ctx: AppContext, command: Callable[[Session], Awaitable[T]]) -> T:
    async def run() -> T:
        session = Session(ctx)
        await session.open_journal()
        try:
            return await command(session)
        finally:
            await session.stop()

    return asyncio.run(run())


def sheet(tmp_path: Path) -> Path:
    path = tmp_path / "shots.csv"
    path.write_text(SHEET, encoding="utf-8")
    return path


def test_add_account_checks_the_draft_and_keeps_the_key_out_of_the_journal(
        ctx: AppContext, memory_keyring: MemoryKeyring) -> None:
    draft = AccountDraft("main", "mock", 2, SENTINEL)
    assert SENTINEL not in repr(draft)
    added = on_journal(ctx, lambda s: accounts.add_account(s, draft, check=False))
    assert (added.name, added.capacity, added.key_ref is not None) == ("main", 2, True)
    assert SENTINEL not in ctx.journal_path.read_bytes().decode("latin-1")
    listed = on_journal(ctx, accounts.list_accounts)
    assert [(s.account.name, s.live) for s in listed] == [("main", 0)]
    with pytest.raises(InputError, match="already exists"):
        on_journal(ctx, lambda s: accounts.add_account(s, draft, check=False))
    with pytest.raises(InputError, match="at least 1"):
        on_journal(ctx, lambda s: accounts.add_account(
            s, AccountDraft("other", "mock", 0), check=False))
    with pytest.raises(InputError, match="a name"):
        on_journal(ctx, lambda s: accounts.add_account(
            s, AccountDraft("  ", "mock", 1), check=False))


def test_a_key_the_keyring_lost_is_recorded_as_missing(
        ctx: AppContext, memory_keyring: MemoryKeyring) -> None:
    on_journal(ctx, lambda s: accounts.add_account(
        s, AccountDraft("lu", "luma", 1, SENTINEL), check=False))
    account = on_journal(ctx, lambda s: accounts.get_account(s, "lu"))
    assert account.key_ref is not None
    memory_keyring.delete_password(*_service_and_user(account.key_ref))
    result = on_journal(ctx, lambda s: accounts.test_account(s, "lu"))
    assert (result.ok, result.status) == (False, AccountStatus.KEY_MISSING)
    assert on_journal(ctx, lambda s: accounts.get_account(s, "lu")).status == (
        AccountStatus.KEY_MISSING)


def _service_and_user(key_ref: str) -> tuple[str, str]:
    from reelqueue.credentials.keystore import SERVICE

    return SERVICE, key_ref


def test_update_remove_and_the_daily_cap(ctx: AppContext, memory_keyring: MemoryKeyring) -> None:
    on_journal(ctx, lambda s: accounts.add_account(s, AccountDraft("m", "mock", 1),
                                                   check=False))
    changed = on_journal(ctx, lambda s: accounts.update_account(
        s, "m", AccountChange(capacity=4, enabled=False, daily_cap=2.5)))
    assert (changed.capacity, changed.enabled, changed.settings.get("daily_cap")) == (
        4, False, 2.5)
    cleared = on_journal(ctx, lambda s: accounts.update_account(
        s, "m", AccountChange(clear_daily_cap=True)))
    assert cleared.settings.get("daily_cap") is None
    with pytest.raises(InputError, match="OpenAI-compatible gateway"):
        on_journal(ctx, lambda s: accounts.update_account(s, "m", AccountChange(model="x")))
    on_journal(ctx, lambda s: accounts.remove_account(s, "m"))
    assert on_journal(ctx, accounts.list_accounts) == []
    with pytest.raises(InputError, match="no account named"):
        on_journal(ctx, lambda s: accounts.remove_account(s, "m"))


def test_the_error_label_to_account_status_mapping_is_one_table() -> None:
    assert account_status_for(ErrorLabel.KEY_REJECTED) == AccountStatus.KEY_REJECTED
    assert account_status_for(ErrorLabel.OUT_OF_CREDITS) == AccountStatus.OUT_OF_CREDITS
    assert account_status_for(ErrorLabel.RATE_LIMITED) == AccountStatus.RATE_LIMITED
    assert account_status_for(ErrorLabel.TIMED_OUT) is None


def test_import_plan_counts_present_jobs_and_estimates_only_new_ones(
        ctx: AppContext, tmp_path: Path) -> None:
    path = sheet(tmp_path)
    options = ImportOptions(output_root=ctx.videos_dir)
    first = on_journal(ctx, lambda s: imports.plan_import(s, path, options))
    assert (len(first.jobs), first.already_present, first.estimate.jobs) == (3, 0, 3)
    result = on_journal(ctx, lambda s: imports.apply_import(s, first, 2, max_spend=1.5))
    assert result.added == 2
    again = on_journal(ctx, lambda s: imports.plan_import(s, path, options))
    assert (again.already_present, again.estimate.jobs) == (2, 1)
    batch = on_journal(ctx, jobs.batches)[0]
    assert batch.settings.get("max_spend") == 1.5


def test_job_commands_without_an_engine(ctx: AppContext, tmp_path: Path) -> None:
    path = sheet(tmp_path)
    options = ImportOptions(output_root=ctx.videos_dir)

    async def run(session: Session) -> None:
        plan = await imports.plan_import(session, path, options)
        await imports.apply_import(session, plan)
        assert await jobs.cancel(session, [1, 2]) == [1, 2]
        plan2 = await jobs.retry_plan(session, [1])
        assert plan2.job_ids == [1]
        assert await jobs.retry(session, plan2.job_ids) == [1]
        moved = await jobs.prioritize_jobs(session, [3])
        assert moved.changed == 1
        batch = await jobs.set_batch_paused(session, 1, True)
        assert batch is not None and jobs.is_paused(batch)
        (summary,) = await jobs.list_batches(session)
        assert (summary.jobs, summary.unfinished, summary.paused) == (3, 2, True)
        counts = await views.counts(session)
        assert counts.by_state == {JobState.QUEUED.value: 2, JobState.CANCELLED.value: 1}
        rows = await views.job_rows(session)
        assert [row.id for row in rows] == [1, 2, 3]

    on_journal(ctx, run)


def test_commands_after_stop_are_refused(ctx: AppContext) -> None:
    async def run() -> None:
        session = Session(ctx)
        await session.open_journal()
        await session.stop()
        with pytest.raises(SessionClosed):
            await views.counts(session)

    asyncio.run(run())


class SlowKeystore:
    """A keyring that records the thread each read ran on."""

    def __init__(self) -> None:
        self.threads: list[str] = []

    def get_key(self, ref: str) -> str | None:
        self.threads.append(threading.current_thread().name)
        return f"key-for-{ref}"


def test_the_key_cache_never_reads_the_keyring_on_the_event_loop() -> None:
    """The engine asks for keys on the loop (every account change); a key not read ahead
    is read on a worker thread and the engine is woken when it is there (issue 12, 7)."""
    keystore = SlowKeystore()
    cache = KeyCache(keystore)
    woken = asyncio.Event()

    async def run() -> None:
        cache.on_loaded = woken.set
        assert cache.lookup("acct") is None  # not read ahead: no blocking read here
        await asyncio.wait_for(woken.wait(), 10)
        assert cache.lookup("acct") == "key-for-acct"
        assert cache.lookup("acct") == "key-for-acct"

    asyncio.run(run())
    assert len(keystore.threads) == 1
    assert keystore.threads[0] != threading.main_thread().name
