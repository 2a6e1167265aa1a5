"""Failed authentications against the served API: parallel wrong tokens from one address
are answered one after another, and past the bounded waiting line the answer is an
immediate 429 with Retry-After. The token is never in a response or the server's log."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from pathlib import Path

import httpx2
import pytest

from reelqueue.api.auth import FREE_FAILURES, MAX_WAITING
from reelqueue.api.connections import ConnectionLimits
from tests.api.live_api import LiveApi

pytestmark = pytest.mark.integration


@pytest.fixture
def live(tmp_path: Path) -> Iterator[LiveApi]:
    # Up to 79 guesses at once, each on its own untrusted connection from 127.0.0.1: the
    # per-address and per-subnet connection caps (tests/api/test_connections.py) are set
    # above that, so what is tested here is the authentication throttle alone.
    limits = ConnectionLimits(max_per_address=1000, max_per_subnet=1000)
    with LiveApi(tmp_path, limits=limits) as api:
        yield api


async def _guesses(url: str, count: int, timeout: float) -> list[tuple[int | None, float,
                                                                          str]]:
    limits = httpx2.Limits(max_connections=count + 1)
    async with httpx2.AsyncClient(base_url=url, timeout=timeout, limits=limits) as client:
        async def guess(i: int) -> tuple[int | None, float, str]:
            started = time.monotonic()
            try:
                answer = await client.get("/v1/jobs", headers={
                    "Authorization": f"Bearer rq_0000000000000000_wrong{i}"})
            except httpx2.TimeoutException:
                return None, time.monotonic() - started, ""
            return (answer.status_code, time.monotonic() - started,
                    answer.headers.get("Retry-After", ""))
        return await asyncio.gather(*(guess(i) for i in range(count)))


def test_parallel_wrong_tokens_wait_in_line(live: LiveApi) -> None:
    answers = asyncio.run(_guesses(live.url, FREE_FAILURES + 3, 30.0))
    assert {status for status, _, _ in answers} == {401}
    slowest = max(took for _, took, _ in answers)
    # The 6th, 7th and 8th failures wait 0.25, 0.75 and 1.75 s: in line, not side by
    # side (side by side the slowest would be answered after 1 s).
    assert slowest >= 1.7, sorted(took for _, took, _ in answers)


def test_past_the_waiting_line_the_answer_is_429_at_once(live: LiveApi) -> None:
    answers = asyncio.run(_guesses(live.url, FREE_FAILURES + MAX_WAITING + 10, 8.0))
    refused = [(took, retry) for status, took, retry in answers if status == 429]
    assert len(refused) >= 5, [status for status, _, _ in answers]
    assert all(retry.isdigit() and int(retry) >= 1 for _, retry in refused)
    assert max(took for took, _ in refused) < 8.0


def test_requests_without_a_credential_are_answered_at_once_and_not_counted(
        live: LiveApi) -> None:
    """No Authorization header guesses nothing: 401 at once, however many; the client's
    first wrong tokens afterwards are still free (not slowed by the bare requests)."""
    async def run() -> tuple[list[int], list[float]]:
        async with httpx2.AsyncClient(base_url=live.url, timeout=30.0) as client:
            bare = [(await client.get("/v1/jobs")).status_code
                    for _ in range(FREE_FAILURES + MAX_WAITING + 5)]
            took = []
            for i in range(FREE_FAILURES):
                started = time.monotonic()
                answer = await client.get("/v1/jobs", headers={
                    "Authorization": f"Bearer rq_0000000000000000_wrong{i}"})
                assert answer.status_code == 401
                took.append(time.monotonic() - started)
            return bare, took
    bare, _took = asyncio.run(run())
    # Counted, the bare requests would have been held past the sixth and refused (429)
    # past MAX_WAIT_SECONDS, and the wrong tokens after them too (checked: 401 each).
    assert set(bare) == {401}


def test_a_throttled_address_is_refused_a_right_token_too(live: LiveApi) -> None:
    """Once an address has used its turns, its right token is answered 429 like a wrong
    one: the answer tells a guesser nothing about the guess (the token is not checked)."""
    answers = asyncio.run(_guesses(live.url, FREE_FAILURES + MAX_WAITING + 10, 8.0))
    assert any(status == 429 for status, _, _ in answers)
    with live.client() as client:
        answer = client.get("/v1/jobs")
    assert answer.status_code == 429, answer.text
    assert answer.headers["Retry-After"].isdigit()
    assert answer.headers["Content-Type"].startswith("application/problem+json")
