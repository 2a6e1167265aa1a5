"""Per-render attribution of ``reelqueue spend --reconcile`` (issue 32 item 5) on real
adapters, not only the mock: the reconciler reads the account's renders with the
provider's own adapter, over loopback, from the conformance fakes of Replicate's
predictions list (tests/providers/conformance/replicate_search.py; the SDK's shapes:
tests/fixtures/replicate/SOURCE.md, "Reconciliation"), Luma Dream Machine's generations
list (conformance/luma_legacy_search.py; tests/fixtures/luma_legacy/SOURCE.md) and an
OpenAI-compatible gateway's ``GET /videos`` (conformance/openai_compat_search.py;
tests/fixtures/openai_compat/SOURCE.md). Each listed render a job holds is the journal's;
one "another tool" made on the key is named by id; a page that cannot be read says
"provider's figures unavailable", never a crash; reading creates nothing.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx2
import pytest
from conformance.luma_legacy_search import API as LUMA_API
from conformance.luma_legacy_search import LIST as LUMA_LIST
from conformance.luma_legacy_search import FakeGenerations
from conformance.openai_compat_search import GATEWAY, FakeVideoList
from conformance.replicate_search import API, FakeAccount
from provider_fakes import Router

from reelqueue.application import accounts
from reelqueue.application.accounts import AccountDraft
from reelqueue.application.context import AppContext
from reelqueue.application.session import Session
from reelqueue.cli import main as cli_main
from reelqueue.credentials import MemoryKeyring
from reelqueue.domain.models import BatchSpec, JobSpec
from reelqueue.store.base import ClaimParams
from reelqueue.store.sqlite import SqliteStore

pytestmark = [pytest.mark.integration]

KEY = "r8_" + "4" * 37
UNREADABLE = b"<html><body>Service unavailable</body></html>"


@contextlib.contextmanager
def loopback(router: Router, host: str) -> Iterator[str]:
    """Serve ``router`` (a conformance fake's routing function) on loopback, as if it
    were ``https://{host}``: the adapter's own requests, over real HTTP."""

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def _bridge(self) -> None:
            length = min(int(self.headers.get("Content-Length") or 0), 1 << 20)
            body = self.rfile.read(length)
            request = httpx2.Request(self.command, f"https://{host}{self.path}",
                                     headers=dict(self.headers.items()), content=body)
            answer = router(request)
            content = answer.read()
            self.send_response(answer.status_code)
            self.send_header("Content-Type",
                             answer.headers.get("Content-Type", "application/json"))
            self.send_header("Content-Length", str(len(content)))
            self.end_headers()
            self.wfile.write(content)

        do_GET = do_POST = _bridge

        def log_message(self, format: str, *args: Any) -> None:
            return

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(10)


@dataclass(frozen=True)
class Case:
    """One provider: its kind, how its fake is made, and how a render is put in it."""

    provider: str
    host: str
    path: str  # the base URL's path on the fake's host
    settings: dict[str, Any]
    make: Callable[[float], Any]
    add: Callable[[Any, str, float], str]  # (fake, prompt, created_at) -> provider's id
    unreadable: Callable[[Any], None]  # the fake's next list page cannot be read


def _replicate_unreadable(fake: FakeAccount) -> None:
    fake.fail_list_call[fake.list_calls + 1] = httpx2.Response(
        200, content=UNREADABLE, headers={"Content-Type": "text/html"})


def _gateway_unreadable(fake: FakeVideoList) -> None:
    fake.router.script("GET", rf"{GATEWAY}/v1/videos", httpx2.Response(
        200, content=UNREADABLE, headers={"Content-Type": "text/html"}))


def _luma_unreadable(fake: FakeGenerations) -> None:
    fake.router.script("GET", LUMA_LIST, httpx2.Response(
        200, content=UNREADABLE, headers={"Content-Type": "text/html"}))


def _luma(now: float) -> FakeGenerations:
    fake = FakeGenerations()
    fake.now = now
    return fake


def _replicate(now: float) -> FakeAccount:
    fake = FakeAccount()
    fake.now = now
    return fake


def _gateway(now: float) -> FakeVideoList:
    fake = FakeVideoList()
    fake.now = now
    return fake


CASES = {
    "luma-legacy": Case("luma-legacy", LUMA_API, "/dream-machine/v1", {}, _luma,
                        lambda fake, prompt, at: fake.other(at, prompt=prompt)["id"],
                        _luma_unreadable),
    "replicate": Case("replicate", API, "/v1", {}, _replicate,
                      lambda fake, prompt, at: fake.add(prompt, at).id,
                      _replicate_unreadable),
    "openai-compat": Case("openai-compat", GATEWAY, "/v1",
                          {"model": "wan-2.5", "settle_seconds": 0}, _gateway,
                          lambda fake, prompt, at: fake.add(prompt, at),
                          _gateway_unreadable),
}


def _cli(ctx: AppContext, *argv: str) -> int:
    return cli_main.main(["--data-dir", str(ctx.data_dir), "--videos-dir",
                          str(ctx.videos_dir), *argv])


def _journal_holds(ctx: AppContext, provider: str, provider_job_id: str) -> None:
    """One job of the journal created ``provider_job_id`` on the account (its intent, its
    price and the provider's id, through the store's own transitions)."""
    store = SqliteStore.open(ctx.journal_path, now=time.time())
    try:
        batch = store.create_batch(BatchSpec("b", "s.csv", "b"), time.time())
        store.add_jobs(batch.id, [JobSpec("k", "a fox", provider, "b/1.mp4",
                                          params={"duration": 5},
                                          metadata={"price": 0.5})], time.time())
        claim = store.claim_next_job(ClaimParams("acct", "test", time.time(), 600.0))
        assert claim is not None
        assert store.mark_submitting(claim.token, "ours-1", time.time())
        assert store.record_submitted(claim.token, provider_job_id, time.time())
    finally:
        store.close()


@pytest.mark.parametrize("kind", sorted(CASES))
def test_listed_renders_are_attributed_on_a_real_adapter(
        kind: str, tmp_path: Path, memory_keyring: MemoryKeyring,
        capsys: pytest.CaptureFixture[str]) -> None:
    case = CASES[kind]
    now = time.time()
    fake = case.make(now)
    ours = case.add(fake, "a fox", now - 120)
    foreign = case.add(fake, "a hen, by another tool", now - 60)
    ctx = AppContext(data_dir=tmp_path / "data", videos_dir=tmp_path / "videos")
    with loopback(fake.router, case.host) as url:

        async def prepare() -> None:
            session = Session(ctx)
            await session.open_journal()
            try:
                await accounts.add_account(session, AccountDraft(
                    "acct", case.provider, 2, KEY, url + case.path, dict(case.settings)),
                    check=False)
            finally:
                await session.stop()

        asyncio.run(prepare())
        _journal_holds(ctx, case.provider, ours)

        assert _cli(ctx, "spend", "--reconcile", "--days", "1", "--json") == 0
        (account,) = json.loads(capsys.readouterr().out)["accounts"]
        renders = account["renders"]
        assert renders is not None, account
        assert renders["unavailable"] is None, renders
        assert renders["listed"] == 2 and renders["known"] == 1, renders
        assert [r["provider_job_id"] for r in renders["unknown"]] == [foreign]
        (listed,) = renders["unknown"]
        assert listed["created_at"] == pytest.approx(now - 60, abs=1.0)
        assert [d["creates"] for d in account["days"]] == [1]

        assert _cli(ctx, "spend", "--reconcile", "--days", "1") == 0
        text = capsys.readouterr().out
        assert ("2, 1 of them the journal's; 1 the journal does not know (another tool "
                "on the key, or a lost create that was billed)") in text, text
        assert f"    {foreign} (created " in text and ours not in text

        case.unreadable(fake)
        assert _cli(ctx, "spend", "--reconcile", "--days", "1", "--json") == 0
        (account,) = json.loads(capsys.readouterr().out)["accounts"]
        renders = account["renders"]
        assert renders["unavailable"], renders
        assert renders["listed"] == 0 and renders["unknown"] == []
        case.unreadable(fake)
        assert _cli(ctx, "spend", "--reconcile", "--days", "1") == 0
        text = capsys.readouterr().out
        assert "provider's figures unavailable" in text, text
        assert foreign not in text
    assert not [c for c in fake.router.calls if c.method == "POST"]  # nothing created
