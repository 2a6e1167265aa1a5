"""Replicate reconciliation (issue 19): the account's predictions searched by their echo.

The fake account is built from the documented list (replicate-python-beta
``resources/predictions.py`` ``list`` and ``pagination.py``; tests/fixtures/replicate/SOURCE.md
"Reconciliation"): ``GET /v1/predictions`` answers ``{next, previous, results}``, 100
predictions a page, newest first, ``next`` a full cursor URL keeping the filters;
``created_after`` is "at or after", ``created_before`` is "before". Each prediction echoes
``model`` and its ``input`` as sent; an API prediction's input is removed an hour after
it was created (``input: {}``, ``data_removed: true``). A prediction created through the
API shows in the list only after a random delay (at most the adapter's settle time); other
clients of the same key create predictions, some with the same prompt, at other times.
Time is the fake's own clock (``now``): nothing sleeps.
"""

from __future__ import annotations

import base64
import json
import logging
import random
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any
from urllib.parse import parse_qs, urlencode

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
from reelqueue.providers.adapters import replicate
from reelqueue.providers.base import (
    ProviderConfig,
    ReconcileMethod,
    RemoteRecord,
    RenderRequest,
    SearchableProvider,
    SearchResult,
    reconcile_method,
    sends_client_token,
)

API = "api.replicate.com"
LIST = rf"{API}/v1/predictions"
CREATE = rf"{API}/v1/models/(?P<model>[\w.-]+/[\w.-]+)/predictions"
T0 = datetime(2026, 10, 2, 12, 0, tzinfo=UTC).timestamp()
IMAGE_URL = "https://img.example.test/a.png"
PNG_DATA_URI = "data:image/png;base64," + base64.b64encode(b"\x89PNG\r\n\x1a\n").decode()
ClientFor = Callable[[Router], httpx2.AsyncClient]


def iso(seconds: float) -> str:
    return datetime.fromtimestamp(seconds, UTC).isoformat(timespec="microseconds") \
        .replace("+00:00", "Z")


def parse_iso(text: str) -> float:
    return datetime.fromisoformat(text).timestamp()


@dataclass
class Stored:
    id: str
    model: str
    input: dict[str, Any]
    created_at: float
    visible_at: float
    source: str = "api"


class FakeAccount:
    """One Replicate account: creates, and the list of its predictions, on a fake clock."""

    def __init__(self, *, seed: int = 7, settle: float = replicate.SETTLE_SECONDS,
                 honour_filters: bool = True) -> None:
        self.router = Router()
        self.now = T0
        self.rng = random.Random(seed)
        self.settle = settle
        self.honour_filters = honour_filters
        self.predictions: list[Stored] = []
        self.next_host = API  # where the ``next`` links point
        self.fail_list_call: dict[int, Any] = {}  # list call number (1-based) -> answer
        self.list_calls = 0
        self.router.add("POST", CREATE, self._create)
        self.router.add("GET", LIST, self._list)

    # -- what the account holds -----------------------------------------------------------

    def add(self, prompt: str, created_at: float, *, model: str = "google/veo-3.1",
            source: str = "api", **fields: Any) -> Stored:
        """A prediction made by another client of the key (already listed)."""
        stored = Stored(self._new_id(), model, {"prompt": prompt, **fields}, created_at,
                        created_at, source)
        self.predictions.append(stored)
        return stored

    def _new_id(self) -> str:
        return "".join(self.rng.choice("abcdefghijklmnopqrstuvwxyz0123456789")
                       for _ in range(26))

    def _create(self, request: httpx2.Request, match: Any) -> httpx2.Response:
        body = json.loads(request.content)
        delay = self.rng.uniform(1.0, self.settle)  # never listed at once
        stored = Stored(self._new_id(), match.group("model"), body["input"], self.now,
                        self.now + delay)
        self.predictions.append(stored)
        return json_response(201, self._shape(stored))

    # -- the documented answers -----------------------------------------------------------

    def _shape(self, stored: Stored) -> dict[str, Any]:
        removed = stored.source == "api" and self.now - stored.created_at > 3600
        return {
            "id": stored.id, "model": stored.model, "version": "hidden",
            "input": {} if removed else dict(stored.input), "logs": "", "output": None,
            "data_removed": removed, "error": None, "status": "starting",
            "source": stored.source, "created_at": iso(stored.created_at),
            "started_at": None, "completed_at": None, "metrics": {},
            "urls": {"get": f"https://{API}/v1/predictions/{stored.id}",
                     "cancel": f"https://{API}/v1/predictions/{stored.id}/cancel",
                     "web": f"https://replicate.com/p/{stored.id}"},
        }

    def _list(self, request: httpx2.Request, match: Any) -> httpx2.Response:
        self.list_calls += 1
        scripted = self.fail_list_call.get(self.list_calls)
        if scripted is not None:
            return scripted(request) if callable(scripted) else scripted
        query = parse_qs(request.url.query.decode())
        listed = [p for p in self.predictions if p.visible_at <= self.now]
        if self.honour_filters:
            if "created_after" in query:
                after = parse_iso(query["created_after"][0])
                listed = [p for p in listed if p.created_at >= after]
            if "created_before" in query:
                before = parse_iso(query["created_before"][0])
                listed = [p for p in listed if p.created_at < before]
        listed.sort(key=lambda p: p.created_at, reverse=True)  # most recent first
        offset = int(base64.b64decode(query["cursor"][0])) if "cursor" in query else 0
        page = listed[offset:offset + replicate.LIST_PAGE_SIZE]
        following = offset + replicate.LIST_PAGE_SIZE
        filters = {k: v[0] for k, v in query.items() if k != "cursor"}

        def link(position: int) -> str:
            cursor = base64.b64encode(str(position).encode()).decode()
            return f"https://{self.next_host}/v1/predictions?" + urlencode(
                {**filters, "cursor": cursor})

        return json_response(200, {
            "next": link(following) if following < len(listed) else None,
            "previous": link(max(0, offset - replicate.LIST_PAGE_SIZE)) if offset else None,
            "results": [self._shape(p) for p in page],
        })


def make(client: httpx2.AsyncClient, base_url: str | None = None
         ) -> replicate.ReplicateProvider:
    return replicate.create(client, ProviderConfig("rep", base_url, SENTINEL_KEY))


def request(prompt: str = "A lantern festival", **params: Any) -> RenderRequest:
    return RenderRequest(job_key="row-1", client_token="tok-1", prompt=prompt, params=params)


def by_id(records: tuple[RemoteRecord, ...]) -> dict[str, RemoteRecord]:
    return {record.provider_job_id: record for record in records}


FULL = {"model": "google/veo-3.1", "duration": 8.0, "seed": 3, "aspect_ratio": "16:9",
        "resolution": "1080p", "negative_prompt": "blur", "image": IMAGE_URL}


# -- the interface ----------------------------------------------------------------------


def test_replicate_reconciles_by_search(client_for: ClientFor) -> None:
    provider = make(client_for(Router()))
    assert isinstance(provider, SearchableProvider)
    assert reconcile_method(provider) is ReconcileMethod.SEARCH
    assert sends_client_token(provider) is False
    assert provider.settle_seconds == 120.0
    assert provider.echo_keeps_hours == 1.0


# -- found once listed, with the echo of the request ------------------------------------


@pytest.mark.parametrize("params", [{}, FULL, {**FULL, "image": PNG_DATA_URI},
                                    {"model": "google/veo-3.1-fast", "duration": "6"}])
@pytest.mark.parametrize("seed", [1, 2, 3])
async def test_a_submitted_render_is_found_once_listed_with_the_echo_of_its_request(
    client_for: ClientFor, params: dict[str, Any], seed: int
) -> None:
    fake = FakeAccount(seed=seed)
    # Another client of the key, same prompt and parameters, at other times.
    fake.add("A lantern festival", T0 - 900, **{"duration": 8})
    fake.add("A lantern festival", T0 + 3000, **{"duration": 8})
    provider = make(client_for(fake.router))
    req = request(**params)
    intent = fake.now
    job_id = await provider.submit(req)
    fake.now += 0.5  # the crash: nothing was read; the list does not show it yet
    early = await provider.search(intent - 60, fake.now)
    assert job_id not in by_id(early.records)  # why the engine waits settle_seconds
    fake.now = intent + provider.settle_seconds
    found = await provider.search(intent - 60, fake.now)
    assert found.complete is True
    assert list(by_id(found.records)) == [job_id]  # the other client's are outside
    record = by_id(found.records)[job_id]
    assert record.echo == provider.echo(req)
    assert record.status == "starting"
    assert record.created_at == pytest.approx(intent, abs=1e-3)


async def test_echo_is_the_sent_input_normalised(client_for: ClientFor) -> None:
    fake = FakeAccount()
    provider = make(client_for(fake.router))
    req = request(**FULL)
    await provider.submit(req)
    sent = json.loads(fake.router.calls[0].body)["input"]
    assert provider.echo(req) == {"model": "google/veo-3.1", **sent} == {
        "model": "google/veo-3.1", "prompt": "A lantern festival", "duration": 8,
        "seed": 3, "aspect_ratio": "16:9", "resolution": "1080p",
        "negative_prompt": "blur", "image": IMAGE_URL}
    assert provider.echo(request(image=PNG_DATA_URI))["image"] == "inline"
    assert "image" not in provider.echo(request())


@pytest.mark.parametrize("change", [
    {"prompt": "A lantern festival at dusk"}, {"model": "google/veo-3.1-fast"},
    {"duration": 6}, {"seed": 4}, {"seed": None}, {"aspect_ratio": "9:16"},
    {"resolution": "720p"}, {"negative_prompt": None}, {"negative_prompt": "rain"},
    {"image": "https://img.example.test/b.png"}, {"image": PNG_DATA_URI}, {"image": None},
])
async def test_a_different_prompt_or_parameter_gives_a_different_echo(
    client_for: ClientFor, change: dict[str, Any]
) -> None:
    fake = FakeAccount()
    provider = make(client_for(fake.router))
    params = {**FULL, **change}
    prompt = params.pop("prompt", "A lantern festival")
    params = {name: value for name, value in params.items() if value is not None}
    other = request(prompt, **params)
    await provider.submit(other)
    fake.now += provider.settle_seconds
    listed = (await provider.search(T0 - 60, fake.now)).records
    assert len(listed) == 1
    assert listed[0].echo == provider.echo(other)
    assert listed[0].echo != provider.echo(request(**FULL))


async def test_extra_fields_echoed_by_another_client_do_not_rule_a_record_out(
    client_for: ClientFor,
) -> None:
    fake = FakeAccount()
    fake.add("A lantern festival", T0 + 10, duration=8.0, generate_audio=False)
    provider = make(client_for(fake.router))
    fake.now = T0 + 200
    [record] = (await provider.search(T0, T0 + 200)).records
    assert record.echo == provider.echo(request(duration=8))


# -- removed inputs -----------------------------------------------------------------------


async def test_inputs_removed_after_an_hour_give_no_echo(client_for: ClientFor) -> None:
    fake = FakeAccount()
    web = fake.add("A lantern festival", T0 - 100, source="web", duration=8)
    provider = make(client_for(fake.router))
    job_id = await provider.submit(request(duration=8))
    fake.now = T0 + 3601
    records = by_id((await provider.search(T0 - 200, T0 + 5)).records)
    assert records[job_id].echo is None  # never ruled out
    assert records[web.id].echo == provider.echo(request(duration=8))  # web: kept


@pytest.mark.parametrize("change", [
    {"input": {}}, {"input": None}, {"data_removed": True}, {"model": None},
    {"input": {"prompt": "A lantern festival", "duration": "eight"}},
    {"input": {"prompt": "A lantern festival", "duration": True}},
    {"input": {"prompt": ["A lantern festival"]}},
    {"input": {"prompt": "A lantern festival", "image": {"url": IMAGE_URL}}},
])
async def test_a_record_that_cannot_be_compared_has_no_echo(
    client_for: ClientFor, change: dict[str, Any]
) -> None:
    page = fixture("replicate", "list_page_2")
    page["results"][0].update(change)
    router = Router()
    router.add("GET", LIST, lambda r, m: json_response(200, page))
    [record] = (await make(client_for(router)).search(T0 - 3600, T0)).records
    assert record.echo is None
    assert record.provider_job_id == "0n8vd5ht6srmc0cjz8rs2a1e4w"


async def test_recorded_pages_are_read_as_documented(client_for: ClientFor) -> None:
    router = Router()
    router.add("GET", LIST, lambda r, m: json_response(
        200, fixture("replicate", "list_page_2" if "cursor" in str(r.url) else "list_page_1")))
    provider = make(client_for(router))
    result = await provider.search(T0 - 3600, T0 + 60)
    assert result.complete is True
    assert [(r.provider_job_id, r.status) for r in result.records] == [
        ("ufawqhfynnddngldkgtslldrkq", "processing"),
        ("gm3qorzdhgbfurvjtvhg6dckhu", "succeeded"),
        ("rk7bxq3v1hrma0cjz8stgmb5x8", "succeeded"),
        ("0n8vd5ht6srmc0cjz8rs2a1e4w", "failed")]
    ours, web, removed, older = result.records
    assert ours.echo == provider.echo(request(model="google/veo-3.1", duration=8, seed=3,
                                              image=IMAGE_URL))
    assert ours.created_at == T0
    assert web.echo == {"model": "replicate/hello-world"}  # no prompt: not one of ours
    assert removed.echo is None
    assert older.echo == provider.echo(request(duration=8, aspect_ratio="9:16"))
    second = router.calls[1].url
    assert (second.host, second.path) == (API, "/v1/predictions")
    assert "cursor" in second.params and "created_after" in second.params


async def test_an_empty_list_is_complete(client_for: ClientFor) -> None:
    router = Router()
    router.add("GET", LIST, lambda r, m: json_response(
        200, fixture("replicate", "list_page_empty")))
    result = await make(client_for(router)).search(T0 - 60, T0)
    assert result == SearchResult((), True)


# -- the window and paging ----------------------------------------------------------------


async def test_the_window_is_bounded_server_side(client_for: ClientFor) -> None:
    fake = FakeAccount()
    provider = make(client_for(fake.router))
    await provider.search(T0 - 90.5, T0 + 30.25)
    sent = fake.router.calls[0].url
    assert sent.path == "/v1/predictions"
    assert sent.params["created_after"] == "2026-10-02T11:58:29Z"  # at or after: floor
    assert sent.params["created_before"] == "2026-10-02T12:00:31Z"  # before: past until


async def test_pages_of_100_newest_first_until_the_end_of_the_window(
    client_for: ClientFor,
) -> None:
    fake = FakeAccount()
    for index in range(250):
        fake.add(f"prompt {index}", T0 - 1000 + index * 2)  # T0-1000 .. T0-502
    for index in range(40):
        fake.add(f"before {index}", T0 - 5000 + index)
    provider = make(client_for(fake.router))
    result = await provider.search(T0 - 1000, T0)
    assert result.complete is True
    assert fake.list_calls == 3  # 100 + 100 + 50
    times = [r.created_at for r in result.records]
    assert len(times) == 250 and times == sorted(times, reverse=True)


async def test_paging_stops_past_since_when_a_gateway_ignores_the_filters(
    client_for: ClientFor,
) -> None:
    fake = FakeAccount(honour_filters=False)
    for index in range(1000):
        fake.add(f"prompt {index}", T0 - 10_000 + index * 10)  # one every 10 s
    provider = make(client_for(fake.router))
    result = await provider.search(T0 - 1_505, T0)  # the newest 150 are in the window
    assert result.complete is True
    assert fake.list_calls == 2  # stopped at the first prediction created before since
    assert len(result.records) == 150
    assert min(r.created_at or 0 for r in result.records) >= T0 - 1_505


async def test_the_page_budget_leaves_the_search_incomplete(client_for: ClientFor) -> None:
    fake = FakeAccount()
    for index in range(replicate.SEARCH_PAGE_BUDGET * replicate.LIST_PAGE_SIZE + 1):
        fake.add(f"prompt {index}", T0 - 3000 + index * 0.1)
    provider = make(client_for(fake.router))
    result = await provider.search(T0 - 3000, T0)
    assert result.complete is False
    assert fake.list_calls == replicate.SEARCH_PAGE_BUDGET
    assert len(result.records) == replicate.SEARCH_PAGE_BUDGET * replicate.LIST_PAGE_SIZE


async def test_a_list_out_of_the_documented_order_is_incomplete(
    client_for: ClientFor,
) -> None:
    page = fixture("replicate", "list_page_1")
    page["next"] = None
    page["results"].reverse()  # oldest first: stopping "past since" proves nothing
    router = Router()
    router.add("GET", LIST, lambda r, m: json_response(200, page))
    result = await make(client_for(router)).search(T0 - 3600, T0 + 60)
    assert result.complete is False


@pytest.mark.parametrize("failure", [
    json_response(500, fixture("replicate", "error_500")),
    json_response(429, fixture("replicate", "error_429")),
    json_response(404, fixture("replicate", "error_404")),
    read_timeout,
])
async def test_an_error_mid_way_keeps_what_was_read_and_is_incomplete(
    client_for: ClientFor, failure: Any
) -> None:
    fake = FakeAccount()
    for index in range(150):
        fake.add(f"prompt {index}", T0 - 1000 + index)
    fake.fail_list_call[2] = failure
    provider = make(client_for(fake.router))
    result = await provider.search(T0 - 1000, T0)
    assert result.complete is False
    assert len(result.records) == 100
    assert provider.supports_search is True


@pytest.mark.parametrize(("status", "name", "error_class", "label"), [
    (401, "error_401", ErrorClass.ACCOUNT, ErrorLabel.KEY_REJECTED),
    (429, "error_429", ErrorClass.ACCOUNT, ErrorLabel.RATE_LIMITED),
    (500, "error_500", ErrorClass.RETRYABLE, ErrorLabel.PROVIDER_ERROR),
])
async def test_an_error_on_the_first_page_is_classified_as_for_other_calls(
    client_for: ClientFor, status: int, name: str, error_class: ErrorClass,
    label: ErrorLabel,
) -> None:
    router = Router()
    router.script("GET", LIST, json_response(status, fixture("replicate", name)))
    with pytest.raises(ProviderError) as caught:
        await make(client_for(router)).search(T0 - 60, T0)
    assert (caught.value.error_class, caught.value.label) == (error_class, label)


async def test_a_transport_failure_on_the_first_page_is_raised(client_for: ClientFor) -> None:
    router = Router()
    router.script("GET", LIST, read_timeout)
    with pytest.raises(ProviderError) as caught:
        await make(client_for(router)).search(T0 - 60, T0)
    assert caught.value.label is ErrorLabel.TIMED_OUT


@pytest.mark.parametrize("status", [404, 405])
async def test_a_base_url_without_the_list_turns_search_off(
    client_for: ClientFor, status: int
) -> None:
    router = Router()
    router.add("GET", r"gateway\.example\.test/v1/predictions",
               lambda r, m: json_response(status, {"detail": "Not found."}))
    provider = make(client_for(router), "https://gateway.example.test/v1")
    assert reconcile_method(provider) is ReconcileMethod.SEARCH
    with pytest.raises(ProviderError) as caught:
        await provider.search(T0 - 60, T0)
    assert caught.value.label is ErrorLabel.SUBMIT_UNKNOWN
    assert provider.supports_search is False
    assert reconcile_method(provider) is ReconcileMethod.NONE


# -- answers that cannot be read ----------------------------------------------------------


UNREADABLE: list[Any] = [
    httpx2.Response(200, content=b"<html>ok</html>"),
    httpx2.Response(200, content=b'{"results": [{"id": "ufaw'),
    json_response(200, []),
    json_response(200, {"next": None}),
    json_response(200, {"results": "none", "next": None}),
    json_response(200, {"results": [], "next": 2}),
    json_response(200, {"results": [], "next": ""}),
    json_response(200, {"results": [{"status": "starting"}], "next": None}),
    json_response(200, {"results": [{"id": ""}], "next": None}),
    json_response(200, {"results": ["ufawqhfynnddngldkgtslldrkq"], "next": None}),
    json_response(200, {"data": [], "has_more": False}),
]


@pytest.mark.parametrize("answer", UNREADABLE)
@pytest.mark.parametrize("page", [1, 2])
async def test_an_unreadable_page_is_an_unknown_outcome(
    client_for: ClientFor, answer: httpx2.Response, page: int
) -> None:
    fake = FakeAccount()
    for index in range(150):
        fake.add(f"prompt {index}", T0 - 1000 + index)
    fake.fail_list_call[page] = answer
    with pytest.raises(ProviderError) as caught:
        await make(client_for(fake.router)).search(T0 - 1000, T0)
    assert (caught.value.error_class, caught.value.label) == (
        ErrorClass.PERMANENT, ErrorLabel.SUBMIT_UNKNOWN)


async def test_a_next_link_to_another_host_is_never_followed(client_for: ClientFor) -> None:
    fake = FakeAccount()
    for index in range(150):
        fake.add(f"prompt {index}", T0 - 1000 + index)
    fake.next_host = "collector.example.test"
    with pytest.raises(ProviderError) as caught:
        await make(client_for(fake.router)).search(T0 - 1000, T0)
    assert caught.value.label is ErrorLabel.SUBMIT_UNKNOWN
    assert "collector.example.test" in str(caught.value)
    assert {call.url.host for call in fake.router.calls} == {API}


# -- the key ------------------------------------------------------------------------------


@pytest.mark.parametrize("status", [400, 401, 404, 429, 500])
@pytest.mark.parametrize("page", [1, 2])
async def test_the_key_never_appears_in_urls_or_errors(
    client_for: ClientFor, caplog: pytest.LogCaptureFixture, status: int, page: int
) -> None:
    caplog.set_level(logging.DEBUG)
    fake = FakeAccount()
    for index in range(150):
        fake.add(f"prompt {index}", T0 - 1000 + index)
    fake.fail_list_call[page] = lambda r: echo_error(status, r)
    provider = make(client_for(fake.router))
    try:
        result = await provider.search(T0 - 1000, T0)
    except ProviderError as error:
        assert page == 1
        assert SENTINEL_KEY not in all_texts(error)
    else:
        assert page == 2 and result.complete is False
    for call in fake.router.calls:
        assert SENTINEL_KEY not in str(call.url)
        assert call.headers["authorization"] == f"Bearer {SENTINEL_KEY}"
    assert SENTINEL_KEY not in caplog.text


async def test_an_unreadable_page_echoing_the_key_does_not_show_it(
    client_for: ClientFor,
) -> None:
    router = Router()
    router.script("GET", LIST, json_response(200, {"detail": f"token {SENTINEL_KEY}"}))
    with pytest.raises(ProviderError) as caught:
        await make(client_for(router)).search(T0 - 60, T0)
    assert caught.value.label is ErrorLabel.SUBMIT_UNKNOWN
    assert SENTINEL_KEY not in all_texts(caught.value)


def test_echo_needs_no_network(client_for: ClientFor) -> None:
    router = Router()
    provider = make(client_for(router))
    echoed: Mapping[str, Any] = provider.echo(request(**FULL))
    assert echoed["duration"] == 8 and router.calls == []
