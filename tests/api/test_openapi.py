"""The OpenAPI document names every route of the server with the same methods, and the
pieces of the API that need no server: Range parsing, token hashing and scopes."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any, cast

import pytest

from reelqueue.api.auth import (
    FREE_FAILURES,
    GLOBAL_FREE_FAILURES,
    GLOBAL_INTERVAL_SECONDS,
    MAX_WAIT_SECONDS,
    FailureThrottle,
    client_key,
)
from reelqueue.api.openapi import openapi_document
from reelqueue.api.server import ApiServices, _parse_range, build_app
from reelqueue.store.sqlite import SqliteStore
from reelqueue.store.tokens import TokenStore

pytestmark = pytest.mark.unit


def test_the_document_lists_exactly_the_routes_the_server_has() -> None:
    app = build_app(cast(ApiServices, SimpleNamespace(tokens=None)))
    served: set[tuple[str, str]] = set()
    for route in app.router.routes():
        if route.method == "HEAD":  # aiohttp adds HEAD to every GET
            continue
        info: dict[str, Any] = dict(route.resource.get_info()) if route.resource else {}
        served.add((route.method.lower(), info.get("path") or info.get("formatter", "")))
    document = openapi_document()
    documented = {(method, path) for path, ops in document["paths"].items() for method in ops}
    assert documented == served
    json.dumps(document)  # serialisable as served
    for path, ops in document["paths"].items():
        for method, op in ops.items():
            assert op["responses"], (method, path)
            # public: health, the document, the dashboard's page and short-lived links
            if path not in ("/v1/health", "/v1/openapi.json", "/", "/static/{name}",
                            "/links/{token}"):
                assert op["x-scope"] in ("read", "submit", "admin"), (method, path)


def test_every_response_has_a_schema_and_every_error_is_a_problem() -> None:
    document = openapi_document()
    schemas = document["components"]["schemas"]
    counted = 0
    for path, ops in document["paths"].items():
        for method, op in ops.items():
            for code, response in op["responses"].items():
                counted += 1
                if code == "304":  # "no body" is the whole answer
                    assert "content" not in response
                    continue
                assert response["content"], (method, path, code)
                for media, content in response["content"].items():
                    schema = content["schema"]
                    ref = schema.get("$ref", "")
                    assert not ref or ref.removeprefix("#/components/schemas/") in schemas
                    if code.startswith("4") and media != "application/json":
                        assert media == "application/problem+json", (method, path, code)
                        assert ref.endswith("/Problem")
                assert response["description"]
            if "parameters" in op:
                for parameter in op["parameters"]:
                    assert parameter["schema"], (method, path, parameter)
    assert counted >= 60


@pytest.mark.parametrize(("header", "expected"), [
    ("bytes=0-9", (0, 9)), ("bytes=10-", (10, 99)), ("bytes=-5", (95, 99)),
    ("bytes=90-200", (90, 99)), ("bytes=100-", None), ("bytes=5-1", None),
    ("bytes=0-1,3-4", None), ("items=0-1", None), ("bytes=x-", None), ("bytes=-0", None),
])
def test_range_headers(header: str, expected: tuple[int, int] | None) -> None:
    assert _parse_range(header, 100) == expected


def test_tokens_are_stored_hashed_and_checked_with_their_scope(tmp_path: Path) -> None:
    journal = tmp_path / "journal.sqlite3"
    SqliteStore.open(journal, now=0.0).close()
    tokens = TokenStore(journal)
    try:
        token = tokens.add("ci", "submit", 1.0)
        info = tokens.verify(token)
        assert info is not None and info.name == "ci" and info.scope == "submit"
        assert info.allows("read") and info.allows("submit") and not info.allows("admin")
        assert tokens.verify(token + "x") is None
        assert tokens.verify(token.replace("rq_", "xx_")) is None
        assert tokens.verify("rq_" + "0" * 16 + "_" + token.split("_", 2)[2]) is None
        with pytest.raises(Exception, match="already a token named"):
            tokens.add("ci", "read", 2.0)
        assert tokens.revoke("ci") and tokens.verify(token) is None
        assert not tokens.revoke("ci")
    finally:
        tokens.close()
    assert token.split("_", 2)[2].encode() not in journal.read_bytes()


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_failures_from_one_client_wait_in_line() -> None:
    clock = Clock()
    throttle = FailureThrottle(clock=clock)
    waits = [throttle.failed("10.0.0.1") for _ in range(9)]
    # Parallel failures (the clock does not move) wait one after another: 0.25, then
    # 0.25 + 0.5, ... so N guesses at once take as long as N in a row -- up to
    # MAX_WAIT_SECONDS: a turn later than that is refused at once (429), taking no turn.
    assert waits == [0.0] * FREE_FAILURES + [0.25, 0.75, 1.75, None]
    assert MAX_WAIT_SECONDS < 3.75
    assert throttle.retry_after("10.0.0.1") == 2  # the last turn taken: 1.75 s away
    assert throttle.failed("10.0.0.2") == 0.0  # another address is not slowed
    for _ in range(10):
        throttle.failed("10.0.0.1")
    clock.now += 1000.0  # past the last reserved turn, still counting in a new window
    assert throttle.failed("10.0.0.1") == 0.0
    for _ in range(FREE_FAILURES + 10):
        wait = throttle.failed("10.0.0.1")
    assert wait is None and throttle.retry_after("10.0.0.1") >= 1  # refused, not held


def test_an_ipv6_slash_64_is_one_client() -> None:
    assert client_key("2001:db8:1:2:aaaa::1") == client_key("2001:db8:1:2:ffff::9")
    assert client_key("2001:db8:1:3::1") != client_key("2001:db8:1:2::1")
    assert client_key("::ffff:10.0.0.1") == "10.0.0.1"
    assert client_key("fe80::1%eth0") == client_key("fe80::2")
    throttle = FailureThrottle(clock=Clock())
    waits = [throttle.failed(f"2001:db8:1:2::{i:x}") for i in range(FREE_FAILURES + 1)]
    assert waits[-1] == 0.25  # six addresses of one /64: the sixth failure is delayed


def test_many_addresses_are_slowed_down_together() -> None:
    clock = Clock()
    throttle = FailureThrottle(clock=clock, max_waiting=10_000)
    waits = [throttle.failed(f"127.0.{i // 250}.{i % 250}") for i in range(
        GLOBAL_FREE_FAILURES + 20)]
    assert all(w == 0.0 for w in waits[:GLOBAL_FREE_FAILURES])
    held = waits[GLOBAL_FREE_FAILURES:]
    # 5 a second at most: each failure past the allowance waits one more interval, up to
    # MAX_WAIT_SECONDS; later turns are refused at once (429)
    turns = int(MAX_WAIT_SECONDS / GLOBAL_INTERVAL_SECONDS + 1e-9)
    assert held[:turns] == pytest.approx([(n + 1) * GLOBAL_INTERVAL_SECONDS
                                          for n in range(turns)])
    assert held[turns:] == [None] * (20 - turns)


def test_the_waiting_line_is_bounded() -> None:
    throttle = FailureThrottle(clock=Clock(), max_waiting=3)
    for _ in range(FREE_FAILURES + 1):
        assert throttle.failed("10.0.0.1") is not None
    throttle.waiting = 3  # three answers already sleeping
    assert throttle.failed("10.0.0.1") is None  # -> 429
    assert throttle.retry_after("10.0.0.1") >= 1
    assert throttle.failed("10.0.0.9") == 0.0  # a client with free failures is answered


def test_the_table_of_clients_forgets_the_least_recent_one_only() -> None:
    clock = Clock()
    throttle = FailureThrottle(clock=clock, max_clients=100, global_free=10_000)
    for _ in range(FREE_FAILURES):
        throttle.failed("10.9.9.9")
    for i in range(99):
        throttle.failed(f"10.1.0.{i}")
    throttle.failed("10.9.9.9")  # the guesser stays the most recent...
    for i in range(99, 150):  # ...while a spray of new addresses fills the table
        throttle.failed(f"10.1.0.{i}")
    assert len(throttle) == 100
    assert throttle.failed("10.9.9.9") == pytest.approx(0.25 + 0.5)  # still remembered
    assert throttle.failed("10.1.0.0") == 0.0  # the oldest was forgotten
