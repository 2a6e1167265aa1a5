"""What is Luma Agents' own: its request body, the key check on an API of two endpoints
(a strict loopback server for ``accounts add``), its anchor-image rule, failures it does not
document, and a ``rate_limited`` render. The common behaviours run in
conformance/test_suite.py on the fake and facts of conformance/luma.py."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx2
import pytest
from conformance.luma import ANY_GENERATION, GEN_ID, GENERATION, FakeLuma, make, request
from provider_fakes import SENTINEL_KEY, Router, all_texts, fixture, json_response, run_one_row

from reelqueue.cli import cmd_accounts
from reelqueue.domain.errors import ErrorClass, ErrorLabel, ProviderError
from reelqueue.domain.models import Job
from reelqueue.domain.states import AccountStatus, JobState
from reelqueue.providers.adapters import luma
from reelqueue.providers.base import ProviderConfig
from reelqueue.store.memory import MemoryStore

ClientFor = Callable[[Router], httpx2.AsyncClient]


async def run_engine(tmp_path: Path, router: Router) -> tuple[Job, MemoryStore]:
    return await run_one_row(tmp_path, router, "luma", prompt="A paper boat",
                             account="luma-main")


async def test_create_body_as_documented(client_for: ClientFor) -> None:
    fake = FakeLuma()
    await make(client_for(fake.router)).submit(request(duration=10, resolution="1080p",
                                                       aspect_ratio="9:16"))
    create = fake.router.calls[0]
    assert create.headers["authorization"] == f"Bearer {SENTINEL_KEY}"
    assert json.loads(create.body) == {
        "type": "video", "prompt": "A paper boat", "model": "ray-3.2", "aspect_ratio": "9:16",
        "video": {"duration": "10s", "resolution": "1080p"}}


async def test_check_key_reads_a_generation_that_cannot_exist(client_for: ClientFor) -> None:
    """Only POST/GET /generations exist: the documented 404 for an unknown id means the
    key was accepted; nothing is created. A wrong key meets the fake's 401."""
    fake = FakeLuma()
    await make(client_for(fake.router)).check_key()
    call = fake.router.calls[-1]
    assert call.url.path.startswith("/v1/generations/")
    assert call.url.path != f"/v1/generations/{GEN_ID}"
    bad_key = luma.create(client_for(fake.router), ProviderConfig("luma-main", None, "wrong"))
    with pytest.raises(ProviderError) as caught:
        await bad_key.check_key()
    assert (caught.value.error_class, caught.value.label) == (ErrorClass.ACCOUNT,
                                                              ErrorLabel.KEY_REJECTED)


async def test_start_frame_from_a_file_or_a_link(client_for: ClientFor, tmp_path: Path) -> None:
    image = tmp_path / "start.png"
    image.write_bytes(b"\x89PNG\r\n\x1a\nimg")
    fake = FakeLuma()
    provider = make(client_for(fake.router))
    await provider.submit(request(image=str(image)))
    await provider.submit(request(image="https://img.example.test/start.jpg"))
    first, second = (json.loads(c.body)["video"]["start_frame"] for c in fake.router.calls)
    assert first["media_type"] == "image/png" and first["data"]
    assert second == {"url": "https://img.example.test/start.jpg"}


async def test_check_key_refuses_a_404_that_is_not_the_api(client_for: ClientFor) -> None:
    fake = FakeLuma()
    fake.router.script("GET", ANY_GENERATION, httpx2.Response(
        404, content=b"<html>Not here</html>", headers={"Content-Type": "text/html"}))
    with pytest.raises(ProviderError) as caught:
        await make(client_for(fake.router)).check_key()
    assert "base URL" in str(caught.value)
    assert caught.value.label is not ErrorLabel.INVALID_INPUT


class _StrictLuma(BaseHTTPRequestHandler):
    """A loopback Luma Agents with only its two endpoints, for the CLI's key check."""

    def _answer(self, status: int, body: Any) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:
        if self.headers.get("Authorization") != f"Bearer {SENTINEL_KEY}":
            self._answer(401, fixture("luma", "error_401"))
        elif self.path.startswith("/v1/generations/") and self.path.count("/") == 3:
            self._answer(404, fixture("luma", "error_404"))
        else:
            self._answer(404, {"detail": "Not Found"})

    def do_POST(self) -> None:
        self._answer(404, {"detail": "Not Found"})  # never reached by a key check

    def log_message(self, format: str, *args: Any) -> None:
        return None


@pytest.fixture
def strict_luma_url() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _StrictLuma)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


async def test_accounts_add_key_check_works_against_the_two_endpoints(
    strict_luma_url: str,
) -> None:
    """``accounts add --provider luma`` runs ``cmd_accounts.check_key``: a good key passes,
    a wrong one is refused as a key problem (not a row-parameters message)."""
    await cmd_accounts.check_key("luma-main", "luma", strict_luma_url, SENTINEL_KEY, {})
    with pytest.raises(ProviderError) as caught:
        await cmd_accounts.check_key("luma-main", "luma", strict_luma_url, "wrong-key", {})
    assert caught.value.label is ErrorLabel.KEY_REJECTED
    assert "wrong-key" not in all_texts(caught.value)


# -- issue 10: documented rules, unknown outcomes, the engine ------------------------------


def test_an_anchor_image_only_with_5_seconds() -> None:
    assert luma.extra_validation({"image": "https://img.example.test/a.jpg", "duration": 5}) \
        == []
    assert luma.extra_validation({"duration": 10}) == []
    problems = luma.extra_validation({"image": "https://img.example.test/a.jpg",
                                      "duration": 10})
    assert problems and "5 second" in problems[0].message
    assert problems[0].accepted == {"duration": (5,), "image": (None,)}


async def test_360p_and_image_with_10s_are_refused_before_sending(
    client_for: ClientFor,
) -> None:
    fake = FakeLuma()
    provider = make(client_for(fake.router))
    for params in ({"resolution": "360p"},
                   {"image": "https://img.example.test/a.jpg", "duration": 10}):
        with pytest.raises(ProviderError) as caught:
            await provider.submit(request(**params))
        assert caught.value.label is ErrorLabel.INVALID_INPUT
    assert fake.router.calls == []


async def test_engine_rate_limited_failure_pauses_once_then_creates_afresh(
    tmp_path: Path,
) -> None:
    """A render that failed with ``rate_limited`` is dropped, never reattached: the account
    pauses once and a fresh create follows (issue 10, item 6)."""
    fake = FakeLuma(states=["generation_completed"])
    fake.router.script("GET", GENERATION, json_response(200, fixture(
        "luma", "failed_rate_limited")))
    job, store = await run_engine(tmp_path, fake.router)
    assert job.state is JobState.COMPLETED
    assert fake.creates() == 2
    pauses = [entry for entry in store.ledger() if entry.event == "account_status"
              and entry.detail.get("status") == str(AccountStatus.RATE_LIMITED)]
    assert len(pauses) == 1


async def test_engine_unreadable_poll_answer_fails_without_a_second_create(
    tmp_path: Path,
) -> None:
    fake = FakeLuma(states=["generation_completed"])
    fake.router.script("GET", GENERATION, json_response(200, {"generation": "?"}))
    job, _ = await run_engine(tmp_path, fake.router)
    assert job.state is JobState.FAILED
    assert job.error_label == ErrorLabel.SUBMIT_UNKNOWN.value
    assert fake.creates() == 1
