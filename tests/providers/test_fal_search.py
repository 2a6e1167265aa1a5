"""fal.ai: finding a create whose answer was lost in fal's request history.

The fake is built from fal's Platform API reference "List requests by endpoint"
(tests/fixtures/fal/SOURCE.md, key PL): ``GET api.fal.ai/v1/models/requests/by-endpoint``
with ``endpoint_id`` (comma-separated), ``start`` (ISO 8601), ``limit`` (default 50, max
100), ``cursor`` (base64 of the page number), ``expand=payloads``; pages of ``{items,
next_cursor, has_more}`` sorted by end time, newest first. A request is listed only once it
has finished (after a random render time, on a clock the test moves), with ``json_input``
only when payload storage is on.
"""

from __future__ import annotations

import base64
import hashlib
import json
import random
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx2
import pytest
from provider_fakes import (
    SENTINEL_KEY,
    Router,
    all_texts,
    echo_error,
    fixture,
    json_response,
    read_timeout,
)

from reelqueue.domain.errors import ErrorClass, ErrorLabel, ProviderError
from reelqueue.providers.adapters import fal
from reelqueue.providers.base import (
    ProviderConfig,
    ReconcileMethod,
    RenderRequest,
    SearchableProvider,
    reconcile_method,
    sends_client_token,
)

QUEUE = "queue.fal.run"
PLATFORM = "api.fal.ai"
SUBMIT = rf"{QUEUE}/fal-ai/veo3\.1(/fast)?(/image-to-video)?"
LIST = rf"{PLATFORM}/v1/models/requests/by-endpoint"
T0 = 1_793_000_000.0  # the fake's clock at the start of every test
MAX_RENDER = 600.0  # the fake's longest render (queue + run) before a request is listed
PNG = b"\x89PNG\r\n\x1a\n" + bytes(range(200))
ClientFor = Callable[[Router], httpx2.AsyncClient]


def iso(seconds: float) -> str:
    return datetime.fromtimestamp(seconds, tz=UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_iso(text: str) -> float:
    return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


class FalHistory:
    """fal's queue (creates) and its request history, on a clock the test moves."""

    def __init__(self, seed: int = 7) -> None:
        self.router = Router()
        self.now = T0
        self.rng = random.Random(seed)
        self.requests: list[dict[str, Any]] = []
        self.router.add("POST", SUBMIT, self._submit)
        self.router.add("GET", LIST, self._list)

    def add(self, endpoint: str, json_input: dict[str, Any] | None, sent: float,
            ended: float | None, status_code: int = 200) -> str:
        """A request of the account (ours or another client's); ``json_input`` None: sent
        with payload storage off."""
        request_id = str(self.rng.getrandbits(128))
        self.requests.append({"request_id": request_id, "endpoint_id": endpoint,
                              "sent": sent, "ended": ended, "status_code": status_code,
                              "json_input": json_input})
        return request_id

    def _submit(self, request: httpx2.Request, match: Any) -> httpx2.Response:
        endpoint = request.url.path.strip("/")
        # The render finishes (and is listed) after a random queue + render time.
        request_id = self.add(endpoint, json.loads(request.content), self.now,
                              self.now + self.rng.uniform(20.0, MAX_RENDER))
        app = "/".join(endpoint.split("/")[:2])
        answer = fixture("fal", "submit")
        answer.update(request_id=request_id,
                      status_url=f"https://{QUEUE}/{app}/requests/{request_id}/status",
                      response_url=f"https://{QUEUE}/{app}/requests/{request_id}",
                      cancel_url=f"https://{QUEUE}/{app}/requests/{request_id}/cancel")
        return json_response(200, answer)

    def _list(self, request: httpx2.Request, match: Any) -> httpx2.Response:
        if request.headers.get("authorization") != f"Key {SENTINEL_KEY}":
            return json_response(401, fixture("fal", "error_401"))
        query = request.url.params
        endpoints = set(query["endpoint_id"].split(","))
        start = parse_iso(query["start"]) if "start" in query else self.now - 86400
        limit = int(query.get("limit", "50"))
        assert 1 <= limit <= 100
        page = int(base64.b64decode(query["cursor"]).decode()) if "cursor" in query else 1
        finished = [r for r in self.requests
                    if r["endpoint_id"] in endpoints and r["ended"] is not None
                    and start <= r["ended"] <= self.now]
        finished.sort(key=lambda r: r["ended"], reverse=True)
        chunk = finished[(page - 1) * limit:page * limit]
        has_more = page * limit < len(finished)
        payloads = "payloads" in query.get("expand", "")
        return json_response(200, {
            "items": [self._item(r, payloads) for r in chunk],
            "next_cursor": base64.b64encode(str(page + 1).encode()).decode()
            if has_more else None,
            "has_more": has_more,
        })

    @staticmethod
    def _item(record: dict[str, Any], payloads: bool) -> dict[str, Any]:
        item: dict[str, Any] = {
            "request_id": record["request_id"], "endpoint_id": record["endpoint_id"],
            "started_at": iso(record["sent"] + 1), "sent_at": iso(record["sent"]),
            "ended_at": iso(record["ended"]), "status_code": record["status_code"],
            "duration": record["ended"] - record["sent"],
        }
        if payloads and record["json_input"] is not None:
            item["json_input"] = record["json_input"]
            item["json_output"] = {"video": {"url": "https://v3.fal.media/files/x/out.mp4"}}
        return item

    def list_calls(self) -> list[httpx2.URL]:
        return [c.url for c in self.router.calls if c.url.host == PLATFORM]


def make(client: httpx2.AsyncClient, base_url: str | None = None) -> fal.FalProvider:
    return fal.create(client, ProviderConfig("fal-1", base_url, SENTINEL_KEY))


def request(prompt: str = "A glass city at dawn", **params: Any) -> RenderRequest:
    return RenderRequest(job_key="row-1", client_token="tok-1", prompt=prompt, params=params)


PARAMS = {"model": "fal-ai/veo3.1/fast", "duration": 6, "aspect_ratio": "9:16", "seed": 11}


async def test_a_lost_create_is_found_once_fal_lists_it(client_for: ClientFor) -> None:
    history = FalHistory()
    provider = make(client_for(history.router))
    wanted = request(**PARAMS)
    # Another client on the same key rendered the same prompt before and renders it after.
    history.add("fal-ai/veo3.1/fast", fal._body("fal-ai/veo3.1/fast", wanted, None),
                T0 - 7200, T0 - 7000)
    history.now = T0 + 5
    job_id = await provider.submit(wanted)  # its answer is "lost": only search knows it
    sent = history.now
    history.now += 60
    other = history.add("fal-ai/veo3.1/fast", fal._body("fal-ai/veo3.1/fast", wanted, None),
                        history.now, history.now + 30)
    since, until = T0, sent + 1

    early = await provider.search(since, until)  # still rendering: not listed yet
    assert job_id not in {r.provider_job_id for r in early.records}
    assert early.complete is False  # never "none": in-flight requests may be omitted

    history.now = sent + provider.settle_seconds
    assert provider.settle_seconds >= MAX_RENDER
    found = await provider.search(since, until)
    assert found.complete is False
    mine = [r for r in found.records if r.echo == provider.echo(wanted)]
    assert {r.provider_job_id for r in mine} == {job_id, f"fal-ai/veo3.1/requests/{other}"}
    record = next(r for r in mine if r.provider_job_id == job_id)
    assert record.created_at == pytest.approx(sent, abs=1)
    assert record.status == "COMPLETED (HTTP 200)"
    # Only the one created inside the window is ours by time (the engine's rule).
    assert [r.provider_job_id for r in mine
            if r.created_at is not None and since <= r.created_at <= until] == [job_id]


async def test_the_list_asks_for_our_models_with_payloads_from_since(
    client_for: ClientFor,
) -> None:
    history = FalHistory()
    provider = make(client_for(history.router))
    await provider.search(T0 - 3600.7, T0)
    (url,) = history.list_calls()
    assert url.params["endpoint_id"].split(",") == list(fal.PARAMS.models)
    assert url.params["start"] == iso(T0 - 3601)  # rounded down: the boundary is kept
    assert url.params["expand"] == "payloads"
    assert url.params["limit"] == "100"
    assert "end" not in url.params  # a render that ends after `until` is still read


@pytest.mark.parametrize("count", [0, 1, 100, 250])
async def test_paging_follows_the_cursor_to_the_last_page(
    client_for: ClientFor, count: int,
) -> None:
    history = FalHistory()
    for n in range(count):
        history.add("fal-ai/veo3.1", {"prompt": f"p{n}"}, T0 - 600 + n, T0 - 300 + n)
    result = await make(client_for(history.router)).search(T0 - 3600, T0)
    assert len(result.records) == count
    assert len({r.provider_job_id for r in result.records}) == count
    assert len(history.list_calls()) == max(1, -(-count // 100))
    assert [c.params.get("cursor") for c in history.list_calls()][1:] == [
        base64.b64encode(str(p).encode()).decode() for p in range(2, -(-count // 100) + 1)]
    assert result.complete is False


async def test_the_page_budget_ends_the_search_incomplete(client_for: ClientFor) -> None:
    history = FalHistory()
    for n in range(fal.SEARCH_PAGES * 100 + 1):
        history.add("fal-ai/veo3.1", {"prompt": f"p{n}"}, T0 - 5000 + n, T0 - 4000 + n)
    result = await make(client_for(history.router)).search(T0 - 9000, T0)
    assert len(history.list_calls()) == fal.SEARCH_PAGES
    assert len(result.records) == fal.SEARCH_PAGES * 100
    assert result.complete is False


@pytest.mark.parametrize("failure", [
    json_response(500, fixture("fal", "error_500")),
    json_response(429, fixture("fal", "error_429")),
    read_timeout,
])
async def test_a_page_that_fails_midway_returns_what_was_read(
    client_for: ClientFor, failure: Any,
) -> None:
    history = FalHistory()
    for n in range(150):
        history.add("fal-ai/veo3.1", {"prompt": f"p{n}"}, T0 - 600 + n, T0 - 300 + n)
    provider = make(client_for(history.router))
    history.router.script("GET", LIST, lambda r: history._list(r, None))
    history.router.script("GET", LIST, failure)
    result = await provider.search(T0 - 3600, T0)
    assert len(result.records) == 100
    assert result.complete is False


@pytest.mark.parametrize(("status", "name", "error_class", "label"), [
    (401, "error_401", ErrorClass.ACCOUNT, ErrorLabel.KEY_REJECTED),
    (429, "error_429", ErrorClass.ACCOUNT, ErrorLabel.RATE_LIMITED),
    (403, "error_403_locked_balance", ErrorClass.ACCOUNT, ErrorLabel.OUT_OF_CREDITS),
    (500, "error_500", ErrorClass.RETRYABLE, ErrorLabel.PROVIDER_ERROR),
])
async def test_a_first_page_error_is_classified_as_fal_errors_are(
    client_for: ClientFor, status: int, name: str, error_class: ErrorClass,
    label: ErrorLabel,
) -> None:
    history = FalHistory()
    history.router.script("GET", LIST, json_response(status, fixture("fal", name)))
    with pytest.raises(ProviderError) as caught:
        await make(client_for(history.router)).search(T0 - 3600, T0)
    assert (caught.value.error_class, caught.value.label) == (error_class, label)


async def test_a_transport_failure_on_the_first_page_is_raised(client_for: ClientFor) -> None:
    history = FalHistory()
    history.router.script("GET", LIST, read_timeout)
    with pytest.raises(ProviderError) as caught:
        await make(client_for(history.router)).search(T0 - 3600, T0)
    assert caught.value.label is ErrorLabel.TIMED_OUT


@pytest.mark.parametrize("answer", [
    httpx2.Response(200, content=b"<html>maintenance</html>",
                   headers={"Content-Type": "text/html"}),
    json_response(200, {"requests": []}),
    json_response(200, {"items": {}, "has_more": False}),
    json_response(200, {"items": [], "has_more": "no"}),
    json_response(200, {"items": [], "has_more": True, "next_cursor": None}),
    json_response(200, {"items": ["x"], "has_more": False, "next_cursor": None}),
    json_response(200, {"items": [{"endpoint_id": "fal-ai/veo3.1"}], "has_more": False}),
    json_response(200, {"items": [{"request_id": "r1"}], "has_more": False}),
])
async def test_an_unreadable_page_is_an_unknown_outcome(
    client_for: ClientFor, answer: httpx2.Response,
) -> None:
    history = FalHistory()
    history.router.script("GET", LIST, answer)
    with pytest.raises(ProviderError) as caught:
        await make(client_for(history.router)).search(T0 - 3600, T0)
    assert caught.value.label is ErrorLabel.SUBMIT_UNKNOWN


async def test_an_unreadable_later_page_is_an_unknown_outcome_too(
    client_for: ClientFor,
) -> None:
    history = FalHistory()
    for n in range(150):
        history.add("fal-ai/veo3.1", {"prompt": f"p{n}"}, T0 - 600 + n, T0 - 300 + n)
    history.router.script("GET", LIST, lambda r: history._list(r, None))
    history.router.script("GET", LIST, json_response(200, {"items": None}))
    with pytest.raises(ProviderError) as caught:
        await make(client_for(history.router)).search(T0 - 3600, T0)
    assert caught.value.label is ErrorLabel.SUBMIT_UNKNOWN


async def test_the_recorded_pages_read_as_records(client_for: ClientFor) -> None:
    history = FalHistory()
    history.router.script("GET", LIST, json_response(200, fixture("fal", "list_page_1")))
    history.router.script("GET", LIST, json_response(200, fixture("fal", "list_page_2")))
    provider = make(client_for(history.router))
    result = await provider.search(parse_iso("2026-11-03T09:00:00Z"), T0)
    assert history.list_calls()[1].params["cursor"] == "Mg=="
    first, no_payload, on_fal_storage, older = result.records
    assert first.provider_job_id == "fal-ai/veo3.1/requests/0b9e3c4a-5d1f-4a8e-9c2b-7e6f5a4d3c21"
    assert first.created_at == parse_iso("2026-11-03T10:01:58Z")
    assert first.status == "COMPLETED (HTTP 200)"
    assert first.echo == provider.echo(request(
        "A lighthouse in a storm, slow dolly in", model="fal-ai/veo3.1/fast", duration=6,
        aspect_ratio="16:9"))
    assert no_payload.echo is None  # payload storage off: never ruled out
    assert on_fal_storage.echo is None  # maybe fal's copy of an inline image
    assert on_fal_storage.status == "COMPLETED (HTTP 422)"
    assert older.echo == provider.echo(request(
        "A lighthouse in a storm, slow dolly in", model="fal-ai/veo3.1", duration=8,
        aspect_ratio="16:9", seed=42, audio=True))
    assert older.echo != first.echo


def test_echo_differs_for_every_parameter_the_create_sets() -> None:
    provider = make(httpx2.AsyncClient())
    base = provider.echo(request(**PARAMS))
    assert base == {"model": "fal-ai/veo3.1/fast", "input": {
        "prompt": "A glass city at dawn", "generate_audio": False, "aspect_ratio": "9:16",
        "duration": "6s", "seed": 11}}
    # A spreadsheet's 6.0 or "6" is the same create.
    assert provider.echo(request(**{**PARAMS, "duration": "6.0", "seed": 11.0})) == base
    variants = [
        request("A glass city at dusk", **PARAMS),
        request(**{**PARAMS, "model": "fal-ai/veo3.1"}),
        request(**{**PARAMS, "duration": 8}),
        request(**{**PARAMS, "aspect_ratio": "16:9"}),
        request(**{**PARAMS, "seed": 12}),
        request(**{**PARAMS, "resolution": "1080p"}),
        request(**{**PARAMS, "negative_prompt": "blur"}),
        request(**{**PARAMS, "audio": True}),
        request(**{key: value for key, value in PARAMS.items() if key != "seed"}),
    ]
    echoes = [provider.echo(v) for v in variants]
    assert all(e != base for e in echoes)
    assert len({json.dumps(e, sort_keys=True) for e in echoes}) == len(echoes)


async def test_images_are_compared_by_url_or_by_their_bytes(
    client_for: ClientFor, tmp_path: Path,
) -> None:
    history = FalHistory()
    provider = make(client_for(history.router))
    picture = tmp_path / "first.png"
    picture.write_bytes(PNG)
    model = "fal-ai/veo3.1/image-to-video"
    rows = [
        request(model=model, image="https://img.example.test/a.png"),
        request(model=model, image=f"data:image/png;base64,{base64.b64encode(PNG).decode()}"),
        request(model=model, image=str(picture)),
        request(model=model, image=str(picture),
                image_sha256=hashlib.sha256(PNG).hexdigest()),
    ]
    jobs = []
    for row in rows:
        jobs.append(await provider.submit(row))
        history.now += 1
    history.now += provider.settle_seconds
    result = await provider.search(T0, history.now)
    by_id = {r.provider_job_id: r for r in result.records}
    for row, job in zip(rows, jobs, strict=True):
        assert by_id[job].echo == provider.echo(row)
    # The same bytes, however given, are the same image; another image is not.
    assert provider.echo(rows[1]) == provider.echo(rows[2]) == provider.echo(rows[3])
    assert provider.echo(rows[0]) != provider.echo(rows[1])
    other = request(model=model, image="data:image/png;base64,"
                    + base64.b64encode(PNG + b"x").decode())
    assert provider.echo(other) != provider.echo(rows[1])


async def test_a_history_that_answers_404_turns_search_off(client_for: ClientFor) -> None:
    history = FalHistory()
    history.router.script("GET", LIST, json_response(404, {"detail": "Not Found"}))
    provider = make(client_for(history.router))
    assert reconcile_method(provider) is ReconcileMethod.SEARCH
    with pytest.raises(ProviderError) as caught:
        await provider.search(T0 - 3600, T0)
    assert caught.value.label is ErrorLabel.SUBMIT_UNKNOWN
    assert provider.supports_search is False
    assert reconcile_method(provider) is ReconcileMethod.NONE


async def test_a_gateway_account_never_sends_its_key_to_fal(client_for: ClientFor) -> None:
    history = FalHistory()
    provider = make(client_for(history.router), base_url="https://fal-gateway.example.test")
    assert provider.supports_search is False
    assert reconcile_method(provider) is ReconcileMethod.NONE
    with pytest.raises(ProviderError) as caught:
        await provider.search(T0 - 3600, T0)
    assert caught.value.label is ErrorLabel.SUBMIT_UNKNOWN
    assert history.router.calls == []


def test_fal_is_searched_and_keeps_no_client_token() -> None:
    provider = make(httpx2.AsyncClient())
    assert isinstance(provider, SearchableProvider)
    assert reconcile_method(provider) is ReconcileMethod.SEARCH
    assert sends_client_token(provider) is False
    assert provider.echo_keeps_hours == 30 * 24


async def test_the_key_is_never_in_a_url_or_an_error_text(
    client_for: ClientFor, caplog: pytest.LogCaptureFixture,
) -> None:
    history = FalHistory()
    for n in range(120):
        history.add("fal-ai/veo3.1", {"prompt": f"p{n}"}, T0 - 600 + n, T0 - 300 + n)
    provider = make(client_for(history.router))
    await provider.submit(request(**PARAMS))
    await provider.search(T0 - 3600, T0)
    errors: list[ProviderError] = []
    for answer in (lambda r: echo_error(401, r), lambda r: echo_error(500, r),
                   lambda r: echo_error(200, r)):
        history.router.script("GET", LIST, answer)
        with pytest.raises(ProviderError) as caught:
            await provider.search(T0 - 3600, T0)
        errors.append(caught.value)
    for call in history.router.calls:
        assert SENTINEL_KEY not in str(call.url)
        assert call.url.host in (QUEUE, PLATFORM)  # the key goes to fal's own hosts only
    for error in errors:
        assert SENTINEL_KEY not in all_texts(error)
    assert SENTINEL_KEY not in caplog.text
