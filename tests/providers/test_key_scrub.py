"""No piece of a key survives in a provider's words (issue 11 item 4, DESIGN.md invariant 8).

The audit: a provider's error text quoted our request header past character 300; the text
was cut before it was scrubbed, so the first 16 characters of the key reached the journal,
``status --json`` and the exports. Now every text is scrubbed whole (every spelling, any
case, any run of 8+ characters of the key) and only then cut. These tests put the key at
every cut point, in every case, one character short, and through every adapter.
"""

from __future__ import annotations

import asyncio
import base64
import json
import random
import string
import traceback
from pathlib import Path
from urllib.parse import quote

import httpx2
import pytest
from tests.every_key import EveryAccountKey

from reelqueue.domain.backoff import BackoffPolicy
from reelqueue.domain.errors import ErrorLabel, ProviderError
from reelqueue.domain.models import AccountSpec, BatchSpec, JobSpec
from reelqueue.engine.config import EngineConfig
from reelqueue.engine.engine import Engine
from reelqueue.mockprovider import MockOptions, MockProviderServer
from reelqueue.providers.adapters import _redact
from reelqueue.providers.adapters._client import ApiClient
from reelqueue.providers.adapters._common import FailureRules
from reelqueue.providers.base import ProviderConfig
from reelqueue.providers.builtin import builtin_registry
from reelqueue.providers.mock import MockProvider
from reelqueue.store.sqlite import SqliteStore

# A key with a colon, so Kling reads it as access:secret; the rest as one opaque key.
KEY = "AKsentinel7f3a9c2e51b04d86:SKsentinel0d9e8f7a6b5c4d3e2f1"
FRAGMENT = _redact.SECRET_FRAGMENT_CHARS
CUT = _redact.MAX_MESSAGE_CHARS


def fragments(text: str, key: str = KEY) -> list[str]:
    """Every run of 8 characters of ``key`` found in ``text``, ignoring case."""
    low, k = text.lower(), key.lower()
    return [k[i: i + FRAGMENT] for i in range(len(k) - FRAGMENT + 1)
            if k[i: i + FRAGMENT] in low]


def every_text(error: BaseException) -> str:
    return "\n".join([str(error), repr(error), *traceback.format_exception(error)])


def api(key: str = KEY) -> ApiClient:
    client = httpx2.AsyncClient(transport=httpx2.MockTransport(lambda r: httpx2.Response(500)))
    return ApiClient(client, ProviderConfig("a", "https://api.example.test", key),
                           title="Example", default_base_url=None)


SPELLINGS = {
    "raw": KEY,
    "upper": KEY.upper(),
    "lower": KEY.lower(),
    "one-short": KEY[:-1],
    "first-16": KEY[:16],
    "last-9": KEY[-9:],
    "middle-8": KEY[20:28],
    "url-quoted": quote(KEY, safe=""),
    "json-escaped": json.dumps(KEY)[1:-1],
    "base64": base64.b64encode(KEY.encode()).decode(),
    "header": f"Authorization: BEARER {KEY.swapcase()}",
}


@pytest.mark.parametrize("spelling", SPELLINGS.values(), ids=SPELLINGS.keys())
def test_scrub_removes_every_spelling_and_fragment(spelling: str) -> None:
    scrubbed = api().scrub(f"you sent <{spelling}> which is wrong")
    assert fragments(scrubbed) == []
    assert _redact.REDACTED in scrubbed and scrubbed.endswith("> which is wrong")
    if spelling == SPELLINGS["base64"]:
        assert base64.b64encode(KEY.encode()).decode()[:8] not in scrubbed


def test_short_fragments_and_ordinary_words_stay() -> None:
    text = "Bearer token invalid: AKsenti (7 chars) is not enough to be a key"
    assert api().scrub(text) == text


@pytest.mark.parametrize("offset", range(CUT - len(KEY) - 20, CUT + 20))
def test_key_straddling_the_cut_never_leaves_a_piece(offset: int) -> None:
    """The regression: the header echoed at every position around character 300."""
    padding = "".join(random.Random(offset).choices(string.ascii_lowercase + " ", k=offset))
    echoed = f"{padding}Authorization: Bearer {KEY} and more"[offset:]
    text = padding + echoed
    client = api()
    for shown in (client.shorten(text), client.shorten(text.upper())):
        assert fragments(shown) == [], (offset, shown[-60:])
        assert len(shown) <= CUT
    body = json.dumps({"error": {"message": text}}).encode()
    response = httpx2.Response(400, content=body, headers={"Content-Type": "application/json"},
                              request=httpx2.Request("POST", "https://api.example.test/x"))
    error = client.http_error(response, during_create=True)
    assert fragments(every_text(error)) == []
    plain = httpx2.Response(502, text=text, request=response.request)
    assert fragments(client.message(plain)) == []


def test_failure_reasons_are_scrubbed_before_they_are_cut() -> None:
    reason = "x" * (CUT - 10) + f" header was Bearer {KEY}"
    error = FailureRules(retryable={"x": ErrorLabel.PROVIDER_ERROR}).classify(
        api(), reason)
    assert fragments(every_text(error)) == []


def test_a_derived_token_is_scrubbed_too() -> None:
    client = api()
    client.add_secret("eyJhbGciOiJIUzI1NiJ9.derived-token-value")
    assert "derived-" not in client.shorten("token eyJhbGciOiJIUzI1NiJ9.derived-token-v")


@pytest.mark.parametrize("shift", [12, 45])
@pytest.mark.parametrize("kind", builtin_registry().kinds())
async def test_every_adapter_scrubs_an_echoed_header_past_the_cut(kind: str, shift: int
                                                                   ) -> None:
    """Every registered adapter: its error for an answer quoting our key header with the
    key starting ``shift`` characters before the cut holds no piece of the key."""
    info = builtin_registry().get(kind)
    echoed: list[str] = []

    def echo(request: httpx2.Request) -> httpx2.Response:
        carrying = [f"{name}: {value}" for name, value in request.headers.items()
                    if fragments(value)]
        auth = request.headers.get("authorization")
        header = carrying[0] if carrying else f"authorization: {auth}"
        echoed.append(header)
        start = header.lower().find(KEY[:FRAGMENT].lower())
        words = "y" * max(0, CUT - shift - max(start, 0)) + header + " was refused"
        return httpx2.Response(401, json={"error": {"message": words, "code": "bad"}})

    async with httpx2.AsyncClient(transport=httpx2.MockTransport(echo)) as client:
        base = info.default_base_url or "https://gateway.example.test/v1"
        if kind == "mock":
            base = "http://127.0.0.1:9"
        provider = info.factory(client, ProviderConfig("a", base, KEY))
        with pytest.raises(ProviderError) as caught:
            await provider.check_key()
    assert echoed, "the adapter sent nothing"
    assert fragments(every_text(caught.value)) == []


async def test_mock_adapter_scrubs_at_every_cut_point() -> None:
    async with httpx2.AsyncClient() as client:
        provider = MockProvider(client, ProviderConfig("a", "http://127.0.0.1:9", KEY))
        for offset in range(CUT - len(KEY) - 5, CUT + 5):
            shown = provider._scrub("z" * offset + KEY.upper())
            assert fragments(shown) == [], offset


async def test_key_quoted_past_the_cut_never_reaches_the_journal(tmp_path: Path) -> None:
    """End to end: the mock server echoes our Authorization header in a create refusal.

    A long key (a signed token can be this long) puts the header across character 300 of
    the error text. The job fails; the journal file, ledger and job hold no piece of it.
    """
    key = "sk-" + "".join(random.Random(11).choices(string.ascii_letters + string.digits,
                                                    k=260))
    options = MockOptions(render_seconds_min=0.05, render_seconds_max=0.1, seed=5)
    journal = tmp_path / "journal.sqlite3"
    with MockProviderServer(options) as server:
        store = SqliteStore.open(journal, now=0)
        batch = store.create_batch(BatchSpec("b", "s.csv", str(tmp_path / "out"),
                                             max_attempts=1), 0)
        store.add_jobs(batch.id, [JobSpec("k0", "fox [[mock:echo_request]]", "mock",
                                          str(tmp_path / "out" / "0.mp4"), row_number=2)], 0)
        store.add_account(AccountSpec("m", "mock", 1, server.url, key_ref="m"), 0)
        config = EngineConfig(retry_backoff=BackoffPolicy(0.01, 0.05),
                              poll_backoff=BackoffPolicy(0.01, 0.05), heartbeat_seconds=0.05)
        engine = Engine(store, config=config, keys=EveryAccountKey(key),
                        rng=random.Random(1))
        await engine.start()
        try:
            await asyncio.wait_for(engine.run_until_drained(), 30)
        finally:
            await engine.stop()
        job = store.list_jobs()[0]
        ledger = store.ledger(job.id)
        engine.close_store()
    assert job.state.value == "FAILED"
    assert job.error_message is not None and "Bad request" in job.error_message
    assert _redact.REDACTED in job.error_message
    assert fragments(job.error_message, key) == []
    assert fragments(json.dumps([e.detail for e in ledger]), key) == []
    for path in tmp_path.glob("journal.sqlite3*"):
        assert fragments(path.read_bytes().decode("latin-1"), key) == [], path.name
