"""The OpenAPI document names every route of the server with the same methods, and the
pieces of the API that need no server: Range parsing, token hashing and scopes."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any, cast

import pytest

from reelqueue.api.auth import FREE_FAILURES, MAX_DELAY_SECONDS, FailureThrottle
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
            if path not in ("/v1/health", "/v1/openapi.json"):
                assert op["x-scope"] in ("read", "submit", "admin"), (method, path)


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
        assert tokens.verify("rq_" + "0" * 16 + "_" + token.rsplit("_", 1)[1]) is None
        with pytest.raises(Exception, match="already a token named"):
            tokens.add("ci", "read", 2.0)
        assert tokens.revoke("ci") and tokens.verify(token) is None
        assert not tokens.revoke("ci")
    finally:
        tokens.close()
    assert token.rsplit("_", 1)[1].encode() not in journal.read_bytes()


def test_repeated_failures_from_one_address_are_slowed_down() -> None:
    throttle = FailureThrottle()
    delays = []
    for _ in range(9):
        delays.append(throttle.delay("10.0.0.1"))
        throttle.failed("10.0.0.1")
    assert delays == [0.0] * FREE_FAILURES + [0.25, 0.5, 1.0, 2.0]
    assert throttle.delay("10.0.0.2") == 0.0  # another address is not slowed
    for _ in range(10):
        throttle.failed("10.0.0.1")
    assert throttle.delay("10.0.0.1") == MAX_DELAY_SECONDS
