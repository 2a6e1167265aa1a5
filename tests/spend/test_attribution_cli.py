"""Per-render attribution (issue 32 item 5) where the provider lists the account's renders:
against the mock's real server over loopback (its list is read as the reconciler reads
it), ``spend --reconcile`` names the render "another tool" made on the key, by id, and
counts the journal's own; nothing is created by reading."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Iterator
from pathlib import Path

import httpx2
import pytest

from reelqueue.application import accounts
from reelqueue.application.accounts import AccountDraft
from reelqueue.application.context import AppContext
from reelqueue.application.session import Session
from reelqueue.credentials import MemoryKeyring
from reelqueue.domain.models import BatchSpec, JobSpec
from reelqueue.mockprovider import MockOptions, MockProviderServer
from reelqueue.providers.base import RenderRequest
from reelqueue.providers.builtin import builtin_registry
from reelqueue.providers.httpx_session import session_of
from reelqueue.providers.registry import build_provider
from reelqueue.store.base import ClaimParams
from tests.spend.conftest import Journal

pytestmark = [pytest.mark.integration]

SETTINGS = {"reconcile": "search", "settle_seconds": 0}


@pytest.fixture
def server() -> Iterator[MockProviderServer]:
    with MockProviderServer(MockOptions(seed=3)) as running:
        yield running


async def _create(url: str, prompt: str, token: str) -> str:
    """One render created on the mock, as any client of the key would."""
    async with httpx2.AsyncClient(timeout=10.0) as client:
        adapter = build_provider(builtin_registry().get("mock"), session_of(client),
                                 account="m", base_url=url, api_key=None, settings=SETTINGS)
        return await adapter.submit(RenderRequest(
            job_key=token, client_token=token, prompt=prompt,
            params={"model": "mock-1", "duration": 4}))


def test_a_render_of_another_tool_is_named_by_id_and_the_journals_are_counted(
        tmp_path: Path, memory_keyring: MemoryKeyring, server: MockProviderServer,
        capsys: pytest.CaptureFixture[str]) -> None:
    ctx = AppContext(data_dir=tmp_path / "data", videos_dir=tmp_path / "videos")

    async def prepare() -> None:
        session = Session(ctx)
        await session.open_journal()
        try:
            await accounts.add_account(session, AccountDraft(
                "m", "mock", 2, None, server.url, dict(SETTINGS)), check=False)
        finally:
            await session.stop()

    asyncio.run(prepare())
    ours = asyncio.run(_create(server.url, "a fox", "ours-1"))
    foreign = asyncio.run(_create(server.url, "a hen", "elsewhere-1"))
    journal = Journal(ctx)
    store = journal.store()
    try:
        batch = store.create_batch(BatchSpec("b", "s.csv", "b"), time.time())
        store.add_jobs(batch.id, [JobSpec("k", "a fox", "mock", "b/1.mp4",
                                          params={"model": "mock-1", "duration": 4},
                                          metadata={"price": 0.2})], time.time())
        claim = store.claim_next_job(ClaimParams("m", "test", time.time(), 600.0))
        assert claim is not None
        assert store.mark_submitting(claim.token, "ours-1", time.time())
        assert store.record_submitted(claim.token, ours, time.time())
    finally:
        store.close()

    assert journal.cli("spend", "--reconcile", "--days", "1", "--json") == 0
    (account,) = json.loads(capsys.readouterr().out)["accounts"]
    assert account["unavailable"].startswith("usage not published by Mock provider")
    renders = account["renders"]
    assert renders["listed"] == 2 and renders["known"] == 1 and renders["complete"]
    assert [r["provider_job_id"] for r in renders["unknown"]] == [foreign]
    assert [d["creates"] for d in account["days"]] == [1]
    assert journal.cli("spend", "--reconcile", "--days", "1") == 0
    text = capsys.readouterr().out
    assert ("2, 1 of them the journal's; 1 the journal does not know (another tool on "
            "the key, or a lost create that was billed)") in text
    assert f"    {foreign} (created " in text and ours not in text
    counters = server.counters()
    assert counters["creates_total"] == 2  # the two made above: reading created nothing
    assert counters["lists_total"] >= 2
