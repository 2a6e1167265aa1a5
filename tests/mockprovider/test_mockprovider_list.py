"""The mock provider's list of an account's renders (the reconciliation by search), its
seeded visibility delay, other clients' renders, and the held-back create answer.

Time is injected (``MockProviderServer(clock=...)``): no test sleeps more than a few
tenths of a second.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import random
import threading
import time
from pathlib import Path
from typing import Any

import httpx2
import pytest
from mockprovider_helpers import FAST

from reelqueue.mockprovider import ForeignRender, MockOptions, MockProviderServer
from reelqueue.mockprovider.cli import add_arguments, options_from_args
from reelqueue.mockprovider.state import MockState

pytestmark = pytest.mark.integration

KEY = "sk-SENTINEL-list-4b3c2d1e"
T0 = 1_900_000_000.0


class Clock:
    """A wall clock the test moves by hand."""

    def __init__(self, now: float = T0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def _server(clock: Clock, **changes: Any) -> MockProviderServer:
    return MockProviderServer(dataclasses.replace(FAST, **changes), clock=clock)


def _create(client: httpx2.Client, url: str, prompt: str = "a fox", token: str = "t1",
            params: dict[str, Any] | None = None, key: str | None = None) -> httpx2.Response:
    body = {"prompt": prompt, "client_token": token, "job_key": f"job-{token}",
            "params": params if params is not None else {"model": "mock-1", "duration": 4}}
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    return client.post(f"{url}/v1/renders", json=body, headers=headers)


def _page(client: httpx2.Client, url: str, key: str | None = None,
          **query: Any) -> httpx2.Response:
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    return client.get(f"{url}/v1/renders", params=query, headers=headers)


def _all(client: httpx2.Client, url: str, key: str | None = None,
         **query: Any) -> list[dict[str, Any]]:
    records: list[dict[str, Any]] = []
    cursor: str | None = None
    for _ in range(50):
        extra = {"before": cursor} if cursor else {}
        answer = _page(client, url, key, **query, **extra).json()
        records += answer["data"]
        if not answer["has_more"]:
            assert answer["next_cursor"] is None
            return records
        cursor = answer["next_cursor"]
    raise AssertionError("the list never ended")


def test_pages_newest_first_with_a_cursor() -> None:
    clock = Clock()
    with _server(clock) as server, httpx2.Client(timeout=3) as client:
        ids = []
        for i in range(45):
            clock.now = T0 + i
            ids.append(_create(client, server.url, token=f"t{i}").json()["id"])
        first = _page(client, server.url).json()
        assert len(first["data"]) == 20 and first["has_more"] is True
        assert first["next_cursor"] == first["data"][-1]["id"]
        records = _all(client, server.url)
        assert [r["id"] for r in records] == ids[::-1]
        times = [r["created_at"] for r in records]
        assert times == sorted(times, reverse=True) and times[0] == T0 + 44
        assert all(isinstance(t, float) for t in times)
        small = _page(client, server.url, limit=7).json()
        assert [r["id"] for r in small["data"]] == ids[:-8:-1] and small["has_more"]
        since = _all(client, server.url, created_after=T0 + 40)
        assert [r["id"] for r in since] == ids[:39:-1]  # created at or after T0+40
        assert _all(client, server.url, created_after=T0 + 100) == []
        assert server.counters()["lists_total"] >= 6


def test_records_echo_the_create_and_hide_the_token_without_lookup() -> None:
    clock = Clock()
    params = {"model": "mock-2", "duration": 6, "aspect_ratio": "9:16", "seed": 42,
              "image": "sha256:ab12"}
    for lookup in (True, False):
        with _server(clock, lookup_enabled=lookup) as server, \
                httpx2.Client(timeout=3) as client:
            created = _create(client, server.url, "a red fox", "tok-secret", params, KEY)
            (record,) = _page(client, server.url, KEY).json()["data"]
            expected = {"id": created.json()["id"], "created_at": T0, "status": "queued",
                        "prompt": "a red fox", "params": params}
            if lookup:
                expected["client_token"] = "tok-secret"
            assert record == expected
            text = _page(client, server.url, KEY).text
            assert ("tok-secret" in text) is lookup and "job-tok" not in text
            assert KEY not in text


def test_a_new_render_is_listed_only_after_its_seeded_delay() -> None:
    clock = Clock()
    options = {"list_delay_min": 5.0, "list_delay_max": 10.0, "seed": 11}
    with _server(clock, **options) as server, httpx2.Client(timeout=3) as client:
        render_id = _create(client, server.url).json()["id"]
        state = server._running().state
        render = state.get(render_id)
        assert render is not None
        delay = render.visible_at - render.created_at
        assert 5.0 <= delay <= 10.0
        for ahead in (0.0, 4.99, delay - 0.01):
            clock.now = T0 + ahead
            assert _page(client, server.url).json()["data"] == []
        # The render exists the whole time: a poll by id finds it.
        assert client.get(f"{server.url}/v1/renders/{render_id}").status_code == 200
        clock.now = T0 + delay
        assert [r["id"] for r in _page(client, server.url).json()["data"]] == [render_id]
    # The same seed draws the same delays; another seed others.
    video = b""
    opts = dataclasses.replace(FAST, **options)

    def delays(seed: int) -> list[float]:
        state = MockState(dataclasses.replace(opts, seed=seed), video, Clock())
        made = [state.create_render(job_key="k", client_token=f"t{i}", prompt="p", params={},
                                    directives={}) for i in range(5)]
        return [r.visible_at - r.created_at for r in made]

    assert delays(11) == delays(11) != delays(12)
    assert all(5.0 <= d <= 10.0 for d in delays(3))


def test_no_list_delay_draws_nothing() -> None:
    """With the default delay of 0 the seeded render times are what they always were."""
    state = MockState(FAST, b"", Clock())
    made = [state.create_render(job_key="k", client_token=f"t{i}", prompt="p", params={},
                                directives={}) for i in range(3)]
    rng = random.Random(FAST.seed)
    expected = [rng.uniform(FAST.render_seconds_min, FAST.render_seconds_max)
                for _ in range(3)]
    assert [r.duration for r in made] == expected
    assert all(r.visible_at == r.created_at == T0 for r in made)


def test_lists_are_per_key_and_foreign_renders_show() -> None:
    clock = Clock()
    planted = (ForeignRender("a fox", {"model": "mock-1", "duration": 4}, ago=30),
               ForeignRender("later", {}, created_at=T0 + 50))
    with _server(clock, foreign_renders=planted) as server, \
            httpx2.Client(timeout=3) as client:
        mine = _create(client, server.url, key=KEY).json()["id"]
        theirs = _create(client, server.url, token="t2", key="other-key").json()["id"]
        listed = _page(client, server.url, KEY).json()["data"]
        assert listed[0]["id"] == mine and theirs not in str(listed)
        old = listed[1]
        assert (old["prompt"], old["created_at"]) == ("a fox", T0 - 30)
        assert old["params"] == {"model": "mock-1", "duration": 4}
        assert len(listed) == 2  # the one planted at T0+50 is not created yet
        clock.now = T0 + 50
        assert _page(client, server.url, KEY).json()["data"][0]["prompt"] == "later"
        # Another client on the same key, through the test hook.
        hook = client.post(f"{server.url}/_mock/foreign",
                           json={"prompt": "a fox", "params": {"duration": 4}, "ago": 5},
                           headers={"Authorization": f"Bearer {KEY}"}).json()
        assert hook["created_at"] == T0 + 45
        assert hook["id"] in _page(client, server.url, KEY).text
        assert hook["id"] not in _page(client, server.url, "other-key").text
        direct = server.plant_foreign("a fox", {"duration": 4}, created_at=T0 + 1, key=KEY)
        assert direct in _page(client, server.url, KEY).text
        # Foreign renders are no creates of ours.
        counters = server.counters()
        assert counters["renders_total"] == 2 and counters["creates_total"] == 2
        assert KEY not in str(counters)
        bad = client.post(f"{server.url}/_mock/foreign", json={"params": {}})
        assert bad.status_code == 400


def test_the_foreign_twin_directive() -> None:
    clock = Clock()
    with _server(clock) as server, httpx2.Client(timeout=3) as client:
        prompt = "twin [[mock:foreign_twin=8*1]]"
        params = {"model": "mock-2", "duration": 5}
        ours = _create(client, server.url, prompt, "t1", params, KEY).json()["id"]
        first, second = _page(client, server.url, KEY).json()["data"]
        assert first["id"] == ours and first["created_at"] == T0
        assert (second["prompt"], second["params"], second["created_at"]) == (
            prompt, params, T0 - 8)
        assert second["status"] in ("queued", "running", "succeeded")
        _create(client, server.url, prompt, "t1", params, KEY)  # *1: no second twin
        assert len(_page(client, server.url, KEY).json()["data"]) == 3


def test_the_list_can_be_switched_off_and_lookup_stays() -> None:
    clock = Clock()
    with _server(clock, list_enabled=False) as server, httpx2.Client(timeout=3) as client:
        _create(client, server.url, token="look-1")
        refused = _page(client, server.url)
        assert refused.status_code == 404
        assert refused.json()["error"]["code"] == "list_disabled"
        found = _page(client, server.url, client_token="look-1").json()["data"]
        assert len(found) == 1
    with _server(clock, lookup_enabled=False) as server, httpx2.Client(timeout=3) as client:
        _create(client, server.url, token="look-2")
        assert _page(client, server.url, client_token="look-2").status_code == 404
        assert len(_page(client, server.url).json()["data"]) == 1


def test_bad_list_queries() -> None:
    with _server(Clock(), accept_keys=frozenset({KEY})) as server, \
            httpx2.Client(timeout=3) as client:
        for query in ({"limit": 0}, {"limit": 101}, {"limit": "x"}, {"created_after": "x"}):
            answer = _page(client, server.url, KEY, **query)
            assert answer.status_code == 400, query
        unknown = _page(client, server.url, KEY, before="mr_nothing")
        assert unknown.json()["error"]["code"] == "invalid_cursor"
        assert _page(client, server.url, "wrong").status_code == 401
        # A blank client_token is a refused lookup, never a list.
        assert _page(client, server.url, KEY, client_token="").status_code == 400
        assert _page(client, server.url, KEY, limit=100).json()["data"] == []


# -- the create's answer held back while the render exists ------------------------------

def _render_count(server: MockProviderServer) -> int:
    return int(server.counters()["renders_total"])


def test_hold_answer_sends_it_late_and_the_render_exists_meanwhile() -> None:
    with MockProviderServer(FAST) as server, httpx2.Client(timeout=3) as client:
        seen: list[int] = []
        listed: list[int] = []

        def watch() -> None:
            time.sleep(0.15)
            seen.append(_render_count(server))
            with httpx2.Client(timeout=3) as other:
                listed.append(len(_page(other, server.url).json()["data"]))

        watcher = threading.Thread(target=watch)
        watcher.start()
        started = time.monotonic()
        answer = _create(client, server.url, "held [[mock:hold_answer=0.4*1]]")
        waited = time.monotonic() - started
        watcher.join(3)
        assert answer.status_code == 201 and waited >= 0.35
        assert seen == [1] and listed == [1]
        started = time.monotonic()
        assert _create(client, server.url, "held [[mock:hold_answer=0.4*1]]").status_code == 201
        assert time.monotonic() - started < 0.3  # *1: the second answer is not held


def test_create_timeout_holds_a_given_time_then_answers_nothing() -> None:
    with MockProviderServer(FAST) as server, httpx2.Client(timeout=3) as client:
        started = time.monotonic()
        with pytest.raises(httpx2.HTTPError):
            _create(client, server.url, "lost [[mock:create_timeout=0.3]]")
        assert 0.25 <= time.monotonic() - started < 2.5
        assert _render_count(server) == 1
        assert len(_page(client, server.url).json()["data"]) == 1


def test_every_answer_held_by_option_and_cut_by_stop() -> None:
    server = MockProviderServer(dataclasses.replace(FAST, hold_create_answer_seconds=20))
    server.start()
    outcome: list[BaseException | httpx2.Response] = []

    def create() -> None:
        with httpx2.Client(timeout=10) as client:
            try:
                outcome.append(_create(client, server.url))
            except httpx2.HTTPError as exc:
                outcome.append(exc)

    thread = threading.Thread(target=create)
    thread.start()
    deadline = time.monotonic() + 5
    while _render_count(server) < 1:
        assert time.monotonic() < deadline
        time.sleep(0.01)
    server.stop()
    thread.join(5)
    assert len(outcome) == 1 and isinstance(outcome[0], httpx2.HTTPError)


# -- options and the command line --------------------------------------------------------

def test_list_options_validate() -> None:
    for bad in ({"list_delay_min": -1}, {"list_delay_min": 3, "list_delay_max": 2},
                {"list_page_size": 0}, {"list_page_size": 101},
                {"hold_create_answer_seconds": -1}):
        with pytest.raises(ValueError):
            MockOptions(**bad)  # type: ignore[arg-type]
    options = MockOptions(foreign_renders=[ForeignRender("p")])  # type: ignore[arg-type]
    assert options.foreign_renders == (ForeignRender("p"),)


def test_cli_flags() -> None:
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    plain = options_from_args(parser.parse_args([]))
    assert (plain.list_enabled, plain.list_page_size, plain.list_delay_min,
            plain.list_delay_max, plain.foreign_renders, plain.hold_create_answer_seconds
            ) == (True, 20, 0.0, 0.0, (), 0.0)
    args = parser.parse_args([
        "--no-list", "--page-size", "5", "--list-delay", "0.5", "3", "--hold-create-answer",
        "2", "--foreign", '{"prompt": "a fox", "params": {"duration": 4}, "ago": 30}',
        "--foreign", '{"prompt": "b", "created_at": 1900000000}'])
    options = options_from_args(args)
    assert not options.list_enabled and options.list_page_size == 5
    assert (options.list_delay_min, options.list_delay_max) == (0.5, 3.0)
    assert options.hold_create_answer_seconds == 2.0
    assert options.foreign_renders == (
        ForeignRender("a fox", {"duration": 4}, ago=30.0),
        ForeignRender("b", {}, created_at=1_900_000_000.0))
    for bad in ("{", '{"params": {}}', '{"prompt": "p", "ago": "soon"}'):
        with pytest.raises(SystemExit):
            parser.parse_args(["--foreign", bad])


def test_the_live_list_answers_in_the_recorded_shape() -> None:
    """tests/fixtures/mock/list_page_*.json (read by the adapter's fake tests) are what the
    server answers: the same keys, in records and pages."""
    fixtures = Path(__file__).resolve().parents[1] / "fixtures" / "mock"
    recorded = json.loads((fixtures / "list_page_1.json").read_text(encoding="utf-8"))
    clock = Clock()
    with _server(clock, lookup_enabled=False, list_page_size=1) as server, \
            httpx2.Client(timeout=3) as client:
        _create(client, server.url, token="a")
        _create(client, server.url, token="b")
        live = _page(client, server.url, created_after=T0 - 1).json()
    assert set(live) == set(recorded)
    assert set(live["data"][0]) == set(recorded["data"][0])
    assert type(live["data"][0]["created_at"]) is type(recorded["data"][0]["created_at"])
