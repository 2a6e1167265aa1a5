"""The schema fuzzer's findings (schemathesis 4.32, issue 34), each a regression test: the
OpenAPI document and the server agree on an empty batch, a null field in a batch item and
a zero duration, and a request the HTTP parser refuses is answered as a problem document
the document lists."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from typing import Any

import httpx2
import jsonschema
import pytest

from reelqueue.api.openapi import openapi_document
from tests.api.live_api import LiveApi

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveApi]:
    with LiveApi(tmp_path_factory.mktemp("schema")) as api:
        yield api


@pytest.fixture
def client(live: LiveApi) -> Iterator[httpx2.Client]:
    with live.client() as client:
        yield client


def assert_problem(response: httpx2.Response, status: int) -> dict[str, Any]:
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith("application/problem+json")
    body: dict[str, Any] = response.json()
    assert body["status"] == status and body["detail"]
    return body


def _batch_schema() -> dict[str, Any]:
    document = openapi_document()
    schema = document["paths"]["/v1/batches"]["post"]["requestBody"]["content"][
        "application/json"]["schema"]
    return {**schema, "components": document["components"]}


def _valid(instance: object) -> bool:
    try:
        jsonschema.validate(instance, _batch_schema())
    except jsonschema.ValidationError:
        return False
    return True


def test_an_empty_batch_is_refused_and_the_document_says_so(client: httpx2.Client) -> None:
    """Refused by both: a batch of nothing is a client's mistake (every row filtered
    away), so the document says minItems 1 rather than the server making an empty batch."""
    assert not _valid([])
    assert _valid([{"prompt": "a cat"}])
    assert_problem(client.post("/v1/batches?dry_run=1", json=[]), 422)


@pytest.mark.parametrize("item", [
    {"prompt": "a cat", "priority": None},
    {"prompt": "a cat", "params": {"seed": None}},
    {"prompt": "a cat", "name": True},
])
def test_a_null_or_boolean_field_in_a_batch_item_is_refused(
        client: httpx2.Client, item: dict[str, Any]) -> None:
    assert not _valid([item])
    body = assert_problem(client.post("/v1/batches?dry_run=1", json=[item]), 422)
    assert "Item 1" in body["detail"] and body["fields"]


def test_a_zero_duration_is_refused_by_the_document_as_by_the_server(
        client: httpx2.Client) -> None:
    for bad in (0, -5):
        assert not _valid([{"prompt": "a cat", "duration": bad}])
        assert not _valid([{"prompt": "a cat", "params": {"duration": bad}}])
    assert _valid([{"prompt": "a cat", "duration": 5}])
    job_schema = {**openapi_document()["components"]["schemas"]["JobRequest"],
                  "components": openapi_document()["components"]}
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"prompt": "a cat", "params": {"duration": 0}}, job_schema)
    answer = client.post("/v1/jobs", json={"prompt": "a cat", "params": {"duration": 0}})
    assert_problem(answer, 422)


def _raw(live: LiveApi, request: bytes) -> tuple[str, dict[str, str], bytes]:
    with socket.create_connection(("127.0.0.1", live.port), timeout=10) as sock:
        sock.sendall(request)
        data = b""
        while chunk := sock.recv(65536):
            data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    headers = {k.strip().lower(): v.strip() for k, _, v in
               (line.partition(":") for line in lines[1:])}
    return lines[0], headers, body


@pytest.mark.parametrize(("request_bytes", "status"), [
    (b"GET /v1/jobs?q=" + b"a" * 9000 + b" HTTP/1.1\r\nHost: x\r\n\r\n", 414),
    (b"GET /v1/jobs HTTP/1.1\r\nHost: x\r\nX-Long: " + b"a" * 9000 + b"\r\n\r\n", 431),
])
def test_a_request_the_parser_refuses_is_a_problem_document(
        live: LiveApi, request_bytes: bytes, status: int) -> None:
    line, headers, body = _raw(live, request_bytes)
    assert line.split(" ")[1] == str(status), line
    assert headers["content-type"].startswith("application/problem+json"), headers
    assert b'"status": ' + str(status).encode() in body
    assert b"aaaa" not in body  # the request's bytes are not quoted back
    for path in openapi_document()["paths"].values():
        for operation in path.values():
            assert str(status) in operation["responses"]


def test_a_request_line_of_8_kib_is_still_served(live: LiveApi) -> None:
    target = b"/v1/jobs?limit=1&pad="  # an ignored parameter (q= is the search)
    target += b"a" * (8192 - len(b"GET  HTTP/1.1") - len(target))
    line, _, _ = _raw(live, b"GET " + target + b" HTTP/1.1\r\nHost: x\r\nConnection: close"
                      b"\r\nAuthorization: Bearer " + live.token.encode() + b"\r\n\r\n")
    assert line.split(" ")[1] == "200", line
